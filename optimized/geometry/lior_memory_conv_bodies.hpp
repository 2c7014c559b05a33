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

#include "optimized/common/integer_math.hpp"
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

/// v *= k / L for one complex value (interleaved re, im).
PB_HOST_DEVICE inline void scaled_product(const float* k, float inv_L, float* v) {
  const float kr = k[0] * inv_L, ki = k[1] * inv_L, re = v[0] * kr - v[1] * ki, im = v[0] * ki + v[1] * kr;
  v[0] = re;
  v[1] = im;
}

/// spec[i] *= kspec[i mod bins] / L (complex, interleaved): the product of the spectra, with
/// the 1/L the unnormalized inverse transforms leave out.
PB_HOST_DEVICE inline void pointwise_body(int64_t i, const float* kspec, int64_t bins, float inv_L, float* spec) {
  scaled_product(kspec + 2 * (i % bins), inv_L, spec + 2 * i);
}

/// out[i] = w0 x[i] + (1 - w0) conv, conv read from its padded line.
PB_HOST_DEVICE inline void blend_body(int64_t i, const float* x, const float* ypad, int64_t n, int64_t channels,
                                      int64_t L, float w0, float* out) {
  const int64_t c = i % channels, bt = i / channels, t = bt % n, b = bt / n;
  out[i] = w0 * x[i] + (1.f - w0) * ypad[(b * channels + c) * L + t];
}

// ---- blocked_fft: a chunk of `count` lines from line `first` on, in buffers of the chunk's own ----
// (line l of the chunk at l L), on the host: the values and arithmetic of pad_body,
// pointwise_body and blend_body. Time runs in the outer loop: the chunk's lines are neighbouring
// channels, so each step t reads (and writes) them side by side in one or two cache lines of x,
// where a loop per line strides through a cache line per value. Count > 0 says count == Count,
// so that the loop over the lines unrolls (full chunks); Count = 0 takes count as it comes.

inline constexpr int64_t kMaxChunkLines = 8;

/// How many chunks of chunk_lines lines the lines take (the last one may be shorter).
inline int64_t chunk_count(int64_t lines, int64_t chunk_lines) { return ceil_div(lines, chunk_lines); }

struct LineChunk {
  int64_t first, count;
};

/// Chunk `chunk`'s lines: from chunk chunk_lines on, chunk_lines of them or what is left.
inline LineChunk line_chunk(int64_t chunk, int64_t lines, int64_t chunk_lines) {
  const int64_t first = chunk * chunk_lines, left = lines - first;
  return {first, left < chunk_lines ? left : chunk_lines};
}

struct ChunkRange {
  int64_t begin, end;
};

/// Slot `slot`'s share of the chunks, one contiguous range per slot; the slots' lengths differ by
/// one at most and together they cover [0, chunks) once.
inline ChunkRange slot_chunks(int64_t slot, int64_t slots, int64_t chunks) {
  return {slot * chunks / slots, (slot + 1) * chunks / slots};
}

/// convolve(chunk) for each chunk of slot `slot`'s share, in order: a slot's work in blocked_fft.
template <class ConvolveChunk>
inline void for_slot_chunks(int64_t slot, int64_t slots, int64_t chunks, ConvolveChunk&& convolve) {
  const auto [begin, end] = slot_chunks(slot, slots, chunks);
  for (int64_t chunk = begin; chunk < end; ++chunk) convolve(chunk);
}

/// Where line first + l = b C + c starts in x and out [B, N, C]: b N C + c, for l < count.
inline void line_starts(int64_t n, int64_t channels, int64_t first, int64_t count, int64_t* starts) {
  for (int64_t l = 0; l < count; ++l) starts[l] = (first + l) / channels * n * channels + (first + l) % channels;
}

/// pad[l L + t] = x[(b N + t) C + c] for t < N, line first + l = b C + c; pad past N is not
/// touched (it stays the zeros it was given). count <= kMaxChunkLines.
template <int64_t Count = 0>
inline void pad_lines(const float* x, int64_t n, int64_t channels, int64_t L, int64_t first, int64_t count,
                      float* pad) {
  const int64_t lines = Count > 0 ? Count : count;
  int64_t starts[kMaxChunkLines];
  line_starts(n, channels, first, lines, starts);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t l = 0; l < lines; ++l) pad[l * L + t] = x[starts[l] + t * channels];
}

/// pointwise_body over a chunk's count lines of bins values each: spec *= kspec / L.
inline void multiply_spectra(const float* kspec, int64_t bins, int64_t count, float inv_L, float* spec) {
  for (int64_t l = 0; l < count; ++l) {
    float* line = spec + 2 * l * bins;
    for (int64_t k = 0; k < bins; ++k) scaled_product(kspec + 2 * k, inv_L, line + 2 * k);
  }
}

/// out[(b N + t) C + c] = w0 x[...] + (1 - w0) y[l L + t] for t < N, line first + l = b C + c.
/// count <= kMaxChunkLines.
template <int64_t Count = 0>
inline void blend_lines(const float* x, const float* y, int64_t n, int64_t channels, int64_t L, int64_t first,
                        int64_t count, float w0, float* out) {
  const int64_t lines = Count > 0 ? Count : count;
  int64_t starts[kMaxChunkLines];
  line_starts(n, channels, first, lines, starts);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t l = 0; l < lines; ++l) {
      const int64_t i = starts[l] + t * channels;
      out[i] = w0 * x[i] + (1.f - w0) * y[l * L + t];
    }
}

}  // namespace pb::optimized::geometry::lior_memory_conv
