#pragma once
// Kokkos backend glue shared by the Kokkos variants (optimized/<suite>/<workload>-kokkos.cpp and
// the suites' engines): the views and policies, the counted host reads, and the setup helpers
// every variant uses to allocate, fill, copy to the device and poison its Views.
//
// Every kernel targets Kokkos::DefaultExecutionSpace and its memory space: Debian's Kokkos is
// Serial only, but the same source runs in parallel under a user's OpenMP, Threads or CUDA
// Kokkos. The host reads device values only through the helpers below, each of which counts one
// host sync (pb::counters), so a variant cannot read a device value without it being counted.
// Dispatched kernels and allocations are counted by Kokkos Tools callbacks that the backend
// installs in start_counting() (kokkos_backend.cpp).

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <Kokkos_Core.hpp>

#include "phasebench/arrays.hpp"
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

/// A contiguous device View's values in order, for Variant::outputs() (untimed, not counted).
template <class DeviceViewType>
std::vector<typename DeviceViewType::non_const_value_type> to_host_vector(const DeviceViewType& device) {
  const auto host = copy_for_outputs(device);
  return {host.data(), host.data() + host.span()};
}

// ---- setup and poisoning: allocate, fill (not timed, not counted) -----------------------------------

/// A fresh View whose contents the next kernel overwrites (as a tensor op allocates its result).
template <class ViewType, class... Extents>
ViewType uninitialized(const std::string& label, Extents... extents) {
  return ViewType(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), extents...);
}

/// A new device View of `extents` whose element at row-major position i is value_at(i): filled
/// in a host mirror, then copied (setup only). Filled through the View's own indexing, so a
/// rank-2 View may have any layout (LayoutLeft on CUDA for coalesced row access).
template <class ViewType, class ValueAt, class... Extents>
ViewType filled_on_device(const std::string& label, const ValueAt& value_at, Extents... extents) {
  static_assert(ViewType::rank <= 2 || std::is_same<typename ViewType::array_layout, Kokkos::LayoutRight>::value,
                "filled_on_device: a View of rank > 2 must be row-major");
  const ViewType device = uninitialized<ViewType>(label, extents...);
  const auto host = Kokkos::create_mirror_view(device);
  if constexpr (ViewType::rank == 2) {
    const int64_t rows = host.extent(0), cols = host.extent(1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) host(r, c) = value_at(r * cols + c);
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(host.span()); ++i) host.data()[i] = value_at(i);
  }
  Kokkos::deep_copy(device, host);
  return device;
}

/// A new device View of `extents` holding `array`'s values converted to its value type (setup
/// only). Throws when the counts differ.
template <class ViewType, class... Extents>
ViewType to_device(const std::string& label, const HostArray& array, Extents... extents) {
  using Value = typename ViewType::non_const_value_type;
  const int64_t expected = (int64_t{1} * ... * static_cast<int64_t>(extents));
  if (expected != array.numel())
    throw std::invalid_argument("kokkos: " + label + " has " + std::to_string(array.numel()) + " values, expected " +
                                std::to_string(expected));
  return filled_on_device<ViewType>(
      label, [&](int64_t i) { return static_cast<Value>(array.values[i]); }, extents...);
}

/// NaN into every element of `view` when it is allocated (poison_outputs(); blocks).
template <class ViewType>
void fill_nan(const ViewType& view) {
  using Value = typename ViewType::non_const_value_type;
  if (view.is_allocated()) Kokkos::deep_copy(view, std::numeric_limits<Value>::quiet_NaN());
}

}  // namespace pb::kokkos_backend
