#pragma once
// Trends over the history: the stored rows grouped into one series per row, thread count and
// machine, each with its steps (history_steps.hpp) placed on the runs and commits where they
// happened. Pure functions over HistoryStore::trend_rows(), shared by `history trend` and
// `report --history`.

#include <string>
#include <vector>

#include "history/history_steps.hpp"
#include "history/history_store.hpp"

namespace CLI {
class App;
}

namespace pb::history {

struct SeriesPoint {
  std::string run_id, git_commit, started_at, branch;
  double value = 0;  // the run's point in ms (wall or CPU; history_steps.hpp, run_point), or the ratio to the reference
};

struct TrendStep {
  Step step;
  std::string run_id;        // the first run at the new level
  std::string commit_range;  // "<last commit at the old level>..<first at the new>": where to look
};

struct Series {
  std::string suite, workload, size, backend, device, phase;
  int phase_index = 0;
  int threads = 0;          // a row at several thread counts has a series per count
  std::string fingerprint;  // "" in ratio mode: a ratio series spans machines
  std::vector<SeriesPoint> points;  // oldest first
  std::vector<TrendStep> steps;

  /// "suite/workload/size/backend/device/<index>_<phase>/threads=<n>", as `run` names a row it has
  /// at several thread counts: the history may hold any number of them.
  std::string name() const;
  /// "suite/workload/backend/phase": what --filter matches.
  std::string filter_id() const;
};

struct TrendOptions {
  bool ratio = false;      // each row over its workload's serial reference in the same run
  bool cpu_time = false;   // each row's point in CPU time instead of wall time (rows without one left out)
  std::string filter;      // regex searched in filter_id(); "" for all
  std::vector<int> threads;  // only the series at these thread counts; empty for all
  size_t last = 250;       // only the newest points of each series (the fit is O(n^3))
  StepOptions steps;
};

/// Adds the options that choose a command's series: `--filter REGEX`, `--threads N[,N...]` and
/// `--metric wall|cpu` (TrendOptions::cpu_time), each help text after `help_prefix`.
void add_series_selection_options(CLI::App& command, TrendOptions& options, const std::string& help_prefix);

/// The series of `rows` (oldest run first), each with its steps. The reference's own series is
/// left out in ratio mode (it would be 1 throughout). Throws InputError for a bad filter.
std::vector<Series> build_trends(const std::vector<TrendRow>& rows, const TrendOptions& options);

}  // namespace pb::history
