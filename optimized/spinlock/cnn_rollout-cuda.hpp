#pragma once
// spinlock/cnn_rollout_<policy> on CUDA: the kernel bodies and the ladder, written once against
// an executor and a GEMM, so the same code queues kernels and cuBLAS calls on the GPU
// (DeviceExecutor + CublasGemm in cnn_rollout-cuda.cu) and runs on the host in
// tests/cuda/cnn_rollout_cuda_test.cpp (HostExecutor + a naive column-major GEMM that takes the
// very GemmShape cuBLAS gets). Math: reference/spinlock/cnn_rollout.hpp; what each optimization
// means: the catalog (suites/spinlock/cnn_rollout.cpp, docs/spinlock.md). COMPILED HERE, NEVER
// RUN ON A GPU (no device on these machines).
//
// Every convolution is an im2col kernel (Im2col: columns [rows = C_in k k, H W] per sample, in
// the operand type) and one cublasGemmStridedBatchedEx (convolution_gemm: m = H W, n = C_out,
// k = C_in k k, no transposes, lda = ldc = H W, ldb = k, the weights shared by the batch with
// stride 0; fp32 output, CUBLAS_COMPUTE_32F), as PyTorch's eager conv2d on a GPU is a cuDNN call
// (itself an implicit GEMM). The 1x1 head (3 outputs from c channels: ~1% of the flops) is a kernel.
// How this backend realizes each optimization is said where RolloutOptions reads it. No host
// sync in run().

#include <math.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cuda/gemm.hpp"
#include "backends/cuda/host_device.hpp"
#include "phasebench/arrays.hpp"
#include "phasebench/phases.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::cuda_backend::spinlock {

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;

constexpr int kFields = ref::kFieldChannels;

// ==== pointwise math, as the reference writes it =================================================

/// GELU, the exact (erf) form or PyTorch's approximate='tanh' form.
PB_HOST_DEVICE inline float gelu(float v, bool tanh_form) {
  if (tanh_form) return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
}

using ref::policy_update;

/// The 1x1 head's output channel f at pixel p of one sample [channels, plane].
PB_HOST_DEVICE inline float head_pixel(const float* act, int channels, int64_t plane, const float* weight,
                                       const float* bias, int f, int64_t p) {
  float sum = bias[f];
  for (int c = 0; c < channels; ++c) sum += weight[f * channels + c] * act[c * plane + p];
  return sum;
}

// ==== the convolution as im2col + GEMM ===========================================================

/// The columns of a k x k zero-padded convolution: for each sample, a [rows, plane] matrix with
/// row r = (c, dy, dx) in the weights' [out, in, k, k] order, so that
///   out[o, p] = sum_r weight[o, r] * columns[r, p].
/// Index (sample * rows + r) * plane + p. Operand float, or Bf16 (rounded to nearest even here).
template <typename Operand>
struct Im2col {
  const float* in;   // [samples, channels, plane]
  Operand* columns;  // [samples, channels * k * k, plane]
  int channels, height, width, kernel;

  PB_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t plane = int64_t{height} * width, taps = int64_t{kernel} * kernel, rows = channels * taps;
    const int64_t n = i / (rows * plane), r = i / plane % rows, p = i % plane;
    const int64_t c = r / taps, dy = r % taps / kernel, dx = r % kernel;
    const int64_t y = p / width + dy - kernel / 2, x = p % width + dx - kernel / 2;
    const bool inside = y >= 0 && y < height && x >= 0 && x < width;
    store_operand(columns[i], inside ? in[(n * channels + c) * plane + y * width + x] : 0.f);
  }
};

/// THE parameters every convolution GEMM gets (cuBLAS on the GPU, the naive GEMM of the tests):
/// per sample, row-major out [out_channels, plane] = weight [out_channels, rows] x columns [rows,
/// plane]. Column-major, each row-major matrix is its transpose, so this is
///   out^T (m = plane, n = out_channels, ldc = plane)
///     = columns^T (m x k = rows, lda = plane) x weight^T (k x n, ldb = rows),
/// with no transposes; the batch walks the samples, the weights shared (stride 0).
inline GemmShape convolution_gemm(int in_channels, int out_channels, int kernel, int64_t plane, int samples) {
  const int rows = in_channels * kernel * kernel, pixels = static_cast<int>(plane);
  GemmShape shape;
  shape.m = pixels;
  shape.n = out_channels;
  shape.k = rows;
  shape.lda = pixels;
  shape.ldb = rows;
  shape.ldc = pixels;
  shape.stride_a = int64_t{rows} * plane;
  shape.stride_b = 0;
  shape.stride_c = int64_t{out_channels} * plane;
  shape.batch = samples;
  return shape;
}

// ==== elementwise ops (one thread per index) ======================================================

/// Trajectory row 0: x0 for every realization.
struct StartRollout {
  const float* x0;
  float* trajectory;
  int64_t field;
  PB_HOST_DEVICE void operator()(int64_t i) const { trajectory[i] = x0[i % field]; }
};

/// (mean, 1/std) of channel c, two passes as the reference.
struct EagerNormStatistics {
  const float* x;
  float* stats;
  int64_t plane;
  PB_HOST_DEVICE void operator()(int64_t c) const {
    const float* channel = x + c * plane;
    float sum = 0.f, squares = 0.f;
    for (int64_t i = 0; i < plane; ++i) sum += channel[i];
    const float mean = sum / static_cast<float>(plane);
    for (int64_t i = 0; i < plane; ++i) squares += (channel[i] - mean) * (channel[i] - mean);
    stats[2 * c] = mean;
    stats[2 * c + 1] = 1.0f / sqrtf(squares / static_cast<float>(plane) + static_cast<float>(ref::kNormEps));
  }
};

struct EagerNormalize {
  const float* x;
  const float* stats;
  const float* gamma;
  const float* beta;
  float* out;
  int64_t plane;
  PB_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t c = i / plane;
    out[i] = (x[i] - stats[2 * c]) * stats[2 * c + 1] * gamma[c] + beta[c];
  }
};

struct EagerGelu {
  const float* x;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t i) const { out[i] = gelu(x[i], false); }
};

struct EagerHead {
  const float* act;
  const float* weight;
  const float* bias;
  float* out;
  int channels;
  int64_t plane;
  PB_HOST_DEVICE void operator()(int64_t i) const {
    out[i] = head_pixel(act, channels, plane, weight, bias, static_cast<int>(i / plane), i % plane);
  }
};

struct EagerPolicy {
  ref::Policy policy;
  const float* x;
  const float* o;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t i) const { out[i] = policy_update(policy, x[i], o[i]); }
};

/// Head and policy fused, for realizations [first, first + samples): index = sample * plane +
/// pixel; act [samples, channels, plane]; trajectory row t from row t - 1.
struct HeadPolicy {
  const float* act;
  const float* weight;
  const float* bias;
  float* trajectory;
  int channels, t, realizations, first;
  int64_t plane;
  ref::Policy policy;
  PB_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t n = first + i / plane, p = i % plane, field = kFields * plane;
    const float* sample = act + (n - first) * channels * plane;
    float* now = trajectory + (int64_t{t} * realizations + n) * field;
    const float* before = now - realizations * field;
    for (int f = 0; f < kFields; ++f)
      now[f * plane + p] = policy_update(policy, before[f * plane + p], head_pixel(sample, channels, plane, weight, bias, f, p));
  }
};

// ==== the fused norm: statistics -> normalize + affine -> GELU, a block per (sample, group) =========

/// GroupNorm with `groups` groups (groups == channels is InstanceNorm), its affine map and GELU,
/// in place on x [samples, channels, plane]: block b is group b % groups of sample b / groups,
/// whose channels are the contiguous [channels / groups * plane] floats at b * that.
/// Stages: 0 partial sums; 1..L tree of the sums; L+1 partial squared deviations from the mean;
/// L+2..2L+1 their tree; 2L+2 normalize + affine + GELU. Shared memory: the sums [kThreads], then
/// the squares [kThreads]. Each thread writes only its own slot in a stage, and the tree reads
/// only slots nobody writes in that stage.
struct NormGelu {
  static constexpr int kThreads = 256;
  static constexpr int kTreeLevels = 8;  // log2(kThreads)

  float* x;
  const float* gamma;
  const float* beta;
  int channels, groups, samples;
  int64_t plane;
  bool tanh_gelu;

  int64_t blocks() const { return int64_t{samples} * groups; }
  int64_t shared_floats() const { return 2 * kThreads; }
  PB_HOST_DEVICE int stages() const { return 2 * kTreeLevels + 3; }

  PB_HOST_DEVICE void stage(int stage, int64_t block, int thread, float* shared) const {
    const int per_group = channels / groups;
    const int64_t count = per_group * plane;
    float* group = x + block * count;
    float* sums = shared;
    float* squares = shared + kThreads;
    if (stage == 0) {
      float partial = 0.f;
      for (int64_t e = thread; e < count; e += kThreads) partial += group[e];
      sums[thread] = partial;
    } else if (stage <= kTreeLevels) {
      tree_step(sums, stage, thread);
    } else if (stage == kTreeLevels + 1) {
      const float mean = sums[0] / static_cast<float>(count);
      float partial = 0.f;
      for (int64_t e = thread; e < count; e += kThreads) partial += (group[e] - mean) * (group[e] - mean);
      squares[thread] = partial;
    } else if (stage <= 2 * kTreeLevels + 1) {
      tree_step(squares, stage - kTreeLevels - 1, thread);
    } else {
      const float mean = sums[0] / static_cast<float>(count);
      const float inv_std = 1.0f / sqrtf(squares[0] / static_cast<float>(count) + static_cast<float>(ref::kNormEps));
      const int64_t first_channel = block % groups * per_group;
      for (int64_t e = thread; e < count; e += kThreads) {
        const int64_t c = first_channel + e / plane;
        group[e] = gelu((group[e] - mean) * inv_std * gamma[c] + beta[c], tanh_gelu);
      }
    }
  }

  /// Level `level` (1-based) of the pairwise tree: slot i += slot i + half, half = kThreads / 2^level.
  PB_HOST_DEVICE static void tree_step(float* slots, int level, int thread) {
    const int half = kThreads >> level;
    if (thread < half) slots[thread] += slots[thread + half];
  }
};

// ==== the ladder ====================================================================================

template <typename Exec>
using Floats = typename Exec::template Buffer<float>;

template <typename Exec, typename T>
typename Exec::template Buffer<T> upload(Exec& exec, const std::vector<T>& values) {
  auto buffer = exec.template allocate<T>(static_cast<int64_t>(values.size()));
  exec.upload(buffer.data(), values.data(), static_cast<int64_t>(values.size()));
  return buffer;
}

inline std::vector<Bf16> rounded_to_bf16(const std::vector<float>& values) {
  std::vector<Bf16> rounded(values.size());
  std::transform(values.begin(), values.end(), rounded.begin(), to_bf16);
  return rounded;
}

/// The optimizations of the plan, as this backend realizes them.
struct RolloutOptions {
  // Without compile_fusion: one launch per operation (im2col, GEMM, norm statistics, normalize,
  // GELU per block, then head, policy and a copy into the trajectory), every result in a fresh
  // stream-ordered buffer. With it: per block im2col, GEMM and ONE NormGelu block kernel (cuBLAS
  // cannot take the norm as an epilogue), then head and policy update in one kernel.
  bool eager;
  // mixed_precision: bf16 GEMM operands (weights rounded once in setup, im2col writes bf16
  // columns, round to nearest even); fp32 accumulation, output, norm, GELU, head and state.
  bool bf16;
  // operator_opts / exact_fast: the column matrix and one ping-pong activation buffer from setup()
  // (im2col reads the activation into the columns, the GEMM writes it back): run() allocates
  // nothing.
  bool preallocated;
  // batching: all M realizations per launch (im2col over M samples, GEMM batch M, NormGelu over
  // M x groups blocks, one head + policy launch per step).
  bool batched;
  // profile_guided / exact_fast: run() replays a CUDA graph of one rollout captured in setup()
  // (the variant's part). NOT from a profile: no GPU here to profile on. It is the expected
  // bottleneck: at the small and default sizes a step is 3 x blocks + 1 launches of microsecond
  // kernels, so launch latency, not arithmetic, should dominate. To be replaced by what nsys
  // shows on a GPU.
  bool graph;
  // operator_opts: GroupNorm(gcd(8, C)) and tanh-GELU in NormGelu (the approximate model).
  ref::ModelOptions model;

  explicit RolloutOptions(const PhasePlan& plan)
      : eager(!plan.has(sp::kCompileFusion)),
        bf16(sp::computes_in_bf16(plan)),
        preallocated(sp::preallocates(plan)),
        batched(sp::batches_realizations(plan)),
        graph(plan.has(sp::kProfileGuided) || plan.has(sp::kExactFast)),
        model(sp::model_of(plan)) {}
};

template <typename Exec>
struct DeviceBlockWeights {
  Floats<Exec> weight;                                // [out, in, k, k] = row-major [out, rows]
  typename Exec::template Buffer<Bf16> weight_bf16;  // the same rounded, for mixed_precision
  Floats<Exec> gamma, beta;
  int in_channels = 0, out_channels = 0, groups = 0;
};

/// One rollout per run(), queued on `exec` with the convolutions' GEMMs through `gemm`
/// (callable as gemm(const GemmShape&, const Operand* a, const Operand* b, float* c) for Operand
/// float and Bf16, queued in order with exec's work).
template <typename Exec, typename Gemm>
class CnnRolloutLadder {
 public:
  CnnRolloutLadder(Exec& exec, const Gemm& gemm, const ArrayMap& inputs, const ref::Architecture& arch,
                   ref::Policy policy, const PhasePlan& plan)
      : exec_(exec), gemm_(gemm), arch_(arch), policy_(policy), options_(plan) {
    const ref::OperatorWeights<float> weights = sp::load_weights<float>(inputs, arch);
    int64_t widest = kFields, most_rows = 0;
    for (const auto& block : weights.blocks) {
      DeviceBlockWeights<Exec> device{upload(exec, block.weight), {}, upload(exec, block.gamma), upload(exec, block.beta),
                                      block.in_channels, block.out_channels,
                                      ref::norm_groups(block.out_channels, options_.model)};
      if (options_.bf16) device.weight_bf16 = upload(exec, rounded_to_bf16(block.weight));
      blocks_.push_back(std::move(device));
      widest = std::max<int64_t>(widest, block.out_channels);
      most_rows = std::max<int64_t>(most_rows, int64_t{block.in_channels} * arch.kernel * arch.kernel);
    }
    head_weight_ = upload(exec, weights.head_weight);
    head_bias_ = upload(exec, weights.head_bias);
    x0_ = upload(exec, require(inputs, sp::kInitialField).to_floats());
    trajectory_ = exec.template allocate<float>(trajectory_size());
    if (options_.preallocated) {
      const int64_t samples = options_.batched ? arch.realizations : 1;
      activation_ = exec.template allocate<float>(samples * widest * plane());
      if (options_.bf16) {
        columns_bf16_ = exec.template allocate<Bf16>(samples * most_rows * plane());
      } else {
        columns_ = exec.template allocate<float>(samples * most_rows * plane());
      }
    }
  }

  const RolloutOptions& options() const { return options_; }

  /// Queues one rollout from x0.
  void run() {
    exec_.for_each("spinlock/start", arch_.realizations * arch_.field_size(),
                   StartRollout{x0_.data(), trajectory_.data(), arch_.field_size()});
    for (int t = 1; t < arch_.steps; ++t) {
      if (options_.batched) {
        fused_step(t, 0, arch_.realizations);
        continue;
      }
      for (int m = 0; m < arch_.realizations; ++m) options_.eager ? eager_step(t, m) : fused_step(t, m, 1);
    }
  }

  void poison_outputs() {
    exec_.for_each("spinlock/poison", trajectory_size(), Fill{trajectory_.data(), std::numeric_limits<float>::quiet_NaN()});
  }

  /// The trajectory [T, M, 3, H, W] (blocking).
  std::vector<float> trajectory() {
    std::vector<float> values(static_cast<size_t>(trajectory_size()));
    exec_.download(values.data(), trajectory_.data(), trajectory_size());
    return values;
  }

 private:
  template <typename T>
  using Buffer = typename Exec::template Buffer<T>;

  int64_t plane() const { return int64_t{arch_.height} * arch_.width; }
  int64_t trajectory_size() const { return int64_t{arch_.steps} * arch_.realizations * arch_.field_size(); }
  float* slice(int t, int m) const { return trajectory_.data() + (int64_t{t} * arch_.realizations + m) * arch_.field_size(); }

  /// im2col of `in` into `columns` and the GEMM into `out`: one convolution of `samples` samples.
  template <typename Operand>
  void convolve(const DeviceBlockWeights<Exec>& b, const float* in, Operand* columns, float* out, int samples) {
    const GemmShape shape = convolution_gemm(b.in_channels, b.out_channels, arch_.kernel, plane(), samples);
    exec_.for_each("spinlock/im2col", shape.stride_a * samples,
                   Im2col<Operand>{in, columns, b.in_channels, arch_.height, arch_.width, arch_.kernel});
    if constexpr (std::is_same_v<Operand, Bf16>) {
      gemm_(shape, columns, b.weight_bf16.data(), out);
    } else {
      gemm_(shape, columns, b.weight.data(), out);
    }
  }

  /// Without compile_fusion: every operation its own launch and its own fresh buffer, one
  /// realization.
  void eager_step(int t, int m) {
    const float* previous = slice(t - 1, m);
    Floats<Exec> x;  // the current activation; empty before the first block
    for (const DeviceBlockWeights<Exec>& b : blocks_) {
      const int64_t count = b.out_channels * plane();
      Floats<Exec> columns = exec_.template allocate<float>(int64_t{b.in_channels} * arch_.kernel * arch_.kernel * plane());
      Floats<Exec> conv = exec_.template allocate<float>(count), stats = exec_.template allocate<float>(2 * b.out_channels);
      Floats<Exec> normalized = exec_.template allocate<float>(count), activated = exec_.template allocate<float>(count);
      convolve(b, x.data() ? x.data() : previous, columns.data(), conv.data(), 1);
      exec_.for_each("spinlock/norm_statistics", b.out_channels, EagerNormStatistics{conv.data(), stats.data(), plane()});
      exec_.for_each("spinlock/normalize", count, EagerNormalize{conv.data(), stats.data(), b.gamma.data(), b.beta.data(), normalized.data(), plane()});
      exec_.for_each("spinlock/gelu", count, EagerGelu{normalized.data(), activated.data()});
      x = std::move(activated);  // the previous activation is freed after the im2col that read it
    }
    const int64_t field = arch_.field_size();
    Floats<Exec> o = exec_.template allocate<float>(field), next = exec_.template allocate<float>(field);
    exec_.for_each("spinlock/head", field, EagerHead{x.data(), head_weight_.data(), head_bias_.data(), o.data(), blocks_.back().out_channels, plane()});
    exec_.for_each("spinlock/policy", field, EagerPolicy{policy_, previous, o.data(), next.data()});
    exec_.copy(slice(t, m), next.data(), field);
  }

  void fused_step(int t, int first, int samples) {
    if (options_.bf16) {
      fused_step_with<Bf16>(t, first, samples, columns_bf16_);
    } else {
      fused_step_with<float>(t, first, samples, columns_);
    }
  }

  /// compile_fusion: per block im2col, GEMM and NormGelu, then head + policy, for realizations
  /// [first, first + samples). Without preallocation each block's columns and output are fresh
  /// buffers (the output freed once the next im2col has read it); with it the setup() buffers.
  template <typename Operand>
  void fused_step_with(int t, int first, int samples, const Buffer<Operand>& kept_columns) {
    const float* in = slice(t - 1, first);  // row t - 1 holds [M, 3, plane]
    Floats<Exec> live_output;
    for (const DeviceBlockWeights<Exec>& b : blocks_) {
      Buffer<Operand> fresh_columns;
      Floats<Exec> fresh_output;
      Operand* columns = kept_columns.data();
      float* out = activation_.data();
      if (!options_.preallocated) {
        fresh_columns = exec_.template allocate<Operand>(samples * int64_t{b.in_channels} * arch_.kernel * arch_.kernel * plane());
        fresh_output = exec_.template allocate<float>(samples * int64_t{b.out_channels} * plane());
        columns = fresh_columns.data();
        out = fresh_output.data();
      }
      convolve(b, in, columns, out, samples);
      exec_.blocks("spinlock/norm_gelu", NormGelu{out, b.gamma.data(), b.beta.data(), b.out_channels, b.groups, samples,
                                                  plane(), options_.model.tanh_gelu});
      live_output = std::move(fresh_output);  // the block before's output is freed after its reader
      in = out;
    }
    exec_.for_each("spinlock/head_policy", samples * plane(),
                   HeadPolicy{in, head_weight_.data(), head_bias_.data(), trajectory_.data(), blocks_.back().out_channels, t,
                              arch_.realizations, first, plane(), policy_});
  }

  Exec& exec_;
  const Gemm& gemm_;
  ref::Architecture arch_;
  ref::Policy policy_;
  RolloutOptions options_;
  std::vector<DeviceBlockWeights<Exec>> blocks_;
  Floats<Exec> head_weight_, head_bias_, x0_, trajectory_;
  Floats<Exec> activation_, columns_;  // preallocated (columns_: the fp32 ones)
  Buffer<Bf16> columns_bf16_;          // preallocated and bf16
};

}  // namespace pb::cuda_backend::spinlock
