// `verify` checks in a worker process: a variant that crashes or hangs is an ERROR line naming the
// check, and the other checks still run; SIGTERM ends verify and its worker at once. Faults are
// injected with PHASEBENCH_INJECT_CRASH / PHASEBENCH_INJECT_HANG (harness/src/engine/fault_injection.hpp)
// into the serial reference of trainer2/retrieval, among the five trainer2 references.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>

#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using namespace pb::testing;

const std::string kVerify = "verify --size small --seeds 1 --backend reference --filter trainer2/";
const std::string kFaulty = "trainer2/retrieval/small/reference/cpu/0_serial_fp32";
const std::string kFaultyPattern = "trainer2/retrieval/small/reference";  // a PHASEBENCH_INJECT_* regex
const std::vector<std::string> kHealthy = {"trainer2/lior_step", "trainer2/rotor_update", "trainer2/window",
                                           "trainer2/train_step"};

void expect_the_others_passed(const std::string& output) {
  for (const std::string& workload : kHealthy)
    EXPECT_NE(output.find("OK  " + workload + "/small/reference/cpu/0_serial_fp32  seed 1"), std::string::npos)
        << workload << "\n" << output;
  EXPECT_NE(output.find("verify: 4 passed, 1 failed"), std::string::npos) << output;
}

TEST(VerifyIsolation, ACrashingVariantIsAnErrorLineAndTheOtherChecksGoOn) {
  const fs::path tmp = empty_temp_directory();
  const auto result =
      run_phasebench(kVerify, deliberate_crash_environment() + " TMPDIR=" + tmp.string() +
                                          " PHASEBENCH_INJECT_CRASH=" + kFaultyPattern);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("ERROR  " + kFaulty + "  seed 1  crashed: Segmentation fault (signal 11)"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("  ERROR " + kFaulty + " seed 1: crashed"), std::string::npos) << "in the summary";
  expect_the_others_passed(result.output);
  EXPECT_TRUE(holds_nothing(tmp)) << "the scratch directory is removed";
}

TEST(VerifyIsolation, AHangingCheckIsEndedAfterTheHangTimeout) {
  const fs::path tmp = empty_temp_directory();
  const auto result = run_phasebench(kVerify + " --hang-timeout 2",
                                     "TMPDIR=" + tmp.string() + " PHASEBENCH_INJECT_HANG=" + kFaultyPattern);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("ERROR  " + kFaulty + "  seed 1  timed out after 2 s"), std::string::npos)
      << result.output;
  expect_the_others_passed(result.output);
  EXPECT_TRUE(holds_nothing(tmp));
}

TEST(VerifyIsolation, WithoutIsolationACrashTakesVerifyDown) {
  const auto result =
      run_phasebench(kVerify, deliberate_crash_environment() + " PHASEBENCH_NO_ISOLATION=1 PHASEBENCH_INJECT_CRASH=" +
                                          kFaultyPattern);
  EXPECT_EQ(result.exit_code, 128 + SIGSEGV) << result.output;
}

// ---- stopping ------------------------------------------------------------------------------------

// The worker's journal in verify's scratch directory names the check it is in.
bool journal_names(const fs::path& tmp, const std::string& check) {
  for (const auto& entry : fs::directory_iterator(tmp))
    if (read_text(entry.path() / "journal").find(check) != std::string::npos) return true;
  return false;
}

TEST(VerifyIsolation, SigtermEndsVerifyAndItsWorkerAtOnce) {
  const fs::path tmp = empty_temp_directory(), output = fresh_temp_path("verify-output");
  std::vector<std::string> arguments{"verify", "--size", "small", "--seeds", "1", "--backend", "reference",
                                     "--filter", "trainer2/", "--hang-timeout", "600"};
  const pid_t verify = start_phasebench(
      arguments, {"TMPDIR=" + tmp.string(), "PHASEBENCH_INJECT_HANG=" + kFaultyPattern}, output);
  ASSERT_GT(verify, 0);
  ASSERT_TRUE(within(std::chrono::seconds(120), [&] { return journal_names(tmp, kFaulty); }))
      << "the worker never reached the hanging check\n" << read_text(output);
  const pid_t worker = child_of(verify);
  ASSERT_GT(worker, 0);

  ASSERT_EQ(kill(verify, SIGTERM), 0);
  int status = 0;
  const bool verify_ended =
      within(std::chrono::seconds(5), [&] { return waitpid(verify, &status, WNOHANG) == verify; });
  const bool worker_gone = within(std::chrono::seconds(5), [&] { return kill(worker, 0) != 0 && errno == ESRCH; });
  if (!verify_ended) {  // leave nothing behind for the tests after this one
    kill(verify, SIGKILL);
    waitpid(verify, &status, 0);
  }
  if (!worker_gone) kill(-worker, SIGKILL);
  ASSERT_TRUE(verify_ended) << read_text(output);
  EXPECT_TRUE(worker_gone) << "worker " << worker << " is still there";
  EXPECT_NE(kill(-worker, 0), 0) << "nothing of the worker's process group is left";
  ASSERT_TRUE(WIFEXITED(status)) << "verify died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  const std::string text = read_text(output);
  EXPECT_NE(text.find("verify stopped by SIGTERM"), std::string::npos) << text;
  EXPECT_NE(text.find("verify: 1 passed, 0 failed"), std::string::npos) << "what was checked so far\n" << text;
  EXPECT_TRUE(holds_nothing(tmp)) << "the scratch directory is removed";
}

}  // namespace
}  // namespace pb
