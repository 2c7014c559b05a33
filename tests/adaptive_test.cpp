// The adaptive suite: its reference on a case worked by hand, operations counted per named
// region, the memory held after each step (growing while the autograd graph is kept, flat once
// the state is detached), a broken variant caught, and the fp64 reference against an independent
// numpy implementation of the original code.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <new>
#include <sstream>
#include <stdexcept>

#include "broken_variant.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"
#include "report/report_model.hpp"
#include "suites/adaptive/dynamics_step.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;
using testing::fresh_temp_path;
using testing::run_phasebench;

// One cell, H = I = 2: h = (0.5, -0.5) has mean 0 and unbiased variance 0.5; e = 3 gives
// max(0, 5 - e) = 2; a = 0.25 gives 2a = 0.5: anxiety 3. W = I, b = 0, s[0] = 1: the drive is 2h.
struct HandCase {
  ref::Dimensions dims{1, 1, 2, 2, 1};
  ref::Parameters<double> w{{1, 0, 0, 1}, {0, 0}, {1, 3, 0.5, 0.5}, {1, 1}, {0, 0}, 0, 0};
  std::vector<double> x{1, 0};
  ref::State<double> state{{0.5, -0.5}, {3}, {0.25}};
};

TEST(AdaptiveReference, OneActiveStepWorkedByHand) {
  HandCase c;
  EXPECT_DOUBLE_EQ(ref::anxiety(c.state.hidden.data(), 3.0, 0.25, 2), 3.0);
  ref::step(c.w, c.dims, c.x, {0}, c.state);
  // h' = tanh(h + 2h + 0.1 x) = tanh(1.6, -1.5); e' = 0.99 * 3 + (h'0 + h'1)(1 - 0.1 * 0.3).
  const double h0 = std::tanh(1.6), h1 = std::tanh(-1.5);
  EXPECT_NEAR(c.state.hidden[0], h0, 1e-15);
  EXPECT_NEAR(c.state.hidden[1], h1, 1e-15);
  EXPECT_NEAR(c.state.energy[0], 2.97 + (h0 + h1) * 0.97, 1e-14);
  EXPECT_NEAR(c.state.activity[0], 0.5, 1e-15);  // w_a = 0, b_a = 0: sigmoid(0)
}

TEST(AdaptiveReference, ASleepingNodeOnlySquashesItsHiddenAndDecaysItsEnergy) {
  HandCase c;
  ref::step(c.w, c.dims, c.x, {ref::kSleepPhase}, c.state);
  EXPECT_NEAR(c.state.hidden[0], std::tanh(0.5), 1e-15);
  EXPECT_NEAR(c.state.energy[0], 2.97, 1e-15);
}

TEST(AdaptiveReference, EnergyIsClampedToItsBounds) {
  HandCase c;
  c.w.energy_weight = {100, -100};  // 100 (tanh 1.6 - tanh -1.5): about +180 at the first step
  ref::step(c.w, c.dims, c.x, {0}, c.state);
  EXPECT_EQ(c.state.energy[0], 50.0);
  c.w.energy_weight = {-100, -100};
  c.state.hidden = {0.5, 0.5};
  ref::step(c.w, c.dims, c.x, {0}, c.state);
  EXPECT_EQ(c.state.energy[0], 0.0);
}

TEST(AdaptiveInputs, EveryPhaseOccursAndEnergiesCrossTheirClampBounds) {
  const auto workload = find_workload(ad::kDynamicsStep);
  ASSERT_TRUE(workload);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    for (uint64_t seed : {1, 2, 3}) {
      const ArrayMap inputs = workload->make_inputs(size, seed);
      std::map<int64_t, int> seen;
      for (double p : require(inputs, ad::kPhase).values) ++seen[static_cast<int64_t>(p)];
      EXPECT_EQ(seen.size(), 4u) << to_string(size) << " seed " << seed;
      if (size != SizeClass::Default) continue;
      const ArrayMap out = workload->reference_fp64(inputs);
      int at_zero = 0, at_fifty = 0;
      for (double e : require(out, ad::kEnergy).values) at_zero += e == 0.0, at_fifty += e == 50.0;
      EXPECT_GT(at_zero, 0) << "seed " << seed;
      EXPECT_GT(at_fifty, 0) << "seed " << seed;
    }
  }
}

TEST(CountersRegion, OpsAreCreditedToTheInnermostOpenRegion) {
  counters::Region before("outside the scope");  // no scope yet: not entered, credits nothing
  counters::CountingScope scope;
  counters::note_ops(1);  // unmarked: the total only
  {
    counters::Region outer("hidden");
    counters::note_ops(2);
    {
      counters::Region inner("phase_scale");
      counters::note_ops(3);
    }
    counters::note_ops(1);
  }
  {
    counters::Region again("hidden");
    counters::note_ops(4);
  }
  const counters::Totals totals = scope.finish();
  EXPECT_EQ(totals.ops, 11);
  using Entry = std::pair<std::string, int64_t>;
  EXPECT_EQ(totals.ops_by_region, (std::vector<Entry>{{"hidden", 7}, {"phase_scale", 3}}));
}

TEST(CountersSteps, MemoryHeldIsMeasuredFromTheStartOfTheSteps) {
  counters::CountingScope scope;
  counters::note_allocation(1000);  // before begin_steps(): not the steps' memory
  counters::begin_steps();
  counters::note_allocation(64);
  counters::end_step();
  counters::note_allocation(64);
  counters::note_release(32);
  counters::end_step();
  const counters::Totals totals = scope.finish();
  EXPECT_EQ(totals.step_memory_bytes, (std::vector<int64_t>{64, 96}));
  EXPECT_EQ(totals.bytes_allocated, 1128);
}

// Every replaced form of operator new counts its bytes and is freed by the matching delete. The
// nothrow forms were once left to the runtime: under AddressSanitizer (ci/sanitize.sh) that is ASan's
// operator new freed here with free(), an alloc-dealloc-mismatch (std::stable_sort's temporary
// buffer), and the bytes went uncounted. Direct calls, not new-expressions, so none is elided.
TEST(CountersHeap, EveryFormOfOperatorNewIsCountedAndFreedAlike) {
  counters::CountingScope scope;
  void* plain = ::operator new(1000, std::nothrow);
  void* array = ::operator new[](24, std::nothrow);
  void* aligned = ::operator new(256, std::align_val_t(64), std::nothrow);
  void* aligned_array = ::operator new[](128, std::align_val_t(64), std::nothrow);
  ASSERT_TRUE(plain && array && aligned && aligned_array);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 64, 0u);
  ::operator delete(plain, std::nothrow);
  ::operator delete[](array, std::nothrow);
  ::operator delete(aligned, std::align_val_t(64), std::nothrow);
  ::operator delete[](aligned_array, std::align_val_t(64), std::nothrow);
  EXPECT_EQ(scope.finish().bytes_allocated, 1000 + 24 + 256 + 128);
}

std::map<std::string, int64_t> parse_regions(const std::string& cell) {
  std::map<std::string, int64_t> regions;
  std::istringstream entries(cell);
  std::string entry;
  while (std::getline(entries, entry, ';')) regions[entry.substr(0, entry.find('='))] = std::stoll(entry.substr(entry.find('=') + 1));
  return regions;
}

// One quick run of a backend's ladder at the small size, its CPU rows by phase name.
std::map<std::string, ResultRow> ladder_rows(const std::string& backend) {
  const fs::path out = fresh_temp_path("adaptive-run");
  const auto result =
      run_phasebench("run --quick --size small --filter 'adaptive/dynamics_step/" + backend + "/' --out " + out.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::map<std::string, ResultRow> rows;
  if (result.exit_code == 0)
    for (const ResultRow& row : read_results_csv((out / "results.csv").string()))
      if (row.backend == backend && row.device == "cpu") rows[row.phase] = row;
  fs::remove_all(out);
  return rows;
}

// Every backend's ladder marks the four regions, and each fusing phase cuts its own region's
// operations and no other's (the phase scaling is nested in the hidden update: its operations
// count for phase_scale only).
TEST(AdaptiveRun, OpsAreCountedPerRegionAndEachFusionCutsItsOwnRegion) {
  for (const std::string backend : {"torch", "kokkos", "onednn"}) {
    if (!testing::backend_built(backend)) continue;
    SCOPED_TRACE(backend);
    const auto rows = ladder_rows(backend);
    ASSERT_EQ(rows.size(), backend == "kokkos" ? 7u : 6u);  // Kokkos: and vectorized_cells
    for (const auto& [phase, row] : rows) {
      if (phase == ad::kDetachedState && backend != "torch") {
        EXPECT_EQ(row.status, Status::Unsupported) << row.reason;
        continue;
      }
      if (phase == ad::kVectorizedCells) {  // every step of every function in one kernel: no region
        EXPECT_EQ(row.status, Status::Ok) << row.reason;
        EXPECT_EQ(row.ops_per_iter, 1) << row.ops_by_region;
        continue;
      }
      EXPECT_EQ(row.status, Status::Ok) << phase << ": " << row.reason;
      const auto regions = parse_regions(row.ops_by_region);
      ASSERT_EQ(regions.size(), 4u) << phase << ": " << row.ops_by_region;
      int64_t marked = 0;
      for (const auto& [name, ops] : regions) marked += ops;
      EXPECT_LT(marked, row.ops_per_iter) << phase << ": the mask and activity ops are in no region";
    }
    const auto ops = [&](const std::string& phase, const char* region) {
      return parse_regions(rows.at(phase).ops_by_region).at(region);
    };
    const std::pair<const char*, const char*> fusions[] = {{ad::kFusedAnxiety, ad::kAnxietyRegion},
                                                           {ad::kGatheredPhaseScale, ad::kPhaseScaleRegion},
                                                           {ad::kFusedHidden, ad::kHiddenRegion},
                                                           {ad::kFusedEnergy, ad::kEnergyRegion}};
    std::string previous = ad::kBaseline;
    for (const auto& [phase, region] : fusions) {
      EXPECT_LT(ops(phase, region), ops(previous, region)) << phase;
      for (const char* other : {ad::kAnxietyRegion, ad::kPhaseScaleRegion, ad::kHiddenRegion, ad::kEnergyRegion}) {
        if (std::string(other) != region) {
          EXPECT_EQ(ops(phase, other), ops(previous, other)) << phase << " " << other;
        }
      }
      previous = phase;
    }
  }
}

TEST(AdaptiveRun, MemoryGrowsStepAfterStepWhileTheGraphIsKeptAndStaysFlatDetached) {
  if (!testing::backend_built("torch")) GTEST_SKIP() << "torch backend not built";
  const auto rows = ladder_rows("torch");
  ASSERT_TRUE(rows.count(ad::kBaseline) && rows.count(ad::kDetachedState));
  const std::vector<double> kept = report::parse_step_values(rows.at(ad::kBaseline).step_memory_bytes);
  const std::vector<double> detached = report::parse_step_values(rows.at(ad::kDetachedState).step_memory_bytes);
  ASSERT_EQ(kept.size(), 8u);
  ASSERT_EQ(detached.size(), 8u);
  for (size_t t = 1; t < kept.size(); ++t) EXPECT_GT(kept[t], kept[t - 1]) << "step " << t;
  EXPECT_GT(kept.back(), 4 * kept.front());
  // Flat: within a few heap blocks (the autograd and dispatcher bookkeeping of a step, tens of
  // bytes) of step 0, while the kept graph adds a whole step's saved tensors each time.
  for (size_t t = 1; t < detached.size(); ++t) {
    EXPECT_NEAR(detached[t], detached[0], 0.05 * detached[0]) << "step " << t;
    EXPECT_GT(kept[t] - kept[t - 1], 2 * detached[0]) << "step " << t;
  }
  EXPECT_LT(detached.back(), kept.back() / 4);
}

TEST(AdaptiveRun, WithoutAGraphTheMemoryHeldIsFlat) {
  for (const std::string backend : {"kokkos", "onednn"}) {
    if (!testing::backend_built(backend)) continue;
    const auto rows = ladder_rows(backend);
    ASSERT_TRUE(rows.count(ad::kBaseline)) << backend;
    const std::vector<double> steps = report::parse_step_values(rows.at(ad::kBaseline).step_memory_bytes);
    ASSERT_EQ(steps.size(), 8u) << backend;
    // What the runtime allocates on its first execution (oneDNN) is held from step 0 on; after it,
    // nothing: run() allocates nothing of its own.
    for (double held : steps) EXPECT_EQ(held, steps.front()) << backend;
  }
}

// A gathered phase scale with its index off by one: node p scaled by s[(p + 1) mod 4]. It is the
// registered reference variant fed s rotated by one.
class ShiftedPhaseScale final : public Variant {
 public:
  explicit ShiftedPhaseScale(const VariantContext& context) {
    for (const VariantLadder& ladder : registered_ladders())
      if (ladder.workload == ad::kDynamicsStep && ladder.backend == kReferenceBackend) inner_ = ladder.make(context);
    if (!inner_) throw std::logic_error("no reference ladder for " + ad::kDynamicsStep);
  }
  void setup(const ArrayMap& inputs) override {
    ArrayMap shifted = inputs;
    std::vector<double>& s = shifted.at(ad::kPhaseScale).values;
    std::rotate(s.begin(), s.begin() + 1, s.end());
    inner_->setup(shifted);
  }
  void poison_outputs() override { inner_->poison_outputs(); }
  void run() override { inner_->run(); }
  ArrayMap outputs() override { return inner_->outputs(); }

 private:
  std::unique_ptr<Variant> inner_;
};

TEST(AdaptiveBroken, APhaseScaleGatheredWithTheWrongIndexIsCaught) {
  for (uint64_t seed : {1, 2, 3}) {
    const auto live = testing::check_broken_variant(
        ad::kDynamicsStep, [](const VariantContext& c) { return std::make_unique<ShiftedPhaseScale>(c); },
        SizeClass::Small, seed);
    EXPECT_EQ(live.status, Status::Fail) << "seed " << seed << ": " << live.reason;
  }
}

TEST(AdaptiveDump, AnIndependentNumpyImplementationAgrees) {
  const fs::path out = fresh_temp_path("adaptive-dump");
  const auto dumped = run_phasebench("dump --workload adaptive/dynamics_step --size small --seed 1 --out " + out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR +
                                            "/python/check_dynamics_step_dump.py " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb
