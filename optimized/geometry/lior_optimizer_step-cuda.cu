// geometry/lior_optimizer_step on CUDA: kernel launches on the default stream, the ladder of
// lior_optimizer_step-kokkos.cpp. Math: reference/geometry/lior_optimizer_step.hpp. Per-thread
// bodies: lior_optimizer_step-cuda.cuh (run on the host by tests/geometry_network_test.cpp).
// per_tensor_sync reads each R_j back with a blocking copy (one host sync per tensor, as R.item());
// device_resilience keeps the scale on the device; batched_step launches one kernel for every
// scale and one update over all values. Without a usable device support() reports SKIPPED.

#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/geometry/lior_optimizer_step-cuda.cuh"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = lior_optimizer_step;
namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void resilience_kernel(ref::ResilienceWeights<float> w, const float* params, const int64_t* offsets,
                                  int64_t first, int64_t last, bool as_scale, float* out) {
  const int64_t j = first + global_index();
  if (j < last) body::resilience_body(j, w, params, offsets, as_scale, out);
}
__global__ void update_host_scale_kernel(const float* params, const float* grads, int64_t first, int64_t last,
                                         float scale, float* out) {
  const int64_t i = first + global_index();
  if (i < last) body::update_body(i, params, grads, scale, out);
}
__global__ void update_device_scale_kernel(const float* params, const float* grads, int64_t first, int64_t last,
                                           const float* scale, float* out) {
  const int64_t i = first + global_index();
  if (i < last) body::update_body(i, params, grads, *scale, out);
}
__global__ void update_all_kernel(const float* params, const float* grads, const float* scales, const int64_t* offsets,
                                  int tensors, int64_t total, float* out) {
  const int64_t i = global_index();
  if (i < total) body::update_all_body(i, params, grads, scales, offsets, tensors, out);
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& values) {
  DeviceBuffer<T> buffer(values.size());
  copy_to_device(buffer, values.data(), values.size());
  return buffer;
}

class LiorOptimizerStepCuda final : public Variant {
 public:
  explicit LiorOptimizerStepCuda(const VariantContext& context)
      : context_(context),
        device_resilience_(context.has(geo::kDeviceResilience)),
        batched_(context.has(geo::kBatchedStep)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    shapes_ = geo::shapes_of(inputs);
    offsets_host_ = geo::flat_offsets(shapes_);
    params_ = upload(geo::flat_floats(inputs, geo::param_name, shapes_.size()));
    grads_ = upload(geo::flat_floats(inputs, geo::grad_name, shapes_.size()));
    offsets_ = upload(offsets_host_);
    for (const std::string& name : {geo::kResilienceW1, geo::kResilienceB1, geo::kResilienceW2, geo::kResilienceB2})
      weights_.push_back(upload(require(inputs, name).to_floats()));
    out_ = DeviceBuffer<float>(params_.size());
    scales_ = DeviceBuffer<float>(shapes_.size());
  }

  void poison_outputs() override { fill_with_nan(out_); }

  void run() override {
    const int64_t tensors = static_cast<int64_t>(shapes_.size()), total = offsets_host_.back();
    if (batched_) {
      resilience(0, tensors, true);
      launch(update_all_kernel, one_thread_per_row(total), "update_all_kernel", params_.data(), grads_.data(),
             scales_.data(), offsets_.data(), static_cast<int>(tensors), total, out_.data());
      return;
    }
    for (int64_t j = 0; j < tensors; ++j) {
      const int64_t first = offsets_host_[j], last = offsets_host_[j + 1];
      resilience(j, j + 1, device_resilience_);
      if (device_resilience_) {
        launch(update_device_scale_kernel, one_thread_per_row(last - first), "update_device_scale_kernel",
               params_.data(), grads_.data(), first, last, scales_.data() + j, out_.data());
      } else {  // the original: R.item(), one host sync per tensor
        float R = 0;
        read_to_host(&R, scales_.data() + j, sizeof(float));
        launch(update_host_scale_kernel, one_thread_per_row(last - first), "update_host_scale_kernel", params_.data(),
               grads_.data(), first, last, ref::step_scale(R), out_.data());
      }
    }
  }

  ArrayMap outputs() override {
    std::vector<float> flat(out_.size());
    read_to_host(flat.data(), out_, flat.size());
    return geo::outputs_from_flat(shapes_, flat.data());
  }

 private:
  void resilience(int64_t first, int64_t last, bool as_scale) {
    const ref::ResilienceWeights<float> w{weights_[0].data(), weights_[1].data(), weights_[2].data(), weights_[3].data()};
    launch(resilience_kernel, one_thread_per_row(last - first), "resilience_kernel", w, params_.data(),
           offsets_.data(), first, last, as_scale, scales_.data());
  }

  VariantContext context_;
  bool device_resilience_, batched_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_host_;
  DeviceBuffer<float> params_, grads_, out_, scales_;
  DeviceBuffer<int64_t> offsets_;
  std::vector<DeviceBuffer<float>> weights_;  // R.w1, R.b1, R.w2, R.b2
};

const VariantRegistration registration{
    geo::kLiorOptimizerStep, "cuda", {geo::kPerTensorSync, geo::kDeviceResilience, geo::kBatchedStep},
    [](const VariantContext& context) { return std::make_unique<LiorOptimizerStepCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
