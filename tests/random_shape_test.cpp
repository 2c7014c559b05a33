// Random shapes: their texts, the bad ones, each workload's random-shape rule, and a small verify
// at random shapes end to end.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "phasebench/cli.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/workload.hpp"
#include "process.hpp"
#include "size_checks.hpp"

namespace pb {
namespace {

using testing::expect_size_list_refused;
using testing::parse_only;
using testing::run_phasebench;

constexpr uint32_t kShapeSeedsChecked = 64;
// Bytes a random shape's fp64 check may need: a sanitizer build checks every variant at it in
// seconds. The larger of a multiple of the small size's and a fixed floor, since some small sizes
// hold a handful of values while the random dimensions reach past the widest block.
constexpr double kSmallMultiple = 64;
constexpr double kFloorBytes = 4 << 20;

// ---- texts ---------------------------------------------------------------------------------------

TEST(RandomShapeText, ParsesAndRoundTrips) {
  EXPECT_EQ(parse_size("random-3"), SizeClass::random(3));
  EXPECT_EQ(to_string(SizeClass::random(3)), "random-3");
  for (const uint32_t seed : {1u, 2u, 17u, SizeClass::kMaxShapeSeed})
    EXPECT_EQ(parse_size(to_string(SizeClass::random(seed))), SizeClass::random(seed));
  EXPECT_TRUE(SizeClass::random(2).is_random());
  EXPECT_FALSE(SizeClass::random(2).is_named());
  EXPECT_EQ(SizeClass::random(2).shape_seed(), 2u);
  EXPECT_NE(SizeClass::random(2), SizeClass::random(3));
  EXPECT_LT(SizeClass::scaled(64), SizeClass::random(1));
  EXPECT_LT(SizeClass::random(1), SizeClass::random(2));
  for (const char* bad : {"random-", "random-0", "random-01", "random-x", "random--1", "random-1000001", "random"})
    EXPECT_FALSE(parse_size(bad)) << bad;
}

TEST(RandomShapeList, RandomCountExpandsToTheFirstShapeSeeds) {
  const std::vector<SizeClass> expected{SizeClass::Small, SizeClass::random(1), SizeClass::random(2),
                                        SizeClass::random(3)};
  EXPECT_EQ(parse_size_list("small,random:3"), expected);
  EXPECT_EQ(size_list_text(parse_size_list("random:2,random-7")), "random-1,random-2,random-7");
}

TEST(RandomShapeList, BadItemsAreRefusedNamingTheItem) {
  for (const char* bad :
       {"random:0", "random:x", "random:", "random:-1", "random:1001", "random-", "random-0", "random-x", "random-01"})
    expect_size_list_refused(bad, std::string("'") + bad + "'");
  expect_size_list_refused("random:2,random-2", "'random-2' is the same size as 'random:2'");
  expect_size_list_refused("random-1,random:3", "'random:3' is the same size as 'random-1'");
}

// ---- the drawing rules ---------------------------------------------------------------------------

TEST(RandomShapeDraw, DrawsStayInRangeAreDeterministicAndSeedOneIsTheMinimum) {
  EXPECT_EQ(random_shape::count(SizeClass::random(1), 0, 3, 40), 3);
  EXPECT_EQ(random_shape::power_of_two(SizeClass::random(1), 0, 4, 64), 4);
  std::set<int64_t> counts;
  for (uint32_t seed = 1; seed <= kShapeSeedsChecked; ++seed) {
    const SizeClass size = SizeClass::random(seed);
    const int64_t count = random_shape::count(size, 7, 3, 40);
    EXPECT_GE(count, 3);
    EXPECT_LE(count, 40);
    EXPECT_EQ(count, random_shape::count(size, 7, 3, 40));
    counts.insert(count);
    const int64_t power = random_shape::power_of_two(size, 7, 4, 64);
    EXPECT_TRUE(power == 4 || power == 8 || power == 16 || power == 32 || power == 64) << power;
  }
  EXPECT_GT(counts.size(), 16u);
}

// ---- each workload's random-shape rule -----------------------------------------------------------

TEST(RandomShapeRule, EveryShapeSeedGivesAValidShapeWithinTheMemoryBound) {
  for (const auto& workload : registered_workloads()) {
    SCOPED_TRACE(workload->full_name());
    const double bound = std::max(kSmallMultiple * workload->memory_bytes(SizeClass::Small), kFloorBytes);
    for (uint32_t seed = 1; seed <= kShapeSeedsChecked; ++seed) {
      const SizeClass size = SizeClass::random(seed);
      SCOPED_TRACE(to_string(size));
      EXPECT_FALSE(workload->shape(size).empty());
      EXPECT_EQ(workload->shape(size), workload->shape(SizeClass::random(seed))) << "not deterministic";
      const WorkEstimate work = workload->work(size);
      EXPECT_TRUE(std::isfinite(work.flops + work.bytes) && work.flops + work.bytes > 0);
      EXPECT_LE(workload->memory_bytes(size), bound) << workload->shape(size);
      EXPECT_NO_THROW(require_valid_size(*workload, size));
      for (const PhaseInfo& phase : workload->phases()) EXPECT_FALSE(workload->outputs_for(phase.index, size).empty());
    }
  }
}

// random-1 is every free dimension at its minimum: no other shape seed needs less work or memory.
TEST(RandomShapeRule, ShapeSeedOneIsTheSmallest) {
  for (const auto& workload : registered_workloads()) {
    SCOPED_TRACE(workload->full_name());
    const SizeClass first = SizeClass::random(1);
    const WorkEstimate least = workload->work(first);
    for (uint32_t seed = 2; seed <= kShapeSeedsChecked; ++seed) {
      const SizeClass size = SizeClass::random(seed);
      EXPECT_LE(least.flops + least.bytes, workload->work(size).flops + workload->work(size).bytes)
          << to_string(size) << " " << workload->shape(size) << " vs " << workload->shape(first);
      EXPECT_LE(workload->memory_bytes(first), workload->memory_bytes(size))
          << to_string(size) << " " << workload->shape(size) << " vs " << workload->shape(first);
    }
  }
}

TEST(RandomShapeRule, ShapesVaryWithTheShapeSeed) {
  for (const auto& workload : registered_workloads()) {
    if (workload->shape(SizeClass::scaled(1.0 / 64)) == workload->shape(SizeClass::scaled(64)))
      continue;  // one fixed shape at every size (trainer2/rotor_update)
    std::set<std::string> shapes;
    for (uint32_t seed = 1; seed <= kShapeSeedsChecked; ++seed) shapes.insert(workload->shape(SizeClass::random(seed)));
    EXPECT_GT(shapes.size(), kShapeSeedsChecked / 2) << workload->full_name();
  }
}

// The oracle finds a random shape's dimensions from its inputs, and computes every output checked.
TEST(RandomShapeRule, InputsAreMadeAndTheOracleReadsThem) {
  for (const auto& workload : registered_workloads()) {
    SCOPED_TRACE(workload->full_name());
    for (const uint32_t seed : {1u, 2u, 5u}) {
      const SizeClass size = SizeClass::random(seed);
      SCOPED_TRACE(to_string(size) + " " + workload->shape(size));
      if (workload->size_unsupported_reason(size)) continue;
      for (const uint64_t input_seed : {1u, 2u}) {
        const ArrayMap inputs = workload->make_inputs(size, input_seed);
        EXPECT_FALSE(inputs.empty());
        const ArrayMap reference = workload->reference_fp64(inputs);
        for (const PhaseInfo& phase : workload->phases())
          for (const OutputSpec& spec : workload->outputs_for(phase.index, size))
            EXPECT_TRUE(reference.count(spec.reference_name())) << spec.reference_name();
      }
    }
  }
}

// ---- the command line ----------------------------------------------------------------------------

TEST(RandomShapeCli, RandomSizesParseWhereCommandsTakeSizes) {
  EXPECT_EQ(parse_only("verify --size random:8"), 0);
  EXPECT_EQ(parse_only("verify --size small,random-3"), 0);
  EXPECT_EQ(parse_only("run --size random:2"), 0);
  EXPECT_EQ(parse_only("dump --workload trainer2/window --size random-4 --out /nonexistent"), 0);
  EXPECT_EQ(parse_only("list --size random-2"), 0);
  for (const char* bad : {"verify --size random:0", "verify --size random:x", "verify --size random-",
                          "run --size random", "dump --workload trainer2/window --size random:2 --out /nonexistent"})
    EXPECT_EQ(parse_only(bad), 2) << bad;
}

TEST(RandomShapeCli, BadRandomSizeExitsTwoNamingTheItem) {
  const auto result = run_phasebench("verify --size small,random:0");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("'random:0'"), std::string::npos) << result.output;
}

TEST(RandomShapeEndToEnd, VerifyPrintsEachShapeAndChecksIt) {
  const auto result = run_phasebench("verify --size random:2 --filter geometry/christoffel --seeds 1");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const auto workload = find_workload("geometry/christoffel");
  for (const uint32_t seed : {1u, 2u}) {
    const SizeClass size = SizeClass::random(seed);
    EXPECT_NE(result.output.find("geometry/christoffel " + to_string(size) + ": " + workload->shape(size)),
              std::string::npos)
        << result.output;
    EXPECT_NE(result.output.find("/" + to_string(size) + "/"), std::string::npos) << result.output;
  }
}

TEST(RandomShapeEndToEnd, ListShowsARandomShape) {
  const auto result = run_phasebench("list --filter geometry/christoffel --size random-3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto workload = find_workload("geometry/christoffel");
  EXPECT_NE(result.output.find("shape random-3: " + workload->shape(SizeClass::random(3))), std::string::npos)
      << result.output;
}

}  // namespace
}  // namespace pb
