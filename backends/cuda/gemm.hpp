#pragma once
// What a CUDA variant hands to cuBLAS, as plain C++ (no CUDA headers), so that host tests build
// the very same parameters and run them through a naive GEMM: the shape of one strided batched
// column-major GEMM, and bfloat16 as raw bits with its conversions (CUDA_R_16BF's storage).
// The cuBLAS side is backends/cuda/cublas_gemm.hpp.

#include <cstdint>
#include <cstring>

#include "backends/cuda/host_device.hpp"

namespace pb::cuda_backend {

/// A bfloat16 as its 16 bits: the upper half of an IEEE fp32 (8 exponent, 7 mantissa bits).
using Bf16 = uint16_t;

/// fp32 -> bf16, round to nearest, ties to even (what __float2bfloat16_rn and oneDNN do); NaN
/// stays a (quiet) NaN, and values past the largest bf16 round to infinity.
PB_HOST_DEVICE inline Bf16 to_bf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<Bf16>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<Bf16>(bits >> 16);
}

PB_HOST_DEVICE inline float from_bf16(Bf16 value) {
  const uint32_t bits = uint32_t{value} << 16;
  float result;
  memcpy(&result, &bits, sizeof result);
  return result;
}

/// Stores an fp32 value as an operand of type float or Bf16.
PB_HOST_DEVICE inline void store_operand(float& destination, float value) { destination = value; }
PB_HOST_DEVICE inline void store_operand(Bf16& destination, float value) { destination = to_bf16(value); }

/// One strided batched GEMM in cuBLAS's column-major terms: for b < batch,
///   C_b (m x n, leading dimension ldc) = op(A_b) (m x k) * op(B_b) (k x n)
/// with X_b = X + b * stride_x, op(X) = X or X^T, alpha 1 and beta 0. A stride of 0 shares the
/// operand across the batch.
struct GemmShape {
  bool transpose_a = false, transpose_b = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 1;
};

}  // namespace pb::cuda_backend
