// geometry/bayesian's pass bodies (optimized/geometry/bayesian_bodies.hpp) on the host: pass 1
// (the weights and Z's terms) against the weights one by one and the terms summed in double, its
// float lanes at most one block deep; streamed_stores' pass 2 against vectorized_weights'
// (posterior_update_of_run) bit for bit, in both branches, at range lengths with and without
// whole blocks, at every alignment of the posterior and of the update (the same or not), with
// guards around every array; the work items' ranges; a sanitizer build's report of a streamed
// block out of bounds or misaligned; and streamed_stores through verify (whose small size's two
// work items both hold whole blocks).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "guarded_floats.hpp"
#include "optimized/common/streamed_stores.hpp"
#include "optimized/geometry/bayesian_bodies.hpp"
#include "process.hpp"
#include "reference/geometry/bayesian.hpp"

// The header's block functions take and return 64-byte vectors; they are always inlined, so the
// ABI GCC warns about at their call sites (such a vector passed without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb {
namespace {

namespace body = pb::optimized::geometry::bayesian_runs;
namespace streaming = pb::optimized::geometry::streaming;
namespace ref = pb::reference::geometry;

TEST(BayesianStreamed, BothOutputsStreamOnlyWhereTheyAreAlignedAlike) {
  GuardedFloats posterior(256), update(256);
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t u = 0; u < 4; ++u)
      for (int64_t floats : {2, 16, 18, 34, 200}) {
        const streaming::StreamedPart both =
            body::streamed_part_of_both(posterior.data() + p, update.data() + u, floats);
        const streaming::StreamedPart alone = streaming::streamed_part(posterior.data() + p, floats);
        const bool alike = p == u;  // both arrays start on a 64-byte boundary
        EXPECT_EQ(both.begin, alike ? alone.begin : 0) << p << ", " << u << ", " << floats << " floats";
        EXPECT_EQ(both.end, alike ? alone.end : 0) << p << ", " << u << ", " << floats << " floats";
      }
  // The default size's case: both outputs on a line boundary, every float in whole blocks.
  const streaming::StreamedPart aligned = body::streamed_part_of_both(posterior.data(), update.data(), 256);
  EXPECT_EQ(aligned.begin, 0);
  EXPECT_EQ(aligned.end, 256);
}

/// One range's inputs: F and the weights, between guards.
struct RangeInputs {
  int64_t values;
  GuardedFloats f, w;

  RangeInputs(int64_t values_, uint32_t seed) : values(values_), f(2 * values_), w(values_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> weight(0.0f, 1.0f);
    for (int64_t i = 0; i < 2 * values; ++i) f.data()[i] = normal(rng);
    for (int64_t k = 0; k < values; ++k) w.data()[k] = weight(rng);
  }
};

/// Pass 2 of both phases over the values [begin, values) of `in`, streamed_stores' outputs
/// `posterior_offset` and `update_offset` floats past a 64-byte boundary (before `begin`'s
/// shift), guarded; expects vectorized_weights' bits everywhere and untouched guards. The
/// streamed part is checked before anything is streamed (a misaligned non-temporal store faults).
void expect_vectorized_bits(const RangeInputs& in, float z, int64_t begin, int64_t posterior_offset,
                            int64_t update_offset) {
  const int64_t floats = 2 * in.values;
  std::vector<float> expected_posterior(floats, 0.0f), expected_update(floats, 0.0f);
  body::posterior_update_of_run(in.f.data(), in.w.data(), z, expected_posterior.data(), expected_update.data(), begin,
                                in.values);
  GuardedFloats posterior(floats, posterior_offset), update(floats, update_offset);
  std::fill(posterior.data(), posterior.data() + floats, std::numeric_limits<float>::quiet_NaN());
  std::fill(update.data(), update.data() + floats, std::numeric_limits<float>::quiet_NaN());
  const int64_t range_floats = 2 * (in.values - begin);
  const streaming::StreamedPart part =
      body::streamed_part_of_both(posterior.data() + 2 * begin, update.data() + 2 * begin, range_floats);
  ASSERT_EQ(part.begin % 2, 0);
  ASSERT_LE(part.end, range_floats);
  if (part.end > part.begin) {
    ASSERT_EQ(reinterpret_cast<uintptr_t>(posterior.data() + 2 * begin + part.begin) % 16, 0u);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(update.data() + 2 * begin + part.begin) % 16, 0u);
  }
#ifdef PB_GEOMETRY_STREAMING_STORES
  body::streamed_posterior_update(in.f.data(), in.w.data(), z, posterior.data(), update.data(), begin, in.values);
#else
  GTEST_SKIP() << "no non-temporal stores on this architecture";
#endif
  ASSERT_TRUE(posterior.guards_intact() && update.guards_intact()) << "a guard of an output changed";
  ASSERT_TRUE(in.f.guards_intact() && in.w.guards_intact()) << "a guard of F or w changed";
  for (int64_t i = 0; i < floats; ++i) {
    if (i < 2 * begin) {  // before the range: never written
      ASSERT_TRUE(std::isnan(posterior.data()[i]) && std::isnan(update.data()[i])) << "float " << i << " written";
      continue;
    }
    ASSERT_EQ(std::memcmp(&posterior.data()[i], &expected_posterior[i], sizeof(float)), 0)
        << "posterior[" << i << "] = " << posterior.data()[i] << ", vectorized_weights " << expected_posterior[i];
    ASSERT_EQ(std::memcmp(&update.data()[i], &expected_update[i], sizeof(float)), 0)
        << "update[" << i << "] = " << update.data()[i] << ", vectorized_weights " << expected_update[i];
  }
}

// Ranges of 1 and 7 values (no block), 8, 9, 17, 64 and 1000 (blocks and tails); ranges starting at
// value 0 and at value 3 (so a range's first float is not where its array's is); every pair of
// output alignments 0-3 floats, so that heads of 0 and 2 floats, odd heads (nothing streamed) and
// outputs aligned differently (nothing streamed) all occur; a Z that normalizes and one at the
// threshold, float(1e-12) (the fallback: the posterior is F, the update 0), and one just above it,
// where adding eps to Z changes the posterior by a third (a Z of the size of the field hides it). The aligned cases
// first: a body that streams to the wrong place fails its comparison there, before an unaligned
// case could fault.
TEST(BayesianStreamed, PassTwoWritesVectorizedWeightsBitsAtEveryAlignmentInBothBranches) {
  const float normal_z = 1234.5f, threshold_z = static_cast<float>(ref::kNormalizationEps);
  const float small_z = 3 * threshold_z;  // normalizable, and Z + eps differs from Z in fp32
  ASSERT_TRUE(ref::normalizable(normal_z) && ref::normalizable(small_z));
  ASSERT_FALSE(ref::normalizable(threshold_z));
  uint32_t seed = 1;
  for (int64_t values : {64, 1000, 1, 7, 8, 9, 17}) {
    const RangeInputs in(values, seed++);
    for (int64_t begin : {int64_t{0}, std::min<int64_t>(3, values - 1)})
      for (float z : {normal_z, small_z, threshold_z})
        for (int64_t p = 0; p < 4; ++p)
          for (int64_t u = 0; u < 4; ++u) {
            SCOPED_TRACE(std::to_string(values) + " values from " + std::to_string(begin) + ", Z " +
                         std::to_string(z) + ", posterior at " + std::to_string(p) + " and update at " +
                         std::to_string(u) + " floats past a 64-byte boundary");
            ASSERT_NO_FATAL_FAILURE(expect_vectorized_bits(in, z, begin, p, u));
          }
  }
}

// The work items' ranges as the Kokkos kernel splits the values: each item its own, together every
// value once and in order, each starting on a whole line of the outputs (8 complex values), sizes
// within one line, at more items than lines too. The line is the cache's, not the header's
// constant: a block that is not one line would let two items write parts of one.
TEST(BayesianStreamed, WorkItemsCoverEveryValueOnceOnWholeLines) {
  constexpr int64_t kValuesPerLine = 64 / (2 * sizeof(float));
  for (int64_t count : {1, 7, 8, 168, 1000, 1048576})
    for (int64_t items : {1, 2, 3, 5, 16, 200}) {
      int64_t next = 0;
      for (int64_t item = 0; item < items; ++item) {
        const streaming::ItemRange range = body::values_of_item(item, items, count);
        EXPECT_EQ(range.first, next) << count << " values, item " << item << " of " << items;
        EXPECT_TRUE(range.first % kValuesPerLine == 0 || range.first == count) << range.first;
        const int64_t lines = (count + kValuesPerLine - 1) / kValuesPerLine;
        EXPECT_LE(range.last - range.first, (lines + items - 1) / items * kValuesPerLine);
        next = range.last;
      }
      EXPECT_EQ(next, count) << items << " items";
    }
}

// Pass 1's runs (and vectorized_weights' pass 2): whole lanes long, the shortest such length that
// needs at most kRuns of them, together covering every value; at counts on and just past a
// multiple of kRuns * kLanes (where a rounding of the length one way or the other would need one
// run more, or one lane more than needed), and at one value.
TEST(BayesianStreamed, RunsAreTheShortestWholeLanesForAtMostKRunsAndCoverEveryValue) {
  for (int64_t count : {1, 7, 168, 1024, 1025, 2047, 1048576, 4194305}) {
    const int64_t length = body::run_length_of(count);
    ASSERT_GT(length, 0) << count << " values";
    EXPECT_EQ(length % body::kLanes, 0) << count << " values";
    const int64_t runs = (count + length - 1) / length;
    EXPECT_LE(runs, body::kRuns) << count << " values, runs of " << length;
    EXPECT_EQ(body::run_end(runs - 1, length, count), count) << count << " values";
    EXPECT_LT((runs - 1) * length, count) << count << " values: the last run is empty";
    // The shortest such length: one lane shorter would need more than kRuns runs (longer runs
    // than that leave threads without work, and group Z's terms otherwise).
    if (length > body::kLanes) {
      const int64_t shorter = length - body::kLanes;
      EXPECT_GT((count + shorter - 1) / shorter, body::kRuns) << count << " values, runs of " << length;
    }
  }
}

/// Pass 1 over the values [begin, end) of a field of `values` between guards: every weight is
/// vectorized_weight's bits, no weight outside the range is written, no guard changes; returns its
/// sum (Z's terms) beside the same terms summed in double one by one.
struct PassOneSums {
  double pass_one, in_double;
};

PassOneSums pass_one_on(const GuardedFloats& f, const GuardedFloats& e, int64_t values, int64_t begin, int64_t end) {
  GuardedFloats w(values);
  std::fill(w.data(), w.data() + values, std::numeric_limits<float>::quiet_NaN());
  const double sum = body::weights_of_run(f.data(), e.data(), w.data(), begin, end);
  EXPECT_TRUE(w.guards_intact() && f.guards_intact() && e.guards_intact()) << "a guard changed";
  double in_double = 0;
  for (int64_t k = 0; k < values; ++k) {
    if (k < begin || k >= end) {
      EXPECT_TRUE(std::isnan(w.data()[k])) << "weight " << k << " written outside [" << begin << ", " << end << ")";
      continue;
    }
    const float expected = body::vectorized_weight(f.data(), e.data(), k);
    EXPECT_EQ(std::memcmp(&w.data()[k], &expected, sizeof(float)), 0) << "weight " << k;
    in_double += double(expected) * double(ref::squared_modulus(f.data()[2 * k], f.data()[2 * k + 1]));
  }
  return {sum, in_double};
}

// Range lengths with no whole group of kLanes values, with groups and a tail, one block of
// kBlock values exactly, and several blocks with a partial one; ranges starting at value 0 and at
// value 5. Z's terms are positive, so a float lane of at most kBlock / kLanes = 64 terms is within
// 64 ulp (4e-6) of their sum; a term lost or added moves the sum by far more.
TEST(BayesianPassOne, WeightsAreVectorizedWeightsAndTheSumHoldsEveryTermOnce) {
  for (int64_t length : {0, 1, 15, 16, 17, 100, 1023, 1024, 1025, 2064, 3109})
    for (int64_t begin : {0, 5}) {
      const int64_t values = begin + length + 3;  // three values after the range, never written
      GuardedFloats f(2 * values), e(2 * values);
      std::mt19937 rng(static_cast<uint32_t>(length * 2 + begin));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int64_t i = 0; i < 2 * values; ++i) {
        f.data()[i] = normal(rng);
        e.data()[i] = f.data()[i] + 0.5f * normal(rng);
      }
      const PassOneSums sums = pass_one_on(f, e, values, begin, begin + length);
      EXPECT_NEAR(sums.pass_one, sums.in_double, 4e-6 * sums.in_double) << length << " values from " << begin;
      if (length == 0) EXPECT_EQ(sums.pass_one, 0.0);
    }
}

// The float lanes hold at most one block's terms: with F = E every weight is exp(0) = 1, and with
// a term of 2^24 first in lane 0 and 1 everywhere else, each 1 that lane 0 adds in the same block
// is lost (2^24 + 1 rounds to 2^24 in float), while the terms of the later blocks start from 0
// and are kept. So at most kBlock / kLanes - 1 ones are lost, whatever the length; lanes that ran
// on across blocks would lose every one of lane 0's.
TEST(BayesianPassOne, FloatLanesHoldOneBlockOfTermsAtMost) {
  const int64_t groups_per_block = body::kBlock / body::kLanes;
  for (int64_t length : {body::kBlock, 2 * body::kBlock + 37, 5 * body::kBlock})
    for (int64_t begin : {0, 5}) {
      const int64_t values = begin + length;
      GuardedFloats f(2 * values), e(2 * values);
      for (int64_t k = 0; k < values; ++k) {
        f.data()[2 * k] = k == begin ? 4096.0f : 1.0f;  // 4096^2 = 2^24
        f.data()[2 * k + 1] = 0.0f;
      }
      std::copy(f.data(), f.data() + 2 * values, e.data());
      const PassOneSums sums = pass_one_on(f, e, values, begin, values);
      ASSERT_EQ(sums.in_double, 16777216.0 + double(length - 1));
      const double lost = sums.in_double - sums.pass_one;
      EXPECT_GE(lost, 0.0) << length << " values from " << begin;
      EXPECT_LE(lost, double(groups_per_block - 1)) << length << " values from " << begin;
    }
}

// In a sanitizer build every non-temporal store is seen (streaming::store_destination): a block
// streamed just past a heap buffer gets ASan's report, a block streamed to an address off a 16-byte
// boundary UBSan's, where a plain build would write unseen or fault with no report.
TEST(BayesianStreamed, ASanitizerBuildReportsAStreamedBlockOutOfBoundsOrMisaligned) {
#if defined(__SANITIZE_ADDRESS__) && defined(PB_GEOMETRY_STREAMING_STORES)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // ASan's report or UBSan's (whichever sees the access first: UBSan knows the buffer's size too).
  const char* const kOutOfBoundsReport = "heap-buffer-overflow|insufficient space for an object";
  float* buffer = static_cast<float*>(std::aligned_alloc(64, 2 * streaming::kBlockFloats * sizeof(float)));
  const streaming::Block ones = streaming::load_block(std::vector<float>(streaming::kBlockFloats, 1.0f).data());
  streaming::stream_block(buffer + streaming::kBlockFloats, ones);  // the last block inside: no report
  EXPECT_DEATH(streaming::stream_block(buffer + 2 * streaming::kBlockFloats, ones), kOutOfBoundsReport);
  EXPECT_DEATH(streaming::stream_block(buffer + 1, ones), "misaligned address");
  std::free(buffer);
#else
  GTEST_SKIP() << "only a sanitizer build (ci/sanitize.sh) reads the non-temporal stores' destinations";
#endif
}

TEST(BayesianStreamed, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const testing::ProcessResult verified =
      testing::run_phasebench("verify --size small --seeds 3 --filter 'geometry/bayesian/kokkos/streamed_stores'");
  if (verified.output.find("UNSUPPORTED") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
}

}  // namespace
}  // namespace pb
