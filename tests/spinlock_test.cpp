// The spinlock suite's definition: its fp64 reference agrees with an independent numpy
// implementation of the original operator, the error growth its budgets assume is the growth the
// reference shows, approximate phases are checked against both models, and a run reports the
// error of every rollout step.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>
#include <stdexcept>

#include "phasebench/results.hpp"
#include "phasebench/rng.hpp"
#include "process.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;
using testing::fresh_temp_path;
using testing::run_phasebench;

const ref::Policy kPolicies[] = {ref::Policy::Autoregressive, ref::Policy::Residual, ref::Policy::Convex};

std::string workload_name(ref::Policy policy) { return "spinlock/cnn_rollout_" + sp::policy_name(policy); }

// The catalog index of the phase named `name` (the checks are declared per index).
int index_of(const Workload& workload, const std::string& name) {
  for (const PhaseInfo& phase : workload.phases())
    if (phase.name == name) return phase.index;
  throw std::invalid_argument("no phase " + name);
}

TEST(SpinlockDump, AnIndependentNumpyOperatorAgreesForEveryPolicy) {
  for (ref::Policy policy : kPolicies) {
    const fs::path out = fresh_temp_path("spinlock-dump");
    const auto dumped = run_phasebench("dump --workload " + workload_name(policy) + " --size small --seed 5 --out " + out.string());
    ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
    const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR +
                                              "/python/check_cnn_rollout_dump.py " + out.string() + " 2>&1");
    EXPECT_EQ(checked.exit_code, 0) << sp::policy_name(policy) << ": " << checked.output;
    EXPECT_NE(checked.output.find("agree"), std::string::npos) << sp::policy_name(policy) << ": " << checked.output;
    fs::remove_all(out);
  }
}

double norm_of_difference(const std::vector<double>& a, const std::vector<double>& b, size_t begin, size_t count) {
  double sum = 0;
  for (size_t i = begin; i < begin + count; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum);
}

// Growth per step of a small perturbation of x0 through the fp64 reference at the default size
// (one realization, 8 steps), as a geometric mean over steps 4..7, once the growth has settled.
double measured_growth(ref::Policy policy) {
  const auto workload = find_workload(workload_name(policy));
  const ArrayMap inputs = workload->make_inputs(SizeClass::Default, 3);
  ref::Architecture arch = sp::architecture(SizeClass::Default, policy);
  arch.realizations = 1;
  arch.steps = 8;
  const auto weights = sp::load_weights<double>(inputs, arch);
  const std::vector<double> x0 = require(inputs, sp::kInitialField).values;
  std::vector<double> perturbed = x0;
  SeededGenerator noise(11, "perturbation");
  for (double& v : perturbed) v += 1e-7 * noise.uniform(-1, 1);
  const auto a = ref::rollout<double>(weights, x0.data(), arch, policy, {});
  const auto b = ref::rollout<double>(weights, perturbed.data(), arch, policy, {});
  const size_t field = static_cast<size_t>(arch.field_size());
  const double early = norm_of_difference(a, b, 3 * field, field), late = norm_of_difference(a, b, 7 * field, field);
  return std::pow(late / early, 1.0 / 4);
}

// verify and CI check the small size most: it must reach both convolution paths, 3x3 (the seed's
// kernel, and the fast path of the variants that have one) and a larger kernel, at which an
// expression of k that merely equals 1 at k = 3 (k / 3 for the padding k / 2) shows.
TEST(SpinlockSizes, TheSmallSizeChecksA5x5KernelBesideThe3x3OnesAndTheOtherSizesKeepTheSeeds) {
  std::set<int> small_kernels;
  for (ref::Policy policy : kPolicies) {
    small_kernels.insert(sp::architecture(SizeClass::Small, policy).kernel);
    EXPECT_EQ(sp::architecture(SizeClass::Default, policy).kernel, 3) << sp::policy_name(policy);
    EXPECT_EQ(sp::architecture(SizeClass::Large, policy).kernel, 3) << sp::policy_name(policy);
  }
  EXPECT_EQ(small_kernels, (std::set<int>{3, 5}));
  EXPECT_NE(find_workload(workload_name(ref::Policy::Convex))->shape(SizeClass::Small).find(" k=5"),
            std::string::npos);
}

TEST(SpinlockBudgets, TheDeclaredErrorGrowthCoversTheReferencesAndIsNotLoose) {
  for (ref::Policy policy : kPolicies) {
    const double measured = measured_growth(policy), declared = sp::error_growth(policy);
    std::cout << sp::policy_name(policy) << ": error growth per step " << measured << " (declared " << declared << ")\n";
    EXPECT_LE(measured, declared) << sp::policy_name(policy);
    EXPECT_GE(measured * 1.25, declared) << sp::policy_name(policy) << ": the budgets would be loose";
  }
}

TEST(SpinlockBudgets, ExactPhasesGetFp32BudgetsThatGrowWithTheStep) {
  const auto workload = find_workload("spinlock/cnn_rollout_convex");
  for (const char* name : {sp::kEager, sp::kCompileFusion, sp::kExactFast}) {
    const int phase = index_of(*workload, name);
    const std::vector<OutputSpec> specs = workload->outputs_for(phase, SizeClass::Default);
    ASSERT_EQ(specs.size(), 1u);
    EXPECT_EQ(specs[0].reference_name(), sp::kTrajectory);
    ASSERT_EQ(specs[0].step_budget.size(), 16u);
    EXPECT_DOUBLE_EQ(specs[0].step_budget[0], 1e-5);
    EXPECT_NEAR(specs[0].step_budget[1], 1e-5 * (1 + 1.45), 1e-15);
    EXPECT_TRUE(workload->find_phase(phase)->exact);
  }
}

TEST(SpinlockBudgets, ApproximatePhasesAreCheckedAgainstTheirOwnModelAndBoundedAgainstTheExactOne) {
  const auto workload = find_workload("spinlock/cnn_rollout_autoregressive");
  const std::vector<OutputSpec> bf16 = workload->outputs_for(index_of(*workload, sp::kMixedPrecision), SizeClass::Small);
  ASSERT_EQ(bf16.size(), 1u);
  EXPECT_EQ(bf16[0].reference_name(), sp::kTrajectory);
  EXPECT_DOUBLE_EQ(bf16[0].step_budget[0], 1e-2);
  for (const char* name : {sp::kOperatorOpts, sp::kBatching, sp::kProfileGuided}) {
    const int phase = index_of(*workload, name);
    const std::vector<OutputSpec> specs = workload->outputs_for(phase, SizeClass::Small);
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].reference_name(), sp::kApproximateModelTrajectory);
    EXPECT_DOUBLE_EQ(specs[0].step_budget[0], 1e-2);
    EXPECT_EQ(specs[1].reference_name(), sp::kTrajectory);
    EXPECT_FALSE(workload->find_phase(phase)->exact);
  }
}

TEST(SpinlockModel, GroupNormPoolsGroupsOfChannelsAndFallsBackToDivisors) {
  EXPECT_EQ(ref::norm_groups(64, {}), 64);
  EXPECT_EQ(ref::norm_groups(64, {true, false}), 8);
  EXPECT_EQ(ref::norm_groups(4, {true, false}), 4);
  // Two channels of two values, one group: mean 2.5, biased variance 1.25.
  std::vector<double> x{1, 2, 3, 4};
  const std::vector<double> gamma{1, 2}, beta{0, 1};
  ref::normalize(x.data(), 2, 2, gamma.data(), beta.data(), 1);
  const double inv = 1 / std::sqrt(1.25 + ref::kNormEps);
  EXPECT_NEAR(x[0], -1.5 * inv, 1e-12);
  EXPECT_NEAR(x[3], 2 * 1.5 * inv + 1, 1e-12);
}

TEST(SpinlockRun, RowsReportTheErrorOfEveryStep) {
  const fs::path out = fresh_temp_path("spinlock-run");
  const auto result = run_phasebench("run --quick --size small --filter 'spinlock/cnn_rollout_residual/reference' --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::vector<ResultRow> rows = read_results_csv((out / "results.csv").string());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::Ok) << rows[0].reason;
  EXPECT_EQ(rows[0].step_output, "trajectory");
  const std::string& steps = rows[0].step_rel_l2_err;
  EXPECT_EQ(std::count(steps.begin(), steps.end(), ';'), 2) << steps;  // T = 3 at the small size
  EXPECT_EQ(rows[0].step_budget.substr(0, 6), "1e-05;") << rows[0].step_budget;
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb
