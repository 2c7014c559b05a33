// trainer2/rotor_update: the rotor part of the manual update alone (training step 7 in
// reference/trainer2/trainer2.hpp): for each learnt pair k < 6 on coordinates (i, j) with
// r = hypot(u_i, u_j) >= 1e-6, θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r; then θ wrapped to [−π, π).
// Reference: reference/trainer2/trainer2.hpp (rotor_update). Variants: optimized/trainer2/rotor_update-<backend>.*
//
// Inputs: u [n] (mean free-phase velocity), theta [8], lior_diff (Δ, a scalar). Output: theta [8].
// The baseline reads i, j, u_i and u_j back to the host for every pair (4 host syncs per pair).

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "phasebench/rng.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::suites::trainer2 {
namespace {

class RotorUpdate final : public Workload {
 public:
  std::string suite() const override { return "trainer2"; }
  std::string name() const override { return "rotor_update"; }
  std::string description() const override {
    return "rotor angle update from the mean velocity and the contrastive difference, then wrap";
  }
  std::string shape(SizeClass) const override { return "n=8 angles=6 (one manual update)"; }

  // θ starts near ±π (U[2.8, 3.1] with random signs) and Δ ~ U[0.5, 1.5] with u ~ N(0,1), so the
  // updates (up to ~0.3 rad) push some angles across ±π: the wrap is exercised, not just passed.
  // Even seeds also put the wrap's boundary in: pair 0 (coordinates 0 and 1) gets u_0 = u_1 = 0,
  // so r = 0 leaves its angle alone, and that angle is float(π) exactly, which wraps to −π (fp32:
  // θ + π is 2π exactly, fmod gives 0; fp64 gives −π + 8.7e-8): a wrap that tests `<= 0` where
  // the reference tests `< 0` returns +π there. Random angles never land on it. (Not −float(π):
  // there fp32 gives −π and fp64 +π − 8.7e-8, both right to their precision, 2π apart.)
  ArrayMap make_inputs(SizeClass, uint64_t seed) const override {
    ArrayMap in;
    in["u"] = normal_array(seed, "trainer2/rotor_update/u", {ref::kCoordinateDim}, 0, 1);
    HostArray theta = uniform_array(seed, "trainer2/rotor_update/theta", {ref::kRotorSlots}, 2.8, 3.1);
    const HostArray signs = uniform_array(seed, "trainer2/rotor_update/sign", {ref::kRotorSlots}, -1, 1);
    for (int k = 0; k < ref::kRotorSlots; ++k)
      theta.values[k] = k < ref::kRotorAngles ? (signs.values[k] < 0 ? -theta.values[k] : theta.values[k]) : 0;
    if (seed % 2 == 0) {
      int a = 0, b = 0;
      ref::rotor_pair(0, a, b);
      in["u"].values[a] = in["u"].values[b] = 0;
      theta.values[0] = static_cast<double>(static_cast<float>(ref::kPi));
    }
    in["theta"] = theta;
    in["lior_diff"] = uniform_array(seed, "trainer2/rotor_update/lior_diff", {}, 0.5, 1.5);
    return in;
  }

  ArrayMap reference_fp64(const ArrayMap& in) const override {
    ArrayMap out;
    out["theta"] = require(in, "theta");
    out["theta"].element_type = ElementType::Float64;
    ref::rotor_update<double>(require(in, "u").values.data(), require(in, "lior_diff").values.at(0),
                              out["theta"].values.data());
    return out;
  }

  std::vector<OutputSpec> outputs() const override {
    return {{"theta", 1e-5, "fp32 atan2, hypot and one multiply-add per angle: a few ulp"}};
  }
  std::vector<PhaseInfo> phases() const override { return trainer2_phases({0, 2, 12}); }
  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, multiply,
  // divide, compare, sqrt, atan2, fmod. Per learnt angle (6): r = sqrt(u_i^2 + u_j^2) (4), r >= 1e-6
  // (1), atan2 (1), the product with r and the constant 0.01 eta (-delta) (2), the add (1); that
  // constant once (1); the wrap of each of the 8 slots: + pi, fmod, < 0, - pi (4):
  //   flops = 6 * 9 + 1 + 8 * 4 = 87
  // Bytes, fp32: read u [8], theta [8], lior_diff; write theta [8]: 4 (8 + 8 + 1) + 4 * 8 = 100.
  WorkEstimate work(SizeClass) const override {
    const double flops = ref::kRotorAngles * 9.0 + 1 + ref::kRotorSlots * 4.0;
    const double bytes = 4.0 * (ref::kCoordinateDim + ref::kRotorSlots + 1) + 4.0 * ref::kRotorSlots;
    return {flops, bytes};
  }
  double memory_bytes(SizeClass) const override { return 1024; }

  // 100 bytes and 87 flops price an update at nanoseconds; its 20 scalar libm calls (6 hypot, 6
  // atan2, 8 fmod) take a hundred times that on one core, and no variant avoids them. The chain is
  // the fp32 update on one thread, data in L1, nothing dispatched: what a row can approach.
  std::optional<LatencyChain> latency_chain(SizeClass) const override {
    return LatencyChain{
        "the fp32 update of the 8 slots on one thread (6 hypot, 6 atan2, 8 fmod), data in L1, nothing dispatched",
        [](const ArrayMap& in) -> std::function<double()> {
          const std::vector<float> u = require(in, "u").to_floats(), theta_in = require(in, "theta").to_floats();
          const float lior_diff = static_cast<float>(require(in, "lior_diff").values.at(0));
          return [u, theta_in, lior_diff, theta = theta_in]() mutable {
            std::copy(theta_in.begin(), theta_in.end(), theta.begin());  // every call from the input angles, as a row's
            ref::rotor_update<float>(u.data(), lior_diff, theta.data());
            double sum = 0;
            for (const float angle : theta) sum += angle;
            return sum;
          };
        }};
  }

};

const WorkloadRegistration registration{std::make_shared<RotorUpdate>()};

}  // namespace
}  // namespace pb::suites::trainer2
