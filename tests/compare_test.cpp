// `compare` on crafted runs: identical, shifted, noisy, rows missing or added, failing rows,
// schema versions, machines, malformed input. Exit codes through the executable; verdicts
// through the library.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "compare/compare.hpp"
#include "crafted_runs.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/errors.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using compare::Verdict;
using testing::CraftedRow;
using testing::CraftedRun;
using testing::ladder_rows;
using testing::run_phasebench;
using testing::write_run;

CraftedRun base_run() {
  CraftedRun run;
  run.rows = ladder_rows();
  return run;
}

// A fresh noise realization of the same run: what an unchanged build measures again.
CraftedRun rerun(CraftedRun run, uint64_t seed = 2) {
  run.noise_seed = seed;
  run.run_id = "20261121T010000Z-crafted";
  return run;
}

compare::Comparison compare_crafted(const CraftedRun& base, const CraftedRun& fresh,
                                    compare::Options options = {}) {
  return compare::compare_runs(results::load_run(write_run("base", base).string()),
                               results::load_run(write_run("new", fresh).string()), options);
}

Verdict verdict_of(const compare::Comparison& c, const std::string& backend_and_phase) {
  for (const auto& rc : c.rows)
    if (rc.name.find("/" + backend_and_phase) != std::string::npos) return rc.verdict;
  ADD_FAILURE() << "no row " << backend_and_phase;
  return Verdict::Unchanged;
}

std::string command(const fs::path& base, const fs::path& fresh, const std::string& options = "") {
  return "compare " + base.string() + " " + fresh.string() + " " + options;
}

// ---- timing --------------------------------------------------------------------------------------

TEST(Compare, IdenticalRunsPass) {
  const fs::path base = write_run("identical", base_run());
  const auto result = run_phasebench(command(base, base));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("passed"), std::string::npos) << result.output;
  const auto c = compare_crafted(base_run(), base_run());
  EXPECT_EQ(c.count(Verdict::Unchanged), 4);
  EXPECT_EQ(c.tested, 4);
}

TEST(Compare, RerunOfTheSameBuildPasses) {
  const auto c = compare_crafted(base_run(), rerun(base_run()));
  EXPECT_FALSE(c.failed());
  for (const auto& rc : c.rows) EXPECT_LT(std::abs(rc.change), 0.05) << rc.name;
}

TEST(Compare, TenPercentSlowerRowIsARegression) {
  CraftedRun slower = rerun(base_run());
  testing::find_row(slower, "kokkos", "batched_metrics").median_ms *= 1.10;
  const fs::path markdown = testing::fresh_temp_path("summary.md");
  const auto result = run_phasebench(command(write_run("base", base_run()), write_run("slower", slower),
                                             "--markdown " + markdown.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("REGRESSION"), std::string::npos) << result.output;

  std::ifstream in(markdown);
  const std::string summary((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(summary.find("FAILED"), std::string::npos) << summary;
  EXPECT_NE(summary.find("| trainer2/lior_step/small/kokkos/cpu/1_batched_metrics | OK |"), std::string::npos)
      << summary;

  const auto c = compare_crafted(base_run(), slower);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/1_batched_metrics"), Verdict::Regression);
  EXPECT_EQ(c.count(Verdict::Regression), 1);
  for (const auto& rc : c.rows)
    if (rc.verdict == Verdict::Regression) {
      EXPECT_NEAR(rc.change, 0.10, 0.02);
      EXPECT_LT(rc.change_ci.low, rc.change);
      EXPECT_GT(rc.change_ci.high, rc.change);
      EXPECT_LE(rc.p_slower_holm, 0.05);
    }
}

TEST(Compare, SignificantSlowdownWithinTheThresholdPasses) {
  CraftedRun slower = rerun(base_run());
  testing::find_row(slower, "kokkos", "batched_metrics").median_ms *= 1.10;
  const auto c = compare_crafted(base_run(), slower, {15.0});
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/1_batched_metrics"), Verdict::Slower);
  const auto result = run_phasebench(command(write_run("base", base_run()), write_run("slower", slower), "--threshold 15"));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(Compare, NoisySlowdownIsNotSignificant) {
  // 40% noise and 6 repetitions: a 10% shift of the median is within what noise does.
  CraftedRun base = base_run(), slower = rerun(base_run());
  for (CraftedRun* run : {&base, &slower})
    for (auto& row : run->rows) row.noise = 0.4, row.reps = 6;
  testing::find_row(slower, "kokkos", "batched_metrics").median_ms *= 1.10;
  const auto c = compare_crafted(base, slower);
  EXPECT_FALSE(c.failed());
  const Verdict verdict = verdict_of(c, "kokkos/cpu/1_batched_metrics");
  EXPECT_TRUE(verdict == Verdict::Unchanged || verdict == Verdict::Noisy) << compare::verdict_name(verdict);
}

TEST(Compare, ImprovementIsReportedNotFailed) {
  CraftedRun faster = rerun(base_run());
  testing::find_row(faster, "kokkos", "fused_lior_spd").median_ms *= 0.7;
  const auto c = compare_crafted(base_run(), faster);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/3_fused_lior_spd"), Verdict::Improved);
}

TEST(Compare, TooFewRepetitionsAreWarnedAbout) {
  CraftedRun base = base_run();
  for (auto& row : base.rows) row.reps = 3;
  CraftedRun slower = rerun(base);
  testing::find_row(slower, "kokkos", "batched_metrics").median_ms *= 1.5;
  const auto c = compare_crafted(base, slower);
  EXPECT_FALSE(c.failed());  // 3 against 3 cannot reach p <= 0.05 / 4
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.front().find("--reps"), std::string::npos) << c.warnings.front();
}

// A shared machine: other work slows some repetitions (here by 1.85x), and how many changes from
// run to run. The median follows that share; the fastest quarter does not.
TEST(Compare, FastestQuarterIgnoresRepetitionsOtherWorkSlowed) {
  CraftedRun quiet = base_run(), busy = rerun(base_run());
  for (auto& row : quiet.rows) row.reps = 40, row.disturbed = 0.2;
  for (auto& row : busy.rows) row.reps = 40, row.disturbed = 0.6;
  compare::Options fastest;
  fastest.fastest_pct = 25;
  EXPECT_TRUE(compare_crafted(quiet, busy).failed()) << "the medians moved by the machine alone";
  const auto c = compare_crafted(quiet, busy, fastest);
  EXPECT_FALSE(c.failed());
  for (const auto& rc : c.rows) EXPECT_LT(std::abs(rc.change), 0.03) << rc.name;
  testing::find_row(busy, "kokkos", "batched_metrics").median_ms *= 1.25;  // and a real slowdown
  const auto slowed = compare_crafted(quiet, busy, fastest);
  EXPECT_EQ(verdict_of(slowed, "kokkos/cpu/1_batched_metrics"), Verdict::Regression);
  EXPECT_EQ(slowed.count(Verdict::Regression), 1);
  const auto result = run_phasebench(command(write_run("quiet", quiet), write_run("busy", busy), "--fastest 25"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  // A reader of the report must see that only part of the repetitions was compared.
  EXPECT_NE(result.output.find("fastest 25% of repetitions"), std::string::npos) << result.output;
}

compare::Options cpu_metric() {
  compare::Options options;
  options.metric = compare::Metric::Cpu;
  return options;
}

// A busy machine: other processes hold the CPU for most repetitions of the new run. Its wall
// times grow with that share, its CPU times do not -- unless the variant itself does more work.
TEST(Compare, CpuTimeIgnoresTimeOtherProcessesHeldTheCpu) {
  CraftedRun quiet = base_run(), busy = rerun(base_run());
  for (auto& row : quiet.rows) row.reps = 30;
  for (auto& row : busy.rows) row.reps = 30, row.disturbed = 0.9;
  EXPECT_TRUE(compare_crafted(quiet, busy).failed()) << "wall time: every row looks slower";
  const auto c = compare_crafted(quiet, busy, cpu_metric());
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(c.tested, 4);
  for (const auto& rc : c.rows) EXPECT_LT(std::abs(rc.change), 0.03) << rc.name;

  testing::find_row(busy, "kokkos", "batched_metrics").median_ms *= 1.25;  // real extra work
  const auto slowed = compare_crafted(quiet, busy, cpu_metric());
  EXPECT_EQ(verdict_of(slowed, "kokkos/cpu/1_batched_metrics"), Verdict::Regression);
  EXPECT_EQ(slowed.count(Verdict::Regression), 1);

  const auto result = run_phasebench(command(write_run("quiet", quiet), write_run("busy", busy), "--metric cpu"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("CPU time of the process"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("base CPU ms"), std::string::npos) << result.output;
}

// The metric decides which column is compared: a change in CPU time alone is caught by --metric
// cpu and not by the default, and the other way round.
TEST(Compare, MetricChoosesTheColumnCompared) {
  CraftedRun more_cpu = rerun(base_run());
  testing::find_row(more_cpu, "kokkos", "baseline").cpu_factor = 1.3;  // e.g. a spinning helper thread
  EXPECT_FALSE(compare_crafted(base_run(), more_cpu).failed());
  EXPECT_EQ(verdict_of(compare_crafted(base_run(), more_cpu, cpu_metric()), "kokkos/cpu/0_baseline"),
            Verdict::Regression);
}

// ---- rows and statuses ---------------------------------------------------------------------------

TEST(Compare, MissingAndNewRowsAreReportedNotFailed) {
  CraftedRun fresh = rerun(base_run());
  fresh.rows.erase(fresh.rows.begin() + 2);                      // batched_metrics gone
  fresh.rows.push_back({"onednn", 8, "fused_quadratic_form", 0.5});  // a new variant
  const auto c = compare_crafted(base_run(), fresh);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/1_batched_metrics"), Verdict::Missing);
  EXPECT_EQ(verdict_of(c, "onednn/cpu/8_fused_quadratic_form"), Verdict::New);
  const auto result = run_phasebench(command(write_run("base", base_run()), write_run("new", fresh)));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("1 new row, 1 missing row"), std::string::npos) << result.output;
}

TEST(Compare, RowThatNowFailsItsCheckFailsTheGate) {
  CraftedRun broken = rerun(base_run());
  testing::find_row(broken, "kokkos", "fused_lior_spd").status = Status::Fail;
  const auto result = run_phasebench(command(write_run("base", base_run()), write_run("broken", broken)));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("OK -> FAIL"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("rel_l2_err 0.5"), std::string::npos) << "the reason is shown\n" << result.output;
  EXPECT_EQ(verdict_of(compare_crafted(base_run(), broken), "kokkos/cpu/3_fused_lior_spd"), Verdict::Broken);
}

TEST(Compare, EveryFailureStatusCounts) {
  for (Status status : {Status::Mistrusted, Status::Error}) {
    CraftedRun broken = rerun(base_run());
    testing::find_row(broken, "reference", "serial_fp32").status = status;
    EXPECT_TRUE(compare_crafted(base_run(), broken).failed()) << status;
  }
}

TEST(Compare, NewRowThatFailsFailsTheGate) {
  CraftedRun fresh = rerun(base_run());
  fresh.rows.push_back({"onednn", 8, "fused_quadratic_form", 0.5});
  fresh.rows.back().status = Status::Error;
  const auto c = compare_crafted(base_run(), fresh);
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(verdict_of(c, "onednn/cpu/8_fused_quadratic_form"), Verdict::NewFailure);
}

TEST(Compare, FailingInBothOrFixedDoesNotFail) {
  CraftedRun base = base_run(), fresh = rerun(base_run());
  testing::find_row(base, "kokkos", "baseline").status = Status::Fail;
  testing::find_row(fresh, "kokkos", "baseline").status = Status::Fail;
  testing::find_row(base, "kokkos", "fused_lior_spd").status = Status::Error;
  const auto c = compare_crafted(base, fresh);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/0_baseline"), Verdict::StillFailing);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/3_fused_lior_spd"), Verdict::Fixed);
}

TEST(Compare, SkippedRowsAreNotTimed) {
  CraftedRun fresh = rerun(base_run());
  testing::find_row(fresh, "kokkos", "baseline").status = Status::Skipped;
  const auto c = compare_crafted(base_run(), fresh);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/0_baseline"), Verdict::NotTimed);
  EXPECT_EQ(c.tested, 3);
}

// ---- machines and ratio mode ---------------------------------------------------------------------

CraftedRun other_machine_twice_as_slow(CraftedRun run) {
  run = rerun(run);
  run.fingerprint = "beefbeef0002";
  for (auto& row : run.rows) row.median_ms *= 2;
  return run;
}

TEST(Compare, TimeModeWarnsWhenMachinesDiffer) {
  const auto c = compare_crafted(base_run(), other_machine_twice_as_slow(base_run()));
  EXPECT_TRUE(c.failed());  // every row is twice as slow in absolute time
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.front().find("different machines"), std::string::npos) << c.warnings.front();
}

TEST(Compare, RatioModeSurvivesAChangeOfMachine) {
  compare::Options ratio;
  ratio.mode = compare::Mode::Ratio;
  const auto c = compare_crafted(base_run(), other_machine_twice_as_slow(base_run()), ratio);
  EXPECT_FALSE(c.failed());
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(verdict_of(c, "reference/cpu/0_serial_fp32"), Verdict::RatioBase);
  EXPECT_EQ(c.tested, 3);
  const auto result = run_phasebench(command(write_run("base", base_run()),
                                             write_run("other", other_machine_twice_as_slow(base_run())),
                                             "--mode ratio"));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(Compare, RatioModeCatchesOneRowSlowingRelativeToTheOthers) {
  CraftedRun slower = other_machine_twice_as_slow(base_run());
  testing::find_row(slower, "kokkos", "fused_lior_spd").median_ms *= 1.3;
  compare::Options ratio;
  ratio.mode = compare::Mode::Ratio;
  const auto c = compare_crafted(base_run(), slower, ratio);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/3_fused_lior_spd"), Verdict::Regression);
  EXPECT_EQ(c.count(Verdict::Regression), 1);
  ratio.ratio_to = compare::RatioBase::Phase0;  // against phase 0 of the same backend
  const auto by_phase0 = compare_crafted(base_run(), slower, ratio);
  EXPECT_EQ(verdict_of(by_phase0, "kokkos/cpu/3_fused_lior_spd"), Verdict::Regression);
  EXPECT_EQ(verdict_of(by_phase0, "kokkos/cpu/0_baseline"), Verdict::RatioBase);
}

TEST(Compare, RunsOfDifferentSizesMatchNothingAndSaySo) {
  CraftedRun large = rerun(base_run());
  large.size = "large";
  const auto c = compare_crafted(base_run(), large);
  EXPECT_EQ(c.count(Verdict::Missing), 4);
  EXPECT_EQ(c.count(Verdict::New), 4);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.back().find("no row"), std::string::npos);
}

// ---- input files ---------------------------------------------------------------------------------

void expect_input_error(const std::string& arguments, const std::vector<std::string>& mentions) {
  const auto result = run_phasebench(arguments);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  for (const std::string& text : mentions)
    EXPECT_NE(result.output.find(text), std::string::npos) << "should mention '" << text << "':\n" << result.output;
}

// Files written before cpu_ms was recorded have no CPU time. A run with none at all is a bad
// input for --metric cpu (exit 2, naming it); rows without it in a run that has some are
// untested, with a warning that says why.
TEST(Compare, RunsWithoutCpuTimeAreRefusedOrUntestedInCpuMetric) {
  CraftedRun old = base_run();
  for (auto& row : old.rows) row.cpu_factor = std::nan("");
  EXPECT_THROW(compare_crafted(old, rerun(base_run()), cpu_metric()), InputError);
  EXPECT_NO_THROW(compare_crafted(old, rerun(base_run())));
  const fs::path old_contract = fs::path(PHASEBENCH_TESTS_DIR) / "data/compare/contract-only";
  expect_input_error(command(old_contract, write_run("current", base_run()), "--metric cpu"),
                     {old_contract.string(), "cpu_ms", "--metric wall"});

  CraftedRun partly = base_run();
  testing::find_row(partly, "kokkos", "baseline").cpu_factor = std::nan("");
  const auto c = compare_crafted(partly, rerun(base_run()), cpu_metric());
  EXPECT_EQ(c.tested, 3);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/0_baseline"), Verdict::Untested);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.back().find("cpu_ms"), std::string::npos) << c.warnings.back();
}

TEST(Compare, NewerSchemaIsRejectedNamingFileAndLine) {
  CraftedRun future = rerun(base_run());
  future.rows[1].schema = kResultsSchemaVersion + 1;
  const fs::path dir = write_run("future", future);
  expect_input_error(command(write_run("base", base_run()), dir),
                     {(dir / "results.csv").string() + " line 3", "schema " + std::to_string(kResultsSchemaVersion + 1)});
}

// A results.csv with the contract's columns only and a samples.csv without the suite column, as
// the first writers produced (tests/data/compare/contract-only): it still compares.
TEST(Compare, OlderFilesWithFewerColumnsStillCompare) {
  const fs::path old = fs::path(PHASEBENCH_TESTS_DIR) / "data/compare/contract-only";
  const auto c = compare::compare_runs(results::load_run(old.string()),
                                       results::load_run(write_run("current", base_run()).string()), {});
  EXPECT_EQ(c.tested, 4);
  EXPECT_FALSE(c.failed());
  for (const auto& rc : c.rows) EXPECT_EQ(rc.base_reps, 12) << rc.name;
  const auto result = run_phasebench(command(old, write_run("current", base_run())));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// Replaces the first `cell` of the second row (line 3) of `dir`'s results.csv with `replacement`.
void edit_second_row(const fs::path& dir, const std::string& cell, const std::string& replacement) {
  std::ifstream in(dir / "results.csv");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const size_t third_line = text.find('\n', text.find('\n') + 1) + 1;
  const size_t at = text.find(cell, third_line);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, cell.size(), replacement);
  std::ofstream(dir / "results.csv") << text;
}

TEST(Compare, MalformedCsvExitsTwoNamingFileAndLine) {
  const fs::path dir = write_run("malformed", base_run());
  edit_second_row(dir, ",2,", ",two,");  // median_ms of the second row
  expect_input_error(command(write_run("base", base_run()), dir), {(dir / "results.csv").string(), "line 3"});
}

// A status is parsed once, on reading: a word that is none of them is bad input, not a row that
// quietly counts as "not failing".
TEST(Compare, UnknownStatusExitsTwoNamingFileLineAndColumn) {
  const fs::path dir = write_run("bogus", base_run());
  edit_second_row(dir, ",OK,", ",BOGUS,");
  expect_input_error(command(write_run("base", base_run()), dir),
                     {(dir / "results.csv").string() + " line 3", "column status", "'BOGUS'", "CAUGHT"});
  expect_input_error(command(dir, write_run("new", base_run())), {(dir / "results.csv").string() + " line 3"});
  const fs::path lower = write_run("lower", base_run());
  edit_second_row(lower, ",OK,", ",ok,");  // the words are upper case
  expect_input_error(command(lower, lower), {"column status"});
}

// ---- catalogs ------------------------------------------------------------------------------------

TEST(Compare, ClaimsAreTheCatalogsNotTheRowsOrTheRegistrys) {
  CraftedRun run = base_run();
  run.catalog = testing::crafted_catalog(4.5);
  const results::RunData loaded = results::load_run(write_run("cataloged", run).string());
  for (const ResultRow& row : loaded.rows) {
    if (row.backend == kReferenceBackend || row.phase_index == 0) {
      EXPECT_TRUE(std::isnan(row.claimed_min)) << row.phase;
      continue;
    }
    EXPECT_DOUBLE_EQ(row.claimed_min, 4.5) << row.phase;
    EXPECT_DOUBLE_EQ(row.claimed_max, 4.6) << row.phase;
  }
}

// tests/data/report/run-a was written before catalogs were saved; its results.csv still has the
// claims the registry had then, which are not trusted to be what it was measured with.
TEST(Compare, ARunWithoutACatalogLoadsWithItsClaimsUnknownAndSaysWhy) {
  const fs::path old = fs::path(PHASEBENCH_TESTS_DIR) / "data/report/run-a";
  const results::RunData loaded = results::load_run(old.string());
  EXPECT_FALSE(loaded.catalog.saved);
  for (const ResultRow& row : loaded.rows) EXPECT_TRUE(std::isnan(row.claimed_min)) << results::row_name(row);
  const auto result = run_phasebench(command(old, old));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("note: " + old.string() + ": " + catalog::kNoCatalogNote), std::string::npos)
      << result.output;
}

TEST(Compare, RunsMeasuredWithDifferentCatalogsAreWarnedAbout) {
  CraftedRun base = base_run(), fresh = rerun(base_run());
  base.catalog = testing::crafted_catalog(1.2);
  fresh.catalog = testing::crafted_catalog(1.9);
  const compare::Comparison c = compare_crafted(base, fresh);
  std::string warnings;
  for (const std::string& warning : c.warnings) warnings += warning + "\n";
  EXPECT_NE(warnings.find("different catalogs: trainer2/lior_step: phase 1 (batched_metrics) differs"),
            std::string::npos) << warnings;
  EXPECT_TRUE(c.notes.empty()) << "both runs have a catalog";
}

TEST(Compare, MissingSamplesAreABadInput) {
  const fs::path dir = write_run("no-samples", base_run());
  fs::remove(dir / "samples.csv");
  expect_input_error(command(dir / "results.csv", dir), {(dir / "samples.csv").string()});
}

TEST(Compare, RowTwiceIsABadInput) {
  CraftedRun twice = base_run();
  twice.rows.push_back(twice.rows.front());
  const fs::path dir = write_run("twice", twice);
  expect_input_error(command(dir, write_run("base", base_run())), {"line 6", "already appeared on line 2"});
}

TEST(Compare, NonexistentRunIsABadInput) {
  expect_input_error("compare /nonexistent/run " + write_run("base", base_run()).string(), {"/nonexistent/run"});
}

TEST(Compare, BadOptionsAreUsageErrors) {
  const fs::path base = write_run("base", base_run());
  expect_input_error(command(base, base, "--mode speed"), {"--mode"});
  expect_input_error(command(base, base, "--alpha 2"), {"--alpha"});
  expect_input_error(command(base, base, "--threshold -1"), {"--threshold"});
  expect_input_error(command(base, base, "--fastest 0"), {"--fastest"});
  expect_input_error(command(base, base, "--metric cycles"), {"--metric"});
  expect_input_error("compare " + base.string(), {"NEW"});
  expect_input_error(command(base, base, "--markdown /nonexistent/folder/summary.md"), {"/nonexistent/folder"});
}

// ---- the run-wide shift ----------------------------------------------------------------------------

// A ladder on three backends: enough rows (10) for a run-wide shift to be measured.
CraftedRun wide_run() {
  CraftedRun run;
  run.rows = {{"reference", 0, "serial_fp32", 1.0}};
  for (const std::string backend : {"kokkos", "torch", "onednn"})
    for (const CraftedRow& row : ladder_rows())
      if (row.backend == "kokkos") run.rows.push_back({backend, row.phase_index, row.phase, row.median_ms});
  return run;
}

// What a machine that drifted between two runs does: every row slower by `factor`.
CraftedRun drifted(CraftedRun run, double factor) {
  run = rerun(run);
  for (auto& row : run.rows) row.median_ms *= factor;
  return run;
}

const compare::RowComparison& row_of(const compare::Comparison& c, const std::string& backend_and_phase) {
  for (const auto& rc : c.rows)
    if (rc.name.find("/" + backend_and_phase) != std::string::npos) return rc;
  throw std::logic_error("no row " + backend_and_phase);
}

// Every row 3% slower, and one 7% slower: on its own times that row is a regression (the false
// alarm of two back-to-back runs of one build); against the run it moved 4%, within the threshold.
TEST(CompareShift, DriftOfTheWholeRunIsTakenOutOfEveryRow) {
  CraftedRun fresh = drifted(wide_run(), 1.03);
  testing::find_row(fresh, "torch", "batched_metrics").median_ms *= 1.04;
  compare::Options absolute;
  absolute.shift = compare::Shift::None;
  const auto on_own_times = compare_crafted(wide_run(), fresh, absolute);
  EXPECT_EQ(verdict_of(on_own_times, "torch/cpu/1_batched_metrics"), Verdict::Regression);
  EXPECT_FALSE(on_own_times.shift.applied);

  const auto c = compare_crafted(wide_run(), fresh);
  ASSERT_TRUE(c.shift.applied);
  EXPECT_EQ(c.shift.rows, 10);
  EXPECT_NEAR(c.shift.change, 0.03, 0.006);
  EXPECT_LE(c.shift.ci.low, c.shift.change);
  EXPECT_GE(c.shift.ci.high, c.shift.change);
  EXPECT_LT(c.shift.ci.high - c.shift.ci.low, 0.01);
  EXPECT_FALSE(c.shift.fails);
  EXPECT_FALSE(c.failed());
  const auto& torch = row_of(c, "torch/cpu/1_batched_metrics");
  EXPECT_NEAR(torch.raw_change, 1.03 * 1.04 - 1, 0.01);
  EXPECT_NEAR(torch.change, 0.04, 0.01);
  EXPECT_EQ(torch.verdict, Verdict::Slower);
}

TEST(CompareShift, ARowSlowerThanTheRunIsARegression) {
  CraftedRun fresh = drifted(wide_run(), 1.03);
  testing::find_row(fresh, "onednn", "fused_lior_spd").median_ms *= 1.10;
  const auto c = compare_crafted(wide_run(), fresh);
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(c.count(Verdict::Regression), 1);
  const auto& slowed = row_of(c, "onednn/cpu/3_fused_lior_spd");
  EXPECT_EQ(slowed.verdict, Verdict::Regression);
  EXPECT_NEAR(slowed.change, 0.10, 0.015);
  const auto result = run_phasebench(command(write_run("base", wide_run()), write_run("new", fresh)));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("run-wide shift: +3"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("change vs run"), std::string::npos) << result.output;
}

// Six rows on each of three backends, 1 ms each.
CraftedRun three_ladders() {
  CraftedRun run;
  for (const std::string backend : {"kokkos", "torch", "onednn"})
    for (int i = 0; i < 6; ++i) run.rows.push_back({backend, i, "p" + std::to_string(i), 1.0});
  return run;
}

// Rows of one workload on one backend that slowed together are what a shared machine's state can do
// between runs of one build. Where two of them regressed, or one did and two more are slower than
// the threshold, the report says so, and the verdicts stand. One regression beside one row that is
// slower but too noisy to be significant gets no such warning.
TEST(CompareShift, RowsOfOneBackendThatSlowedTogetherAreWarnedAbout) {
  CraftedRun fresh = drifted(three_ladders(), 1.03);
  testing::find_row(fresh, "onednn", "p0").median_ms *= 1.30;
  testing::find_row(fresh, "onednn", "p1").median_ms *= 1.40;
  testing::find_row(fresh, "onednn", "p2").median_ms *= 1.35;
  testing::find_row(fresh, "torch", "p1").median_ms *= 1.25;
  testing::find_row(fresh, "torch", "p2").median_ms *= 1.30;
  testing::find_row(fresh, "kokkos", "p3").median_ms *= 1.25;
  CraftedRow& noisy = testing::find_row(fresh, "kokkos", "p0");
  noisy.median_ms *= 1.10;
  noisy.noise = 0.4;
  const auto c = compare_crafted(three_ladders(), fresh);
  EXPECT_EQ(c.count(Verdict::Regression), 6);
  EXPECT_EQ(row_of(c, "kokkos/cpu/0_p0").verdict, Verdict::Noisy);
  const auto together = [&](const std::string& backend) {
    return std::count_if(c.warnings.begin(), c.warnings.end(), [&](const std::string& warning) {
      return warning.find("/" + backend + "/cpu: ") != std::string::npos &&
             warning.find("moved together") != std::string::npos;
    });
  };
  EXPECT_EQ(together("onednn"), 1);
  EXPECT_EQ(together("torch"), 1);
  EXPECT_EQ(together("kokkos"), 0);
  const auto result = run_phasebench(command(write_run("base", three_ladders()), write_run("new", fresh)));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("/onednn/cpu: 3 rows regressed and 3 of its 6 rows tested moved together"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("/torch/cpu: 2 rows regressed and 2 of its 6 rows tested moved together"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("slower than the threshold (+29.9% to +40.4%"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("beyond the run-wide shift"), std::string::npos) << result.output;
}

// A change that slows everything (compiler flags, a library, the machine) moves no row against
// the run. By default that is warned about, not failed: separate runs drift by as much. Above
// --max-shift the shift itself fails.
TEST(CompareShift, AWholeRunSlowerIsWarnedAboutAndFailsAboveMaxShift) {
  const auto warned = compare_crafted(wide_run(), drifted(wide_run(), 1.15));
  EXPECT_EQ(warned.count(Verdict::Regression), 0);
  EXPECT_FALSE(warned.shift.fails);
  EXPECT_FALSE(warned.failed());
  ASSERT_FALSE(warned.warnings.empty());
  EXPECT_NE(warned.warnings.front().find("the whole run moved by +15"), std::string::npos) << warned.warnings.front();
  EXPECT_NE(warned.warnings.front().find("--max-shift PCT fails"), std::string::npos) << warned.warnings.front();

  compare::Options bounded;
  bounded.max_shift_pct = 10;
  const auto c = compare_crafted(wide_run(), drifted(wide_run(), 1.15), bounded);
  EXPECT_TRUE(c.shift.fails);
  EXPECT_TRUE(c.failed());
  EXPECT_FALSE(compare_crafted(wide_run(), drifted(wide_run(), 1.07), bounded).failed());  // within the bound
  const fs::path base = write_run("base", wide_run()), fresh = write_run("new", drifted(wide_run(), 1.15));
  EXPECT_EQ(run_phasebench(command(base, fresh)).exit_code, 0);
  const fs::path junit = testing::fresh_temp_path("junit.xml");
  const auto result = run_phasebench(command(base, fresh, "--max-shift 10 --junit " + junit.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("FAILED: the whole run +15"), std::string::npos) << result.output;
  // A CI system's test report shows the failure too, though no row failed.
  std::ifstream junit_file(junit);
  const std::string xml((std::istreambuf_iterator<char>(junit_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("name=\"run-wide shift\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"the whole run is slower: +15"), std::string::npos) << xml;
  bounded.max_shift_pct = 0;
  const auto faster = compare_crafted(wide_run(), drifted(wide_run(), 0.85), bounded);  // a faster machine: no fail
  EXPECT_FALSE(faster.failed());
  EXPECT_FALSE(faster.warnings.empty());
  expect_input_error(command(base, fresh, "--max-shift -1"), {"--max-shift"});
}

TEST(CompareShift, FewRowsOrRatioModeTakeNoShift) {
  const auto few = compare_crafted(base_run(), drifted(base_run(), 1.03));
  EXPECT_FALSE(few.shift.applied);
  EXPECT_NE(few.shift.not_applied_why.find("too few rows"), std::string::npos) << few.shift.not_applied_why;
  compare::Options ratio;
  ratio.mode = compare::Mode::Ratio;
  const auto by_ratio = compare_crafted(wide_run(), drifted(wide_run(), 1.03), ratio);
  EXPECT_FALSE(by_ratio.shift.applied);
  const fs::path base = write_run("base", wide_run()), fresh = write_run("new", drifted(wide_run(), 1.03));
  const auto result = run_phasebench(command(base, fresh, "--shift none"));
  EXPECT_NE(result.output.find("not taken (--shift none)"), std::string::npos) << result.output;
  expect_input_error(command(base, fresh, "--shift median"), {"--shift"});
}

// ---- the run's spread ----------------------------------------------------------------------------

// 24 rows of one backend, 1 ms each.
CraftedRun many_rows() {
  CraftedRun run;
  for (int i = 0; i < 24; ++i) run.rows.push_back({"kokkos", i, "p" + std::to_string(i), 1.0});
  return run;
}

// What a second run of the same build measures on a shared machine: every row moved by its own
// amount, evenly from exp(-1.6 width) to exp(+1.6 width), though each row's repetitions agree
// within 1%.
CraftedRun scattered(CraftedRun run, double width) {
  run = rerun(run);
  for (size_t i = 0; i < run.rows.size(); ++i)
    run.rows[i].median_ms *= std::exp(width * (static_cast<double>(i) - 11.5) / 7);
  return run;
}

// Two runs of one build whose rows moved by up to +-13% each: every row beyond the threshold is
// significant over its own repetitions, and none stands out of how far the rows scatter.
TEST(CompareSpread, RowsThatMoveNoFurtherThanTheRowsScatterAreNotRegressions) {
  CraftedRun fresh = scattered(many_rows(), 0.08);
  testing::find_row(fresh, "kokkos", "p5").median_ms *= 1.15;
  compare::Options rank_test_alone;
  rank_test_alone.spread = compare::Spread::None;
  const auto alone = compare_crafted(many_rows(), fresh, rank_test_alone);
  EXPECT_FALSE(alone.spread.applied);
  EXPECT_GE(alone.count(Verdict::Regression), 4);
  EXPECT_TRUE(alone.failed());

  const auto c = compare_crafted(many_rows(), fresh);
  ASSERT_TRUE(c.spread.applied) << c.spread.not_applied_why;
  EXPECT_EQ(c.spread.rows, 24);
  EXPECT_NEAR(c.spread.sigma, 1.4826 * 0.08 * 6 / 7, 0.01);  // 1.4826 x the middle row's distance
  EXPECT_NEAR(c.spread.z_needed, 2.86, 0.01);                // one-sided normal at 0.05 / 24
  EXPECT_EQ(c.count(Verdict::Regression), 0);
  EXPECT_FALSE(c.failed());
  const auto& moved = row_of(c, "kokkos/cpu/5_p5");
  EXPECT_LT(moved.p_slower_holm, 0.05);
  EXPECT_GT(moved.change, 0.05);
  EXPECT_EQ(moved.verdict, Verdict::WithinSpread);
  EXPECT_NEAR(moved.spread_z, std::log1p(moved.change) / std::hypot(c.spread.drift, moved.own_error), 1e-9);
  EXPECT_GT(moved.p_spread_slower_holm, 0.05);
  EXPECT_EQ(row_of(c, "kokkos/cpu/0_p0").verdict, Verdict::WithinSpread);  // 12% faster: no improvement either

  const fs::path base = write_run("base", many_rows()), fresh_dir = write_run("new", fresh);
  const auto result = run_phasebench(command(base, fresh_dir));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("the rows scatter around it by +-"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("z vs spread"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("within the run's spread"), std::string::npos) << result.output;
  EXPECT_EQ(run_phasebench(command(base, fresh_dir, "--spread none")).exit_code, 1);
  expect_input_error(command(base, fresh_dir, "--spread rows"), {"--spread"});
}

// A row slowed by 25% where the rows scatter by about 1.5% stands out of the spread, by its z.
TEST(CompareSpread, ARowThatStandsOutOfTheSpreadIsARegression) {
  CraftedRun fresh = scattered(many_rows(), 0.01);
  testing::find_row(fresh, "kokkos", "p17").median_ms *= 1.25;
  const auto c = compare_crafted(many_rows(), fresh);
  ASSERT_TRUE(c.spread.applied);
  EXPECT_LT(c.spread.sigma, 0.02);
  EXPECT_LT(c.spread.smallest_outstanding_change, 0.06);
  EXPECT_EQ(c.count(Verdict::Regression), 1);
  const auto& slowed = row_of(c, "kokkos/cpu/17_p17");
  EXPECT_EQ(slowed.verdict, Verdict::Regression);
  EXPECT_GT(slowed.spread_z, c.spread.z_needed);
  EXPECT_LE(slowed.p_spread_slower_holm, 0.05);
  const fs::path junit = testing::fresh_temp_path("junit.xml");
  const auto result =
      run_phasebench(command(write_run("base", many_rows()), write_run("new", fresh), "--junit " + junit.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  std::ifstream junit_file(junit);
  const std::string xml((std::istreambuf_iterator<char>(junit_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("vs the run&apos;s spread"), std::string::npos) << xml;
}

// Two rows 25-30% slower among rows that scatter by about 1.5%: one whose repetitions agree within
// 1%, one whose repetitions split between its old time and 60% slower (a row with two states, as
// a thread pool that sometimes waits). Both are significant over their repetitions; only the first
// stands out of the drift between runs and its own error.
TEST(CompareSpread, ARowAsUncertainAsItsIntervalSaysDoesNotStandOut) {
  CraftedRun fresh = scattered(many_rows(), 0.01);
  testing::find_row(fresh, "kokkos", "p17").median_ms *= 1.25;
  CraftedRow& two_states = testing::find_row(fresh, "kokkos", "p5");
  two_states.median_ms *= 1.02;
  two_states.disturbed = 0.5;
  two_states.disturbed_factor = 1.6;
  const auto c = compare_crafted(many_rows(), fresh);
  ASSERT_TRUE(c.spread.applied) << c.spread.not_applied_why;
  EXPECT_GT(c.spread.typical_error, 0);
  EXPECT_LT(c.spread.typical_error, c.spread.sigma);
  EXPECT_GE(c.spread.drift, c.spread.sigma / 2);
  EXPECT_LE(c.spread.drift, c.spread.sigma);
  const auto& tight = row_of(c, "kokkos/cpu/17_p17");
  EXPECT_EQ(tight.verdict, Verdict::Regression);
  const auto& uncertain = row_of(c, "kokkos/cpu/5_p5");
  EXPECT_LE(uncertain.p_slower_holm, 0.05);
  EXPECT_GT(uncertain.change, 0.2);
  EXPECT_GT(uncertain.own_error, 5 * c.spread.typical_error);
  EXPECT_LT(uncertain.spread_z, c.spread.z_needed);
  EXPECT_GT(std::log1p(uncertain.change) / c.spread.sigma, c.spread.z_needed);  // against the spread alone: out
  EXPECT_EQ(uncertain.verdict, Verdict::WithinSpread);
  EXPECT_EQ(c.count(Verdict::Regression), 1);
  compare::Options rank_test_alone;
  rank_test_alone.spread = compare::Spread::None;
  EXPECT_EQ(row_of(compare_crafted(many_rows(), fresh, rank_test_alone), "kokkos/cpu/5_p5").verdict,
            Verdict::Regression);
}

// The spread is measured around the run-wide shift: without the shift, or with rows that did not
// move at all, each row is judged by its rank test alone, and the report says why.
TEST(CompareSpread, WithoutAShiftOrAScatterTheRankTestDecidesAlone) {
  compare::Options no_shift;
  no_shift.shift = compare::Shift::None;
  const auto c = compare_crafted(many_rows(), scattered(many_rows(), 0.08), no_shift);
  EXPECT_FALSE(c.spread.applied);
  EXPECT_NE(c.spread.not_applied_why.find("shift, which was not taken"), std::string::npos);
  EXPECT_GE(c.count(Verdict::Regression), 4);
  compare::Options ratio;
  ratio.mode = compare::Mode::Ratio;
  EXPECT_FALSE(compare_crafted(many_rows(), scattered(many_rows(), 0.08), ratio).spread.applied);
  const auto itself = compare_crafted(many_rows(), many_rows());
  EXPECT_FALSE(itself.spread.applied);
  EXPECT_NE(itself.spread.not_applied_why.find("do not scatter"), std::string::npos);
}

// ---- per-row thresholds --------------------------------------------------------------------------

// ---- the CPUs' speed -----------------------------------------------------------------------------

// `run` with the probe of the CPUs taking `us` microseconds before every repetition.
CraftedRun probed(CraftedRun run, double us) {
  for (CraftedRow& row : run.rows) row.cpu_probe_us = us;
  return run;
}

// Two rows 30% slower in NEW: p5's repetitions ran while the probe of the CPUs took half again as
// long as in BASE (another tenant on a host core), p17's on CPUs as fast as before. p5 moved no
// further than its CPUs did: not judged. p17 regressed.
TEST(CompareCpuSpeed, ARowThatMovedNoFurtherThanItsCpusIsNotJudged) {
  const CraftedRun base = probed(many_rows(), 30);
  CraftedRun fresh = probed(scattered(many_rows(), 0.01), 30);
  CraftedRow& on_slower_cpus = testing::find_row(fresh, "kokkos", "p5");
  on_slower_cpus.median_ms *= 1.3;
  on_slower_cpus.cpu_probe_us = 45;
  testing::find_row(fresh, "kokkos", "p17").median_ms *= 1.3;
  const auto c = compare_crafted(base, fresh);
  const auto& excused = row_of(c, "kokkos/cpu/5_p5");
  EXPECT_NEAR(excused.cpu_change, 0.5, 1e-9);
  EXPECT_GT(excused.change, 0.2);
  EXPECT_LE(excused.p_slower_holm, 0.05);
  EXPECT_EQ(excused.verdict, Verdict::CpuSpeed);
  const auto& slowed = row_of(c, "kokkos/cpu/17_p17");
  EXPECT_NEAR(slowed.cpu_change, 0, 1e-9);
  EXPECT_EQ(slowed.verdict, Verdict::Regression);
  EXPECT_TRUE(c.failed());
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.back().find("1 row moved beyond the threshold no further than the CPUs' speed"),
            std::string::npos)
      << c.warnings.back();
  compare::Options ignore;
  ignore.cpu_speed = compare::CpuSpeed::Ignore;
  EXPECT_EQ(row_of(compare_crafted(base, fresh, ignore), "kokkos/cpu/5_p5").verdict, Verdict::Regression);

  const fs::path base_dir = write_run("base", base), fresh_dir = write_run("new", fresh);
  const fs::path junit = testing::fresh_temp_path("junit.xml");
  const auto result = run_phasebench(command(base_dir, fresh_dir, "--junit " + junit.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("CPUs' speed, not judged"), std::string::npos) << result.output;
  std::ifstream junit_file(junit);
  const std::string xml((std::istreambuf_iterator<char>(junit_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("the probe of the CPUs moved by +50.0%"), std::string::npos) << xml;
  EXPECT_EQ(run_phasebench(command(base_dir, fresh_dir, "--cpu-speed ignore")).exit_code, 1);
  expect_input_error(command(base_dir, fresh_dir, "--cpu-speed sometimes"), {"--cpu-speed"});
}

// A row that slowed further than its CPUs did is a regression; so is one that a run did not probe
// (a file written before the probe), judged by its times alone.
TEST(CompareCpuSpeed, ARowSlowerThanItsCpusOrNotProbedIsJudgedByItsTimes) {
  CraftedRun base = probed(many_rows(), 30);
  testing::find_row(base, "kokkos", "p17").cpu_probe_us = kMissing;
  CraftedRun fresh = probed(scattered(many_rows(), 0.01), 30);
  CraftedRow& beyond_its_cpus = testing::find_row(fresh, "kokkos", "p5");
  beyond_its_cpus.median_ms *= 1.6;
  beyond_its_cpus.cpu_probe_us = 39;
  CraftedRow& unprobed = testing::find_row(fresh, "kokkos", "p17");
  unprobed.median_ms *= 1.3;
  unprobed.cpu_probe_us = 45;
  const auto c = compare_crafted(base, fresh);
  EXPECT_NEAR(row_of(c, "kokkos/cpu/5_p5").cpu_change, 0.3, 1e-9);
  EXPECT_EQ(row_of(c, "kokkos/cpu/5_p5").verdict, Verdict::Regression);
  EXPECT_TRUE(std::isnan(row_of(c, "kokkos/cpu/17_p17").cpu_change));
  EXPECT_EQ(row_of(c, "kokkos/cpu/17_p17").verdict, Verdict::Regression);
  EXPECT_EQ(c.count(Verdict::CpuSpeed), 0);
}

// Faster CPUs excuse an improvement no larger than theirs, as slower ones excuse a slowdown.
TEST(CompareCpuSpeed, AnImprovementNoLargerThanItsCpusIsNotJudgedEither) {
  CraftedRun base = probed(many_rows(), 30);
  testing::find_row(base, "kokkos", "p5").cpu_probe_us = 45;
  CraftedRun fresh = probed(scattered(many_rows(), 0.01), 30);
  testing::find_row(fresh, "kokkos", "p5").median_ms *= 0.7;
  testing::find_row(fresh, "kokkos", "p17").median_ms *= 0.7;
  const auto c = compare_crafted(base, fresh);
  EXPECT_NEAR(row_of(c, "kokkos/cpu/5_p5").cpu_change, 30.0 / 45 - 1, 1e-9);
  EXPECT_EQ(row_of(c, "kokkos/cpu/5_p5").verdict, Verdict::CpuSpeed);
  EXPECT_EQ(row_of(c, "kokkos/cpu/17_p17").verdict, Verdict::Improved);
  EXPECT_FALSE(c.failed());
}

// The CPUs ran every row of NEW faster (the probe 30 -> 20 us) and every row followed, 25% faster,
// but for two: p5's code is one the CPUs' state does not reach, and it took about as long as before;
// p17 took 30% longer than before. Against the shift both stand out as slower. p5 did not move
// itself: not judged, unless the CPUs moved less than the run did. p17 did: a regression.
// Mirrored, a row that stayed put while slower CPUs slowed the rest is not an improvement.
TEST(CompareCpuSpeed, ARowThatDidNotFollowItsCpusIsNotJudged) {
  const CraftedRun base = probed(many_rows(), 30);
  CraftedRun fresh = probed(scattered(many_rows(), 0.01), 20);
  for (CraftedRow& row : fresh.rows) row.median_ms *= 0.75;
  testing::find_row(fresh, "kokkos", "p5").median_ms = 0.99;
  testing::find_row(fresh, "kokkos", "p17").median_ms = 1.3;
  const auto c = compare_crafted(base, fresh);
  ASSERT_TRUE(c.shift.applied) << c.shift.not_applied_why;
  EXPECT_LT(c.shift.change, -0.2);
  const auto& stayed = row_of(c, "kokkos/cpu/5_p5");
  EXPECT_GT(stayed.change, 0.25);
  EXPECT_LE(stayed.p_slower_holm, 0.05);
  EXPECT_NEAR(stayed.cpu_change, -1.0 / 3, 1e-9);
  EXPECT_TRUE(compare::stayed_while_cpus_moved(stayed));
  EXPECT_EQ(stayed.verdict, Verdict::CpuSpeed);
  const auto& slowed = row_of(c, "kokkos/cpu/17_p17");
  EXPECT_FALSE(compare::stayed_while_cpus_moved(slowed));
  EXPECT_EQ(slowed.verdict, Verdict::Regression);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.back().find("1 row stood out of the run-wide shift only by not following the CPUs' speed"),
            std::string::npos)
      << c.warnings.back();
  compare::Options ignore;
  ignore.cpu_speed = compare::CpuSpeed::Ignore;
  EXPECT_EQ(row_of(compare_crafted(base, fresh, ignore), "kokkos/cpu/5_p5").verdict, Verdict::Regression);
  // CPUs only 10% faster cannot account for a run 25% faster: something else moved it.
  CraftedRun slightly_faster_cpus = fresh;
  for (CraftedRow& row : slightly_faster_cpus.rows) row.cpu_probe_us = 27;
  EXPECT_EQ(row_of(compare_crafted(base, slightly_faster_cpus), "kokkos/cpu/5_p5").verdict, Verdict::Regression);

  CraftedRun slower_cpus = probed(scattered(many_rows(), 0.01), 45);
  for (CraftedRow& row : slower_cpus.rows) row.median_ms *= 1.3;
  testing::find_row(slower_cpus, "kokkos", "p5").median_ms = 1.01;
  const auto mirrored = compare_crafted(base, slower_cpus);
  EXPECT_LT(row_of(mirrored, "kokkos/cpu/5_p5").change, -0.2);
  EXPECT_EQ(row_of(mirrored, "kokkos/cpu/5_p5").verdict, Verdict::CpuSpeed);

  const fs::path junit = testing::fresh_temp_path("junit.xml");
  const auto result =
      run_phasebench(command(write_run("base", base), write_run("new", fresh), "--junit " + junit.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  const std::string xml = testing::read_text(junit);
  EXPECT_NE(xml.find("and the run-wide shift with it, while the row did not move significantly"), std::string::npos)
      << xml;
}

// ---- runs timed in one process ------------------------------------------------------------------

// `run` with its rows timed by `processes` worker processes (machine.json's timing.processes).
CraftedRun timed_by(CraftedRun run, int processes) {
  run.extra_machine["timing"] = {{"reps", 12}, {"processes", processes}};
  return run;
}

bool warns_of_one_process(const compare::Comparison& c) {
  return std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& warning) {
    return warning.find("every row in one worker process") != std::string::npos;
  });
}

// A regression beyond the run-wide shift between runs that each timed a row in one process may be
// that process's state: the reader is told, and how to record runs that average it. The verdict
// stays. Runs of several processes, runs that do not say, and comparisons without a regression
// are not warned about.
TEST(CompareOneProcess, ARegressionBetweenRunsOfOneProcessEachIsWarnedAbout) {
  CraftedRun slowed = scattered(many_rows(), 0.01);
  testing::find_row(slowed, "kokkos", "p17").median_ms *= 1.3;
  const auto both_one = compare_crafted(timed_by(many_rows(), 1), timed_by(slowed, 1));
  EXPECT_EQ(row_of(both_one, "kokkos/cpu/17_p17").verdict, Verdict::Regression);
  ASSERT_TRUE(warns_of_one_process(both_one));
  EXPECT_NE(both_one.warnings.back().find("both runs each timed"), std::string::npos) << both_one.warnings.back();
  EXPECT_NE(both_one.warnings.back().find("run --processes 3"), std::string::npos);
  const auto base_one = compare_crafted(timed_by(many_rows(), 1), timed_by(slowed, 3));
  ASSERT_TRUE(warns_of_one_process(base_one));
  EXPECT_EQ(base_one.warnings.back().find("both runs"), std::string::npos) << base_one.warnings.back();
  EXPECT_NE(base_one.warnings.back().find(base_one.base_label + " timed"), std::string::npos);

  const auto both_three = compare_crafted(timed_by(many_rows(), 3), timed_by(slowed, 3));
  EXPECT_EQ(row_of(both_three, "kokkos/cpu/17_p17").verdict, Verdict::Regression);
  EXPECT_FALSE(warns_of_one_process(both_three));
  EXPECT_FALSE(warns_of_one_process(compare_crafted(many_rows(), slowed)));  // how they were timed: unknown
  EXPECT_FALSE(
      warns_of_one_process(compare_crafted(timed_by(many_rows(), 1), timed_by(scattered(many_rows(), 0.01), 1))));
  compare::Options no_shift;
  no_shift.shift = compare::Shift::None;
  EXPECT_FALSE(warns_of_one_process(compare_crafted(timed_by(many_rows(), 1), timed_by(slowed, 1), no_shift)));
}

fs::path thresholds_file(const std::string& text) {
  const fs::path path = testing::fresh_temp_path("thresholds.txt");
  std::ofstream(path) << text;
  return path;
}

TEST(CompareThresholds, ARowsOwnThresholdDecidesItsVerdict) {
  CraftedRun fresh = rerun(base_run());
  testing::find_row(fresh, "kokkos", "batched_metrics").median_ms *= 1.10;  // 10%: over 5, under 15
  testing::find_row(fresh, "kokkos", "fused_lior_spd").median_ms *= 1.04;   // 4%: under 5, over 2
  const fs::path rules = thresholds_file(
      "# noisy row looser, the row we care about tighter\n"
      "*/kokkos/cpu/1_batched_metrics  15\n"
      "\n"
      "trainer2/lior_step/*/3_fused_lior_spd 2%   # first match wins\n"
      "*/3_fused_lior_spd 50\n"
      "*/cuda/* 1\n");
  compare::Options options;
  options.row_thresholds = compare::read_row_thresholds(rules.string());
  const auto c = compare_crafted(base_run(), fresh, options);
  EXPECT_EQ(row_of(c, "kokkos/cpu/1_batched_metrics").threshold_pct, 15);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/1_batched_metrics"), Verdict::Slower);
  EXPECT_EQ(row_of(c, "kokkos/cpu/3_fused_lior_spd").threshold_pct, 2);
  EXPECT_EQ(verdict_of(c, "kokkos/cpu/3_fused_lior_spd"), Verdict::Regression);
  EXPECT_EQ(row_of(c, "kokkos/cpu/0_baseline").threshold_pct, 5);
  // The two rules no row meets first are named with their lines.
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_NE(c.warnings[0].find(":5: the pattern '*/3_fused_lior_spd'"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[1].find(":6: the pattern '*/cuda/*'"), std::string::npos) << c.warnings[1];

  const auto result =
      run_phasebench(command(write_run("base", base_run()), write_run("new", fresh), "--thresholds " + rules.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("threshold"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("15%"), std::string::npos) << result.output;
}

TEST(CompareThresholds, BadLinesAreRefusedWithFileAndLine) {
  const fs::path base = write_run("base", base_run());
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"*/kokkos/*\n", "has no threshold"},
      {"# fine\n*/kokkos/* ten\n", "threshold 'ten' is not a percent"},
      {"*/kokkos/* 5 10\n", "'10' after the threshold"},
      {"*/kokkos/* -1\n", "threshold '-1'"},
      {"*/kokkos/* nan\n", "threshold 'nan'"},
      {"*/kokkos/* 1e9\n", "threshold '1e9'"},
      {"*/kokkos/* 5%%\n", "threshold '5%%'"},
  };
  for (const auto& [text, message] : bad) {
    const fs::path rules = thresholds_file(text);
    const int line = text.rfind("# fine", 0) == 0 ? 2 : 1;
    expect_input_error(command(base, base, "--thresholds " + rules.string()),
                       {rules.string() + ":" + std::to_string(line) + ": ", message});
  }
  expect_input_error(command(base, base, "--thresholds /nonexistent/thresholds.txt"),
                     {"/nonexistent/thresholds.txt", "cannot read"});
}

}  // namespace
}  // namespace pb
