// The CUDA kernel bodies of trainer2/lior_step (optimized/trainer2/lior_step-cuda.cuh), run on the
// host over the whole index space and compared with the naive reference.
//
// No GPU is needed, nor nvcc: the bodies are PB_HOST_DEVICE functions that compile as plain C++.
// The elementwise kernels are one body call per row; the reductions are emulated as the kernels
// run them (kReductionThreads strided partial sums, then the pairwise tree of block_sum in
// lior_step-cuda.cu), so the host sees the device's summation order. What is not tested here is
// the launch configuration itself; that needs a device (README.md, "Backends on this project's
// machines").

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "optimized/trainer2/lior_step-cuda.cuh"
#include "reference/trainer2/lior_step.hpp"

namespace {

namespace body = pb::cuda_backend::lior_step;
namespace ref = pb::reference::trainer2;

constexpr int kDim = ref::kCoordinateDim;
// The workload's tolerances (suites/trainer2/lior_step.cpp): per row and for the means.
constexpr double kRowTolerance = 1e-5;
constexpr double kMeanTolerance = 1e-4;

struct Inputs {
  int64_t rows = 0;
  std::vector<float> v, R, g;
};

// As the workload draws them (v ~ N(0,1), R and g ~ U(0.5, 1.5)), plus two rows that take the
// edge paths: an all-zero row (s = sqrt(eps)) and, when `negative_metric`, a metric with negative
// entries so that some quadratic forms are negative and clamped at zero.
Inputs make_inputs(int64_t rows, bool negative_metric, unsigned seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  Inputs in;
  in.rows = rows;
  in.v.resize(static_cast<size_t>(rows) * kDim);
  in.R.resize(rows);
  in.g.resize(kDim);
  for (float& x : in.v) x = normal(engine);
  for (float& x : in.R) x = uniform(engine);
  for (float& x : in.g) x = uniform(engine);
  if (negative_metric) in.g[1] = in.g[4] = in.g[6] = -2.f;
  if (rows > 1) std::fill(in.v.begin() + kDim, in.v.begin() + 2 * kDim, 0.f);
  return in;
}

std::vector<double> widen(const std::vector<float>& values) {
  return {values.begin(), values.end()};
}

struct Oracle {
  std::vector<double> s, dlior;
  ref::LiorStepMeans<double> means;
};

Oracle fp64_reference(const Inputs& in) {
  Oracle out;
  out.s.resize(in.rows);
  out.dlior.resize(in.rows);
  const auto v = widen(in.v), R = widen(in.R), g = widen(in.g);
  out.means = ref::lior_step<double>(v.data(), R.data(), g.data(), in.rows, kDim, out.s.data(),
                                     out.dlior.data());
  return out;
}

double rel_l2_error(const std::vector<float>& out, const std::vector<double>& expected) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff += (out[i] - expected[i]) * (out[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  return std::sqrt(diff) / std::sqrt(norm);
}

double rel_error(double out, double expected) {
  return std::abs(out - expected) / std::abs(expected);
}

std::vector<float> poisoned(int64_t rows) {
  return std::vector<float>(rows, std::numeric_limits<float>::quiet_NaN());
}

bool all_finite(const std::vector<float>& values) {
  for (float x : values) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

bool bitwise_equal(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// block_sum of lior_step-cuda.cu on the host: thread t's partial is partial_of(t); then each tree
// level, with threads visited forwards or backwards (a level must not depend on thread order).
template <typename Sum, typename PartialOf>
Sum emulate_block_sum(PartialOf partial_of, bool backwards = false) {
  const int threads = body::kReductionThreads;
  std::vector<Sum> partials(threads);
  for (int t = 0; t < threads; ++t) partials[t] = partial_of(t);
  for (int half = threads / 2; half > 0; half /= 2) {
    for (int i = 0; i < threads; ++i)
      body::tree_step(partials.data(), backwards ? threads - 1 - i : i, half);
  }
  return partials[0];
}

// mean_kernel: one mean of x.
float emulate_mean_kernel(const std::vector<float>& x, int64_t rows) {
  const float sum = emulate_block_sum<float>(
      [&](int t) { return body::strided_sum(x.data(), rows, t, body::kReductionThreads); });
  return body::mean_of(sum, rows);
}

// metric_means_kernel: {mean_dlior, mean_R, mean_s} in one pass.
std::vector<float> emulate_metric_means_kernel(const std::vector<float>& dlior,
                                               const std::vector<float>& R,
                                               const std::vector<float>& s, int64_t rows,
                                               bool backwards = false) {
  const body::MetricSums sums = emulate_block_sum<body::MetricSums>(
      [&](int t) {
        return body::strided_metric_sums(dlior.data(), R.data(), s.data(), rows, t,
                                         body::kReductionThreads);
      },
      backwards);
  std::vector<float> means(3);
  body::write_metric_means(sums, rows, means.data());
  return means;
}

// Row counts: the workload's small, default and large sizes (48, 34816, 49152) and counts around
// the reduction block (fewer rows than threads, exact and ragged multiples).
class LiorStepCudaBodies : public ::testing::TestWithParam<int64_t> {};

INSTANTIATE_TEST_SUITE_P(Rows, LiorStepCudaBodies,
                         ::testing::Values(1, 48, 255, 256, 257, 1000, 34816, 49152),
                         [](const auto& info) { return "rows_" + std::to_string(info.param); });

TEST_P(LiorStepCudaBodies, UnfusedKernelsMatchReference) {
  for (bool negative_metric : {false, true}) {
    const Inputs in = make_inputs(GetParam(), negative_metric, 11);
    const Oracle oracle = fp64_reference(in);
    std::vector<float> s_tmp = poisoned(in.rows), dlior = poisoned(in.rows), s = poisoned(in.rows);
    for (int64_t row = 0; row < in.rows; ++row)
      body::speed_row(row, in.v.data(), in.g.data(), s_tmp.data());
    for (int64_t row = 0; row < in.rows; ++row)
      body::dlior_row(row, in.R.data(), s_tmp.data(), dlior.data());
    for (int64_t row = 0; row < in.rows; ++row)
      body::speed_row(row, in.v.data(), in.g.data(), s.data());

    ASSERT_TRUE(all_finite(s) && all_finite(dlior)) << "a row was not written";
    EXPECT_LE(rel_l2_error(s, oracle.s), kRowTolerance) << "negative_metric=" << negative_metric;
    EXPECT_LE(rel_l2_error(dlior, oracle.dlior), kRowTolerance)
        << "negative_metric=" << negative_metric;
  }
}

TEST_P(LiorStepCudaBodies, FusedKernelMatchesUnfusedBitForBit) {
  const Inputs in = make_inputs(GetParam(), true, 12);
  std::vector<float> s = poisoned(in.rows), dlior = poisoned(in.rows);
  for (int64_t row = 0; row < in.rows; ++row) {
    body::fused_lior_row(row, in.v.data(), in.R.data(), in.g.data(), s.data(), dlior.data());
  }
  ASSERT_TRUE(all_finite(s) && all_finite(dlior)) << "a row was not written";
  std::vector<float> s_unfused(in.rows), dlior_unfused(in.rows);
  for (int64_t row = 0; row < in.rows; ++row) {
    body::speed_row(row, in.v.data(), in.g.data(), s_unfused.data());
    body::dlior_row(row, in.R.data(), s_unfused.data(), dlior_unfused.data());
  }
  for (int64_t row = 0; row < in.rows; ++row) {
    ASSERT_TRUE(bitwise_equal(s[row], s_unfused[row])) << "row " << row;
    ASSERT_TRUE(bitwise_equal(dlior[row], dlior_unfused[row])) << "row " << row;
  }
  const Oracle oracle = fp64_reference(in);
  EXPECT_LE(rel_l2_error(s, oracle.s), kRowTolerance);
  EXPECT_LE(rel_l2_error(dlior, oracle.dlior), kRowTolerance);
}

TEST_P(LiorStepCudaBodies, ReductionsMatchReferenceMeans) {
  const Inputs in = make_inputs(GetParam(), false, 13);
  const Oracle oracle = fp64_reference(in);
  std::vector<float> s(in.rows), dlior(in.rows);
  for (int64_t row = 0; row < in.rows; ++row) {
    body::fused_lior_row(row, in.v.data(), in.R.data(), in.g.data(), s.data(), dlior.data());
  }
  // Without batched_metrics: one mean_kernel per metric.
  const float mean_dlior = emulate_mean_kernel(dlior, in.rows);
  const float mean_R = emulate_mean_kernel(in.R, in.rows);
  const float mean_s = emulate_mean_kernel(s, in.rows);
  EXPECT_LE(rel_error(mean_dlior, oracle.means.mean_dlior), kMeanTolerance);
  EXPECT_LE(rel_error(mean_R, oracle.means.mean_R), kMeanTolerance);
  EXPECT_LE(rel_error(mean_s, oracle.means.mean_s), kMeanTolerance);

  // batched_metrics: one metric_means_kernel. It adds each metric in the same order as
  // mean_kernel, so batching the reads changes no bit of the means.
  for (bool backwards : {false, true}) {
    const std::vector<float> batched =
        emulate_metric_means_kernel(dlior, in.R, s, in.rows, backwards);
    EXPECT_TRUE(bitwise_equal(batched[0], mean_dlior)) << "backwards=" << backwards;
    EXPECT_TRUE(bitwise_equal(batched[1], mean_R)) << "backwards=" << backwards;
    EXPECT_TRUE(bitwise_equal(batched[2], mean_s)) << "backwards=" << backwards;
  }
}

TEST(LiorStepCudaBodiesEdges, ZeroRowGivesSqrtEps) {
  const std::vector<float> v(kDim, 0.f), g(kDim, 1.f);
  EXPECT_FLOAT_EQ(body::lior_speed(v.data(), g.data(), 0),
                  std::sqrt(static_cast<float>(ref::kLiorEps)));
}

TEST(LiorStepCudaBodiesEdges, NegativeQuadraticFormIsClampedAtZero) {
  const std::vector<float> v(kDim, 1.f), g(kDim, -1.f);
  EXPECT_FLOAT_EQ(body::lior_speed(v.data(), g.data(), 0),
                  std::sqrt(static_cast<float>(ref::kLiorEps)));
}

}  // namespace
