// Other work on the machine (harness/src/engine/interference.hpp): measured from /proc while real
// competing processes run, and the verdict a row gets from its repetitions.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "engine/interference.hpp"

namespace pb::interference {
namespace {

// A child process that keeps one core busy until it is killed.
pid_t start_spinning_child() {
  const pid_t child = fork();
  if (child == 0) {
    alarm(30);  // bounded, whatever happens to the test
    for (volatile unsigned long spin = 0;; spin = spin + 1) {
    }
  }
  return child;
}

void stop(pid_t child) {
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(OtherWork, ACompetingProcessIsSeenAsAboutOneCoreAndThisProcessIsNot) {
  if (!read_cpu_clock().readable) GTEST_SKIP() << "no /proc/stat here";
  // This process's own busy loop is its own work, not other work.
  CpuClock before = read_cpu_clock();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  for (volatile unsigned long spin = 0; std::chrono::steady_clock::now() < until; spin = spin + 1) {
  }
  const OtherWork mine = other_work_between(before, read_cpu_clock());
  const pid_t child = start_spinning_child();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it start
  before = read_cpu_clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const OtherWork theirs = other_work_between(before, read_cpu_clock());
  stop(child);
  EXPECT_NEAR(theirs.seconds, 0.6, 0.2);
  EXPECT_GT(theirs.cores, 0.7) << "one spinning process for the whole interval";
  EXPECT_LT(theirs.cores, mine.cores + 1.4);
  EXPECT_LT(mine.cores, theirs.cores - 0.5) << "our own spinning must not count as other work";
}

TEST(OtherWork, NothingMeasuredIsNaNNotZero) {
  CpuClock unreadable;
  EXPECT_TRUE(std::isnan(other_work_between(unreadable, read_cpu_clock()).cores));
  const CpuClock now = read_cpu_clock();
  EXPECT_TRUE(std::isnan(other_work_between(now, now).cores)) << "no time passed";
}

// A row of n repetitions each `rep_ms` long, steady at 1 ms an iteration, with other work `cores`.
RowRepetitions steady_row(double cores, double rep_ms = 100, int n = 10) {
  return {std::vector<double>(n, 1.0), std::vector<double>(n, cores), std::vector<double>(n, rep_ms)};
}

TEST(Disturbance, TheIssuesRowTwoClustersOfRepetitions) {
  // kokkos/cpu phase 0 of trainer2/lior_step beside a 2-job compile: 0.015 ms and 68 ms in one run.
  const std::string why = disturbance({{0.0150, 68.1, 67.7, 0.0146, 71.8}, {}, {}}, 2, 2);
  EXPECT_NE(why.find("repetitions in two clusters: 2 near 0.0146 ms and 3 near 68.1 ms"), std::string::npos) << why;
}

TEST(Disturbance, OtherWorkBeyondTheSpareCoresIsContention) {
  // 2 threads on 2 cores: a competing process's 0.9 cores is contention.
  EXPECT_NE(disturbance(steady_row(0.9), 2, 2).find("other work used 0.9 cores of 2 while it ran on 2 threads"),
            std::string::npos);
  // 1 thread on 16 cores: 5 busy cores leave it 10 spare.
  EXPECT_EQ(disturbance(steady_row(5.0), 1, 16), "");
  // 1 thread on 2 cores: one busy core takes only the core the row does not use.
  EXPECT_EQ(disturbance(steady_row(1.0), 1, 2), "");
  EXPECT_NE(disturbance(steady_row(1.5), 1, 2), "");
  // Unknown cores, nothing measured, or no repetition lengths (an older samples.csv): no verdict.
  EXPECT_EQ(disturbance(steady_row(2.0), 2, 0), "");
  EXPECT_EQ(disturbance(steady_row(NAN), 2, 2), "");
  EXPECT_EQ(disturbance(steady_row(2.0, NAN), 2, 2), "");
}

// The mean weighs each repetition by its length: one long quiet repetition outweighs a short
// busy one.
TEST(Disturbance, ContentionIsOtherWorksTimeOverTheRepetitionsTime) {
  const RowRepetitions mostly_quiet{{1, 1, 1}, {0.0, 0.0, 2.0}, {400, 400, 20}};  // mean 2 x 20 / 820
  EXPECT_EQ(disturbance(mostly_quiet, 2, 2), "");
  const RowRepetitions mostly_busy{{1, 1, 1}, {2.0, 2.0, 0.0}, {400, 400, 20}};  // mean 1.95
  EXPECT_NE(disturbance(mostly_busy, 2, 2).find("other work used 2 cores"), std::string::npos);
}

// What CI's quiet machine measured for one row of a 5 ms-a-repetition run: one repetition caught
// a tick on each CPU (3.8 cores over its 5 ms), the others none. The counters cannot resolve
// contention over 15 ms (their tick is 10 ms per CPU): not a verdict.
TEST(Disturbance, ContentionTheCountersCannotResolveIsNoVerdict) {
  ASSERT_NEAR(counter_tick_seconds(), 0.01, 0.0099) << "USER_HZ between 100 and 10000";
  const RowRepetitions short_reps{{0.023, 0.023, 0.024}, {0.0, 3.77, -0.4}, {5.2, 5.3, 5.1}};
  EXPECT_EQ(disturbance(short_reps, 2, 2), "");
  // The same readings over repetitions 100 times longer are contention.
  const RowRepetitions long_reps{{0.023, 0.023, 0.024}, {0.0, 3.77, -0.4}, {520, 530, 510}};
  EXPECT_NE(disturbance(long_reps, 2, 2), "");
}

// CI's busy run slowed onednn fused_quadratic_form of lior_step/small 12x without a flag: its five
// repetitions all slowed alike (no clusters) and its own readings did not clear the threshold by
// their resolution. Where a row's readings cannot decide, the timing stage's mean (over which the
// interleaved schedule spread them) stands in; a row whose readings decide keeps its verdict.
TEST(Disturbance, RepetitionsTooShortToMeasureAreJudgedByTheTimingStage) {
  const RowRepetitions short_reps{{0.36, 0.35, 0.37, 0.36, 0.38}, {0.0, 3.7, 0.0, 0.0, -0.5}, {3, 3, 3, 3, 3}};
  EXPECT_EQ(disturbance(short_reps, 2, 2), "") << "no stage measure: no verdict";
  const std::string busy = disturbance(short_reps, 2, 2, 1.4);
  EXPECT_NE(busy.find("other work used 1.4 cores of 2 while it ran on 2 threads (the timing stage's mean"),
            std::string::npos)
      << busy;
  EXPECT_EQ(disturbance(short_reps, 2, 2, 0.1), "") << "a quiet stage";
  EXPECT_EQ(disturbance(short_reps, 1, 2, 1.2), "") << "1 thread on 2 cores: 1.2 busy cores leave it its own";
  EXPECT_NE(disturbance(short_reps, 1, 2, 1.5), "");
  // No readings of its own at all: the stage decides too.
  EXPECT_NE(disturbance({{1, 1, 1}, {}, {}}, 2, 2, 1.4), "");
  // Repetitions long enough to resolve 0.3 cores: their own quiet readings win over a busy stage.
  EXPECT_EQ(disturbance(steady_row(0.05, 500), 2, 2, 1.4), "");
  // 5 x 50 ms resolve 0.27 cores: a mean of 0.5 is neither clearly above 0.3 nor below it.
  EXPECT_EQ(disturbance(steady_row(0.5, 50, 5), 2, 2), "");
  EXPECT_NE(disturbance(steady_row(0.5, 50, 5), 2, 2, 1.4), "");
  EXPECT_EQ(disturbance(steady_row(0.5, 50, 5), 2, 2, 0.1), "");
}

TEST(Disturbance, AQuietRowIsNotDisturbed) {
  // Ordinary spread (10%), a little background (the supervisor's polling, kernel threads).
  EXPECT_EQ(disturbance({{1.00, 1.05, 0.98, 1.10, 1.02, 0.99, 1.03, 1.01, 1.07, 1.00}, std::vector<double>(10, 0.05),
                         std::vector<double>(10, 100)},
                        2, 2),
            "");
  // One slow repetition among ten is an outlier, not a second cluster.
  EXPECT_EQ(disturbance({{1, 1, 1, 1, 1, 1, 1, 1, 1, 9}, {}, {}}, 2, 2), "");
  // Too few to tell clusters apart from a trend: a single repetition.
  EXPECT_EQ(disturbance({{1}, {}, {}}, 2, 2), "");
}

}  // namespace
}  // namespace pb::interference
