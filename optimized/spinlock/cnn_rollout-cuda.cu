// spinlock/cnn_rollout_<policy> on CUDA: the Variant that runs the ladder of cnn_rollout-cuda.hpp
// (kernel bodies, GEMM parameters and phases described there) on the GPU through a
// DeviceExecutor and a cuBLAS handle bound to its stream. Phases 0-6 are all here; from phase 5
// setup() runs one rollout eagerly (the warm-up: kernels loaded, cuBLAS's heuristics chosen), then
// captures one rollout on the stream as a CUDA graph that run() replays (if capture fails, the
// variant says why on stderr and runs eagerly). Without a usable device (always on the build
// machines) support() reports SKIPPED with the runtime's error text, and nothing here touches the
// device: compiled here, never run on a GPU. The ladder itself runs on the host in
// tests/cuda/cnn_rollout_cuda_test.cpp.

#include <iostream>
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
      : context_(context), arch_(rollout::sp::architecture(context.size)), policy_(rollout::sp::policy_of(*context.workload)) {}

  std::optional<CannotRun> support() const override {
    if (context_.device != "cuda")
      return CannotRun{CannotRun::Kind::Unsupported, "the cuda backend runs on device \"cuda\" only"};
    if (!device_available()) return CannotRun{CannotRun::Kind::Skipped, device_unavailable_reason()};
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    executor_ = std::make_unique<DeviceExecutor>();
    gemm_ = std::make_unique<CublasGemm>(executor_->stream());
    ladder_ = std::make_unique<Ladder>(*executor_, *gemm_, inputs, arch_, policy_, context_.phase);
    if (ladder_->plan().graph) capture_after_warm_up();
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
  void capture_after_warm_up() {
    ladder_->run();
    executor_->wait();
    const std::string failure = graph_.capture(executor_->stream(), [this] { ladder_->run(); });
    if (!failure.empty()) {
      std::cerr << "phasebench: " << context_.workload->full_name() << "/cuda phase " << context_.phase
                << ": CUDA graph capture failed (" << failure << "); running eagerly\n";
    }
  }

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
