// trainer2/rotor_update on Kokkos (default execution space): the rotor part of the manual update
// alone, from the input θ every run. Math: reference/trainer2/trainer2.hpp rotor_update; kernels
// (the original per-pair loop with its host reads, or one kernel with vectorized_rotor):
// trainer2_engine-kokkos.hpp (RotorUpdate). calling_thread_rotor: the copy of θ and the
// 8 slot updates in one kernel on Kokkos::Serial, the calling thread: the vectorized kernel's two
// parallel regions (the copy and the update) each fork and join every thread around work that
// one thread does in a fraction of that (docs/trainer2.md, "The limit of rotor_update").
//
//   for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//     θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;   then every θ wrapped to [−π, π)

#include <memory>
#include <optional>
#include <string>

#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::kokkos_backend {
namespace {

namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

class RotorUpdateKokkos final : public Variant {
 public:
  explicit RotorUpdateKokkos(const VariantContext& context)
      : vectorized_(context.has(t2::kVectorizedRotor)), calling_thread_(context.has(t2::kCallingThreadRotor)) {}

  // The calling thread must be able to reach the Views: a host memory space and a Serial space.
  std::optional<CannotRun> support() const override {
    if (!calling_thread_) return std::nullopt;
#ifdef KOKKOS_ENABLE_SERIAL
    if (Kokkos::SpaceAccessibility<Kokkos::Serial, k2::Vec::memory_space>::accessible) return std::nullopt;
    return CannotRun{CannotRun::Kind::Unsupported,
                     std::string("the angles live in ") + k2::Vec::memory_space::name() +
                         ", which the calling thread (Kokkos::Serial) cannot reach: the update belongs on the device"};
#else
    return CannotRun{CannotRun::Kind::Unsupported, "this Kokkos has no Serial execution space (KOKKOS_ENABLE_SERIAL)"};
#endif
  }

  void setup(const ArrayMap& in) override {
    u_ = to_device<k2::Vec>("u", require(in, "u"), k2::kDim);
    theta_in_ = to_device<k2::Vec>("theta_in", require(in, "theta"), k2::kSlots);
    lior_diff_ = to_device<k2::Cell>("lior_diff", require(in, "lior_diff"));
    theta_ = k2::Vec("theta", k2::kSlots);
    rotor_update_ = k2::RotorUpdate(vectorized_);
  }

  void poison_outputs() override {
    fill_nan(theta_);
    Kokkos::fence();
  }

  void run() override {
    if (calling_thread_) return update_on_calling_thread();
    Kokkos::deep_copy(ExecSpace(), theta_, theta_in_);  // every run updates the input angles
    rotor_update_(u_, lior_diff_, theta_);
  }

  ArrayMap outputs() override {
    const std::vector<float> theta = to_host_vector(theta_);
    return {{"theta", HostArray::from_floats({k2::kSlots}, theta.data(), k2::kSlots)}};
  }

 private:
  // calling_thread_rotor: θ from the input angles, slot by slot, in one Serial kernel (support()
  // has checked that it can reach them). The kernel captures unmanaged Views: copying a managed
  // one into the functor counts its references atomically, and four of those cost about as much
  // as the eight updates (perf: 5% of the run against 12% in libm).
  void update_on_calling_thread() {
#ifdef KOKKOS_ENABLE_SERIAL
    const Unmanaged<float*> theta = theta_;
    const Unmanaged<const float*> u = u_, theta_in = theta_in_;
    const Unmanaged<const float> lior_diff = lior_diff_;
    Kokkos::parallel_for(
        kCallingThreadLabel, Kokkos::RangePolicy<Kokkos::Serial>(0, 1), KOKKOS_LAMBDA(int64_t) {
          for (int k = 0; k < k2::kSlots; ++k) theta(k) = k2::updated_rotor_slot(k, u, lior_diff(), theta_in(k));
        });
#endif
  }

  // A std::string made once: from a literal, parallel_for would build (and allocate) one per call.
  inline static const std::string kCallingThreadLabel = "trainer2/rotor/calling_thread_update";

  template <class DataType>
  using Unmanaged = Kokkos::View<DataType, Kokkos::LayoutRight, k2::Vec::memory_space, Kokkos::MemoryUnmanaged>;

  bool vectorized_, calling_thread_;
  k2::Vec u_, theta_in_, theta_;
  k2::Cell lior_diff_;
  k2::RotorUpdate rotor_update_;
};

const VariantRegistration registration{
    "trainer2/rotor_update", "kokkos", {t2::kBaseline, t2::kVectorizedRotor, t2::kCallingThreadRotor},
    [](const VariantContext& context) { return std::make_unique<RotorUpdateKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
