// geometry/mamba_scan: the fp64 reference agrees with an independent numpy implementation of the
// original loop, the associative scan computes the sequential recurrence (fp64 to round-off; fp32
// within the budget, measured here), and a variant with one wrong line is caught.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "phasebench/check.hpp"
#include "tests/cuda/cuda_plan.hpp"
#include "tests/cuda/host_executor.hpp"
#include "optimized/geometry/mamba_scan_ladder.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/rng.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace geo = pb::suites::geometry::mamba_scan;
namespace ref = geo::ref;

template <typename A, typename B>
double relative_l2(const std::vector<A>& got, const std::vector<B>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - double(want[i])) * (double(got[i]) - double(want[i]));
    norm += double(want[i]) * double(want[i]);
  }
  return std::sqrt(diff / norm);
}

TEST(GeometryScanDump, AnIndependentNumpyLoopAgrees) {
  const fs::path out = testing::fresh_temp_path("geometry-scan-dump");
  const auto dumped = testing::run_phasebench("dump --workload " + geo::kMambaScan + " --size small --seed 5 --out " + out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR +
                                            "/python/check_mamba_scan_dump.py " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

// Seeded w rows and the workload's trinor parameters at `size`.
struct Recurrence {
  int64_t batch, length;
  std::vector<double> w, theta, omega, sigma;
};

Recurrence recurrence(SizeClass size, uint64_t seed) {
  const auto workload = find_workload(geo::kMambaScan);
  const ArrayMap in = workload->make_inputs(size, seed);
  const geo::Dims d = geo::dims(size);
  Recurrence rec{d.batch, d.length, normal_array(seed, "test/w", {d.rows(), ref::kWide}, 0, 1).values,
                 require(in, geo::kTheta).values, require(in, geo::kOmega).values, require(in, geo::kSigma).values};
  return rec;
}

template <typename Scalar>
std::vector<Scalar> states(const Recurrence& rec, bool scan) {
  const std::vector<Scalar> w(rec.w.begin(), rec.w.end()), th(rec.theta.begin(), rec.theta.end()),
      om(rec.omega.begin(), rec.omega.end()), sg(rec.sigma.begin(), rec.sigma.end());
  const auto tr = ref::make_trinor(th.data(), om.data(), sg.data());
  std::vector<Scalar> s(w.size());
  if (scan) {
    ref::scanned_states(tr, rec.batch, rec.length, geo::scan_chunk(rec.length), w.data(), s.data());
  } else {
    ref::sequential_states(tr, rec.batch, rec.length, w.data(), s.data());
  }
  return s;
}

TEST(GeometryScan, TheScanComputesTheSequentialRecurrenceInFp64) {
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    const Recurrence rec = recurrence(size, 1);
    EXPECT_LT(relative_l2(states<double>(rec, true), states<double>(rec, false)), 1e-12);
  }
}

// The start state. The original's forward(x) starts from state = None, i.e. zeros, and its
// recurrence is multiplicative (the new state is the evolved state times w): from zeros the state
// stays exactly 0 at every step, z = mix(state) = 0, and y_t = sigmoid(gate) up(0) never depends on
// the recurrence. phasebench starts from r = (1, 0, ..., 0), i = 0 (the reference's states), where
// the state is not zero and the output depends on it (docs/geometry.md, mamba_scan).
TEST(GeometryScanStart, TheOriginalsZeroStartStaysZeroAtEveryStepSoTheReferenceStartsFromOne) {
  for (uint64_t seed : {1, 2, 3}) {
    const Recurrence rec = recurrence(SizeClass::Default, seed);
    const std::vector<double> th = rec.theta, om = rec.omega, sg = rec.sigma;
    const auto tr = ref::make_trinor(th.data(), om.data(), sg.data());
    int64_t nonzero = 0;
    for (int64_t b = 0; b < rec.batch; ++b) {
      double zero_start[ref::kWide] = {};
      for (int64_t t = 0; t < rec.length; ++t) {
        ref::step(tr, rec.w.data() + (b * rec.length + t) * ref::kWide, zero_start);
        double z[ref::kState];
        ref::mix(zero_start, z);
        for (int k = 0; k < ref::kWide; ++k) nonzero += zero_start[k] != 0.0;
        for (int k = 0; k < ref::kState; ++k) nonzero += z[k] != 0.0;
      }
    }
    EXPECT_EQ(nonzero, 0) << "seed " << seed << ": the zero start left zero";
    // The reference's start: the components the step reaches (geo::kLive; the other 12 stay 0 by
    // the coupling's structure) are nonzero almost everywhere, so the output depends on them.
    const std::vector<double> from_one = states<double>(rec, false);
    int64_t live_zeros = 0, live = 0;
    for (size_t row = 0; row * ref::kWide < from_one.size(); ++row)
      for (int c : geo::kLive) {
        live_zeros += from_one[row * ref::kWide + c] == 0.0;
        ++live;
      }
    EXPECT_LT(live_zeros * 10, live) << "seed " << seed;
  }
}

// The budget's reason: fp32 sequential and fp32 scan, each against the fp64 recurrence, at the
// default L = 256 (printed; docs/geometry-scan.md quotes it).
TEST(GeometryScan, Fp32ScanErrorIsOfTheOrderOfTheSequentialOne) {
  for (uint64_t seed : {1, 2, 3}) {
    const Recurrence rec = recurrence(SizeClass::Default, seed);
    const std::vector<double> exact = states<double>(rec, false);
    const double sequential = relative_l2(states<float>(rec, false), exact);
    const double scan = relative_l2(states<float>(rec, true), exact);
    std::cout << "seed " << seed << ": fp32 states, relative L2 vs fp64: sequential " << sequential << ", scan " << scan
              << "\n";
    EXPECT_LT(sequential, 2e-4);
    EXPECT_LT(scan, 2e-4);
  }
}

// ---- the executor ladder (Kokkos and CUDA) on the host ------------------------------------------

// Every phase of the ladder the CUDA variant runs, on the host in both thread orders: it matches
// the oracle, reads nothing back, and launches what the catalog says.
TEST(GeometryScanLadder, EveryPhaseMatchesTheOracleInAnyThreadOrder) {
  using cuda_backend::testing::HostExecutor;
  const Workload& workload = cuda_backend::testing::registered_workload(geo::kMambaScan);
  const ArrayMap inputs = workload.make_inputs(SizeClass::Small, 7);
  const ArrayMap oracle = workload.reference_fp64(inputs);
  const int64_t L = geo::dims(SizeClass::Small).length;
  const std::map<std::string, int64_t> launches = {
      {geo::kSequential, 1 + L * 9 + 2}, {geo::kHoisted, 6 + 1 + 1 + 2 + 2}, {geo::kParallelScan, 6 + 3 + 1 + 2 + 2}};
  for (bool reverse : {false, true})
    for (const auto& [phase, expected_launches] : launches) {
      HostExecutor exec;
      exec.reverse = reverse;
      geometry_kernels::MambaScanLadder<HostExecutor> ladder(exec, inputs, cuda_backend::testing::cuda_plan(workload, phase));
      exec.reset_counters();
      ladder.run();
      EXPECT_EQ(exec.launches, expected_launches) << phase;
      EXPECT_EQ(exec.host_syncs, 0) << phase;
      const CheckResult check = check_outputs(ladder.outputs(), oracle, workload.outputs());
      EXPECT_EQ(check.status, Status::Ok) << phase << (reverse ? " reversed: " : ": ") << check.reason;
    }
}

// ---- a variant with one wrong line is caught ----------------------------------------------------

enum class Bug { None, ComposedInTheWrongOrder };

// reference<float> with the scan's recurrence; Bug::ComposedInTheWrongOrder composes the chunk's
// prefix maps as P_(j-1) M_j instead of M_j P_(j-1), the classic associative-scan mistake.
class BrokenScan final : public Variant {
 public:
  explicit BrokenScan(Bug bug) : bug_(bug) {}
  void setup(const ArrayMap& in) override {
    d_ = geo::dims_of(in);
    params_ = std::make_unique<geo::ParamStore<float>>(in);
    x_ = require(in, geo::kInput).to_floats();
    out_.resize(x_.size()), r_.resize(d_.batch * ref::kState), i_.resize(r_.size());
  }
  void poison_outputs() override {
    for (std::vector<float>* v : {&out_, &r_, &i_}) v->assign(v->size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    ref::forward<float>(d_.batch, d_.length, d_.model, d_.inner, params_->params, x_.data(), out_.data(), r_.data(),
                        i_.data(), [this](const ref::Trinor<float>& tr, const float* w, float* s) { scan(tr, w, s); });
  }
  ArrayMap outputs() override {
    return {{geo::kOutput, HostArray::from_floats({d_.batch, d_.length, d_.model}, out_.data(), int64_t(out_.size()))},
            {geo::kFinalState, geo::final_state_array(d_.batch, r_.data(), i_.data())}};
  }

 private:
  void scan(const ref::Trinor<float>& tr, const float* w, float* states) const {
    ref::scanned_states(tr, d_.batch, d_.length, geo::scan_chunk(d_.length), w, states,
                        [this](const float* map, const float* prefix, float* next) {
                          if (bug_ == Bug::ComposedInTheWrongOrder) std::swap(map, prefix);  // the wrong line
                          ref::compose(map, prefix, next);
                        });
  }

  Bug bug_;
  geo::Dims d_;
  std::unique_ptr<geo::ParamStore<float>> params_;
  std::vector<float> x_, out_, r_, i_;
};

detail::LiveCase checked(Bug bug) {
  return testing::check_broken_variant(
      geo::kMambaScan, [bug](const VariantContext&) { return std::make_unique<BrokenScan>(bug); }, SizeClass::Small, 3);
}

TEST(GeometryScanCaught, TheUnbrokenControlPasses) { EXPECT_EQ(checked(Bug::None).status, Status::Ok); }

TEST(GeometryScanCaught, MapsComposedInTheWrongOrderAreCaughtAndTheOutputNamed) {
  const detail::LiveCase live = checked(Bug::ComposedInTheWrongOrder);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("output "), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

}  // namespace
}  // namespace pb

namespace pb {
namespace {

const Workload& geo_workload() {
  static const auto workload = find_workload(geo::kMambaScan);
  return *workload;
}

// The large size is declared out of fp32's range by the definition (the state is never
// normalized): every case, the serial reference included, is UNSUPPORTED with the measurement,
// and verify answers at once instead of paying for an fp64 oracle nobody reads.
TEST(GeometryScanLarge, EveryCaseIsUnsupportedWithTheMeasuredReasonAndNoOracleIsMade) {
  VerifyOptions options;
  options.selection.filter = "geometry/mamba_scan/";
  options.sizes = {SizeClass::Large};
  options.seeds = 1;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<VerifyLine> lines = execute_verify(options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(lines.empty());
  std::set<std::string> backends;
  for (const VerifyLine& line : lines) {
    EXPECT_EQ(line.status, Status::Unsupported) << line.row_name;
    EXPECT_NE(line.detail.find("fp32's range"), std::string::npos) << line.detail;
    backends.insert(line.row_name.substr(0, line.row_name.find("/", line.row_name.find("large/") + 6)));
  }
  EXPECT_GE(backends.size(), 2u);  // the reference and at least one optimized backend
  // The fp64 oracle at this size takes minutes (4 matrix products of 8192 rows, naive loops).
  EXPECT_LT(seconds, 20.0) << "the oracle of an unsupported size was computed";
  // The other sizes run.
  EXPECT_FALSE(geo_workload().size_unsupported_reason(SizeClass::Default).has_value());
}

// At the small size the two sigmas that reach the output straddle the clamp [0.5, 2], so a wrong
// clamp bound changes the output where verify runs most.
TEST(GeometryScanInputs, TheSmallSizeExercisesBothEndsOfTheSigmaClamp) {
  for (uint64_t seed : {1, 2, 3}) {
    const ArrayMap in = geo_workload().make_inputs(SizeClass::Small, seed);
    const std::vector<double>& sigma = require(in, geo::kSigma).values;
    EXPECT_LT(sigma[0], 0.5) << "seed " << seed;
    EXPECT_GT(sigma[4], 2.0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace pb
