// trainer2/window on Kokkos (default execution space): one run_window of W steps from the same
// initial state every run (F = F0, P = 0, F_eq = F0). Math: reference/trainer2/trainer2.hpp
// run_window; the window as the plan asks: trainer2_engine_window-kokkos.hpp (WindowRunner).

#include <memory>
#include <optional>

#include "optimized/trainer2/trainer2_engine_window-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::kokkos_backend {
namespace {

namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

class WindowKokkos final : public Variant {
 public:
  explicit WindowKokkos(const VariantContext& context) : plan_(context) {}

  std::optional<CannotRun> support() const override { return plan_.support(); }

  void setup(const ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    const int64_t n = k2::kDim, N = dims_.field_size();
    O_ = to_device<k2::Cube>("O", require(in, "O"), dims_.batch, dims_.tokens, dims_.state_dim);
    bank_coord_ = to_device<k2::Mat>("bank_coord", require(in, "bank_coord"), dims_.bank_rows, n);
    bank_state_ = to_device<k2::Mat>("bank_state", require(in, "bank_state"), dims_.bank_rows, dims_.state_dim);
    g_ = to_device<k2::Vec>("g", require(in, "g"), n);
    theta_ = to_device<k2::Vec>("theta", require(in, "theta"), k2::kSlots);
    F0_ = to_device<k2::Vec>("F0", require(in, "F0"), N);
    field_.F = k2::Vec("F", N);
    field_.P = k2::Vec("P", N);
    // The blocked window reads F0 as F_eq where it lies; the in-place window keeps its own.
    if (!plan_.temporal_blocking) field_.F_eq = k2::Vec("F_eq", N);
    result_.allocate(dims_);
    runner_ = std::make_unique<k2::WindowRunner>(dims_, plan_);
  }

  void poison_outputs() override {
    result_.poison();
    fill_nan(field_.F);
    fill_nan(field_.P);
    Kokkos::fence();
  }

  void run() override {
    const k2::WindowInputsDevice in{O_, bank_coord_, bank_state_, g_, theta_};
    runner_->run_from_start(in, k2::ConstMat(), F0_, field_, result_);
  }

  ArrayMap outputs() override {
    ArrayMap out;
    result_.add_outputs(out, "", dims_, field_);
    return out;
  }

 private:
  k2::WindowPlan plan_;
  pb::reference::trainer2::WindowDims dims_{};
  k2::Cube O_;
  k2::Mat bank_coord_, bank_state_;
  k2::Vec g_, theta_, F0_;
  k2::FieldState field_;  // the final F and P
  k2::WindowResultDevice result_;
  std::unique_ptr<k2::WindowRunner> runner_;
};

const VariantRegistration registration{
    "trainer2/window", "kokkos",
    {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd, t2::kJitFusion, t2::kInPlace, t2::kHoistedRetrievalBatch,
     t2::kLastStepAct, t2::kTemporalBlocking, t2::kVectorizedWindow},
    [](const VariantContext& context) { return std::make_unique<WindowKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
