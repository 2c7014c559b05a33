#pragma once
// The results history: every run a CI job (or a person) adds, in one database, for trends, step
// detection and a gate against recent runs (docs/history.md). The store keeps each run's files as
// they were written (so `history export` gives back an ordinary run directory, byte for byte) and
// indexes its rows and samples in tables the trend queries read. Internal to the harness.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "history/history_sql.hpp"

namespace pb::history {

/// The schema this build writes. Older databases are migrated when opened (history_store.cpp lists
/// each version); a newer one is refused.
constexpr int kSchemaVersion = 5;

/// Where a run came from in CI; empty fields are unknown.
struct CiContext {
  std::string branch, pull_request, job_url;
};
/// Read from GitHub Actions (GITHUB_*) or GitLab CI (CI_*) variables; empty outside CI.
CiContext ci_context_from_environment();

struct StoredRun {
  std::string run_id, git_commit, started_at, fingerprint, hostname, branch, pull_request;
  bool complete = true;
  std::string incomplete_reason;
  int failed_rows = 0;  // rows whose check failed (FAIL, MISTRUSTED, ERROR)
  /// The machine's state while the run ran, in words ("quiet", "busy: other work used 1.4 cores
  /// while timing, 7 rows disturbed"), from its machine.json; empty for runs that predate it.
  std::string machine_state;
  /// Complete and without a failed row: the only runs trends and the gate read.
  bool trustworthy() const { return complete && failed_rows == 0; }
};

struct AddOutcome {
  StoredRun run;
  bool added = false;  // false: the same run was already stored, nothing changed
};

/// One timed row of one trustworthy run, with what its series and its ratio need.
struct TrendRow {
  std::string suite, workload, size, backend, device, phase;
  int phase_index = 0;
  int threads = 0;  // the row's threads (results.csv's); 0 where a migrated run's were unreadable
  std::string fingerprint, run_id, git_commit, started_at, branch;
  // The run's point in the row's series (history_steps.hpp, run_point), in wall and CPU time; NaN
  // when the run recorded no such time.
  double point_ms = 0;
  double cpu_point_ms = 0;
};

/// Takes the database to schema `version` (no further than kSchemaVersion), each version's
/// statements in turn, in one exclusive write transaction. HistoryStore takes every database it
/// opens to kSchemaVersion; a lower `version` makes a database as an older build left it (tests).
void migrate(SqlConnection& connection, int version = kSchemaVersion);

class HistoryStore {
 public:
  /// Opens (and creates or migrates) the history at `url` (see open_connection).
  static HistoryStore open(const std::string& url);
  explicit HistoryStore(std::unique_ptr<SqlConnection> connection);

  int schema_version();
  /// Stores the run in `run_path` (a run directory), incomplete or failed ones too, marked so.
  /// Adding a run already stored with the same content changes nothing; the same run id with other
  /// content is an InputError.
  AddOutcome add(const std::string& run_path, const CiContext& ci);
  /// Every stored run, oldest first.
  std::vector<StoredRun> runs();
  /// Writes the stored run back out as a run directory at `directory` (which must not exist).
  void export_run(const std::string& run_id, const std::filesystem::path& directory);
  /// The OK rows of the trustworthy runs, oldest run first; `fingerprint`, `branch`: only those
  /// ("" for any).
  std::vector<TrendRow> trend_rows(const std::string& fingerprint, const std::string& branch);
  /// The ids of the newest `count` trustworthy runs with this fingerprint on `branch` ("": any),
  /// newest first.
  std::vector<std::string> recent_runs(const std::string& fingerprint, const std::string& branch, int count);

  SqlConnection& connection() { return *connection_; }

 private:
  std::unique_ptr<SqlConnection> connection_;
};

}  // namespace pb::history
