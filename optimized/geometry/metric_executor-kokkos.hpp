#pragma once
// KokkosExecutor: the executor interface of backends/cuda/device_executor.cuh on Kokkos's default
// execution space, so that the executor ladders of geometry/complex_metric and
// geometry/mamba_conjugate (complex_metric_ladder.hpp, mamba_conjugate_ladder.hpp) run as Kokkos
// kernels: for_each is a parallel_for over a 64-bit range (one dispatched op, counted by the
// backend's Kokkos Tools callbacks), allocate a View without initialization (bytes allocated,
// counted the same way), copy and zero are deep_copies on the execution space. Nothing here reads
// the device from the host inside run(): upload and download are for setup() and outputs().
// The ladders' kernel names are at most 15 characters, so the std::string label Kokkos takes is
// built without a heap allocation (the harness counts heap bytes allocated in run()).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backends/kokkos/host_vectorization.hpp"  // PB_KOKKOS_KERNELS_ON_HOST, host_cores_only
#include "backends/kokkos/kokkos_backend.hpp"
#include "phasebench/variant.hpp"

namespace pb::kokkos_backend {

class KokkosExecutor {
 public:
  template <typename T>
  class Buffer {
   public:
    Buffer() = default;
    explicit Buffer(int64_t count) : view_(uninitialized<DeviceView<T*>>("geo.buffer", count)) {}
    T* data() const { return view_.data(); }
    size_t size() const { return view_.span(); }

   private:
    DeviceView<T*> view_;
  };

  template <typename T>
  Buffer<T> allocate(int64_t count) {
    return Buffer<T>(count);
  }

  template <typename Op>
  void for_each(const char* name, int64_t count, const Op& op) {
    if (count > 0) Kokkos::parallel_for(std::string(name), RangePolicy(0, count), op);
  }

  template <typename T>
  void copy(T* destination, const T* source, int64_t count) {
    Kokkos::deep_copy(ExecSpace(), unmanaged(destination, count), Unmanaged<const T>(source, count));
  }
  template <typename T>
  void zero(T* destination, int64_t count) {
    Kokkos::deep_copy(ExecSpace(), unmanaged(destination, count), T(0));
  }

  /// setup() and outputs() only: blocking, uncounted.
  template <typename T>
  void upload(T* device, const T* host, int64_t count) {
    Kokkos::deep_copy(unmanaged(device, count), HostUnmanaged<const T>(host, count));
  }
  template <typename T>
  void download(T* host, const T* device, int64_t count) {
    Kokkos::fence();
    Kokkos::deep_copy(HostUnmanaged<T>(host, count), Unmanaged<const T>(device, count));
  }

 private:
  template <typename T>
  using Unmanaged = Kokkos::View<T*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  template <typename T>
  using HostUnmanaged = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  template <typename T>
  static Unmanaged<T> unmanaged(T* data, int64_t count) {
    return Unmanaged<T>(data, count);
  }
};

/// The Variant of an executor ladder (Ladder<KokkosExecutor>: constructed from the executor, the
/// inputs and the plan in setup(); run(), poison_outputs(), outputs()).
template <template <typename> class Ladder>
class KokkosLadderVariant final : public Variant {
 public:
  explicit KokkosLadderVariant(const VariantContext& context) : plan_(context.plan) {}
  void setup(const ArrayMap& in) override { ladder_ = std::make_unique<Ladder<KokkosExecutor>>(exec_, in, plan_); }
  void poison_outputs() override {
    ladder_->poison_outputs();
    Kokkos::fence();
  }
  void run() override { ladder_->run(); }
  ArrayMap outputs() override { return ladder_->outputs(); }

 private:
  PhasePlan plan_;
  KokkosExecutor exec_;
  std::unique_ptr<Ladder<KokkosExecutor>> ladder_;
};

template <template <typename> class Ladder>
VariantFactory kokkos_ladder_factory() {
  return [](const VariantContext& context) { return std::make_unique<KokkosLadderVariant<Ladder>>(context); };
}

/// The ladder's factory for the phases up to the ladder's last; the phases with `optimization` in
/// effect (one written for the host beyond the shared ladder) get `Beyond`, default-constructed.
template <template <typename> class Ladder, typename Beyond>
VariantFactory kokkos_ladder_factory_beyond(const char* optimization) {
  return [optimization](const VariantContext& context) -> std::unique_ptr<Variant> {
    if (context.has(optimization)) return std::make_unique<Beyond>();
    return std::make_unique<KokkosLadderVariant<Ladder>>(context);
  };
}

}  // namespace pb::kokkos_backend
