// `phasebench check DUMP_DIR OUTPUTS_DIR` end to end: outputs computed outside phasebench (by the
// numpy checks of tests/python, as a user's own code would) pass; a perturbed output fails with
// exit 1 naming it; every kind of bad input is exit 2 naming what is wrong.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "phasebench/workload.hpp"
#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_command;
using testing::run_phasebench;

fs::path dump_of(const std::string& workload, const std::string& size = "small") {
  const fs::path dir = fresh_temp_path("check-dump");
  const auto dumped = run_phasebench("dump --workload " + workload + " --size " + size + " --out " + dir.string());
  EXPECT_EQ(dumped.exit_code, 0) << dumped.output;
  return dir;
}

testing::ProcessResult check(const fs::path& dump, const fs::path& outputs) {
  return run_phasebench("check " + dump.string() + " " + outputs.string());
}

// Runs a numpy one-liner (no double quotes in it) with `path` bound to a Path.
void python_on(const fs::path& path, const std::string& code) {
  const auto result = run_command("/usr/bin/python3 -c \"import numpy as np, pathlib; path = pathlib.Path('" +
                                  path.string() + "'); " + code + "\" 2>&1");
  ASSERT_EQ(result.exit_code, 0) << code << ": " << result.output;
}

nlohmann::json manifest_of(const fs::path& dump) {
  std::ifstream in(dump / "manifest.json");
  return nlohmann::json::parse(in);
}

// ---- outputs computed by the numpy checks ----------------------------------------------------------

struct NumpyCheck {
  const char* workload;
  const char* script;
};

std::string case_name(const ::testing::TestParamInfo<NumpyCheck>& info) {
  std::string name = info.param.workload;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class CheckNumpyOutputs : public ::testing::TestWithParam<NumpyCheck> {};

// The loop docs/check-your-code.md describes, with tests/python's numpy implementation as "the
// user's code": dump, compute and np.save the outputs, check.
TEST_P(CheckNumpyOutputs, Pass) {
  const fs::path dump = dump_of(GetParam().workload);
  const fs::path outputs = fresh_temp_path("check-outputs");
  const auto written = run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/" + GetParam().script +
                                   " " + dump.string() + " --write-outputs " + outputs.string() + " 2>&1");
  ASSERT_EQ(written.exit_code, 0) << written.output;
  const auto checked = check(dump, outputs);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  const size_t count = manifest_of(dump)["tolerances"].size();
  EXPECT_NE(checked.output.find(std::to_string(count) + " of " + std::to_string(count) + " outputs pass"), std::string::npos)
      << checked.output;
  fs::remove_all(dump);
  fs::remove_all(outputs);
}

INSTANTIATE_TEST_SUITE_P(
    EveryNumpyCheck, CheckNumpyOutputs,
    ::testing::Values(NumpyCheck{"trainer2/lior_step", "check_lior_step_dump.py"},
                      NumpyCheck{"trainer2/window", "check_trainer2_dump.py"},
                      NumpyCheck{"trainer2/train_step", "check_trainer2_dump.py"},
                      NumpyCheck{"spinlock/cnn_rollout_autoregressive", "check_cnn_rollout_dump.py"},
                      NumpyCheck{"spinlock/cnn_rollout_residual", "check_cnn_rollout_dump.py"},
                      NumpyCheck{"spinlock/cnn_rollout_convex", "check_cnn_rollout_dump.py"},
                      NumpyCheck{"energy_flow/aggregate", "check_aggregate_dump.py"},
                      NumpyCheck{"adaptive/dynamics_step", "check_dynamics_step_dump.py"},
                      NumpyCheck{"geometry/bayesian", "check_bayesian_dump.py"},
                      NumpyCheck{"geometry/christoffel", "check_christoffel_dump.py"},
                      NumpyCheck{"geometry/complex_metric", "check_complex_metric_dump.py"},
                      NumpyCheck{"geometry/hamiltonian", "check_hamiltonian_dump.py"},
                      NumpyCheck{"geometry/lior_memory_conv", "check_lior_memory_conv_dump.py"},
                      NumpyCheck{"geometry/lior_optimizer_step", "check_lior_optimizer_step_dump.py"},
                      NumpyCheck{"geometry/mamba_conjugate", "check_mamba_conjugate_dump.py"},
                      NumpyCheck{"geometry/mamba_scan", "check_mamba_scan_dump.py"}),
    case_name);

// ---- the PyTorch examples of docs/check-your-code.md -------------------------------------------------

// Each example of the page, pasted together as the page says, computes its workload's outputs with
// PyTorch from a fresh dump, and `check` passes them (tests/python/run_doc_examples.py). Where this
// Python has no torch (python3-torch is among ci/install-deps.sh's packages) there is nothing to run.
TEST(CheckYourCodePage, EveryPyTorchExamplePassesCheck) {
  if (run_command("/usr/bin/python3 -c 'import torch, numpy' 2>&1").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no torch (Debian: python3-torch)";
  const fs::path workdir = fresh_temp_path("doc-examples");
  const auto ran = run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/run_doc_examples.py " +
                               PHASEBENCH_TESTS_DIR + "/../docs/check-your-code.md " + PHASEBENCH_EXECUTABLE + " " +
                               workdir.string() + " 2>&1");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("5 examples of docs/check-your-code.md pass"), std::string::npos) << ran.output;
  fs::remove_all(workdir);
}

// ---- every workload: its own reference, as outputs, passes -------------------------------------------

// The fp64 reference copied as the outputs (cast to float32, as a PyTorch model computes them):
// every workload's dump is one `check` reads and passes, whether or not a numpy check exists for it.
TEST(CheckEveryWorkload, ItsReferenceInFloat32Passes) {
  for (const auto& workload : registered_workloads()) {
    const fs::path dump = dump_of(workload->full_name());
    const fs::path outputs = fresh_temp_path("check-reference");
    fs::create_directories(outputs);
    const nlohmann::json manifest = manifest_of(dump);
    for (const nlohmann::json& output : manifest["checks"]["outputs"]) {
      const std::string name = output["name"], reference = output.value("reference", name);
      python_on(outputs, "np.save(path / '" + name + ".npy', np.load('" + (dump / "reference" / (reference + ".npy")).string() +
                             "').astype(np.float32))");
    }
    const auto checked = check(dump, outputs);
    EXPECT_EQ(checked.exit_code, 0) << workload->full_name() << ": " << checked.output;
    fs::remove_all(dump);
    fs::remove_all(outputs);
  }
}

// ---- failures and bad input ------------------------------------------------------------------------

// A lior_step dump with correct outputs (its fp64 reference), shared by the tests below; each test
// changes a copy.
class CheckLiorStep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dump_ = new fs::path(dump_of("trainer2/lior_step"));
    good_outputs_ = new fs::path(fresh_temp_path("check-good"));
    fs::create_directories(*good_outputs_);
    for (const char* name : {"s", "dlior", "mean_dlior", "mean_R", "mean_s"})
      fs::copy_file(*dump_ / "reference" / (std::string(name) + ".npy"), *good_outputs_ / (std::string(name) + ".npy"));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dump_);
    fs::remove_all(*good_outputs_);
  }
  void SetUp() override {
    outputs_ = fresh_temp_path("check-outputs");
    fs::copy(*good_outputs_, outputs_);
  }
  void TearDown() override { fs::remove_all(outputs_); }

  static fs::path* dump_;
  static fs::path* good_outputs_;
  fs::path outputs_;
};
fs::path* CheckLiorStep::dump_ = nullptr;
fs::path* CheckLiorStep::good_outputs_ = nullptr;

void expect_refused(const testing::ProcessResult& result, const std::string& message) {
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(message), std::string::npos) << "expected \"" << message << "\" in: " << result.output;
}

TEST_F(CheckLiorStep, CorrectOutputsPassWithALineEach) {
  const auto checked = check(*dump_, outputs_);
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  for (const char* line : {"OK         s           rel_l2_err 0 <= tolerance 1e-05, max_abs_err 0\n",
                           "OK         dlior ", "OK         mean_s ", "5 of 5 outputs pass"})
    EXPECT_NE(checked.output.find(line), std::string::npos) << line << " in: " << checked.output;
}

TEST_F(CheckLiorStep, AnOutputOffBy1e3RelativeFails) {
  python_on(outputs_ / "dlior.npy", "np.save(path, np.load(path) * (1 + 1e-3))");
  const auto checked = check(*dump_, outputs_);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("FAIL       dlior       rel_l2_err 0.001 > tolerance 1e-05"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("4 of 5 outputs pass; failed: dlior"), std::string::npos) << checked.output;
}

TEST_F(CheckLiorStep, TheLineNamesTheWorstElement) {
  python_on(outputs_ / "dlior.npy", "x = np.load(path); x[7] = x[7] * 1.01 + 1; np.save(path, x)");
  const auto checked = check(*dump_, outputs_);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find(" at [7] ("), std::string::npos) << checked.output;
}

TEST_F(CheckLiorStep, ANaNFailsBeforeTheMetric) {
  python_on(outputs_ / "s.npy", "x = np.load(path); x.flat[3] = np.nan; np.save(path, x)");
  const auto checked = check(*dump_, outputs_);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("FAIL       s: output s has 1 NaN and 0 Inf"), std::string::npos) << checked.output;
}

TEST_F(CheckLiorStep, AMostlyZeroReferenceIsMistrusted) {
  const fs::path dump = fresh_temp_path("check-zero-dump");
  fs::copy(*dump_, dump, fs::copy_options::recursive);
  python_on(dump / "reference" / "s.npy", "x = np.load(path); x.flat[: x.size * 6 // 10] = 0; np.save(path, x)");
  const auto checked = check(dump, outputs_);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("MISTRUSTED s: reference output s is "), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find("% exact zeros (> 30%)"), std::string::npos) << checked.output;
  fs::remove_all(dump);
}

TEST_F(CheckLiorStep, FloatOutputsOfEveryWidthAreRead) {
  python_on(outputs_ / "dlior.npy", "np.save(path, np.load(path).astype(np.float32))");
  python_on(outputs_ / "s.npy", "np.save(path, np.load(path).astype(np.float16))");
  const auto checked = check(*dump_, outputs_);
  // float32 rounding (~3e-8) is well within dlior's 1e-5; float16 keeps 11 significant bits, and
  // its rounding (~1e-4) is not within s's.
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("OK         dlior "), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find("FAIL       s "), std::string::npos) << checked.output;
}

TEST_F(CheckLiorStep, BadInputIsExit2NamingWhatIsWrong) {
  fs::remove(outputs_ / "dlior.npy");
  expect_refused(check(*dump_, outputs_), "output dlior missing");
  fs::copy_file(outputs_ / "mean_s.npy", outputs_ / "dlior.npy");
  expect_refused(check(*dump_, outputs_), "dlior.npy has shape [], the reference output dlior has [48]");
  fs::copy_file(*good_outputs_ / "dlior.npy", outputs_ / "dlior.npy", fs::copy_options::overwrite_existing);
  fs::copy_file(outputs_ / "s.npy", outputs_ / "S.npy");
  expect_refused(check(*dump_, outputs_), "extra output");
  fs::remove(outputs_ / "S.npy");
  python_on(outputs_ / "s.npy", "np.save(path, np.load(path).astype(np.int64))");
  expect_refused(check(*dump_, outputs_), "s.npy has dtype int64");
  python_on(outputs_ / "s.npy", "path.write_bytes(path.read_bytes()[:-3])");
  expect_refused(check(*dump_, outputs_), "s.npy: truncated .npy data");
  python_on(outputs_ / "s.npy", "path.write_text('s = 1.0')");
  expect_refused(check(*dump_, outputs_), "s.npy: not a .npy file");
  fs::copy_file(*good_outputs_ / "s.npy", outputs_ / "s.npy", fs::copy_options::overwrite_existing);
  expect_refused(check(outputs_, outputs_), "is not a dump: it has no manifest.json");
  expect_refused(check(*dump_, outputs_ / "nowhere"), "is not a directory");
  expect_refused(run_phasebench("check " + dump_->string()), "OUTPUTS_DIR is required");
  EXPECT_EQ(check(*dump_, outputs_).exit_code, 0);  // all restored
}

TEST_F(CheckLiorStep, ADumpWhoseChecksDifferFromThisPhasebenchsIsExit2) {
  const fs::path dump = fresh_temp_path("check-old-dump");
  fs::copy(*dump_, dump, fs::copy_options::recursive);
  const nlohmann::json written = manifest_of(dump);
  nlohmann::json manifest = written;
  for (nlohmann::json& output : manifest["checks"]["outputs"])
    if (output["name"] == "dlior") output["tolerance"] = 1e-3;
  manifest["tolerances"]["dlior"]["rel_l2"] = 1e-3;
  manifest["phasebench_version"] = "0.0.9";
  std::ofstream(dump / "manifest.json") << manifest.dump(2);
  expect_refused(check(dump, outputs_), "output dlior: tolerance 0.001 in the dump, 1e-05 here");
  manifest = written;
  manifest["tolerances"]["dlior"]["rel_l2"] = 1e-3;  // the summary edited, the checks not
  std::ofstream(dump / "manifest.json") << manifest.dump(2);
  expect_refused(check(dump, outputs_), "\"tolerances\" disagrees with \"checks\"");
  manifest = written;
  manifest["checks"]["outputs"].erase(1);
  std::ofstream(dump / "manifest.json") << manifest.dump(2);
  expect_refused(check(dump, outputs_), " is checked here, and not in the dump");
  manifest.erase("checks");
  std::ofstream(dump / "manifest.json") << manifest.dump(2);
  expect_refused(check(dump, outputs_), "no \"checks\": the dump was written by an older phasebench");
  std::ofstream(dump / "manifest.json") << "{\"workload\": \"trainer2/lior_step\"";
  expect_refused(check(dump, outputs_), "manifest.json is not JSON");
  fs::remove_all(dump);
}

// A rollout's per-step budgets come from the manifest: one early step off by 1e-3 fails there, at
// its own budget (a few 1e-5), not at the whole trajectory's.
TEST(CheckRollout, AStepOverItsBudgetFailsNamingTheStep) {
  const fs::path dump = dump_of("spinlock/cnn_rollout_convex");
  const nlohmann::json checks = manifest_of(dump)["checks"]["outputs"].at(0);
  ASSERT_TRUE(checks.value("per_step", false)) << checks;
  ASSERT_GT(checks["step_budget"].size(), 2u);
  const fs::path outputs = fresh_temp_path("check-rollout");
  fs::create_directories(outputs);
  python_on(outputs, "x = np.load('" + (dump / "reference" / "trajectory.npy").string() +
                         "'); x[1] *= 1 + 1e-3; np.save(path / 'trajectory.npy', x)");
  const auto checked = check(dump, outputs);
  EXPECT_EQ(checked.exit_code, 1) << checked.output;
  EXPECT_NE(checked.output.find("step 1 rel_l2_err 0.001 > budget"), std::string::npos) << checked.output;
  fs::remove_all(dump);
  fs::remove_all(outputs);
}

}  // namespace
}  // namespace pb
