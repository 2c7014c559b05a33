#pragma once
// e^x in fp32 as an expression the compiler vectorizes, on a float or lane by lane on a GCC vector
// of floats (simd_lanes.hpp): the exponential of the vectorized phases of geometry (bayesian's
// weights, christoffel's GELU and softplus), adaptive, energy_flow and trainer2. glibc's expf is
// one call per value (its vector versions are used only with -ffast-math), and a call per value
// keeps a loop scalar. This is the textbook construction: x = n ln2 + r with |r| <= ln2/2
// (Cody-Waite, ln2 in two parts), e^r by its Taylor polynomial to degree 7 (truncation below 1e-8
// relative), and 2^n applied as two factors 2^(n/2) 2^(n - n/2), so that results down to the
// subnormals are formed and everything below e^-104 is exactly 0, as expf gives.
//
// Domain: -4e6 <= x <= 0 (bayesian's weights -|F - E|^2 / tau; the round-to-integer trick needs
// |x log2 e| < 2^22). Within 1 ulp of glibc's expf, 0 exactly where expf is 0, e^0 = e^-0 = 1
// exactly: tests/geometry_field_test.cpp checks a sample of [-200, 0] and every float where results
// turn subnormal.

#include <cstdint>
#include <cstring>

#include "phasebench/host_device.hpp"

namespace pb::optimized::simd {

// A vector Float is returned by value; the callers inline it into one ISA clone, so the ABI GCC warns
// about (a 64-byte vector returned without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/// x = n ln2 + r, |r| <= ln2/2: e^r (`mantissa`) and n (`exponent`), on Float = float (Int =
/// int32_t), or on a GCC vector of floats (Int the vector of int32_t of the same size:
/// simd_lanes.hpp), where every operation and select applies lane by lane: the same floats either
/// way.
// Always inlined: a vector Float's callers are ISA clones (AVX-512, AVX2) whose vectors an
// out-of-line copy, compiled for the baseline ISA, would receive in other registers, and GCC does
// not inline these into every clone by its own choice.
#if defined(__GNUC__)
#define PB_EXP_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define PB_EXP_ALWAYS_INLINE inline
#endif

template <typename Float, typename Int>
struct ExpParts {
  Float mantissa;
  Int exponent;
};

template <typename Float, typename Int>
PB_HOST_DEVICE PB_EXP_ALWAYS_INLINE ExpParts<Float, Int> exp_parts(const Float& x) {
  // Adding 1.5 * 2^23 rounds x log2 e to the nearest integer in the low bits of the sum.
  const float shifter = 12582912.0f;
  const Float shifted = x * 1.44269504088896341f + shifter;
  const Float n = shifted - shifter;
  Int shifted_bits;
  int32_t shifter_bits;
  std::memcpy(&shifted_bits, &shifted, sizeof shifted);
  std::memcpy(&shifter_bits, &shifter, sizeof shifter);
  const Float r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  Float p = r * (1.0f / 5040) + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return {p, shifted_bits - shifter_bits};
}

/// e^x on the whole domain above.
template <typename Float, typename Int>
PB_HOST_DEVICE PB_EXP_ALWAYS_INLINE Float exp_nonpositive_of(const Float& x) {
  const ExpParts<Float, Int> parts = exp_parts<Float, Int>(x);
  // An integer clamp (a float one is a branch GCC does not vectorize under strict IEEE):
  // 2^-127 2^-127 is two zero factors, so e^x is exactly 0 from x = -176 down.
  const Int exponent = parts.exponent < -254 ? -254 : parts.exponent;
  const Int half = exponent >> 1;
  const Int first_bits = (half + 127) << 23, second_bits = (exponent - half + 127) << 23;
  Float first, second;
  std::memcpy(&first, &first_bits, sizeof first);
  std::memcpy(&second, &second_bits, sizeof second);
  return parts.mantissa * first * second;
}

/// e^x for -87 <= x <= 0, where e^x is a normal float: one factor 2^n, no clamp (the same floats
/// as exp_nonpositive_of there; the test checks every float of the range).
template <typename Float, typename Int>
PB_HOST_DEVICE PB_EXP_ALWAYS_INLINE Float exp_normal_of(const Float& x) {
  const ExpParts<Float, Int> parts = exp_parts<Float, Int>(x);
  const Int scale_bits = (parts.exponent + 127) << 23;
  Float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return parts.mantissa * scale;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

PB_HOST_DEVICE inline float exp_nonpositive(float x) { return exp_nonpositive_of<float, int32_t>(x); }

}  // namespace pb::optimized::simd
