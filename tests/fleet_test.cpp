// Fleets and baselines: `run --shard i/n` partitions a selection, `merge` joins the shards into
// one run, `baseline record` files a passing run under its machine's fingerprint; and the
// test-only slowdown injection the gate's trust measurement uses.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "crafted_runs.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/runner.hpp"
#include "results/results_model.hpp"
#include "engine/slowdown_injection.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::CraftedRun;
using testing::fresh_temp_path;
using testing::run_phasebench;
using testing::write_run;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::set<std::string> row_keys(const fs::path& run) {
  std::set<std::string> keys;
  for (const ResultRow& row : read_results_csv((run / "results.csv").string())) keys.insert(results::row_key(row));
  return keys;
}

// ---- shards --------------------------------------------------------------------------------------

TEST(Shard, ShardsPartitionTheSelectionByWholeLadders) {
  const std::vector<Case> all = plan_cases({}, SizeClass::Small);
  for (int count = 1; count <= 4; ++count) {
    std::map<std::string, int> shard_of_case, shard_of_ladder;
    for (int index = 1; index <= count; ++index) {
      Selection selection;
      selection.shard_index = index;
      selection.shard_count = count;
      for (const Case& c : plan_cases(selection, SizeClass::Small)) {
        EXPECT_TRUE(shard_of_case.emplace(c.row_name(), index).second) << c.row_name() << " in two shards";
        const std::string ladder = c.workload->full_name() + "/" + c.ladder->backend + "/" + c.device;
        EXPECT_EQ(shard_of_ladder.emplace(ladder, index).first->second, index) << ladder << " split";
      }
    }
    EXPECT_EQ(shard_of_case.size(), all.size()) << count << " shards";
  }
}

TEST(Shard, BadShardIsAUsageError) {
  for (const char* shard : {"0/2", "3/2", "2", "a/b", "1/0", "1/2x"}) {
    const auto result = run_phasebench(std::string("run --quick --size small --shard ") + shard);
    EXPECT_EQ(result.exit_code, 2) << shard << "\n" << result.output;
    EXPECT_NE(result.output.find("--shard"), std::string::npos) << result.output;
  }
}

// Two real shards of the quick suite merge into what one run covers: each case once, the
// reference (timed in both shards for their speedups) once, every row's samples kept.
TEST(Merge, ShardsOfARunMergeIntoTheWholeRun) {
  const std::string selection = "run --quick --size small --filter trainer2/lior_step ";
  const fs::path whole = fresh_temp_path("whole"), first = fresh_temp_path("shard1"),
                 second = fresh_temp_path("shard2"), merged = fresh_temp_path("merged");
  for (const auto& [out, shard] : {std::pair{whole, ""}, {first, "--shard 1/2 "}, {second, "--shard 2/2 "}}) {
    const auto result = run_phasebench(selection + shard + "--out " + out.string());
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  EXPECT_EQ(read_json(second / "machine.json")["shard"]["count"], 2);
  const auto result = run_phasebench("merge " + second.string() + " " + first.string() + " --out " + merged.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;

  EXPECT_EQ(row_keys(merged), row_keys(whole));
  const results::RunData run = results::load_run(merged.string());
  EXPECT_EQ(run.rows.size(), row_keys(whole).size()) << "each case once";
  for (const ResultRow& row : run.rows)
    if (row.status == Status::Ok) {
      const std::string key = results::row_key(row);
      EXPECT_EQ(run.samples.at(key).size(), 3u) << results::row_name(row);
      ASSERT_EQ(run.cpu_samples.at(key).size(), 3u) << results::row_name(row);
      ASSERT_EQ(run.cpu_probe_samples.at(key).size(), 3u) << results::row_name(row);
      for (size_t rep = 0; rep < 3; ++rep) {
        const double cpu = run.cpu_samples.at(key)[rep], wall = run.samples.at(key)[rep];
        EXPECT_GT(cpu, 0) << results::row_name(row);
        EXPECT_GT(run.cpu_probe_samples.at(key)[rep], 0) << "the probe of the CPUs is kept: " << results::row_name(row);
        // Per iteration, like `ms`; the serial reference has one thread, which cannot use more
        // CPU time than the time that passed.
        if (row.backend == "reference") EXPECT_LE(cpu, 1.05 * wall + 0.01) << results::row_name(row);
      }
    }
  const nlohmann::json machine = read_json(merged / "machine.json");
  EXPECT_EQ(machine["merged_from"].size(), 2u);
  EXPECT_FALSE(machine.contains("shard"));
  EXPECT_EQ(machine["merged_from"][0]["shard"], "1/2") << "shards in order";
  EXPECT_TRUE(read_json(merged / "benchmark.json").contains("benchmarks"));
}

CraftedRun crafted(const std::string& fingerprint, std::vector<testing::CraftedRow> rows) {
  CraftedRun run;
  run.fingerprint = fingerprint;
  run.rows = std::move(rows);
  return run;
}

TEST(Merge, RunsOfDifferentMachinesNeedAllowMixed) {
  const fs::path a = write_run("a", crafted("aaaa", {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}}));
  const fs::path b = write_run("b", crafted("bbbb", {{"onednn", 0, "baseline"}}));
  const fs::path out = fresh_temp_path("mixed");
  auto result = run_phasebench("merge " + a.string() + " " + b.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--allow-mixed"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out));

  result = run_phasebench("merge " + a.string() + " " + b.string() + " --allow-mixed --out " + out.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_json(out / "machine.json")["fingerprint"], "mixed");
  EXPECT_EQ(row_keys(out).size(), 3u);
}

TEST(Merge, CaseInTwoInputsIsRefused) {
  const fs::path a = write_run("a", crafted("aaaa", {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}}));
  const fs::path b = write_run("b", crafted("aaaa", {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}}));
  const auto result = run_phasebench("merge " + a.string() + " " + b.string() + " --out " + fresh_temp_path("dup").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("kokkos/cpu/0_baseline is in both"), std::string::npos) << result.output;
}

TEST(Merge, ShardGivenTwiceIsRefused) {
  CraftedRun shard = crafted("aaaa", {{"kokkos", 0, "baseline"}});
  shard.extra_machine = {{"shard", {{"index", 1}, {"count", 2}}}};
  CraftedRun again = crafted("aaaa", {{"onednn", 0, "baseline"}});
  again.extra_machine = shard.extra_machine;
  const auto result = run_phasebench("merge " + write_run("s1", shard).string() + " " + write_run("s1b", again).string() +
                                     " --out " + fresh_temp_path("twice").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("shard 1/2 given twice"), std::string::npos) << result.output;
}

// A shard that no input is (its task was cancelled before it wrote anything) leaves cases out: the
// merged run is written, marked incomplete with the shard named, and compare refuses it until the
// shard is run and merged again.
TEST(Merge, AMissingShardMarksTheMergedRunIncomplete) {
  const auto shard = [](int index, std::vector<testing::CraftedRow> rows) {
    CraftedRun run = crafted("aaaa", std::move(rows));
    run.extra_machine = {{"shard", {{"index", index}, {"count", 3}}}};
    return write_run("shard" + std::to_string(index), run);
  };
  const fs::path first = shard(1, {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}});
  const fs::path second = shard(2, {{"reference", 0, "serial_fp32"}, {"onednn", 0, "baseline"}});
  const fs::path third = shard(3, {{"reference", 0, "serial_fp32"}, {"torch", 0, "baseline"}});
  const fs::path partial = fresh_temp_path("partial"), whole = fresh_temp_path("whole");
  auto result = run_phasebench("merge " + first.string() + " " + third.string() + " --out " + partial.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("shard 2/3 is not among the inputs"), std::string::npos) << result.output;
  const nlohmann::json machine = read_json(partial / "machine.json");
  EXPECT_EQ(machine["complete"], false);
  const std::string reason = machine["incomplete"]["reason"];
  EXPECT_EQ(reason, "shard 2/3 is missing; run the missing shard with the same options and merge again");
  EXPECT_EQ(machine["incomplete"]["missing_shards"], nlohmann::json::array({"2/3"}));
  EXPECT_FALSE(machine["incomplete"].contains("resume")) << "nothing to resume: the shard has no directory";
  EXPECT_EQ(row_keys(partial).size(), 3u) << "the reference once, the two shards' cases";

  result = run_phasebench("compare " + partial.string() + " " + partial.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("is an incomplete run (shard 2/3 is missing"), std::string::npos) << result.output;
  result = run_phasebench("compare " + partial.string() + " " + partial.string() + " --allow-incomplete");
  EXPECT_EQ(result.exit_code, 0) << result.output;

  result = run_phasebench("merge " + first.string() + " " + second.string() + " " + third.string() + " --out " +
                          whole.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_json(whole / "machine.json")["complete"], true);
  EXPECT_FALSE(read_json(whole / "machine.json").contains("incomplete"));
  EXPECT_EQ(row_keys(whole).size(), 4u);
}

// Repeated runs of the same cases, one process each, pooled into one run.
TEST(Merge, PoolJoinsTheSamplesOfRepeatedRunsAndRecomputesTheRows) {
  CraftedRun first = crafted("aaaa", testing::ladder_rows()), second = first;
  second.noise_seed = 2;
  for (testing::CraftedRow& row : first.rows) row.cpu_probe_us = 30;
  for (testing::CraftedRow& row : second.rows) row.cpu_probe_us = 45;
  second.rows[1].status = Status::Fail;  // kokkos baseline failed its check in one process
  first.extra_machine["timing"] = {{"reps", 12}, {"processes", 1}};
  second.extra_machine["timing"] = {{"reps", 12}, {"processes", 3}};
  const fs::path out = fresh_temp_path("pooled");
  const auto result = run_phasebench("merge --pool " + write_run("p1", first).string() + " " +
                                     write_run("p2", second).string() + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const results::RunData pooled = results::load_run(out.string());
  ASSERT_EQ(pooled.rows.size(), 4u);
  std::map<std::string, ResultRow> by_phase;
  for (const ResultRow& row : pooled.rows) by_phase[row.backend + "/" + row.phase] = row;
  const ResultRow& reference = by_phase["reference/serial_fp32"];
  EXPECT_EQ(reference.reps, 24);
  EXPECT_EQ(pooled.samples.at(results::row_key(reference)).size(), 24u);
  EXPECT_NEAR(reference.median_ms, 1.0, 0.01);
  // CPU times travel with their repetitions: the first process's, then the second's.
  const results::RunData p1 = results::load_run(write_run("p1-again", first).string());
  const std::vector<double>& cpu = pooled.cpu_samples.at(results::row_key(reference));
  ASSERT_EQ(cpu.size(), 24u);
  EXPECT_EQ(std::vector<double>(cpu.begin(), cpu.begin() + 12), p1.cpu_samples.at(results::row_key(reference)));
  const std::vector<double>& probes = pooled.cpu_probe_samples.at(results::row_key(reference));
  ASSERT_EQ(probes.size(), 24u);
  EXPECT_EQ(probes.front(), 30);  // so do the probes of the CPUs
  EXPECT_EQ(probes.back(), 45);
  EXPECT_EQ(by_phase["kokkos/baseline"].status, Status::Fail) << "a failure in any process fails the pool";
  EXPECT_FALSE(pooled.samples.count(results::row_key(by_phase["kokkos/baseline"])));
  // Speedups come from the pooled samples; phase 0 failed, so phase 1 is the lowest timed phase.
  const ResultRow& fused = by_phase["kokkos/fused_lior_spd"];
  EXPECT_NEAR(fused.speedup_vs_reference, 1.0 / 0.8, 0.03);
  EXPECT_NEAR(fused.speedup_vs_phase0, 1.5 / 0.8, 0.05);
  EXPECT_NEAR(fused.speedup_vs_prev, 1.5 / 0.8, 0.05);
  EXPECT_LT(fused.speedup_vs_reference_ci_low, fused.speedup_vs_reference);
  EXPECT_EQ(fused.run_id, pooled.rows.front().run_id) << "one run now";
  EXPECT_EQ(pooled.processes(), 4) << "a pooled row's repetitions come from every input's processes";
}

// One column of two rows is the same number, or missing in both. samples.csv keeps 9 significant
// digits, so what is derived again from it may differ in the last of them.
bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-7 * std::max(std::abs(a), std::abs(b));
}

// `run` and `merge --pool` derive their columns through one function: a pool of one run, whose
// samples are that run's, derives the run's numbers (and carries its catalog).
TEST(Merge, APoolOfOneRunDerivesTheColumnsTheRunDerived) {
  const fs::path run = fresh_temp_path("single"), pooled = fresh_temp_path("pool-of-one");
  auto result = run_phasebench("run --quick --size small --filter trainer2/lior_step --out " + run.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result = run_phasebench("merge --pool " + run.string() + " --out " + pooled.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<ResultRow> before = read_results_csv((run / "results.csv").string());
  const std::vector<ResultRow> after = read_results_csv((pooled / "results.csv").string());
  ASSERT_EQ(before.size(), after.size());
  int timed = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const ResultRow &a = before[i], &b = after[i];
    const std::string name = results::row_name(a);
    ASSERT_EQ(name, results::row_name(b));
    EXPECT_EQ(a.reps, b.reps) << name;
    for (auto column : {&ResultRow::median_ms, &ResultRow::min_ms, &ResultRow::max_ms, &ResultRow::ci_low_ms,
                        &ResultRow::ci_high_ms, &ResultRow::speedup_vs_prev, &ResultRow::speedup_vs_prev_ci_low,
                        &ResultRow::speedup_vs_prev_ci_high, &ResultRow::speedup_vs_phase0,
                        &ResultRow::speedup_vs_phase0_ci_high, &ResultRow::speedup_vs_reference,
                        &ResultRow::speedup_vs_reference_ci_low, &ResultRow::speedup_vs_reference_ci_high,
                        &ResultRow::gb_per_s, &ResultRow::gflop_per_s, &ResultRow::roofline_pct,
                        &ResultRow::claimed_min, &ResultRow::claimed_max})
      EXPECT_TRUE(same_value(a.*column, b.*column)) << name << ": " << a.*column << " vs " << b.*column;
    timed += a.status == Status::Ok;
  }
  EXPECT_GT(timed, 0);
  EXPECT_EQ(read_json(pooled / "catalog.json"), read_json(run / "catalog.json"));
}

TEST(Merge, CatalogsThatDifferAreRefusedUnlessAllowMixed) {
  CraftedRun first = crafted("aaaa", testing::ladder_rows()), second = first;
  first.catalog = testing::crafted_catalog(1.2);
  second.catalog = testing::crafted_catalog(1.9);  // a claim changed between the runs
  second.noise_seed = 2;
  const std::string inputs = write_run("c1", first).string() + " " + write_run("c2", second).string();
  const fs::path out = fresh_temp_path("catalogs");
  auto result = run_phasebench("merge --pool " + inputs + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("trainer2/lior_step: phase 1 (batched_metrics) differs"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("--allow-mixed"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out));

  result = run_phasebench("merge --pool " + inputs + " --allow-mixed --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("catalogs differ"), std::string::npos) << result.output;
  const results::RunData merged = results::load_run(out.string());
  EXPECT_DOUBLE_EQ(merged.catalog.find("trainer2", "lior_step")->phase(1)->claimed_min, 1.2) << "the first input's";
}

TEST(Merge, RunsWithoutACatalogStillMergeAndSayWhatIsUnknown) {
  CraftedRun old = crafted("aaaa", {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}});
  CraftedRun fresh = crafted("aaaa", {{"onednn", 0, "baseline"}});
  fresh.catalog = testing::crafted_catalog();
  const fs::path out = fresh_temp_path("half-cataloged");
  const auto result = run_phasebench("merge " + write_run("old", old).string() + " " + write_run("new", fresh).string() +
                                     " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("1 of the inputs have no catalog.json"), std::string::npos) << result.output;
  EXPECT_TRUE(fs::exists(out / "catalog.json"));
}

// ---- baselines -----------------------------------------------------------------------------------

TEST(Baseline, RecordFilesARunUnderItsFingerprintAndRefreshesOnlyWhenAsked) {
  const fs::path root = fresh_temp_path("baselines");
  CraftedRun run = crafted("cafe0123", testing::ladder_rows());
  const fs::path first = write_run("first", run);
  auto result = run_phasebench("baseline record " + first.string() + " --root " + root.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const fs::path baseline = root / "cafe0123";
  for (const char* file : {"results.csv", "samples.csv", "machine.json"}) EXPECT_TRUE(fs::exists(baseline / file)) << file;
  EXPECT_EQ(row_keys(baseline), row_keys(first));
  EXPECT_EQ(results::load_run(baseline.string()).sample_rows.size(), 4u * 12);

  run.run_id = "20261122T000000Z-second";
  const fs::path second = write_run("second", run);
  result = run_phasebench("baseline record " + second.string() + " --root " + root.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--refresh"), std::string::npos) << result.output;

  result = run_phasebench("baseline record " + second.string() + " --root " + root.string() + " --refresh");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_json(baseline / "machine.json")["run_id"], "20261122T000000Z-second");
  EXPECT_EQ(std::distance(fs::directory_iterator(root), fs::directory_iterator()), 1) << "old copy removed";
}

TEST(Baseline, FailingRunIsNotABaseline) {
  CraftedRun run = crafted("cafe0123", testing::ladder_rows());
  run.rows[2].status = Status::Mistrusted;
  const fs::path root = fresh_temp_path("baselines");
  const auto result = run_phasebench("baseline record " + write_run("failing", run).string() + " --root " + root.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("MISTRUSTED"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(root / "cafe0123"));
}

TEST(Baseline, FingerprintOfARunAndOfThisMachine) {
  auto result = run_phasebench("baseline fingerprint " + write_run("fp", crafted("cafe0456", testing::ladder_rows())).string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, "cafe0456\n");
  result = run_phasebench("baseline fingerprint");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.size(), 13u) << "a 12-digit hash and a newline: " << result.output;
}

// ---- slowdown injection (trust measurement, docs/regression-gate.md) ------------------------------

TEST(SlowdownInjection, AppliesToMatchingRowsOnly) {
  const std::string row = "trainer2/lior_step/small/kokkos/cpu/3_fused_lior_spd";
  EXPECT_DOUBLE_EQ(detail::slowdown_injected_into(row, "kokkos/cpu/3_:0.25"), 0.25);
  EXPECT_DOUBLE_EQ(detail::slowdown_injected_into(row, "onednn:0.25"), 0.0);
  EXPECT_DOUBLE_EQ(detail::slowdown_injected_into(row, "(kokkos|onednn):1"), 1.0);
  EXPECT_DOUBLE_EQ(detail::slowdown_injected_into(row, nullptr), 0.0);
  EXPECT_DOUBLE_EQ(detail::slowdown_injected_into(row, ""), 0.0);
}

// The wrapper the harness installs only when PHASEBENCH_INJECT_SLOWDOWN selects a case.
struct CountingVariant : Variant {
  int* runs;
  explicit CountingVariant(int* counter) : runs(counter) {}
  void setup(const ArrayMap&) override {}
  void poison_outputs() override {}
  void run() override { ++*runs; }
  ArrayMap outputs() override { return {}; }
};

struct SyncCountingBackend : Backend {
  int synchronized = 0;
  std::string name() const override { return "fake"; }
  std::vector<DeviceInfo> devices() const override { return {{"cpu"}}; }
  nlohmann::json metadata() const override { return nlohmann::json::object(); }
  void synchronize(const std::string&) override { ++synchronized; }
};

TEST(SlowdownInjection, WrapsOnlyTheVariantsOfSelectedRows) {
  int runs = 0;
  SyncCountingBackend backend;
  const std::string row = "trainer2/lior_step/small/fake/cpu/1_batched_metrics";
  ::unsetenv("PHASEBENCH_INJECT_SLOWDOWN");
  auto variant = std::make_unique<CountingVariant>(&runs);
  const Variant* original = variant.get();
  EXPECT_EQ(detail::with_injected_slowdown(std::move(variant), backend, "cpu", row).get(), original) << "unset: untouched";
  ::setenv("PHASEBENCH_INJECT_SLOWDOWN", "onednn:0.5", 1);
  variant = std::make_unique<CountingVariant>(&runs);
  original = variant.get();
  EXPECT_EQ(detail::with_injected_slowdown(std::move(variant), backend, "cpu", row).get(), original) << "not selected";
  ::setenv("PHASEBENCH_INJECT_SLOWDOWN", "fake/cpu/1_:0.5", 1);
  const auto wrapped = detail::with_injected_slowdown(std::make_unique<CountingVariant>(&runs), backend, "cpu", row);
  ::unsetenv("PHASEBENCH_INJECT_SLOWDOWN");
  ASSERT_NE(dynamic_cast<const CountingVariant*>(wrapped.get()), wrapped.get()) << "selected: wrapped";
  wrapped->run();
  wrapped->run();
  EXPECT_EQ(runs, 2) << "the real run() runs once per run()";
  EXPECT_EQ(backend.synchronized, 2) << "the injected work is measured against the finished device work";
}

TEST(SlowdownInjection, MalformedValueIsAnInputError) {
  for (const char* spec : {"kokkos", "kokkos:", "kokkos:fast", "kokkos:-0.1", "([:0.1"})
    EXPECT_THROW(detail::slowdown_injected_into("a/b", spec), InputError) << spec;
}

}  // namespace
}  // namespace pb
