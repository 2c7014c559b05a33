#pragma once
// DeviceExecutor: runs kernel bodies ("ops") on the GPU, on one stream of its own. nvcc only.
//
// An op is a small struct of pointers and sizes whose per-thread work is a PB_HOST_DEVICE member
// (see backends/cuda/host_device.hpp), so the same op runs on the host in the tests
// (tests/cuda/host_executor.hpp, the same interface) and on the device here. Two kinds:
//
//   elementwise op: `void operator()(int64_t index) const`, run for every index < count by
//                   for_each(): one thread per index, blocks of 256.
//   block op:       `static constexpr int kThreads`, `int64_t blocks() const`,
//                   `int64_t shared_floats() const`, `int stages() const`,
//                   `void stage(int stage, int64_t block, int thread, float* shared) const`,
//                   run by blocks(): every thread of a block runs stage 0, then all meet at a
//                   barrier, then stage 1, ...; `shared` is the block's shared memory. Within a
//                   stage no thread may read what another thread of the block writes in it.
//
// Every member that queues work is ordered on the stream and goes through the counted helpers of
// cuda_backend.hpp (launches and copies are ops, stream-ordered allocations are bytes allocated,
// read() and wait() are host syncs). Graph capture works on the stream (Graph in
// cuda_backend.hpp): everything but read(), wait(), upload() and download() may be captured.

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>

#include "backends/cuda/cuda_backend.hpp"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend {

template <typename Op>
__global__ void for_each_kernel(Op op, int64_t count) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index < count) op(index);
}

template <typename Op>
__global__ void __launch_bounds__(Op::kThreads) block_kernel(Op op) {
  extern __shared__ float shared[];
  const int stages = op.stages();
  for (int stage = 0; stage < stages; ++stage) {
    op.stage(stage, static_cast<int64_t>(blockIdx.x), static_cast<int>(threadIdx.x), shared);
    __syncthreads();
  }
}

class DeviceExecutor {
 public:
  template <typename T>
  using Buffer = DeviceBuffer<T>;
  template <typename T>
  using HostBuffer = PinnedBuffer<T>;

  cudaStream_t stream() const { return stream_.get(); }

  /// Device memory, stream-ordered on this executor's stream (no host wait to allocate or free).
  template <typename T>
  Buffer<T> allocate(int64_t count) {
    return Buffer<T>(static_cast<std::size_t>(count), stream());
  }
  template <typename T>
  HostBuffer<T> allocate_host(int64_t count) {
    return HostBuffer<T>(static_cast<std::size_t>(count));
  }

  template <typename Op>
  void for_each(const char* name, int64_t count, const Op& op) {
    if (count <= 0) return;
    launch_on(stream(), 0, for_each_kernel<Op>, one_thread_per_row(count), name, op, count);
  }

  template <typename Op>
  void blocks(const char* name, const Op& op) {
    const LaunchShape shape{static_cast<unsigned>(op.blocks()), static_cast<unsigned>(Op::kThreads)};
    launch_on(stream(), static_cast<std::size_t>(op.shared_floats()) * sizeof(float),
              block_kernel<Op>, shape, name, op);
  }

  template <typename T>
  void copy(T* destination, const T* source, int64_t count) {
    copy_on(stream(), destination, source, bytes<T>(count));
  }
  template <typename T>
  void zero(T* destination, int64_t count) {
    zero_on(stream(), destination, bytes<T>(count));
  }
  /// The host reads device values: waits for the stream. One host sync.
  template <typename T>
  void read(T* host, const T* device, int64_t count) {
    read_to_host_on(stream(), host, device, bytes<T>(count));
  }
  /// Queues a copy into a HostBuffer without waiting; read it after wait().
  template <typename T>
  void copy_to_host(T* host, const T* device, int64_t count) {
    copy_to_host_on(stream(), host, device, bytes<T>(count));
  }
  void wait() { wait_for(stream()); }

  /// setup() and outputs() only: blocking, uncounted.
  template <typename T>
  void upload(T* device, const T* host, int64_t count) {
    upload_on(stream(), device, host, bytes<T>(count));
  }
  template <typename T>
  void download(T* host, const T* device, int64_t count) {
    download_on(stream(), host, device, bytes<T>(count));
  }

 private:
  template <typename T>
  static std::size_t bytes(int64_t count) {
    return static_cast<std::size_t>(count) * sizeof(T);
  }

  Stream stream_;
};

/// A variant's graph: `warm_up` runs once eagerly (kernels loaded, every buffer touched, library
/// heuristics chosen), then what `enqueue` issues on the executor's stream is captured into
/// `graph`. When capture fails the variant says why on stderr and runs eagerly (graph not ready).
template <typename WarmUp, typename Enqueue>
void capture_after_warm_up(DeviceExecutor& executor, Graph& graph, const VariantContext& context, WarmUp&& warm_up,
                           Enqueue&& enqueue) {
  warm_up();
  executor.wait();
  const std::string failure = graph.capture(executor.stream(), std::forward<Enqueue>(enqueue));
  if (!failure.empty()) {
    std::cerr << "phasebench: " + context.workload->full_name() + "/cuda phase " + std::to_string(context.phase) +
                     ": CUDA graph capture failed (" + failure + "); running eagerly\n";
  }
}

}  // namespace pb::cuda_backend
