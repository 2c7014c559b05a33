// Sizes as scales of the default: their texts, the bad ones, each workload's scale rule, and a
// small sweep end to end through `verify` and `run`.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "engine/run.hpp"
#include "phasebench/backend.hpp"
#include "phasebench/cli.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/results.hpp"
#include "phasebench/workload.hpp"
#include "process.hpp"
#include "size_checks.hpp"

namespace pb {
namespace {

namespace fs = std::filesystem;
using testing::expect_size_list_refused;
using testing::parse_only;
using testing::run_phasebench;

// ---- texts ---------------------------------------------------------------------------------------

TEST(ScaleText, NamesAndScalesParse) {
  EXPECT_EQ(parse_size("small"), SizeClass::Small);
  EXPECT_EQ(parse_size("default"), SizeClass::Default);
  EXPECT_EQ(parse_size("large"), SizeClass::Large);
  EXPECT_EQ(parse_size("4x"), SizeClass::scaled(4));
  EXPECT_EQ(parse_size("0.25x"), SizeClass::scaled(0.25));
  EXPECT_EQ(parse_size("1/16x"), SizeClass::scaled(0.0625));
  EXPECT_EQ(parse_size("1x"), SizeClass::scaled(1));
  EXPECT_EQ(parse_size("1e3x"), SizeClass::scaled(1000));
  for (const char* bad : {"", "x", "4", "fourx", "4 x", " 4x", "4xx", "1//2x", "medium", "0x", "-1x", "nanx", "infx"})
    EXPECT_FALSE(parse_size(bad)) << bad;
}

TEST(ScaleText, CanonicalTextReadsBack) {
  EXPECT_EQ(to_string(SizeClass::scaled(0.25)), "0.25x");
  EXPECT_EQ(to_string(SizeClass::scaled(4)), "4x");
  EXPECT_EQ(to_string(SizeClass::scaled(1.0 / 16)), "0.0625x");
  EXPECT_EQ(to_string(SizeClass::scaled(1)), "1x");
  EXPECT_EQ(to_string(SizeClass::scaled(1e12)), "1e12x");
  for (const double factor : {1.0 / 3, 1.0 / 64, 64.0, 0.1, 2.5e-5, 1e12}) {
    const SizeClass size = SizeClass::scaled(factor);
    EXPECT_EQ(parse_size(to_string(size)), size) << to_string(size);
  }
  for (const SizeClass size : all_sizes()) EXPECT_EQ(parse_size(to_string(size)), size);
}

TEST(ScaleText, OrderAndPoints) {
  EXPECT_LT(SizeClass::Small, SizeClass::Default);
  EXPECT_LT(SizeClass::Large, SizeClass::scaled(0.5));
  EXPECT_LT(SizeClass::scaled(0.5), SizeClass::scaled(2));
  EXPECT_NE(SizeClass::Default, SizeClass::scaled(1));
  EXPECT_TRUE(SizeClass::Default.same_point(SizeClass::scaled(1)));
  EXPECT_FALSE(SizeClass::Small.same_point(SizeClass::scaled(1)));
}

TEST(ScaleList, KeepsTheOrderGiven) {
  const std::vector<SizeClass> sizes = parse_size_list("small,0.25x,1x,4x,large");
  const std::vector<SizeClass> expected{SizeClass::Small, SizeClass::scaled(0.25), SizeClass::scaled(1),
                                        SizeClass::scaled(4), SizeClass::Large};
  EXPECT_EQ(sizes, expected);
  EXPECT_EQ(size_list_text(sizes), "small,0.25x,1x,4x,large");
}

TEST(ScaleList, BadItemsAreRefusedNamingTheItem) {
  expect_size_list_refused("0x", "'0x'");
  expect_size_list_refused("-1x", "'-1x'");
  expect_size_list_refused("nanx", "'nanx'");
  expect_size_list_refused("infx", "'infx'");
  expect_size_list_refused("small,,4x", "item 2 is empty");
  expect_size_list_refused("4x,", "item 2 is empty");
  expect_size_list_refused("4x,4x", "'4x' is the same size as '4x'");
  expect_size_list_refused("default,1x", "'1x' is the same size as 'default'");
  expect_size_list_refused("0.5x,1/2x", "'1/2x' is the same size as '0.5x'");
  expect_size_list_refused("fourx", "'fourx'");
  expect_size_list_refused("4", "'4'");
}

TEST(ScaleList, AScaleWithoutAValidShapeIsRefusedBeforeAnythingIsMade) {
  for (const auto& workload : registered_workloads()) {
    if (workload->shape(SizeClass::scaled(1.0 / 64)) == workload->shape(SizeClass::scaled(64)))
      continue;  // one fixed shape at every size (trainer2/rotor_update): any scale is that shape
    try {
      require_valid_size(*workload, SizeClass::scaled(1e12));
      ADD_FAILURE() << workload->full_name() << " accepted 1e12x";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("1e12x"), std::string::npos) << error.what();
    }
  }
  // Within int range, but more bytes than any machine has.
  const auto window = find_workload("trainer2/window");
  ASSERT_TRUE(window);
  try {
    require_valid_size(*window, SizeClass::scaled(1e7));
    ADD_FAILURE() << "1e7x of trainer2/window was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("bytes"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("this machine has"), std::string::npos) << error.what();
  }
}

// ---- each workload's scale rule ------------------------------------------------------------------

const std::vector<double> kScales{1.0 / 64, 1.0 / 16, 1.0 / 4, 1, 4, 16, 64};

TEST(ScaleRule, EveryWorkloadHasAValidShapeAtEveryScaleAndItsWorkGrows) {
  for (const auto& workload : registered_workloads()) {
    SCOPED_TRACE(workload->full_name());
    double last_work = 0, last_memory = 0;
    for (const double factor : kScales) {
      const SizeClass size = SizeClass::scaled(factor);
      SCOPED_TRACE(to_string(size));
      const WorkEstimate work = workload->work(size);
      const double memory = workload->memory_bytes(size);
      EXPECT_TRUE(std::isfinite(work.flops + work.bytes) && work.flops + work.bytes > 0);
      EXPECT_GE(work.flops + work.bytes, last_work) << workload->shape(size);
      EXPECT_GE(memory, last_memory) << workload->shape(size);
      last_work = work.flops + work.bytes;
      last_memory = memory;
      EXPECT_FALSE(workload->shape(size).empty());
      for (const PhaseInfo& phase : workload->phases()) EXPECT_FALSE(workload->outputs_for(phase.index, size).empty());
    }
    const SizeClass one = SizeClass::scaled(1);
    EXPECT_EQ(workload->shape(one), workload->shape(SizeClass::Default));
    EXPECT_EQ(workload->work(one).flops, workload->work(SizeClass::Default).flops);
    EXPECT_EQ(workload->work(one).bytes, workload->work(SizeClass::Default).bytes);
    EXPECT_EQ(workload->memory_bytes(one), workload->memory_bytes(SizeClass::Default));
  }
}

// Inputs at the scales up to 1x are made, and the smallest is computed by the oracle: a workload
// that finds its dimensions from its inputs finds a scale's too.
TEST(ScaleRule, InputsAreMadeUpToOneXAndTheOracleReadsTheSmallest) {
  for (const auto& workload : registered_workloads()) {
    SCOPED_TRACE(workload->full_name());
    for (const double factor : kScales) {
      if (factor > 1) break;
      const SizeClass size = SizeClass::scaled(factor);
      SCOPED_TRACE(to_string(size));
      if (workload->size_unsupported_reason(size)) continue;
      const ArrayMap inputs = workload->make_inputs(size, 1);
      EXPECT_FALSE(inputs.empty());
      if (factor == kScales.front()) {
        const ArrayMap reference = workload->reference_fp64(inputs);
        for (const OutputSpec& spec : workload->outputs_for(0, size))
          EXPECT_TRUE(reference.count(spec.reference_name())) << spec.reference_name();
      }
    }
  }
}

// ---- the command line ----------------------------------------------------------------------------

TEST(ScaleCli, SizeListsParseWhereCommandsTakeThem) {
  EXPECT_EQ(parse_only("run --size small,0.25x,1x,4x,large"), 0);
  EXPECT_EQ(parse_only("verify --size 1/16x,1/4x"), 0);
  EXPECT_EQ(parse_only("dump --workload trainer2/window --size 0.5x --out /nonexistent"), 0);
  EXPECT_EQ(parse_only("list --size 4x"), 0);
  for (const char* bad :
       {"run --size 0x", "run --size -1x", "verify --size nanx", "verify --size infx", "run --size small,,4x",
        "run --size 4x,4x", "verify --size default,1x", "run --size 0.5x,1/2x", "run --size fourx", "verify --size 4",
        "dump --workload trainer2/window --size small,4x --out /nonexistent", "list --size 2x,4x"})
    EXPECT_EQ(parse_only(bad), 2) << bad;
}

TEST(ScaleCli, BadScaleExitsTwoThroughTheExecutable) {
  for (const auto& [arguments, mentions] :
       std::vector<std::pair<std::string, std::string>>{{"verify --size small,,4x", "item 2 is empty"},
                                                        {"run --quick --size 0x", "'0x'"},
                                                        {"verify --filter trainer2/lior_step --size 1e12x", "1e12x"}}) {
    const auto result = run_phasebench(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.output;
    EXPECT_NE(result.output.find(mentions), std::string::npos) << arguments << "\n" << result.output;
  }
}

TEST(ScaleCli, ListShowsTheShapeOfTheSizeAsked) {
  const auto result = run_phasebench("list --filter trainer2/lior_step --size 4x");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto workload = find_workload("trainer2/lior_step");
  EXPECT_NE(result.output.find("shape 4x: " + workload->shape(SizeClass::scaled(4))), std::string::npos)
      << result.output;
}

TEST(ScaleEndToEnd, VerifyChecksEveryScaleOfTheList) {
  const auto result = run_phasebench("verify --size 1/16x,1/4x --filter trainer2/lior_step --seeds 1");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("/0.0625x/"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("/0.25x/"), std::string::npos) << result.output;
}

TEST(ScaleEndToEnd, RunWritesARowPerSizeWithItsShapeAndScale) {
  const fs::path out = testing::fresh_temp_path("scaled-run");
  const auto result = run_phasebench("run --quick --size 1/16x,1/8x --filter trainer2/lior_step --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto workload = find_workload("trainer2/lior_step");
  std::set<std::string> sizes;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    sizes.insert(row.size);
    const auto size = parse_size(row.size);
    ASSERT_TRUE(size) << row.size;
    EXPECT_EQ(row.shape, workload->shape(*size));
    EXPECT_DOUBLE_EQ(row.scale, size->scale());
  }
  EXPECT_EQ(sizes, (std::set<std::string>{"0.0625x", "0.125x"}));
  fs::remove_all(out);
}

// `run --shard i/n` of a sweep deals its points: each ladder at each size is in exactly one shard
// (its phases together, so speedups stay within a shard), and a ladder's sizes go to different
// shards, not all to the shard of its name.
TEST(ScaleShards, EachPointIsInOneShardAndALaddersSizesAreDealt) {
  RunOptions options;
  options.selection.filter = "^trainer2/lior_step/(torch|kokkos)/";
  options.sizes = {SizeClass::Small, SizeClass::scaled(0.5)};
  std::set<std::string> unsharded;
  for (const Case& c : detail::run_cases(options))
    if (c.ladder->backend != kReferenceBackend) unsharded.insert(c.row_name());
  std::map<std::string, int> shard_of_row;
  std::map<std::string, std::set<int>> shards_of_ladder;
  options.selection.shard_count = 2;
  for (int shard = 1; shard <= 2; ++shard) {
    options.selection.shard_index = shard;
    for (const Case& c : detail::run_cases(options)) {
      if (c.ladder->backend == kReferenceBackend) continue;
      EXPECT_TRUE(shard_of_row.emplace(c.row_name(), shard).second) << c.row_name() << " is in two shards";
      shards_of_ladder[c.ladder->backend + "/" + c.device + "/" + to_string(c.size)].insert(shard);
      shards_of_ladder[c.ladder->backend + "/" + c.device].insert(shard);
    }
  }
  EXPECT_EQ(shard_of_row.size(), unsharded.size());
  for (const auto& [ladder, shards] : shards_of_ladder) {
    const bool one_point = std::count(ladder.begin(), ladder.end(), '/') == 2;
    EXPECT_EQ(shards.size(), one_point ? 1u : 2u) << ladder;
  }
}

}  // namespace
}  // namespace pb
