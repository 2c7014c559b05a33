// geometry/lior_memory_conv on CUDA: kernel launches on the default stream, the ladder of
// lior_memory_conv-kokkos.cpp. Math: reference/geometry/lior_memory_conv.hpp. Per-element bodies:
// lior_memory_conv_bodies.hpp (run on the host by tests/geometry_memconv_test.cpp).
// host_taps reads the parameters back with a blocking copy (one host sync, the original's
// .cpu().numpy()), builds the taps on the host and uploads them; device_taps builds and
// normalizes them in three kernels; fft_conv uses cuFFT (plans made in setup()). Without a usable
// device support() reports SKIPPED. Compiled by nvcc here, never run on a device.

#include <cufft.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "optimized/geometry/lior_memory_conv_bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb::cuda_backend {
namespace {

namespace body = pb::optimized::geometry::lior_memory_conv;
namespace conv = pb::suites::geometry::lior_memory_conv;
namespace ref = conv::ref;

__device__ int64_t global_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

__global__ void raw_taps_kernel(const float* params, int64_t n, float* taps) {
  const int64_t t = global_index();
  if (t < n) body::raw_tap_body(t, params, taps);
}
// One thread: the N raw taps summed tail first, as ref::taps does (why: its comment); N <= 16384,
// microseconds, deterministic.
__global__ void tap_sum_kernel(const float* taps, int64_t n, float* sum) {
  if (global_index() != 0) return;
  float acc = 0;
  for (int64_t t = n - 1; t >= 0; --t) acc += taps[t];
  *sum = acc;
}
__global__ void normalize_kernel(const float* sum, int64_t n, float* taps) {
  const int64_t t = global_index();
  if (t < n) body::normalize_tap_body(t, sum, taps);
}
__global__ void direct_kernel(const float* taps, const float* x, int64_t rows, int64_t n, int64_t channels,
                              const float* w0, float* out) {
  const int64_t row = global_index();
  if (row < rows) body::direct_body(row, taps, x, n, channels, *w0, out);
}
__global__ void pad_kernel(const float* x, int64_t values, int64_t n, int64_t channels, int64_t L, float* xpad) {
  const int64_t i = global_index();
  if (i < values) body::pad_body(i, x, n, channels, L, xpad);
}
__global__ void pointwise_kernel(const float* kspec, int64_t count, int64_t bins, float inv_L, float* spec) {
  const int64_t i = global_index();
  if (i < count) body::pointwise_body(i, kspec, bins, inv_L, spec);
}
__global__ void blend_kernel(const float* x, const float* ypad, int64_t values, int64_t n, int64_t channels, int64_t L,
                             const float* w0, float* out) {
  const int64_t i = global_index();
  if (i < values) body::blend_body(i, x, ypad, n, channels, L, *w0, out);
}

void check_cufft(cufftResult status, const char* what) {
  if (status != CUFFT_SUCCESS) throw std::runtime_error(std::string(what) + ": cuFFT error " + std::to_string(status));
}

class LiorMemoryConvCuda final : public Variant {
 public:
  explicit LiorMemoryConvCuda(const VariantContext& context)
      : context_(context), device_taps_(context.has(conv::kDeviceTaps)), fft_(context.has(conv::kFftConv)) {}

  ~LiorMemoryConvCuda() override {
    for (cufftHandle plan : {forward_, inverse_, taps_plan_})
      if (plan) cufftDestroy(plan);
  }

  std::optional<CannotRun> support() const override { return variant_support(context_); }

  void setup(const ArrayMap& inputs) override {
    const HostArray& x = require(inputs, conv::kInput);
    shape_ = {x.shape[0], x.shape[1], x.shape[2]};
    x_ = upload(x.to_floats());
    params_ = upload(require(inputs, conv::kKernelParams).to_floats());
    params_host_.assign(ref::kParams, 0.f);
    taps_host_.assign(static_cast<size_t>(shape_.length), 0.f);
    taps_ = DeviceBuffer<float>(shape_.length);
    sum_ = DeviceBuffer<float>(1);
    w0_ = DeviceBuffer<float>(1);
    out_ = DeviceBuffer<float>(shape_.values());
    if (fft_) setup_fft();
  }

  void poison_outputs() override { fill_with_nan(out_); }

  void run() override {
    const int64_t n = shape_.length;
    const float* w0 = params_.data() + ref::kW0;
    if (device_taps_) {
      launch(raw_taps_kernel, one_thread_per_row(n), "raw_taps_kernel", params_.data(), n, taps_.data());
      launch(tap_sum_kernel, one_thread_per_row(1), "tap_sum_kernel", taps_.data(), n, sum_.data());
      launch(normalize_kernel, one_thread_per_row(n), "normalize_kernel", sum_.data(), n, taps_.data());
    } else {  // the original: weights .cpu().numpy(), taps on the host, uploaded
      read_to_host(params_host_.data(), params_, params_host_.size());
      ref::taps<float>(params_host_.data(), n, taps_host_.data());
      copy_to_device(taps_, taps_host_.data(), taps_host_.size());
      copy_to_device(w0_, params_host_.data() + ref::kW0, 1);
      w0 = w0_.data();
    }
    if (fft_) {
      fft_conv(w0);
      return;
    }
    const int64_t rows = shape_.batch * n;
    launch(direct_kernel, one_thread_per_row(rows), "direct_kernel", taps_.data(), x_.data(), rows, n, shape_.channels,
           w0, out_.data());
  }

  ArrayMap outputs() override {
    std::vector<float> host(out_.size());
    read_to_host(host.data(), out_, host.size());
    ArrayMap out;
    out[conv::kOutput] =
        HostArray::from_floats({shape_.batch, shape_.length, shape_.channels}, host.data(), shape_.values());
    return out;
  }

 private:
  template <typename T>
  static DeviceBuffer<T> upload(const std::vector<T>& values) {
    DeviceBuffer<T> buffer(values.size());
    copy_to_device(buffer, values.data(), values.size());
    return buffer;
  }

  /// Buffers in the layout of lior_memory_conv_bodies.hpp and one cuFFT plan per direction over
  /// the B C lines; the padding is zeroed once (an out-of-place R2C keeps its input).
  void setup_fft() {
    L_ = shape_.fft_length();
    bins_ = L_ / 2 + 1;
    lines_ = shape_.batch * shape_.channels;
    xpad_ = upload(std::vector<float>(static_cast<size_t>(lines_ * L_), 0.f));
    kpad_ = upload(std::vector<float>(static_cast<size_t>(L_), 0.f));
    ypad_ = DeviceBuffer<float>(lines_ * L_);
    spec_ = DeviceBuffer<float>(2 * lines_ * bins_);
    kspec_ = DeviceBuffer<float>(2 * bins_);
    int length = static_cast<int>(L_);
    check_cufft(cufftPlanMany(&forward_, 1, &length, nullptr, 1, length, nullptr, 1, static_cast<int>(bins_), CUFFT_R2C,
                              static_cast<int>(lines_)),
                "cufftPlanMany R2C");
    check_cufft(cufftPlanMany(&inverse_, 1, &length, nullptr, 1, static_cast<int>(bins_), nullptr, 1, length, CUFFT_C2R,
                              static_cast<int>(lines_)),
                "cufftPlanMany C2R");
    check_cufft(cufftPlan1d(&taps_plan_, length, CUFFT_R2C, 1), "cufftPlan1d");
  }

  void fft_conv(const float* w0) {
    const int64_t n = shape_.length, values = shape_.values();
    auto* spec = reinterpret_cast<cufftComplex*>(spec_.data());
    launch(pad_kernel, one_thread_per_row(values), "pad_kernel", x_.data(), values, n, shape_.channels, L_, xpad_.data());
    check(cudaMemcpyAsync(kpad_.data(), taps_.data(), n * sizeof(float), cudaMemcpyDeviceToDevice), "taps -> kpad");
    check_cufft(cufftExecR2C(taps_plan_, kpad_.data(), reinterpret_cast<cufftComplex*>(kspec_.data())), "R2C taps");
    check_cufft(cufftExecR2C(forward_, xpad_.data(), spec), "R2C x");
    launch(pointwise_kernel, one_thread_per_row(lines_ * bins_), "pointwise_kernel", kspec_.data(), lines_ * bins_,
           bins_, 1.f / float(L_), spec_.data());
    check_cufft(cufftExecC2R(inverse_, spec, ypad_.data()), "C2R");
    launch(blend_kernel, one_thread_per_row(values), "blend_kernel", x_.data(), ypad_.data(), values, n,
           shape_.channels, L_, w0, out_.data());
  }

  VariantContext context_;
  bool device_taps_, fft_;
  conv::ConvShape shape_{};
  int64_t L_ = 0, bins_ = 0, lines_ = 0;
  std::vector<float> params_host_, taps_host_;
  DeviceBuffer<float> x_, params_, taps_, sum_, w0_, out_, xpad_, kpad_, ypad_, spec_, kspec_;
  cufftHandle forward_ = 0, inverse_ = 0, taps_plan_ = 0;
};

const VariantRegistration registration{
    conv::kWorkload, "cuda", {conv::kHostTaps, conv::kDeviceTaps, conv::kFftConv},
    [](const VariantContext& context) { return std::make_unique<LiorMemoryConvCuda>(context); }};

}  // namespace
}  // namespace pb::cuda_backend
