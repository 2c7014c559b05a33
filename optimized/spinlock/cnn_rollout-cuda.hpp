#pragma once
// spinlock/cnn_rollout_<policy> on CUDA: the kernel bodies and the phase ladder, written once
// against an executor, so the same code queues kernels on the GPU (DeviceExecutor,
// backends/cuda/device_executor.cuh, in cnn_rollout-cuda.cu) and runs on the host in
// tests/cuda/cnn_rollout_cuda_test.cpp (HostExecutor). Math: reference/spinlock/cnn_rollout.hpp.
//
// The ladder implemented here (phases 2-5 are UNSUPPORTED on CUDA for now: cnn_rollout-cuda.cu):
//   0 eager           one kernel per operation (conv, norm statistics, normalize, GELU, head,
//                     policy) into fresh stream-ordered buffers, then a copy into the trajectory;
//                     one realization per call. Exact fp32.
//   1 compile_fusion  one block kernel per ConvBlock: a block per (sample, channel) convolves its
//                     plane, reduces mean and variance in shared memory (two passes, as the
//                     reference), then normalizes + GELU; the head and the policy update are one
//                     kernel. Fresh block outputs per call, one realization per call. Exact fp32.
//   6 exact_fast      phase 1 with every realization in one launch per block (batching) and
//                     ping-pong buffers allocated in setup (run() allocates nothing). Exact fp32.
// No cuDNN on these machines, so the convolutions are direct kernels. No host sync in run().

#include <math.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "backends/cuda/host_device.hpp"
#include "phasebench/arrays.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::cuda_backend::spinlock {

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;

constexpr int kFields = ref::kFieldChannels;

// ==== pointwise math, as the reference writes it =================================================

PB_HOST_DEVICE inline float exact_gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

PB_HOST_DEVICE inline float policy_update(ref::Policy policy, float x, float o) {
  switch (policy) {
    case ref::Policy::Autoregressive: return o;
    case ref::Policy::Residual: return x + static_cast<float>(ref::kResidualDt) * o;
    case ref::Policy::Convex:
      return static_cast<float>(ref::kConvexAlpha) * x + static_cast<float>(1 - ref::kConvexAlpha) * o;
  }
  return o;
}

/// One output pixel (o, y, x) of a k x k zero-padded convolution of one sample, summed over
/// (c, dy, dx) in the reference's order.
PB_HOST_DEVICE inline float conv_pixel(const float* in, int in_channels, int height, int width, const float* weight,
                                       int kernel, int o, int y, int x) {
  const int pad = kernel / 2;
  float sum = 0.f;
  for (int c = 0; c < in_channels; ++c)
    for (int dy = 0; dy < kernel; ++dy) {
      const int iy = y + dy - pad;
      if (iy < 0 || iy >= height) continue;
      for (int dx = 0; dx < kernel; ++dx) {
        const int ix = x + dx - pad;
        if (ix < 0 || ix >= width) continue;
        sum += weight[((o * in_channels + c) * kernel + dy) * kernel + dx] * in[(int64_t{c} * height + iy) * width + ix];
      }
    }
  return sum;
}

/// The 1x1 head's output channel f at pixel p of one sample [channels, plane].
PB_HOST_DEVICE inline float head_pixel(const float* act, int channels, int64_t plane, const float* weight,
                                       const float* bias, int f, int64_t p) {
  float sum = bias[f];
  for (int c = 0; c < channels; ++c) sum += weight[f * channels + c] * act[c * plane + p];
  return sum;
}

// ==== elementwise ops (one thread per index) ======================================================

/// Trajectory row 0: x0 for every realization.
struct StartRollout {
  const float* x0;
  float* trajectory;
  int64_t field;
  PB_HOST_DEVICE void operator()(int64_t i) const { trajectory[i] = x0[i % field]; }
};

struct EagerConv {
  const float* in;
  const float* weight;
  float* out;
  int in_channels, height, width, kernel;
  PB_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t plane = int64_t{height} * width;
    out[i] = conv_pixel(in, in_channels, height, width, weight, kernel, static_cast<int>(i / plane),
                        static_cast<int>(i % plane / width), static_cast<int>(i % width));
  }
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
  PB_HOST_DEVICE void operator()(int64_t i) const { out[i] = exact_gelu(x[i]); }
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

// ==== the fused block: conv -> InstanceNorm -> GELU, a block per (sample, channel) ==================

/// Stages: 0 conv of the block's strided pixels into out + partial sums; 1..L tree of the sums;
/// L+1 partial squared deviations from the mean; L+2..2L+1 their tree; 2L+2 normalize + GELU in
/// place. Shared memory: the sums [kThreads], then the squares [kThreads]. Each thread writes only
/// its own slot in a stage, and the tree reads only slots nobody writes in that stage.
struct ConvNormGelu {
  static constexpr int kThreads = 256;
  static constexpr int kTreeLevels = 8;  // log2(kThreads)

  const float* in;  // [samples, in_channels, plane]
  const float* weight;
  const float* gamma;
  const float* beta;
  float* out;  // [samples, out_channels, plane]
  int in_channels, out_channels, height, width, kernel, samples;

  int64_t blocks() const { return int64_t{samples} * out_channels; }
  int64_t shared_floats() const { return 2 * kThreads; }
  PB_HOST_DEVICE int stages() const { return 2 * kTreeLevels + 3; }

  PB_HOST_DEVICE void stage(int stage, int64_t block, int thread, float* shared) const {
    const int64_t n = block / out_channels, plane = int64_t{height} * width;
    const int o = static_cast<int>(block % out_channels);
    float* channel = out + (n * out_channels + o) * plane;
    float* sums = shared;
    float* squares = shared + kThreads;
    if (stage == 0) {
      const float* sample = in + n * in_channels * plane;
      float partial = 0.f;
      for (int64_t p = thread; p < plane; p += kThreads) {
        channel[p] = conv_pixel(sample, in_channels, height, width, weight, kernel, o, static_cast<int>(p / width),
                                static_cast<int>(p % width));
        partial += channel[p];
      }
      sums[thread] = partial;
    } else if (stage <= kTreeLevels) {
      tree_step(sums, stage, thread);
    } else if (stage == kTreeLevels + 1) {
      const float mean = sums[0] / static_cast<float>(plane);
      float partial = 0.f;
      for (int64_t p = thread; p < plane; p += kThreads) partial += (channel[p] - mean) * (channel[p] - mean);
      squares[thread] = partial;
    } else if (stage <= 2 * kTreeLevels + 1) {
      tree_step(squares, stage - kTreeLevels - 1, thread);
    } else {
      const float mean = sums[0] / static_cast<float>(plane);
      const float inv_std = 1.0f / sqrtf(squares[0] / static_cast<float>(plane) + static_cast<float>(ref::kNormEps));
      for (int64_t p = thread; p < plane; p += kThreads)
        channel[p] = exact_gelu((channel[p] - mean) * inv_std * gamma[o] + beta[o]);
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

template <typename Exec>
Floats<Exec> upload_floats(Exec& exec, const std::vector<float>& values) {
  Floats<Exec> buffer = exec.template allocate<float>(static_cast<int64_t>(values.size()));
  exec.upload(buffer.data(), values.data(), static_cast<int64_t>(values.size()));
  return buffer;
}

template <typename Exec>
struct DeviceBlockWeights {
  Floats<Exec> weight, gamma, beta;
  int in_channels = 0, out_channels = 0;
};

/// Whether this file implements `phase` (the others are UNSUPPORTED on CUDA).
inline bool implemented(int phase) { return phase == sp::kEager || phase == sp::kCompileFusion || phase == sp::kExactFast; }

template <typename Exec>
class CnnRolloutLadder {
 public:
  CnnRolloutLadder(Exec& exec, const ArrayMap& inputs, const ref::Architecture& arch, ref::Policy policy, int phase)
      : exec_(exec), arch_(arch), policy_(policy), phase_(phase) {
    if (!implemented(phase)) throw std::invalid_argument("spinlock cnn_rollout on CUDA: phase not implemented");
    const ref::OperatorWeights<float> weights = sp::load_weights<float>(inputs, arch);
    int widest = kFields;
    for (const auto& block : weights.blocks) {
      blocks_.push_back({upload_floats(exec, block.weight), upload_floats(exec, block.gamma),
                         upload_floats(exec, block.beta), block.in_channels, block.out_channels});
      widest = std::max(widest, block.out_channels);
    }
    head_weight_ = upload_floats(exec, weights.head_weight);
    head_bias_ = upload_floats(exec, weights.head_bias);
    x0_ = upload_floats(exec, require(inputs, sp::kInitialField).to_floats());
    trajectory_ = exec.template allocate<float>(trajectory_size());
    if (phase == sp::kExactFast)
      for (Floats<Exec>& buffer : ping_pong_) buffer = exec.template allocate<float>(arch.realizations * widest * plane());
  }

  /// Queues one rollout from x0.
  void run() {
    exec_.for_each("spinlock/start", arch_.realizations * arch_.field_size(),
                   StartRollout{x0_.data(), trajectory_.data(), arch_.field_size()});
    for (int t = 1; t < arch_.steps; ++t) {
      if (phase_ == sp::kExactFast) {
        fused_step(t, 0, arch_.realizations);
      } else {
        for (int m = 0; m < arch_.realizations; ++m) phase_ == sp::kEager ? eager_step(t, m) : fused_step(t, m, 1);
      }
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
  int64_t plane() const { return int64_t{arch_.height} * arch_.width; }
  int64_t trajectory_size() const { return int64_t{arch_.steps} * arch_.realizations * arch_.field_size(); }
  float* slice(int t, int m) const { return trajectory_.data() + (int64_t{t} * arch_.realizations + m) * arch_.field_size(); }

  /// Phase 0: every operation its own kernel and its own fresh buffer, one realization.
  void eager_step(int t, int m) {
    const float* previous = slice(t - 1, m);
    Floats<Exec> x;  // the current activation; empty before the first block
    for (const DeviceBlockWeights<Exec>& b : blocks_) {
      const int64_t count = b.out_channels * plane();
      Floats<Exec> conv = exec_.template allocate<float>(count), stats = exec_.template allocate<float>(2 * b.out_channels);
      Floats<Exec> normalized = exec_.template allocate<float>(count), activated = exec_.template allocate<float>(count);
      exec_.for_each("spinlock/conv", count, EagerConv{x.data() ? x.data() : previous, b.weight.data(), conv.data(), b.in_channels, arch_.height, arch_.width, arch_.kernel});
      exec_.for_each("spinlock/norm_statistics", b.out_channels, EagerNormStatistics{conv.data(), stats.data(), plane()});
      exec_.for_each("spinlock/normalize", count, EagerNormalize{conv.data(), stats.data(), b.gamma.data(), b.beta.data(), normalized.data(), plane()});
      exec_.for_each("spinlock/gelu", count, EagerGelu{normalized.data(), activated.data()});
      x = std::move(activated);
    }
    const int64_t field = arch_.field_size();
    Floats<Exec> o = exec_.template allocate<float>(field), next = exec_.template allocate<float>(field);
    exec_.for_each("spinlock/head", field, EagerHead{x.data(), head_weight_.data(), head_bias_.data(), o.data(), blocks_.back().out_channels, plane()});
    exec_.for_each("spinlock/policy", field, EagerPolicy{policy_, previous, o.data(), next.data()});
    exec_.copy(slice(t, m), next.data(), field);
  }

  /// Phases 1 and 6: a fused kernel per block, then head + policy, for realizations
  /// [first, first + samples). The block buffers hold just those samples (phase 1 allocates them
  /// per call, phase 6 ping-pongs two sized for all M).
  void fused_step(int t, int first, int samples) {
    const float* in = slice(t - 1, first);  // row t - 1 holds [M, 3, plane]
    Floats<Exec> fresh[2];
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const DeviceBlockWeights<Exec>& b = blocks_[i];
      float* out = ping_pong_[i % 2].data();
      if (phase_ != sp::kExactFast) {
        fresh[i % 2] = exec_.template allocate<float>(samples * b.out_channels * plane());
        out = fresh[i % 2].data();
      }
      exec_.blocks("spinlock/conv_norm_gelu", ConvNormGelu{in, b.weight.data(), b.gamma.data(), b.beta.data(), out, b.in_channels,
                                                           b.out_channels, arch_.height, arch_.width, arch_.kernel, samples});
      in = out;
    }
    exec_.for_each("spinlock/head_policy", samples * plane(),
                   HeadPolicy{in, head_weight_.data(), head_bias_.data(), trajectory_.data(), blocks_.back().out_channels, t,
                              arch_.realizations, first, plane(), policy_});
  }

  Exec& exec_;
  ref::Architecture arch_;
  ref::Policy policy_;
  int phase_;
  std::vector<DeviceBlockWeights<Exec>> blocks_;
  Floats<Exec> head_weight_, head_bias_, x0_, trajectory_;
  Floats<Exec> ping_pong_[2];
};

}  // namespace pb::cuda_backend::spinlock
