// The results history's store (history_store.hpp) on a real SQLite file and a real PostgreSQL
// server (a throwaway cluster, throwaway_postgres.hpp): adding, adding twice, incomplete and failed
// runs, runs at several thread counts, export back to a run directory, two processes adding at once,
// and the migration of databases made by the first schema version (tests/data/history/v1.sql) and
// by version 4.

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "history/history_store.hpp"
#include "history/history_trend.hpp"
#include "history_databases.hpp"
#include "phasebench/stats.hpp"
#include "results/results_model.hpp"

namespace pb::testing {
namespace {

using history::HistoryStore;

// Each test gets an empty database of the kind its parameter names.
class HistoryStoreTest : public HistoryDatabaseTest {};

// The first column of what `sql` selects, as text.
std::vector<std::string> first_column(history::SqlConnection& db, const std::string& sql) {
  std::vector<std::string> values;
  for (const history::SqlRow& row : db.execute(sql)) values.push_back(row[0].value_or("NULL"));
  return values;
}

// How many rows and samples the history holds.
std::vector<std::string> stored_counts(history::SqlConnection& db) {
  return {first_column(db, "SELECT COUNT(*) FROM results").at(0),
          first_column(db, "SELECT COUNT(*) FROM samples").at(0)};
}

// Makes the run in `dir` one of these thread counts (run --threads 1,2): each row and its samples
// once at each count, with the same times.
void at_thread_counts(const std::filesystem::path& dir, const std::vector<int>& counts) {
  const std::vector<ResultRow> rows = read_results_csv((dir / "results.csv").string());
  const std::vector<SampleRow> samples = read_samples_csv((dir / "samples.csv").string());
  std::vector<ResultRow> rows_at_counts;
  std::vector<SampleRow> samples_at_counts;
  for (const int threads : counts) {
    for (ResultRow row : rows) {
      row.threads = threads;
      rows_at_counts.push_back(row);
    }
    for (SampleRow sample : samples) {
      sample.threads = threads;
      samples_at_counts.push_back(sample);
    }
  }
  std::ofstream(dir / "results.csv") << results_csv(rows_at_counts);
  std::ofstream(dir / "samples.csv") << samples_csv(samples_at_counts);
}

// Stores the run in `dir` as schema version 4 did (its tables had no threads), into a database
// migrated to version 4.
void store_as_version_4(history::SqlConnection& db, const std::filesystem::path& dir) {
  const results::RunData run = results::load_run(dir.string());
  const std::string id = run.rows.front().run_id;
  db.execute(
      "INSERT INTO runs (run_id, content_hash, started_at, fingerprint, complete, failed_rows, added_at, "
      "machine_json) VALUES ($1, 'v4', '2026-11-25T10:01:00Z', $2, 1, 0, '2026-11-25T10:05:00Z', $3)",
      {id, run.fingerprint(), run.machine.dump()});
  for (const char* name : {"results.csv", "samples.csv", "machine.json", "catalog.json"})
    db.execute("INSERT INTO run_files (run_id, name, content) VALUES ($1, $2, $3)", {id, name, read_text(dir / name)});
  for (const ResultRow& row : run.rows)
    db.execute(
        "INSERT INTO results (run_id, suite, workload, size, backend, device, phase_index, phase, status, "
        "reps, median_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        {id, row.suite, row.workload, row.size, row.backend, row.device, std::to_string(row.phase_index), row.phase,
         std::string(to_string(row.status)), std::to_string(row.reps), std::to_string(row.median_ms)});
  for (const SampleRow& sample : run.sample_rows)
    db.execute(
        "INSERT INTO samples (run_id, suite, workload, size, backend, device, phase, rep, ms, cpu_ms) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        {id, sample.suite, sample.workload, sample.size, sample.backend, sample.device, sample.phase,
         std::to_string(sample.rep), std::to_string(sample.ms), std::to_string(sample.cpu_ms)});
}

TEST_P(HistoryStoreTest, StoresARunAndAddingItAgainChangesNothing) {
  HistoryStore store = HistoryStore::open(url_);
  EXPECT_EQ(store.schema_version(), history::kSchemaVersion);
  const auto dir = write_run("run", crafted_run(run_id_at(1)));
  const auto first = store.add(dir.string(), {"main", "", ""});
  EXPECT_TRUE(first.added);
  EXPECT_EQ(first.run.run_id, run_id_at(1));
  EXPECT_EQ(first.run.started_at, "2026-11-25T10:01:00Z");
  EXPECT_EQ(first.run.fingerprint, "f00dcafe0001");
  EXPECT_FALSE(store.add(dir.string(), {"main", "", ""}).added);
  ASSERT_EQ(store.runs().size(), 1u);
  EXPECT_EQ(store.runs()[0].branch, "main");
  EXPECT_EQ(store.trend_rows("", "").size(), 4u);  // the four OK rows, once
}

// A run's point in a series is the median of its fastest quarter of repetitions: half of them
// slowed down by other work (wall time only) leave it at the undisturbed time, where the median of
// all of them would move by more than a third.
TEST_P(HistoryStoreTest, StoresTheMedianOfTheFastestQuarterAsTheRunsPoint) {
  HistoryStore store = HistoryStore::open(url_);
  CraftedRun run = crafted_run(run_id_at(1));
  CraftedRow& disturbed = find_row(run, "kokkos", "baseline");
  disturbed.reps = 20;
  disturbed.disturbed = 0.5;
  const auto dir = write_run("run", run);
  store.add(dir.string(), {});
  std::vector<double> wall, cpu;
  for (const SampleRow& sample : read_samples_csv((dir / "samples.csv").string()))
    if (sample.backend == "kokkos" && sample.phase == "baseline") {
      wall.push_back(sample.ms);
      cpu.push_back(sample.cpu_ms);
    }
  for (const history::TrendRow& row : store.trend_rows("", ""))
    if (row.backend == "kokkos" && row.phase == "baseline") {
      EXPECT_DOUBLE_EQ(row.point_ms, stats::median(stats::fastest(wall, 25)));
      EXPECT_DOUBLE_EQ(row.cpu_point_ms, stats::median(stats::fastest(cpu, 25)));
      EXPECT_LT(row.point_ms, 2.0 * 1.01);  // the undisturbed 2 ms, give or take the 1% noise
      EXPECT_GT(stats::median(wall), 2.0 * 1.3);
    }
}

// A run at two thread counts (run --threads 1,2) is stored whole, each row and sample at its
// count, gives back its files as they were, and makes a series of each row at each count.
TEST_P(HistoryStoreTest, StoresARunAtSeveralThreadCountsASeriesPerCount) {
  HistoryStore store = HistoryStore::open(url_);
  std::vector<std::filesystem::path> dirs;
  for (const int minute : {1, 2}) {
    dirs.push_back(write_run("run", crafted_run(run_id_at(minute))));
    at_thread_counts(dirs.back(), {1, 2});
    ASSERT_TRUE(store.add(dirs.back().string(), {}).added);
  }
  history::SqlConnection& db = store.connection();
  const std::string of_first_run = " WHERE run_id = '" + run_id_at(1) + "' GROUP BY threads ORDER BY threads";
  EXPECT_EQ(first_column(db, "SELECT threads FROM results" + of_first_run), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(first_column(db, "SELECT COUNT(*) FROM results" + of_first_run), (std::vector<std::string>{"4", "4"}));
  EXPECT_EQ(first_column(db, "SELECT COUNT(*) FROM samples" + of_first_run), (std::vector<std::string>{"48", "48"}));

  const auto out = fresh_temp_path("exported");
  store.export_run(run_id_at(1), out);
  for (const char* name : {"results.csv", "samples.csv", "machine.json", "catalog.json"})
    EXPECT_EQ(read_text(out / name), read_text(dirs[0] / name)) << name;

  const std::vector<history::Series> series = history::build_trends(store.trend_rows("", ""), {});
  std::set<std::string> names;
  for (const history::Series& one : series) {
    names.insert(one.name());
    EXPECT_EQ(one.points.size(), 2u) << one.name() << ": a point per run";
  }
  EXPECT_EQ(series.size(), 8u);  // the four rows at each of the two counts
  EXPECT_EQ(names.count("trainer2/lior_step/small/kokkos/cpu/0_baseline/threads=1"), 1u);
  EXPECT_EQ(names.count("trainer2/lior_step/small/kokkos/cpu/0_baseline/threads=2"), 1u);
}

// Samples from a samples.csv without threads (0: a file from before the column) are stored at
// their row's.
TEST_P(HistoryStoreTest, SamplesWithoutThreadsAreStoredAtTheirRowsCount) {
  HistoryStore store = HistoryStore::open(url_);
  const auto dir = write_run("run", crafted_run(run_id_at(1)));
  ASSERT_EQ(read_samples_csv((dir / "samples.csv").string()).front().threads, 0);
  store.add(dir.string(), {});
  EXPECT_EQ(first_column(store.connection(), "SELECT DISTINCT threads FROM samples"), (std::vector<std::string>{"1"}));
}

// A database at schema version 4 (no threads in its tables) holding a run at 4 threads migrates to
// version 5 with each row's and sample's threads read from the run's stored results.csv, nothing
// lost, and takes runs of several counts afterwards.
TEST_P(HistoryStoreTest, MigratesADatabaseOfVersionFourFillingInTheThreads) {
  const auto dir = write_run("run", crafted_run(run_id_at(1)));
  at_thread_counts(dir, {4});
  std::vector<std::string> counts_before;
  {
    auto connection = history::open_connection(url_);
    history::migrate(*connection, 4);
    ASSERT_EQ(first_column(*connection, "SELECT MAX(version) FROM schema_version"), (std::vector<std::string>{"4"}));
    store_as_version_4(*connection, dir);
    counts_before = stored_counts(*connection);
  }
  ASSERT_EQ(counts_before, (std::vector<std::string>{"4", "48"}));
  HistoryStore store = HistoryStore::open(url_);
  EXPECT_EQ(store.schema_version(), 5);
  history::SqlConnection& db = store.connection();
  EXPECT_EQ(stored_counts(db), counts_before);
  EXPECT_EQ(first_column(db, "SELECT DISTINCT threads FROM results"), (std::vector<std::string>{"4"}));
  EXPECT_EQ(first_column(db, "SELECT DISTINCT threads FROM samples"), (std::vector<std::string>{"4"}));
  const auto trend = store.trend_rows("", "");
  EXPECT_EQ(trend.size(), 4u);
  for (const history::TrendRow& row : trend) EXPECT_EQ(row.threads, 4) << row.backend << "/" << row.phase;

  const auto several = write_run("several", crafted_run(run_id_at(2)));
  at_thread_counts(several, {1, 2});
  EXPECT_TRUE(store.add(several.string(), {}).added);
  EXPECT_EQ(first_column(db, "SELECT COUNT(*) FROM results"), (std::vector<std::string>{"12"}));
}

TEST_P(HistoryStoreTest, RefusesTheSameRunIdWithOtherContent) {
  HistoryStore store = HistoryStore::open(url_);
  store.add(write_run("run", crafted_run(run_id_at(1))).string(), {});
  EXPECT_THROW(store.add(write_run("other", crafted_run(run_id_at(1), 2.0)).string(), {}), InputError);
  EXPECT_EQ(store.runs().size(), 1u);
}

TEST_P(HistoryStoreTest, ExportGivesBackTheRunDirectoryByteForByte) {
  HistoryStore store = HistoryStore::open(url_);
  const auto dir = write_run("run", crafted_run(run_id_at(1)));
  store.add(dir.string(), {});
  const auto out = fresh_temp_path("exported");
  store.export_run(run_id_at(1), out);
  for (const char* name : {"results.csv", "samples.csv", "machine.json", "catalog.json"})
    EXPECT_EQ(read_text(out / name), read_text(dir / name)) << name;
  EXPECT_THROW(store.export_run(run_id_at(1), out), InputError);  // never overwrites
  EXPECT_THROW(store.export_run("no-such-run", fresh_temp_path("none")), InputError);
}

TEST_P(HistoryStoreTest, IncompleteAndFailedRunsAreStoredMarkedAndLeftOutOfTrends) {
  HistoryStore store = HistoryStore::open(url_);
  CraftedRun incomplete = crafted_run(run_id_at(1));
  incomplete.extra_machine["complete"] = false;
  incomplete.extra_machine["incomplete"] = {{"reason", "stopped by SIGTERM"}};
  CraftedRun failed = crafted_run(run_id_at(2));
  find_row(failed, "kokkos", "batched_metrics").status = Status::Fail;
  store.add(write_run("incomplete", incomplete).string(), {});
  store.add(write_run("failed", failed).string(), {});
  store.add(write_run("good", crafted_run(run_id_at(3))).string(), {});
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_FALSE(runs[0].complete);
  EXPECT_EQ(runs[1].failed_rows, 1);
  EXPECT_TRUE(runs[2].trustworthy());
  for (const history::TrendRow& row : store.trend_rows("", "")) EXPECT_EQ(row.run_id, run_id_at(3));
}

TEST_P(HistoryStoreTest, TwoProcessesAddingTwentyRunsEachAtOnceLoseNothing) {
  std::string runs[2];
  for (int minute = 0; minute < 40; ++minute)
    runs[minute % 2] += " " + write_run("run", crafted_run(run_id_at(minute))).string();
  // Both processes start together and add one run per transaction, so their writes interleave.
  const ProcessResult both = run_command("(" + std::string(PHASEBENCH_EXECUTABLE) + " history --db '" + url_ +
                                         "' add" + runs[0] + " > /dev/null 2>&1; echo first=$?) & (" +
                                         PHASEBENCH_EXECUTABLE + " history --db '" + url_ + "' add" + runs[1] +
                                         " > /dev/null 2>&1; echo second=$?) & wait");
  EXPECT_NE(both.output.find("first=0"), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("second=0"), std::string::npos) << both.output;
  HistoryStore store = HistoryStore::open(url_);
  std::set<std::string> ids;
  for (const history::StoredRun& run : store.runs()) ids.insert(run.run_id);
  EXPECT_EQ(store.runs().size(), 40u);
  EXPECT_EQ(ids.size(), 40u);
  EXPECT_EQ(store.trend_rows("", "").size(), 160u);
}

// Two CI jobs adding the same run at once (a retried job, say): both succeed, it is stored once.
// Both processes add the same 10 runs in the same order, so they race on each run in turn.
TEST_P(HistoryStoreTest, TwoProcessesAddingTheSameRunsAtOnceBothSucceedAndStoreThemOnce) {
  HistoryStore::open(url_);  // the tables exist: the race is the add's, not the first migration's
  constexpr int kRuns = 10;
  std::string add = std::string(PHASEBENCH_EXECUTABLE) + " history --db '" + url_ + "' add";
  for (int minute = 0; minute < kRuns; ++minute) add += " " + write_run("run", crafted_run(run_id_at(minute))).string();
  const ProcessResult both = run_command("(" + add + " > /dev/null 2>&1; echo first=$?) & (" + add +
                                         " > /dev/null 2>&1; echo second=$?) & wait");
  EXPECT_NE(both.output.find("first=0"), std::string::npos) << both.output;
  EXPECT_NE(both.output.find("second=0"), std::string::npos) << both.output;
  HistoryStore store = HistoryStore::open(url_);
  EXPECT_EQ(store.runs().size(), static_cast<size_t>(kRuns));
  EXPECT_EQ(store.trend_rows("", "").size(), 4u * kRuns);  // each run's four OK rows, once
}

TEST_P(HistoryStoreTest, RecentRunsAreTheNewestTrustworthyOnesOfTheMachineAndBranch) {
  HistoryStore store = HistoryStore::open(url_);
  for (int minute = 1; minute <= 5; ++minute)
    store.add(write_run("run", crafted_run(run_id_at(minute))).string(), {minute == 5 ? "topic" : "main", "", ""});
  EXPECT_EQ(store.recent_runs("f00dcafe0001", "main", 3),
            (std::vector<std::string>{run_id_at(4), run_id_at(3), run_id_at(2)}));
  EXPECT_TRUE(store.recent_runs("another-machine", "", 3).empty());
}

// A database made by the first schema version (its statements and a run as that version stored
// it, committed in tests/data/history/v1.sql) opens migrated, its run intact.
TEST_P(HistoryStoreTest, MigratesADatabaseMadeByTheFirstVersion) {
  {
    auto connection = history::open_connection(url_);
    std::stringstream sql(read_text(std::filesystem::path(PHASEBENCH_TESTS_DIR) / "data/history/v1.sql"));
    std::string statement;
    while (std::getline(sql, statement, ';'))
      if (statement.find_first_not_of(" \n") != std::string::npos) connection->execute(statement);
  }
  HistoryStore store = HistoryStore::open(url_);
  EXPECT_EQ(store.schema_version(), history::kSchemaVersion);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run_id, "20261120T090000Z-v1");
  EXPECT_EQ(runs[0].branch, "");  // the first version kept no CI context
  // Version 3's points, computed from the stored samples (three repetitions of 2 ms for kokkos).
  const auto trend = store.trend_rows("", "");
  ASSERT_EQ(trend.size(), 2u);
  for (const history::TrendRow& row : trend) {
    EXPECT_EQ(row.threads, 1) << row.backend;  // version 5's, from the stored results.csv
    EXPECT_DOUBLE_EQ(row.point_ms, row.backend == "kokkos" ? 2.0 : 1.0) << row.backend;
    EXPECT_DOUBLE_EQ(row.cpu_point_ms, row.point_ms) << row.backend;
  }
  const auto out = fresh_temp_path("exported-v1");
  store.export_run("20261120T090000Z-v1", out);
  EXPECT_EQ(results::load_run(out.string()).rows.size(), 2u);
  // A later add goes into the migrated tables.
  EXPECT_TRUE(store.add(write_run("run", crafted_run(run_id_at(1))).string(), {"main", "7", ""}).added);
}

TEST_P(HistoryStoreTest, RefusesADatabaseFromANewerVersion) {
  HistoryStore::open(url_).connection().execute("INSERT INTO schema_version (version) VALUES (99)");
  EXPECT_THROW(HistoryStore::open(url_), InputError);
}

INSTANTIATE_TEST_SUITE_P(Databases, HistoryStoreTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

// ---- the command line ------------------------------------------------------------------------------

// A merge of shards keeps each row's shard run_id; the history stores it under the merge's own id,
// so a shard and the merge it went into are two runs of one history.
TEST(HistoryCommand, AMergeOfShardsIsStoredUnderItsOwnRunId) {
  std::vector<std::filesystem::path> shards;
  for (int index : {1, 2}) {
    CraftedRun shard = crafted_run(run_id_at(index));
    shard.rows = {{"reference", 0, "serial_fp32"}, {index == 1 ? "kokkos" : "onednn", 0, "baseline"}};
    shard.extra_machine["shard"] = {{"index", index}, {"count", 2}};
    shards.push_back(write_run("shard", shard));
  }
  const std::filesystem::path merged = fresh_temp_path("merged");
  const auto merge =
      run_phasebench("merge " + shards[0].string() + " " + shards[1].string() + " --out " + merged.string());
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  const std::string merged_id = results::load_run(merged.string()).machine.at("run_id");
  ASSERT_NE(merged_id, run_id_at(1));

  HistoryStore store = HistoryStore::open((fresh_temp_path("history") += ".sqlite").string());
  EXPECT_EQ(store.add(merged.string(), {}).run.run_id, merged_id);
  EXPECT_EQ(store.add(shards[0].string(), {}).run.run_id, run_id_at(1)) << "the shard is another run";
  EXPECT_EQ(store.runs().size(), 2u);
}

TEST(HistoryCommand, AddsListsTrendsAndExports) {
  const std::string db = "--db " + (fresh_temp_path("cli") += ".sqlite").string();
  std::string runs;
  for (int minute = 0; minute < 12; ++minute)
    runs += " " + write_run("run", crafted_run(run_id_at(minute), minute < 6 ? 1.0 : 1.3)).string();
  const ProcessResult added = run_phasebench("history " + db + " add" + runs);
  ASSERT_EQ(added.exit_code, 0) << added.output;
  EXPECT_NE(added.output.find("added " + run_id_at(11)), std::string::npos);
  const ProcessResult listed = run_phasebench("history " + db + " list");
  EXPECT_NE(listed.output.find(run_id_at(0) + "\t2026-11-25T10:00:00Z"), std::string::npos) << listed.output;
  const ProcessResult trend = run_phasebench("history " + db + " trend --filter kokkos/fused");
  ASSERT_EQ(trend.exit_code, 0) << trend.output;
  EXPECT_NE(trend.output.find("at run " + run_id_at(6)), std::string::npos) << trend.output;
  const auto out = fresh_temp_path("cli-export");
  EXPECT_EQ(run_phasebench("history " + db + " export " + run_id_at(3) + " --out " + out.string()).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(out / "results.csv"));

  // The history's report: the step marked, its commit range linked to the repository.
  const auto html = fresh_temp_path("history") += ".html";
  const ProcessResult report = run_phasebench("report --history " + db.substr(5) + " --filter kokkos/fused --out " +
                                              html.string() + " --commit-url https://example.org/r");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string page = read_text(html);
  EXPECT_NE(page.find("class=\"step-mark\""), std::string::npos);
  EXPECT_NE(page.find("https://example.org/r/compare/c0ffee100500...c0ffee100600"), std::string::npos);

  // The gate's base: the newest runs of the machine, pooled.
  const auto window = fresh_temp_path("window");
  const ProcessResult pooled = run_phasebench("history " + db + " window --fingerprint f00dcafe0001 --window 3 --out " +
                                              window.string());
  ASSERT_EQ(pooled.exit_code, 0) << pooled.output;
  EXPECT_NE(pooled.output.find(run_id_at(9) + " to " + run_id_at(11)), std::string::npos) << pooled.output;
  EXPECT_EQ(results::load_run((window / "pooled").string()).rows.size(), 4u);
}

TEST(HistoryCommand, BadInputExitsWithTwoAndSaysWhy) {
  const ProcessResult missing_dir = run_phasebench("history --db /no/such/dir/h.sqlite list");
  EXPECT_EQ(missing_dir.exit_code, 2);
  EXPECT_NE(missing_dir.output.find("/no/such/dir/h.sqlite"), std::string::npos) << missing_dir.output;
  const std::string db = "--db " + (fresh_temp_path("bad") += ".sqlite").string();
  EXPECT_EQ(run_phasebench("history " + db + " add /no/such/run").exit_code, 2);
  EXPECT_EQ(run_phasebench("history " + db + " trend --filter '('").exit_code, 2);
  EXPECT_EQ(run_phasebench("history " + db + " export nothing --out " + fresh_temp_path("x").string()).exit_code, 2);
}

}  // namespace
}  // namespace pb::testing
