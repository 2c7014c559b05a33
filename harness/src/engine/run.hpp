#pragma once
// `run`'s work, in the process that does it: check and count every case, warm the timed ones up,
// fit their repetitions to the time budget and time them interleaved, writing every finished step
// to the run record (run_record.hpp) as it ends. And the other way: the rows, samples and
// benchmark entries of a run, assembled from its record, whether the run finished or was stopped.
// Internal to the harness; run_command.cpp supervises.

#include <functional>
#include <string>
#include <vector>

#include "phasebench/runner.hpp"
#include "engine/run_record.hpp"

namespace pb::detail {

/// The cases a run covers: the selection's, and the serial reference of every workload that has
/// one selected (every speedup is measured against it), whatever the filter says.
std::vector<Case> run_cases(const RunOptions& options);

/// The wall clock, in seconds since the epoch: the clock of a run's time budget, which spans the
/// run's processes.
double seconds_since_epoch();

struct RunHooks {
  /// Called before each step (a case's check, its warm-up, each timed repetition) with the case's
  /// row name and how long the step may take, in seconds: the worker's journal.
  std::function<void(const std::string& row_name, double limit_seconds)> starting_step;
  /// Seconds since the epoch when the run's time budget began (it spans worker restarts).
  double budget_started_at = 0;
};

/// What a worker leaves to the next one: nothing at its thread count, or (--processes) the rounds
/// of repetitions that a fresh worker times, the check after timing with them.
enum class WorkerOutcome { Done, HandedOver };

/// Does what `previous` (the record so far) does not hold yet, appending to `recorder`: all of
/// it, or with --processes its share of the timed rounds.
WorkerOutcome execute_run(const RunOptions& options, const RunRecord& previous, RunRecorder& recorder,
                          const RunHooks& hooks);

/// A run as its record has it. Rows come in case order: each checked case (and each that ended as
/// ERROR in a crash or time-out before its check finished); an OK row keeps the repetitions done,
/// and when they are fewer than planned its reason says so, or it is SKIPPED when none were.
struct AssembledRun {
  std::vector<ResultRow> rows;
  std::vector<SampleRow> samples;
  std::vector<nlohmann::json> benchmark_entries;
  size_t cases_planned = 0;
  size_t cases_done = 0;  // checked, and timed as planned where they are timed
};
AssembledRun assemble_run(const std::vector<Case>& cases, const RunRecord& record, const RunOptions& options);

}  // namespace pb::detail
