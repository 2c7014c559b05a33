// spinlock/cnn_rollout_<policy> on CUDA: the Variant that runs the ladder of cnn_rollout-cuda.hpp
// (kernel bodies and phases described there) on the GPU through a DeviceExecutor, on a stream of
// its own. Phases 0, 1 and 6 are implemented; 2-5 (bf16, the GroupNorm/tanh-GELU model, their
// batching and tuning) are UNSUPPORTED until written and tested. Without a usable device (always
// on the build machines) support() reports SKIPPED with the runtime's error text, and nothing
// here touches the device; the ladder itself runs on the host in tests/cuda/cnn_rollout_cuda_test.cpp.

#include <memory>
#include <optional>

#include "backends/cuda/device_executor.cuh"
#include "optimized/spinlock/cnn_rollout-cuda.hpp"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend {
namespace {

namespace rollout = pb::cuda_backend::spinlock;

class CnnRolloutCuda final : public Variant {
 public:
  explicit CnnRolloutCuda(const VariantContext& context)
      : context_(context), arch_(rollout::sp::architecture(context.size)), policy_(rollout::sp::policy_of(*context.workload)) {}

  std::optional<CannotRun> support() const override {
    if (context_.device != "cuda")
      return CannotRun{CannotRun::Kind::Unsupported, "the cuda backend runs on device \"cuda\" only"};
    if (!rollout::implemented(context_.phase))
      return CannotRun{CannotRun::Kind::Unsupported,
                       "not implemented for CUDA yet: bf16 operands and the GroupNorm/tanh-GELU model "
                       "(phases 2-5) have no kernels here; phases 0, 1 and 6 do"};
    if (!device_available()) return CannotRun{CannotRun::Kind::Skipped, device_unavailable_reason()};
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    executor_ = std::make_unique<DeviceExecutor>();
    ladder_ = std::make_unique<rollout::CnnRolloutLadder<DeviceExecutor>>(*executor_, inputs, arch_, policy_, context_.phase);
    executor_->wait();
  }

  void poison_outputs() override { ladder_->poison_outputs(); }

  void run() override { ladder_->run(); }

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
  // Destroyed in reverse order: the ladder's buffers (freed on the stream), then the stream.
  std::unique_ptr<DeviceExecutor> executor_;
  std::unique_ptr<rollout::CnnRolloutLadder<DeviceExecutor>> ladder_;
};

VariantFactory factory() {
  return [](const VariantContext& context) { return std::make_unique<CnnRolloutCuda>(context); };
}

const pb::suites::spinlock::RolloutRegistration registration{"cuda", pb::suites::spinlock::kAllPhases, factory()};

}  // namespace
}  // namespace pb::cuda_backend
