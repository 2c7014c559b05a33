// trainer2/rotor_update on Kokkos (default execution space): the rotor part of the manual update
// alone, from the input θ every run. Math: reference/trainer2/trainer2.hpp rotor_update; phase
// catalog: suites/trainer2/rotor_update.cpp; kernels: trainer2-kokkos.hpp.
//
//   for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//     θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;   then every θ wrapped to [−π, π)
//
// The ladder:
//   0 baseline          the original loop: per pair the host reads i and j (from the device
//                       pair table) and u_i and u_j one at a time, 4 host syncs per pair (24 per
//                       run), computes atan2 and r, and launches a one-element update; then one
//                       wrap kernel. Ops: the θ reset, 24 reads, up to 6 updates, the wrap.
//   2 vectorized_rotor  one kernel, one thread per angle slot: gather u_i, u_j, update, wrap;
//                       no host reads. Ops: the θ reset and the kernel.

#include <memory>

#include "optimized/trainer2/trainer2-kokkos.hpp"
#include "phasebench/variant.hpp"

namespace pb::kokkos_backend {
namespace {

namespace k2 = pb::kokkos_backend::trainer2;

class RotorUpdateKokkos final : public Variant {
 public:
  explicit RotorUpdateKokkos(int phase) : phase_(phase) {}

  void setup(const ArrayMap& in) override {
    u_ = k2::to_device<k2::Vec>("u", require(in, "u"), k2::kDim);
    theta_in_ = k2::to_device<k2::Vec>("theta_in", require(in, "theta"), k2::kSlots);
    lior_diff_ = k2::to_device<k2::Cell>("lior_diff", require(in, "lior_diff"));
    theta_ = k2::Vec("theta", k2::kSlots);
    if (phase_ < 2) {
      pairs_ = k2::rotor_pair_indices();
      index_cell_ = k2::HostIndexCell("pair_index");
      value_cell_ = k2::HostCell("u_value");
    }
  }

  void poison_outputs() override {
    k2::fill_nan(theta_);
    Kokkos::fence();
  }

  void run() override {
    Kokkos::deep_copy(ExecSpace(), theta_, theta_in_);  // every run updates the input angles
    if (phase_ >= 2) {
      k2::rotor_update_vectorized(u_, lior_diff_, theta_);
    } else {
      k2::rotor_update_per_pair(pairs_, u_, lior_diff_, theta_, index_cell_, value_cell_);
    }
  }

  ArrayMap outputs() override {
    const std::vector<float> theta = k2::to_floats(theta_);
    return {{"theta", HostArray::from_floats({k2::kSlots}, theta.data(), k2::kSlots)}};
  }

 private:
  int phase_;
  k2::Vec u_, theta_in_, theta_;
  k2::Cell lior_diff_;
  k2::IndexVec pairs_;
  k2::HostIndexCell index_cell_;
  k2::HostCell value_cell_;
};

const VariantRegistration registration{
    "trainer2/rotor_update", "kokkos", {0, 2}, [](const VariantContext& context) {
      return std::make_unique<RotorUpdateKokkos>(context.phase);
    }};

}  // namespace
}  // namespace pb::kokkos_backend
