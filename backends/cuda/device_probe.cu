// The GPU roofline probe's kernels, timing and cuBLAS GEMM (device_probe.hpp says what each
// measures and how it is counted). Never run on a GPU in this project yet: built and linked here,
// its no-device path tested (tests/cuda/device_probe_test.cpp).

#include "backends/cuda/device_probe.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "backends/cuda/cublas_gemm.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/gemm.hpp"

namespace pb::cuda_backend::probe {
namespace {

// ---- kernels ------------------------------------------------------------------------------------

__global__ void fill_kernel(float* data, float value, int64_t floats) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < floats; i += stride) data[i] = value;
}

// `sweeps` triads over all `floats` elements, grid-stride; sweep s rotated by sweep_offset(s).
// Threads of later sweeps write elements that other threads wrote before, with the same value.
__global__ void triad_kernel(float* a, const float* b, const float* c, float scalar, int64_t floats, int sweeps) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    const int64_t offset = sweep_offset(sweep, blockDim.x, floats);
    for (int64_t position = first; position < floats; position += stride) {
      const int64_t i = rotated_index(position, offset, floats);
      a[i] = triad_value(b[i], c[i], scalar);
    }
  }
}

__global__ void fma_kernel(float* out, float multiplier, float addend, int steps) {
  const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  out[thread] = fma_chains(static_cast<float>(threadIdx.x & 31u), multiplier, addend, steps);
}

// ---- timing -------------------------------------------------------------------------------------

class Event {
 public:
  Event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// The shortest of kTimedLaunches runs of `enqueue` on `stream`, in seconds, after one warm-up run
// (first-touch of the pages, cuBLAS's kernel choice).
template <typename Enqueue>
double best_seconds(cudaStream_t stream, Enqueue&& enqueue) {
  enqueue();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const Event start, stop;
  float best_ms = 1e30f;
  for (int launch = 0; launch < kTimedLaunches; ++launch) {
    check(cudaEventRecord(start.get(), stream), "cudaEventRecord");
    enqueue();
    check(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    best_ms = std::min(best_ms, ms);
  }
  return best_ms / 1e3;
}

// Enough blocks of kBlock threads to fill every SM (2048 threads each).
LaunchShape full_device(const cudaDeviceProp& properties) {
  return {static_cast<unsigned>(properties.multiProcessorCount) * (2048 / kBlock), kBlock};
}

std::string mib(double bytes) { return std::to_string(static_cast<long long>(bytes / (1 << 20))) + " MiB"; }

// ---- the four ceilings ----------------------------------------------------------------------------

// GB/s of `sweeps` triads per launch over three arrays of `floats` floats; throws when the
// triad's result is wrong.
double triad_gb_per_s(const cudaDeviceProp& properties, cudaStream_t stream, int64_t floats, int sweeps) {
  const DeviceBuffer<float> a(floats), b(floats), c(floats);
  const LaunchShape shape = full_device(properties);
  launch_on(stream, 0, fill_kernel, shape, "probe fill", b.data(), 1.0f, floats);
  launch_on(stream, 0, fill_kernel, shape, "probe fill", c.data(), 2.0f, floats);
  const double seconds = best_seconds(stream, [&] {
    launch_on(stream, 0, triad_kernel, shape, "probe triad", a.data(), b.data(), c.data(), 3.0f, floats, sweeps);
  });
  float last = 0;
  download_on(stream, &last, a.data() + floats - 1, sizeof last);
  if (last != triad_value(1.0f, 2.0f, 3.0f)) throw std::logic_error("the probe's triad computed a wrong value");
  return triad_bytes(floats, sweeps) / seconds / 1e9;
}

void measure_memory(DeviceCeilings& ceilings, const cudaDeviceProp& properties, cudaStream_t stream) {
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const double l2 = properties.l2CacheSize;
  const int64_t floats = memory_array_floats(l2, static_cast<double>(free_bytes));
  if (floats == 0)
    throw std::runtime_error("too little free device memory (" + mib(double(free_bytes)) +
                             ") for arrays larger than the L2 (" + mib(l2) + ")");
  ceilings.bandwidth_gb_per_s = triad_gb_per_s(properties, stream, floats, 1);
  ceilings.bandwidth_method = "triad a = b + s*c, 3 arrays of " + mib(double(floats) * sizeof(float)) +
                              " (L2 " + mib(l2) + "), best of " + std::to_string(kTimedLaunches) + " launches";
  const int64_t l2_floats = l2_array_floats(l2);
  if (l2_floats == 0) return;
  ceilings.l2_bytes = l2;
  ceilings.l2_gb_per_s = triad_gb_per_s(properties, stream, l2_floats, l2_sweeps(l2_floats));
  ceilings.bandwidth_method += "; L2: the same triad over 3 arrays of " + mib(double(l2_floats) * sizeof(float)) +
                               ", " + std::to_string(l2_sweeps(l2_floats)) + " rotated sweeps per launch";
}

void measure_fp32(DeviceCeilings& ceilings, const cudaDeviceProp& properties, cudaStream_t stream) {
  const LaunchShape shape{static_cast<unsigned>(properties.multiProcessorCount) * kFmaBlocksPerSm, kBlock};
  const int64_t threads = int64_t(shape.grid) * shape.block;
  const DeviceBuffer<float> out(threads);
  const double seconds = best_seconds(stream, [&] {
    launch_on(stream, 0, fma_kernel, shape, "probe fma", out.data(), 0.9999f, 1e-4f, kFmaSteps);
  });
  ceilings.fp32_peak_gflop_per_s = fma_flops(threads, kFmaSteps) / seconds / 1e9;
  ceilings.fp32_method = std::to_string(kFmaChains) + " independent fp32 FMA chains per thread, " +
                         std::to_string(kFmaBlocksPerSm) + " blocks of " + std::to_string(kBlock) +
                         " threads per SM, best of " + std::to_string(kTimedLaunches) + " launches";
}

// The bf16 peak alone may fail (cuBLAS without bf16 on an old GPU): it is then left unmeasured.
void measure_bf16(DeviceCeilings& ceilings, cudaStream_t stream) {
  const std::string shape_text = "cuBLAS bf16 GEMM, fp32 accumulation and output, M=N=K=" + std::to_string(kGemmSize);
  try {
    const size_t elements = size_t(kGemmSize) * kGemmSize;
    const DeviceBuffer<Bf16> a(elements), b(elements);
    const DeviceBuffer<float> c(elements);
    // 0x3C3C: every operand the bf16 0.0115 (finite, not zero: zeros would spare the power budget).
    check(cudaMemsetAsync(a.data(), 0x3C, a.bytes(), stream), "cudaMemsetAsync");
    check(cudaMemsetAsync(b.data(), 0x3C, b.bytes(), stream), "cudaMemsetAsync");
    const CublasGemm gemm(stream);
    GemmShape shape;
    shape.m = shape.n = shape.k = shape.lda = shape.ldb = shape.ldc = kGemmSize;
    const double seconds = best_seconds(stream, [&] { gemm(shape, a.data(), b.data(), c.data()); });
    ceilings.bf16_peak_gflop_per_s = gemm_flops(kGemmSize, kGemmSize, kGemmSize) / seconds / 1e9;
    ceilings.bf16_method = shape_text + ", best of " + std::to_string(kTimedLaunches);
  } catch (const std::exception& error) {
    cudaGetLastError();
    ceilings.bf16_method = "not measured (" + shape_text + "): " + error.what();
  }
}

}  // namespace

DeviceIdentity identify_device() {
  DeviceIdentity identity;
  identity.probe_method = kProbeMethod;
  identity.why_not = device_unavailable_reason();
  if (!identity.why_not.empty()) return identity;
  cudaDeviceProp properties{};
  if (const cudaError_t status = cudaGetDeviceProperties(&properties, 0); status != cudaSuccess) {
    identity.why_not = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(status);
    return identity;
  }
  unsigned char uuid[16];
  std::memcpy(uuid, properties.uuid.bytes, sizeof uuid);
  std::string unique = uuid_text(uuid);
  if (unique.empty()) {  // no UUID: the PCI address is unique on this machine
    char pci[32];
    std::snprintf(pci, sizeof pci, "pci-%04x:%02x:%02x", properties.pciDomainID, properties.pciBusID,
                  properties.pciDeviceID);
    unique = pci;
  }
  identity.gpu = properties.name;
  identity.identity = identity.gpu + " " + unique;
  return identity;
}

DeviceProbe measure_ceilings() {
  const DeviceIdentity identity = identify_device();
  if (!identity.why_not.empty()) return {std::nullopt, identity.why_not};
  try {
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
    const Stream stream;
    DeviceCeilings ceilings;
    ceilings.device = identity;
    measure_memory(ceilings, properties, stream.get());
    measure_fp32(ceilings, properties, stream.get());
    measure_bf16(ceilings, stream.get());
    return {ceilings, ""};
  } catch (const std::exception& error) {
    cudaGetLastError();  // not carried into the variants
    return {std::nullopt, std::string("the GPU probe failed: ") + error.what()};
  }
}

}  // namespace pb::cuda_backend::probe
