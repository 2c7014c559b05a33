#pragma once
// The CUDA backend's helpers for variants: device availability, checked and counted launches,
// device buffers, and the host reads that count as host syncs.
//
// Plain C++ against the CUDA runtime API (no <<<>>>), so it compiles with g++ and with nvcc. Every
// kernel launch, device allocation and device-to-host read of a variant goes through here, which
// is what feeds pb::counters: launches count as ops, cudaMalloc bytes as allocations, and each
// blocking device-to-host copy as one host sync.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

namespace pb::cuda_backend {

/// Empty when a CUDA device can be used by this process; otherwise the runtime's own reason
/// ("cudaGetDeviceCount: CUDA driver version is insufficient ... (cudaErrorInsufficientDriver)")
/// or "no CUDA device". Asks the runtime once per process; later calls return the cached answer.
const std::string& device_unavailable_reason();
inline bool device_available() { return device_unavailable_reason().empty(); }

/// Throws std::runtime_error "<what>: <error text> (<error name>)" unless `status` is cudaSuccess.
void check(cudaError_t status, const char* what);

/// Grid and block of one launch (1-D: every kernel here walks a flat row index).
struct LaunchShape {
  unsigned grid = 1;
  unsigned block = 256;
};

/// Enough blocks of `block` threads for one thread per row.
LaunchShape one_thread_per_row(int64_t rows, unsigned block = 256);

/// Launches `kernel` (a __global__ function) and notes one dispatched op; checks the launch.
/// Argument array as cudaLaunchKernel takes it; use launch() below instead.
void launch_kernel(const void* kernel, LaunchShape shape, void** arguments, const char* name);

/// Launches `kernel` with `args` converted to its parameter types (what <<<>>> does), counted.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), LaunchShape shape, const char* name, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel argument count mismatch");
  std::tuple<Params...> converted{std::forward<Args>(args)...};
  std::apply(
      [&](auto&... param) {
        void* arguments[] = {static_cast<void*>(&param)..., nullptr};
        launch_kernel(reinterpret_cast<const void*>(kernel), shape, arguments, name);
      },
      converted);
}

/// cudaMalloc that notes the bytes as allocated and throws on failure; the matching free (a no-op
/// for nullptr). Variants use DeviceBuffer rather than these.
void* device_allocate_bytes(std::size_t bytes);
void device_free_bytes(void* pointer) noexcept;

/// Device memory for `count` elements of T, allocated with device_allocate_bytes and freed on
/// destruction. Move-only. Construct one only once a device is known to be available.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count)
      : data_(static_cast<T*>(device_allocate_bytes(count * sizeof(T)))), count_(count) {}
  ~DeviceBuffer() { device_free_bytes(data_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// Host-to-device copy for setup() (blocking, not counted: setup is outside the timed loop).
void copy_to_device(void* device_destination, const void* host_source, std::size_t bytes);
/// Blocking device-to-host copy: the host waits for all queued work and reads the result.
/// Notes one host sync.
void read_to_host(void* host_destination, const void* device_source, std::size_t bytes);
/// Fills device memory with all-ones bytes: every float becomes 0xFFFFFFFF, a NaN, so an
/// output a kernel fails to write is caught (poison_outputs()).
void fill_with_nan(void* device_pointer, std::size_t bytes);

template <typename T>
void copy_to_device(DeviceBuffer<T>& destination, const T* host_source, std::size_t count) {
  copy_to_device(destination.data(), host_source, count * sizeof(T));
}
template <typename T>
void read_to_host(T* host_destination, const DeviceBuffer<T>& source, std::size_t count) {
  read_to_host(host_destination, source.data(), count * sizeof(T));
}
template <typename T>
void fill_with_nan(DeviceBuffer<T>& buffer) {
  fill_with_nan(buffer.data(), buffer.bytes());
}

}  // namespace pb::cuda_backend
