// geometry/lior_optimizer_step on Kokkos (default execution space). Math:
// reference/geometry/lior_optimizer_step.hpp (its per-tensor and per-value functions run in these
// kernels); catalog: suites/geometry/lior_optimizer_step.cpp.
//
//   per tensor j: R_j = clamp(R(first 8 values of p_j), 0.1, 10);  out_j = p_j - lr kappa R_j^-2 g_j
//
// Parameters, gradients and outputs are flat Views with the tensors one after the other
// (offsets[j] .. offsets[j+1]). Nothing is allocated in run(). streaming_update (host cores only)
// runs its spans' updates from lior_optimizer_step_bodies.hpp.

#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/lior_optimizer_step_bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
namespace bodies = pb::optimized::geometry::lior_optimizer_step;

using Vec = DeviceView<float*>;
using Offsets = DeviceView<int64_t*>;

const std::string kResilienceLabel = "lior_optimizer_step/resilience";
const std::string kUpdateLabel = "lior_optimizer_step/update";
const std::string kStreamedLabel = "lior_optimizer_step/streamed_update";

// streaming_update's span: 16 Ki values (64 KiB of each stream), a multiple of 16 floats so that a
// span inside a tensor starts on a cache line; 1,152 spans at the default size, enough to split
// evenly between the threads, few enough that a span's fence and its scale's load cost nothing.
constexpr int64_t kSpanValues = 16384;

/// The resilience weights in device Views, and the pointer struct the kernels use.
struct ResilienceViews {
  explicit ResilienceViews(const ArrayMap& inputs)
      : w1(to_device<Vec>("R.w1", require(inputs, geo::kResilienceW1), ref::kDim * ref::kDim)),
        b1(to_device<Vec>("R.b1", require(inputs, geo::kResilienceB1), ref::kDim)),
        w2(to_device<Vec>("R.w2", require(inputs, geo::kResilienceW2), ref::kDim)),
        b2(to_device<Vec>("R.b2", require(inputs, geo::kResilienceB2), 1)) {}
  ref::ResilienceWeights<float> weights() const { return {w1.data(), b1.data(), w2.data(), b2.data()}; }
  Vec w1, b1, w2, b2;
};

class LiorOptimizerStepKokkos final : public Variant {
 public:
  explicit LiorOptimizerStepKokkos(const VariantContext& context)
      : device_resilience_(context.has(geo::kDeviceResilience)),
        batched_(context.has(geo::kBatchedStep)),
        streaming_(context.has(geo::kStreamingUpdate)) {}

  // streaming_update reads the Views through their pointers on the calling host's cores and needs
  // the CPU's non-temporal stores.
  std::optional<CannotRun> support() const override {
    if (!streaming_) return std::nullopt;
#ifndef PB_GEOMETRY_STREAMING_STORES
    return CannotRun{CannotRun::Kind::Unsupported, "streaming_update needs SSE non-temporal stores (x86-64)"};
#else
    return host_cores_only(geo::kStreamingUpdate);
#endif
  }

  void setup(const ArrayMap& inputs) override {
    network_ = std::make_unique<ResilienceViews>(inputs);
    shapes_ = geo::shapes_of(inputs);
    offsets_host_ = geo::flat_offsets(shapes_);
    const int64_t total = offsets_host_.back(), tensors = static_cast<int64_t>(shapes_.size());
    const std::vector<float> params = geo::flat_floats(inputs, geo::param_name, shapes_.size());
    const std::vector<float> grads = geo::flat_floats(inputs, geo::grad_name, shapes_.size());
    params_ = filled_on_device<Vec>("params", [&](int64_t i) { return params[i]; }, total);
    grads_ = filled_on_device<Vec>("grads", [&](int64_t i) { return grads[i]; }, total);
    out_ = Vec("out", total);
    offsets_ = filled_on_device<Offsets>("offsets", [&](int64_t i) { return offsets_host_[i]; }, tensors + 1);
    scales_ = Vec("scales", tensors);
    resilience_cell_ = Kokkos::View<float, Kokkos::HostSpace>("scale_cell");
    if (streaming_) place_spans();
  }

  void poison_outputs() override {
    fill_nan(out_);
    Kokkos::fence();
  }

  void run() override {
    const int64_t tensors = static_cast<int64_t>(shapes_.size());
    if (streaming_) {  // the batched scales, then one flat streamed pass
      scales_of(0, tensors, true);
      streamed_update_all();
      return;
    }
    if (batched_) {  // one kernel for all P scales, one update over every value
      scales_of(0, tensors, true);
      update_all();
      return;
    }
    for (int64_t j = 0; j < tensors; ++j) {
      scales_of(j, j + 1, device_resilience_);
      if (device_resilience_) {
        update_tensor_scaled_on_device(j);
      } else {  // the original: R.item(), one host sync per tensor, then a host scalar
        update_tensor(j, ref::step_scale(read_element(resilience_cell_, scales_, j)));
      }
    }
  }

  ArrayMap outputs() override { return geo::outputs_from_flat(shapes_, to_host_vector(out_).data()); }

 private:
  /// scales(j) = lr kappa R_j^-2 for tensors [first, last), or R_j itself when !as_scale.
  void scales_of(int64_t first, int64_t last, bool as_scale) const {
    const auto w = network_->weights();
    const Vec params = params_, scales = scales_;
    const Offsets offsets = offsets_;
    Kokkos::parallel_for(
        kResilienceLabel, RangePolicy(first, last), KOKKOS_LAMBDA(int64_t j) {
          const int64_t n = offsets(j + 1) - offsets(j);
          const float R = ref::tensor_resilience(w, params.data() + offsets(j), n);
          scales(j) = as_scale ? ref::step_scale(R) : R;
        });
  }

  void update_tensor(int64_t j, float scale) const {
    const Vec params = params_, grads = grads_, out = out_;
    Kokkos::parallel_for(
        kUpdateLabel, RangePolicy(offsets_host_[j], offsets_host_[j + 1]),
        KOKKOS_LAMBDA(int64_t i) { out(i) = params(i) - scale * grads(i); });
  }

  void update_tensor_scaled_on_device(int64_t j) const {
    const Vec params = params_, grads = grads_, out = out_, scales = scales_;
    Kokkos::parallel_for(
        kUpdateLabel, RangePolicy(offsets_host_[j], offsets_host_[j + 1]),
        KOKKOS_LAMBDA(int64_t i) { out(i) = params(i) - scales(j) * grads(i); });
  }

  /// One launch over every value of every tensor: a team per tensor, its threads over the values
  /// (a flat range with a bisection per value to find the tensor is much slower on Serial).
  void update_all() const {
    const Vec params = params_, grads = grads_, out = out_, scales = scales_;
    const Offsets offsets = offsets_;
    using Team = Kokkos::TeamPolicy<ExecSpace>::member_type;
    Kokkos::parallel_for(
        kUpdateLabel, Kokkos::TeamPolicy<ExecSpace>(static_cast<int>(shapes_.size()), Kokkos::AUTO),
        KOKKOS_LAMBDA(const Team& team) {
          const int64_t j = team.league_rank();
          const float scale = scales(j);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, offsets(j), offsets(j + 1)),
                               [&](int64_t i) { out(i) = params(i) - scale * grads(i); });
        });
  }

  /// streaming_update's spans and their streamed parts for out_, checked here: a wrong part would
  /// fault inside the kernel (or quietly stream less), here it is an error naming the span.
  void place_spans() {
    spans_ = bodies::update_spans(offsets_host_, kSpanValues);
    bodies::place_streamed_parts(spans_, out_.data());
    for (const bodies::UpdateSpan& span : spans_)
      if (const std::string error = bodies::streamed_part_error(span, out_.data()); !error.empty())
        throw std::logic_error("streaming_update: the streamed part of values [" + std::to_string(span.begin) + ", " +
                               std::to_string(span.end) + ") is " + error);
  }

  /// One launch over the spans, a contiguous run of them per thread (static schedule): each span's
  /// values updated with streaming stores (bodies::streamed_update) with its tensor's scale.
  void streamed_update_all() const {
    const float *params = params_.data(), *grads = grads_.data(), *scales = scales_.data();
    float* out = out_.data();
    const bodies::UpdateSpan* spans = spans_.data();
    Kokkos::parallel_for(
        kStreamedLabel, Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, static_cast<int64_t>(spans_.size())),
        [=](int64_t s) {
          bodies::streamed_update(params, grads, out, spans[s], scales[spans[s].tensor]);
        });
  }

  bool device_resilience_, batched_, streaming_;
  std::vector<bodies::UpdateSpan> spans_;  // streaming_update: the flat values cut into spans
  std::unique_ptr<ResilienceViews> network_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_host_;
  Vec params_, grads_, out_, scales_;
  Offsets offsets_;
  Kokkos::View<float, Kokkos::HostSpace> resilience_cell_;  // per_tensor_sync: R_j as the host reads it
};

const VariantRegistration registration{
    geo::kLiorOptimizerStep, "kokkos",
    {geo::kPerTensorSync, geo::kDeviceResilience, geo::kBatchedStep, geo::kStreamingUpdate},
    [](const VariantContext& context) { return std::make_unique<LiorOptimizerStepKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
