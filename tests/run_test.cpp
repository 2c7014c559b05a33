// End to end through the executable: `run --quick` writes the four files of the contract with
// the numbers users read; a crashing variant does not take the others down; `dump` round-trips
// through numpy and an independent implementation.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

#include "results/catalog.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// One quick run shared by the tests below (a run takes seconds; the checks are many).
class QuickRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = new fs::path(fresh_temp_path("quick-run"));
    result_ = new testing::ProcessResult(
        run_phasebench("run --quick --size small --filter trainer2/lior_step --out " + out_->string()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*out_);
    delete out_;
    delete result_;
  }
  static std::vector<ResultRow> rows() { return read_results_csv((*out_ / "results.csv").string()); }
  static fs::path* out_;
  static testing::ProcessResult* result_;
};
fs::path* QuickRun::out_ = nullptr;
testing::ProcessResult* QuickRun::result_ = nullptr;

TEST_F(QuickRun, SucceedsAndWritesTheFiveFiles) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  for (const char* file : {"results.csv", "samples.csv", "machine.json", "benchmark.json", "catalog.json"})
    EXPECT_TRUE(fs::exists(*out_ / file)) << file;
  EXPECT_NE(result_->output.find(out_->string()), std::string::npos) << "prints where results are";
  for (const auto& entry : fs::directory_iterator(out_->parent_path()))
    EXPECT_EQ(entry.path().string().find(out_->string() + ".partial"), std::string::npos)
        << "staging directory left behind: " << entry.path();
}

TEST_F(QuickRun, EveryRowIsOkOrSaysWhyItCouldNotRun) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  for (const ResultRow& row : rows()) {
    const std::string name = row.backend + "/" + row.device + "/" + row.phase;
    if (row.status == Status::Skipped || row.status == Status::Unsupported) {
      EXPECT_FALSE(row.reason.empty()) << name;
      continue;
    }
    EXPECT_EQ(row.status, Status::Ok) << name << ": " << row.reason;
    EXPECT_EQ(row.reps, 3) << name;
    EXPECT_GT(row.median_ms, 0) << name;
    EXPECT_LE(row.min_ms, row.median_ms) << name;
    EXPECT_GE(row.max_ms, row.median_ms) << name;
    EXPECT_LE(row.ci_low_ms, row.ci_high_ms) << name;
    EXPECT_LE(row.rel_l2_err, row.tolerance) << name;
    EXPECT_FALSE(std::isnan(row.speedup_vs_reference)) << name;
    EXPECT_LE(row.speedup_vs_reference_ci_low, row.speedup_vs_reference_ci_high) << name;
    EXPECT_FALSE(std::isnan(row.speedup_vs_phase0)) << name;
    EXPECT_FALSE(std::isnan(row.host_syncs_per_iter)) << name;
    EXPECT_FALSE(std::isnan(row.ops_per_iter)) << name;
    EXPECT_GT(row.gb_per_s, 0) << name;
    EXPECT_GE(row.threads, 1) << name;
    if (row.backend == "reference") EXPECT_EQ(row.threads, 1) << name;
    if (row.backend == "torch" || row.backend == "onednn")  // --threads defaults to all cores
      EXPECT_EQ(row.threads, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) << name;
  }
}

// catalog.json is the catalog the run was measured with: the registry's definition of every
// workload it measured (at its size), which the rows' claims were derived from.
TEST_F(QuickRun, CatalogJsonHoldsTheCatalogTheRunWasMeasuredWith) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  const nlohmann::json saved = read_json(*out_ / "catalog.json");
  const auto workload = find_workload("trainer2/lior_step");
  ASSERT_TRUE(workload);
  // Compared as text: GoogleTest cannot print a JSON value.
  EXPECT_EQ(saved.dump(1), nlohmann::json::parse(catalog::to_json(catalog::build({workload}, SizeClass::Small)).dump()).dump(1));
  ASSERT_EQ(saved.at("workloads").size(), 1u) << "only what was measured";
  const nlohmann::json& entry = saved.at("workloads").at(0);
  EXPECT_EQ(entry.at("workload").get<std::string>(), "trainer2/lior_step");
  const std::vector<PhaseInfo> phases = workload->phases();
  ASSERT_EQ(entry.at("phases").size(), phases.size());
  for (size_t i = 0; i < phases.size(); ++i) {
    const PhaseInfo& phase = phases[i];
    const nlohmann::json& written = entry.at("phases").at(i);
    EXPECT_EQ(written.at("name").get<std::string>(), phase.name);
    EXPECT_EQ(written.at("claimed_min").is_null(), std::isnan(phase.claimed_min)) << phase.name;
    for (const char* key : {"index", "description", "exact", "claimed_max", "needs", "switches_off"})
      EXPECT_TRUE(written.contains(key)) << phase.name << " lacks " << key;
  }
  const nlohmann::json& small = entry.at("sizes").at("small");
  EXPECT_EQ(small.at("shape").get<std::string>(), workload->shape(SizeClass::Small));
  EXPECT_DOUBLE_EQ(small.at("bytes_per_iter").get<double>(), workload->work(SizeClass::Small).bytes);
  const nlohmann::json& first_output = small.at("checks").at(0).at("outputs").at(0);
  EXPECT_EQ(first_output.at("reason").get<std::string>(), workload->outputs().front().tolerance_reason);
  EXPECT_TRUE(entry.at("cumulative_claim").contains("claimed_min"));
  const catalog::Catalog catalog = catalog::from_json(saved, "catalog.json");
  for (const ResultRow& row : rows()) {
    if (row.backend == kReferenceBackend) continue;
    const PhaseInfo* phase = catalog.find(row.suite, row.workload)->phase(row.phase_index);
    ASSERT_NE(phase, nullptr) << row.phase;
    EXPECT_EQ(std::isnan(row.claimed_min), std::isnan(phase->claimed_min)) << row.phase;
    if (!std::isnan(phase->claimed_min)) EXPECT_DOUBLE_EQ(row.claimed_min, phase->claimed_min) << row.phase;
  }
}

// The property the seed is about: three host reads per step before, one after.
TEST_F(QuickRun, HostSyncsFallFromThreeToOne) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  if (!testing::backend_built("kokkos") && !testing::backend_built("torch") && !testing::backend_built("onednn"))
    GTEST_SKIP() << "no optimized CPU backend is built";
  int checked = 0;
  for (const ResultRow& row : rows()) {
    if (row.status != Status::Ok || row.backend == "reference") continue;
    const std::string name = row.backend + "/" + row.device + "/" + row.phase;
    if (row.phase_index == 0) EXPECT_GE(row.host_syncs_per_iter, 3) << name;
    else EXPECT_EQ(row.host_syncs_per_iter, 1) << name;
    EXPECT_GT(row.ops_per_iter, 0) << name << ": dispatched operations must be counted";
    if (row.phase_index > 0) EXPECT_FALSE(std::isnan(row.speedup_vs_prev)) << name;
    // Phases 1..7 are the seed's, with its claims; phases after 7 go beyond it and claim nothing.
    if (row.phase_index > 0 && row.phase_index <= 7)
      EXPECT_FALSE(std::isnan(row.claimed_min)) << name << ": the seed's claim belongs in the row";
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no optimized backend ran";
}

TEST_F(QuickRun, SamplesAndMetadataMatchTheRows) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  size_t expected_samples = 0;
  for (const ResultRow& row : rows()) expected_samples += static_cast<size_t>(row.reps);
  const std::vector<SampleRow> samples = read_samples_csv((*out_ / "samples.csv").string());
  EXPECT_EQ(samples.size(), expected_samples);
  double best_probe = std::numeric_limits<double>::infinity();
  for (const SampleRow& sample : samples) {
    EXPECT_GT(sample.cpu_probe_us, 0) << "every repetition probes the CPUs before it: " << sample.phase;
    best_probe = std::min(best_probe, sample.cpu_probe_us);
  }
  const nlohmann::json machine = read_json(*out_ / "machine.json");
  const nlohmann::json& probe = machine["machine_state"]["cpu_probe"];
  EXPECT_DOUBLE_EQ(probe["best_us"].get<double>(), best_probe) << probe;
  EXPECT_GE(probe["median_us"].get<double>(), best_probe) << probe;
  EXPECT_GE(probe["slower_share"].get<double>(), 0) << probe;
  EXPECT_LE(probe["slower_share"].get<double>(), 1) << probe;
  EXPECT_EQ(machine["fingerprint"].get<std::string>().size(), 12u);
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");  // recorded beside the timings
  EXPECT_EQ(machine["environment"]["OMP_WAIT_POLICY"], wait_policy ? wait_policy : "");
  EXPECT_TRUE(machine["backends"].contains("reference"));
  EXPECT_FALSE(machine["cpu"]["model"].get<std::string>().empty());
  const nlohmann::json benchmark = read_json(*out_ / "benchmark.json");
  EXPECT_EQ(benchmark["benchmarks"].size(), expected_samples);  // one per timed repetition
}

TEST(Isolation, ACrashingVariantIsAnErrorRowAndTheOthersStillRun) {
  const fs::path out = fresh_temp_path("crash-run");
  const auto result = run_phasebench("run --quick --size small --filter trainer2/lior_step --out " + out.string(),
                                     testing::deliberate_crash_environment() + " PHASEBENCH_INJECT_CRASH=reference/cpu/0_serial_fp32");
  EXPECT_EQ(result.exit_code, 1) << result.output;  // an ERROR row fails the run
  const auto rows = read_results_csv((out / "results.csv").string());
  int others_ok = 0;
  bool crashed_row_seen = false;
  for (const ResultRow& row : rows) {
    if (row.backend == "reference") {
      crashed_row_seen = true;
      EXPECT_EQ(row.status, Status::Error);
      EXPECT_NE(row.reason.find("crashed"), std::string::npos) << row.reason;
      EXPECT_NE(row.reason.find("Segmentation fault"), std::string::npos) << row.reason;
    } else if (row.status == Status::Ok) {
      ++others_ok;
      EXPECT_FALSE(std::isnan(row.median_ms));
    }
  }
  EXPECT_TRUE(crashed_row_seen);
  if (rows.size() > 1) EXPECT_GT(others_ok, 0) << result.output;
  fs::remove_all(out);
}

// Issue 11: a ladder whose phase 0 was filtered out has no speedup over phase 0 to hold against
// the seed's whole-ladder claim, and the claims view shows none.
TEST(Run, TheClaimsViewComparesNoWholeLadderWithoutPhaseZero) {
  if (!testing::backend_built("kokkos") && !testing::backend_built("torch") && !testing::backend_built("onednn"))
    GTEST_SKIP() << "no optimized CPU backend is built";
  const fs::path out = fresh_temp_path("no-phase0");
  const auto result = run_phasebench(
      "run --quick --size small --filter 'trainer2/lior_step/[a-z]+/(batched_metrics|fused_lior_spd)' --out " +
      out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("claims vs measured"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("whole ladder ("), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("no whole-ladder comparison"), std::string::npos) << result.output;
  fs::remove_all(out);
}

// A run where nothing is timed (here a shard left without cases: one case split in two) still
// writes a benchmark.json that parses: Google Benchmark itself writes nothing then.
TEST(Run, NothingToTimeStillWritesValidBenchmarkJson) {
  const fs::path out = fresh_temp_path("nothing-timed");
  const auto result = run_phasebench("run --quick --size small --filter 'trainer2/lior_step/reference/' --shard 2/2 --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(read_results_csv((out / "results.csv").string()).empty());
  const nlohmann::json json = read_json(out / "benchmark.json");
  EXPECT_TRUE(json["benchmarks"].empty());
  fs::remove_all(out);
}

// Issue 26: on a GPU node the serial references take seconds and checking eats most of a budget;
// three repetitions of every case would overrun it. With --time-budget 1 not even that fits (the
// selection has more than six timed cases, each repetition at least 50 ms): every case gets fewer
// than three, the run says the budget is too small, and each such row has a median, no interval,
// and a note saying why.
TEST(Run, ABudgetTooSmallForThreeRepetitionsEachGivesFewerAndTheRowsSaySo) {
  const fs::path out = fresh_temp_path("tight-budget");
  const auto result = run_phasebench("run --size small --filter trainer2/lior_step --time-budget 1 --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("too little for one repetition of each case"), std::string::npos) << result.output;
  int few = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok) continue;
    EXPECT_GE(row.reps, 1) << results::row_name(row);
    EXPECT_FALSE(std::isnan(row.median_ms)) << results::row_name(row);
    if (row.reps >= 3) continue;
    ++few;
    EXPECT_TRUE(std::isnan(row.ci_low_ms) && std::isnan(row.ci_high_ms)) << results::row_name(row);
    EXPECT_NE(row.reason.find("to keep the time budget: no confidence interval"), std::string::npos)
        << results::row_name(row) << ": " << row.reason;
  }
  EXPECT_GT(few, 6) << result.output;
  fs::remove_all(out);
}

// Runs tests/python/<script> on a dump directory (stdout and stderr together).
testing::ProcessResult run_dump_check(const std::string& script, const fs::path& dump) {
  return testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/" + script +
                              " " + dump.string() + " 2>&1");
}

TEST(Dump, NumpyLoadsItAndAnIndependentImplementationAgrees) {
  const fs::path out = fresh_temp_path("dump");
  const auto dumped = run_phasebench("dump --workload trainer2/lior_step --size small --seed 9 --out " + out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const nlohmann::json manifest = read_json(out / "manifest.json");
  EXPECT_EQ(manifest["workload"], "trainer2/lior_step");
  EXPECT_EQ(manifest["seed"], 9);
  EXPECT_EQ(manifest["arrays"].size(), 8u);  // v, R, g + five outputs
  const auto checked = run_dump_check("check_lior_step_dump.py", out);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

// Issue 3: the window outputs (lior, R, spd, act, vbar, path, progress, F, P) and the train_step outputs
// (both windows, g, theta, memory bank, pointer) agree with an independent numpy implementation
// of the original code (tests/python/check_trainer2_dump.py) fed from the dump.
TEST(Dump, Trainer2WindowAndTrainStepAgreeWithNumpy) {
  const struct {
    const char* workload;
    size_t arrays;
  } cases[] = {{"trainer2/window", 7u + 9u},        // O, bank x2, F0, g, theta, steps + 9 outputs
               {"trainer2/train_step", 9u + 23u}};  // + target, bank_pointer; 2x9 + g, theta, bank x2, pointer
  for (const auto& c : cases) {
    const fs::path out = fresh_temp_path("dump-trainer2");
    const auto dumped = run_phasebench(std::string("dump --workload ") + c.workload + " --size small --seed 4 --out " + out.string());
    ASSERT_EQ(dumped.exit_code, 0) << c.workload << ": " << dumped.output;
    const nlohmann::json manifest = read_json(out / "manifest.json");
    EXPECT_EQ(manifest["workload"], c.workload);
    EXPECT_EQ(manifest["arrays"].size(), c.arrays) << c.workload;
    const auto checked = run_dump_check("check_trainer2_dump.py", out);
    EXPECT_EQ(checked.exit_code, 0) << c.workload << ": " << checked.output;
    EXPECT_NE(checked.output.find("agree"), std::string::npos) << c.workload << ": " << checked.output;
    fs::remove_all(out);
  }
}

}  // namespace
}  // namespace pb
