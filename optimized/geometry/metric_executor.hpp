#pragma once
// What the executor ladders of geometry/complex_metric and geometry/mamba_conjugate share
// (complex_metric_ladder.hpp, mamba_conjugate_ladder.hpp): moving HostArrays in and out of an
// executor's buffers (setup and outputs only: uncounted, blocking). The executor interface is
// that of backends/cuda/device_executor.cuh; KokkosExecutor (metric_executor-kokkos.hpp) and the
// tests' HostExecutor implement it too.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "backends/cuda/host_device.hpp"  // cuda_backend::Fill
#include "phasebench/arrays.hpp"

namespace pb::geometry_kernels {

/// A new buffer of `exec` holding `array` as floats.
template <typename Exec>
typename Exec::template Buffer<float> upload_array(Exec& exec, const HostArray& array) {
  const std::vector<float> values = array.to_floats();
  auto buffer = exec.template allocate<float>(array.numel());
  exec.upload(buffer.data(), values.data(), array.numel());
  return buffer;
}

/// The first product(shape) floats of `buffer` as a HostArray of `shape`.
template <typename Exec, typename Buffer>
HostArray download_array(Exec& exec, const Buffer& buffer, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::vector<float> values(static_cast<size_t>(count));
  exec.download(values.data(), buffer.data(), count);
  return HostArray::from_floats(shape, values.data(), count);
}

/// poison_outputs(): NaN into the first `count` floats of every output buffer a run has allocated,
/// so that an output left unwritten fails its check.
template <typename Exec, typename Buffer>
void poison_buffers(Exec& exec, std::initializer_list<Buffer*> outputs, int64_t count) {
  for (Buffer* out : outputs)
    if (out->data()) exec.for_each("geo.poison", count, cuda_backend::Fill{out->data(), std::numeric_limits<float>::quiet_NaN()});
}

}  // namespace pb::geometry_kernels
