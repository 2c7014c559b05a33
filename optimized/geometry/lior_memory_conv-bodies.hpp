#pragma once
// geometry/lior_memory_conv: the per-element bodies of the device ladders (Kokkos kernels, CUDA
// kernels), written once as PB_HOST_DEVICE functions; tests/geometry_memconv_test.cpp runs them on
// the host over the whole index space against reference/geometry/lior_memory_conv.hpp.
//
// The FFT phase's layout: x zero-padded to L = 2N per (b, c) line, lines contiguous: xpad
// [B, C, L] (so one batched real FFT of B C lines of stride 1 fits FFTW's and cuFFT's plain
// "many" plans); spectra [B, C, L/2+1] of interleaved (re, im) floats (fftwf_complex and
// cufftComplex both are).

#include <cstdint>

#include "phasebench/host_device.hpp"
#include "reference/geometry/lior_memory_conv.hpp"

namespace pb::optimized::geometry::lior_memory_conv {

namespace ref = pb::reference::geometry::lior_memory_conv;

/// taps[t] = K(t+1), before the normalization.
PB_HOST_DEVICE inline void raw_tap_body(int64_t t, const float* params, float* taps) {
  taps[t] = ref::kernel_value(params, float(t + 1));
}

/// taps[t] /= |sum| + 1e-8 (sum reduced on the device).
PB_HOST_DEVICE inline void normalize_tap_body(int64_t t, const float* sum, float* taps) {
  taps[t] /= (*sum < 0 ? -*sum : *sum) + float(ref::kTapsSumEpsilon);
}

/// The direct form: one (b, t) row of C channels (row = b N + t), reference/'s direct_row.
PB_HOST_DEVICE inline void direct_body(int64_t row, const float* taps, const float* x, int64_t n, int64_t channels,
                                       float w0, float* out) {
  const int64_t b = row / n, t = row % n;
  ref::direct_row(taps, x + b * n * channels, t, channels, w0, out + row * channels);
}

/// xpad[(b C + c) L + t] = x[(b N + t) C + c]: value i of x into its padded line.
PB_HOST_DEVICE inline void pad_body(int64_t i, const float* x, int64_t n, int64_t channels, int64_t L, float* xpad) {
  const int64_t c = i % channels, bt = i / channels, t = bt % n, b = bt / n;
  xpad[(b * channels + c) * L + t] = x[i];
}

/// spec[i] *= kspec[i mod bins] / L (complex, interleaved): the product of the spectra, with
/// the 1/L the unnormalized inverse transforms leave out.
PB_HOST_DEVICE inline void pointwise_body(int64_t i, const float* kspec, int64_t bins, float inv_L, float* spec) {
  const float* k = kspec + 2 * (i % bins);
  float* v = spec + 2 * i;
  const float kr = k[0] * inv_L, ki = k[1] * inv_L, re = v[0] * kr - v[1] * ki, im = v[0] * ki + v[1] * kr;
  v[0] = re;
  v[1] = im;
}

/// out[i] = w0 x[i] + (1 - w0) conv, conv read from its padded line.
PB_HOST_DEVICE inline void blend_body(int64_t i, const float* x, const float* ypad, int64_t n, int64_t channels,
                                      int64_t L, float w0, float* out) {
  const int64_t c = i % channels, bt = i / channels, t = bt % n, b = bt / n;
  out[i] = w0 * x[i] + (1.f - w0) * ypad[(b * channels + c) * L + t];
}

}  // namespace pb::optimized::geometry::lior_memory_conv
