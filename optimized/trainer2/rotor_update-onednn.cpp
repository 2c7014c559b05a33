// trainer2/rotor_update on oneDNN: the rotor part of the manual update alone, on the CPU engine.
// Reference: reference/trainer2/trainer2.hpp (rotor_update). Definition:
// suites/trainer2/rotor_update.cpp.
// The update itself is RotorUpdate in trainer2-onednn.hpp, shared with the training step.
//
//   for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//     θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;   then θ wrapped to [−π, π)
//
// oneDNN has no atan2 and no fmod, and the work is a handful of values: the angle arithmetic is
// plain C++ in host kernels over the CPU engine's memory (ob::run_host_kernel: one dispatched op,
// no host sync). Every run() starts from the input θ (a reorder copies it in).
//
// The ladder:
//   0 baseline          as the original: for each pair, i and j (from the pair table on the
//                       device) and u_i, u_j are read back to the host one at a time (4 host
//                       syncs per pair, 24 per run); the update is a host kernel taking the host's
//                       atan2 and r as arguments (Δ stays on the device); one more kernel wraps.
//   2 vectorized_rotor  one host kernel gathers all pairs, updates and wraps: 0 host syncs.

#include <memory>
#include <optional>
#include <string>

#include "optimized/trainer2/trainer2-onednn.hpp"
#include "phasebench/variant.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
using dnnl::memory;

class RotorUpdateOnednn final : public pb::Variant {
 public:
  explicit RotorUpdateOnednn(const pb::VariantContext& context)
      : phase_(context.phase), device_(context.device) {}

  std::optional<pb::CannotRun> support() const override { return t2o::cannot_run(device_, phase_); }

  void setup(const pb::ArrayMap& inputs) override {
    const int64_t slots = t2o::ref::kRotorSlots;
    u_ = t2o::upload(pb::require(inputs, "u"), {1, t2o::kN});
    theta_input_ = t2o::upload(pb::require(inputs, "theta"), {slots});
    lior_diff_ = t2o::upload(pb::require(inputs, "lior_diff"), {1, 1});
    theta_ = ob::allocate(t2o::dense({slots}));
    restart_.add(t2o::copy(theta_input_, theta_));
    update_.emplace(phase_ >= 2, u_, lior_diff_, theta_);
  }

  void poison_outputs() override { ob::fill_floats(theta_, t2o::kNaN); }

  void run() override {
    restart_();  // θ = the input θ
    (*update_)();
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    out["theta"] = t2o::download(theta_, {t2o::ref::kRotorSlots});
    return out;
  }

 private:
  int phase_;
  std::string device_;
  memory u_, theta_input_, lior_diff_, theta_;
  t2o::Program restart_;
  std::optional<t2o::RotorUpdate> update_;
};

const pb::VariantRegistration registration{
    "trainer2/rotor_update", "onednn", {0, 2}, [](const pb::VariantContext& context) {
      return std::make_unique<RotorUpdateOnednn>(context);
    }};

}  // namespace
