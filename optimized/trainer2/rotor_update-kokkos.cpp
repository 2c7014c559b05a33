// trainer2/rotor_update on Kokkos (default execution space): the rotor part of the manual update
// alone, from the input θ every run. Math: reference/trainer2/trainer2.hpp rotor_update; kernels
// (the original per-pair loop with its host reads, or one kernel with vectorized_rotor):
// trainer2_engine-kokkos.hpp (RotorUpdate).
//
//   for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//     θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;   then every θ wrapped to [−π, π)

#include <memory>

#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::kokkos_backend {
namespace {

namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

class RotorUpdateKokkos final : public Variant {
 public:
  explicit RotorUpdateKokkos(const VariantContext& context) : vectorized_(context.has(t2::kVectorizedRotor)) {}

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
    Kokkos::deep_copy(ExecSpace(), theta_, theta_in_);  // every run updates the input angles
    rotor_update_(u_, lior_diff_, theta_);
  }

  ArrayMap outputs() override {
    const std::vector<float> theta = to_host_vector(theta_);
    return {{"theta", HostArray::from_floats({k2::kSlots}, theta.data(), k2::kSlots)}};
  }

 private:
  bool vectorized_;
  k2::Vec u_, theta_in_, theta_;
  k2::Cell lior_diff_;
  k2::RotorUpdate rotor_update_;
};

const VariantRegistration registration{
    "trainer2/rotor_update", "kokkos", {t2::kBaseline, t2::kVectorizedRotor},
    [](const VariantContext& context) { return std::make_unique<RotorUpdateKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
