// How phasebench processes end. A supervisor (of `run` and `verify`) and every command that uses no
// backend only ask the device runtimes what devices there are; with a CUDA LibTorch on an H200 the
// library teardown after those questions can die of SIGSEGV once the results are written, losing
// the buffered summary and turning exit 0 into 139. Such processes end without that teardown
// (runner.hpp, exit_without_library_teardown). Where CUDA is present these tests take the path
// that teardown would crash on; everywhere they check that nothing printed is lost on the way out (stdout is a
// pipe here, so fully buffered, as in a CI job's log).

#include <gtest/gtest.h>

#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using namespace pb::testing;

// The GPU backends this build has, as a --backend list ("" when none): a sanitizer build has torch
// without cuda, a CUDA machine's build may have cuda without torch.
std::string built_gpu_backends() {
  std::string list;
  for (const char* backend : {"torch", "cuda"})
    if (backend_built(backend)) list += (list.empty() ? "" : ",") + std::string(backend);
  return list;
}

TEST(CleanExit, VerifyOfTheGpuBackendsThroughItsSupervisorExitsZeroWithItsSummary) {
  const std::string backends = built_gpu_backends();
  if (backends.empty()) GTEST_SKIP() << "neither the torch nor the cuda backend is built";
  const auto result =
      run_phasebench("verify --filter trainer2/lior_step --backend " + backends + " --size small --seeds 1");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("\nverify: "), std::string::npos) << "the summary line was lost:\n" << result.output;
  EXPECT_NE(result.output.find(" passed, 0 failed"), std::string::npos) << result.output;
}

TEST(CleanExit, RunThroughItsSupervisorPrintsItsWholeSummaryAndExitsZero) {
  const std::string backends = built_gpu_backends();
  if (backends.empty()) GTEST_SKIP() << "neither the torch nor the cuda backend is built";
  const fs::path out = fresh_temp_path("clean-exit-run");
  const auto result = run_phasebench("run --quick --size small --backend " + backends +
                                     " --filter trainer2/lior_step --out " + out.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // The last lines the supervisor prints: the claims view, then where the results are.
  EXPECT_NE(result.output.find("results: " + out.string() + "\n"), std::string::npos) << result.output;
  fs::remove_all(out);
}

// `list` uses no backend: it takes the same way out. Everything it prints (more than one pipe
// buffer) arrives, exactly as when it goes to a file.
TEST(CleanExit, ACommandThatUsedNoBackendLosesNoOutput) {
  const auto piped = run_command(std::string(PHASEBENCH_EXECUTABLE) + " list");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  const fs::path file = fresh_temp_path("clean-exit-list");
  ASSERT_EQ(run_command(std::string(PHASEBENCH_EXECUTABLE) + " list > " + file.string()).exit_code, 0);
  const std::string written = read_text(file);
  EXPECT_GT(written.size(), 4096u);
  EXPECT_EQ(piped.output, written);
  fs::remove(file);
}

}  // namespace
}  // namespace pb
