// trainer2/train_step on LibTorch, devices cpu and cuda: the two-phase contrastive step.
// Math: reference/trainer2/trainer2.hpp (train_step). Phase catalog: suites/trainer2/phases.hpp.
// The window engine and its ladder: trainer2-torch.hpp (all phases 0-10).
//
//   snapshot; free window; nudge = 0.1 (target − q); restore; nudged window;
//   Δ = lior_nudged − lior_free; u = mean_b v̄_free; metric update; rotor update; memory ring update
//
// Besides the windows' phases: phase 0-1 run the rotor update as the original (4 host reads per
// learnt pair, 24 per step), phase 2 on vectorized (no host reads). Before phase 6 the snapshot
// clones the field and momentum and the restore rebinds to the clones; from phase 6 every window
// has its own preallocated field, and the restore copies the snapshot, which is the initial state
// held in the inputs. The manual update keeps a few [8]-sized temporaries at every phase. Every
// run starts from the inputs. Phase 5's cleanup and phase 7's CUDA graph (the whole step: both
// windows and the update) as in window-torch.cpp; not compiled or run on the development machine.

#include <algorithm>
#include <limits>

#include "optimized/trainer2/trainer2-torch.hpp"
#include "suites/trainer2/window_io.hpp"

namespace {

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;
namespace ref = pb::reference::trainer2;

class TrainStepTorch final : public pb::Variant {
 public:
  explicit TrainStepTorch(const pb::VariantContext& ctx) : phase_(ctx.phase), device_(ctx.device) {}

  std::optional<pb::CannotRun> support() const override { return t2tb::phase_cannot_run(phase_, device_); }

  void setup(const pb::ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    const torch::Device device = tb::device_for(device_);
    inputs_ = t2tb::upload_window_inputs(in, device);
    target_ = tb::to_tensor(pb::require(in, "target"), device);
    setup_memory_update(static_cast<int64_t>(pb::require(in, "bank_pointer").values.at(0)), device);

    const bool graph = t2tb::replays_graph(phase_, device_);
    static_inputs_ = graph ? t2tb::clone_inputs(inputs_) : inputs_;
    static_target_ = graph ? target_.clone() : target_;
    engine_ = std::make_unique<t2tb::WindowEngine>(phase_, dims_, device);
    engine_->setup(static_inputs_);
    free_ = engine_->make_outputs();
    nudged_ = engine_->make_outputs();
    free_field_ = engine_->make_field();
    nudged_field_ = engine_->make_field();
    nudge_ = torch::empty_like(target_);
    g_ = torch::empty_like(inputs_.g);
    theta_ = torch::empty_like(inputs_.theta);
    bank_coord_ = torch::empty_like(inputs_.bank_coord);
    bank_state_ = torch::empty_like(inputs_.bank_state);
    cleanup_ = tb::AllocatorCleanup(device_, phase_ >= t2tb::kAdaptiveCleanup);
    graphed_.prepare(graph, {engine_.get()}, [this] { step(); });
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
    if (graphed_.replaying()) {
      t2tb::copy_inputs(static_inputs_, inputs_);
      static_target_.copy_(target_);
      graphed_.replay();
      engine_->read_logged_metrics(free_);
      engine_->read_logged_metrics(nudged_);
    } else {
      step();
    }
    pointer_written_ = true;
    cleanup_.after_window();  // two windows per step
    cleanup_.after_window();
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    t2tb::add_window_outputs(out, "free_", dims_, free_, free_field_);
    t2tb::add_window_outputs(out, "nudged_", dims_, nudged_, nudged_field_);
    ref::TrainState<float> state;
    state.g = host_floats(g_);
    state.theta = host_floats(theta_);
    state.bank_coord = host_floats(bank_coord_);
    state.bank_state = host_floats(bank_state_);
    state.bank_pointer = next_pointer_;
    t2::add_train_state_outputs(out, dims_, state, pb::ElementType::Float32);
    if (!pointer_written_) out["bank_pointer"].values.at(0) = std::numeric_limits<double>::quiet_NaN();
    return out;
  }

 private:
  static std::vector<float> host_floats(const torch::Tensor& tensor) {
    const pb::HostArray host = tb::to_host_array(tensor);
    return std::vector<float>(host.values.begin(), host.values.end());
  }

  /// The ring rows the step writes: the last min(C, B) rows of (q, q_state) at the pointer. The
  /// pointer is an input, so the rows are known before the step; they are indices on the device.
  void setup_memory_update(int64_t pointer, const torch::Device& device) {
    const int64_t B = dims_.batch, C = dims_.bank_rows;
    written_ = std::min(C, B);
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < written_; ++r) rows.push_back((pointer + r) % C);
    rows_ = torch::tensor(rows, torch::kInt64).to(device);
    next_pointer_ = (pointer + written_) % C;
  }

  void step() {
    const t2tb::FieldState snapshot = snapshot_and_free_window();
    if (phase_ < t2tb::kInplace) {
      nudge_ = ref::kNudgeScale * (static_target_ - free_.q);                              // 2
      nudged_field_ = snapshot;                                                           // 3
    } else {
      at::sub_out(nudge_, static_target_, free_.q).mul_(ref::kNudgeScale);
      engine_->reset_field(nudged_field_);  // the snapshot is the initial state
    }
    engine_->run(nudged_field_, nudge_, nudged_);
    manual_update();                                                                      // 4-8
  }

  /// Steps 1: the snapshot (clones before phase 6), then the free window. Returns the snapshot.
  t2tb::FieldState snapshot_and_free_window() {
    engine_->reset_field(free_field_);
    t2tb::FieldState snapshot;
    if (phase_ < t2tb::kInplace) {
      snapshot.F = free_field_.F.clone();
      snapshot.P = free_field_.P.clone();
      snapshot.F_eq = free_field_.F_eq;  // never written: shared
    }
    engine_->run(free_field_, torch::Tensor(), free_);
    return snapshot;
  }

  void manual_update() {
    const t2tb::RotorIndex& index = engine_->rotor_index();
    const torch::Tensor lior_diff = nudged_.totals[0] - free_.totals[0];                 // 4
    const torch::Tensor u = free_.vbar.mean(0);                                           // 5
    const torch::Tensor g = t2tb::metric_update(u, static_inputs_.theta, lior_diff,      // 6
                                                static_inputs_.g, index);
    const torch::Tensor theta =                                                           // 7
        phase_ < t2tb::kVectorizedRotor
            ? t2tb::rotor_update_per_pair(u, lior_diff, static_inputs_.theta, index)
            : t2tb::rotor_update_vectorized(u, lior_diff, static_inputs_.theta, index);
    const int64_t first = dims_.batch - written_;                                         // 8
    if (phase_ < t2tb::kInplace) {
      g_ = g;
      theta_ = theta;
      bank_coord_ = static_inputs_.bank_coord.index_copy(0, rows_, free_.q.narrow(0, first, written_));
      bank_state_ = static_inputs_.bank_state.index_copy(0, rows_, free_.q_state.narrow(0, first, written_));
      return;
    }
    g_.copy_(g);
    theta_.copy_(theta);
    bank_coord_.copy_(static_inputs_.bank_coord).index_copy_(0, rows_, free_.q.narrow(0, first, written_));
    bank_state_.copy_(static_inputs_.bank_state).index_copy_(0, rows_, free_.q_state.narrow(0, first, written_));
  }

  int phase_;
  std::string device_;
  ref::WindowDims dims_{};
  t2tb::WindowInputs inputs_, static_inputs_;  // the same tensors unless a CUDA graph reads them
  torch::Tensor target_, static_target_;       // [B,n]
  std::unique_ptr<t2tb::WindowEngine> engine_;
  t2tb::WindowOutputs free_, nudged_;
  t2tb::FieldState free_field_, nudged_field_;
  torch::Tensor nudge_;                                // [B,n]
  torch::Tensor g_, theta_, bank_coord_, bank_state_;  // the updated state
  torch::Tensor rows_;                                 // ring rows written, [min(C,B)] int64
  int64_t written_ = 0, next_pointer_ = 0;
  bool pointer_written_ = false;
  tb::AllocatorCleanup cleanup_;
  t2tb::GraphedRun graphed_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& ctx) { return std::make_unique<TrainStepTorch>(ctx); }

const pb::VariantRegistration registration{"trainer2/train_step", "torch", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, make};

}  // namespace
