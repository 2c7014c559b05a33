// The probe of the CPUs' speed before each timed repetition (harness/src/engine/cpu_probe.hpp):
// it measures on every CPU the process may use, again and again, and in a forked child as well.

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "engine/cpu_probe.hpp"

namespace pb::cpu_probe {
namespace {

// The probe's work is tens of microseconds on a current CPU: far above the clock's resolution,
// far below a repetition.
bool plausible(double us) { return std::isfinite(us) && us > 1 && us < 100000; }

TEST(CpuProbe, MeasuresEveryCallOnTheCpusTheProcessMayUse) {
  for (int call = 0; call < 20; ++call) {
    const double us = slowest_cpu_us();
    EXPECT_TRUE(plausible(us)) << "call " << call << ": " << us;
  }
}

// A child forked after the parent probed has none of its threads: it starts its own, here on the
// one CPU it is allowed, and the parent's probe goes on working.
TEST(CpuProbe, AForkedChildOnOneCpuProbesWithThreadsOfItsOwn) {
  ASSERT_TRUE(plausible(slowest_cpu_us()));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);  // bounded, whatever happens to the test
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(3);
    _exit(plausible(slowest_cpu_us()) && plausible(slowest_cpu_us()) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(plausible(slowest_cpu_us()));
}

}  // namespace
}  // namespace pb::cpu_probe
