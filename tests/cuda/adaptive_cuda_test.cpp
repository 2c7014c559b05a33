// The CUDA ladder of adaptive/dynamics_step (optimized/adaptive/dynamics_step_bodies.hpp) run on
// the host by HostExecutor: every phase the cuda variant registers, on the plan the harness derives
// for the cuda device, against the fp64 oracle with the workload's own tolerances; the kernels each
// fusion removes from its region; and a ladder with one broken kernel body (the phase scale
// gathered with the wrong index) caught by the harness's check. No GPU and no nvcc needed; not
// tested here: the launch wrappers and the stream, which need a device.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "optimized/adaptive/dynamics_step_bodies.hpp"
#include "phasebench/check.hpp"
#include "tests/broken_variant.hpp"
#include "tests/cuda/cuda_plan.hpp"
#include "tests/cuda/host_executor.hpp"

namespace pb {
namespace {

namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;
using cuda_backend::adaptive::Body;
using cuda_backend::adaptive::DynamicsLadder;
using cuda_backend::adaptive::Op;
using cuda_backend::testing::cuda_plan;
using cuda_backend::testing::HostExecutor;
using cuda_backend::testing::phase_index;
using cuda_backend::testing::registered_workload;

/// The outputs of `phase`'s ladder run on the host (NaN-poisoned first, as the harness does).
template <typename Exec>
ArrayMap run_ladder(Exec& exec, const std::string& phase, const ArrayMap& inputs) {
  const Workload& w = registered_workload(ad::kDynamicsStep);
  DynamicsLadder<Exec> ladder(exec, inputs, cuda_plan(w, phase));
  ladder.poison_outputs();
  ladder.run();
  return ladder.outputs();
}

TEST(AdaptiveCudaLadder, EveryPhaseComputesTheReferenceOnTheHost) {
  const Workload& w = registered_workload(ad::kDynamicsStep);
  for (const std::string& phase : ad::kGraphFreePhases) {
    for (uint64_t seed : {1, 2}) {
      const ArrayMap inputs = w.make_inputs(SizeClass::Small, seed);
      const ArrayMap reference = w.reference_fp64(inputs);
      for (bool reverse : {false, true}) {  // threads of a launch in either order: no race
        HostExecutor exec;
        exec.reverse = reverse;
        const ArrayMap out = run_ladder(exec, phase, inputs);
        for (const OutputSpec& spec : w.outputs_for(phase_index(w, phase), SizeClass::Small)) {
          const double error = relative_l2_error(out.at(spec.name).values, reference.at(spec.reference_name()).values);
          EXPECT_LE(error, spec.tolerance) << phase << " seed " << seed << " output " << spec.name;
        }
      }
    }
  }
}

TEST(AdaptiveCudaLadder, EachFusionCutsTheLaunchesOfItsOwnFunction) {
  const Workload& w = registered_workload(ad::kDynamicsStep);
  const ArrayMap inputs = w.make_inputs(SizeClass::Small, 1);
  const int64_t steps = ad::dimensions(SizeClass::Small).steps;
  std::map<std::string, std::map<std::string, int64_t>> launches;  // phase -> kernel -> count
  for (const std::string& phase : ad::kGraphFreePhases) {
    HostExecutor exec;
    run_ladder(exec, phase, inputs);
    launches[phase] = exec.launches_by_name;
  }
  // Per step: mask, activity, 2 linear (I != H at the small size); the rest by function.
  EXPECT_EQ(launches[ad::kBaseline]["adaptive_anxiety"], 4 * steps);
  EXPECT_EQ(launches[ad::kFusedAnxiety]["adaptive_anxiety"], 1 * steps);
  EXPECT_EQ(launches[ad::kFusedAnxiety]["adaptive_scale"], 4 * steps);
  EXPECT_EQ(launches[ad::kGatheredPhaseScale]["adaptive_scale"], 1 * steps);
  EXPECT_EQ(launches[ad::kGatheredPhaseScale]["adaptive_hidden"], 5 * steps);
  EXPECT_EQ(launches[ad::kFusedHidden]["adaptive_hidden"], 1 * steps);
  EXPECT_EQ(launches[ad::kFusedHidden]["adaptive_energy"], 8 * steps);
  EXPECT_EQ(launches[ad::kFusedEnergy]["adaptive_energy"], 1 * steps);
  EXPECT_EQ(launches[ad::kFusedEnergy]["adaptive_linear"], 2 * steps);
  EXPECT_EQ(launches[ad::kFusedEnergy]["adaptive_mask"], steps);
  EXPECT_EQ(launches[ad::kFusedEnergy]["adaptive_activity"], steps);
}

/// HostExecutor whose gathered phase-scale kernel reads the next phase's scale: the wrong body.
struct WrongGatherExecutor : HostExecutor {
  template <typename Kernel>
  void for_each(const char* name, int64_t count, const Kernel& kernel) {
    if constexpr (std::is_same_v<Kernel, Body>) {
      if (kernel.op == Op::GatheredScale) {
        const auto& p = kernel.p;
        return HostExecutor::for_each(name, count, [&p](int64_t i) {
          p.drive[i] *= 1.f + p.s[(p.phase[i / p.H] + 1) % ref::kPhases];  // the wrong line
        });
      }
    }
    HostExecutor::for_each(name, count, kernel);
  }
};

/// The gathered_phase_scale ladder on `Exec`, as a variant the harness checks.
template <typename Exec>
class HostLadderVariant final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    const Workload& w = registered_workload(ad::kDynamicsStep);
    ladder_ = std::make_unique<DynamicsLadder<Exec>>(exec_, inputs, cuda_plan(w, ad::kGatheredPhaseScale));
  }
  void poison_outputs() override { ladder_->poison_outputs(); }
  void run() override { ladder_->run(); }
  ArrayMap outputs() override { return ladder_->outputs(); }

 private:
  Exec exec_;
  std::unique_ptr<DynamicsLadder<Exec>> ladder_;
};

template <typename Exec>
detail::LiveCase checked_on_host(uint64_t seed) {
  return testing::check_broken_variant(
      ad::kDynamicsStep, [](const VariantContext&) { return std::make_unique<HostLadderVariant<Exec>>(); },
      SizeClass::Small, seed);
}

TEST(AdaptiveCudaBroken, TheUnbrokenControlPasses) {
  for (uint64_t seed : {1, 2}) EXPECT_EQ(checked_on_host<HostExecutor>(seed).status, Status::Ok) << seed;
}

TEST(AdaptiveCudaBroken, APhaseScaleGatheredWithTheWrongIndexIsCaught) {
  for (uint64_t seed : {1, 2}) {
    const detail::LiveCase live = checked_on_host<WrongGatherExecutor>(seed);
    EXPECT_EQ(live.status, Status::Fail) << "seed " << seed << ": " << live.reason;
  }
}

}  // namespace
}  // namespace pb
