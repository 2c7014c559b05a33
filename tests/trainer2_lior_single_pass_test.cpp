// trainer2/lior_step's single pass (phase 9, optimized/trainer2/lior_step_bodies.hpp) on the host,
// block by block as the Kokkos kernel runs it, at row counts verify's sizes never have: several
// blocks, a partial last block, rows past the last group of 16 in a block. verify checks the
// variant's numbers at the workload's sizes; this, every row and every block of these.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "optimized/trainer2/lior_step_bodies.hpp"

namespace pb {
namespace {

namespace body = pb::optimized::trainer2;
namespace ref = pb::reference::trainer2;

struct Rows {
  std::vector<float> v, g, R;
};

Rows random_rows(int64_t rows) {
  std::mt19937 engine(static_cast<uint32_t>(rows));
  std::normal_distribution<float> normal(0, 1);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  Rows in;
  for (int64_t i = 0; i < rows * ref::kCoordinateDim; ++i) in.v.push_back(normal(engine));
  for (int i = 0; i < ref::kCoordinateDim; ++i) in.g.push_back(uniform(engine));  // a metric: no cancellation
  for (int64_t m = 0; m < rows; ++m) in.R.push_back(uniform(engine));
  return in;
}

TEST(Trainer2LiorSinglePass, EveryBlockComputesEveryRowAndTheSumsOfTheReference) {
  constexpr int64_t kBlock = body::kSinglePassBlockRows;
  // One row; a block's last group short; exactly one block; three blocks, the last partial.
  for (const int64_t rows : {int64_t{1}, int64_t{37}, kBlock, 2 * kBlock + 21}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    const Rows in = random_rows(rows);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> s(rows, nan), dlior(rows, nan);
    float sums[3] = {0, 0, 0};
    const int64_t blocks = body::single_pass_blocks(rows);
    EXPECT_EQ(blocks, (rows + kBlock - 1) / kBlock);
    for (int64_t block = 0; block < blocks; ++block)
      body::single_pass_block(in.v.data(), in.g.data(), in.R.data(), s.data(), dlior.data(), rows, block, sums);

    std::vector<double> v(in.v.begin(), in.v.end()), g(in.g.begin(), in.g.end()), R(in.R.begin(), in.R.end());
    std::vector<double> s_ref(rows), dlior_ref(rows);
    const auto means = ref::lior_step<double>(v.data(), R.data(), g.data(), rows, ref::kCoordinateDim, s_ref.data(),
                                              dlior_ref.data());
    for (int64_t m = 0; m < rows; ++m) {
      ASSERT_NEAR(s[m], s_ref[m], 1e-5 * s_ref[m]) << "row " << m;  // NaN (a row never written) fails too
      ASSERT_NEAR(dlior[m], dlior_ref[m], 1e-5 * dlior_ref[m]) << "row " << m;
    }
    const double count = static_cast<double>(rows);
    EXPECT_NEAR(sums[0] / count, means.mean_dlior, 1e-5 * means.mean_dlior);
    EXPECT_NEAR(sums[1] / count, means.mean_R, 1e-5 * means.mean_R);
    EXPECT_NEAR(sums[2] / count, means.mean_s, 1e-5 * means.mean_s);
  }
}

// A block adds to the sums it is given (Kokkos' reduction hands each work item a running partial),
// and writes no row outside its own.
TEST(Trainer2LiorSinglePass, ABlockAddsToItsPartialSumsAndWritesOnlyItsRows) {
  constexpr int64_t kBlock = body::kSinglePassBlockRows;
  const int64_t rows = 2 * kBlock + 21;
  const Rows in = random_rows(rows);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> s(rows, nan), dlior(rows, nan);
  float sums[3] = {100, 200, 300};
  body::single_pass_block(in.v.data(), in.g.data(), in.R.data(), s.data(), dlior.data(), rows, 1, sums);
  for (int64_t m = 0; m < rows; ++m) {
    const bool mine = m >= kBlock && m < 2 * kBlock;
    EXPECT_EQ(std::isnan(s[m]), !mine) << "row " << m;
    EXPECT_EQ(std::isnan(dlior[m]), !mine) << "row " << m;
  }
  double sum_R = 0;
  for (int64_t m = kBlock; m < 2 * kBlock; ++m) sum_R += in.R[m];
  EXPECT_NEAR(sums[1], 200 + sum_R, 1e-5 * (200 + sum_R));
  EXPECT_GT(sums[0], 100);
  EXPECT_GT(sums[2], 300);
}

}  // namespace
}  // namespace pb
