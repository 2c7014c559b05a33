// The progress display: a live status line with done, left and an estimate of the time left on a
// terminal; never drawn anywhere else (CI logs, pipes), where only the plain lines are printed.

#include <gtest/gtest.h>

#include <sstream>

#include "process.hpp"
#include "engine/progress.hpp"

namespace pb {
namespace {

struct FakeClock {
  double now = 0;
  Progress::Clock clock() {
    return [this] { return now; };
  }
};

TEST(Progress, OffATerminalTheStatusLineIsNeverDrawn) {
  std::ostringstream out;
  FakeClock time;
  {
    Progress progress(out, false, 100, time.clock());
    progress.plan({{"checking", 3, 1.0}});
    progress.step("suite/a");
    time.now += 5;
    progress.step("suite/b");
    progress.note("[2/3] checked suite/b: OK");
  }
  EXPECT_EQ(out.str(), "[2/3] checked suite/b: OK\n");
}

TEST(Progress, OnATerminalTheLineShowsStageDoneLeftAndTheCase) {
  std::ostringstream out;
  FakeClock time;
  Progress progress(out, true, 200, time.clock());
  progress.plan({{"timing", 10, 0.5}});
  progress.step("trainer2/lior_step/small/torch/cpu/3_fused");
  EXPECT_NE(out.str().find("\r\033[K"), std::string::npos);
  EXPECT_NE(out.str().find("timing 1/10"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("trainer2/lior_step/small/torch/cpu/3_fused"), std::string::npos);
  EXPECT_NE(out.str().find("left"), std::string::npos);
}

TEST(Progress, TheEstimateUsesTheExpectedPaceThenTheMeasuredOne) {
  std::ostringstream out;
  FakeClock time;
  Progress progress(out, true, 200, time.clock());
  progress.plan({{"checking", 4, 1.0}, {"timing", 10, 0.5}});
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 4 * 1.0 + 10 * 0.5);  // nothing measured yet
  progress.step("a");
  time.now = 3;
  progress.step("b");  // the first step took 3 s: two more after this one, plus this one's rest
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 2 * 3.0 + 3.0 + 10 * 0.5);
  time.now = 5;
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 2 * 3.0 + 1.0 + 10 * 0.5);
  progress.step("c");
  progress.step("d");
  progress.step("timing 1");  // the next stage starts when this one is full
  EXPECT_NE(progress.status_line().find("timing 1/10"), std::string::npos) << progress.status_line();
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 9 * 0.5 + 0.5);
}

// Timed repetitions differ in length (a slow case's against a fast one's): the estimate is the
// planned length of the steps left, scaled by how the finished ones kept to their plan.
TEST(Progress, WeightedStepsAreEstimatedByTheirPlannedLengthsAndThePaceSoFar) {
  std::ostringstream out;
  FakeClock time;
  Progress progress(out, false, 100, time.clock());
  Progress::Stage timing{"timing", 4, 0.0};
  timing.step_seconds = {0.5, 0.5, 10.0, 0.5};
  progress.plan({timing});
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 11.5);  // nothing measured yet: the plan
  progress.step("fast 1");
  time.now = 1;  // twice its plan, but half a second is too little to judge the pace by
  progress.step("fast 2");
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 0.5 + 10.5);  // this step, then the rest, as planned
  time.now = 2;
  progress.step("slow");  // a second of finished steps took two: the machine runs at half the plan
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 2 * 10.0 + 2 * 0.5);
  time.now = 7;
  EXPECT_DOUBLE_EQ(progress.seconds_left(), (20.0 - 5.0) + 1.0);  // 5 s into the slow step
  time.now = 14;
  progress.step("fast 3");  // 11 s of plan took 14
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 0.5 * 14.0 / 11.0);
}

TEST(Progress, ReplanningReplacesStagesNotYetStarted) {
  std::ostringstream out;
  FakeClock time;
  Progress progress(out, false, 100, time.clock());
  progress.plan({{"checking", 2, 1.0}, {"timing", 100, 1.0}});
  progress.step("a");
  progress.step("b");
  progress.plan({{"warm-up", 1, 2.0}, {"timing", 3, 1.0}});  // fewer cases survived the checks
  EXPECT_NE(progress.status_line().find("checking 2/2"), std::string::npos) << progress.status_line();
  progress.step("c");
  EXPECT_NE(progress.status_line().find("warm-up 1/1"), std::string::npos) << progress.status_line();
  EXPECT_DOUBLE_EQ(progress.seconds_left(), 2.0 + 3 * 1.0);
}

TEST(Progress, TheLineNeverWrapsOnANarrowTerminal) {
  std::ostringstream out;
  FakeClock time;
  Progress progress(out, true, 40, time.clock());
  progress.plan({{"timing", 10, 0.5}});
  progress.step(std::string(200, 'x'));
  EXPECT_LT(progress.status_line().size(), 40u);
}

TEST(Progress, DurationsReadAsAPersonWouldSayThem) {
  EXPECT_EQ(format_duration(12.4), "12 s");
  EXPECT_EQ(format_duration(185), "3 min 05 s");
  EXPECT_EQ(format_duration(3720), "1 h 02 min");
}

// End to end: under a pseudo-terminal (script(1)) the status line is drawn; through a pipe it is not.
std::string run_under_terminal(const std::string& arguments) {
  return testing::run_command(std::string("script -qec \"") + PHASEBENCH_EXECUTABLE + " " + arguments +
                              "\" /dev/null 2>&1")
      .output;
}

TEST(ProgressRun, ATerminalGetsTheStatusLineAPipeOnlyPlainLines) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) (util-linux) is not installed";
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "needs the Kokkos backend";
  const auto out_tty = testing::fresh_temp_path("progress-tty"), out_pipe = testing::fresh_temp_path("progress-pipe");
  const std::string arguments = "run --quick --size small --filter trainer2/lior_step/kokkos --out ";
  const std::string on_terminal = run_under_terminal(arguments + out_tty.string());
  EXPECT_NE(on_terminal.find("\033[K"), std::string::npos) << on_terminal;
  EXPECT_NE(on_terminal.find(" left: trainer2/lior_step/small/kokkos"), std::string::npos) << on_terminal;
  const auto piped = testing::run_phasebench(arguments + out_pipe.string());
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.find('\033'), std::string::npos) << "escape codes in a log";
  EXPECT_EQ(piped.output.find(" left: "), std::string::npos);
  EXPECT_NE(piped.output.find("] checked trainer2/lior_step/small/kokkos/cpu/0_baseline: OK"), std::string::npos);
  EXPECT_NE(piped.output.find("timing: "), std::string::npos);
  std::filesystem::remove_all(out_tty);
  std::filesystem::remove_all(out_pipe);
}

}  // namespace
}  // namespace pb
