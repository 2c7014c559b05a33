// geometry/christoffel on CUDA: kernel launches on the default stream, the ladder of
// christoffel-kokkos.cpp (see there). Math: reference/geometry/christoffel.hpp. Per-thread bodies:
// christoffel-cuda.cuh (run on the host by tests/geometry_network_test.cpp); this file has only
// the __global__ wrappers, launch shapes and the variant. Without a usable device support()
// reports SKIPPED with the runtime's error text, and nothing here touches the device.

#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/geometry/christoffel-cuda.cuh"
#include "phasebench/variant.hpp"
#include "suites/geometry/christoffel.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = christoffel;
namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
constexpr int d = ref::kDim;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void metric_kernel(ref::MetricWeights<float> w, const float* x, int64_t points, int first_slot,
                              int slot_count, bool shift, float* metrics) {
  const int64_t i = global_index();
  if (i < points * slot_count) body::metric_body(i, w, x, first_slot, slot_count, shift, metrics);
}
__global__ void shift_kernel(float* x, int64_t points, int axis, float step) {
  const int64_t p = global_index();
  if (p < points) body::shift_body(p, x, axis, step);
}
__global__ void derivative_kernel(const float* metrics, int64_t points, float* D) {
  const int64_t p = global_index();
  if (p < points) body::derivative_body(p, metrics, D);
}
__global__ void inverse_kernel(const float* metrics, int64_t points, float* Ginv) {
  const int64_t p = global_index();
  if (p < points) body::inverse_body(p, metrics, Ginv);
}
__global__ void loop_kernel(const float* Ginv, const float* D, int64_t points, int lam, int mu, int nu, int rho,
                            float* gamma) {
  const int64_t p = global_index();
  if (p < points) body::loop_body(p, Ginv, D, lam, mu, nu, rho, gamma);
}
__global__ void contract_kernel(const float* Ginv, const float* D, int64_t points, float* gamma) {
  const int64_t p = global_index();
  if (p < points) body::contract_body(p, Ginv, D, gamma);
}
__global__ void solve_kernel(const float* metrics, const float* D, int64_t points, float* gamma) {
  const int64_t p = global_index();
  if (p < points) body::solve_body(p, metrics, D, gamma);
}

DeviceBuffer<float> upload(const HostArray& array) {
  const std::vector<float> values = array.to_floats();
  DeviceBuffer<float> buffer(values.size());
  copy_to_device(buffer, values.data(), values.size());
  return buffer;
}

class ChristoffelCuda final : public Variant {
 public:
  explicit ChristoffelCuda(const VariantContext& context)
      : context_(context),
        contraction_(context.has(geo::kContraction)),
        batched_(context.has(geo::kBatchedMetric)),
        solve_(context.has(geo::kSolve)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    const HostArray& x = require(inputs, geo::kPoints);
    points_ = x.numel() / d;
    shape_ = geo::gamma_shape(x);
    x_ = upload(x);
    for (const std::string& name : {geo::kResilienceW1, geo::kResilienceB1, geo::kResilienceW2, geo::kResilienceB2,
                                    geo::kMetricW1, geo::kMetricB1, geo::kMetricW2, geo::kMetricB2, geo::kFactor})
      weights_.push_back(upload(require(inputs, name)));
    metrics_ = DeviceBuffer<float>(points_ * ref::kEvaluations * ref::kMetricSize);
    D_ = DeviceBuffer<float>(points_ * d * ref::kMetricSize);
    Ginv_ = DeviceBuffer<float>(points_ * ref::kMetricSize);
    gamma_ = DeviceBuffer<float>(points_ * ref::kGammaSize);
  }

  void poison_outputs() override { fill_with_nan(gamma_); }

  void run() override {
    evaluate_metrics();
    launch(derivative_kernel, one_thread_per_row(points_), "derivative_kernel", metrics_.data(), points_, D_.data());
    if (solve_) {
      launch(solve_kernel, one_thread_per_row(points_), "solve_kernel", metrics_.data(), D_.data(), points_, gamma_.data());
      return;
    }
    launch(inverse_kernel, one_thread_per_row(points_), "inverse_kernel", metrics_.data(), points_, Ginv_.data());
    if (contraction_) {
      launch(contract_kernel, one_thread_per_row(points_), "contract_kernel", Ginv_.data(), D_.data(), points_,
             gamma_.data());
      return;
    }
    zero_on(nullptr, gamma_.data(), gamma_.bytes());
    for (int lam = 0; lam < d; ++lam)
      for (int mu = 0; mu < d; ++mu)
        for (int nu = 0; nu < d; ++nu)
          for (int rho = 0; rho < d; ++rho)
            launch(loop_kernel, one_thread_per_row(points_), "loop_kernel", Ginv_.data(), D_.data(), points_, lam, mu,
                   nu, rho, gamma_.data());
  }

  ArrayMap outputs() override {
    std::vector<float> gamma(gamma_.size());
    read_to_host(gamma.data(), gamma_, gamma.size());
    return {{geo::kGamma, HostArray::from_floats(shape_, gamma.data(), static_cast<int64_t>(gamma.size()))}};
  }

 private:
  ref::MetricWeights<float> weights() const {
    const auto p = [&](int i) { return static_cast<const float*>(weights_[i].data()); };
    return {{p(0), p(1), p(2), p(3)}, p(4), p(5), p(6), p(7), p(8)};
  }

  /// One launch per slot, or (batched_metric) one for all; without einsum_contraction each
  /// shifted input is a fresh clone of x with one column shifted, as the original.
  void evaluate_metrics() {
    if (batched_) {
      launch(metric_kernel, one_thread_per_row(points_ * ref::kEvaluations), "metric_kernel", weights(), x_.data(),
             points_, 0, ref::kEvaluations, true, metrics_.data());
      return;
    }
    for (int k = 0; k < ref::kEvaluations; ++k) {
      if (contraction_) {
        launch(metric_kernel, one_thread_per_row(points_), "metric_kernel", weights(), x_.data(), points_, k, 1, true,
               metrics_.data());
        continue;
      }
      // Freed when the loop moves on: cudaFree waits for the device, as torch's clone would not
      // with its caching allocator (a cost of this port, not of the original).
      DeviceBuffer<float> clone(x_.size());
      copy_on(nullptr, clone.data(), x_.data(), x_.bytes());
      if (k > 0) {
        const int axis = (k - 1) % d;
        launch(shift_kernel, one_thread_per_row(points_), "shift_kernel", clone.data(), points_, axis,
               ref::slot_shift<float>(k, axis));
      }
      launch(metric_kernel, one_thread_per_row(points_), "metric_kernel", weights(), clone.data(), points_, k, 1, false,
             metrics_.data());
    }
  }

  VariantContext context_;
  bool contraction_, batched_, solve_;
  int64_t points_ = 0;
  std::vector<int64_t> shape_;
  DeviceBuffer<float> x_, metrics_, D_, Ginv_, gamma_;
  std::vector<DeviceBuffer<float>> weights_;  // R.w1, R.b1, R.w2, R.b2, H.w1, H.b1, H.w2, H.b2, L
};

const VariantRegistration registration{
    geo::kChristoffel, "cuda", {geo::kNestedLoops, geo::kContraction, geo::kBatchedMetric, geo::kSolve},
    [](const VariantContext& context) { return std::make_unique<ChristoffelCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
