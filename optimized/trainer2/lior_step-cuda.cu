// trainer2/lior_step on CUDA: the phase ladder as kernel launches on the default stream.
// Math: reference/trainer2/lior_step.hpp. Per-thread bodies: lior_step-cuda.cuh (tested on the
// host by tests/cuda/lior_step_cuda_bodies_test.cpp); this file has only the __global__ wrappers,
// launch shapes and the ladder.
//
//   phase 0 baseline         speed kernel -> s_tmp, dlior kernel (R * s_tmp), speed kernel again
//                            -> s for the metrics; three one-block reductions, each followed by a
//                            one-float device-to-host copy: 6 launches, 3 host syncs
//   phase 1 batched_metrics  as 0, but one reduction kernel writes the three means to a device
//                            float[3], read with one copy: 4 launches, 1 host sync
//   phase 3 fused_lior_spd   as 1, but one fused kernel writes s and dlior (s computed once):
//                            2 launches, 1 host sync
//
// Without a usable device (always on the build machines) support() reports SKIPPED with the
// runtime's error text, and nothing here touches the device.

#include <array>
#include <limits>
#include <string>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/trainer2/lior_step-cuda.cuh"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = lior_step;
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

// Phase 0: one mean per launch.
__global__ void __launch_bounds__(body::kReductionThreads)
    mean_kernel(const float* x, int64_t rows, float* mean) {
  __shared__ float partials[body::kReductionThreads];
  const int thread = static_cast<int>(threadIdx.x);
  const float sum =
      block_sum(partials, body::strided_sum(x, rows, thread, body::kReductionThreads));
  if (thread == 0) *mean = body::mean_of(sum, rows);
}

// Phases 1 and 3: the three means in one launch, into means[3].
__global__ void __launch_bounds__(body::kReductionThreads)
    metric_means_kernel(const float* dlior, const float* R, const float* s, int64_t rows,
                        float* means) {
  __shared__ MetricSums partials[body::kReductionThreads];
  const int thread = static_cast<int>(threadIdx.x);
  const MetricSums sums = block_sum(
      partials, body::strided_metric_sums(dlior, R, s, rows, thread, body::kReductionThreads));
  if (thread == 0) body::write_metric_means(sums, rows, means);
}

// ---- the ladder --------------------------------------------------------------------------------

constexpr LaunchShape kReductionShape{1, body::kReductionThreads};

class LiorStepCuda final : public Variant {
 public:
  explicit LiorStepCuda(const VariantContext& context) : context_(context) {}

  std::optional<CannotRun> support() const override {
    if (context_.device != "cuda") {
      return CannotRun{CannotRun::Kind::Unsupported,
                       "the cuda backend runs on device \"cuda\" only"};
    }
    if (!device_available())
      return CannotRun{CannotRun::Kind::Skipped, device_unavailable_reason()};
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    const HostArray& v = require(inputs, "v");
    rows_ = v.shape.at(0);
    v_ = upload(v);
    R_ = upload(require(inputs, "R"));
    g_ = upload(require(inputs, "g"));
    s_ = DeviceBuffer<float>(rows_);
    dlior_ = DeviceBuffer<float>(rows_);
    if (context_.phase < 3) s_tmp_ = DeviceBuffer<float>(rows_);
    device_means_ = DeviceBuffer<float>(3);
  }

  void poison_outputs() override {
    fill_with_nan(s_);
    fill_with_nan(dlior_);
    fill_with_nan(device_means_);
    means_.fill(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    if (context_.phase >= 3) {
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
    if (context_.phase >= 1) {
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

  // Phase 0: each mean reduced and read back on its own, as three .item() calls would.
  void read_means_one_by_one() {
    const float* sources[3] = {dlior_.data(), R_.data(), s_.data()};
    for (int k = 0; k < 3; ++k) {
      launch(mean_kernel, kReductionShape, "mean_kernel", sources[k], rows_,
             device_means_.data() + k);
      read_to_host(&means_[k], device_means_.data() + k, sizeof(float));
    }
  }

  // Phases 1 and 3: the three means gathered on the device, one transfer.
  void read_means_batched() {
    launch(metric_means_kernel, kReductionShape, "metric_means_kernel", dlior_.data(), R_.data(),
           s_.data(), rows_, device_means_.data());
    read_to_host(means_.data(), device_means_, means_.size());
  }

  VariantContext context_;
  int64_t rows_ = 0;
  DeviceBuffer<float> v_, R_, g_;     // inputs
  DeviceBuffer<float> s_, dlior_;     // outputs
  DeviceBuffer<float> s_tmp_;         // phases 0 and 1: lior_step's own s, before the recompute
  DeviceBuffer<float> device_means_;  // {mean_dlior, mean_R, mean_s} on the device
  std::array<float, 3> means_{};      // the same, read back
};

const VariantRegistration registration{
    "trainer2/lior_step", "cuda", {0, 1, 3}, [](const VariantContext& context) {
      return std::make_unique<LiorStepCuda>(context);
    }};

}  // namespace
}  // namespace pb::cuda_backend
