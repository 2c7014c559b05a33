#pragma once
// geometry/lior_memory_conv: Liorhybrid's LIoR memory kernel (models/lior_kernel.py) applied as a
// causal convolution along the sequence, written as the obviously right loops. Templated on the
// scalar: Scalar = double is the oracle; Scalar = float is timed as the serial baseline.
// Definition: suites/geometry/lior_memory_conv.cpp; suite page: docs/geometry.md.
//
//   K(tau) = softmax(wl) . [ alpha e^{-beta tau},  gamma tau^{-delta} e^{-xi tau},
//                            eta cos(omega tau + phi) e^{-zeta tau} ]
//            tau clamped to >= 0.1, every exponent argument (-beta tau, -xi tau, -zeta tau) to
//            [-20, 20], K to [-100, 100]
//   taps    k_t = K(t + 1) / (|sum_{t'<N} K(t' + 1)| + 1e-8)         t = 0 .. N-1
//   conv[b,t,c] = sum_{s<=t} k_{t-s} x[b,s,c]                        (causal, per channel)
//   out[b,t,c]  = w0 x[b,t,c] + (1 - w0) conv[b,t,c]                 w0 = softmax(wl)[0]
//
// The kernel's parameters are one array p[13] = (wl0, wl1, wl2, alpha, beta, gamma, delta, xi,
// eta, omega, phi, zeta, w0) in that order (kParam* below). w0 is the original's blend weight,
// softmax(weight_logits)[0] of the same kernel: an input of its own here, whose default is that
// softmax of wl's defaults (1, 0, 0), e / (e + 2) = 0.5761 (suites/geometry/lior_memory_conv.hpp).

#include <cmath>
#include <cstdint>
#include <vector>

#include "phasebench/host_device.hpp"

namespace pb::reference::geometry::lior_memory_conv {

enum KernelParam : int {
  kWl0, kWl1, kWl2, kAlpha, kBeta, kGamma, kDelta, kXi, kEta, kOmega, kPhi, kZeta, kW0, kParams
};
constexpr double kTauMin = 0.1, kExponentBound = 20, kKernelBound = 100;
constexpr double kTapsSumEpsilon = 1e-8;  // the original's |sum K| + 1e-8 (no division by 0)

/// 1 / (|sum| + 1e-8): the factor that normalizes the taps.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar taps_scale(Scalar sum) {
  return Scalar(1) / ((sum < 0 ? -sum : sum) + Scalar(kTapsSumEpsilon));
}

template <typename Scalar>
PB_HOST_DEVICE inline Scalar clamp_to(Scalar v, Scalar low, Scalar high) {
  return v < low ? low : (v > high ? high : v);
}

/// e^{clamp(a, -20, 20)}: the original clamps every exponent argument.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar clamped_exp(Scalar a) {
  return std::exp(clamp_to(a, Scalar(-kExponentBound), Scalar(kExponentBound)));
}

/// K(tau) for the parameters p (tau before the clamp).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar kernel_value(const Scalar* p, Scalar tau) {
  tau = tau < Scalar(kTauMin) ? Scalar(kTauMin) : tau;
  const Scalar top = p[kWl0] > p[kWl1] ? (p[kWl0] > p[kWl2] ? p[kWl0] : p[kWl2]) : (p[kWl1] > p[kWl2] ? p[kWl1] : p[kWl2]);
  const Scalar e0 = std::exp(p[kWl0] - top), e1 = std::exp(p[kWl1] - top), e2 = std::exp(p[kWl2] - top);
  const Scalar exponential = p[kAlpha] * clamped_exp(-p[kBeta] * tau);
  const Scalar power_law = p[kGamma] * std::pow(tau, -p[kDelta]) * clamped_exp(-p[kXi] * tau);
  const Scalar oscillation = p[kEta] * std::cos(p[kOmega] * tau + p[kPhi]) * clamped_exp(-p[kZeta] * tau);
  const Scalar k = (e0 * exponential + e1 * power_law + e2 * oscillation) / (e0 + e1 + e2);
  return clamp_to(k, Scalar(-kKernelBound), Scalar(kKernelBound));
}

/// The N taps k_t = K(t+1) / (|sum K| + 1e-8). The sum runs from the tail: past t ~ 20 every K is the
/// clamped floor (~1e-9), which vanishes when added to a running sum of ~0.5 in fp32 (ulp 6e-8):
/// summed head first, N = 4096 taps lose part of the sum (docs/geometry.md), tail first they keep it.
template <typename Scalar>
void taps(const Scalar* p, int64_t n, Scalar* k) {
  for (int64_t t = 0; t < n; ++t) k[t] = kernel_value(p, Scalar(t + 1));
  Scalar sum = 0;
  for (int64_t t = n - 1; t >= 0; --t) sum += k[t];
  const Scalar scale = taps_scale(sum);
  for (int64_t t = 0; t < n; ++t) k[t] *= scale;
}

constexpr int64_t kChannelBlock = 16;  // accumulators held in registers: 16 channels at a time

/// acc[j] += sum_{s<=t} k[t-s] x[s, j] for j < width (Width: the width when known at compile time).
template <typename Scalar, int64_t Width>
PB_HOST_DEVICE inline void causal_sum(const Scalar* k, const Scalar* x, int64_t t, int64_t stride, int64_t width,
                                      Scalar* acc) {
  for (int64_t s = 0; s <= t; ++s) {
    const Scalar tap = k[t - s];
    const Scalar* xs = x + s * stride;
    for (int64_t j = 0; j < (Width ? Width : width); ++j) acc[j] += tap * xs[j];
  }
}

/// out of one (b, t) row of C channels (x[b] row-major [N, C]): the causal sum over s <= t, per
/// block of 16 channels, in local accumulators over contiguous channel loads (it vectorizes).
template <typename Scalar>
PB_HOST_DEVICE inline void direct_row(const Scalar* k, const Scalar* xb, int64_t t, int64_t channels, Scalar w0,
                                      Scalar* out_row) {
  for (int64_t c0 = 0; c0 < channels; c0 += kChannelBlock) {
    const int64_t width = channels - c0 < kChannelBlock ? channels - c0 : kChannelBlock;
    Scalar acc[kChannelBlock] = {};
    if (width == kChannelBlock) {  // a constant trip count: the compiler keeps acc in registers
      causal_sum<Scalar, kChannelBlock>(k, xb + c0, t, channels, kChannelBlock, acc);
    } else {
      causal_sum<Scalar, 0>(k, xb + c0, t, channels, width, acc);
    }
    const Scalar* xt = xb + t * channels + c0;
    for (int64_t j = 0; j < width; ++j) out_row[c0 + j] = w0 * xt[j] + (Scalar(1) - w0) * acc[j];
  }
}

/// The whole workload: x [B, N, C] -> out [B, N, C], taps from p.
template <typename Scalar>
void lior_memory_conv(const Scalar* p, const Scalar* x, int64_t batch, int64_t n, int64_t channels, Scalar* out) {
  std::vector<Scalar> k(static_cast<size_t>(n));
  taps(p, n, k.data());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < n; ++t)
      direct_row(k.data(), x + b * n * channels, t, channels, p[kW0], out + (b * n + t) * channels);
}

}  // namespace pb::reference::geometry::lior_memory_conv
