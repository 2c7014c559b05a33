#include "history/history_store.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/number_text.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/stats.hpp"
#include "history/history_steps.hpp"
#include "engine/interference.hpp"
#include "results/results_model.hpp"

namespace pb::history {
namespace {

// ---- values --------------------------------------------------------------------------------------
SqlValue number(double value) {
  if (!std::isfinite(value)) return std::nullopt;
  return format_significant(value, 17);
}
SqlValue text_or_null(const std::string& text) { return text.empty() ? SqlValue() : SqlValue(text); }
std::string text_of(const SqlValue& value) { return value.value_or(""); }
double number_of(const SqlValue& value) { return value ? std::strtod(value->c_str(), nullptr) : NAN; }

// ---- schema --------------------------------------------------------------------------------------
// Each version is the statements that take a database from the version before to it. They are
// never edited once released (a database made by them exists somewhere): a change is a new
// version. The SQL is the part SQLite and PostgreSQL share (TEXT, BIGINT, DOUBLE PRECISION).
struct Migration {
  int version;
  std::vector<const char*> statements;
  // Run after the statements, in the same transaction: fills new columns of what is stored already.
  void (*fill)(SqlConnection&) = nullptr;
};

void fill_run_points(SqlConnection& db);
void fill_thread_counts(SqlConnection& db);

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all{
      {1,
       {"CREATE TABLE runs (run_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, git_commit TEXT, "
        "started_at TEXT, fingerprint TEXT, hostname TEXT, complete BIGINT NOT NULL, incomplete_reason TEXT, "
        "failed_rows BIGINT NOT NULL, added_at TEXT NOT NULL, machine_json TEXT, catalog_json TEXT)",
        // The run's files as written: what `history export` gives back.
        "CREATE TABLE run_files (run_id TEXT NOT NULL REFERENCES runs(run_id), name TEXT NOT NULL, "
        "content TEXT NOT NULL, PRIMARY KEY (run_id, name))",
        "CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, "
        "workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, "
        "phase_index BIGINT NOT NULL, phase TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, reps BIGINT, "
        "median_ms DOUBLE PRECISION, ci_low_ms DOUBLE PRECISION, ci_high_ms DOUBLE PRECISION, "
        "PRIMARY KEY (run_id, suite, workload, size, backend, device, phase))",
        "CREATE TABLE samples (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, "
        "workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, "
        "phase TEXT NOT NULL, rep BIGINT NOT NULL, ms DOUBLE PRECISION NOT NULL, cpu_ms DOUBLE PRECISION, "
        "PRIMARY KEY (run_id, suite, workload, size, backend, device, phase, rep))"}},
      // 2: the CI context a run was added from, each row's median CPU time (what a busy machine
      // disturbs least: docs/regression-gate.md), and an index for the per-row series.
      {2,
       {"ALTER TABLE runs ADD COLUMN branch TEXT", "ALTER TABLE runs ADD COLUMN pull_request TEXT",
        "ALTER TABLE runs ADD COLUMN ci_job_url TEXT", "ALTER TABLE results ADD COLUMN cpu_median_ms DOUBLE PRECISION",
        "CREATE INDEX results_by_series ON results (suite, workload, size, backend, device, phase)"}},
      // 3: each row's point in its series, wall and CPU time (history_steps.hpp, run_point: the
      // median of the fastest quarter of the repetitions, which a busy machine disturbs far less
      // than the median), computed for the runs stored before from their samples.
      {3,
       {"ALTER TABLE results ADD COLUMN fast_ms DOUBLE PRECISION",
        "ALTER TABLE results ADD COLUMN cpu_fast_ms DOUBLE PRECISION"},
       fill_run_points},
      // 4: why a row's repetitions were disturbed by other work on the machine (empty or NULL: they
      // were not); such rows stay out of trends and step detection (interference.hpp).
      {4, {"ALTER TABLE results ADD COLUMN disturbed TEXT"}},
      // 5: each row's and sample's threads, in their keys: a run may hold a row at several thread
      // counts (run --threads 1,2), one series each. A key cannot be changed in place (SQLite), so
      // both tables are made anew with it, filled from the old ones (threads 0 until the fill
      // reads each run's from its stored results.csv), and the series index follows them.
      {5,
       {"CREATE TABLE results_v5 (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, "
        "workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, "
        "phase_index BIGINT NOT NULL, phase TEXT NOT NULL, threads BIGINT NOT NULL, status TEXT NOT NULL, "
        "reason TEXT, reps BIGINT, median_ms DOUBLE PRECISION, ci_low_ms DOUBLE PRECISION, "
        "ci_high_ms DOUBLE PRECISION, cpu_median_ms DOUBLE PRECISION, fast_ms DOUBLE PRECISION, "
        "cpu_fast_ms DOUBLE PRECISION, disturbed TEXT, "
        "PRIMARY KEY (run_id, suite, workload, size, backend, device, phase, threads))",
        "INSERT INTO results_v5 (run_id, suite, workload, size, backend, device, phase_index, phase, threads, status, "
        "reason, reps, median_ms, ci_low_ms, ci_high_ms, cpu_median_ms, fast_ms, cpu_fast_ms, disturbed) "
        "SELECT run_id, suite, workload, size, backend, device, phase_index, phase, 0, status, reason, reps, "
        "median_ms, ci_low_ms, ci_high_ms, cpu_median_ms, fast_ms, cpu_fast_ms, disturbed FROM results",
        "DROP TABLE results",  // and its index, results_by_series
        "ALTER TABLE results_v5 RENAME TO results",
        "CREATE INDEX results_by_series ON results (suite, workload, size, backend, device, phase, threads)",
        "CREATE TABLE samples_v5 (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, "
        "workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, "
        "phase TEXT NOT NULL, threads BIGINT NOT NULL, rep BIGINT NOT NULL, ms DOUBLE PRECISION NOT NULL, "
        "cpu_ms DOUBLE PRECISION, PRIMARY KEY (run_id, suite, workload, size, backend, device, phase, threads, rep))",
        "INSERT INTO samples_v5 (run_id, suite, workload, size, backend, device, phase, threads, rep, ms, cpu_ms) "
        "SELECT run_id, suite, workload, size, backend, device, phase, 0, rep, ms, cpu_ms FROM samples",
        "DROP TABLE samples", "ALTER TABLE samples_v5 RENAME TO samples"},
       fill_thread_counts},
  };
  return all;
}

// Version 3's columns for the rows stored before it, from their samples.
void fill_run_points(SqlConnection& db) {
  std::map<std::vector<std::string>, std::pair<std::vector<double>, std::vector<double>>> by_row;
  for (const SqlRow& sample :
       db.execute("SELECT run_id, suite, workload, size, backend, device, phase, ms, cpu_ms FROM samples")) {
    auto& [wall, cpu] = by_row[{text_of(sample[0]), text_of(sample[1]), text_of(sample[2]), text_of(sample[3]),
                                text_of(sample[4]), text_of(sample[5]), text_of(sample[6])}];
    wall.push_back(number_of(sample[7]));
    cpu.push_back(number_of(sample[8]));
  }
  for (const auto& [key, times] : by_row) {
    std::vector<SqlValue> parameters{number(run_point(times.first)), number(run_point(times.second))};
    parameters.insert(parameters.end(), key.begin(), key.end());
    db.execute("UPDATE results SET fast_ms = $1, cpu_fast_ms = $2 WHERE run_id = $3 AND suite = $4 AND workload = $5 "
               "AND size = $6 AND backend = $7 AND device = $8 AND phase = $9",
               parameters);
  }
}

// The rows of a run's stored results.csv; none where this build cannot read it.
std::vector<ResultRow> stored_rows(const std::string& run_id, const std::string& results_csv) {
  try {
    return read_results_csv_text("results.csv of stored run " + run_id, results_csv);
  } catch (const InputError&) {
    return {};
  }
}

// Version 5's threads for the rows and samples stored before it, from each run's stored
// results.csv. Those runs hold one row per key without threads (the history refused any other), so
// a row's threads are its samples' too; samples from files older than samples.csv's suite column
// were stored without one. A run whose results.csv cannot be read keeps threads 0: unknown.
void fill_thread_counts(SqlConnection& db) {
  for (const SqlRow& file : db.execute("SELECT run_id, content FROM run_files WHERE name = 'results.csv'")) {
    const std::string run_id = text_of(file[0]);
    for (const ResultRow& row : stored_rows(run_id, text_of(file[1]))) {
      const std::vector<SqlValue> parameters{
          std::to_string(row.threads), run_id, row.suite, row.workload, row.size, row.backend, row.device, row.phase};
      db.execute(
          "UPDATE results SET threads = $1 WHERE run_id = $2 AND suite = $3 AND workload = $4 AND size = $5 "
          "AND backend = $6 AND device = $7 AND phase = $8",
          parameters);
      db.execute(
          "UPDATE samples SET threads = $1 WHERE run_id = $2 AND suite IN ($3, '') AND workload = $4 "
          "AND size = $5 AND backend = $6 AND device = $7 AND phase = $8",
          parameters);
    }
  }
}

int stored_schema_version(SqlConnection& db) {
  const auto rows = db.execute("SELECT MAX(version) FROM schema_version");
  return rows.empty() || !rows[0][0] ? 0 : std::atoi(rows[0][0]->c_str());
}

// FNV-1a, 64 bits: stable across builds and platforms (std::hash is not), enough to tell two
// different runs that claim one id apart.
std::string content_hash(const std::vector<std::pair<std::string, std::string>>& files) {
  uint64_t hash = 1469598103934665603ULL;
  for (const auto& [name, content] : files)
    for (const std::string* part : {&name, &content})
      for (const unsigned char c : *part + '\0') hash = (hash ^ c) * 1099511628211ULL;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// "20261125T133337Z-vm" -> "2026-11-25T13:33:37Z"; "" when the id does not start with a timestamp.
std::string time_of_run_id(const std::string& id) {
  if (id.size() < 16 || id[8] != 'T' || id[15] != 'Z') return "";
  return id.substr(0, 4) + "-" + id.substr(4, 2) + "-" + id.substr(6, 2) + "T" + id.substr(9, 2) + ":" +
         id.substr(11, 2) + ":" + id.substr(13, 2) + "Z";
}

std::string json_string(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// The id a run is stored under: a merge of shards has its own in machine.json (its rows keep their
// shards' ids); any other run its rows' run_id (one per run; a pooled run is given one), else
// machine.json's, else the directory's name.
std::string run_id_of(const results::RunData& run) {
  const std::string from_machine = json_string(run.machine, "run_id");
  if (run.machine.is_object() && run.machine.contains("merged_from") && !from_machine.empty()) return from_machine;
  if (!run.rows.empty() && !run.rows.front().run_id.empty()) return run.rows.front().run_id;
  return from_machine.empty() ? std::filesystem::path(run.directory()).filename().string() : from_machine;
}

const char* const kRunFileNames[] = {"results.csv", "samples.csv", "machine.json", "catalog.json", "benchmark.json"};

StoredRun describe(const results::RunData& run, const CiContext& ci) {
  StoredRun stored;
  stored.run_id = run_id_of(run);
  stored.git_commit = json_string(run.machine, "git_commit");
  stored.started_at = time_of_run_id(stored.run_id);
  stored.fingerprint = run.fingerprint();
  stored.hostname = json_string(run.machine, "hostname");
  stored.branch = ci.branch;
  stored.pull_request = ci.pull_request;
  const auto incomplete = run.incomplete();
  stored.complete = !incomplete;
  stored.incomplete_reason = incomplete.value_or("");
  for (const ResultRow& row : run.rows) stored.failed_rows += is_failure(row.status) ? 1 : 0;
  return stored;
}

const char* const kRunColumns =
    "run_id, git_commit, started_at, fingerprint, hostname, branch, pull_request, complete, incomplete_reason, "
    "failed_rows, machine_json";

StoredRun stored_run_from(const SqlRow& row) {
  StoredRun run;
  run.run_id = text_of(row[0]);
  run.git_commit = text_of(row[1]);
  run.started_at = text_of(row[2]);
  run.fingerprint = text_of(row[3]);
  run.hostname = text_of(row[4]);
  run.branch = text_of(row[5]);
  run.pull_request = text_of(row[6]);
  run.complete = text_of(row[7]) == "1";
  run.incomplete_reason = text_of(row[8]);
  run.failed_rows = std::atoi(text_of(row[9]).c_str());
  run.machine_state = interference::machine_state_in_words(
      nlohmann::json::parse(text_of(row[10]), nullptr, /*allow_exceptions=*/false));
  return run;
}

// Inserts the run's row; false when a run with its id is there already. A concurrent add of the same
// run on PostgreSQL gets past the caller's check (each transaction sees only what was committed when
// it looked) and meets the other's row only here: ON CONFLICT makes that wait for the other
// transaction and then insert nothing, instead of failing with a unique violation.
bool insert_run(SqlConnection& db, const StoredRun& run, const std::string& hash, const results::RunData& data,
                const CiContext& ci) {
  return !db.execute("INSERT INTO runs (run_id, content_hash, git_commit, started_at, fingerprint, hostname, complete, "
             "incomplete_reason, failed_rows, added_at, machine_json, catalog_json, branch, pull_request, ci_job_url) "
             "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) "
             "ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
             {run.run_id, hash, text_or_null(run.git_commit), text_or_null(run.started_at),
              text_or_null(run.fingerprint), text_or_null(run.hostname), run.complete ? "1" : "0",
              text_or_null(run.incomplete_reason), std::to_string(run.failed_rows), utc_now(),
              data.machine.is_null() ? SqlValue() : SqlValue(data.machine.dump()),
              data.catalog.saved ? SqlValue(catalog::to_json(data.catalog).dump()) : SqlValue(),
              text_or_null(ci.branch), text_or_null(ci.pull_request), text_or_null(ci.job_url)})
              .empty();
}

// A row's repetitions in `index` (wall or CPU time; empty when the run has none).
std::vector<double> repetitions(const results::SampleIndex& index, const ResultRow& row) {
  const auto found = index.find(results::row_key(row));
  return found == index.end() ? std::vector<double>() : found->second;
}

// The median of a row's recorded CPU times (schema version 2's column); NaN when it has none.
double cpu_median_ms(const results::RunData& data, const ResultRow& row) {
  const std::vector<double> recorded = recorded_times(repetitions(data.cpu_samples, row));
  return recorded.empty() ? NAN : stats::median(recorded);
}

// Test-only: PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS=N stops an add for a minute once it has inserted N
// rows of a run's results, inside its transaction, and says so on stderr, so that a test can kill
// the writer there (a killed add must leave the history as it was).
void pause_if_asked(size_t rows_inserted) {
  const char* setting = std::getenv("PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS");
  if (!setting || !*setting) return;
  char* end = nullptr;
  const long after = std::strtol(setting, &end, 10);
  if (*end != '\0' || after < 0)
    throw InputError(std::string("PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS='") + setting + "' is not a row count");
  if (rows_inserted != static_cast<size_t>(after)) return;
  std::cerr << "history add: paused after " << rows_inserted << " rows (PHASEBENCH_HISTORY_PAUSE_AFTER_ROWS)"
            << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

void insert_rows(SqlConnection& db, const std::string& run_id, const results::RunData& data) {
  size_t inserted = 0;
  for (const ResultRow& row : data.rows) {
    pause_if_asked(inserted++);
    db.execute(
        "INSERT INTO results (run_id, suite, workload, size, backend, device, phase_index, phase, threads, "
        "status, reason, reps, median_ms, ci_low_ms, ci_high_ms, cpu_median_ms, fast_ms, cpu_fast_ms, disturbed) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
        {run_id, row.suite, row.workload, row.size, row.backend, row.device, std::to_string(row.phase_index), row.phase,
         std::to_string(row.threads), std::string(to_string(row.status)), text_or_null(row.reason),
         std::to_string(row.reps), number(row.median_ms), number(row.ci_low_ms), number(row.ci_high_ms),
         number(cpu_median_ms(data, row)), number(run_point(repetitions(data.samples, row))),
         number(run_point(repetitions(data.cpu_samples, row))), text_or_null(row.disturbed)});
  }
  pause_if_asked(inserted);
  // A sample's threads are its row's (a samples.csv older than the column has none of its own).
  std::map<std::string, int> threads_of_row;
  for (const ResultRow& row : data.rows) threads_of_row[results::row_key(row)] = row.threads;
  for (size_t i = 0; i < data.sample_rows.size(); ++i) {
    const SampleRow& sample = data.sample_rows[i];
    db.execute(
        "INSERT INTO samples (run_id, suite, workload, size, backend, device, phase, threads, rep, ms, cpu_ms) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        {run_id, sample.suite, sample.workload, sample.size, sample.backend, sample.device, sample.phase,
         std::to_string(threads_of_row.at(data.sample_row_keys[i])), std::to_string(sample.rep), number(sample.ms),
         number(sample.cpu_ms)});
  }
}

}  // namespace

CiContext ci_context_from_environment() {
  const auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  CiContext ci;
  if (!env("GITHUB_ACTIONS").empty()) {
    // On a pull request GITHUB_REF_NAME is "<number>/merge"; the branch is the head's.
    ci.branch = env("GITHUB_HEAD_REF").empty() ? env("GITHUB_REF_NAME") : env("GITHUB_HEAD_REF");
    const std::string ref = env("GITHUB_REF");
    if (ref.rfind("refs/pull/", 0) == 0) ci.pull_request = ref.substr(10, ref.find('/', 10) - 10);
    if (!env("GITHUB_RUN_ID").empty())
      ci.job_url = env("GITHUB_SERVER_URL") + "/" + env("GITHUB_REPOSITORY") + "/actions/runs/" + env("GITHUB_RUN_ID");
  } else if (!env("GITLAB_CI").empty()) {
    ci.branch = env("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME").empty() ? env("CI_COMMIT_REF_NAME")
                                                                   : env("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME");
    ci.pull_request = env("CI_MERGE_REQUEST_IID");
    ci.job_url = env("CI_JOB_URL");
  }
  return ci;
}

// One writer at a time migrates (an exclusive transaction), so two first runs on an empty
// database do not both create the tables.
void migrate(SqlConnection& connection, int version) {
  in_write_transaction(connection, true, [&] {
    connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)");
    const int current = stored_schema_version(connection);
    if (current > kSchemaVersion)
      throw InputError(connection.description() + " has history schema version " + std::to_string(current) +
                       ", newer than this phasebench's " + std::to_string(kSchemaVersion) + ": use a newer build");
    for (const Migration& migration : migrations()) {
      if (migration.version <= current || migration.version > version) continue;
      for (const char* statement : migration.statements) connection.execute(statement);
      if (migration.fill) migration.fill(connection);
      connection.execute("INSERT INTO schema_version (version) VALUES ($1)", {std::to_string(migration.version)});
    }
  });
}

HistoryStore HistoryStore::open(const std::string& url) { return HistoryStore(open_connection(url)); }

HistoryStore::HistoryStore(std::unique_ptr<SqlConnection> connection) : connection_(std::move(connection)) {
  migrate(*connection_);
}

int HistoryStore::schema_version() { return stored_schema_version(*connection_); }

AddOutcome HistoryStore::add(const std::string& run_path, const CiContext& ci) {
  const results::RunData data = results::load_run(run_path);
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* name : kRunFileNames) {
    const std::filesystem::path path = std::filesystem::path(data.directory()) / name;
    if (std::filesystem::exists(path)) files.emplace_back(name, read_text(path));
  }
  const std::string hash = content_hash(files);
  AddOutcome outcome{describe(data, ci), false};
  // True when the run is stored already: the same run again, nothing changes. Another run claiming its id is refused.
  const auto already_stored = [&] {
    const auto existing = connection_->execute("SELECT content_hash FROM runs WHERE run_id = $1", {outcome.run.run_id});
    if (existing.empty()) return false;
    if (text_of(existing[0][0]) != hash)
      throw InputError("run " + outcome.run.run_id + " (" + run_path + ") is already in " +
                       connection_->description() + " with other content; a run is never replaced");
    return true;
  };
  in_write_transaction(*connection_, false, [&] {
    if (already_stored()) return;
    // Lost a race with another add of this id (PostgreSQL): its row is committed now, so a new
    // statement sees it.
    if (!insert_run(*connection_, outcome.run, hash, data, ci)) {
      if (!already_stored()) throw DatabaseError("run " + outcome.run.run_id + " vanished while being added");
      return;
    }
    for (const auto& [name, content] : files)
      connection_->execute("INSERT INTO run_files (run_id, name, content) VALUES ($1, $2, $3)",
                           {outcome.run.run_id, name, content});
    insert_rows(*connection_, outcome.run.run_id, data);
    outcome.added = true;
  });
  return outcome;
}

std::vector<StoredRun> HistoryStore::runs() {
  std::vector<StoredRun> all;
  for (const SqlRow& row : connection_->execute(std::string("SELECT ") + kRunColumns +
                                                " FROM runs ORDER BY started_at, run_id"))
    all.push_back(stored_run_from(row));
  return all;
}

void HistoryStore::export_run(const std::string& run_id, const std::filesystem::path& directory) {
  const auto files = connection_->execute("SELECT name, content FROM run_files WHERE run_id = $1", {run_id});
  if (files.empty())
    throw InputError("no run '" + run_id + "' in " + connection_->description() + " (see: phasebench history list)");
  StagedDirectory staged(directory);
  for (const SqlRow& file : files) write_file_atomically(staged.staging_path() / text_of(file[0]), text_of(file[1]));
  staged.commit();
}

std::vector<TrendRow> HistoryStore::trend_rows(const std::string& fingerprint, const std::string& branch) {
  const auto rows = connection_->execute(
      "SELECT r.suite, r.workload, r.size, r.backend, r.device, r.phase, r.phase_index, r.threads, u.fingerprint, "
      "u.run_id, u.git_commit, u.started_at, u.branch, r.fast_ms, r.cpu_fast_ms FROM results r "
      "JOIN runs u ON u.run_id = r.run_id "
      "WHERE r.status = 'OK' AND r.median_ms IS NOT NULL AND u.complete = 1 AND u.failed_rows = 0 "
      "AND (r.disturbed IS NULL OR r.disturbed = '') AND ($1 = '' OR u.fingerprint = $1) "
      "AND ($2 = '' OR u.branch = $2) ORDER BY u.started_at, u.run_id",
      {fingerprint, branch});
  std::vector<TrendRow> trend;
  for (const SqlRow& row : rows)
    trend.push_back({text_of(row[0]), text_of(row[1]), text_of(row[2]), text_of(row[3]), text_of(row[4]),
                     text_of(row[5]), std::atoi(text_of(row[6]).c_str()), std::atoi(text_of(row[7]).c_str()),
                     text_of(row[8]), text_of(row[9]), text_of(row[10]), text_of(row[11]), text_of(row[12]),
                     number_of(row[13]), number_of(row[14])});
  return trend;
}

std::vector<std::string> HistoryStore::recent_runs(const std::string& fingerprint, const std::string& branch,
                                                   int count) {
  std::vector<std::string> ids;
  for (const SqlRow& row : connection_->execute(
           "SELECT run_id FROM runs WHERE complete = 1 AND failed_rows = 0 AND fingerprint = $1 "
           "AND ($2 = '' OR branch = $2) ORDER BY started_at DESC, run_id DESC LIMIT CAST($3 AS INTEGER)",
           {fingerprint, branch, std::to_string(count)}))
    ids.push_back(text_of(row[0]));
  return ids;
}

}  // namespace pb::history
