#pragma once
// trainer2 on CUDA: the Variant that runs any trainer2 ladder (trainer2_engine_ladders-cuda.hpp)
// on the GPU through a DeviceExecutor, on a stream of its own. The *-cuda.cu files only register
// it for their workload. nvcc only.
//
// With graph_capture: setup() runs the ladder once eagerly (the warm-up: kernels loaded,
// every buffer touched), then captures one whole run on the stream as a CUDA graph
// (Logging::Capture: the progress metrics go to pinned memory inside the graph, no host wait)
// and instantiates it; run() replays the graph and waits once, then the host reads the metrics.
// The inputs live in static device buffers uploaded by setup(), and the run's first nodes copy
// the initial state into the working buffers, so a replay is one run from the inputs. If capture
// fails, the variant says why on stderr and runs eagerly.
//
// Without a usable device (always on the build machines) support() reports SKIPPED with the
// runtime's error text, and nothing here touches the device.

#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "backends/cuda/device_executor.cuh"
#include "optimized/trainer2/trainer2_engine_ladders-cuda.hpp"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend::trainer2 {

template <template <typename> class Ladder>
class LadderVariant final : public Variant {
 public:
  explicit LadderVariant(const VariantContext& context) : context_(context) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    executor_ = std::make_unique<DeviceExecutor>();
    ladder_ = std::make_unique<Ladder<DeviceExecutor>>(*executor_, inputs, context_.plan);
    if constexpr (kWindowed) {
      if (context_.has(pb::suites::trainer2::kGraphCapture)) {
        capture_after_warm_up(
            *executor_, graph_, context_, [this] { ladder_->run(Logging::Read); },
            [this] { ladder_->enqueue(Logging::Capture); });
      }
    }
    executor_->wait();
  }

  void poison_outputs() override { ladder_->poison_outputs(); }

  void run() override {
    if constexpr (kWindowed) {
      if (graph_.ready()) {
        graph_.launch(executor_->stream());
        executor_->wait();  // then the host reads the progress log the graph copied out
        ladder_->finish_on_host();
        return;
      }
      ladder_->run(Logging::Read);
    } else {
      ladder_->run();
    }
  }

  ArrayMap outputs() override { return ladder_->outputs(); }

 private:
  // Window and training step: the ladders with progress metrics, the ones a graph captures.
  static constexpr bool kWindowed =
      std::is_invocable_v<decltype(&Ladder<DeviceExecutor>::run), Ladder<DeviceExecutor>&, Logging>;

  VariantContext context_;
  // Destroyed in reverse order: the graph, then the ladder's buffers (freed on the stream), then
  // the executor's stream.
  std::unique_ptr<DeviceExecutor> executor_;
  std::unique_ptr<Ladder<DeviceExecutor>> ladder_;
  Graph graph_;
};

/// Registers `Ladder` for `workload` with the phases it implements.
template <template <typename> class Ladder>
struct LadderRegistration {
  explicit LadderRegistration(const std::string& workload, const char* source_file = __builtin_FILE()) {
    const VariantFactory make = [](const VariantContext& context) {
      return std::make_unique<LadderVariant<Ladder>>(context);
    };
    VariantRegistration{workload, "cuda", Ladder<DeviceExecutor>::phases(), make, source_file};
  }
};

}  // namespace pb::cuda_backend::trainer2
