#pragma once
// trainer2/lior_step on CUDA: the per-element bodies of the kernels in lior_step-cuda.cu.
//
//   s[m] = sqrt(max(0, sum_i g[i] * v[m,i]^2) + eps);  dlior[m] = R[m] * s[m];  three means
//
// Each function is what one GPU thread does for its index; the .cu file only wraps them in
// __global__ kernels and picks the launch shape. They compile as plain C++ too, so
// tests/cuda/lior_step_cuda_bodies_test.cpp runs them on the host over the whole index space,
// in the same order a kernel does, and compares with reference/trainer2/lior_step.hpp. The
// per-row speed itself (quadratic_form, clamped_speed) is the reference's PB_HOST_DEVICE code,
// instantiated for float.

#include <cstdint>

#include "backends/cuda/host_device.hpp"
#include "reference/trainer2/lior_step.hpp"

namespace pb::cuda_backend::lior_step {

namespace ref = pb::reference::trainer2;

constexpr int kDim = ref::kCoordinateDim;  // n = 8 coordinates per row

// Threads of a reduction block: a power of two (the tree halves it), and one block does the
// whole sum, so the summation order is fixed from run to run (no atomics, no second pass; the
// largest size has ~49k rows, a few hundred per thread).
constexpr int kReductionThreads = 256;

/// s for one row of v: ref::clamped_speed(ref::quadratic_form(...)), as reference lior_step
/// computes it (std::sqrt of a float is sqrtf, correctly rounded in CUDA unless fast math is on).
PB_HOST_DEVICE inline float lior_speed(const float* v, const float* g, int64_t row) {
  return ref::clamped_speed(ref::quadratic_form(g, v + row * kDim));
}

// ---- elementwise kernels: one thread per row --------------------------------------------------

/// The quadratic-form kernel: s[row].
PB_HOST_DEVICE inline void speed_row(int64_t row, const float* v, const float* g, float* s) {
  s[row] = lior_speed(v, g, row);
}

/// The dlior kernel without fused_lior_spd: dlior[row] from an s computed by speed_row.
PB_HOST_DEVICE inline void dlior_row(int64_t row, const float* R, const float* s, float* dlior) {
  dlior[row] = R[row] * s[row];
}

/// The fused kernel (fused_lior_spd): s computed once, written with dlior.
PB_HOST_DEVICE inline void fused_lior_row(int64_t row, const float* v, const float* R,
                                          const float* g, float* s, float* dlior) {
  const float speed = lior_speed(v, g, row);
  s[row] = speed;
  dlior[row] = R[row] * speed;
}

// ---- reductions: one block of kReductionThreads; each thread sums a strided slice, then the ---
// ---- block adds the partial sums pairwise (tree_step with half = threads/2, ..., 1) -----------

/// The three sums of the metrics, reduced together with batched_metrics. An aggregate without
/// constructors, so the kernel can hold an array of them in shared memory.
struct MetricSums {
  float dlior;
  float R;
  float s;
};

PB_HOST_DEVICE inline float add(float a, float b) { return a + b; }
PB_HOST_DEVICE inline MetricSums add(MetricSums a, MetricSums b) {
  return {a.dlior + b.dlior, a.R + b.R, a.s + b.s};
}

/// Thread `thread` of `threads`: x[thread] + x[thread + threads] + ... over rows, in that order.
PB_HOST_DEVICE inline float strided_sum(const float* x, int64_t rows, int thread, int threads) {
  float sum = 0.f;
  for (int64_t row = thread; row < rows; row += threads) sum += x[row];
  return sum;
}

/// strided_sum of dlior, R and s at once (one pass over the three arrays).
PB_HOST_DEVICE inline MetricSums strided_metric_sums(const float* dlior, const float* R,
                                                     const float* s, int64_t rows, int thread,
                                                     int threads) {
  MetricSums sums{0.f, 0.f, 0.f};
  for (int64_t row = thread; row < rows; row += threads) {
    sums = add(sums, MetricSums{dlior[row], R[row], s[row]});
  }
  return sums;
}

/// One level of the block's pairwise sum: threads below `half` add the partial `half` above.
/// Within a level no slot is both read and written, so threads may run in any order.
template <typename Sum>
PB_HOST_DEVICE inline void tree_step(Sum* partials, int thread, int half) {
  if (thread < half) partials[thread] = add(partials[thread], partials[thread + half]);
}

PB_HOST_DEVICE inline float mean_of(float sum, int64_t rows) {
  return sum / static_cast<float>(rows);
}

/// The means in the order the workload names them: {mean_dlior, mean_R, mean_s}.
PB_HOST_DEVICE inline void write_metric_means(const MetricSums& sums, int64_t rows, float* means) {
  means[0] = mean_of(sums.dlior, rows);
  means[1] = mean_of(sums.R, rows);
  means[2] = mean_of(sums.s, rows);
}

}  // namespace pb::cuda_backend::lior_step
