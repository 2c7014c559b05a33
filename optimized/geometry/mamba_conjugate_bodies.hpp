#pragma once
// geometry/mamba_conjugate's sign_vectors phase: the host body, on raw pointers. The
// Kokkos variant runs one block of 8-vectors per work item, both tensors in one kernel
// (optimized/geometry/mamba_conjugate-kokkos.cpp), and inlines it into its ISA clones;
// tests/geometry_mamba_conjugate_signs_test.cpp runs it at row counts verify's sizes do not have.
// Math: reference/geometry/mamba_conjugate.hpp.
//
// single_pass calls the reference's conjugate_element per value: a test of index % 8 the baseline
// (SSE2) build does not vectorize. Here a row of 8 is multiplied by the constant signs
// {1, -1, ..., -1}: exact (a product by -1 is the negation), and the compiler turns the row loop
// into whole-register multiplies.

#include <cstdint>

#include "optimized/common/integer_math.hpp"
#include "reference/geometry/mamba_conjugate.hpp"

namespace pb::geometry_kernels::sign_vectors {

namespace ref = pb::reference::geometry::mamba_conjugate;
using pb::optimized::ceil_div;
constexpr int kComponents = ref::kStateComponents;
// Rows of 8 per block (a work item): 4,000 rows are 128 kB of x and of the result, so the default
// size's 65,536 rows per tensor are 17 blocks (the last partial), a few per thread and tensor.
constexpr int64_t kBlockRows = 4000;

/// How many blocks cover `rows` rows of 8 (the last one partial).
inline int64_t blocks(int64_t rows) { return ceil_div(rows, kBlockRows); }

/// Block `block` of conj(x) for x [rows, 8]: out = x * {1, -1, ..., -1} row by row. Always
/// inlined: each ISA clone of the caller must get its own copy, not a call to the baseline one.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void block(const float* x, float* out, int64_t rows, int64_t block) {
  constexpr float kSigns[kComponents] = {1, -1, -1, -1, -1, -1, -1, -1};
  static_assert(kComponents == 8, "the signs above are one real and seven imaginary components");
  const int64_t begin = block * kBlockRows;
  const int64_t end = begin + kBlockRows < rows ? begin + kBlockRows : rows;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
  for (int64_t row = begin; row < end; ++row)
    for (int c = 0; c < kComponents; ++c) out[row * kComponents + c] = x[row * kComponents + c] * kSigns[c];
}

/// Work item `item` < 2 blocks(rows) of the kernel over both tensors: block `item` of r's result,
/// then block `item - blocks(rows)` of i's.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void both_tensors_block(const float* r, const float* i, float* r_conj, float* i_conj, int64_t rows, int64_t item) {
  const int64_t per_tensor = blocks(rows);
  if (item < per_tensor) return block(r, r_conj, rows, item);
  block(i, i_conj, rows, item - per_tensor);
}

}  // namespace pb::geometry_kernels::sign_vectors
