// The CUDA trainer2 ladders (optimized/trainer2/trainer2-cuda-ladders.hpp) and their kernel
// bodies (trainer2-cuda.cuh), run on the host by HostExecutor and checked against the fp64
// oracle with the workloads' own tolerances, at every phase of each CUDA ladder.
//
// No GPU and no nvcc needed: the ladders are the code the *-cuda.cu variants run, queued here on
// the host executor instead of the device one, with every kernel body run over its whole index
// space. Also checked: results do not depend on the order in which the threads of a launch run
// (a race on the GPU), runs repeat bit for bit, the host syncs and allocations each phase
// promises, and which kernels each phase launches. What needs a device and is not tested here:
// the launch wrappers (grid sizes, shared memory sizes), streams and graph capture itself.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2-cuda-ladders.hpp"
#include "phasebench/check.hpp"
#include "phasebench/workload.hpp"
#include "suites/trainer2/window_io.hpp"
#include "tests/cuda/host_executor.hpp"

namespace {

using pb::ArrayMap;
using pb::SizeClass;
using pb::cuda_backend::testing::HostExecutor;
namespace cu = pb::cuda_backend::trainer2;
namespace ref = pb::reference::trainer2;
using cu::Logging;

const pb::Workload& workload(const std::string& name) {
  const auto found = pb::find_workload(name);
  if (!found) throw std::runtime_error("workload " + name + " is not registered");
  return *found;  // the registry keeps it alive
}

// ---- running a ladder on the host ----------------------------------------------------------------

template <typename Ladder>
auto run_ladder(Ladder& ladder, Logging logging) -> decltype(ladder.run(logging)) {
  ladder.run(logging);
}
template <typename Ladder>
auto run_ladder(Ladder& ladder, Logging) -> decltype(ladder.run()) {
  ladder.run();
}

struct Counts {
  int64_t host_syncs = 0, launches = 0, bytes_allocated = 0;
  std::map<std::string, int64_t> launches_by_name;
  int64_t launched(const std::string& name) const {
    const auto it = launches_by_name.find(name);
    return it == launches_by_name.end() ? 0 : it->second;
  }
};

struct HostRun {
  ArrayMap outputs;
  Counts counts;  // of the run() alone (not setup, poison or outputs)
};

struct RunOptions {
  bool reverse = false;
  Logging logging = Logging::Read;
  int runs = 1;  // runs on the same ladder (the last one is returned)
};

template <template <typename> class Ladder>
HostRun run_on_host(const ArrayMap& inputs, int phase, RunOptions options = {}) {
  HostExecutor exec;
  exec.reverse = options.reverse;
  Ladder<HostExecutor> ladder(exec, inputs, phase);
  HostRun result;
  for (int r = 0; r < options.runs; ++r) {
    ladder.poison_outputs();
    exec.reset_counters();
    run_ladder(ladder, options.logging);
    result.counts = {exec.host_syncs, exec.launches, exec.bytes_allocated, exec.launches_by_name};
  }
  result.outputs = ladder.outputs();
  return result;
}

template <template <typename> class Ladder>
HostRun run_on_host(const std::string& name, SizeClass size, uint64_t seed, int phase,
                    RunOptions options = {}) {
  return run_on_host<Ladder>(workload(name).make_inputs(size, seed), phase, options);
}

int64_t small_window_steps() { return pb::suites::trainer2::window_dims(SizeClass::Small).steps; }

// ---- comparing ------------------------------------------------------------------------------------

::testing::AssertionResult matches_reference(const std::string& name, const ArrayMap& inputs,
                                             const ArrayMap& produced) {
  const pb::Workload& w = workload(name);
  const pb::CheckResult check = pb::check_outputs(produced, w.reference_fp64(inputs), w.outputs());
  if (check.status == pb::Status::Ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << pb::to_string(check.status) << ": " << check.reason
                                       << " (worst output " << check.worst.name << ", rel_l2_err "
                                       << check.worst.rel_l2_err << ", tolerance "
                                       << check.worst.tolerance << ")";
}

::testing::AssertionResult bitwise_equal(const ArrayMap& a, const ArrayMap& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "different output sets";
  for (const auto& [name, array] : a) {
    const auto other = b.find(name);
    if (other == b.end()) return ::testing::AssertionFailure() << name << " missing";
    for (size_t i = 0; i < array.values.size(); ++i) {
      const float x = static_cast<float>(array.values[i]), y = static_cast<float>(other->second.values[i]);
      if (std::memcmp(&x, &y, sizeof x) != 0)
        return ::testing::AssertionFailure() << name << "[" << i << "]: " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- every phase of every ladder against the oracle, at the small size ---------------------------

struct PhaseCase {
  std::string workload;
  int phase;
};

void PrintTo(const PhaseCase& c, std::ostream* os) { *os << c.workload << " phase " << c.phase; }

std::string case_name(const ::testing::TestParamInfo<PhaseCase>& info) {
  std::string name = info.param.workload.substr(info.param.workload.find('/') + 1);
  return name + "_phase" + std::to_string(info.param.phase);
}

// The phases of the CUDA ladders that run (phase 5 is registered as Unsupported).
std::vector<PhaseCase> cuda_phases() {
  std::vector<PhaseCase> cases{{"trainer2/retrieval", 0}, {"trainer2/retrieval", 4},
                               {"trainer2/rotor_update", 0}, {"trainer2/rotor_update", 2}};
  for (int phase : {0, 1, 3, 4, 6, 7, 8, 9, 10}) cases.push_back({"trainer2/window", phase});
  for (int phase : {0, 1, 2, 3, 4, 6, 7, 8, 9, 10}) cases.push_back({"trainer2/train_step", phase});
  return cases;
}

HostRun run_case(const PhaseCase& c, const ArrayMap& inputs, RunOptions options = {}) {
  if (c.workload == "trainer2/retrieval") return run_on_host<cu::RetrievalLadder>(inputs, c.phase, options);
  if (c.workload == "trainer2/rotor_update") return run_on_host<cu::RotorUpdateLadder>(inputs, c.phase, options);
  if (c.workload == "trainer2/window") return run_on_host<cu::WindowLadder>(inputs, c.phase, options);
  return run_on_host<cu::TrainStepLadder>(inputs, c.phase, options);
}

class Trainer2CudaLadder : public ::testing::TestWithParam<PhaseCase> {};

INSTANTIATE_TEST_SUITE_P(Phases, Trainer2CudaLadder, ::testing::ValuesIn(cuda_phases()), case_name);

TEST_P(Trainer2CudaLadder, MatchesTheFp64ReferenceOnSeveralSeeds) {
  for (uint64_t seed : {1, 2, 3}) {
    const ArrayMap inputs = workload(GetParam().workload).make_inputs(SizeClass::Small, seed);
    EXPECT_TRUE(matches_reference(GetParam().workload, inputs, run_case(GetParam(), inputs).outputs))
        << "seed " << seed;
  }
}

TEST_P(Trainer2CudaLadder, ThreadOrderWithinALaunchDoesNotMatter) {
  const ArrayMap inputs = workload(GetParam().workload).make_inputs(SizeClass::Small, 4);
  RunOptions backwards;
  backwards.reverse = true;
  EXPECT_TRUE(bitwise_equal(run_case(GetParam(), inputs).outputs, run_case(GetParam(), inputs, backwards).outputs));
}

TEST_P(Trainer2CudaLadder, EveryRunStartsFromTheInputs) {
  const ArrayMap inputs = workload(GetParam().workload).make_inputs(SizeClass::Small, 5);
  RunOptions three_runs;
  three_runs.runs = 3;
  EXPECT_TRUE(bitwise_equal(run_case(GetParam(), inputs).outputs, run_case(GetParam(), inputs, three_runs).outputs));
}

// The window and train_step ladders as a graph captures them (Logging::Capture: the progress
// metrics copied to pinned memory, no host wait inside the run).
std::vector<PhaseCase> windowed_phases() {
  std::vector<PhaseCase> cases;
  for (const PhaseCase& c : cuda_phases())
    if (c.workload == "trainer2/window" || c.workload == "trainer2/train_step") cases.push_back(c);
  return cases;
}

class Trainer2CudaWindowedLadder : public ::testing::TestWithParam<PhaseCase> {};

INSTANTIATE_TEST_SUITE_P(Phases, Trainer2CudaWindowedLadder, ::testing::ValuesIn(windowed_phases()), case_name);

TEST_P(Trainer2CudaWindowedLadder, GraphLoggingGivesTheSameOutputs) {
  const PhaseCase& c = GetParam();
  const ArrayMap inputs = workload(c.workload).make_inputs(SizeClass::Small, 6);
  RunOptions captured;
  captured.logging = Logging::Capture;
  const HostRun run = run_case(c, inputs, captured);
  EXPECT_TRUE(bitwise_equal(run_case(c, inputs).outputs, run.outputs));
  if (c.phase >= 2) {
    EXPECT_EQ(run.counts.host_syncs, 0) << "a graph cannot hold a host wait";
  }
}

// Phases that change no arithmetic give the same bits as the phase before them (on the host, where
// no compiler contracts a multiply-add differently in a fused kernel): batching the reads, fusing
// s, vectorizing the rotor, updating in place, hoisting the batch, mixing states only at the last
// step and deferring the log. Only the fused retrieval (phase 4) sums in another order. This is
// stronger than the tolerance check for the exact phases beyond the seed: at the small size a
// window of W = 5 steps hardly moves R, so an act taken from the wrong step would pass it.
TEST(Trainer2CudaExactPhases, GiveTheSameBitsAsThePhaseBefore) {
  const ArrayMap window_inputs = workload("trainer2/window").make_inputs(SizeClass::Small, 7);
  const ArrayMap step_inputs = workload("trainer2/train_step").make_inputs(SizeClass::Small, 7);
  for (const std::vector<int>& group : {std::vector<int>{0, 1, 3}, std::vector<int>{4, 6, 7, 8, 9, 10}}) {
    const ArrayMap window = run_on_host<cu::WindowLadder>(window_inputs, group.front()).outputs;
    const ArrayMap step = run_on_host<cu::TrainStepLadder>(step_inputs, group.front()).outputs;
    for (int phase : group) {
      EXPECT_TRUE(bitwise_equal(window, run_on_host<cu::WindowLadder>(window_inputs, phase).outputs))
          << "window phase " << phase << " vs " << group.front();
      EXPECT_TRUE(bitwise_equal(step, run_on_host<cu::TrainStepLadder>(step_inputs, phase).outputs))
          << "train_step phase " << phase << " vs " << group.front();
    }
  }
  EXPECT_TRUE(bitwise_equal(run_on_host<cu::TrainStepLadder>(step_inputs, 1).outputs,
                            run_on_host<cu::TrainStepLadder>(step_inputs, 2).outputs));
}

// In train_step Δ = 0, so the metric update's formula and clamps are not exercised there: the
// body alone, with Δ large enough to push g past both clamps.
TEST(Trainer2CudaBodies, MetricUpdateMatchesTheReference) {
  const float u[cu::kDim] = {0.9f, -1.3f, 0.2f, 2.1f, -0.4f, 0.05f, 1.1f, -2.2f};
  const float theta[cu::kSlots] = {0.3f, -0.2f, 0.45f, -0.1f, 0.25f, -0.35f, 0.f, 0.f};
  for (float lior_diff : {-30.f, -0.5f, 0.f, 0.7f, 40.f}) {
    float g[cu::kDim] = {1.f, 0.5f, 1.5f, 0.02f, 99.f, 1.2f, 0.8f, 0.011f};
    double g64[cu::kDim], u64[cu::kDim], theta64[cu::kSlots];
    for (int i = 0; i < cu::kDim; ++i) g64[i] = g[i], u64[i] = u[i];
    for (int k = 0; k < cu::kSlots; ++k) theta64[k] = theta[k];
    cu::MetricUpdate{u, theta, &lior_diff, g}(0);
    ref::metric_update<double>(u64, theta64, lior_diff, g64);
    for (int i = 0; i < cu::kDim; ++i) EXPECT_NEAR(g[i], g64[i], 1e-5 * std::abs(g64[i])) << "Δ " << lior_diff << " i " << i;
  }
}

// The host's progress log (what the host reads each step, or once per window) holds the
// accumulators after every step, whichever way the phase delivers it; its last row / W is the
// window's {lior, R, spd}.
TEST(Trainer2CudaProgressLog, HoldsTheAccumulatorsOfEveryStep) {
  const ArrayMap inputs = workload("trainer2/window").make_inputs(SizeClass::Small, 8);
  const int64_t W = small_window_steps();
  std::vector<float> first_log;
  for (int phase : {0, 1, 3, 4, 6, 7, 8, 9, 10}) {
    for (Logging logging : {Logging::Read, Logging::Capture}) {
      HostExecutor exec;
      cu::WindowLadder<HostExecutor> ladder(exec, inputs, phase);
      ladder.run(logging);
      const float* log = ladder.runner().progress_log();
      const std::vector<float> row(log, log + 3 * W);
      if (first_log.empty()) first_log = row;
      EXPECT_EQ(row, first_log) << "phase " << phase;
      const ArrayMap out = ladder.outputs();
      EXPECT_EQ(static_cast<float>(out.at("lior").values[0]), row[3 * (W - 1) + 0] / W) << "phase " << phase;
      EXPECT_EQ(static_cast<float>(out.at("R").values[0]), row[3 * (W - 1) + 1] / W) << "phase " << phase;
      EXPECT_EQ(static_cast<float>(out.at("spd").values[0]), row[3 * (W - 1) + 2] / W) << "phase " << phase;
    }
  }
}

// ---- what each phase promises: host syncs, allocations, launches ----------------------------------

TEST(Trainer2CudaCounts, WindowHostSyncsFallFrom3WTo1) {
  const int64_t W = small_window_steps();
  const std::map<int, int64_t> expected{{0, 3 * W}, {1, W}, {3, W}, {4, W}, {6, W},
                                        {7, W},     {8, W}, {9, W}, {10, 1}};
  for (const auto& [phase, syncs] : expected) {
    EXPECT_EQ(run_on_host<cu::WindowLadder>("trainer2/window", SizeClass::Small, 1, phase).counts.host_syncs,
              syncs)
        << "phase " << phase;
  }
}

TEST(Trainer2CudaCounts, TrainStepHostSyncs) {
  const int64_t W = small_window_steps();
  const std::map<int, int64_t> expected{{0, 6 * W + 24}, {1, 2 * W + 24}, {2, 2 * W}, {6, 2 * W}, {10, 2}};
  for (const auto& [phase, syncs] : expected) {
    EXPECT_EQ(run_on_host<cu::TrainStepLadder>("trainer2/train_step", SizeClass::Small, 1, phase).counts.host_syncs,
              syncs)
        << "phase " << phase;
  }
}

TEST(Trainer2CudaCounts, RotorUpdateReadsFourValuesPerPairOnlyInPhase0) {
  EXPECT_EQ(run_on_host<cu::RotorUpdateLadder>("trainer2/rotor_update", SizeClass::Small, 1, 0).counts.host_syncs, 24);
  const HostRun vectorized = run_on_host<cu::RotorUpdateLadder>("trainer2/rotor_update", SizeClass::Small, 1, 2);
  EXPECT_EQ(vectorized.counts.host_syncs, 0);
  EXPECT_EQ(vectorized.counts.launches, 1);
}

TEST(Trainer2CudaCounts, NothingIsAllocatedInRunFromPhase6) {
  for (int phase : {0, 1, 3, 4}) {
    EXPECT_GT(run_on_host<cu::WindowLadder>("trainer2/window", SizeClass::Small, 1, phase).counts.bytes_allocated, 0)
        << "phase " << phase;
  }
  for (int phase : {6, 7, 8, 9, 10}) {
    EXPECT_EQ(run_on_host<cu::WindowLadder>("trainer2/window", SizeClass::Small, 1, phase).counts.bytes_allocated, 0)
        << "phase " << phase;
    EXPECT_EQ(
        run_on_host<cu::TrainStepLadder>("trainer2/train_step", SizeClass::Small, 1, phase).counts.bytes_allocated, 0)
        << "phase " << phase;
  }
  EXPECT_GT(run_on_host<cu::RetrievalLadder>("trainer2/retrieval", SizeClass::Small, 1, 0).counts.bytes_allocated, 0);
  EXPECT_EQ(run_on_host<cu::RetrievalLadder>("trainer2/retrieval", SizeClass::Small, 1, 4).counts.bytes_allocated, 0);
}

TEST(Trainer2CudaCounts, EachPhaseLaunchesWhatItSays) {
  const int64_t W = small_window_steps();
  auto window = [](int phase) {
    return run_on_host<cu::WindowLadder>("trainer2/window", SizeClass::Small, 1, phase).counts;
  };
  const Counts phase0 = window(0), phase1 = window(1), phase3 = window(3), phase4 = window(4),
               phase6 = window(6), phase8 = window(8), phase9 = window(9);
  EXPECT_EQ(phase0.launched("mean"), 3 * W);
  EXPECT_EQ(phase0.launched("speed"), 2 * W);  // s computed twice
  EXPECT_EQ(phase0.launched("softmax"), W);
  EXPECT_EQ(phase0.launched("concat_state"), W);
  EXPECT_EQ(phase1.launched("mean"), 0);
  EXPECT_EQ(phase1.launched("metric_means"), W);
  EXPECT_EQ(phase3.launched("speed"), 0);
  EXPECT_EQ(phase3.launched("fused_lior"), W);
  EXPECT_EQ(phase4.launched("softmax"), 0);
  EXPECT_EQ(phase4.launched("fused_retrieval"), W);
  EXPECT_EQ(phase6.launched("field_force"), 0);
  EXPECT_EQ(phase6.launched("complex_modulus"), 0);
  EXPECT_EQ(phase6.launched("metrics_in_place"), W);
  EXPECT_LT(phase6.launches, phase4.launches);
  EXPECT_EQ(phase8.launched("concat_state"), 1);
  EXPECT_EQ(phase9.launched("fused_retrieval"), 1);
  EXPECT_EQ(phase9.launched("rotate_query"), 1);
}

// ---- sizes where the block kernels use more than one block or tile ---------------------------------

// The small sizes have d = 12 (one column tile of the fused retrieval) and 270 complex field
// values (one curvature block); the default size has 8 tiles per row and 98 curvature blocks.
TEST(Trainer2CudaDefaultSize, RetrievalBothPhases) {
  const ArrayMap inputs = workload("trainer2/retrieval").make_inputs(SizeClass::Default, 1);
  for (int phase : {0, 4}) {
    EXPECT_TRUE(matches_reference("trainer2/retrieval", inputs,
                                  run_on_host<cu::RetrievalLadder>(inputs, phase).outputs))
        << "phase " << phase;
  }
}

TEST(Trainer2CudaDefaultSize, WindowPhase10) {
  const ArrayMap inputs = workload("trainer2/window").make_inputs(SizeClass::Default, 1);
  EXPECT_TRUE(matches_reference("trainer2/window", inputs, run_on_host<cu::WindowLadder>(inputs, 10).outputs));
}

TEST(Trainer2CudaDefaultSize, CurvatureOverManyBlocks) {
  const ArrayMap inputs = workload("trainer2/window").make_inputs(SizeClass::Default, 2);
  const std::vector<float> F = inputs.at("F0").to_floats();
  const std::vector<double> F64(inputs.at("F0").values.begin(), inputs.at("F0").values.end());
  const double expected = ref::mean_field_modulus(F64);
  const int64_t count = static_cast<int64_t>(F.size() / 2), blocks = cu::curvature_blocks(count);
  ASSERT_GT(blocks, 1);
  for (bool from_field : {true, false}) {
    HostExecutor exec;
    auto modulus = exec.allocate<float>(count);
    auto partials = exec.allocate<float>(blocks);
    auto R = exec.allocate<float>(3);
    if (!from_field) exec.for_each("modulus", count, cu::ComplexModulus{F.data(), modulus.data()});
    exec.blocks("partials", cu::CurvaturePartials{from_field ? F.data() : modulus.data(), from_field, count,
                                                  blocks, partials.data()});
    exec.blocks("finish", cu::CurvatureFinish{partials.data(), blocks, count, 3, R.data()});
    for (int b = 0; b < 3; ++b) EXPECT_NEAR(R.data()[b], expected, 1e-6 * expected) << "from_field " << from_field;
  }
}

}  // namespace
