// trainer2/window on LibTorch, devices cpu and cuda: one run_window of W steps from the same
// initial state every run (F = F0, P = 0, F_eq = F0: the reset is part of the work).
// Math: reference/trainer2/trainer2.hpp (run_window). The engine, the driver that adds the
// allocator cleanup and the CUDA graph (graph_capture: the whole window, reset included, captured
// after three eager warm-up windows), and what each optimization changes: trainer2_engine-torch.hpp.
// The CUDA paths could not be compiled or run on the development machine (CPU-only LibTorch 1.13).

#include "optimized/trainer2/trainer2_engine-torch.hpp"
#include "suites/trainer2/phases.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;

class WindowTorch final : public pb::Variant {
 public:
  explicit WindowTorch(const pb::VariantContext& context) : driver_(context) {}

  std::optional<pb::CannotRun> support() const override { return driver_.support(); }

  void setup(const pb::ArrayMap& in) override {
    driver_.setup(in);
    out_ = driver_.engine().make_outputs();
    field_ = driver_.engine().make_field();
    driver_.capture([this] { window(); });
  }

  void poison_outputs() override { t2tb::poison(out_, field_); }

  void run() override {
    driver_.run([this] { window(); }, {&out_});
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2tb::add_window_outputs(out, "", driver_.dims(), out_, field_);
    return out;
  }

 private:
  void window() {
    driver_.engine().reset_field(field_);
    driver_.engine().run(field_, torch::Tensor(), out_);
  }

  t2tb::WindowDriver driver_;
  t2tb::WindowOutputs out_;
  t2tb::FieldState field_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& context) { return std::make_unique<WindowTorch>(context); }

const pb::VariantRegistration registration{
    "trainer2/window", "torch",
    t2tb::registered_phases({t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd, t2::kJitFusion,
                             t2::kAdaptiveCleanup, t2::kInPlace, t2::kGraphCapture, t2::kHoistedRetrievalBatch,
                             t2::kLastStepAct, t2::kDeferredMetrics}),
    make};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
