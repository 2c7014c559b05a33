// trainer2/window on oneDNN: one run_window of W steps on the CPU engine.
// Reference: reference/trainer2/trainer2.hpp (run_window). Definition, inputs and outputs:
// suites/trainer2/window.cpp and window_io.hpp; phase catalog: suites/trainer2/phases.hpp.
// The building blocks (and what runs as primitives, host kernels or host reads) are in
// trainer2-onednn.hpp; every run() starts from F = F0, P = 0, F_eq = F0.
//
// A step: R = mean |F| (square, re²+im² with a sqrt post-op, mean: 3 primitives, then R broadcast
// to the batch by a stride-0 reorder); the retrieval batch (q_state = mean_T O as a matmul with a
// row of ones, the candidates concat_K(O, bank) as 4 reorders); the query rotor_apply(q + nu, θ)
// (a host kernel builds the 8x8 rotor matrix, a matmul applies it); the retrieval; the LIoR step
// (6 primitives for s, 1 for dlior); the means, sums and vel_acc; the path row (3 primitives); the
// progress metrics read by the host; the field step (depthwise convolution, binary, convolution).
//
// The ladder (cumulative; host syncs per window at W steps; phases 5 and 7 cannot run here):
//   0 baseline            three means, three sums, three divisions by t and three host reads per
//                         step (3W syncs); s computed twice; every array of a step freshly
//                         allocated and the sums out of place; the retrieval op by op (11
//                         primitives + B gemvs: the mixing as w*cand_state, then a sum over K);
//                         the batch and query rebuilt every step.
//   1 batched_metrics     the metrics stacked [3,B]: one mean, one sum, one division and ONE read
//                         per step (W syncs).
//   3 fused_lior_spd      s computed once, straight into the stack.
//   4 jit_fusion          the retrieval as 3 fused primitives and the mixing (binary with a
//                         square post-op; a matmul with g as a column whose post-ops give the
//                         logits; softmax; one gemv per batch row): one pass over cand_state
//                         instead of three, no [B,K,d] product.
//   5 adaptive_cleanup    Unsupported: no caching allocator on oneDNN's CPU engine.
//   6 inplace             every buffer allocated in setup, the sums updated in place: run()
//                         allocates nothing (the eager phases allocate ~79 MB per step at the
//                         default size, mostly the candidate states and the w*cand_state product).
//   7 graph_capture       Unsupported: no graph capture on oneDNN's CPU engine.
//   8 hoisted_retrieval_batch  batch and rotated query built once per window.
//   9 last_step_act       the retrieval (distances, softmax, mixing) only in the last step: the
//                         only one whose act is returned, and nothing else reads w.
//  10 deferred_metrics    the metrics of step t written to row t of a [W,3] array, read once per
//                         window (1 sync).
// From phase 9 on the window is the field: 64 x (R + 2 convolutions + a binary) at the default
// size, plus the batch and one retrieval.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2-onednn.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
namespace t2 = pb::suites::trainer2;
using dnnl::memory;

class WindowOnednn final : public pb::Variant {
 public:
  explicit WindowOnednn(const pb::VariantContext& context)
      : phase_(context.phase), device_(context.device) {}

  std::optional<pb::CannotRun> support() const override { return t2o::cannot_run(device_, phase_); }

  void setup(const pb::ArrayMap& inputs) override {
    dims_ = t2::window_dims_of(inputs);
    const int64_t B = dims_.batch, C = dims_.bank_rows, N = dims_.field_size();
    field_shape_ = pb::require(inputs, "F0").shape;
    O_ = t2o::upload(pb::require(inputs, "O"), {B, dims_.tokens, dims_.state_dim});
    bank_coord_ = t2o::upload(pb::require(inputs, "bank_coord"), {C, t2o::kN});
    bank_state_ = t2o::upload(pb::require(inputs, "bank_state"), {C, dims_.state_dim});
    g_ = t2o::upload(pb::require(inputs, "g"), {1, t2o::kN});
    theta_ = t2o::upload(pb::require(inputs, "theta"), {t2o::ref::kRotorSlots});
    F0_ = t2o::upload(pb::require(inputs, "F0"), {N});
    F_out_ = ob::allocate(t2o::dense({N}));
    P_out_ = ob::allocate(t2o::dense({N}));
    field_ = std::make_unique<t2o::Field>(dims_);
    reset_ = field_->reset(field_->user_view(F0_));
    export_ = field_->export_to(field_->user_view(F_out_), field_->user_view(P_out_));
    const t2o::WindowInputs in{O_, bank_coord_, bank_state_, g_, theta_, std::nullopt};
    window_ = std::make_unique<t2o::WindowProgram>(dims_, phase_, in, *field_);
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
  int phase_;
  std::string device_;
  t2o::ref::WindowDims dims_{};
  std::vector<int64_t> field_shape_;
  memory O_, bank_coord_, bank_state_, g_, theta_, F0_, F_out_, P_out_;
  std::unique_ptr<t2o::Field> field_;
  std::unique_ptr<t2o::WindowProgram> window_;
  t2o::Program reset_, export_;
};

const pb::VariantRegistration registration{
    "trainer2/window",
    "onednn",
    {0, 1, 3, 4, 5, 6, 7, 8, 9, 10},
    [](const pb::VariantContext& context) { return std::make_unique<WindowOnednn>(context); }};

}  // namespace
