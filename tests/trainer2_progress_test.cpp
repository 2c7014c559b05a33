// What the host reads at every step of a trainer2 window (step 8: lior_acc, R_acc and spd_acc over
// t + 1 steps) is an output, "progress" [W,3], checked like the others: a wrong divisor or a
// swapped metric in a backend's read was invisible before (a mutant that divided by t - 1
// survived every check). Here: the oracle's progress is the running mean of the path's R and
// dlior columns, and its last row is the window's (lior, R, spd).

#include <gtest/gtest.h>

#include <cmath>

#include "phasebench/runner.hpp"
#include "phasebench/workload.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb {
namespace {

namespace ref = reference::trainer2;

TEST(Trainer2Progress, IsACheckedOutputOfTheWindowAndOfBothWindowsOfTheTrainingStep) {
  for (const auto& [workload, names] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"trainer2/window", {"progress"}}, {"trainer2/train_step", {"free_progress", "nudged_progress"}}}) {
    const auto w = find_workload(workload);
    ASSERT_NE(w, nullptr) << workload;
    for (const std::string& name : names) {
      bool checked = false;
      for (const OutputSpec& spec : w->outputs()) checked = checked || spec.name == name;
      EXPECT_TRUE(checked) << workload << " does not check " << name;
    }
  }
}

TEST(Trainer2Progress, TheOraclesReadsAreTheRunningMeansOfThePath) {
  const auto window = find_workload("trainer2/window");
  ASSERT_NE(window, nullptr);
  const ArrayMap out = window->reference_fp64(window->make_inputs(SizeClass::Small, 5));
  const HostArray& progress = out.at("progress");
  const HostArray& path = out.at("path");
  const int64_t W = progress.shape.at(0), columns = path.shape.at(1), n = ref::kCoordinateDim;
  ASSERT_EQ(progress.shape, (std::vector<int64_t>{W, 3}));
  double R_sum = 0, dlior_sum = 0;
  for (int64_t t = 0; t < W; ++t) {
    R_sum += path.values[t * columns + n];
    dlior_sum += path.values[t * columns + n + 1];
    EXPECT_NEAR(progress.values[t * 3 + 0], dlior_sum / (t + 1), 1e-12 * std::abs(dlior_sum)) << "lior at " << t;
    EXPECT_NEAR(progress.values[t * 3 + 1], R_sum / (t + 1), 1e-12 * std::abs(R_sum)) << "R at " << t;
  }
  EXPECT_NEAR(progress.values[(W - 1) * 3 + 0], out.at("lior").values[0], 1e-15);
  EXPECT_NEAR(progress.values[(W - 1) * 3 + 1], out.at("R").values[0], 1e-15);
  EXPECT_NEAR(progress.values[(W - 1) * 3 + 2], out.at("spd").values[0], 1e-15);
}

}  // namespace
}  // namespace pb
