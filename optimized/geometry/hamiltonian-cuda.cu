// geometry/hamiltonian on CUDA: kernel launches on the default stream. Math:
// reference/geometry/hamiltonian.hpp; per-thread bodies: hamiltonian-cuda.cuh (run on the host by
// tests/geometry_field_test.cpp). Without depthwise_stencil, as the original: one stencil kernel per
// complex channel (D*D launches); with it, one stencil kernel; either way then a kinetic, a
// potential and a sum kernel (as three ATen ops). With compiled, one fused kernel. No host sync;
// every buffer is allocated in setup(). Without a usable device (always on the build machines)
// support() reports SKIPPED with the runtime's error text, and nothing here touches the device.

#include <limits>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/geometry/hamiltonian-cuda.cuh"
#include "suites/geometry/field.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = hamiltonian;
namespace geo = pb::suites::geometry;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void channel_stencil_kernel(int64_t count, int64_t complex_channel, const float* f, body::Lattice l,
                                       float* lap) {
  const int64_t k = global_index();
  if (k < count) body::channel_stencil(k, complex_channel, f, l, lap);
}
__global__ void stencil_kernel(int64_t count, const float* f, body::Lattice l, float* lap) {
  const int64_t i = global_index();
  if (i < count) body::stencil(i, f, l, lap);
}
__global__ void kinetic_kernel(int64_t count, const float* lap, float* out) {
  const int64_t i = global_index();
  if (i < count) body::kinetic(i, lap, out);
}
__global__ void potential_kernel(int64_t count, const float* f, const float* v, float* out) {
  const int64_t i = global_index();
  if (i < count) body::potential(i, f, v, out);
}
__global__ void sum_kernel(int64_t count, const float* a, const float* b, float* out) {
  const int64_t i = global_index();
  if (i < count) body::sum(i, a, b, out);
}
__global__ void fused_kernel(int64_t count, const float* f, const float* v, body::Lattice l, float* h) {
  const int64_t i = global_index();
  if (i < count) body::fused_hamiltonian(i, f, v, l, h);
}

DeviceBuffer<float> upload(const HostArray& array) {
  const std::vector<float> values = array.to_floats();
  DeviceBuffer<float> buffer(values.size());
  copy_to_device(buffer.data(), values.data(), values.size() * sizeof(float));
  return buffer;
}

class HamiltonianCuda final : public Variant {
 public:
  explicit HamiltonianCuda(const VariantContext& context)
      : context_(context), depthwise_(context.has(geo::kDepthwiseStencil)), compiled_(context.has(geo::kCompiled)) {}

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    const HostArray& f = require(inputs, geo::kField);
    shape_ = geo::shape_of_complex(f);
    dims_ = f.shape;
    count_ = shape_.real_count();
    f_ = upload(f);
    v_ = upload(require(inputs, geo::kPotential));
    h_ = DeviceBuffer<float>(count_);
    if (compiled_) return;
    lap_ = DeviceBuffer<float>(count_);
    kinetic_ = DeviceBuffer<float>(count_);
    potential_ = DeviceBuffer<float>(count_);
  }

  void poison_outputs() override { fill_with_nan(h_.data(), h_.bytes()); }

  void run() override {
    const body::Lattice l{shape_.nx, shape_.ny, shape_.channels()};
    const LaunchShape all = one_thread_per_row(count_);
    if (compiled_) {
      launch(fused_kernel, all, "fused_kernel", count_, f_.data(), v_.data(), l, h_.data());
      return;
    }
    if (depthwise_) {
      launch(stencil_kernel, all, "stencil_kernel", count_, f_.data(), l, lap_.data());
    } else {
      const int64_t per_channel = 2 * shape_.sites();
      for (int64_t channel = 0; channel < shape_.d * shape_.d; ++channel)
        launch(channel_stencil_kernel, one_thread_per_row(per_channel), "channel_stencil_kernel", per_channel, channel,
               f_.data(), l, lap_.data());
    }
    launch(kinetic_kernel, all, "kinetic_kernel", count_, lap_.data(), kinetic_.data());
    launch(potential_kernel, all, "potential_kernel", count_, f_.data(), v_.data(), potential_.data());
    launch(sum_kernel, all, "sum_kernel", count_, kinetic_.data(), potential_.data(), h_.data());
  }

  ArrayMap outputs() override {
    std::vector<float> h(count_);
    read_to_host(h.data(), h_.data(), h_.bytes());
    return {{geo::kHamiltonian, HostArray::from_floats(dims_, h.data(), count_)}};
  }

 private:
  VariantContext context_;
  bool depthwise_, compiled_;
  pb::reference::geometry::FieldShape shape_;
  std::vector<int64_t> dims_;
  int64_t count_ = 0;  // real values
  DeviceBuffer<float> f_, v_, h_, lap_, kinetic_, potential_;
};

const VariantRegistration registration{
    "geometry/hamiltonian", "cuda", {geo::kBaseline, geo::kDepthwiseStencil, geo::kCompiled},
    [](const VariantContext& context) { return std::make_unique<HamiltonianCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
