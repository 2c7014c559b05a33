#pragma once
// The CUDA Variant of the executor ladders of geometry/complex_metric and geometry/mamba_conjugate
// (complex_metric_ladder.hpp, mamba_conjugate_ladder.hpp): the ladder on a DeviceExecutor (its own
// stream; launches, stream-ordered allocations and host reads counted by cuda_backend). Without a
// usable device (always on the build machines) support() reports SKIPPED with the runtime's error
// text and nothing touches the device: COMPILED HERE, NEVER RUN ON A GPU. The ladders and their
// kernel bodies run on the host in tests/geometry_metric_test.cpp. nvcc only.

#include <memory>
#include <optional>

#include "backends/cuda/device_executor.cuh"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend {

template <template <typename> class Ladder>
class CudaLadderVariant final : public Variant {
 public:
  explicit CudaLadderVariant(const VariantContext& context) : context_(context) {}
  std::optional<CannotRun> support() const override { return variant_support(context_); }
  void setup(const ArrayMap& in) override {
    executor_ = std::make_unique<DeviceExecutor>();
    ladder_ = std::make_unique<Ladder<DeviceExecutor>>(*executor_, in, context_.plan);
    executor_->wait();
  }
  void poison_outputs() override { ladder_->poison_outputs(); }
  void run() override { ladder_->run(); }
  ArrayMap outputs() override { return ladder_->outputs(); }

 private:
  VariantContext context_;
  // Destroyed in reverse order: the ladder's buffers (freed on the stream), then the stream.
  std::unique_ptr<DeviceExecutor> executor_;
  std::unique_ptr<Ladder<DeviceExecutor>> ladder_;
};

template <template <typename> class Ladder>
VariantFactory cuda_ladder_factory() {
  return [](const VariantContext& context) { return std::make_unique<CudaLadderVariant<Ladder>>(context); };
}

}  // namespace pb::cuda_backend
