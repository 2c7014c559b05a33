// Backends initialize once per process (Kokkos cannot initialize twice): finalize them after the
// last test, as the command line does at exit.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "phasebench/runner.hpp"

namespace {

class BackendLifetime : public ::testing::Environment {
 public:
  void TearDown() override { pb::finalize_backends(); }
};

[[maybe_unused]] ::testing::Environment* const backend_lifetime =
    ::testing::AddGlobalTestEnvironment(new BackendLifetime);

// ctest runs one process per suite (cmake/discover_test_suites.cmake) and sets
// PHASEBENCH_TESTS_ALL_SKIPPED_EXIT to the suite's SKIP_RETURN_CODE: a run in which no test failed
// and every test was skipped exits with it, so ctest shows the suite as skipped, not as passed.
// Without the variable (ci/sanitize.sh's shards, a run by hand) the exit code is gtest's own.
class AllSkippedExitCode : public ::testing::EmptyTestEventListener {
 public:
  explicit AllSkippedExitCode(int code) : code_(code) {}
  void OnTestProgramEnd(const ::testing::UnitTest& unit_test) override {
    // Called after the summary is printed and the environments torn down (gtest runs the end
    // events of its listeners last-appended first, and the printer is appended after this one).
    if (unit_test.Passed() && unit_test.successful_test_count() == 0 && unit_test.skipped_test_count() > 0)
      std::exit(code_);
  }

 private:
  int code_;
};

bool add_all_skipped_exit_code() {
  const char* code = std::getenv("PHASEBENCH_TESTS_ALL_SKIPPED_EXIT");
  if (code == nullptr || *code == '\0') return false;
  ::testing::UnitTest::GetInstance()->listeners().Append(new AllSkippedExitCode(std::stoi(code)));
  return true;
}

[[maybe_unused]] const bool all_skipped_exit_code = add_all_skipped_exit_code();

}  // namespace
