// geometry/bayesian on CUDA: kernel launches on the default stream. Math:
// reference/geometry/bayesian.hpp; per-thread bodies: bayesian-cuda.cuh (run on the host by
// tests/geometry_field_test.cpp). Baseline, as the original before the seed (torch.where on the
// device): a weights kernel, a one-block reduction of Z, a posterior kernel that reads Z on the
// device (no host sync), the update kernel. With host_read_branch (an extra, not the original's
// code): Z copied to the host (one host sync) and the branch taken there (a posterior kernel, or a
// device copy of F). With compiled (the seed), two kernels: Z from F and
// E (weights not stored), then posterior and update together. Every buffer is allocated in
// setup(). Without a usable device (always on the build machines) support() reports SKIPPED with
// the runtime's error text, and nothing here touches the device.

#include <limits>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/geometry/bayesian-cuda.cuh"
#include "suites/geometry/field.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = bayesian;
namespace geo = pb::suites::geometry;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void weight_kernel(int64_t count, const float* f, const float* e, float* w) {
  const int64_t k = global_index();
  if (k < count) body::weight(k, f, e, w);
}

// One block: Z from the stored weights, or with w null from F and E (compiled).
__global__ void __launch_bounds__(body::kReductionThreads)
    z_kernel(const float* f, const float* e, const float* w, int64_t count, float* z) {
  __shared__ double partials[body::kReductionThreads];
  const int thread = static_cast<int>(threadIdx.x);
  partials[thread] = body::partial_z(f, e, w, count, thread);
  __syncthreads();
  for (int half = body::kReductionThreads / 2; half > 0; half /= 2) {
    body::tree_step(partials, thread, half);
    __syncthreads();
  }
  if (thread == 0) *z = static_cast<float>(partials[0]);
}

__global__ void posterior_host_z_kernel(int64_t count, const float* f, const float* w, float z, float* out) {
  const int64_t i = global_index();
  if (i < count) body::posterior(i, f, w, z, out);
}
__global__ void posterior_device_z_kernel(int64_t count, const float* f, const float* w, const float* z, float* out) {
  const int64_t i = global_index();
  if (i < count) body::posterior(i, f, w, *z, out);
}
__global__ void update_kernel(int64_t count, const float* post, const float* f, float* out) {
  const int64_t i = global_index();
  if (i < count) body::update(i, post, f, out);
}
__global__ void fused_kernel(int64_t count, const float* f, const float* e, const float* z, float* post, float* out) {
  const int64_t k = global_index();
  if (k < count) body::fused_posterior_update(k, f, e, *z, post, out);
}

DeviceBuffer<float> upload(const HostArray& array) {
  const std::vector<float> values = array.to_floats();
  DeviceBuffer<float> buffer(values.size());
  copy_to_device(buffer.data(), values.data(), values.size() * sizeof(float));
  return buffer;
}

constexpr LaunchShape kReductionShape{1, body::kReductionThreads};

class BayesianCuda final : public Variant {
 public:
  explicit BayesianCuda(const VariantContext& context)
      : context_(context), host_read_branch_(context.has(geo::kHostReadBranch)), compiled_(context.has(geo::kCompiled)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    count_ = geo::shape_of_complex(field_).complex_count();
    f_ = upload(field_);
    e_ = upload(require(inputs, geo::kEvidence));
    z_ = DeviceBuffer<float>(1);
    posterior_ = DeviceBuffer<float>(2 * count_);
    update_ = DeviceBuffer<float>(2 * count_);
    if (!compiled_) w_ = DeviceBuffer<float>(count_);
  }

  void poison_outputs() override {
    fill_with_nan(posterior_.data(), posterior_.bytes());
    fill_with_nan(update_.data(), update_.bytes());
  }

  void run() override {
    const int64_t values = 2 * count_;
    const LaunchShape all = one_thread_per_row(values);
    if (compiled_) {
      launch(z_kernel, kReductionShape, "z_kernel", f_.data(), e_.data(), nullptr, count_, z_.data());
      launch(fused_kernel, one_thread_per_row(count_), "fused_kernel", count_, f_.data(), e_.data(), z_.data(),
             posterior_.data(), update_.data());
      return;
    }
    launch(weight_kernel, one_thread_per_row(count_), "weight_kernel", count_, f_.data(), e_.data(), w_.data());
    launch(z_kernel, kReductionShape, "z_kernel", f_.data(), e_.data(), w_.data(), count_, z_.data());
    if (!host_read_branch_) {
      launch(posterior_device_z_kernel, all, "posterior_device_z_kernel", values, f_.data(), w_.data(), z_.data(),
             posterior_.data());
    } else {
      float z = 0;
      read_to_host(&z, z_.data(), sizeof z);  // the host waits for Z: one host sync
      if (pb::reference::geometry::normalizable(z)) {
        launch(posterior_host_z_kernel, all, "posterior_host_z_kernel", values, f_.data(), w_.data(), z,
               posterior_.data());
      } else {
        copy_on(nullptr, posterior_.data(), f_.data(), posterior_.bytes());
      }
    }
    launch(update_kernel, all, "update_kernel", values, posterior_.data(), f_.data(), update_.data());
  }

  ArrayMap outputs() override {
    std::vector<float> posterior(2 * count_), update(2 * count_);
    read_to_host(posterior.data(), posterior_.data(), posterior_.bytes());
    read_to_host(update.data(), update_.data(), update_.bytes());
    return geo::bayesian_outputs(field_, posterior.data(), update.data());
  }

 private:
  VariantContext context_;
  bool host_read_branch_, compiled_;
  HostArray field_;
  int64_t count_ = 0;  // complex values
  DeviceBuffer<float> f_, e_, w_, z_, posterior_, update_;
};

const VariantRegistration registration{
    "geometry/bayesian", "cuda", {geo::kBaseline, geo::kCompiled, geo::kHostReadBranch},
    [](const VariantContext& context) { return std::make_unique<BayesianCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
