#pragma once
// HostExecutor: the executor interface of optimized/trainer2/trainer2_engine_ladders-cuda.hpp
// (the same one backends/cuda/device_executor.cuh implements on the GPU), run on the host, so a
// test runs the CUDA ladders and their kernel bodies over the whole index space without a device.
//
// Device memory is host memory. Elementwise ops run index by index; block ops block by block,
// every thread of a stage before the next stage (the barrier). `reverse` runs indices, blocks
// and the threads of each stage backwards: a body whose result depends on the order in which
// the threads of one launch run (a race on a GPU) then gives different bits. New memory is
// filled with NaN (ints: -1), as a reminder that cudaMalloc'd memory holds garbage.
// It counts what the device executor counts (launches, copies, bytes allocated, host syncs).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace pb::cuda_backend::testing {

class HostExecutor {
 public:
  template <typename T>
  class Buffer {
   public:
    Buffer() = default;
    explicit Buffer(int64_t count) : values_(static_cast<size_t>(count), garbage()) {}
    Buffer(Buffer&&) noexcept = default;  // move-only, as DeviceBuffer
    Buffer& operator=(Buffer&&) noexcept = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    T* data() const { return values_.empty() ? nullptr : values_.data(); }
    size_t size() const { return values_.size(); }

   private:
    static T garbage() {
      if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
        return std::numeric_limits<T>::quiet_NaN();
      } else {
        return T(-1);
      }
    }
    mutable std::vector<T> values_;
  };
  template <typename T>
  using HostBuffer = Buffer<T>;

  bool reverse = false;
  int64_t host_syncs = 0;
  int64_t launches = 0;
  int64_t copies = 0;  // device-side copies and fills
  int64_t bytes_allocated = 0;
  std::map<std::string, int64_t> launches_by_name;

  /// Zeroes the counters (between setup and the run a test measures).
  void reset_counters() {
    host_syncs = launches = copies = bytes_allocated = 0;
    launches_by_name.clear();
  }

  template <typename T>
  Buffer<T> allocate(int64_t count) {
    bytes_allocated += count * static_cast<int64_t>(sizeof(T));
    return Buffer<T>(count);
  }
  template <typename T>
  HostBuffer<T> allocate_host(int64_t count) {
    return HostBuffer<T>(count);
  }

  template <typename Op>
  void for_each(const char* name, int64_t count, const Op& op) {
    note_launch(name);
    for (int64_t i = 0; i < count; ++i) op(reverse ? count - 1 - i : i);
  }

  template <typename Op>
  void blocks(const char* name, const Op& op) {
    note_launch(name);
    const int64_t blocks = op.blocks();
    for (int64_t n = 0; n < blocks; ++n) {
      const int64_t block = reverse ? blocks - 1 - n : n;
      std::vector<float> shared(static_cast<size_t>(op.shared_floats()),
                                std::numeric_limits<float>::quiet_NaN());
      for (int stage = 0; stage < op.stages(); ++stage) {
        for (int t = 0; t < Op::kThreads; ++t)
          op.stage(stage, block, reverse ? Op::kThreads - 1 - t : t, shared.data());
      }
    }
  }

  template <typename T>
  void copy(T* destination, const T* source, int64_t count) {
    ++copies;
    std::copy(source, source + count, destination);
  }
  template <typename T>
  void zero(T* destination, int64_t count) {
    ++copies;
    std::fill(destination, destination + count, T(0));
  }
  template <typename T>
  void read(T* host, const T* device, int64_t count) {
    ++host_syncs;
    std::memcpy(host, device, static_cast<size_t>(count) * sizeof(T));
  }
  template <typename T>
  void copy_to_host(T* host, const T* device, int64_t count) {
    ++copies;
    std::memcpy(host, device, static_cast<size_t>(count) * sizeof(T));
  }
  void wait() { ++host_syncs; }

  template <typename T>
  void upload(T* device, const T* host, int64_t count) {
    std::memcpy(device, host, static_cast<size_t>(count) * sizeof(T));
  }
  template <typename T>
  void download(T* host, const T* device, int64_t count) {
    std::memcpy(host, device, static_cast<size_t>(count) * sizeof(T));
  }

 private:
  void note_launch(const char* name) {
    ++launches;
    ++launches_by_name[name];
  }
};

}  // namespace pb::cuda_backend::testing
