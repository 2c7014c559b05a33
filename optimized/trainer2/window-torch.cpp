// trainer2/window on LibTorch, devices cpu and cuda: one run_window of W steps from the same
// initial state every run (F = F0, P = 0, F_eq = F0: the reset is part of the work).
// Math: reference/trainer2/trainer2.hpp (run_window). Phase catalog: suites/trainer2/phases.hpp.
// The engine and its ladder: trainer2-torch.hpp (phases 0, 1, 3, 4, 5, 6, 7, 8, 9, 10).
//
// What this file adds to the engine: phase 5's allocator cleanup after each window (CUDA only;
// phases 0-4 empty the cache every 10 windows as the original), and phase 7's CUDA graph: after
// three eager warm-up windows in setup(), the whole window (reset included) is captured, and each
// run() copies the inputs into the graph's static buffers, replays it, then delivers the step
// metrics' host reads. On the CPU phases 5 and 7 are SKIPPED with the reason; phases 8-10 there
// build on phase 6. The CUDA paths could not be compiled or run on the development machine
// (CPU-only LibTorch 1.13, no GPU).

#include "optimized/trainer2/trainer2-torch.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;

class WindowTorch final : public pb::Variant {
 public:
  explicit WindowTorch(const pb::VariantContext& ctx) : phase_(ctx.phase), device_(ctx.device) {}

  std::optional<pb::CannotRun> support() const override { return t2tb::phase_cannot_run(phase_, device_); }

  void setup(const pb::ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    const torch::Device device = tb::device_for(device_);
    inputs_ = t2tb::upload_window_inputs(in, device);
    const bool graph = t2tb::replays_graph(phase_, device_);
    static_inputs_ = graph ? t2tb::clone_inputs(inputs_) : inputs_;
    engine_ = std::make_unique<t2tb::WindowEngine>(phase_, dims_, device);
    engine_->setup(static_inputs_);
    out_ = engine_->make_outputs();
    field_ = engine_->make_field();
    cleanup_ = tb::AllocatorCleanup(device_, phase_ >= t2tb::kAdaptiveCleanup);
    graphed_.prepare(graph, {engine_.get()}, [this] { window(); });
  }

  void poison_outputs() override { t2tb::poison(out_, field_); }

  void run() override {
    if (graphed_.replaying()) {
      t2tb::copy_inputs(static_inputs_, inputs_);
      graphed_.replay();
      engine_->read_logged_metrics(out_);
    } else {
      window();
    }
    cleanup_.after_window();
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2tb::add_window_outputs(out, "", dims_, out_, field_);
    return out;
  }

 private:
  void window() {
    engine_->reset_field(field_);
    engine_->run(field_, torch::Tensor(), out_);
  }

  int phase_;
  std::string device_;
  pb::reference::trainer2::WindowDims dims_{};
  t2tb::WindowInputs inputs_, static_inputs_;  // the same tensors unless a CUDA graph reads them
  std::unique_ptr<t2tb::WindowEngine> engine_;
  t2tb::WindowOutputs out_;
  t2tb::FieldState field_;
  tb::AllocatorCleanup cleanup_;
  t2tb::GraphedRun graphed_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& ctx) { return std::make_unique<WindowTorch>(ctx); }

const pb::VariantRegistration registration{"trainer2/window", "torch", {0, 1, 3, 4, 5, 6, 7, 8, 9, 10}, make};

}  // namespace
