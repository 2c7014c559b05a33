// The phase model: the catalog owns what a phase means, backends declare what they have, the
// harness derives the optimizations in effect and writes the rows of capability gaps. The
// registry-driven tests hold every ladder of every backend to the catalog, so a ladder that names
// a phase its catalog lacks, or implements one its backend cannot, fails here.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "phasebench/backend.hpp"
#include "phasebench/runner.hpp"
#include "phasebench/variant.hpp"
#include "suites/spinlock/cnn_rollout.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb {
namespace {

PhaseInfo phase(int index, std::string name, std::vector<Capability> needs = {},
                std::vector<std::string> switches_off = {}) {
  PhaseInfo info;
  info.index = index;
  info.name = std::move(name);
  info.needs = std::move(needs);
  info.switches_off = std::move(switches_off);
  return info;
}

const std::vector<PhaseInfo> kCatalog{phase(0, "baseline"), phase(1, "fused"),
                                      phase(2, "graph", {Capability::GraphCapture}),
                                      phase(3, "exact_again", {}, {"fused"})};

TEST(PhasePlan, APhaseAddsItsOptimizationToEveryEarlierOne) {
  const PhasePlan plan = derive_phase_plan(kCatalog, 1, {});
  EXPECT_TRUE(plan.has("baseline"));
  EXPECT_TRUE(plan.has("fused"));
  EXPECT_FALSE(plan.has("graph"));
  EXPECT_FALSE(plan.has("exact_again"));
}

TEST(PhasePlan, AnOptimizationWhoseNeedsTheDeviceLacksIsNotInEffect) {
  EXPECT_FALSE(derive_phase_plan(kCatalog, 2, {}).has("graph"));
  EXPECT_TRUE(derive_phase_plan(kCatalog, 2, {Capability::GraphCapture}).has("graph"));
  EXPECT_FALSE(derive_phase_plan(kCatalog, 3, {Capability::Bf16}).has("graph"));
}

TEST(PhasePlan, APhaseCanSwitchAnEarlierOptimizationOff) {
  const PhasePlan plan = derive_phase_plan(kCatalog, 3, {Capability::GraphCapture});
  EXPECT_FALSE(plan.has("fused"));
  EXPECT_TRUE(plan.has("graph"));
  EXPECT_TRUE(plan.has("exact_again"));
}

TEST(PhasePlan, AskingForAnOptimizationTheCatalogLacksIsAnError) {
  const PhasePlan plan = derive_phase_plan(kCatalog, 3, {});
  EXPECT_THROW(plan.has("fusd"), std::logic_error);
}

TEST(PhasePlan, SpinlocksExactPhaseKeepsTheExactOptimizationsInFp32) {
  const auto workload = find_workload("spinlock/cnn_rollout_convex");
  ASSERT_TRUE(workload);
  const PhasePlan plan = derive_phase_plan(workload->phases(), 6, {Capability::Bf16});
  namespace sp = suites::spinlock;
  EXPECT_TRUE(plan.has(sp::kExactFast));
  EXPECT_TRUE(plan.has(sp::kCompileFusion) && plan.has(sp::kBatching) && plan.has(sp::kProfileGuided));
  EXPECT_FALSE(sp::computes_in_bf16(plan));
  EXPECT_FALSE(sp::model_of(plan).group_norm);
  EXPECT_TRUE(sp::preallocates(plan));
}

TEST(PhasePlan, ARungALadderSkipsIsStillInEffectAboveIt) {
  const auto workload = find_workload("trainer2/window");
  ASSERT_TRUE(workload);
  namespace t2 = suites::trainer2;
  const PhasePlan plan = derive_phase_plan(workload->phases(), 11, {});
  EXPECT_TRUE(plan.has(t2::kDeferredMetrics));
  EXPECT_TRUE(plan.has(t2::kTemporalBlocking));
  EXPECT_FALSE(plan.has(t2::kAdaptiveCleanup));  // needs a caching allocator
  EXPECT_FALSE(plan.has(t2::kGraphCapture));     // needs graph capture
}

// A backend with a caching allocator on "gpu" only.
class TwoDeviceBackend final : public Backend {
 public:
  std::string name() const override { return "twodevice"; }
  std::vector<DeviceInfo> devices() const override { return {{"cpu", false, "", ""}, {"gpu", true, "", ""}}; }
  Capabilities capabilities(const std::string& device) const override {
    if (device == "gpu") return {Capability::CachingAllocator};
    return {};
  }
  nlohmann::json metadata() const override { return {}; }
};

TEST(CapabilityGap, MissingOnThisDeviceOnlyIsSkippedAndSaysWhereItRuns) {
  const auto gap = capability_gap(phase(5, "cleanup", {Capability::CachingAllocator}), TwoDeviceBackend{}, "cpu");
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->kind, CannotRun::Kind::Skipped);
  EXPECT_NE(gap->reason.find("phase 5 cleanup needs " + std::string(describe(Capability::CachingAllocator))),
            std::string::npos)
      << gap->reason;
  EXPECT_NE(gap->reason.find("on gpu"), std::string::npos) << gap->reason;
  EXPECT_FALSE(capability_gap(phase(5, "cleanup", {Capability::CachingAllocator}), TwoDeviceBackend{}, "gpu"));
}

TEST(CapabilityGap, MissingOnEveryDeviceIsUnsupported) {
  const auto gap = capability_gap(phase(7, "graph", {Capability::GraphCapture}), TwoDeviceBackend{}, "gpu");
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->kind, CannotRun::Kind::Unsupported);
  EXPECT_NE(gap->reason.find("twodevice does not have"), std::string::npos) << gap->reason;
  EXPECT_NE(gap->reason.find("on any device"), std::string::npos) << gap->reason;
}

// ---- every registered ladder, against its catalog and its backend ------------------------------

TEST(Ladders, NameOnlyPhasesOfTheirCatalogEachOnce) {
  for (const VariantLadder& ladder : registered_ladders()) {
    const auto workload = find_workload(ladder.workload);
    if (!workload || ladder.backend == kReferenceBackend) continue;
    std::vector<int> indices;
    EXPECT_NO_THROW(indices = phase_indices(ladder, *workload)) << ladder.source_file;
    EXPECT_EQ(std::set<int>(indices.begin(), indices.end()).size(), indices.size())
        << ladder.source_file << " registers a phase twice";
  }
}

TEST(Ladders, ImplementOnlyPhasesWhoseNeedsTheirBackendDeclares) {
  for (const VariantLadder& ladder : registered_ladders()) {
    const auto workload = find_workload(ladder.workload);
    const auto backend = find_backend(ladder.backend);
    if (!workload || !backend || ladder.backend == kReferenceBackend) continue;
    for (const PhaseInfo& info : workload->phases()) {
      if (std::find(ladder.phases.begin(), ladder.phases.end(), info.name) == ladder.phases.end()) continue;
      bool somewhere = false;
      for (const DeviceInfo& device : backend->devices())
        somewhere |= missing_needs(info, backend->capabilities(device.name)).empty();
      EXPECT_TRUE(somewhere) << ladder.source_file << " implements " << info.name << ", whose needs "
                             << ladder.backend << " declares on no device";
    }
  }
}

TEST(Ladders, EveryCapabilityGapIsARowWithAGeneratedReason) {
  size_t gap_rows = 0;
  for (const Case& c : plan_cases({}, SizeClass::Small)) {
    if (c.ladder->backend == kReferenceBackend) continue;
    const PhaseInfo info = *c.workload->find_phase(c.phase);
    const bool lacks = !missing_needs(info, c.backend->capabilities(c.device)).empty();
    EXPECT_EQ(lacks, c.capability_gap.has_value()) << c.row_name();
    if (c.capability_gap) EXPECT_NE(c.capability_gap->reason.find(info.name + " needs "), std::string::npos);
    gap_rows += lacks;
  }
  // Each catalog phase a backend lacks on a device is a row, registered by the ladder or not.
  size_t gaps = 0;
  for (const VariantLadder& ladder : registered_ladders()) {
    const auto workload = find_workload(ladder.workload);
    const auto backend = find_backend(ladder.backend);
    if (!workload || !backend || ladder.backend == kReferenceBackend) continue;
    for (const DeviceInfo& device : backend->devices())
      for (const PhaseInfo& info : workload->phases())
        gaps += !missing_needs(info, backend->capabilities(device.name)).empty();
  }
  EXPECT_EQ(gap_rows, gaps);
}

TEST(Ladders, TorchOnTheCpuSkipsTheCachingAllocatorPhaseKokkosHasNoneAnywhere) {
  Selection selection;
  selection.filter = "trainer2/window/(torch|kokkos)/adaptive_cleanup";
  std::vector<Case> cases;
  try {
    cases = plan_cases(selection, SizeClass::Small);
  } catch (const std::exception&) {
    GTEST_SKIP() << "neither torch nor kokkos is built";
  }
  int checked = 0;
  for (const Case& c : cases) {
    // torch on cuda has the caching allocator: that row is planned normally (and
    // SKIPPED later only if no GPU is present), so it is not a capability gap.
    if (c.ladder->backend == "torch" && c.device != "cpu") continue;
    ASSERT_TRUE(c.capability_gap) << c.row_name();
    if (c.ladder->backend == "kokkos") EXPECT_EQ(c.capability_gap->kind, CannotRun::Kind::Unsupported);
    if (c.ladder->backend == "torch") EXPECT_EQ(c.capability_gap->kind, CannotRun::Kind::Skipped);
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no cpu torch or kokkos row was planned for adaptive_cleanup";
}

}  // namespace
}  // namespace pb
