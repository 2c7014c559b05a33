#pragma once
// The durable record of a run in progress. The worker appends to it step by step (each line
// flushed as soon as the step ends), so a crash, a hang or a stop loses at most the step in
// flight: the supervisor restarts a worker that goes on from the record, writes an interrupted
// run's directory from it, and `run --resume` continues from it. Internal to the harness.
//
// One directory, one file per kind of fact (all append-only but plan.json, written once):
//   rows.csv          results.csv rows of the checked cases, as the check left them (untimed)
//   samples.csv       samples.csv rows, one per finished repetition
//   benchmarks.jsonl  Google Benchmark's JSON entry for each finished repetition
//   plan.json         the timing plan: per case, repetitions and iterations per repetition
//   later_checks.tsv  "<row name>\t<status>\t<rel_l2_err>\t<reason>": the check of a run after
//                     the timing, one line per case checked (run.cpp's check_after_timing)
//   errors.tsv        "<row name>\t<reason>": cases that ended as ERROR outside their check (a
//                     crash, a time-out, a throw while timed), whatever the other files say of them
//   ceilings.json     the roofline ceilings the run uses
//   arguments.json    the run's options and id, for the worker and for --resume
//   other_work.jsonl  per stage a worker finished (checking, timing): how long it took and the
//                     cores other work on the machine used meanwhile (interference.hpp)
//
// Plan, errors and later checks are keyed by row name (Case::row_name(), with the phase's index);
// rows and samples by results::row_key() (Case::row_key()), as samples.csv rows carry no index.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasebench/results.hpp"

namespace pb::detail {

/// How one case is timed: decided once, after warm-up, and kept across restarts.
struct CaseTiming {
  int reps = 0;
  int64_t iterations_per_rep = 1;
  double iteration_ms = 0;  // measured per iteration when planned
};

/// The check of a run after the timing: OK, or FAIL with the reason.
struct LaterCheck {
  Status status = Status::Ok;
  double rel_l2_err = 0;  // the worst output's
  std::string reason;
};

struct RunRecord {
  std::map<std::string, ResultRow> checked;                  // by row key
  std::map<std::string, std::vector<SampleRow>> samples;     // by row key, in repetition order
  std::map<std::string, std::vector<nlohmann::json>> benchmark_entries;  // parallel to samples
  std::map<std::string, CaseTiming> plan;                   // empty until timing was planned
  std::map<std::string, std::string> errors;                // by row name: the reason
  std::map<std::string, LaterCheck> later_checks;           // by row name
  std::optional<nlohmann::json> ceilings;
  nlohmann::json arguments;                                  // null when not recorded
  std::vector<nlohmann::json> other_work;                    // other_work.jsonl's lines, in order

  /// The samples of a row, by its row key (none: empty).
  const std::vector<SampleRow>& samples_of(const ResultRow& row) const;
};

/// Reads what `directory` holds (an empty record when it does not exist). A line cut short by a
/// killed worker (no final newline) is ignored.
RunRecord read_run_record(const std::filesystem::path& directory);

/// Appends to a run record; every call ends with the line on disk.
class RunRecorder {
 public:
  explicit RunRecorder(std::filesystem::path directory);
  const std::filesystem::path& directory() const { return directory_; }
  void checked(const ResultRow& row);
  void repetition(const SampleRow& sample, const nlohmann::json& benchmark_entry);
  void plan(const std::map<std::string, CaseTiming>& plan);
  void error(const std::string& row_name, const std::string& reason);
  void later_check(const std::string& row_name, const LaterCheck& check);
  void ceilings(const nlohmann::json& ceilings);
  void arguments(const nlohmann::json& arguments);
  /// A stage's length and the other work meanwhile, in cores (NaN: not measured).
  void other_work(const std::string& stage, double seconds, double cores, double steal_cores);

 private:
  std::filesystem::path directory_;
};

}  // namespace pb::detail
