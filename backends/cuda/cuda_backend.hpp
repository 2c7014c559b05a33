#pragma once
// The CUDA backend's helpers for variants: device availability, checked and counted launches,
// device buffers (plain or stream-ordered), pinned host buffers, streams, graphs, and the host
// reads that count as host syncs.
//
// Plain C++ against the CUDA runtime API (no <<<>>>), so it compiles with g++ and with nvcc. Every
// kernel launch, device allocation and device-to-host read of a variant goes through here, which
// is what feeds pb::counters: launches, device-side copies and graph launches count as ops,
// cudaMalloc/cudaMallocAsync bytes as allocations, and each wait for the device (a blocking
// device-to-host copy, a stream synchronization) as one host sync. device_executor.cuh builds
// on these to run kernel bodies on a stream of the variant's own.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "phasebench/variant.hpp"

namespace pb::cuda_backend {

/// Empty when a CUDA device can be used by this process; otherwise the runtime's own reason
/// ("cudaGetDeviceCount: CUDA driver version is insufficient ... (cudaErrorInsufficientDriver)")
/// or "no CUDA device". Asks the runtime once per process; later calls return the cached answer.
const std::string& device_unavailable_reason();
inline bool device_available() { return device_unavailable_reason().empty(); }

/// Every CUDA variant's support(): UNSUPPORTED on a device other than "cuda", SKIPPED with the
/// runtime's reason when no CUDA device can be used here, nothing when it can run.
inline std::optional<CannotRun> variant_support(const VariantContext& context) {
  if (context.device != "cuda")
    return CannotRun{CannotRun::Kind::Unsupported, "the cuda backend runs on device \"cuda\" only"};
  if (!device_available()) return CannotRun{CannotRun::Kind::Skipped, device_unavailable_reason()};
  return std::nullopt;
}

/// Throws std::runtime_error "<what>: <error text> (<error name>)" unless `status` is cudaSuccess.
void check(cudaError_t status, const char* what);

/// Grid and block of one launch (1-D: every kernel here walks a flat row index).
struct LaunchShape {
  unsigned grid = 1;
  unsigned block = 256;
};

/// Enough blocks of `block` threads for one thread per row.
LaunchShape one_thread_per_row(int64_t rows, unsigned block = 256);

/// Launches `kernel` (a __global__ function) on `stream` with `shared_bytes` of dynamic shared
/// memory and notes one dispatched op; checks the launch. Argument array as cudaLaunchKernel
/// takes it; use launch() or launch_on() below instead.
void launch_kernel_on(cudaStream_t stream, std::size_t shared_bytes, const void* kernel,
                      LaunchShape shape, void** arguments, const char* name);
/// The same on the legacy default stream, without dynamic shared memory.
void launch_kernel(const void* kernel, LaunchShape shape, void** arguments, const char* name);

/// Launches `kernel` on `stream` with `args` converted to its parameter types (what <<<>>>
/// does), counted.
template <typename... Params, typename... Args>
void launch_on(cudaStream_t stream, std::size_t shared_bytes, void (*kernel)(Params...),
               LaunchShape shape, const char* name, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "kernel argument count mismatch");
  std::tuple<Params...> converted{std::forward<Args>(args)...};
  std::apply(
      [&](auto&... param) {
        void* arguments[] = {static_cast<void*>(&param)..., nullptr};
        launch_kernel_on(stream, shared_bytes, reinterpret_cast<const void*>(kernel), shape,
                         arguments, name);
      },
      converted);
}

/// launch_on() the legacy default stream without dynamic shared memory.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), LaunchShape shape, const char* name, Args&&... args) {
  launch_on(nullptr, 0, kernel, shape, name, std::forward<Args>(args)...);
}

/// A stream of the variant's own, created non-blocking: it has no implicit ordering with the
/// legacy default stream, which is what makes stream capture on it legal. Everything a variant
/// issues on it is ordered; the harness's synchronize() (cudaDeviceSynchronize) waits for it
/// too. Move-only; construct one only once a device is known to be available.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// cudaMalloc that notes the bytes as allocated and throws on failure; the matching free (a no-op
/// for nullptr). Variants use DeviceBuffer rather than these.
void* device_allocate_bytes(std::size_t bytes);
void device_free_bytes(void* pointer) noexcept;
/// The stream-ordered pair (cudaMallocAsync / cudaFreeAsync from the device's default memory
/// pool): neither makes the host wait, unlike cudaFree. The memory may be used on `stream` after
/// the allocation, in stream order; the free happens after the work queued before it.
void* device_allocate_async(std::size_t bytes, cudaStream_t stream);
void device_free_async(void* pointer, cudaStream_t stream) noexcept;

/// Device memory for `count` elements of T, freed on destruction. Allocated with
/// device_allocate_bytes, or stream-ordered on `stream` (then freed on that stream, after the
/// work queued before the destruction). Move-only; move-assignment swaps, so the previous
/// memory is freed when the moved-from buffer is destroyed. Construct one only once a device is
/// known to be available.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count)
      : data_(static_cast<T*>(count ? device_allocate_bytes(count * sizeof(T)) : nullptr)),
        count_(count) {}
  DeviceBuffer(std::size_t count, cudaStream_t stream)
      : data_(static_cast<T*>(count ? device_allocate_async(count * sizeof(T), stream) : nullptr)),
        count_(count),
        stream_(stream),
        stream_ordered_(true) {}
  ~DeviceBuffer() {
    if (stream_ordered_) {
      device_free_async(data_, stream_);
    } else {
      device_free_bytes(data_);
    }
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        stream_(other.stream_),
        stream_ordered_(other.stream_ordered_) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(stream_, other.stream_);
    std::swap(stream_ordered_, other.stream_ordered_);
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
  cudaStream_t stream_ = nullptr;
  bool stream_ordered_ = false;
};

/// Page-locked host memory (cudaMallocHost): the device copies into it without the host waiting,
/// also from inside a CUDA graph. Not counted as device allocation. Move-only.
void* pinned_allocate_bytes(std::size_t bytes);
void pinned_free_bytes(void* pointer) noexcept;

template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count)
      : data_(static_cast<T*>(count ? pinned_allocate_bytes(count * sizeof(T)) : nullptr)),
        count_(count) {}
  ~PinnedBuffer() { pinned_free_bytes(data_); }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }

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

// ---- stream-ordered transfers (a variant's own Stream) -------------------------------------------

/// Device-to-device copy and zero fill queued on `stream`; each notes one dispatched op.
void copy_on(cudaStream_t stream, void* device_destination, const void* device_source,
             std::size_t bytes);
void zero_on(cudaStream_t stream, void* device_destination, std::size_t bytes);
/// Device-to-host copy queued on `stream` without waiting (into PinnedBuffer memory, e.g. from
/// inside a graph); the host may read the destination only after a wait. One dispatched op.
void copy_to_host_on(cudaStream_t stream, void* host_destination, const void* device_source,
                     std::size_t bytes);
/// Queues the copy, then waits for `stream`: the host reads a device value. One host sync.
void read_to_host_on(cudaStream_t stream, void* host_destination, const void* device_source,
                     std::size_t bytes);
/// Waits until everything queued on `stream` has finished. One host sync.
void wait_for(cudaStream_t stream);
/// setup() and outputs() transfers on `stream`, blocking and not counted (outside run()).
void upload_on(cudaStream_t stream, void* device_destination, const void* host_source,
               std::size_t bytes);
void download_on(cudaStream_t stream, void* host_destination, const void* device_source,
                 std::size_t bytes);

/// A CUDA graph captured from a stream and instantiated, replayed by launch(). Move-only.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  Graph& operator=(Graph&& other) noexcept {
    std::swap(graph_, other.graph_);
    std::swap(exec_, other.exec_);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Captures what `enqueue` issues on `stream` (thread-local capture mode) and instantiates it.
  /// Returns an empty string on success, else why capture failed (the stream is left usable and
  /// the runtime's error state cleared, so the caller can run eagerly instead).
  template <typename Enqueue>
  std::string capture(cudaStream_t stream, Enqueue&& enqueue);
  bool ready() const { return exec_ != nullptr; }
  /// Queues one replay on `stream`: one dispatched op.
  void launch(cudaStream_t stream) const;

 private:
  std::string begin(cudaStream_t stream);
  std::string end(cudaStream_t stream, const std::string& failure);

  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

template <typename Enqueue>
std::string Graph::capture(cudaStream_t stream, Enqueue&& enqueue) {
  if (std::string failure = begin(stream); !failure.empty()) return failure;
  std::string failure;
  try {
    enqueue();
  } catch (const std::exception& error) {
    failure = error.what();
  }
  return end(stream, failure);
}

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
