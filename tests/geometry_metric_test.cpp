// geometry/complex_metric and geometry/mamba_conjugate: the fp64 references agree with independent
// numpy implementations of the original functions (through `phasebench dump`); the executor ladders
// that the CUDA and Kokkos variants run (optimized/geometry/*_ladder.hpp) run here on the host,
// every phase against the oracle, with the launches and bytes each phase promises (mamba_conjugate:
// the seed's "one temporary allocation fewer", also through every CPU backend's own counters);
// and a variant with one wrong line is caught, the failure naming the output.

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <string>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "optimized/geometry/complex_metric_ladder.hpp"
#include "optimized/geometry/mamba_conjugate_ladder.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/check.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "tests/cuda/cuda_plan.hpp"
#include "tests/cuda/host_executor.hpp"

namespace pb {
namespace {

namespace fs = std::filesystem;
namespace cmw = pb::suites::geometry::complex_metric;
namespace mcw = pb::suites::geometry::mamba_conjugate;
namespace gk = pb::geometry_kernels;
using cuda_backend::testing::cuda_plan;
using cuda_backend::testing::HostExecutor;
using cuda_backend::testing::registered_workload;

void expect_numpy_agrees(const std::string& workload, const std::string& script) {
  const fs::path out = testing::fresh_temp_path("geometry-dump");
  const auto dumped = testing::run_phasebench("dump --workload " + workload + " --size small --seed 5 --out " + out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR + "/python/" + script +
                                            " " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

TEST(GeometryMetricDump, ComplexMetricAgreesWithNumpy) {
  expect_numpy_agrees(cmw::kComplexMetric, "check_complex_metric_dump.py");
}

TEST(GeometryMetricDump, MambaConjugateAgreesWithNumpy) {
  expect_numpy_agrees(mcw::kMambaConjugate, "check_mamba_conjugate_dump.py");
}

/// Runs `Ladder` on a HostExecutor at the plan of `phase` (device "cuda"), checks it against the
/// oracle with the workload's tolerances, and returns the executor's counters of one run.
template <template <typename> class Ladder>
HostExecutor run_ladder(const std::string& workload_name, const std::string& phase, SizeClass size, bool reverse) {
  const Workload& workload = registered_workload(workload_name);
  const ArrayMap inputs = workload.make_inputs(size, 7);
  HostExecutor exec;
  exec.reverse = reverse;
  Ladder<HostExecutor> ladder(exec, inputs, cuda_plan(workload, phase));
  exec.reset_counters();
  ladder.run();
  const CheckResult check = check_outputs(ladder.outputs(), workload.reference_fp64(inputs), workload.outputs());
  EXPECT_EQ(check.status, Status::Ok) << workload_name << " " << phase << (reverse ? " reversed: " : ": ") << check.reason;
  return exec;
}

TEST(GeometryMetricLadders, EveryComplexMetricPhaseMatchesTheOracleInAnyThreadOrder) {
  const int64_t items = cmw::metric_shape(SizeClass::Small).items(), plane = 64, matrix = 16;
  for (bool reverse : {false, true}) {
    const HostExecutor baseline = run_ladder<gk::ComplexMetricLadder>(cmw::kComplexMetric, cmw::kBaseline, SizeClass::Small, reverse);
    EXPECT_EQ(baseline.launches, 2 * 2 * plane);  // per output and (m, n): pair matrix + contraction
    EXPECT_EQ(baseline.bytes_allocated, 4 * (2 * items * plane + 2 * plane * matrix));
    const HostExecutor batched = run_ladder<gk::ComplexMetricLadder>(cmw::kComplexMetric, cmw::kBatchedContraction, SizeClass::Small, reverse);
    EXPECT_EQ(batched.launches, 3);
    const HostExecutor shared = run_ladder<gk::ComplexMetricLadder>(cmw::kComplexMetric, cmw::kSharedPairs, SizeClass::Small, reverse);
    EXPECT_EQ(shared.launches, 3);
    for (const HostExecutor* exec : {&baseline, &batched, &shared}) EXPECT_EQ(exec->host_syncs, 0);
  }
}

TEST(GeometryMetricLadders, TheSharedPairsMatchTheOracleAtTheDefaultSize) {
  run_ladder<gk::ComplexMetricLadder>(cmw::kComplexMetric, cmw::kSharedPairs, SizeClass::Default, false);
}

TEST(GeometryMetricLadders, MambaConjugateAllocatesOneTemporaryFewerAsTheSeedClaims) {
  const int64_t values = mcw::state_shape(SizeClass::Small).values(), tail = values / 8 * 7;
  for (bool reverse : {false, true}) {
    const HostExecutor baseline = run_ladder<gk::MambaConjugateLadder>(mcw::kMambaConjugate, mcw::kCloneAssign, SizeClass::Small, reverse);
    const HostExecutor in_place = run_ladder<gk::MambaConjugateLadder>(mcw::kMambaConjugate, mcw::kInPlaceNeg, SizeClass::Small, reverse);
    const HostExecutor single = run_ladder<gk::MambaConjugateLadder>(mcw::kMambaConjugate, mcw::kSinglePass, SizeClass::Small, reverse);
    EXPECT_EQ(baseline.bytes_allocated, 2 * 4 * (values + tail));  // clone + the [B,L,7] temporary, r and i
    EXPECT_EQ(in_place.bytes_allocated, 2 * 4 * values);          // the clone only
    EXPECT_EQ(single.bytes_allocated, 2 * 4 * values);            // the result only
    EXPECT_EQ(baseline.launches + baseline.copies, 2 * 3);
    EXPECT_EQ(in_place.launches + in_place.copies, 2 * 2);
    EXPECT_EQ(single.launches + single.copies, 2 * 1);
  }
}

/// The counters of one iteration of every case of `workload` that runs here, by backend and phase.
std::map<std::string, std::map<std::string, counters::Totals>> counted_cases(const std::string& workload) {
  Selection selection;
  selection.filter = "^" + workload + "/";
  std::map<std::string, std::map<std::string, counters::Totals>> counts;
  const std::vector<Case> cases = plan_cases(selection, SizeClass::Small);
  init_backends(cases, 1);  // once per process; the test environment finalizes them
  for (const Case& c : cases) {
    if (!c.device_unavailable_reason.empty() || c.capability_gap) continue;
    const detail::Problem problem = detail::make_problem(*c.workload, c.size, 5);
    detail::LiveCase live(c);
    detail::prepare(live, problem, 1);
    if (!live.variant) continue;  // SKIPPED or UNSUPPORTED here
    detail::check(live, problem);
    EXPECT_EQ(live.status, Status::Ok) << c.row_name() << ": " << live.reason;
    detail::count(live);
    counts[c.backend->name()][c.phase_name] = live.counts;
  }
  return counts;
}

TEST(GeometryMetricCounters, EveryBackendShowsTheTemporaryTheSeedRemoves) {
  const int64_t values = mcw::state_shape(SizeClass::Small).values(), tail = values / 8 * 7;
  const auto counts = counted_cases(mcw::kMambaConjugate);
  for (const std::string backend : {"torch", "onednn", "kokkos"}) {
    ASSERT_TRUE(counts.count(backend)) << backend << " did not run";
    const auto& phases = counts.at(backend);
    const int64_t baseline = phases.at(mcw::kCloneAssign).bytes_allocated;
    const int64_t in_place = phases.at(mcw::kInPlaceNeg).bytes_allocated;
    // The two [B,L,7] temporaries of `-c[..., 1:]`, and nothing else, separate the two phases
    // (bookkeeping of a few hundred bytes aside).
    EXPECT_GE(baseline - in_place, 2 * 4 * tail) << backend;
    EXPECT_LT(baseline - in_place, 2 * 4 * tail + 1024) << backend;
    EXPECT_GE(in_place, 2 * 4 * values) << backend;  // the clones
    for (const auto& [phase, totals] : phases) EXPECT_EQ(totals.host_syncs, 0) << backend << " " << phase;
  }
}

TEST(GeometryMetricCounters, ComplexMetricNeedsNoHostSyncAnywhere) {
  for (const auto& [backend, phases] : counted_cases(cmw::kComplexMetric))
    for (const auto& [phase, totals] : phases) EXPECT_EQ(totals.host_syncs, 0) << backend << " " << phase;
}

// ---- deliberately broken variants: one wrong line each -----------------------------------------

/// complex_metric's shared-pairs body with Theta's mirror written with Phi's sign.
struct ThetaMirroredWithPhisSign {
  gk::SharedPairs body;
  PB_HOST_DEVICE void operator()(int64_t item) const {
    body(item);
    float* theta = body.theta + item * gk::kPlane;
    for (int m = 0; m < gk::kD; ++m)
      for (int n = 0; n < m; ++n) theta[m * gk::kD + n] = -theta[n * gk::kD + m];  // the wrong line
  }
};

/// mamba_conjugate with the slice starting at component 0: conj negates everything.
struct NegatesComponentZero {
  const float* x;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t index) const { out[index] = -x[index]; }  // the wrong line
};

class BrokenVariant final : public Variant {
 public:
  explicit BrokenVariant(std::string workload) : workload_(std::move(workload)) {}
  void setup(const ArrayMap& inputs) override { inputs_ = inputs; }
  void poison_outputs() override { outputs_.clear(); }
  void run() override {
    if (workload_ == cmw::kComplexMetric) {
      const auto gamma = require(inputs_, cmw::kGamma).to_floats(), psi = require(inputs_, cmw::kPsi).to_floats();
      const int64_t items = require(inputs_, cmw::kPsi).numel() / gk::kS;
      std::vector<float> matrices(2 * gk::kPlane * gk::kMatrixSize), weights(2 * gk::kPlane * gk::kPairCount);
      std::vector<float> phi(items * gk::kPlane), theta(phi.size());
      for (int64_t i = 0; i < int64_t(matrices.size()); ++i) gk::AllPairMatrices{gamma.data(), matrices.data()}(i);
      for (int64_t i = 0; i < int64_t(weights.size()); ++i) gk::FoldedPairWeights{matrices.data(), weights.data()}(i);
      for (int64_t i = 0; i < items; ++i) ThetaMirroredWithPhisSign{{psi.data(), weights.data(), phi.data(), theta.data()}}(i);
      const std::vector<int64_t> shape{require(inputs_, cmw::kPsi).shape[0], require(inputs_, cmw::kPsi).shape[1], 8, 8};
      outputs_[cmw::kPhi] = HostArray::from_floats(shape, phi.data(), int64_t(phi.size()));
      outputs_[cmw::kTheta] = HostArray::from_floats(shape, theta.data(), int64_t(theta.size()));
      return;
    }
    for (const auto& [input, output] : {std::pair{mcw::kStateReal, mcw::kConjReal}, std::pair{mcw::kStateImag, mcw::kConjImag}}) {
      const HostArray& x = require(inputs_, input);
      const auto values = x.to_floats();
      std::vector<float> out(values.size());
      for (int64_t i = 0; i < x.numel(); ++i) NegatesComponentZero{values.data(), out.data()}(i);
      outputs_[output] = HostArray::from_floats(x.shape, out.data(), x.numel());
    }
  }
  ArrayMap outputs() override { return outputs_; }

 private:
  std::string workload_;
  ArrayMap inputs_, outputs_;
};

detail::LiveCase checked_broken(const std::string& workload) {
  return testing::check_broken_variant(
      workload, [workload](const VariantContext&) { return std::make_unique<BrokenVariant>(workload); },
      SizeClass::Small, 3);
}

TEST(GeometryMetricBroken, ThetaMirroredWithTheWrongSignIsCaughtAndNamed) {
  const detail::LiveCase live = checked_broken(cmw::kComplexMetric);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find(cmw::kTheta), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

TEST(GeometryMetricBroken, NegatingComponentZeroIsCaughtAndNamed) {
  const detail::LiveCase live = checked_broken(mcw::kMambaConjugate);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find(mcw::kConjReal), std::string::npos) << live.reason;
}

}  // namespace
}  // namespace pb
