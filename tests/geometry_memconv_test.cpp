// geometry/lior_memory_conv: the fp64 reference agrees with an independent numpy implementation
// of the original, the inputs are never degenerate, the CUDA/Kokkos bodies compute the reference
// on the host (direct and FFT ladders), the seed's claim (no host sync once the taps
// are built on the device) holds on every backend that runs here, and a variant with one wrong
// line is caught.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "broken_variant.hpp"
#include "case_runner.hpp"
#include "optimized/geometry/lior_memory_conv-bodies.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;

TEST(GeometryMemconvDump, AnIndependentNumpyImplementationAgrees) {
  const fs::path out = testing::fresh_temp_path("geometry-memconv-dump");
  const auto dumped = testing::run_phasebench("dump --workload " + conv::kWorkload + " --size small --seed 5 --out " +
                                              out.string());
  ASSERT_EQ(dumped.exit_code, 0) << dumped.output;
  const auto checked = testing::run_command(std::string("/usr/bin/python3 ") + PHASEBENCH_TESTS_DIR +
                                            "/python/check_lior_memory_conv_dump.py " + out.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("agree"), std::string::npos) << checked.output;
  fs::remove_all(out);
}

// The memory term must matter: |out - w0 x| is a sizeable part of |out| at every size the tests
// build, and the taps are the definition's (positive sum, k_0 the largest).
TEST(GeometryMemconvInputs, TheMemoryTermIsNeverDegenerate) {
  const auto workload = find_workload(conv::kWorkload);
  for (SizeClass size : {SizeClass::Small, SizeClass::Default}) {
    const ArrayMap in = workload->make_inputs(size, 1);
    const ArrayMap out = workload->reference_fp64(in);
    const HostArray& x = in.at(conv::kInput);
    const HostArray& y = out.at(conv::kOutput);
    double memory = 0, total = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      memory += std::pow(y.values[i] - conv::kernel_parameter(ref::kW0) * x.values[i], 2);
      total += y.values[i] * y.values[i];
    }
    EXPECT_GT(memory / total, 0.05) << to_string(size);
  }
  std::vector<double> p(ref::kParams), k(16);
  for (int i = 0; i < ref::kParams; ++i) p[i] = conv::kernel_parameter(i);
  ref::taps<double>(p.data(), 16, k.data());
  EXPECT_EQ(std::max_element(k.begin(), k.end()) - k.begin(), 0);
}

// ---- the CUDA and Kokkos bodies, run on the host over the whole index space --------------------

namespace body = pb::optimized::geometry::lior_memory_conv;

struct SmallCase {
  SmallCase() : in(find_workload(conv::kWorkload)->make_inputs(SizeClass::Small, 2)) {
    shape = conv::conv_shape(SizeClass::Small);
    x = in.at(conv::kInput).to_floats();
    p = in.at(conv::kKernelParams).to_floats();
    expected.assign(x.size(), 0.f);
    ref::lior_memory_conv<float>(p.data(), x.data(), shape.batch, shape.length, shape.channels, expected.data());
  }
  ArrayMap in;
  conv::ConvShape shape{};
  std::vector<float> x, p, expected;
};

// device_taps + direct: the taps bodies (the sum tail first, as the kernels reduce) and the row body.
TEST(GeometryMemconvBodies, TheDirectLadderComputesTheReference) {
  const SmallCase c;
  const int64_t n = c.shape.length;
  std::vector<float> taps(n), out(c.x.size());
  for (int64_t t = 0; t < n; ++t) body::raw_tap_body(t, c.p.data(), taps.data());
  float sum = 0;
  for (int64_t t = n - 1; t >= 0; --t) sum += taps[t];
  for (int64_t t = 0; t < n; ++t) body::normalize_tap_body(t, &sum, taps.data());
  for (int64_t row = 0; row < c.shape.batch * n; ++row)
    body::direct_body(row, taps.data(), c.x.data(), n, c.shape.channels, c.p[ref::kW0], out.data());
  EXPECT_EQ(out, c.expected);
}

// fft_conv: the pad, pointwise and blend bodies around a naive real DFT of length L = 2N.
TEST(GeometryMemconvBodies, TheFftLadderComputesTheReference) {
  const SmallCase c;
  const int64_t n = c.shape.length, C = c.shape.channels, L = c.shape.fft_length(), bins = L / 2 + 1;
  const int64_t lines = c.shape.batch * C;
  std::vector<float> taps(n);
  ref::taps<float>(c.p.data(), n, taps.data());
  std::vector<float> xpad(lines * L, 0.f), kpad(L, 0.f), spec(2 * lines * bins), kspec(2 * bins), ypad(lines * L);
  for (int64_t i = 0; i < int64_t(c.x.size()); ++i) body::pad_body(i, c.x.data(), n, C, L, xpad.data());
  std::copy(taps.begin(), taps.end(), kpad.begin());
  const double pi = std::acos(-1.0);
  const auto rdft = [&](const float* line, float* out) {  // out: bins (re, im) pairs
    for (int64_t f = 0; f < bins; ++f) {
      double re = 0, im = 0;
      for (int64_t t = 0; t < L; ++t) {
        re += line[t] * std::cos(2 * pi * f * t / L);
        im -= line[t] * std::sin(2 * pi * f * t / L);
      }
      out[2 * f] = float(re);
      out[2 * f + 1] = float(im);
    }
  };
  rdft(kpad.data(), kspec.data());
  for (int64_t line = 0; line < lines; ++line) rdft(xpad.data() + line * L, spec.data() + 2 * line * bins);
  for (int64_t i = 0; i < lines * bins; ++i) body::pointwise_body(i, kspec.data(), bins, 1.f / float(L), spec.data());
  for (int64_t line = 0; line < lines; ++line)  // unnormalized inverse (the 1/L is in pointwise)
    for (int64_t t = 0; t < L; ++t) {
      double v = 0;
      for (int64_t f = 0; f < bins; ++f) {
        const double weight = (f == 0 || 2 * f == L) ? 1 : 2;
        const float* z = spec.data() + 2 * (line * bins + f);
        v += weight * (z[0] * std::cos(2 * pi * f * t / L) - z[1] * std::sin(2 * pi * f * t / L));
      }
      ypad[line * L + t] = float(v);
    }
  std::vector<float> out(c.x.size());
  for (int64_t i = 0; i < int64_t(out.size()); ++i)
    body::blend_body(i, c.x.data(), ypad.data(), n, C, L, c.p[ref::kW0], out.data());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], c.expected[i], 1e-5) << i;
}

// ---- host syncs: the original's forward (phase 0) has none; only the host_taps extra reads ------

TEST(GeometryMemconvSyncs, OnlyTheHostTapsExtraReadsTheWeights) {
  const auto out = testing::fresh_temp_path("geometry-memconv-syncs");
  const auto result = testing::run_phasebench("run --quick --reps 1 --size small --filter 'geometry/lior_memory_conv/' --out " +
                                              out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  int checked = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok || row.backend == kReferenceBackend) continue;
    EXPECT_EQ(row.host_syncs_per_iter, row.phase == conv::kHostTaps ? 1 : 0) << row.backend << "/" << row.phase;
    ++checked;
  }
  EXPECT_GE(checked, 5);  // torch 3, kokkos 3 (2 without FFTW), onednn 1
  fs::remove_all(out);
}

// ---- a variant with one wrong line is caught ----------------------------------------------------

enum class Bug { None, TapOneLagLate, LastSequenceUnwritten };

// reference<float> with one thing wrong, selected by `Bug`.
class BrokenMemoryConv final : public Variant {
 public:
  explicit BrokenMemoryConv(Bug bug) : bug_(bug) {}
  void setup(const ArrayMap& in) override {
    shape_ = in.at(conv::kInput).shape;
    x_ = in.at(conv::kInput).to_floats();
    p_ = in.at(conv::kKernelParams).to_floats();
    out_.assign(x_.size(), 0.f);
  }
  void poison_outputs() override { out_.assign(out_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override {
    const int64_t B = shape_[0], N = shape_[1], C = shape_[2];
    std::vector<float> k(static_cast<size_t>(N) + 1, 0.f);
    ref::taps<float>(p_.data(), N, k.data() + (bug_ == Bug::TapOneLagLate ? 1 : 0));  // the wrong line
    for (int64_t b = 0; b < B - (bug_ == Bug::LastSequenceUnwritten ? 1 : 0); ++b)
      for (int64_t t = 0; t < N; ++t)
        ref::direct_row(k.data(), x_.data() + b * N * C, t, C, p_[ref::kW0], out_.data() + (b * N + t) * C);
  }
  ArrayMap outputs() override { return {{conv::kOutput, HostArray::from_floats(shape_, out_.data(), int64_t(out_.size()))}}; }

 private:
  Bug bug_;
  std::vector<int64_t> shape_;
  std::vector<float> x_, p_, out_;
};

detail::LiveCase checked(Bug bug) {
  return testing::check_broken_variant(
      conv::kWorkload, [bug](const VariantContext&) { return std::make_unique<BrokenMemoryConv>(bug); },
      SizeClass::Small, 3);
}

TEST(GeometryMemconvCaught, TheUnbrokenControlPasses) { EXPECT_EQ(checked(Bug::None).status, Status::Ok); }

TEST(GeometryMemconvCaught, OneWrongLineIsCaughtAndTheOutputNamed) {
  const detail::LiveCase live = checked(Bug::TapOneLagLate);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find(conv::kOutput), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

TEST(GeometryMemconvCaught, AnUnwrittenSequenceIsCaughtByThePoison) {
  const detail::LiveCase live = checked(Bug::LastSequenceUnwritten);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("NaN"), std::string::npos) << live.reason;
}

}  // namespace
}  // namespace pb
