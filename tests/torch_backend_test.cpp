// The torch backend's fp32 settings: every torch phase computes fp32 in fp32, never in TF32 (which
// PyTorch allows cuDNN by default on Ampere and later GPUs, and which breaks the exact spinlock
// phases on an H200), and machine.json records the settings the rows were measured with.

#include <gtest/gtest.h>

#include <filesystem>

#include "phasebench/backend.hpp"
#include "process.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;

TEST(TorchBackend, InitLeavesTf32OffForCudnnAndCublasAndTheMetadataSaysSo) {
  const auto torch = find_backend("torch");
  if (!torch) GTEST_SKIP() << "the torch backend is not built";
  torch->init(RuntimeOptions{1});
  const nlohmann::json config = torch->metadata();
  EXPECT_EQ(config.at("allow_tf32_cudnn"), false) << config.dump();
  EXPECT_EQ(config.at("allow_tf32_cublas"), false) << config.dump();
  EXPECT_EQ(config.at("float32_matmul_precision"), "highest") << config.dump();
}

// machine.json is written by the run's supervisor, which never initializes a backend: what it
// records must still be what the worker computed with.
TEST(TorchBackend, MachineJsonOfARunRecordsTf32Off) {
  if (!testing::backend_built("torch")) GTEST_SKIP() << "the torch backend is not built";
  const fs::path out = testing::fresh_temp_path("tf32-run");
  const auto result = testing::run_phasebench("run --quick --size small --filter 'trainer2/lior_step/torch/' --out " +
                                              out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json machine = results::load_run(out.string()).machine;
  const nlohmann::json& config = machine.at("backends").at("torch").at("config");
  EXPECT_EQ(config.at("allow_tf32_cudnn"), false) << config.dump();
  EXPECT_EQ(config.at("allow_tf32_cublas"), false) << config.dump();
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb
