#pragma once
// geometry/lior_memory_conv: what every variant shares: the shape of each size, the input and
// output names, the phase names and the kernel's parameter values. Math:
// reference/geometry/lior_memory_conv.hpp. Definition (catalog, tolerances, work):
// lior_memory_conv.cpp.

#include <cmath>
#include <cstdint>
#include <string>

#include "phasebench/workload.hpp"
#include "reference/geometry/lior_memory_conv.hpp"

namespace pb::suites::geometry::lior_memory_conv {

namespace ref = pb::reference::geometry::lior_memory_conv;

inline const std::string kWorkload = "geometry/lior_memory_conv";
inline const std::string kInput = "x";                     // [B, N, C]
inline const std::string kKernelParams = "kernel_params";  // [13], ref::KernelParam order
inline const std::string kOutput = "out";                  // [B, N, C]

// The optimization each phase adds (catalog: lior_memory_conv.cpp).
inline constexpr const char* kDeviceTaps = "device_taps";  // the original's forward: taps by tensor ops
inline constexpr const char* kFftConv = "fft_conv";        // beyond the seed: O(N log N) by FFT
// An extra rung, not the original's forward: the weights read to the host (.cpu().numpy(), which
// the original has only in LiorKernel.extra_repr, run when the module is printed).
inline constexpr const char* kHostTaps = "host_taps";
// beyond the seed: fft_conv's transforms in cache-sized chunks of lines, the chunks across threads
inline constexpr const char* kBlockedFft = "blocked_fft";

struct ConvShape {
  int64_t batch, length, channels;
  int64_t values() const { return batch * length * channels; }
  /// The real FFT length: >= 2N so that the circular convolution of the zero-padded sequences is
  /// the linear one on t < N.
  int64_t fft_length() const { return 2 * length; }
};

inline ConvShape conv_shape(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {2, 13, 3};
    case SizeName::Default:
      return {8, 4096, 64};
    case SizeName::Large:
      return {16, 16384, 64};
    case SizeName::Scaled:  // a scale grows the batch (at least one); N and the channels stay the default's
      return {scaling::count(8, size.scale()), 4096, 64};
    case SizeName::Random:  // any N (the FFT length 2N need not be a power of two), any channels
      return {random_shape::count(size, 0, 1, 4), random_shape::count(size, 1, 1, 64),
              random_shape::count(size, 2, 1, 24)};
  }
  return {2, 13, 3};
}

/// The definition's parameter values, in ref::KernelParam order: wl = (1, 0, 0),
/// alpha = beta = xi = zeta = 1, gamma = eta = e^-1, delta = 0.5, omega = 1, phi = 0, and the blend
/// weight w0 = softmax(wl)[0] = e / (e + 2) = 0.5761, as the original derives it from its logits.
inline double kernel_parameter(int index) {
  const double inv_e = 0.36787944117144233;
  double values[ref::kParams] = {1, 0, 0, 1, 1, inv_e, 0.5, 1, inv_e, 1, 0, 1, 0};
  values[ref::kW0] = std::exp(values[ref::kWl0]) /
                     (std::exp(values[ref::kWl0]) + std::exp(values[ref::kWl1]) + std::exp(values[ref::kWl2]));
  return values[index];
}

}  // namespace pb::suites::geometry::lior_memory_conv
