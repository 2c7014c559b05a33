// The CUDA ladder of spinlock/cnn_rollout (optimized/spinlock/cnn_rollout-cuda.hpp), run on the
// host by HostExecutor and checked step by step against the fp64 oracle with the workload's own
// budgets, at every phase the CUDA ladder implements and for every policy.
//
// No GPU and no nvcc needed: the ladder is the code cnn_rollout-cuda.cu runs, queued here on the
// host executor, with every kernel body run over its whole index space. Also checked: results do
// not depend on the order in which the threads of a launch run (a race on the GPU), the
// allocations and launches each phase promises. Not tested here: the launch wrappers and
// streams, which need a device.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "optimized/spinlock/cnn_rollout-cuda.hpp"
#include "phasebench/workload.hpp"
#include "tests/cuda/host_executor.hpp"

namespace {

using pb::ArrayMap;
using pb::SizeClass;
using pb::cuda_backend::testing::HostExecutor;
namespace cu = pb::cuda_backend::spinlock;
namespace sp = pb::suites::spinlock;

const pb::Workload& workload(const std::string& name) {
  const auto found = pb::find_workload(name);
  if (!found) throw std::runtime_error("workload " + name + " is not registered");
  return *found;
}

struct HostRun {
  std::vector<float> trajectory;
  int64_t launches = 0, bytes_allocated = 0, host_syncs = 0;
};

/// One rollout on the host executor, after a first one (so that the counters describe a run
/// that follows setup and a warm-up, as the harness counts).
HostRun run_on_host(const pb::Workload& w, const ArrayMap& inputs, int phase, bool reverse) {
  HostExecutor exec;
  exec.reverse = reverse;
  cu::CnnRolloutLadder<HostExecutor> ladder(exec, inputs, sp::architecture(SizeClass::Small), sp::policy_of(w), phase);
  ladder.run();
  exec.reset_counters();
  ladder.poison_outputs();
  ladder.run();
  HostRun result{{}, exec.launches - 1, exec.bytes_allocated, exec.host_syncs};  // minus the poison
  result.trajectory = ladder.trajectory();
  return result;
}

/// ||out - ref|| / ||ref|| of step t of a [T, ...] trajectory.
double step_error(const std::vector<float>& out, const std::vector<double>& ref, int steps, int t) {
  const size_t per_step = ref.size() / steps;
  double diff = 0, norm = 0;
  for (size_t i = t * per_step; i < (t + 1) * per_step; ++i) {
    diff += (out[i] - ref[i]) * (out[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

struct Case {
  std::string workload;
  int phase;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.workload << "/phase" << c.phase; }

class CnnRolloutCudaLadder : public ::testing::TestWithParam<Case> {};

TEST_P(CnnRolloutCudaLadder, EveryStepWithinBudgetOfTheFp64Reference) {
  const pb::Workload& w = workload(GetParam().workload);
  const int steps = sp::architecture(SizeClass::Small).steps;
  const std::vector<double> budget = w.outputs_for(GetParam().phase, SizeClass::Small).front().step_budget;
  for (uint64_t seed : {1, 2}) {
    const ArrayMap inputs = w.make_inputs(SizeClass::Small, seed);
    const std::vector<double> ref = w.reference_fp64(inputs).at(sp::kTrajectory).values;
    const HostRun run = run_on_host(w, inputs, GetParam().phase, false);
    for (int t = 0; t < steps; ++t)
      EXPECT_LE(step_error(run.trajectory, ref, steps, t), budget[t]) << "seed " << seed << " step " << t;
  }
}

TEST_P(CnnRolloutCudaLadder, ResultDoesNotDependOnThreadOrder) {
  const pb::Workload& w = workload(GetParam().workload);
  const ArrayMap inputs = w.make_inputs(SizeClass::Small, 3);
  const HostRun forward = run_on_host(w, inputs, GetParam().phase, false);
  const HostRun backward = run_on_host(w, inputs, GetParam().phase, true);
  ASSERT_EQ(forward.trajectory.size(), backward.trajectory.size());
  for (size_t i = 0; i < forward.trajectory.size(); ++i) ASSERT_EQ(forward.trajectory[i], backward.trajectory[i]) << i;
}

TEST_P(CnnRolloutCudaLadder, LaunchesAllocationsAndSyncsAsThePhaseSays) {
  const pb::Workload& w = workload(GetParam().workload);
  const HostRun run = run_on_host(w, w.make_inputs(SizeClass::Small, 4), GetParam().phase, false);
  const auto arch = sp::architecture(SizeClass::Small);
  const int64_t blocks = static_cast<int64_t>(arch.block_channels().size()), steps = arch.steps - 1;
  EXPECT_EQ(run.host_syncs, 0);
  switch (GetParam().phase) {
    case sp::kEager:  // per block 4 kernels, then head, policy and the copy, per realization
      EXPECT_EQ(run.launches, 1 + steps * arch.realizations * (4 * blocks + 2));
      EXPECT_GT(run.bytes_allocated, 0);
      break;
    case sp::kCompileFusion:  // one kernel per block and one for head + policy, per realization
      EXPECT_EQ(run.launches, 1 + steps * arch.realizations * (blocks + 1));
      EXPECT_GT(run.bytes_allocated, 0);
      break;
    case sp::kExactFast:  // the same, once for all realizations; nothing allocated
      EXPECT_EQ(run.launches, 1 + steps * (blocks + 1));
      EXPECT_EQ(run.bytes_allocated, 0);
      break;
  }
}

// The fused block on planes larger than a block of threads (the workload's small size has 63
// pixels per plane, fewer than ConvNormGelu::kThreads): every thread then strides over several
// pixels, and the tree sums partial sums of several.
TEST(CnnRolloutCudaBodies, ConvNormGeluMatchesTheReferenceOnPlanesLargerThanABlock) {
  namespace ref = pb::reference::spinlock;
  const int in_channels = 5, out_channels = 3, height = 23, width = 19, kernel = 3, samples = 2;
  const int64_t plane = int64_t{height} * width;
  std::mt19937 engine(7);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  const auto draw = [&](size_t count) {
    std::vector<float> values(count);
    for (float& v : values) v = uniform(engine);
    return values;
  };
  const std::vector<float> in = draw(samples * in_channels * plane), weight = draw(out_channels * in_channels * kernel * kernel);
  const std::vector<float> gamma = draw(out_channels), beta = draw(out_channels);
  std::vector<float> out(samples * out_channels * plane);
  HostExecutor exec;
  exec.reverse = true;
  exec.blocks("conv_norm_gelu", cu::ConvNormGelu{in.data(), weight.data(), gamma.data(), beta.data(), out.data(), in_channels,
                                                 out_channels, height, width, kernel, samples});
  const std::vector<double> w(weight.begin(), weight.end()), g(gamma.begin(), gamma.end()), b(beta.begin(), beta.end());
  for (int n = 0; n < samples; ++n) {
    const std::vector<double> x(in.begin() + n * in_channels * plane, in.begin() + (n + 1) * in_channels * plane);
    std::vector<double> expected(out_channels * plane);
    ref::convolve(x.data(), in_channels, height, width, w.data(), out_channels, kernel, expected.data());
    ref::normalize(expected.data(), out_channels, plane, g.data(), b.data(), out_channels);
    for (int64_t i = 0; i < out_channels * plane; ++i)
      EXPECT_NEAR(out[n * out_channels * plane + i], ref::gelu(expected[i], false), 1e-5) << "sample " << n << " index " << i;
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* name : {"spinlock/cnn_rollout_autoregressive", "spinlock/cnn_rollout_residual", "spinlock/cnn_rollout_convex"})
    for (int phase : {sp::kEager, sp::kCompileFusion, sp::kExactFast}) all.push_back({name, phase});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Spinlock, CnnRolloutCudaLadder, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.workload.substr(info.param.workload.find('/') + 1) +
                                              "_phase" + std::to_string(info.param.phase);
                           return name;
                         });

}  // namespace
