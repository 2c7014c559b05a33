#pragma once
// spinlock/cnn_rollout: Spinlock's CNN operator O_theta (eval mode) and its rollout, written as
// the obviously right loops. Templated on the scalar type: Scalar = double is the oracle every
// variant is checked against; Scalar = float is timed as the serial baseline. Suite page:
// docs/spinlock.md.
//
//   ConvBlock(a -> b)  = k x k convolution (zero padding k/2, no bias) -> InstanceNorm2d (affine,
//                        eps 1e-5, biased variance) -> exact GELU 0.5 v (1 + erf(v / sqrt 2))
//   O_theta            = ConvBlock(3 -> c0), then ConvBlock(-> c0 * 2^min(i,2)) for i < num_layers,
//                        then a 1x1 convolution with bias to 3 channels
//   rollout            = X0 [3,H,W] repeated to [M,3,H,W]; for t = 1..T-1: O = O_theta(X), then
//                        autoregressive X = O | residual X = X + dt O (dt = 0.01) |
//                        convex X = a X + (1-a) O (a = 0.5)
//   output             = the trajectory [T,M,3,H,W] (X0 included)
//
//   for t = 1..T-1, m < M:
//     x = X[t-1,m]
//     for each block (a -> b channels): x = gelu(norm(conv(x)))
//       conv: out[o,i,j] = sum_{c < a} sum_{dy,dx < k} w[o,c,dy,dx] x[c, i+dy-k/2, j+dx-k/2]
//             (0 outside the image)
//       norm: per channel o, over its H*W values: (v - mean) / sqrt(var + eps) * gamma[o] + beta[o]
//     o = head_w x + head_b          (1x1: at every pixel, [3 x c] times the c channel values)
//     X[t,m] = policy(X[t-1,m], o)
//
//   size      H x W       M   T    num_layers   c0   k   block channels
//   small     9 x 7       2   3    2            4    3   4, 4, 8
//   default   64 x 64     3   16   3            16   3   16, 16, 32, 64
//   large     128 x 128   3   64   3            32   3   32, 32, 64, 128
//
// Where phasebench departs from the original: Dropout is inactive (eval mode) and the stochastic
// block is off (noise would make an equivalence check meaningless), so the M realizations start
// from the same X0 and stay equal; num_layers > 3 (residual blocks) is not used by any size.
// ModelOptions selects the approximate model of seed 003's phase 3 (GroupNorm(8) for
// InstanceNorm, tanh-GELU), so that the approximation's own math has an fp64 oracle too.

#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>

#include "phasebench/host_device.hpp"  // the policy update also runs in CUDA kernels
#include <vector>

namespace pb::reference::spinlock {

constexpr int kFieldChannels = 3;      // C_in = C_out
constexpr double kNormEps = 1e-5;      // InstanceNorm2d / GroupNorm eps
constexpr double kResidualDt = 0.01;   // residual policy step
constexpr double kConvexAlpha = 0.5;   // convex policy weight of X
constexpr int kGroupNormGroups = 8;    // seed 003 phase 3: GroupNorm(num_groups=8)

enum class Policy { Autoregressive, Residual, Convex };

/// One size of the workload (the table above).
struct Architecture {
  int height = 0, width = 0;
  int realizations = 0;  // M
  int steps = 0;         // T: the trajectory holds X0 and T-1 updates
  int num_layers = 0;
  int c0 = 0;
  int kernel = 0;

  /// Output channels of every ConvBlock, in order: c0, then c0 * 2^min(i,2) for i < num_layers.
  std::vector<int> block_channels() const {
    if (num_layers > 3)
      throw std::invalid_argument("num_layers > 3 (residual blocks) is not used by any size");
    std::vector<int> channels{c0};
    for (int i = 0; i < num_layers; ++i) channels.push_back(c0 << std::min(i, 2));
    return channels;
  }
  int64_t field_size() const { return int64_t{kFieldChannels} * height * width; }
};

/// The approximate model of seed 003's phase 3; default-constructed it is the exact operator.
struct ModelOptions {
  bool group_norm = false;  // GroupNorm(8) instead of InstanceNorm (same affine parameters)
  bool tanh_gelu = false;   // GELU(approximate='tanh') instead of the erf form
};

/// Groups the normalization of `channels` channels pools over. GroupNorm(8) needs 8 | channels;
/// with fewer or indivisible channels it falls back to gcd(8, channels) groups (defined here: the
/// small size has 4-channel blocks).
inline int norm_groups(int channels, const ModelOptions& options) {
  return options.group_norm ? std::gcd(kGroupNormGroups, channels) : channels;
}

template <typename Scalar>
struct ConvBlockWeights {
  int in_channels = 0, out_channels = 0;
  std::vector<Scalar> weight;  // [out, in, k, k]
  std::vector<Scalar> gamma;   // [out]
  std::vector<Scalar> beta;    // [out]
};

template <typename Scalar>
struct OperatorWeights {
  int kernel = 0;
  std::vector<ConvBlockWeights<Scalar>> blocks;
  std::vector<Scalar> head_weight;  // [3, channels of the last block]
  std::vector<Scalar> head_bias;    // [3]
};

/// out[o] = sum_c sum_{dy,dx} w[o,c,dy,dx] * in[c, y+dy-k/2, x+dx-k/2] (zero outside) for one sample.
template <typename Scalar>
void convolve(const Scalar* in, int in_channels, int height, int width, const Scalar* weight,
              int out_channels, int kernel, Scalar* out) {
  const int pad = kernel / 2;
  std::fill(out, out + int64_t{out_channels} * height * width, Scalar(0));
  for (int o = 0; o < out_channels; ++o)
    for (int c = 0; c < in_channels; ++c)
      for (int dy = 0; dy < kernel; ++dy)
        for (int dx = 0; dx < kernel; ++dx) {
          const Scalar w = weight[((int64_t{o} * in_channels + c) * kernel + dy) * kernel + dx];
          const int x_begin = std::max(0, pad - dx), x_end = std::min(width, width + pad - dx);
          for (int y = std::max(0, pad - dy); y < std::min(height, height + pad - dy); ++y) {
            const Scalar* src = in + (int64_t{c} * height + y + dy - pad) * width + dx - pad;
            Scalar* dst = out + (int64_t{o} * height + y) * width;
            for (int x = x_begin; x < x_end; ++x) dst[x] += w * src[x];
          }
        }
}

/// Normalizes each group of channels over (channels of the group, H, W), then the per-channel
/// affine map. groups == channels is InstanceNorm2d.
template <typename Scalar>
void normalize(Scalar* x, int channels, int64_t plane, const Scalar* gamma, const Scalar* beta, int groups) {
  const int per_group = channels / groups;
  const int64_t count = plane * per_group;
  for (int g = 0; g < groups; ++g) {
    Scalar* group = x + g * count;
    Scalar sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += group[i];
    const Scalar mean = sum / Scalar(count);
    Scalar squares = 0;
    for (int64_t i = 0; i < count; ++i) squares += (group[i] - mean) * (group[i] - mean);
    const Scalar inv_std = Scalar(1) / std::sqrt(squares / Scalar(count) + Scalar(kNormEps));
    for (int c = g * per_group; c < (g + 1) * per_group; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        Scalar& v = x[c * plane + i];
        v = (v - mean) * inv_std * gamma[c] + beta[c];
      }
  }
}

template <typename Scalar>
Scalar gelu(Scalar v, bool tanh_form) {
  if (tanh_form) {
    const Scalar k = Scalar(0.7978845608028654);  // sqrt(2 / pi)
    return Scalar(0.5) * v * (Scalar(1) + std::tanh(k * (v + Scalar(0.044715) * v * v * v)));
  }
  return Scalar(0.5) * v * (Scalar(1) + std::erf(v / std::sqrt(Scalar(2))));
}

/// O_theta on one sample x [3,H,W] into out [3,H,W].
template <typename Scalar>
void apply_operator(const OperatorWeights<Scalar>& weights, const Scalar* x, int height, int width,
                    const ModelOptions& options, Scalar* out) {
  const int64_t plane = int64_t{height} * width;
  std::vector<Scalar> current(x, x + kFieldChannels * plane), next;
  for (const ConvBlockWeights<Scalar>& block : weights.blocks) {
    next.assign(block.out_channels * plane, Scalar(0));
    convolve(current.data(), block.in_channels, height, width, block.weight.data(), block.out_channels,
             weights.kernel, next.data());
    normalize(next.data(), block.out_channels, plane, block.gamma.data(), block.beta.data(),
              norm_groups(block.out_channels, options));
    for (Scalar& v : next) v = gelu(v, options.tanh_gelu);
    current.swap(next);
  }
  const int last = weights.blocks.back().out_channels;
  for (int o = 0; o < kFieldChannels; ++o)
    for (int64_t i = 0; i < plane; ++i) {
      Scalar sum = weights.head_bias[o];
      for (int c = 0; c < last; ++c) sum += weights.head_weight[o * last + c] * current[c * plane + i];
      out[o * plane + i] = sum;
    }
}

/// The policy update of one value: the next state from the state x and the operator's output o.
/// The one definition every backend uses (also inside Kokkos and CUDA kernels).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar policy_update(Policy policy, Scalar x, Scalar o) {
  switch (policy) {
    case Policy::Autoregressive: return o;
    case Policy::Residual: return x + Scalar(kResidualDt) * o;
    case Policy::Convex: return Scalar(kConvexAlpha) * x + Scalar(1 - kConvexAlpha) * o;
  }
  return o;
}

/// The policy update of one sample: x <- policy(x, o).
template <typename Scalar>
void apply_policy(Policy policy, const Scalar* o, int64_t count, Scalar* x) {
  for (int64_t i = 0; i < count; ++i) x[i] = policy_update(policy, x[i], o[i]);
}

/// The trajectory [T, M, 3, H, W] of a rollout from x0 [3, H, W].
template <typename Scalar>
std::vector<Scalar> rollout(const OperatorWeights<Scalar>& weights, const Scalar* x0,
                            const Architecture& arch, Policy policy, const ModelOptions& options) {
  const int64_t field = arch.field_size();
  std::vector<Scalar> trajectory(int64_t{arch.steps} * arch.realizations * field);
  for (int m = 0; m < arch.realizations; ++m) std::copy(x0, x0 + field, trajectory.begin() + m * field);
  std::vector<Scalar> o(field);
  for (int t = 1; t < arch.steps; ++t)
    for (int m = 0; m < arch.realizations; ++m) {
      const Scalar* previous = trajectory.data() + (int64_t{t - 1} * arch.realizations + m) * field;
      Scalar* x = trajectory.data() + (int64_t{t} * arch.realizations + m) * field;
      std::copy(previous, previous + field, x);
      apply_operator(weights, previous, arch.height, arch.width, options, o.data());
      apply_policy(policy, o.data(), field, x);
    }
  return trajectory;
}

}  // namespace pb::reference::spinlock
