// The workers' environment: OpenMP's waiting threads bounded (GOMP_SPINCOUNT=10000 unless the user
// chose, with GOMP_SPINCOUNT or OMP_WAIT_POLICY) and freed memory kept for reuse (glibc tunables
// unless the user set a malloc one), and machine.json says which phasebench set.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/worker_environment.hpp"
#include "process.hpp"

namespace pb::worker_environment {
namespace {

// The variables this test changes, restored after it (other tests in this process read them).
class SavedEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) saved_[name] = std::getenv(name) ? std::optional<std::string>(std::getenv(name)) : std::nullopt;
    for (const char* name : kNames) unsetenv(name);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) value ? (void)setenv(name.c_str(), value->c_str(), 1) : (void)unsetenv(name.c_str());
  }
  static constexpr const char* kNames[] = {"GOMP_SPINCOUNT",  "OMP_WAIT_POLICY",  "PHASEBENCH_SET_GOMP_SPINCOUNT",
                                           "GLIBC_TUNABLES",  "MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_",
                                           "PHASEBENCH_SET_GLIBC_TUNABLES"};
  std::map<std::string, std::optional<std::string>> saved_;
};

using BoundedSpinning = SavedEnvironment;

TEST_F(BoundedSpinning, IsSetWhenTheUserChoseNothingAndSaysSo) {
  bound_spinning_for_workers();
  ASSERT_NE(std::getenv("GOMP_SPINCOUNT"), nullptr);
  EXPECT_STREQ(std::getenv("GOMP_SPINCOUNT"), kBoundedSpinCount);
  EXPECT_STREQ(kBoundedSpinCount, "10000") << "the measured choice (docs/regression-gate.md)";
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array({"GOMP_SPINCOUNT"}));
}

TEST_F(BoundedSpinning, TheUsersChoiceIsKept) {
  setenv("GOMP_SPINCOUNT", "300000", 1);
  bound_spinning_for_workers();
  EXPECT_STREQ(std::getenv("GOMP_SPINCOUNT"), "300000");
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array());
  unsetenv("GOMP_SPINCOUNT");
  setenv("OMP_WAIT_POLICY", "passive", 1);
  bound_spinning_for_workers();
  EXPECT_EQ(std::getenv("GOMP_SPINCOUNT"), nullptr) << "OMP_WAIT_POLICY is a choice too";
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array());
}

using KeptFreedMemory = SavedEnvironment;

TEST_F(KeptFreedMemory, IsAddedAfterTheUsersOtherTunablesAndSaysSo) {
  keep_freed_memory_for_workers();
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), kKeepFreedMemory);
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array({"GLIBC_TUNABLES"}));
  setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
  keep_freed_memory_for_workers();
  EXPECT_EQ(std::string(std::getenv("GLIBC_TUNABLES")), std::string("glibc.pthread.rseq=0:") + kKeepFreedMemory);
}

TEST_F(KeptFreedMemory, AMallocChoiceOfTheUsersIsKept) {
  setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_max=65536", 1);
  keep_freed_memory_for_workers();
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), "glibc.malloc.mmap_max=65536");
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array());
  for (const char* variable : {"MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_"}) {
    unsetenv("GLIBC_TUNABLES");
    setenv(variable, "1", 1);
    keep_freed_memory_for_workers();
    EXPECT_EQ(std::getenv("GLIBC_TUNABLES"), nullptr) << variable;
    unsetenv(variable);
  }
  EXPECT_EQ(set_by_phasebench(), nlohmann::json::array());
}

nlohmann::json environment_of_a_run(const std::string& environment) {
  const auto out = testing::fresh_temp_path("worker-environment-run");
  const auto ran = testing::run_phasebench(
      "run --quick --size small --filter 'trainer2/lior_step' --backend reference --reps 1 --out " + out.string(),
      "env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u GLIBC_TUNABLES " + environment);
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  std::ifstream in(out / "machine.json");
  const nlohmann::json machine = nlohmann::json::parse(in, nullptr, false);
  std::filesystem::remove_all(out);
  return machine.is_object() ? machine["environment"] : nlohmann::json();
}

// End to end: the worker ran with the variable, and machine.json records it and who set it.
TEST(BoundedSpinningRun, MachineJsonRecordsTheSpinCountTheWorkerRanWith) {
  const nlohmann::json ours = environment_of_a_run("");
  EXPECT_EQ(ours.value("GOMP_SPINCOUNT", ""), kBoundedSpinCount) << ours.dump();
  EXPECT_EQ(ours.value("GLIBC_TUNABLES", ""), kKeepFreedMemory) << ours.dump();
  EXPECT_EQ(ours["set_by_phasebench"], nlohmann::json::array({"GOMP_SPINCOUNT", "GLIBC_TUNABLES"})) << ours.dump();
  const nlohmann::json yours =
      environment_of_a_run("GOMP_SPINCOUNT=300000 GLIBC_TUNABLES=glibc.malloc.mmap_max=65536");
  EXPECT_EQ(yours.value("GOMP_SPINCOUNT", ""), "300000") << yours.dump();
  EXPECT_EQ(yours.value("GLIBC_TUNABLES", ""), "glibc.malloc.mmap_max=65536") << yours.dump();
  EXPECT_EQ(yours["set_by_phasebench"], nlohmann::json::array()) << yours.dump();
}

}  // namespace
}  // namespace pb::worker_environment
