// trainer2/train_step on oneDNN: the two-phase contrastive step on the CPU engine. Reference:
// reference/trainer2/trainer2.hpp (train_step); definition: suites/trainer2/train_step.cpp;
// inputs and outputs: suites/trainer2/window_io.hpp. The windows are the trainer2 engine's
// WindowProgram and the rotor update its RotorUpdate (trainer2_engine-onednn.hpp: the same code
// as window-onednn.cpp and rotor_update-onednn.cpp).
//
// One run(), from the inputs every time:
//   1 state = inputs (F = F0, P = 0, F_eq = F0, bank, g, θ: reorders), snapshot of field,
//     momentum, memory bank and θ (reorders); the free window.
//   2 nudge = 0.1 (target − q_free): one binary with a linear post-op.
//   3 restore the snapshot; the nudged window (the same program bound to the nudge).
//   4 Δ = lior_nudged − lior_free (one binary; 0 in exact arithmetic, computed as the original
//     does).
//   5 u = mean_b vbar_free (a reduction).
//   6 metric update: u_r = u·(rotor matrix) (host kernel builds it, a matmul applies it);
//     g = clip(g + ((η Δ) u_r) u_r / (Σ u_r² + 1e-8), 0.01, 100): square, sum (+1e-8 post-op),
//     η Δ, two muls, a division and an add with a clip post-op.
//   7 rotor update (RotorUpdate): 4 host reads per pair, or one host kernel with
//     vectorized_rotor (oneDNN has no atan2 or fmod).
//   8 memory update: the last min(C, B) rows of the free window's q and q_state copied into the
//     ring at the input pointer (at most two row ranges, as it wraps: reorders); the new pointer
//     is host arithmetic on the input pointer (a host integer in the original too).

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "optimized/trainer2/trainer2_engine-onednn.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
namespace t2 = pb::suites::trainer2;
namespace ref = pb::reference::trainer2;
using dnnl::algorithm;
using dnnl::memory;
using ob::dense;
using ob::PostOps;

class TrainStepOnednn final : public pb::Variant {
 public:
  explicit TrainStepOnednn(const pb::VariantContext& context)
      : device_(context.device), plan_(context), vectorized_rotor_(context.has(t2::kVectorizedRotor)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    dims_ = t2::window_dims_of(inputs);
    field_shape_ = pb::require(inputs, "F0").shape;
    upload_inputs(inputs);
    allocate_state();
    field_ = std::make_unique<t2o::Field>(dims_);
    const t2o::WindowInputs free_in{O_, bank_coord_, bank_state_, g_, theta_, std::nullopt};
    free_ = std::make_unique<t2o::WindowProgram>(dims_, plan_, free_in, *field_);
    t2o::WindowInputs nudged_in = free_in;
    nudged_in.nudge = nudge_;
    nudged_ = std::make_unique<t2o::WindowProgram>(dims_, plan_, nudged_in, *field_);
    build_start_and_snapshot();
    build_between_windows();
    build_metric_update();
    rotor_.emplace(vectorized_rotor_, u_, lior_diff_, theta_);
    build_memory_update();
  }

  void poison_outputs() override {
    free_->poison();
    nudged_->poison();
    for (const memory& array :
         {free_F_, free_P_, nudged_F_, nudged_P_, g_, theta_, bank_coord_, bank_state_})
      ob::fill_floats(array, t2o::kNaN);
    bank_pointer_ = -1;
  }

  void run() override {
    start_();  // state = inputs; snapshot
    free_->run();
    after_free_();  // free F, P out; nudge
    restore_();
    nudged_->run();
    after_nudged_();  // nudged F, P out; Δ; u; metric update
    (*rotor_)();
    memory_update_();
    bank_pointer_ = next_pointer_;
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2o::add_window_outputs(out, "free_", dims_, *free_, free_F_, free_P_, field_shape_);
    t2o::add_window_outputs(out, "nudged_", dims_, *nudged_, nudged_F_, nudged_P_, field_shape_);
    out["g"] = ob::download(g_, {t2o::kN});
    out["theta"] = ob::download(theta_, {ref::kRotorSlots});
    out["bank_coord"] = ob::download(bank_coord_, {dims_.bank_rows, t2o::kN});
    out["bank_state"] = ob::download(bank_state_, {dims_.bank_rows, dims_.state_dim});
    out["bank_pointer"] =
        pb::HostArray::scalar(static_cast<double>(bank_pointer_), pb::ElementType::Int64);
    return out;
  }

 private:
  void upload_inputs(const pb::ArrayMap& inputs) {
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim;
    O_ = ob::upload(pb::require(inputs, "O"), {B, dims_.tokens, d});
    target_ = ob::upload(pb::require(inputs, "target"), {B, t2o::kN});
    F0_ = ob::upload(pb::require(inputs, "F0"), {dims_.field_size()});
    bank_coord_input_ = ob::upload(pb::require(inputs, "bank_coord"), {C, t2o::kN});
    bank_state_input_ = ob::upload(pb::require(inputs, "bank_state"), {C, d});
    g_input_ = ob::upload(pb::require(inputs, "g"), {1, t2o::kN});
    theta_input_ = ob::upload(pb::require(inputs, "theta"), {ref::kRotorSlots});
    pointer_input_ = static_cast<int64_t>(pb::require(inputs, "bank_pointer").values.at(0));
  }

  void allocate_state() {
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim, N = dims_.field_size();
    bank_coord_ = ob::allocate(dense({C, t2o::kN}));
    bank_state_ = ob::allocate(dense({C, d}));
    g_ = ob::allocate(dense({1, t2o::kN}));
    theta_ = ob::allocate(dense({ref::kRotorSlots}));
    bank_coord_saved_ = ob::allocate(dense({C, t2o::kN}));
    bank_state_saved_ = ob::allocate(dense({C, d}));
    theta_saved_ = ob::allocate(dense({ref::kRotorSlots}));
    nudge_ = ob::allocate(dense({B, t2o::kN}));
    for (memory* array : {&free_F_, &free_P_, &nudged_F_, &nudged_P_})
      *array = ob::allocate(dense({N}));
    lior_diff_ = ob::allocate(dense({1, 1}));
    u_ = ob::allocate(dense({1, t2o::kN}));
  }

  // Step 1: the state from the inputs, then its snapshot (the restore copies it back).
  void build_start_and_snapshot() {
    F_saved_ = ob::allocate(field_->image_desc());
    P_saved_ = ob::allocate(field_->image_desc());
    start_.append(field_->reset(field_->user_view(F0_)));
    start_.add(ob::copy(bank_coord_input_, bank_coord_));
    start_.add(ob::copy(bank_state_input_, bank_state_));
    start_.add(ob::copy(g_input_, g_));
    start_.add(ob::copy(theta_input_, theta_));
    start_.append(field_->copy_to(F_saved_, P_saved_));
    restore_.append(field_->copy_from(F_saved_, P_saved_));
    const std::pair<memory, memory> snapshot[] = {
        {bank_coord_, bank_coord_saved_}, {bank_state_, bank_state_saved_}, {theta_, theta_saved_}};
    for (const auto& [live, saved] : snapshot) start_.add(ob::copy(live, saved));
    for (const auto& [live, saved] : snapshot) restore_.add(ob::copy(saved, live));
  }

  // Steps 2, 4, 5: the nudge after the free window; Δ and u after the nudged one.
  void build_between_windows() {
    after_free_.append(field_->copy_to(field_->user_view(free_F_), field_->user_view(free_P_)));
    after_free_.add(ob::binary(
        algorithm::binary_sub, target_, free_->q(), nudge_,
        PostOps().eltwise(algorithm::eltwise_linear, static_cast<float>(ref::kNudgeScale))));
    after_nudged_.append(
        field_->copy_to(field_->user_view(nudged_F_), field_->user_view(nudged_P_)));
    after_nudged_.add(
        ob::binary(algorithm::binary_sub, nudged_->lior(), free_->lior(), lior_diff_));
    after_nudged_.add(ob::reduce(algorithm::reduction_mean, free_->vbar(), u_));
  }

  // Step 6 (trainer2_engine-onednn.hpp, metric_update).
  void build_metric_update() { after_nudged_.append(t2o::metric_update(u_, theta_, lior_diff_, g_)); }

  // Step 8: rows B−count .. B−1 of the free window's batch go to ring rows pointer,
  // pointer+1, ... (mod C): at most two contiguous ranges.
  void build_memory_update() {
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim, n = t2o::kN;
    const int64_t count = std::min(C, B), pointer = pointer_input_;
    const int64_t first = std::min(count, C - pointer);
    const auto copy_rows = [&](int64_t source, int64_t row, int64_t rows) {
      memory_update_.add(ob::copy(free_->q_rows(source, rows),
                                   ob::view(bank_coord_, dense({rows, n}), row * n)));
      memory_update_.add(ob::copy(free_->q_state_rows(source, rows),
                                   ob::view(bank_state_, dense({rows, d}), row * d)));
    };
    copy_rows(B - count, pointer, first);
    if (count > first) copy_rows(B - count + first, 0, count - first);
    next_pointer_ = (pointer + count) % C;
  }

  std::string device_;
  t2o::WindowPlan plan_;
  bool vectorized_rotor_;
  ref::WindowDims dims_{};
  std::vector<int64_t> field_shape_;
  memory O_, target_, F0_, bank_coord_input_, bank_state_input_, g_input_, theta_input_;
  int64_t pointer_input_ = 0, next_pointer_ = 0, bank_pointer_ = -1;
  memory bank_coord_, bank_state_, g_, theta_;  // the trainer's state
  memory F_saved_, P_saved_, bank_coord_saved_, bank_state_saved_, theta_saved_;  // its snapshot
  memory nudge_, lior_diff_, u_;
  memory free_F_, free_P_, nudged_F_, nudged_P_;  // the windows' F and P in the input layout
  std::unique_ptr<t2o::Field> field_;
  std::unique_ptr<t2o::WindowProgram> free_, nudged_;
  std::optional<t2o::RotorUpdate> rotor_;
  ob::Program start_, after_free_, restore_, after_nudged_, memory_update_;
};

const pb::VariantRegistration registration{
    "trainer2/train_step",
    "onednn",
    {t2::kBaseline, t2::kBatchedMetrics, t2::kVectorizedRotor, t2::kFusedLiorSpd, t2::kJitFusion,
     t2::kInPlace, t2::kHoistedRetrievalBatch, t2::kLastStepAct, t2::kDeferredMetrics},
    [](const pb::VariantContext& context) { return std::make_unique<TrainStepOnednn>(context); }};

}  // namespace
