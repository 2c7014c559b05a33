// The CUDA trainer2 ladders (optimized/trainer2/trainer2_engine_ladders-cuda.hpp) and their kernel
// bodies (trainer2_engine-cuda.cuh), run on the host by HostExecutor and checked against the fp64
// oracle with the workloads' own tolerances, at every phase each CUDA ladder registers, with the
// plan the harness derives for the cuda device.
//
// No GPU and no nvcc needed: the ladders are the code the *-cuda.cu variants run, queued here on
// the host executor instead of the device one, with every kernel body run over its whole index
// space. Also checked: results do not depend on the order in which the threads of a launch run
// (a race on the GPU), runs repeat bit for bit, the host syncs and allocations each optimization
// promises, and which kernels each one launches. What needs a device and is not tested here: the
// launch wrappers (grid sizes, shared memory sizes), streams and graph capture itself.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2_engine_ladders-cuda.hpp"
#include "phasebench/check.hpp"
#include "phasebench/workload.hpp"
#include "suites/trainer2/window_io.hpp"
#include "tests/cuda/cuda_plan.hpp"
#include "tests/cuda/host_executor.hpp"

namespace {

using pb::ArrayMap;
using pb::SizeClass;
using pb::cuda_backend::testing::cuda_plan;
using pb::cuda_backend::testing::HostExecutor;
using pb::cuda_backend::testing::registered_workload;
namespace cu = pb::cuda_backend::trainer2;
namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;
using cu::Logging;

// ---- plans and cases --------------------------------------------------------------------------------

const std::string kRetrieval = "trainer2/retrieval", kRotorUpdate = "trainer2/rotor_update",
                  kWindow = "trainer2/window", kTrainStep = "trainer2/train_step";

/// One registered phase of one CUDA ladder, by its catalog name.
struct PhaseCase {
  std::string workload;
  std::string phase;
};

void PrintTo(const PhaseCase& c, std::ostream* os) { *os << c.workload << " " << c.phase; }

pb::PhasePlan plan_of(const PhaseCase& c) { return cuda_plan(registered_workload(c.workload), c.phase); }

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
HostRun run_on_host(const ArrayMap& inputs, const pb::PhasePlan& plan, RunOptions options) {
  HostExecutor exec;
  exec.reverse = options.reverse;
  Ladder<HostExecutor> ladder(exec, inputs, plan);
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

HostRun run_case(const PhaseCase& c, const ArrayMap& inputs, RunOptions options = {}) {
  const pb::PhasePlan plan = plan_of(c);
  if (c.workload == kRetrieval) return run_on_host<cu::RetrievalLadder>(inputs, plan, options);
  if (c.workload == kRotorUpdate) return run_on_host<cu::RotorUpdateLadder>(inputs, plan, options);
  if (c.workload == kWindow) return run_on_host<cu::WindowLadder>(inputs, plan, options);
  return run_on_host<cu::TrainStepLadder>(inputs, plan, options);
}

/// What one run of the case does at the small size (seed 1).
Counts counts_of(const PhaseCase& c) {
  return run_case(c, registered_workload(c.workload).make_inputs(SizeClass::Small, 1)).counts;
}

int64_t small_window_steps() { return pb::suites::trainer2::window_dims(SizeClass::Small).steps; }

// ---- comparing ------------------------------------------------------------------------------------

::testing::AssertionResult matches_reference(const std::string& name, const ArrayMap& inputs,
                                             const ArrayMap& produced) {
  const pb::Workload& w = registered_workload(name);
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

std::string case_name(const ::testing::TestParamInfo<PhaseCase>& info) {
  return info.param.workload.substr(info.param.workload.find('/') + 1) + "_" + info.param.phase;
}

template <template <typename> class Ladder>
void add_cases(std::vector<PhaseCase>& cases, const std::string& workload_name) {
  for (const std::string& phase : Ladder<HostExecutor>::phases()) cases.push_back({workload_name, phase});
}

// The phases the CUDA ladders register (the harness writes adaptive_cleanup's row itself).
std::vector<PhaseCase> cuda_phases() {
  std::vector<PhaseCase> cases;
  add_cases<cu::RetrievalLadder>(cases, kRetrieval);
  add_cases<cu::RotorUpdateLadder>(cases, kRotorUpdate);
  add_cases<cu::WindowLadder>(cases, kWindow);
  add_cases<cu::TrainStepLadder>(cases, kTrainStep);
  return cases;
}

class Trainer2CudaLadder : public ::testing::TestWithParam<PhaseCase> {};

INSTANTIATE_TEST_SUITE_P(Phases, Trainer2CudaLadder, ::testing::ValuesIn(cuda_phases()), case_name);

TEST_P(Trainer2CudaLadder, MatchesTheFp64ReferenceOnSeveralSeeds) {
  for (uint64_t seed : {1, 2, 3}) {
    const ArrayMap inputs = registered_workload(GetParam().workload).make_inputs(SizeClass::Small, seed);
    EXPECT_TRUE(matches_reference(GetParam().workload, inputs, run_case(GetParam(), inputs).outputs))
        << "seed " << seed;
  }
}

TEST_P(Trainer2CudaLadder, ThreadOrderWithinALaunchDoesNotMatter) {
  const ArrayMap inputs = registered_workload(GetParam().workload).make_inputs(SizeClass::Small, 4);
  RunOptions backwards;
  backwards.reverse = true;
  EXPECT_TRUE(bitwise_equal(run_case(GetParam(), inputs).outputs, run_case(GetParam(), inputs, backwards).outputs));
}

TEST_P(Trainer2CudaLadder, EveryRunStartsFromTheInputs) {
  const ArrayMap inputs = registered_workload(GetParam().workload).make_inputs(SizeClass::Small, 5);
  RunOptions three_runs;
  three_runs.runs = 3;
  EXPECT_TRUE(bitwise_equal(run_case(GetParam(), inputs).outputs, run_case(GetParam(), inputs, three_runs).outputs));
}

// The window and train_step ladders as a graph captures them (Logging::Capture: the progress
// metrics copied to pinned memory, no host wait inside the run).
std::vector<PhaseCase> windowed_phases() {
  std::vector<PhaseCase> cases;
  add_cases<cu::WindowLadder>(cases, kWindow);
  add_cases<cu::TrainStepLadder>(cases, kTrainStep);
  return cases;
}

class Trainer2CudaWindowedLadder : public ::testing::TestWithParam<PhaseCase> {};

INSTANTIATE_TEST_SUITE_P(Phases, Trainer2CudaWindowedLadder, ::testing::ValuesIn(windowed_phases()), case_name);

TEST_P(Trainer2CudaWindowedLadder, GraphLoggingGivesTheSameOutputs) {
  const PhaseCase& c = GetParam();
  const ArrayMap inputs = registered_workload(c.workload).make_inputs(SizeClass::Small, 6);
  RunOptions captured;
  captured.logging = Logging::Capture;
  const HostRun run = run_case(c, inputs, captured);
  EXPECT_TRUE(bitwise_equal(run_case(c, inputs).outputs, run.outputs));
  // Only the original rotor update reads values back (not capturable: it is not a graph phase).
  const bool reads_rotor_pairs = c.workload == kTrainStep && !plan_of(c).has(t2::kVectorizedRotor);
  if (!reads_rotor_pairs) {
    EXPECT_EQ(run.counts.host_syncs, 0) << "a graph cannot hold a host wait";
  }
}

// Optimizations that change no arithmetic give the same bits as the phase before them (on the
// host, where no compiler contracts a multiply-add differently in a fused kernel): batching the
// reads, fusing s, vectorizing the rotor, updating in place, hoisting the batch, mixing states only
// at the last step and deferring the log. Only the fused retrieval (jit_fusion) sums in another
// order. This is stronger than the tolerance check for the exact phases beyond the seed: at the
// small size a window of W = 5 steps hardly moves R, so an act taken from the wrong step would
// pass it.
TEST(Trainer2CudaExactPhases, GiveTheSameBitsAsThePhaseBefore) {
  const ArrayMap window_inputs = registered_workload(kWindow).make_inputs(SizeClass::Small, 7);
  const ArrayMap step_inputs = registered_workload(kTrainStep).make_inputs(SizeClass::Small, 7);
  const std::vector<std::vector<std::string>> same_arithmetic{
      {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd},
      {t2::kJitFusion, t2::kInPlace, t2::kGraphCapture, t2::kHoistedRetrievalBatch, t2::kLastStepAct,
       t2::kDeferredMetrics}};
  for (const std::vector<std::string>& group : same_arithmetic) {
    const ArrayMap window = run_case({kWindow, group.front()}, window_inputs).outputs;
    const ArrayMap step = run_case({kTrainStep, group.front()}, step_inputs).outputs;
    for (const std::string& phase : group) {
      EXPECT_TRUE(bitwise_equal(window, run_case({kWindow, phase}, window_inputs).outputs))
          << "window " << phase << " vs " << group.front();
      EXPECT_TRUE(bitwise_equal(step, run_case({kTrainStep, phase}, step_inputs).outputs))
          << "train_step " << phase << " vs " << group.front();
    }
  }
  EXPECT_TRUE(bitwise_equal(run_case({kTrainStep, t2::kBatchedMetrics}, step_inputs).outputs,
                            run_case({kTrainStep, t2::kVectorizedRotor}, step_inputs).outputs));
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

// The fused retrieval's shared memory holds K weights and two blocks of partials: exactly 48 KiB
// fits without opting in, one float more does not (no suite size comes near the limit).
TEST(Trainer2CudaBodies, FusedRetrievalFitsUpToExactly48KiB) {
  const int64_t largest = 48 * 1024 / static_cast<int64_t>(sizeof(float)) - 2 * cu::kBlockThreads;
  EXPECT_NO_THROW(cu::require_fused_retrieval_fits(largest));
  EXPECT_THROW(cu::require_fused_retrieval_fits(largest + 1), std::invalid_argument);
}

// The host's progress log (what the host reads each step, or once per window) holds the
// accumulators after every step, whichever way the plan delivers it; its last row / W is the
// window's {lior, R, spd}.
TEST(Trainer2CudaProgressLog, HoldsTheAccumulatorsOfEveryStep) {
  const ArrayMap inputs = registered_workload(kWindow).make_inputs(SizeClass::Small, 8);
  const int64_t W = small_window_steps();
  std::vector<float> first_log;
  for (const std::string& phase : cu::WindowLadder<HostExecutor>::phases()) {
    for (Logging logging : {Logging::Read, Logging::Capture}) {
      HostExecutor exec;
      cu::WindowLadder<HostExecutor> ladder(exec, inputs, plan_of({kWindow, phase}));
      ladder.run(logging);
      const float* log = ladder.runner().progress_log();
      const std::vector<float> row(log, log + 3 * W);
      if (first_log.empty()) first_log = row;
      EXPECT_EQ(row, first_log) << phase;
      const ArrayMap out = ladder.outputs();
      EXPECT_EQ(static_cast<float>(out.at("lior").values[0]), row[3 * (W - 1) + 0] / W) << phase;
      EXPECT_EQ(static_cast<float>(out.at("R").values[0]), row[3 * (W - 1) + 1] / W) << phase;
      EXPECT_EQ(static_cast<float>(out.at("spd").values[0]), row[3 * (W - 1) + 2] / W) << phase;
    }
  }
}

// ---- what each optimization promises: host syncs, allocations, launches ---------------------------

TEST(Trainer2CudaCounts, WindowHostSyncsFallFrom3WTo1) {
  const int64_t W = small_window_steps();
  for (const std::string& phase : cu::WindowLadder<HostExecutor>::phases()) {
    const int64_t expected = phase == t2::kBaseline ? 3 * W : phase == t2::kDeferredMetrics ? 1 : W;
    EXPECT_EQ(counts_of({kWindow, phase}).host_syncs, expected) << phase;
  }
}

TEST(Trainer2CudaCounts, TrainStepHostSyncs) {
  const int64_t W = small_window_steps();
  const std::map<std::string, int64_t> expected{{t2::kBaseline, 6 * W + 24},
                                                {t2::kBatchedMetrics, 2 * W + 24},
                                                {t2::kVectorizedRotor, 2 * W},
                                                {t2::kInPlace, 2 * W},
                                                {t2::kDeferredMetrics, 2}};
  for (const auto& [phase, syncs] : expected) EXPECT_EQ(counts_of({kTrainStep, phase}).host_syncs, syncs) << phase;
}

TEST(Trainer2CudaCounts, RotorUpdateReadsFourValuesPerPairOnlyUnvectorized) {
  EXPECT_EQ(counts_of({kRotorUpdate, t2::kBaseline}).host_syncs, 24);
  const Counts vectorized = counts_of({kRotorUpdate, t2::kVectorizedRotor});
  EXPECT_EQ(vectorized.host_syncs, 0);
  EXPECT_EQ(vectorized.launches, 1);
}

TEST(Trainer2CudaCounts, NothingIsAllocatedInRunInPlace) {
  for (const std::string& phase : cu::WindowLadder<HostExecutor>::phases()) {
    const bool in_place = plan_of({kWindow, phase}).has(t2::kInPlace);
    EXPECT_EQ(counts_of({kWindow, phase}).bytes_allocated == 0, in_place) << "window " << phase;
    EXPECT_EQ(counts_of({kTrainStep, phase}).bytes_allocated == 0, in_place) << "train_step " << phase;
  }
  EXPECT_GT(counts_of({kRetrieval, t2::kBaseline}).bytes_allocated, 0);
  EXPECT_EQ(counts_of({kRetrieval, t2::kJitFusion}).bytes_allocated, 0);
}

TEST(Trainer2CudaCounts, EachOptimizationLaunchesWhatItSays) {
  const int64_t W = small_window_steps();
  const auto window = [](const std::string& phase) { return counts_of({kWindow, phase}); };
  const Counts baseline = window(t2::kBaseline), batched = window(t2::kBatchedMetrics),
               fused_lior = window(t2::kFusedLiorSpd), fused_retrieval = window(t2::kJitFusion),
               in_place = window(t2::kInPlace), hoisted = window(t2::kHoistedRetrievalBatch),
               last_step_act = window(t2::kLastStepAct);
  EXPECT_EQ(baseline.launched("mean"), 3 * W);
  EXPECT_EQ(baseline.launched("speed"), 2 * W);  // s computed twice
  EXPECT_EQ(baseline.launched("softmax"), W);
  EXPECT_EQ(baseline.launched("concat_state"), W);
  EXPECT_EQ(batched.launched("mean"), 0);
  EXPECT_EQ(batched.launched("metric_means"), W);
  EXPECT_EQ(fused_lior.launched("speed"), 0);
  EXPECT_EQ(fused_lior.launched("fused_lior"), W);
  EXPECT_EQ(fused_retrieval.launched("softmax"), 0);
  EXPECT_EQ(fused_retrieval.launched("fused_retrieval"), W);
  EXPECT_EQ(in_place.launched("field_force"), 0);
  EXPECT_EQ(in_place.launched("complex_modulus"), 0);
  EXPECT_EQ(in_place.launched("metrics_in_place"), W);
  EXPECT_LT(in_place.launches, fused_retrieval.launches);
  EXPECT_EQ(hoisted.launched("concat_state"), 1);
  EXPECT_EQ(last_step_act.launched("fused_retrieval"), 1);
  EXPECT_EQ(last_step_act.launched("rotate_query"), 1);
}

// ---- sizes where the block kernels use more than one block or tile ---------------------------------

// The small sizes have d = 12 (one column tile of the fused retrieval) and 270 complex field
// values (one curvature block); the default size has 8 tiles per row and 98 curvature blocks.
TEST(Trainer2CudaDefaultSize, RetrievalBothPhases) {
  const ArrayMap inputs = registered_workload(kRetrieval).make_inputs(SizeClass::Default, 1);
  for (const std::string& phase : cu::RetrievalLadder<HostExecutor>::phases())
    EXPECT_TRUE(matches_reference(kRetrieval, inputs, run_case({kRetrieval, phase}, inputs).outputs)) << phase;
}

TEST(Trainer2CudaDefaultSize, WindowDeferredMetrics) {
  const ArrayMap inputs = registered_workload(kWindow).make_inputs(SizeClass::Default, 1);
  EXPECT_TRUE(matches_reference(kWindow, inputs, run_case({kWindow, t2::kDeferredMetrics}, inputs).outputs));
}

TEST(Trainer2CudaDefaultSize, CurvatureOverManyBlocks) {
  const ArrayMap inputs = registered_workload("trainer2/window").make_inputs(SizeClass::Default, 2);
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
