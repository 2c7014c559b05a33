#pragma once
// Non-temporal stores of complex fields, 16 floats (8 complex values) at a time, for the geometry
// phases that write an output field once and read it no more in the iteration: hamiltonian's and
// bayesian's streamed_stores (hamiltonian_bodies.hpp, bayesian_bodies.hpp); lior_optimizer_step's
// streaming_update uses its guard and store_destination for stores of 4 floats of its own.
//
// Why (docs/geometry.md, "The limit of hamiltonian" and "The limit of bayesian"): an ordinary store
// first reads its line (write-allocate), and the output lines it leaves in the caches push out the
// inputs, which the next pass or iteration reads again. A non-temporal store writes the line
// without reading it and leaves nothing behind; its writer fences (_mm_sfence) once after its last
// one, before anyone reads the output.
//
// _mm_stream_ps needs a 16-byte aligned address (misaligned, it faults), so only the whole blocks
// from the run's first 16-byte boundary go out this way (streamed_part); the floats before and
// after them go by ordinary stores.

#include <cstdint>
#include <cstring>

#if defined(__SSE__)
#include <xmmintrin.h>  // _mm_stream_ps: a non-temporal store in every x86-64 ISA clone
#define PB_GEOMETRY_STREAMING_STORES 1
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value, always inlined into one ISA clone
#endif

namespace pb::optimized::geometry::streaming {

constexpr int64_t kBlockFloats = 16;  // one AVX-512 vector, four SSE non-temporal stores

/// The floats [begin, end) of a run of `floats` at `out` that go out by non-temporal stores:
/// whole blocks of 16 starting where the output is 16-byte aligned. `begin` is even, so that a
/// block starts on a complex value and holds 8 whole ones; a run whose first 16-byte boundary lies
/// at an odd float has no streamed part.
struct StreamedPart {
  int64_t begin = 0, end = 0;
};

inline StreamedPart streamed_part(const float* out, int64_t floats) {
  const auto misalignment = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) % 16);  // 0, 4, 8 or 12
  const int64_t head = (16 - misalignment) % 16 / 4;  // floats before the first boundary
  if (head % 2 != 0) return {};
  const int64_t blocks = (floats - head) / kBlockFloats;
  if (blocks <= 0) return {};
  return {head, head + blocks * kBlockFloats};
}

using Block = float __attribute__((vector_size(kBlockFloats * sizeof(float))));
using HalfBlock = float __attribute__((vector_size(kBlockFloats / 2 * sizeof(float))));

inline Block load_block(const float* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

/// One value per complex value of a block (8 consecutive ones at p) spread to its real and
/// imaginary lanes (one permute).
__attribute__((always_inline)) inline Block spread_to_complex_lanes(const float* p) {
  HalfBlock values;
  std::memcpy(&values, p, sizeof values);
  return __builtin_shufflevector(values, values, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
}

#ifdef PB_GEOMETRY_STREAMING_STORES
constexpr int64_t kStoreFloats = 4;  // one _mm_stream_ps

/// Where a non-temporal store of 4 floats goes. AddressSanitizer does not instrument non-temporal
/// stores and UBSan does not check their alignment, so in a sanitizer build the destination is
/// first read as an __m128: a store out of bounds gets ASan's report, a misaligned one (which
/// would fault) UBSan's. Elsewhere nothing is read.
__attribute__((always_inline)) inline float* store_destination(float* out) {
#ifdef __SANITIZE_ADDRESS__
  const __m128 seen = *reinterpret_cast<const __m128*>(out);
  asm volatile("" : : "x"(seen));  // the read must happen
#endif
  return out;
}

/// The block's four quarters by non-temporal stores at out (16-byte aligned). The offsets are
/// multiples of kStoreFloats, so that each store is as aligned as out.
__attribute__((always_inline)) inline void stream_block(float* out, const Block& value) {
  _mm_stream_ps(store_destination(out), __builtin_shufflevector(value, value, 0, 1, 2, 3));
  _mm_stream_ps(store_destination(out + kStoreFloats), __builtin_shufflevector(value, value, 4, 5, 6, 7));
  _mm_stream_ps(store_destination(out + 2 * kStoreFloats), __builtin_shufflevector(value, value, 8, 9, 10, 11));
  _mm_stream_ps(store_destination(out + 3 * kStoreFloats), __builtin_shufflevector(value, value, 12, 13, 14, 15));
}
#endif

/// A work item's share of `count` things (sites, complex values) split among `items`: contiguous,
/// in order, sizes within one.
struct ItemRange {
  int64_t first, last;
};

inline ItemRange range_of_item(int64_t item, int64_t items, int64_t count) {
  return {count * item / items, count * (item + 1) / items};
}

}  // namespace pb::optimized::geometry::streaming

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
