// The CUDA ladder of spinlock/cnn_rollout (optimized/spinlock/cnn_rollout-cuda.hpp), run on the
// host by HostExecutor, with the cuBLAS GEMMs replaced by NaiveGemm: a column-major strided
// batched GEMM written here from cuBLAS's definition, which takes the very GemmShape the ladder
// hands to cublasGemmStridedBatchedEx (so a wrong m/n/k, leading dimension, stride or transpose
// gives a wrong convolution here too). Every phase of the catalog and every policy is checked
// step by step against the fp64 oracle its outputs name, with the workload's own budgets, on the
// plan the harness derives for the cuda device.
//
// No GPU and no nvcc needed. Also checked: the kernel bodies one by one (im2col, bf16 rounding,
// GroupNorm / InstanceNorm + GELU in both forms) against direct loops and the reference, that
// results do not depend on the order in which the threads of a launch run (a race on the GPU),
// and the launches, GEMMs and allocations each optimization promises. Not tested here: cuBLAS itself,
// the launch wrappers, streams and graph capture, which need a device.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "optimized/spinlock/cnn_rollout-cuda.hpp"
#include "phasebench/workload.hpp"
#include "tests/cuda/cuda_plan.hpp"
#include "tests/cuda/host_executor.hpp"

namespace {

using pb::ArrayMap;
using pb::SizeClass;
using pb::cuda_backend::Bf16;
using pb::cuda_backend::GemmShape;
using pb::cuda_backend::testing::cuda_plan;
using pb::cuda_backend::testing::HostExecutor;
using pb::cuda_backend::testing::phase_index;
using pb::cuda_backend::testing::registered_workload;
namespace cu = pb::cuda_backend::spinlock;
namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;

// ==== the host stand-in for cuBLAS ================================================================

float as_float(float v) { return v; }
float as_float(Bf16 v) { return pb::cuda_backend::from_bf16(v); }

/// cuBLAS's strided batched GEMM by its definition (column-major, alpha 1, beta 0, fp32
/// accumulation), rejecting the arguments cuBLAS rejects (CUBLAS_STATUS_INVALID_VALUE).
struct NaiveGemm {
  mutable int64_t fp32_calls = 0, bf16_calls = 0;

  template <typename Operand>
  void operator()(const GemmShape& s, const Operand* a, const Operand* b, float* c) const {
    ++(std::is_same_v<Operand, Bf16> ? bf16_calls : fp32_calls);
    const int a_rows = s.transpose_a ? s.k : s.m, b_rows = s.transpose_b ? s.n : s.k;
    if (s.m < 0 || s.n < 0 || s.k < 0 || s.batch < 1 || s.lda < std::max(1, a_rows) || s.ldb < std::max(1, b_rows) ||
        s.ldc < std::max(1, s.m))
      throw std::invalid_argument("cuBLAS would reject this GEMM (CUBLAS_STATUS_INVALID_VALUE)");
    for (int batch = 0; batch < s.batch; ++batch) {
      const Operand* A = a + batch * s.stride_a;
      const Operand* B = b + batch * s.stride_b;
      float* C = c + batch * s.stride_c;
      for (int j = 0; j < s.n; ++j)
        for (int i = 0; i < s.m; ++i) {
          float sum = 0.f;
          for (int l = 0; l < s.k; ++l) {
            const Operand a_il = s.transpose_a ? A[l + int64_t{i} * s.lda] : A[i + int64_t{l} * s.lda];
            const Operand b_lj = s.transpose_b ? B[j + int64_t{l} * s.ldb] : B[l + int64_t{j} * s.ldb];
            sum += as_float(a_il) * as_float(b_lj);
          }
          C[i + int64_t{j} * s.ldc] = sum;
        }
    }
  }
};

// ==== whole rollouts on the host ==================================================================

struct HostRun {
  std::vector<float> trajectory;
  int64_t launches = 0, bytes_allocated = 0, host_syncs = 0, fp32_gemms = 0, bf16_gemms = 0;
};

/// One rollout on the host executor, after a first one (so that the counters describe a run
/// that follows setup and a warm-up, as the harness counts).
HostRun run_on_host(const pb::Workload& w, const ArrayMap& inputs, const std::string& phase, bool reverse) {
  HostExecutor exec;
  exec.reverse = reverse;
  NaiveGemm gemm;
  cu::CnnRolloutLadder<HostExecutor, NaiveGemm> ladder(exec, gemm, inputs,
                                                       sp::architecture(SizeClass::Small, sp::policy_of(w)),
                                                       sp::policy_of(w), cuda_plan(w, phase));
  ladder.run();
  exec.reset_counters();
  gemm = NaiveGemm{};
  ladder.poison_outputs();
  ladder.run();
  HostRun result{{}, exec.launches - 1, exec.bytes_allocated, exec.host_syncs, gemm.fp32_calls, gemm.bf16_calls};  // minus the poison
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
  std::string phase;  // a catalog name
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.workload << "/" << c.phase; }

class CnnRolloutCudaLadder : public ::testing::TestWithParam<Case> {};

// Every output spec of the phase: the exact phases against the exact trajectory, mixed_precision
// against it with the bf16 budget, operator_opts (and the phases after it until exact_fast)
// against their own model's fp64 trajectory with the bf16 budget and against the exact one with
// the model-change bound.
TEST_P(CnnRolloutCudaLadder, EveryStepWithinBudgetOfTheFp64Reference) {
  const pb::Workload& w = registered_workload(GetParam().workload);
  const int steps = sp::architecture(SizeClass::Small, sp::policy_of(w)).steps;
  for (uint64_t seed : {1, 2}) {
    const ArrayMap inputs = w.make_inputs(SizeClass::Small, seed);
    const ArrayMap references = w.reference_fp64(inputs);
    const HostRun run = run_on_host(w, inputs, GetParam().phase, false);
    for (const pb::OutputSpec& spec : w.outputs_for(phase_index(w, GetParam().phase), SizeClass::Small)) {
      ASSERT_EQ(spec.step_budget.size(), static_cast<size_t>(steps));
      const std::vector<double>& ref = references.at(spec.reference_name()).values;
      for (int t = 0; t < steps; ++t)
        EXPECT_LE(step_error(run.trajectory, ref, steps, t), spec.step_budget[t])
            << "seed " << seed << " step " << t << " against " << spec.reference_name();
    }
  }
}

TEST_P(CnnRolloutCudaLadder, ResultDoesNotDependOnThreadOrder) {
  const pb::Workload& w = registered_workload(GetParam().workload);
  const ArrayMap inputs = w.make_inputs(SizeClass::Small, 3);
  const HostRun forward = run_on_host(w, inputs, GetParam().phase, false);
  const HostRun backward = run_on_host(w, inputs, GetParam().phase, true);
  ASSERT_EQ(forward.trajectory.size(), backward.trajectory.size());
  for (size_t i = 0; i < forward.trajectory.size(); ++i) ASSERT_EQ(forward.trajectory[i], backward.trajectory[i]) << i;
}

TEST_P(CnnRolloutCudaLadder, LaunchesGemmsAllocationsAndSyncsAsThePlanSays) {
  const pb::Workload& w = registered_workload(GetParam().workload);
  const pb::PhasePlan plan = cuda_plan(w, GetParam().phase);
  const HostRun run = run_on_host(w, w.make_inputs(SizeClass::Small, 4), GetParam().phase, false);
  const auto arch = sp::architecture(SizeClass::Small, sp::policy_of(w));
  const int64_t blocks = static_cast<int64_t>(arch.block_channels().size()), steps = arch.steps - 1;
  const int64_t calls = steps * (sp::batches_realizations(plan) ? 1 : arch.realizations);
  EXPECT_EQ(run.host_syncs, 0);
  // One GEMM per convolution and call, in bf16 exactly with mixed_precision.
  EXPECT_EQ(run.fp32_gemms + run.bf16_gemms, calls * blocks);
  EXPECT_EQ(run.bf16_gemms, sp::computes_in_bf16(plan) ? calls * blocks : 0);
  if (!plan.has(sp::kCompileFusion)) {  // per block im2col, statistics, normalize, GELU; then head, policy
    EXPECT_EQ(run.launches, 1 + calls * (4 * blocks + 2));
  } else {  // per block im2col and NormGelu; then head + policy
    EXPECT_EQ(run.launches, 1 + calls * (2 * blocks + 1));
  }
  if (sp::preallocates(plan)) {
    EXPECT_EQ(run.bytes_allocated, 0);  // the setup() buffers
  } else {
    EXPECT_GT(run.bytes_allocated, 0);
  }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (const char* name : {"spinlock/cnn_rollout_autoregressive", "spinlock/cnn_rollout_residual", "spinlock/cnn_rollout_convex"})
    for (const std::string& phase : sp::kAllPhases) all.push_back({name, phase});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Spinlock, CnnRolloutCudaLadder, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.workload.substr(info.param.workload.find('/') + 1) + "_" +
                                  info.param.phase;
                         });

// mixed_precision does round: it is not compile_fusion under another name.
TEST(CnnRolloutCudaLadder, MixedPrecisionDiffersFromFp32AtBf16Scale) {
  const pb::Workload& w = registered_workload("spinlock/cnn_rollout_convex");
  const ArrayMap inputs = w.make_inputs(SizeClass::Small, 5);
  const std::vector<double> ref = w.reference_fp64(inputs).at(sp::kTrajectory).values;
  const int steps = sp::architecture(SizeClass::Small, sp::policy_of(w)).steps;
  const double fp32 = step_error(run_on_host(w, inputs, sp::kCompileFusion, false).trajectory, ref, steps, 1);
  const double bf16 = step_error(run_on_host(w, inputs, sp::kMixedPrecision, false).trajectory, ref, steps, 1);
  EXPECT_LT(fp32, 1e-6);
  EXPECT_GT(bf16, 1e-5);  // bf16 operands: about 2^-9 relative per term
}

// At the small size every block has 4 channels, so GroupNorm(gcd(8, 4)) is InstanceNorm and the
// two GELU forms differ by less than the bf16 budget: operator_opts' model is checked here at
// the default architecture (16-64 channels: 8 groups of 2-8), for one step of one realization.
TEST(CnnRolloutCudaLadder, OneStepAtTheDefaultArchitectureComputesEachPhasesModel) {
  const pb::Workload& w = registered_workload("spinlock/cnn_rollout_convex");
  ref::Architecture arch = sp::architecture(SizeClass::Default, sp::policy_of(w));
  arch.steps = 2;
  arch.realizations = 1;
  const ArrayMap inputs = w.make_inputs(SizeClass::Default, 6);
  const auto weights = sp::load_weights<double>(inputs, arch);
  const std::vector<double>& x0 = inputs.at(sp::kInitialField).values;
  const auto error_of = [&](const std::string& phase, const ref::ModelOptions& model) {
    HostExecutor exec;
    NaiveGemm gemm;
    cu::CnnRolloutLadder<HostExecutor, NaiveGemm> ladder(exec, gemm, inputs, arch, ref::Policy::Convex,
                                                         cuda_plan(w, phase));
    ladder.run();
    const std::vector<double> expected = ref::rollout<double>(weights, x0.data(), arch, ref::Policy::Convex, model);
    return step_error(ladder.trajectory(), expected, arch.steps, 1);
  };
  const ref::ModelOptions exact{}, approximate = sp::model_of(cuda_plan(w, sp::kOperatorOpts));
  EXPECT_LT(error_of(sp::kExactFast, exact), 1e-5);
  EXPECT_LT(error_of(sp::kOperatorOpts, approximate), 1e-2);  // bf16 against its own model
  EXPECT_GT(error_of(sp::kOperatorOpts, exact), 0.1);         // and another operator than the exact one
}

// ==== kernel bodies ===============================================================================

// Shapes with C_in != C_out and H != W, planes larger than a block of threads, two samples: a
// swapped dimension or a missing sample offset cannot hide. The suite's kernel is 3 wide; 5 is
// checked too, so that the padding (kernel / 2) is not only right where 3 / 2 == 3 / 3.
constexpr int kIn = 5, kOut = 3, kHeight = 23, kWidth = 19, kSamples = 2;
constexpr int kKernels[] = {3, 5};
constexpr int64_t kPlane = int64_t{kHeight} * kWidth;

std::vector<float> draw(size_t count, unsigned seed, float low = -1.f, float high = 1.f) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(engine);
  return values;
}

template <typename Operand>
std::vector<Operand> im2col_on_host(const std::vector<float>& in, int kernel) {
  std::vector<Operand> columns(kSamples * kIn * kernel * kernel * kPlane);
  HostExecutor exec;
  exec.reverse = true;
  exec.for_each("im2col", static_cast<int64_t>(columns.size()),
                cu::Im2col<Operand>{in.data(), columns.data(), kIn, kHeight, kWidth, kernel});
  return columns;
}

TEST(CnnRolloutCudaBodies, Im2colMatchesADirectLoop) {
  const std::vector<float> in = draw(kSamples * kIn * kPlane, 11);
  for (const int kernel : kKernels) {
    const std::vector<float> columns = im2col_on_host<float>(in, kernel);
    const std::vector<Bf16> bf16_columns = im2col_on_host<Bf16>(in, kernel);
    size_t index = 0;
    for (int n = 0; n < kSamples; ++n)
      for (int c = 0; c < kIn; ++c)
        for (int dy = 0; dy < kernel; ++dy)
          for (int dx = 0; dx < kernel; ++dx)
            for (int y = 0; y < kHeight; ++y)
              for (int x = 0; x < kWidth; ++x, ++index) {
                const int iy = y + dy - kernel / 2, ix = x + dx - kernel / 2;
                const bool inside = iy >= 0 && iy < kHeight && ix >= 0 && ix < kWidth;
                const float expected = inside ? in[((n * kIn + c) * kHeight + iy) * kWidth + ix] : 0.f;
                ASSERT_EQ(columns[index], expected) << "kernel " << kernel << " n " << n << " c " << c << " dy " << dy
                                                    << " dx " << dx << " y " << y << " x " << x;
                ASSERT_EQ(bf16_columns[index], pb::cuda_backend::to_bf16(expected)) << index;
              }
    EXPECT_EQ(index, columns.size());
  }
}

// The parameters the ladder gives cuBLAS, run by NaiveGemm over the host im2col, are the
// reference convolution, sample by sample.
TEST(CnnRolloutCudaBodies, ConvolutionGemmParametersGiveTheReferenceConvolution) {
  const std::vector<float> in = draw(kSamples * kIn * kPlane, 12);
  for (const int kernel : kKernels) {
    const std::vector<float> weight = draw(kOut * kIn * kernel * kernel, 13);
    const GemmShape shape = cu::convolution_gemm(kIn, kOut, kernel, kPlane, kSamples);
    std::vector<float> out(kSamples * kOut * kPlane, std::numeric_limits<float>::quiet_NaN());
    NaiveGemm{}(shape, im2col_on_host<float>(in, kernel).data(), weight.data(), out.data());
    const std::vector<double> w(weight.begin(), weight.end());
    for (int n = 0; n < kSamples; ++n) {
      const std::vector<double> x(in.begin() + n * kIn * kPlane, in.begin() + (n + 1) * kIn * kPlane);
      std::vector<double> expected(kOut * kPlane);
      ref::convolve(x.data(), kIn, kHeight, kWidth, w.data(), kOut, kernel, expected.data());
      for (int64_t i = 0; i < kOut * kPlane; ++i)
        ASSERT_NEAR(out[n * kOut * kPlane + i], expected[i], 1e-5) << "kernel " << kernel << " sample " << n
                                                                   << " index " << i;
    }
  }
}

TEST(CnnRolloutCudaBodies, Bf16RoundsToNearestEven) {
  using pb::cuda_backend::from_bf16;
  using pb::cuda_backend::to_bf16;
  const auto bits_of = [](uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return to_bf16(v);
  };
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bits_of(0x3f808000u), 0x3f80);  // 1 + half an ulp: a tie, to the even 1
  EXPECT_EQ(bits_of(0x3f818000u), 0x3f82);  // 1 + 3 half ulps: a tie, to the even 1 + 2 ulps
  EXPECT_EQ(bits_of(0x3f808001u), 0x3f81);  // just above the tie: up
  EXPECT_EQ(bits_of(0x3f807fffu), 0x3f80);  // just below: down
  EXPECT_EQ(bits_of(0xbf808001u), 0xbf81);  // the sign is kept
  EXPECT_EQ(bits_of(0x7f7fffffu), 0x7f80);  // past the largest bf16: infinity
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(from_bf16(bits_of(0x7f800001u))));  // a NaN whose payload would round to inf
  // Any value: the nearest of its two bf16 neighbours (truncated and truncated + 1 ulp).
  std::mt19937 engine(17);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t bits = engine() & 0x7f7fffffu;  // finite
    if ((bits >> 16) == 0x7f7fu) continue;          // rounds to infinity or the largest bf16: above
    float v;
    std::memcpy(&v, &bits, sizeof v);
    const double down = from_bf16(static_cast<Bf16>(bits >> 16)), up = from_bf16(static_cast<Bf16>((bits >> 16) + 1));
    const double rounded = from_bf16(to_bf16(v)), best = std::abs(v - down) <= std::abs(up - v) ? down : up;
    if (std::abs(v - down) == std::abs(up - v)) continue;  // the ties are checked above
    ASSERT_EQ(rounded, best) << std::hex << bits;
  }
}

TEST(CnnRolloutCudaBodies, GeluBothFormsMatchTheReference) {
  for (float v = -6.f; v <= 6.f; v += 0.01f) {
    EXPECT_NEAR(cu::gelu(v, false), ref::gelu(double(v), false), 1e-6) << v;
    EXPECT_NEAR(cu::gelu(v, true), ref::gelu(double(v), true), 1e-6) << v;
  }
  EXPECT_GT(std::abs(cu::gelu(-1.5f, true) - cu::gelu(-1.5f, false)), 1e-4);  // two different functions
}

// NormGelu on planes larger than a block of threads (the workload's small size has 63 pixels,
// fewer than kThreads), so every thread strides over several pixels and the tree sums partial
// sums; GroupNorm(gcd(8, C)) with tanh-GELU (operator_opts) and InstanceNorm with erf-GELU.
TEST(CnnRolloutCudaBodies, NormGeluMatchesTheReferenceGroupNormAndInstanceNorm) {
  const int channels = 12;  // gcd(8, 12) = 4 groups of 3 channels
  for (const ref::ModelOptions model : {ref::ModelOptions{true, true}, ref::ModelOptions{}}) {
    const int groups = ref::norm_groups(channels, model);
    std::vector<float> x = draw(kSamples * channels * kPlane, 21, -2.f, 3.f);
    const std::vector<float> gamma = draw(channels, 22, 0.5f, 1.5f), beta = draw(channels, 23, -0.5f, 0.5f);
    const std::vector<double> g(gamma.begin(), gamma.end()), b(beta.begin(), beta.end());
    std::vector<double> expected(x.begin(), x.end());
    HostExecutor exec;
    exec.reverse = true;
    exec.blocks("norm_gelu", cu::NormGelu{x.data(), gamma.data(), beta.data(), channels, groups, kSamples, kPlane, model.tanh_gelu});
    for (int n = 0; n < kSamples; ++n) ref::normalize(expected.data() + n * channels * kPlane, channels, kPlane, g.data(), b.data(), groups);
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], ref::gelu(expected[i], model.tanh_gelu), 1e-5) << "groups " << groups << " index " << i;
  }
}

}  // namespace
