// trainer2/window on oneDNN: one run_window of W steps on the CPU engine: the trainer2 engine's
// WindowProgram (trainer2_engine-onednn.hpp, the same code the training step runs) on its Field.
// Reference: reference/trainer2/trainer2.hpp (run_window); definition, inputs and outputs:
// suites/trainer2/window.cpp and window_io.hpp. Every run() starts from F = F0, P = 0, F_eq = F0.
//
// Where the time goes (default size): without inplace a step allocates ~79 MB, mostly the
// candidate states and the w*cand_state product; with last_step_act the window is mostly the
// field, 64 x (R + 2 convolutions + a binary), plus the batch and one retrieval.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2_engine-onednn.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
namespace t2 = pb::suites::trainer2;
using dnnl::memory;

class WindowOnednn final : public pb::Variant {
 public:
  explicit WindowOnednn(const pb::VariantContext& context)
      : device_(context.device), plan_(context) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    dims_ = t2::window_dims_of(inputs);
    const int64_t B = dims_.batch, C = dims_.bank_rows, N = dims_.field_size();
    field_shape_ = pb::require(inputs, "F0").shape;
    O_ = ob::upload(pb::require(inputs, "O"), {B, dims_.tokens, dims_.state_dim});
    bank_coord_ = ob::upload(pb::require(inputs, "bank_coord"), {C, t2o::kN});
    bank_state_ = ob::upload(pb::require(inputs, "bank_state"), {C, dims_.state_dim});
    g_ = ob::upload(pb::require(inputs, "g"), {1, t2o::kN});
    theta_ = ob::upload(pb::require(inputs, "theta"), {t2o::ref::kRotorSlots});
    F0_ = ob::upload(pb::require(inputs, "F0"), {N});
    F_out_ = ob::allocate(ob::dense({N}));
    P_out_ = ob::allocate(ob::dense({N}));
    field_ = std::make_unique<t2o::Field>(dims_);
    reset_ = field_->reset(field_->user_view(F0_));
    export_ = field_->copy_to(field_->user_view(F_out_), field_->user_view(P_out_));
    const t2o::WindowInputs in{O_, bank_coord_, bank_state_, g_, theta_, std::nullopt};
    window_ = std::make_unique<t2o::WindowProgram>(dims_, plan_, in, *field_);
  }

  void poison_outputs() override {
    window_->poison();
    ob::fill_floats(F_out_, t2o::kNaN);
    ob::fill_floats(P_out_, t2o::kNaN);
  }

  void run() override {
    reset_();  // F = F0, P = 0, F_eq = F0
    window_->run();
    export_();  // F and P back in the input layout
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2o::add_window_outputs(out, "", dims_, *window_, F_out_, P_out_, field_shape_);
    return out;
  }

 private:
  std::string device_;
  t2o::WindowPlan plan_;
  t2o::ref::WindowDims dims_{};
  std::vector<int64_t> field_shape_;
  memory O_, bank_coord_, bank_state_, g_, theta_, F0_, F_out_, P_out_;
  std::unique_ptr<t2o::Field> field_;
  std::unique_ptr<t2o::WindowProgram> window_;
  ob::Program reset_, export_;
};

const pb::VariantRegistration registration{
    "trainer2/window",
    "onednn",
    {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd, t2::kJitFusion, t2::kInPlace,
     t2::kHoistedRetrievalBatch, t2::kLastStepAct, t2::kDeferredMetrics},
    [](const pb::VariantContext& context) { return std::make_unique<WindowOnednn>(context); }};

}  // namespace
