// trainer2/train_step on LibTorch, devices cpu and cuda: the two-phase contrastive step.
// Math: reference/trainer2/trainer2.hpp (train_step). The window engine, its driver (allocator
// cleanup; under graph_capture the whole step, both windows and the update, is one CUDA graph)
// and what each optimization changes: trainer2_engine-torch.hpp.
//
//   snapshot; free window; nudge = 0.1 (target − q); restore; nudged window;
//   Δ = lior_nudged − lior_free; u = mean_b v̄_free; metric update; rotor update; memory ring update
//
// Without inplace the snapshot clones the field and momentum and the restore rebinds to the
// clones; with it every window has its own preallocated field, and the restore copies the
// snapshot, which is the initial state held in the inputs. The manual update keeps a few
// [8]-sized temporaries whatever the plan. Every run starts from the inputs.

#include <algorithm>
#include <limits>

#include "optimized/trainer2/trainer2_engine-torch.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;
namespace ref = pb::reference::trainer2;

class TrainStepTorch final : public pb::Variant {
 public:
  explicit TrainStepTorch(const pb::VariantContext& context)
      : driver_(context), vectorized_rotor_(context.has(t2::kVectorizedRotor)) {}

  std::optional<pb::CannotRun> support() const override { return driver_.support(); }

  void setup(const pb::ArrayMap& in) override {
    driver_.setup(in);
    const torch::Device device = driver_.device();
    target_ = driver_.graph_input(tb::to_tensor(pb::require(in, "target"), device));
    setup_memory_update(static_cast<int64_t>(pb::require(in, "bank_pointer").values.at(0)), device);
    t2tb::WindowEngine& engine = driver_.engine();
    free_ = engine.make_outputs();
    nudged_ = engine.make_outputs();
    free_field_ = engine.make_field();
    nudged_field_ = engine.make_field();
    nudge_ = torch::empty_like(target_);
    const t2tb::WindowInputs& inputs = driver_.inputs();
    g_ = torch::empty_like(inputs.g);
    theta_ = torch::empty_like(inputs.theta);
    bank_coord_ = torch::empty_like(inputs.bank_coord);
    bank_state_ = torch::empty_like(inputs.bank_state);
    driver_.capture([this] { step(); });
  }

  void poison_outputs() override {
    t2tb::poison(free_, free_field_);
    t2tb::poison(nudged_, nudged_field_);
    for (torch::Tensor* t : {&g_, &theta_, &bank_coord_, &bank_state_}) {
      t->fill_(std::numeric_limits<float>::quiet_NaN());
    }
    pointer_written_ = false;
  }

  void run() override {
    driver_.run([this] { step(); }, {&free_, &nudged_});
    pointer_written_ = true;
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2tb::add_window_outputs(out, "free_", driver_.dims(), free_, free_field_);
    t2tb::add_window_outputs(out, "nudged_", driver_.dims(), nudged_, nudged_field_);
    ref::TrainState<float> state;
    state.g = host_floats(g_);
    state.theta = host_floats(theta_);
    state.bank_coord = host_floats(bank_coord_);
    state.bank_state = host_floats(bank_state_);
    state.bank_pointer = next_pointer_;
    t2::add_train_state_outputs(out, driver_.dims(), state, pb::ElementType::Float32);
    if (!pointer_written_) out["bank_pointer"].values.at(0) = std::numeric_limits<double>::quiet_NaN();
    return out;
  }

 private:
  static std::vector<float> host_floats(const torch::Tensor& tensor) {
    const pb::HostArray host = tb::to_host_array(tensor);
    return std::vector<float>(host.values.begin(), host.values.end());
  }

  bool in_place() const { return driver_.optimizations().in_place; }

  /// The ring rows the step writes: the last min(C, B) rows of (q, q_state) at the pointer. The
  /// pointer is an input, so the rows are known before the step; they are indices on the device.
  void setup_memory_update(int64_t pointer, const torch::Device& device) {
    const int64_t B = driver_.dims().batch, C = driver_.dims().bank_rows;
    written_ = std::min(C, B);
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < written_; ++r) rows.push_back((pointer + r) % C);
    rows_ = torch::tensor(rows, torch::kInt64).to(device);
    next_pointer_ = (pointer + written_) % C;
  }

  void step() {
    t2tb::WindowEngine& engine = driver_.engine();
    const t2tb::FieldState snapshot = snapshot_and_free_window();
    if (!in_place()) {
      nudge_ = ref::kNudgeScale * (target_ - free_.q);                                    // 2
      nudged_field_ = snapshot;                                                           // 3
    } else {
      at::sub_out(nudge_, target_, free_.q).mul_(ref::kNudgeScale);
      engine.reset_field(nudged_field_);  // the snapshot is the initial state
    }
    engine.run(nudged_field_, nudge_, nudged_);
    manual_update();                                                                      // 4-8
  }

  /// Step 1: the snapshot (clones without inplace), then the free window. Returns the snapshot.
  t2tb::FieldState snapshot_and_free_window() {
    t2tb::WindowEngine& engine = driver_.engine();
    engine.reset_field(free_field_);
    t2tb::FieldState snapshot;
    if (!in_place()) {
      snapshot.F = free_field_.F.clone();
      snapshot.P = free_field_.P.clone();
      snapshot.F_eq = free_field_.F_eq;  // never written: shared
    }
    engine.run(free_field_, torch::Tensor(), free_);
    return snapshot;
  }

  void manual_update() {
    const t2tb::WindowInputs& in = driver_.inputs();
    const t2tb::RotorIndex& index = driver_.engine().rotor_index();
    const torch::Tensor lior_diff = nudged_.totals[0] - free_.totals[0];                          // 4
    const torch::Tensor u = free_.vbar.mean(0);                                                    // 5
    const torch::Tensor g = t2tb::metric_update(u, in.theta, lior_diff, in.g, index);             // 6
    const torch::Tensor theta = t2tb::rotor_update(u, lior_diff, in.theta, index, vectorized_rotor_);  // 7
    const int64_t first = driver_.dims().batch - written_;                                        // 8
    if (!in_place()) {
      g_ = g;
      theta_ = theta;
      bank_coord_ = in.bank_coord.index_copy(0, rows_, free_.q.narrow(0, first, written_));
      bank_state_ = in.bank_state.index_copy(0, rows_, free_.q_state.narrow(0, first, written_));
      return;
    }
    g_.copy_(g);
    theta_.copy_(theta);
    bank_coord_.copy_(in.bank_coord).index_copy_(0, rows_, free_.q.narrow(0, first, written_));
    bank_state_.copy_(in.bank_state).index_copy_(0, rows_, free_.q_state.narrow(0, first, written_));
  }

  t2tb::WindowDriver driver_;
  bool vectorized_rotor_;
  torch::Tensor target_;  // [B,n]; under graph_capture the static copy the graph reads
  t2tb::WindowOutputs free_, nudged_;
  t2tb::FieldState free_field_, nudged_field_;
  torch::Tensor nudge_;                                // [B,n]
  torch::Tensor g_, theta_, bank_coord_, bank_state_;  // the updated state
  torch::Tensor rows_;                                 // ring rows written, [min(C,B)] int64
  int64_t written_ = 0, next_pointer_ = 0;
  bool pointer_written_ = false;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& context) {
  return std::make_unique<TrainStepTorch>(context);
}

const pb::VariantRegistration registration{
    "trainer2/train_step", "torch",
    t2tb::registered_phases({t2::kBaseline, t2::kBatchedMetrics, t2::kVectorizedRotor, t2::kFusedLiorSpd,
                             t2::kJitFusion, t2::kAdaptiveCleanup, t2::kInPlace, t2::kGraphCapture,
                             t2::kHoistedRetrievalBatch, t2::kLastStepAct, t2::kDeferredMetrics}),
    make};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
