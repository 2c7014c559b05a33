#pragma once
// trainer2 on CUDA: the Variant that runs any of the trainer2 ladders (trainer2-cuda-ladders.hpp)
// on the GPU through a DeviceExecutor, on a stream of its own. The *-cuda.cu files only register
// it for their workload. nvcc only.
//
// Phase >= 7 (graph_capture): setup() runs the ladder once eagerly (the warm-up: kernels loaded,
// every buffer touched), then captures one whole run on the stream as a CUDA graph
// (Logging::Capture: the progress metrics go to pinned memory inside the graph, no host wait)
// and instantiates it; run() replays the graph and waits once, then the host reads the metrics.
// The inputs live in static device buffers uploaded by setup(), and the run's first nodes copy
// the initial state into the working buffers, so a replay is one run from the inputs. If capture
// fails, the variant says why on stderr and runs eagerly.
//
// Without a usable device (always on the build machines) support() reports SKIPPED with the
// runtime's error text, and nothing here touches the device.

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "backends/cuda/device_executor.cuh"
#include "optimized/trainer2/trainer2-cuda-ladders.hpp"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend::trainer2 {

constexpr int kAdaptiveCleanupPhase = 5;
constexpr int kGraphCapturePhase = 7;

/// Why phase 5 is not a CUDA phase.
inline const char* adaptive_cleanup_reason() {
  return "adaptive_cleanup schedules torch.cuda.empty_cache() for PyTorch's caching allocator; raw "
         "CUDA keeps no allocator cache to empty (phases 0-4 allocate and free stream-ordered with "
         "cudaMallocAsync; from phase 6 nothing is allocated in run())";
}

template <template <typename> class Ladder>
class LadderVariant final : public Variant {
 public:
  explicit LadderVariant(const VariantContext& context) : context_(context) {}

  std::optional<CannotRun> support() const override {
    if (context_.device != "cuda")
      return CannotRun{CannotRun::Kind::Unsupported, "the cuda backend runs on device \"cuda\" only"};
    if (context_.phase == kAdaptiveCleanupPhase)
      return CannotRun{CannotRun::Kind::Unsupported, adaptive_cleanup_reason()};
    if (!device_available()) return CannotRun{CannotRun::Kind::Skipped, device_unavailable_reason()};
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    executor_ = std::make_unique<DeviceExecutor>();
    ladder_ = std::make_unique<Ladder<DeviceExecutor>>(*executor_, inputs, context_.phase);
    if (context_.phase >= kGraphCapturePhase) capture_after_warm_up();
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

  void capture_after_warm_up() {
    if constexpr (kWindowed) {
      ladder_->run(Logging::Read);
      executor_->wait();
      const std::string failure =
          graph_.capture(executor_->stream(), [this] { ladder_->enqueue(Logging::Capture); });
      if (!failure.empty()) {
        std::cerr << "phasebench: " << context_.workload->full_name() << "/cuda phase "
                  << context_.phase << ": CUDA graph capture failed (" << failure
                  << "); running eagerly\n";
      }
    }
  }

  VariantContext context_;
  // Destroyed in reverse order: the graph, then the ladder's buffers (freed on the stream), then
  // the executor's stream.
  std::unique_ptr<DeviceExecutor> executor_;
  std::unique_ptr<Ladder<DeviceExecutor>> ladder_;
  Graph graph_;
};

template <template <typename> class Ladder>
std::unique_ptr<Variant> make_ladder_variant(const VariantContext& context) {
  return std::make_unique<LadderVariant<Ladder>>(context);
}

}  // namespace pb::cuda_backend::trainer2
