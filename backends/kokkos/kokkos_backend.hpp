#pragma once
// Kokkos backend glue shared by the Kokkos variants (optimized/<suite>/<workload>-kokkos.cpp).
//
// Every kernel targets Kokkos::DefaultExecutionSpace and its memory space: Debian's Kokkos is
// Serial only, but the same source runs in parallel under a user's OpenMP, Threads or CUDA
// Kokkos. The host reads device values only through the helpers below, each of which counts one
// host sync (pb::counters), so a variant cannot read a device value without it being counted.
// Dispatched kernels and allocations are counted by Kokkos Tools callbacks that the backend
// installs in start_counting() (kokkos_backend.cpp).

#include <cstdint>
#include <string>

#include <Kokkos_Core.hpp>

#include "phasebench/counters.hpp"

namespace pb::kokkos_backend {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
/// A View in the memory the kernels run on.
template <class DataType>
using DeviceView = Kokkos::View<DataType, MemSpace>;
/// A 1-D index range over the default execution space, with 64-bit indices.
using RangePolicy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<int64_t>>;

/// True when the default execution space is not a host space (CUDA, HIP, SYCL, ...).
bool device_is_gpu();
/// The device name variants and result rows use: "cpu" for host spaces (Serial, OpenMP,
/// Threads), else the execution space's name in lower case ("cuda", "hip", "sycl").
std::string device_name();

/// sqrt callable in kernels on every execution space (Kokkos 3.4 has it in Experimental only).
template <class Scalar>
KOKKOS_INLINE_FUNCTION Scalar device_sqrt(Scalar value) {
#if KOKKOS_VERSION >= 30700
  return Kokkos::sqrt(value);
#else
  return Kokkos::Experimental::sqrt(value);
#endif
}

/// The math functions callable in kernels on every execution space: Kokkos 3.4 has them in
/// Kokkos::Experimental only, Kokkos >= 3.7 in Kokkos (use as device_math::cos(x)).
#if KOKKOS_VERSION >= 30700
namespace device_math = ::Kokkos;
#else
namespace device_math = ::Kokkos::Experimental;
#endif

/// Waits for the device, then copies `device` into `host` (a mirror made in setup(), so run()
/// allocates nothing). One host sync.
template <class HostView, class DeviceViewType>
void copy_to_host(const HostView& host, const DeviceViewType& device) {
  Kokkos::fence();
  Kokkos::deep_copy(host, device);
  pb::counters::note_host_sync();
}

/// Element `index` of the 1-D `device` View, read through `host_cell` (a rank-0 host View made in
/// setup()): the host waits for the device and reads one value, as `tensor[i].item()` does. One
/// host sync.
template <class HostCell, class DeviceViewType>
typename HostCell::value_type read_element(const HostCell& host_cell, const DeviceViewType& device,
                                           int64_t index) {
  copy_to_host(host_cell, Kokkos::subview(device, index));
  return host_cell();
}

/// A host mirror holding the current values of `device`. One host sync. It allocates the mirror
/// when the memory space is not host-accessible: inside run(), prefer copy_to_host() into a
/// mirror made in setup().
template <class DeviceViewType>
auto read_to_host(const DeviceViewType& device) {
  auto host = Kokkos::create_mirror_view(device);
  copy_to_host(host, device);
  return host;
}

/// parallel_reduce over [0, count) into a host scalar. Kokkos blocks until the result is on the
/// host, so this is a host sync, counted once. `label` is a std::string the caller keeps, so no
/// temporary string is built per call.
template <class Value, class Functor>
Value reduce_to_host(const std::string& label, int64_t count, const Functor& functor) {
  Value result{};
  Kokkos::parallel_reduce(label, RangePolicy(0, count), functor, result);
  pb::counters::note_host_sync();
  return result;
}

/// A host copy of `device` for Variant::outputs(), which is untimed and outside the iteration
/// the counters describe: not counted.
template <class DeviceViewType>
auto copy_for_outputs(const DeviceViewType& device) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device);
}

}  // namespace pb::kokkos_backend
