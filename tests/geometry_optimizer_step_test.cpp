// geometry/lior_optimizer_step, Kokkos' streaming_update phase: its spans cover every value once,
// each inside one tensor; each span's streamed part is placed right for any alignment of the
// output, and a wrong one is named; the streamed update writes exactly its span with the floats
// the other phases compute (and, in a sanitizer build, a store past the output is reported); and
// the phase passes verify on the small size's seeds (odd seeds: 3 tensors; even seeds: a scalar
// and a 4-value tensor too, shorter than a vector of 4 after an unaligned start).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "optimized/geometry/lior_optimizer_step_bodies.hpp"
#include "process.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
namespace geo = pb::suites::geometry;
namespace body = pb::optimized::geometry::lior_optimizer_step;

// Offsets of tensor sets with short tensors, a zero-length one, tensors shorter and longer than a
// span, and boundaries on and off the span's multiples.
std::vector<std::vector<int64_t>> offset_sets() {
  std::vector<std::vector<int64_t>> sets = {{0, 1}, {0, 5, 17, 28}, {0, 16, 16, 48, 49, 100}, {0, 33}};
  for (const auto& shapes : {geo::parameter_shapes(SizeClass::Small), geo::parameter_shapes(SizeClass::Small, 2)})
    sets.push_back(geo::flat_offsets(shapes));
  return sets;
}

TEST(GeometryOptimizerStepBodies, TheSpansCoverEveryValueOnceInsideOneTensor) {
  for (const std::vector<int64_t>& offsets : offset_sets())
    for (const int64_t span_values : {int64_t{1}, int64_t{4}, int64_t{16}, int64_t{32}}) {
      const std::vector<body::UpdateSpan> spans = body::update_spans(offsets, span_values);
      int64_t next = 0;
      size_t cuts_inside = 0;
      for (const body::UpdateSpan& span : spans) {
        const std::string where = "span [" + std::to_string(span.begin) + ", " + std::to_string(span.end) +
                                  ") of tensor " + std::to_string(span.tensor) + ", spans of " +
                                  std::to_string(span_values) + ", " + std::to_string(offsets.back()) + " values";
        ASSERT_EQ(span.begin, next) << where;
        ASSERT_LT(span.begin, span.end) << where;
        ASSERT_GE(span.begin, offsets[span.tensor]) << where;
        ASSERT_LE(span.end, offsets[span.tensor + 1]) << where;
        ASSERT_LE(span.end - span.begin, span_values) << where;
        // A span ends at its tensor's end or at a multiple of span_values, never short of it.
        if (span.end != offsets[span.tensor + 1]) {
          ASSERT_EQ(span.end % span_values, 0) << where;
          ++cuts_inside;
        }
        next = span.end;
      }
      ASSERT_EQ(next, offsets.back()) << "spans of " << span_values;
      // Exactly as many spans as the tensors and the multiples of span_values cut the range into.
      size_t expected = 0;
      for (size_t j = 0; j + 1 < offsets.size(); ++j)
        if (offsets[j + 1] > offsets[j])
          expected += static_cast<size_t>((offsets[j + 1] - 1) / span_values - offsets[j] / span_values + 1);
      EXPECT_EQ(spans.size(), expected) << "spans of " << span_values << ", " << cuts_inside << " cuts inside tensors";
    }
}

// Every start, end and output alignment around a few 16-byte vectors: the streamed part placed
// passes its check, and the values in [begin, end) are bit for bit p - scale g, those around them
// untouched.
TEST(GeometryOptimizerStepBodies, TheStreamedUpdateWritesExactlyItsRangeWithTheOtherPhasesFloats) {
  constexpr int64_t kValues = 40;
  constexpr float kScale = 0.37f;
  std::vector<float> p(kValues), g(kValues);
  for (int64_t i = 0; i < kValues; ++i) {
    p[i] = std::sin(0.7f * float(i)) + 1.25f;
    g[i] = std::cos(1.3f * float(i)) * 3.0f;
  }
  alignas(64) float storage[kValues + 16];
  for (int64_t shift = 0; shift < 4; ++shift) {  // out's first value 0, 4, 8 or 12 bytes past a 16-byte boundary
    float* out = storage + shift;
    for (int64_t begin = 0; begin < 9; ++begin)
      for (int64_t end = begin; end <= kValues; ++end) {
        std::fill(std::begin(storage), std::end(storage), std::numeric_limits<float>::quiet_NaN());
        std::vector<body::UpdateSpan> spans = {{begin, end, 0, begin, begin}};
        body::place_streamed_parts(spans, out);
        const std::string span = "[" + std::to_string(begin) + ", " + std::to_string(end) + "), out shifted by " +
                                 std::to_string(shift);
        ASSERT_EQ(body::streamed_part_error(spans[0], out), "") << span << ": streamed part [" << spans[0].streamed_begin
                                                                << ", " << spans[0].streamed_end << ")";
        body::streamed_update(p.data(), g.data(), out, spans[0], kScale);
        for (int64_t i = 0; i < kValues; ++i) {
          const std::string where = "value " + std::to_string(i) + " of " + span;
          if (i < begin || i >= end) {
            ASSERT_TRUE(std::isnan(out[i])) << where << " was written";
            continue;
          }
          const float expected = p[i] - kScale * g[i];
          ASSERT_EQ(std::memcmp(&out[i], &expected, sizeof(float)), 0) << where << ": " << out[i] << " != " << expected;
        }
      }
  }
}

// In a sanitizer build the streamed update's non-temporal stores are seen too: a streamed part
// that runs one vector past a heap buffer (a part setup would refuse) gets ASan's report.
TEST(GeometryOptimizerStepBodies, ASanitizerBuildReportsAStreamedStorePastTheOutput) {
#if defined(__SANITIZE_ADDRESS__) && defined(PB_GEOMETRY_STREAMING_STORES)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // ASan's report or UBSan's (whichever sees the access first: UBSan knows the buffer's size too).
  const char* const kOutOfBoundsReport = "heap-buffer-overflow|insufficient space for an object";
  constexpr int64_t kValues = 16;
  const std::vector<float> p(kValues + 4, 1.0f), g(kValues + 4, 2.0f);
  float* out = static_cast<float*>(std::aligned_alloc(64, kValues * sizeof(float)));
  body::streamed_update(p.data(), g.data(), out, {0, kValues, 0, 0, kValues}, 0.5f);  // exactly the buffer: no report
  EXPECT_EQ(out[kValues - 1], 0.0f);
  EXPECT_DEATH(body::streamed_update(p.data(), g.data(), out, {0, kValues + 4, 0, 0, kValues + 4}, 0.5f),
               kOutOfBoundsReport);
  std::free(out);
#else
  GTEST_SKIP() << "only a sanitizer build (ci/sanitize.sh) reads the non-temporal stores' destinations";
#endif
}

// The check setup runs names each way a streamed part can be wrong: span [1, 30) of a 64-byte
// aligned output streams [4, 28) (values 4.. start on a 16-byte boundary; 24 whole vectors' worth,
// 2 left).
TEST(GeometryOptimizerStepBodies, AWrongStreamedPartIsNamed) {
  alignas(64) float out[32] = {};
  const auto error = [&](int64_t streamed_begin, int64_t streamed_end) {
    return body::streamed_part_error({1, 30, 0, streamed_begin, streamed_end}, out);
  };
  std::vector<body::UpdateSpan> placed = {{1, 30, 0, 1, 1}};
  body::place_streamed_parts(placed, out);
  EXPECT_EQ(placed[0].streamed_begin, 4);
  EXPECT_EQ(placed[0].streamed_end, 28);
  EXPECT_EQ(error(4, 28), "");
  for (const auto& [streamed_begin, streamed_end] : {std::pair{0, 28}, {4, 32}, {28, 4}})
    EXPECT_EQ(error(streamed_begin, streamed_end), "outside its span") << streamed_begin << ", " << streamed_end;
  EXPECT_EQ(error(5, 29), "not 16-byte aligned");
  EXPECT_EQ(error(4, 26), "not whole vectors of 4");
  EXPECT_EQ(error(4, 24), "4 or more values left to ordinary stores");
  EXPECT_EQ(error(8, 28), "4 or more values left to ordinary stores");
  EXPECT_EQ(error(28, 28), "4 or more values left to ordinary stores");
  // An empty part needs no alignment: values [5, 7) stream nothing wherever the part is put.
  EXPECT_EQ(body::streamed_part_error({5, 7, 0, 6, 6}, out), "");
  EXPECT_EQ(body::streamed_part_error({5, 7, 0, 5, 9}, out), "outside its span");
}

TEST(GeometryOptimizerStepStreaming, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const auto verified = testing::run_phasebench(
      "verify --size small --seeds 4 --filter 'geometry/lior_optimizer_step/kokkos/streaming_update'");
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
#if defined(__x86_64__)
  if (verified.output.find("runs kernels on a device") != std::string::npos) GTEST_SKIP() << verified.output;
#else
  if (verified.output.find("UNSUPPORTED") != std::string::npos) GTEST_SKIP() << verified.output;
#endif
  EXPECT_NE(verified.output.find("verify: 4 passed, 0 failed"), std::string::npos) << verified.output;
}

}  // namespace
}  // namespace pb
