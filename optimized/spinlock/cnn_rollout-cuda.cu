// spinlock/cnn_rollout_<policy> on CUDA: the Variant that runs the ladder of cnn_rollout-cuda.hpp
// (kernel bodies, GEMM parameters and what each optimization does there) on the GPU through a
// DeviceExecutor and a cuBLAS handle bound to its stream. Every phase of the catalog is here; when
// the ladder's options ask for graph replay (profile_guided, exact_fast) setup() runs one rollout
// eagerly (the warm-up: kernels loaded, cuBLAS's heuristics chosen), then captures one rollout on
// the stream as a CUDA graph that run() replays (if capture fails, the variant says why on stderr
// and runs eagerly). Without a usable device (always on the build machines) support() reports
// SKIPPED with the runtime's error text, and nothing here touches the device: compiled here, never
// run on a GPU. The ladder itself runs on the host in tests/cuda/cnn_rollout_cuda_test.cpp.

#include <memory>
#include <optional>
#include <string>

#include "backends/cuda/cublas_gemm.hpp"
#include "backends/cuda/device_executor.cuh"
#include "optimized/spinlock/cnn_rollout-cuda.hpp"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend {
namespace {

namespace rollout = pb::cuda_backend::spinlock;
using Ladder = rollout::CnnRolloutLadder<DeviceExecutor, CublasGemm>;

class CnnRolloutCuda final : public Variant {
 public:
  explicit CnnRolloutCuda(const VariantContext& context)
      : context_(context),
        arch_(rollout::sp::architecture(context)),
        policy_(rollout::sp::policy_of(*context.workload)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    executor_ = std::make_unique<DeviceExecutor>();
    gemm_ = std::make_unique<CublasGemm>(executor_->stream());
    ladder_ = std::make_unique<Ladder>(*executor_, *gemm_, inputs, arch_, policy_, context_.plan);
    if (ladder_->options().graph) {
      const auto run_once = [this] { ladder_->run(); };
      capture_after_warm_up(*executor_, graph_, context_, run_once, run_once);
    }
    executor_->wait();
  }

  void poison_outputs() override { ladder_->poison_outputs(); }

  void run() override {
    if (graph_.ready()) {
      graph_.launch(executor_->stream());
      return;
    }
    ladder_->run();
  }

  ArrayMap outputs() override {
    const std::vector<float> trajectory = ladder_->trajectory();
    ArrayMap out;
    out[rollout::sp::kTrajectory] = HostArray::from_floats(
        {arch_.steps, arch_.realizations, rollout::kFields, arch_.height, arch_.width}, trajectory.data(),
        static_cast<int64_t>(trajectory.size()));
    return out;
  }

 private:
  VariantContext context_;
  rollout::ref::Architecture arch_;
  rollout::ref::Policy policy_;
  // Destroyed in reverse order: the graph, the ladder's buffers (freed on the stream), the cuBLAS
  // handle, then the executor's stream.
  std::unique_ptr<DeviceExecutor> executor_;
  std::unique_ptr<CublasGemm> gemm_;
  std::unique_ptr<Ladder> ladder_;
  Graph graph_;
};

VariantFactory factory() {
  return [](const VariantContext& context) { return std::make_unique<CnnRolloutCuda>(context); };
}

const pb::suites::spinlock::RolloutRegistration registration{"cuda", pb::suites::spinlock::kAllPhases, factory()};

}  // namespace
}  // namespace pb::cuda_backend
