// trainer2/lior_step on CUDA: kernel launches on the default stream. Math:
// reference/trainer2/lior_step.hpp. Per-thread bodies: lior_step-cuda.cuh (tested on the host by
// tests/cuda/lior_step_cuda_bodies_test.cpp); this file has only the __global__ wrappers, launch
// shapes and the variant. As the original, s is computed twice (a speed kernel for lior_step, a
// dlior kernel, a speed kernel again for the metrics) and each mean is reduced by its own
// one-block kernel and read back with its own copy (3 host syncs); batched_metrics reduces the
// three means in one kernel into a device float[3] read with one copy (1 host sync);
// fused_lior_spd writes s and dlior from one kernel.
//
// Without a usable device (always on the build machines) support() reports SKIPPED with the
// runtime's error text, and nothing here touches the device.

#include <array>
#include <limits>
#include <string>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/trainer2/lior_step-cuda.cuh"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = lior_step;
namespace t2 = pb::suites::trainer2;
using body::MetricSums;

__device__ int64_t global_row() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// ---- kernels: thin wrappers over the bodies ----------------------------------------------------

__global__ void speed_kernel(const float* v, const float* g, int64_t rows, float* s) {
  const int64_t row = global_row();
  if (row < rows) body::speed_row(row, v, g, s);
}

__global__ void dlior_kernel(const float* R, const float* s, int64_t rows, float* dlior) {
  const int64_t row = global_row();
  if (row < rows) body::dlior_row(row, R, s, dlior);
}

__global__ void fused_lior_kernel(const float* v, const float* R, const float* g, int64_t rows,
                                  float* s, float* dlior) {
  const int64_t row = global_row();
  if (row < rows) body::fused_lior_row(row, v, R, g, s, dlior);
}

// The block's pairwise sum of one partial per thread; every thread gets the total.
template <typename Sum>
__device__ Sum block_sum(Sum* partials, Sum partial) {
  const int thread = static_cast<int>(threadIdx.x);
  partials[thread] = partial;
  __syncthreads();
  for (int half = body::kReductionThreads / 2; half > 0; half /= 2) {
    body::tree_step(partials, thread, half);
    __syncthreads();
  }
  return partials[0];
}

// Without batched_metrics: one mean per launch.
__global__ void __launch_bounds__(body::kReductionThreads)
    mean_kernel(const float* x, int64_t rows, float* mean) {
  __shared__ float partials[body::kReductionThreads];
  const int thread = static_cast<int>(threadIdx.x);
  const float sum =
      block_sum(partials, body::strided_sum(x, rows, thread, body::kReductionThreads));
  if (thread == 0) *mean = body::mean_of(sum, rows);
}

// batched_metrics: the three means in one launch, into means[3].
__global__ void __launch_bounds__(body::kReductionThreads)
    metric_means_kernel(const float* dlior, const float* R, const float* s, int64_t rows,
                        float* means) {
  __shared__ MetricSums partials[body::kReductionThreads];
  const int thread = static_cast<int>(threadIdx.x);
  const MetricSums sums = block_sum(
      partials, body::strided_metric_sums(dlior, R, s, rows, thread, body::kReductionThreads));
  if (thread == 0) body::write_metric_means(sums, rows, means);
}

// ---- the variant -------------------------------------------------------------------------------

constexpr LaunchShape kReductionShape{1, body::kReductionThreads};

class LiorStepCuda final : public Variant {
 public:
  explicit LiorStepCuda(const VariantContext& context)
      : context_(context),
        fused_lior_(context.has(t2::kFusedLiorSpd)),
        batched_metrics_(context.has(t2::kBatchedMetrics)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    const HostArray& v = require(inputs, "v");
    rows_ = v.shape.at(0);
    v_ = upload(v);
    R_ = upload(require(inputs, "R"));
    g_ = upload(require(inputs, "g"));
    s_ = DeviceBuffer<float>(rows_);
    dlior_ = DeviceBuffer<float>(rows_);
    if (!fused_lior_) s_tmp_ = DeviceBuffer<float>(rows_);
    device_means_ = DeviceBuffer<float>(3);
  }

  void poison_outputs() override {
    fill_with_nan(s_);
    fill_with_nan(dlior_);
    fill_with_nan(device_means_);
    means_.fill(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    if (fused_lior_) {
      launch(fused_lior_kernel, rows_shape(), "fused_lior_kernel", v_.data(), R_.data(), g_.data(),
             rows_, s_.data(), dlior_.data());
    } else {
      // As the original: lior_step computes s and dlior, then the metrics compute s again.
      launch(speed_kernel, rows_shape(), "speed_kernel", v_.data(), g_.data(), rows_,
             s_tmp_.data());
      launch(dlior_kernel, rows_shape(), "dlior_kernel", R_.data(), s_tmp_.data(), rows_,
             dlior_.data());
      launch(speed_kernel, rows_shape(), "speed_kernel", v_.data(), g_.data(), rows_, s_.data());
    }
    if (batched_metrics_) {
      read_means_batched();
    } else {
      read_means_one_by_one();
    }
  }

  ArrayMap outputs() override {
    std::vector<float> s(rows_), dlior(rows_);
    read_to_host(s.data(), s_, s.size());
    read_to_host(dlior.data(), dlior_, dlior.size());
    return {{"s", HostArray::from_floats({rows_}, s.data(), rows_)},
            {"dlior", HostArray::from_floats({rows_}, dlior.data(), rows_)},
            {"mean_dlior", HostArray::scalar(means_[0])},
            {"mean_R", HostArray::scalar(means_[1])},
            {"mean_s", HostArray::scalar(means_[2])}};
  }

 private:
  static DeviceBuffer<float> upload(const HostArray& array) {
    const std::vector<float> values = array.to_floats();
    DeviceBuffer<float> buffer(values.size());
    copy_to_device(buffer, values.data(), values.size());
    return buffer;
  }

  LaunchShape rows_shape() const { return one_thread_per_row(rows_); }

  // Without batched_metrics: each mean reduced and read back on its own, as three .item() calls would.
  void read_means_one_by_one() {
    const float* sources[3] = {dlior_.data(), R_.data(), s_.data()};
    for (int k = 0; k < 3; ++k) {
      launch(mean_kernel, kReductionShape, "mean_kernel", sources[k], rows_,
             device_means_.data() + k);
      read_to_host(&means_[k], device_means_.data() + k, sizeof(float));
    }
  }

  // batched_metrics: the three means gathered on the device, one transfer.
  void read_means_batched() {
    launch(metric_means_kernel, kReductionShape, "metric_means_kernel", dlior_.data(), R_.data(),
           s_.data(), rows_, device_means_.data());
    read_to_host(means_.data(), device_means_, means_.size());
  }

  VariantContext context_;
  bool fused_lior_, batched_metrics_;
  int64_t rows_ = 0;
  DeviceBuffer<float> v_, R_, g_;     // inputs
  DeviceBuffer<float> s_, dlior_;     // outputs
  DeviceBuffer<float> s_tmp_;         // without fused_lior_spd: lior_step's s, before the recompute
  DeviceBuffer<float> device_means_;  // {mean_dlior, mean_R, mean_s} on the device
  std::array<float, 3> means_{};      // the same, read back
};

const VariantRegistration registration{
    "trainer2/lior_step", "cuda", {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd},
    [](const VariantContext& context) { return std::make_unique<LiorStepCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
