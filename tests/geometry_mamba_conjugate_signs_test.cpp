// geometry/mamba_conjugate's sign_vectors phase (phase 3, optimized/geometry/mamba_conjugate_bodies.hpp)
// on the host, block by block as the Kokkos kernel runs it, at row counts verify's sizes never
// have: several blocks, a partial last block, one row. The phase is exact: every value must be
// the reference's bit for bit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "optimized/geometry/mamba_conjugate_bodies.hpp"

namespace pb {
namespace {

namespace sv = pb::geometry_kernels::sign_vectors;
namespace ref = pb::reference::geometry::mamba_conjugate;
constexpr int64_t kRow = ref::kStateComponents;

std::vector<float> random_rows(int64_t rows) {
  std::mt19937 engine(static_cast<uint32_t>(rows));
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(static_cast<size_t>(rows * kRow));
  for (float& value : x) value = normal(engine);
  if (!x.empty()) x[0] = -0.0f;  // a signed zero keeps its sign where the reference keeps it
  if (x.size() > 1) x[1] = 0.0f;
  return x;
}

TEST(GeometryMambaConjugateSigns, EveryBlockWritesTheReferencesConjugateBitForBit) {
  for (const int64_t rows : {int64_t{1}, int64_t{37}, sv::kBlockRows, 2 * sv::kBlockRows + 21}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const std::vector<float> x = random_rows(rows);
    std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN()), expected(x.size());
    EXPECT_EQ(sv::blocks(rows), (rows + sv::kBlockRows - 1) / sv::kBlockRows);
    for (int64_t block = 0; block < sv::blocks(rows); ++block) sv::block(x.data(), out.data(), rows, block);
    ref::conjugate(x.data(), rows * kRow, expected.data());
    for (size_t at = 0; at < x.size(); ++at) {
      uint32_t got_bits = 0, expected_bits = 0;
      std::memcpy(&got_bits, &out[at], sizeof got_bits);
      std::memcpy(&expected_bits, &expected[at], sizeof expected_bits);
      ASSERT_EQ(got_bits, expected_bits) << "value " << at << ": " << out[at] << " vs " << expected[at];
    }
  }
}

// A block writes its own rows and no other (the kernel runs blocks on several threads).
TEST(GeometryMambaConjugateSigns, ABlockWritesOnlyItsRows) {
  const int64_t rows = 2 * sv::kBlockRows + 21;
  const std::vector<float> x = random_rows(rows);
  std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
  sv::block(x.data(), out.data(), rows, 1);
  for (int64_t at = 0; at < rows * kRow; ++at) {
    const int64_t row = at / kRow;
    ASSERT_EQ(std::isnan(out[at]), !(row >= sv::kBlockRows && row < 2 * sv::kBlockRows)) << "row " << row;
  }
}

// The kernel's 2 blocks(rows) work items, run through both_tensors_block, write both results whole.
TEST(GeometryMambaConjugateSigns, TheWorkItemsOfBothTensorsWriteBothResults) {
  for (const int64_t rows : {int64_t{9}, 2 * sv::kBlockRows + 21}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const std::vector<float> r = random_rows(rows), i = random_rows(rows + 1);  // other values than r's
    std::vector<float> r_conj(r.size(), std::numeric_limits<float>::quiet_NaN()), i_conj(r_conj);
    for (int64_t item = 0; item < 2 * sv::blocks(rows); ++item)
      sv::both_tensors_block(r.data(), i.data(), r_conj.data(), i_conj.data(), rows, item);
    std::vector<float> r_expected(r.size()), i_expected(r.size());
    ref::conjugate(r.data(), rows * kRow, r_expected.data());
    ref::conjugate(i.data(), rows * kRow, i_expected.data());
    for (int64_t at = 0; at < rows * kRow; ++at) {
      ASSERT_EQ(r_conj[at], r_expected[at]) << "r, value " << at;  // NaN: never written
      ASSERT_EQ(i_conj[at], i_expected[at]) << "i, value " << at;
    }
  }
}

}  // namespace
}  // namespace pb
