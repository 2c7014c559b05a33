// trainer2/train_step on Kokkos (default execution space): the two-phase contrastive step from the
// inputs every run. Math: reference/trainer2/trainer2.hpp train_step; phase catalog:
// suites/trainer2/phases.hpp; the windows: trainer2_window-kokkos.hpp (WindowRunner, whose
// phases are window-kokkos.cpp's ladder).
//
// A run: reset the state to the inputs (field F0, P = 0, bank, g, θ), snapshot it (field, bank,
// θ), free window, copy out the free field, nudge = 0.1 (target − q), restore the snapshot,
// nudged window, then Δ = lior_nudged − lior_free and the manual update of g, the rotor update of
// θ and the memory ring write at bank_pointer. Δ is 0 in exact arithmetic (the nudge reaches
// only the retrieval query); it is computed anyway, as in the original.
//
// The ladder is the window's (each window with its own WindowRunner), plus:
//   0, 1  the rotor update as the original loop: for each of the 6 learnt pairs the host reads
//         i, j, u_i, u_j one at a time (24 host syncs per step) and launches a one-element update.
//   2 vectorized_rotor  one kernel over the angle slots, no host reads.
//   6 inplace           the snapshot buffers are allocated in setup too (nothing in run()).
//  11 temporal_blocking the fused windows start from the inputs where they lie: both windows
//                       read F0 (the state every run starts from, so the snapshot and its restore
//                       are the inputs themselves: no copies) and write their final field into
//                       their own buffers (no copy of the free field). Host syncs per step: 2
//                       (one progress log per window).

#include <algorithm>
#include <limits>
#include <memory>

#include "optimized/trainer2/trainer2_window-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

const std::string kNudgeLabel = "trainer2/train_step/nudge";
const std::string kMetricUpdateLabel = "trainer2/train_step/metric_update";
const std::string kMemoryUpdateLabel = "trainer2/train_step/memory_update";

// ---- kernels -----------------------------------------------------------------------------------------

/// nudge = 0.1 (target − q).
void nudge_toward(const k2::ConstMat& target, const k2::ConstMat& q, const k2::Mat& nudge) {
  Kokkos::parallel_for(
      kNudgeLabel, RangePolicy(0, nudge.extent(0)), KOKKOS_LAMBDA(int64_t b) {
        for (int i = 0; i < k2::kDim; ++i) nudge(b, i) = k2::kNudgeScale * (target(b, i) - q(b, i));
      });
}

/// Δ = lior_nudged − lior_free (scalars(0) of each window); u = mean_b vbar_free; then
/// g ← clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100) with u_r = rotor_apply(u, θ) (θ before
/// its own update), as ref::metric_update. One thread: 8 values.
void metric_update(const k2::ConstVec& free_scalars, const k2::ConstVec& nudged_scalars,
                   const k2::ConstMat& free_vbar, const k2::ConstVec& theta, const k2::Vec& g,
                   const k2::Cell& lior_diff, const k2::Vec& u) {
  Kokkos::parallel_for(
      kMetricUpdateLabel, RangePolicy(0, 1), KOKKOS_LAMBDA(int64_t) {
        const float diff = nudged_scalars(0) - free_scalars(0);
        lior_diff() = diff;
        const int64_t B = free_vbar.extent(0);
        float rotated[k2::kDim];
        for (int i = 0; i < k2::kDim; ++i) {
          float sum = 0;
          for (int64_t b = 0; b < B; ++b) sum += free_vbar(b, i);
          u(i) = sum / static_cast<float>(B);
          rotated[i] = u(i);
        }
        k2::rotor_apply(rotated, theta);
        float norm_sq = 0;
        for (int i = 0; i < k2::kDim; ++i) norm_sq += rotated[i] * rotated[i];
        for (int i = 0; i < k2::kDim; ++i) {
          const float updated = g(i) + k2::kEta * diff * rotated[i] * rotated[i] / (norm_sq + 1e-8f);
          const float low = updated < 0.01f ? 0.01f : updated;  // std::min(std::max(...)), on any device
          g(i) = 100.f < low ? 100.f : low;
        }
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
};

class TrainStepKokkos final : public Variant {
 public:
  explicit TrainStepKokkos(int phase) : phase_(phase), plan_(phase) {}

  std::optional<CannotRun> support() const override { return k2::kokkos_window_phase_support(phase_); }

  void setup(const ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim, n = k2::kDim;
    const int64_t N = dims_.field_size();
    O_ = k2::to_device<k2::Cube>("O", require(in, "O"), B, dims_.tokens, d);
    target_ = k2::to_device<k2::Mat>("target", require(in, "target"), B, n);
    F0_ = k2::to_device<k2::Vec>("F0", require(in, "F0"), N);
    bank_coord_in_ = k2::to_device<k2::Mat>("bank_coord_in", require(in, "bank_coord"), C, n);
    bank_state_in_ = k2::to_device<k2::Mat>("bank_state_in", require(in, "bank_state"), C, d);
    g_in_ = k2::to_device<k2::Vec>("g_in", require(in, "g"), n);
    theta_in_ = k2::to_device<k2::Vec>("theta_in", require(in, "theta"), k2::kSlots);
    pointer_in_ = static_cast<int64_t>(require(in, "bank_pointer").values.at(0));

    bank_coord_ = k2::Mat("bank_coord", C, n);
    bank_state_ = k2::Mat("bank_state", C, d);
    g_ = k2::Vec("g", n);
    theta_ = k2::Vec("theta", k2::kSlots);
    nudge_ = k2::Mat("nudge", B, n);
    lior_diff_ = k2::Cell("lior_diff");
    u_ = k2::Vec("u", n);
    free_field_ = {k2::Vec("free_F", N), k2::Vec("free_P", N), F0_};
    if (plan_.fused_window) {
      nudged_field_ = {k2::Vec("nudged_F", N), k2::Vec("nudged_P", N), F0_};
    } else {
      F_eq_ = k2::Vec("F_eq", N);
      nudged_field_ = {k2::Vec("F", N), k2::Vec("P", N), F_eq_};  // the trainer's field, advanced in place
      if (plan_.preallocated) kept_snapshot_ = allocate_snapshot();
    }
    if (phase_ < 2) {
      pairs_ = k2::rotor_pair_indices();
      index_cell_ = k2::HostIndexCell("pair_index");
      value_cell_ = k2::HostCell("u_value");
    }
    free_.allocate(dims_);
    nudged_.allocate(dims_);
    free_runner_ = std::make_unique<k2::WindowRunner>(dims_, phase_);
    nudged_runner_ = std::make_unique<k2::WindowRunner>(dims_, phase_);
  }

  void poison_outputs() override {
    free_.poison();
    nudged_.poison();
    for (const k2::Vec& view : {free_field_.F, free_field_.P, nudged_field_.F, nudged_field_.P, g_, theta_})
      k2::fill_nan(view);
    k2::fill_nan(bank_coord_);
    k2::fill_nan(bank_state_);
    pointer_ = -1;  // never a valid ring position
    Kokkos::fence();
  }

  void run() override {
    reset_state();
    const k2::WindowInputsDevice in{O_, bank_coord_, bank_state_, g_, theta_};
    if (plan_.fused_window) {
      free_runner_->run_from_rest(in, k2::ConstMat(), F0_, F0_, free_field_, free_);
      nudge_toward(target_, free_.q, nudge_);
      nudged_runner_->run_from_rest(in, nudge_, F0_, F0_, nudged_field_, nudged_);
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
    metric_update(free_.scalars, nudged_.scalars, free_.vbar, theta_, g_, lior_diff_, u_);
    if (phase_ < 2) {
      k2::rotor_update_per_pair(pairs_, u_, lior_diff_, theta_, index_cell_, value_cell_);
    } else {
      k2::rotor_update_vectorized(u_, lior_diff_, theta_);
    }
    memory_write(free_.q, free_.q_state, bank_coord_, bank_state_, pointer_in_);
    pointer_ = (pointer_in_ + std::min(dims_.bank_rows, dims_.batch)) % dims_.bank_rows;
  }

  ArrayMap outputs() override {
    ArrayMap out;
    free_.add_outputs(out, "free_", dims_, free_field_);
    nudged_.add_outputs(out, "nudged_", dims_, nudged_field_);
    ref::TrainState<float> state;
    state.g = k2::to_floats(g_);
    state.theta = k2::to_floats(theta_);
    state.bank_coord = k2::to_floats(bank_coord_);
    state.bank_state = k2::to_floats(bank_state_);
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
    if (plan_.fused_window) return;  // the fused windows read F0 where it lies
    Kokkos::deep_copy(exec, nudged_field_.F, F0_);
    k2::set_zero(nudged_field_.P);
    Kokkos::deep_copy(exec, F_eq_, F0_);
  }

  Snapshot allocate_snapshot() const {
    const int64_t N = dims_.field_size();
    return {k2::uninitialized<k2::Vec>("snap_F", N), k2::uninitialized<k2::Vec>("snap_P", N),
            k2::uninitialized<k2::Vec>("snap_theta", k2::kSlots),
            k2::uninitialized<k2::Mat>("snap_bank_coord", dims_.bank_rows, k2::kDim),
            k2::uninitialized<k2::Mat>("snap_bank_state", dims_.bank_rows, dims_.state_dim)};
  }

  // Clones of the field, the memory and θ (fresh before phase 6, as .clone() allocates).
  Snapshot take_snapshot() const {
    const Snapshot snapshot = plan_.preallocated ? kept_snapshot_ : allocate_snapshot();
    const ExecSpace exec;
    Kokkos::deep_copy(exec, snapshot.F, nudged_field_.F);
    Kokkos::deep_copy(exec, snapshot.P, nudged_field_.P);
    Kokkos::deep_copy(exec, snapshot.theta, theta_);
    Kokkos::deep_copy(exec, snapshot.bank_coord, bank_coord_);
    Kokkos::deep_copy(exec, snapshot.bank_state, bank_state_);
    return snapshot;
  }

  void restore(const Snapshot& snapshot) const {
    const ExecSpace exec;
    Kokkos::deep_copy(exec, nudged_field_.F, snapshot.F);
    Kokkos::deep_copy(exec, nudged_field_.P, snapshot.P);
    Kokkos::deep_copy(exec, theta_, snapshot.theta);
    Kokkos::deep_copy(exec, bank_coord_, snapshot.bank_coord);
    Kokkos::deep_copy(exec, bank_state_, snapshot.bank_state);
  }

  int phase_;
  k2::WindowPlan plan_;
  ref::WindowDims dims_{};
  // inputs
  k2::Cube O_;
  k2::Mat target_, bank_coord_in_, bank_state_in_;
  k2::Vec F0_, g_in_, theta_in_;
  int64_t pointer_in_ = 0;
  // the trainer's state (outputs g, theta, bank_*, bank_pointer)
  k2::Mat bank_coord_, bank_state_;
  k2::Vec g_, theta_, F_eq_;
  int64_t pointer_ = 0;
  k2::FieldState free_field_, nudged_field_;  // before phase 11 nudged_field_ is the trainer's field
  Snapshot kept_snapshot_;
  // the manual update
  k2::Mat nudge_;
  k2::Cell lior_diff_;
  k2::Vec u_;
  k2::IndexVec pairs_;
  k2::HostIndexCell index_cell_;
  k2::HostCell value_cell_;
  // the windows
  k2::WindowResultDevice free_, nudged_;
  std::unique_ptr<k2::WindowRunner> free_runner_, nudged_runner_;
};

const VariantRegistration registration{
    "trainer2/train_step", "kokkos", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11}, [](const VariantContext& context) {
      return std::make_unique<TrainStepKokkos>(context.phase);
    }};

}  // namespace
}  // namespace pb::kokkos_backend
