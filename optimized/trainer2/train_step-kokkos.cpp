// trainer2/train_step on Kokkos (default execution space): the two-phase contrastive step from the
// inputs every run. Math: reference/trainer2/trainer2.hpp train_step; the windows and the rotor
// update as the plan asks: trainer2_engine_window-kokkos.hpp (WindowRunner, one per window) and
// trainer2_engine-kokkos.hpp (RotorUpdate).
//
// A run: reset the state to the inputs (field F0, P = 0, bank, g, θ), snapshot it (field, bank,
// θ), free window, copy out the free field, nudge = 0.1 (target − q), restore the snapshot,
// nudged window, then Δ = lior_nudged − lior_free and the manual update of g, the rotor update of
// θ and the memory ring write at bank_pointer. Δ is 0 in exact arithmetic (the nudge reaches
// only the retrieval query); it is computed anyway, as in the original. With inplace the
// snapshot buffers are allocated in setup too. With temporal_blocking the blocked windows start
// from the inputs where they lie: both read F0 (the state every run starts from, so the
// snapshot and its restore are the inputs themselves: no copies) and write their final field
// into their own buffers (no copy of the free field).

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "optimized/trainer2/trainer2_engine_window-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

const std::string kNudgeLabel = "trainer2/train_step/nudge";
const std::string kMemoryUpdateLabel = "trainer2/train_step/memory_update";

// ---- kernels -----------------------------------------------------------------------------------------

/// nudge = 0.1 (target − q).
void nudge_toward(const k2::ConstMat& target, const k2::ConstMat& q, const k2::Mat& nudge) {
  Kokkos::parallel_for(
      kNudgeLabel, RangePolicy(0, nudge.extent(0)), KOKKOS_LAMBDA(int64_t b) {
        for (int i = 0; i < k2::kDim; ++i) nudge(b, i) = k2::kNudgeScale * (target(b, i) - q(b, i));
      });
}

/// The last min(C, B) rows of (q, q_state) into the bank ring at `pointer`, as ref::memory_update.
void memory_write(const k2::ConstMat& q, const k2::ConstMat& q_state, const k2::Mat& bank_coord,
                  const k2::Mat& bank_state, int64_t pointer) {
  const int64_t B = q.extent(0), C = bank_coord.extent(0), count = std::min(C, B);
  Kokkos::parallel_for(
      kMemoryUpdateLabel, k2::TeamPolicy(count, Kokkos::AUTO), KOKKOS_LAMBDA(const k2::Member& team) {
        const int64_t r = team.league_rank(), source = B - count + r, row = (pointer + r) % C;
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, k2::kDim),
                             [&](int64_t i) { bank_coord(row, i) = q(source, i); });
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, q_state.extent(1)),
                             [&](int64_t j) { bank_state(row, j) = q_state(source, j); });
      });
}

// ---- the variant ---------------------------------------------------------------------------------------

/// The state a training step snapshots and restores (the original saves the field, the memory
/// and the rotor angles).
struct Snapshot {
  k2::Vec F, P, theta;
  k2::Mat bank_coord, bank_state;

  /// Every View of `from` copied into this one's (asynchronous device copies: no host wait).
  void copy_from(const Snapshot& from) const {
    const ExecSpace exec;
    Kokkos::deep_copy(exec, F, from.F);
    Kokkos::deep_copy(exec, P, from.P);
    Kokkos::deep_copy(exec, theta, from.theta);
    Kokkos::deep_copy(exec, bank_coord, from.bank_coord);
    Kokkos::deep_copy(exec, bank_state, from.bank_state);
  }
};

class TrainStepKokkos final : public Variant {
 public:
  explicit TrainStepKokkos(const VariantContext& context)
      : plan_(context), vectorized_rotor_(context.has(t2::kVectorizedRotor)) {}

  std::optional<CannotRun> support() const override { return plan_.support(); }

  void setup(const ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim, n = k2::kDim;
    const int64_t N = dims_.field_size();
    O_ = to_device<k2::Cube>("O", require(in, "O"), B, dims_.tokens, d);
    target_ = to_device<k2::Mat>("target", require(in, "target"), B, n);
    F0_ = to_device<k2::Vec>("F0", require(in, "F0"), N);
    bank_coord_in_ = to_device<k2::Mat>("bank_coord_in", require(in, "bank_coord"), C, n);
    bank_state_in_ = to_device<k2::Mat>("bank_state_in", require(in, "bank_state"), C, d);
    g_in_ = to_device<k2::Vec>("g_in", require(in, "g"), n);
    theta_in_ = to_device<k2::Vec>("theta_in", require(in, "theta"), k2::kSlots);
    pointer_in_ = static_cast<int64_t>(require(in, "bank_pointer").values.at(0));

    bank_coord_ = k2::Mat("bank_coord", C, n);
    bank_state_ = k2::Mat("bank_state", C, d);
    g_ = k2::Vec("g", n);
    theta_ = k2::Vec("theta", k2::kSlots);
    nudge_ = k2::Mat("nudge", B, n);
    lior_diff_ = k2::Cell("lior_diff");
    u_ = k2::Vec("u", n);
    free_field_ = {k2::Vec("free_F", N), k2::Vec("free_P", N), F0_};
    if (plan_.temporal_blocking) {
      nudged_field_ = {k2::Vec("nudged_F", N), k2::Vec("nudged_P", N), F0_};
    } else {
      nudged_field_ = {k2::Vec("F", N), k2::Vec("P", N), k2::Vec("F_eq", N)};  // the trainer's field, advanced in place
      if (plan_.preallocated) kept_snapshot_ = allocate_snapshot();
    }
    rotor_update_ = k2::RotorUpdate(vectorized_rotor_);
    free_.allocate(dims_);
    nudged_.allocate(dims_);
    free_runner_ = std::make_unique<k2::WindowRunner>(dims_, plan_);
    nudged_runner_ = std::make_unique<k2::WindowRunner>(dims_, plan_);
  }

  void poison_outputs() override {
    free_.poison();
    nudged_.poison();
    for (const k2::Vec& view : {free_field_.F, free_field_.P, nudged_field_.F, nudged_field_.P, g_, theta_})
      fill_nan(view);
    fill_nan(bank_coord_);
    fill_nan(bank_state_);
    pointer_ = -1;  // never a valid ring position
    Kokkos::fence();
  }

  void run() override {
    reset_state();
    const k2::WindowInputsDevice in{O_, bank_coord_, bank_state_, g_, theta_};
    if (plan_.temporal_blocking) {
      free_runner_->run_from_start(in, k2::ConstMat(), F0_, free_field_, free_);
      nudge_toward(target_, free_.q, nudge_);
      nudged_runner_->run_from_start(in, nudge_, F0_, nudged_field_, nudged_);
    } else {
      const Snapshot snapshot = take_snapshot();
      const k2::FieldState& field = nudged_field_;
      free_runner_->run(in, k2::ConstMat(), field, free_);
      const ExecSpace exec;
      Kokkos::deep_copy(exec, free_field_.F, field.F);
      Kokkos::deep_copy(exec, free_field_.P, field.P);
      nudge_toward(target_, free_.q, nudge_);
      restore(snapshot);
      nudged_runner_->run(in, nudge_, field, nudged_);
    }
    k2::metric_update(free_.scalars, nudged_.scalars, free_.vbar, theta_, g_, lior_diff_, u_);
    rotor_update_(u_, lior_diff_, theta_);
    memory_write(free_.q, free_.q_state, bank_coord_, bank_state_, pointer_in_);
    pointer_ = (pointer_in_ + std::min(dims_.bank_rows, dims_.batch)) % dims_.bank_rows;
  }

  ArrayMap outputs() override {
    ArrayMap out;
    free_.add_outputs(out, "free_", dims_, free_field_);
    nudged_.add_outputs(out, "nudged_", dims_, nudged_field_);
    ref::TrainState<float> state;
    state.g = to_host_vector(g_);
    state.theta = to_host_vector(theta_);
    state.bank_coord = to_host_vector(bank_coord_);
    state.bank_state = to_host_vector(bank_state_);
    state.bank_pointer = pointer_;
    t2::add_train_state_outputs(out, dims_, state, ElementType::Float32);
    return out;
  }

 private:
  // Every run starts from the inputs (asynchronous device copies: no host wait).
  void reset_state() {
    const ExecSpace exec;
    Kokkos::deep_copy(exec, bank_coord_, bank_coord_in_);
    Kokkos::deep_copy(exec, bank_state_, bank_state_in_);
    Kokkos::deep_copy(exec, g_, g_in_);
    Kokkos::deep_copy(exec, theta_, theta_in_);
    if (plan_.temporal_blocking) return;  // the blocked windows read F0 where it lies
    nudged_field_.start_from(F0_);
  }

  Snapshot allocate_snapshot() const {
    const int64_t N = dims_.field_size();
    return {uninitialized<k2::Vec>("snap_F", N), uninitialized<k2::Vec>("snap_P", N),
            uninitialized<k2::Vec>("snap_theta", k2::kSlots),
            uninitialized<k2::Mat>("snap_bank_coord", dims_.bank_rows, k2::kDim),
            uninitialized<k2::Mat>("snap_bank_state", dims_.bank_rows, dims_.state_dim)};
  }

  // Clones of the field, the memory and θ (fresh without inplace, as .clone() allocates).
  Snapshot take_snapshot() const {
    const Snapshot snapshot = plan_.preallocated ? kept_snapshot_ : allocate_snapshot();
    snapshot.copy_from(trainer_state());
    return snapshot;
  }

  void restore(const Snapshot& snapshot) const { trainer_state().copy_from(snapshot); }

  // The live state the snapshot saves: the trainer's field, θ and the memory.
  Snapshot trainer_state() const { return {nudged_field_.F, nudged_field_.P, theta_, bank_coord_, bank_state_}; }

  k2::WindowPlan plan_;
  bool vectorized_rotor_;
  ref::WindowDims dims_{};
  // inputs
  k2::Cube O_;
  k2::Mat target_, bank_coord_in_, bank_state_in_;
  k2::Vec F0_, g_in_, theta_in_;
  int64_t pointer_in_ = 0;
  // the trainer's state (outputs g, theta, bank_*, bank_pointer)
  k2::Mat bank_coord_, bank_state_;
  k2::Vec g_, theta_;
  int64_t pointer_ = 0;
  k2::FieldState free_field_, nudged_field_;  // without temporal_blocking nudged_field_ is the trainer's field
  Snapshot kept_snapshot_;
  // the manual update
  k2::Mat nudge_;
  k2::Cell lior_diff_;
  k2::Vec u_;
  k2::RotorUpdate rotor_update_;
  // the windows
  k2::WindowResultDevice free_, nudged_;
  std::unique_ptr<k2::WindowRunner> free_runner_, nudged_runner_;
};

const VariantRegistration registration{
    "trainer2/train_step", "kokkos",
    {t2::kBaseline, t2::kBatchedMetrics, t2::kVectorizedRotor, t2::kFusedLiorSpd, t2::kJitFusion, t2::kInPlace,
     t2::kHoistedRetrievalBatch, t2::kLastStepAct, t2::kTemporalBlocking, t2::kVectorizedWindow},
    [](const VariantContext& context) { return std::make_unique<TrainStepKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
