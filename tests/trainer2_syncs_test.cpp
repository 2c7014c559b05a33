// The property seed 000 is about, on every backend that runs here: host syncs per window fall
// from >= 3 per step at phase 0 (plus 4 per learnt rotor pair in the training step) to at most 1
// per window at the last phase of the ladder.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"

namespace pb {
namespace {

constexpr int kSmallWindowSteps = 5;  // W at the small size
constexpr int kRotorPairSyncs = 4 * 6;

TEST(Trainer2Syncs, FallFromThreePerStepToOnePerWindow) {
  const auto out = testing::fresh_temp_path("trainer2-syncs");
  const auto result = testing::run_phasebench(
      "run --quick --reps 1 --size small --filter 'trainer2/(window|train_step)/' --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::map<std::string, std::vector<ResultRow>> ladders;  // backend/device/workload -> OK rows
  for (const ResultRow& row : read_results_csv((out / "results.csv").string()))
    if (row.status == Status::Ok && row.backend != kReferenceBackend)
      ladders[row.workload + " " + row.backend + "/" + row.device].push_back(row);
  if (ladders.empty()) GTEST_SKIP() << "no optimized backend that runs here is built";
  for (const auto& [name, rows] : ladders) {
    const bool train_step = name.rfind("train_step", 0) == 0;
    const int windows = train_step ? 2 : 1;
    const ResultRow* first = &rows.front();
    const ResultRow* last = &rows.front();
    for (const ResultRow& row : rows) {
      if (row.phase_index < first->phase_index) first = &row;
      if (row.phase_index > last->phase_index) last = &row;
    }
    ASSERT_EQ(first->phase_index, 0) << name << ": phase 0 did not run";
    EXPECT_GE(first->host_syncs_per_iter,
              windows * 3 * kSmallWindowSteps + (train_step ? kRotorPairSyncs : 0))
        << name << " phase 0";
    EXPECT_LE(last->host_syncs_per_iter, windows) << name << " last phase " << last->phase;
  }
  std::filesystem::remove_all(out);
}

// rotor_update's calling_thread_rotor: the copy and the 8 updates are one kernel on the
// calling thread, where vectorized_rotor dispatches two parallel ones; neither reads to the host.
// (verify checks its numbers; this, that it is the one kernel it says.)
TEST(Trainer2Rotor, TheCallingThreadsUpdateIsOneKernelAndNoSync) {
  const auto out = testing::fresh_temp_path("trainer2-rotor");
  const auto result = testing::run_phasebench("run --quick --reps 1 --size small --filter 'trainer2/rotor_update/kokkos/' --out " +
                                              out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::map<std::string, ResultRow> by_phase;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) by_phase[row.phase] = row;
  const nlohmann::json machine = nlohmann::json::parse(std::ifstream(out / "machine.json"));
  std::filesystem::remove_all(out);
  const nlohmann::json& floor = machine.at("roofline").at("latency_floors").at("trainer2/rotor_update/small");
  EXPECT_GT(floor.at("ms").get<double>(), 0);
  EXPECT_GE(floor.at("calls").get<int>(), 1000);
  if (by_phase.empty()) GTEST_SKIP() << "Kokkos is not built";
  ASSERT_EQ(by_phase.count("calling_thread_rotor"), 1u) << result.output;
  const ResultRow& calling = by_phase.at("calling_thread_rotor");
  ASSERT_EQ(calling.status, Status::Ok) << calling.reason;
  EXPECT_EQ(calling.ops_per_iter, 1);
  EXPECT_EQ(calling.host_syncs_per_iter, 0);
  EXPECT_EQ(by_phase.at("vectorized_rotor").ops_per_iter, 2);
  // Its bytes and flops price it at nanoseconds: the run timed the update's latency chain and holds
  // every host row to it (docs/file-formats.md, bound "latency").
  EXPECT_EQ(calling.bound, "latency");
  EXPECT_GT(calling.roofline_pct, by_phase.at("vectorized_rotor").roofline_pct);
}

}  // namespace
}  // namespace pb
