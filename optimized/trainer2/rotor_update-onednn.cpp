// trainer2/rotor_update on oneDNN: the rotor part of the manual update alone (RotorUpdate in
// trainer2_engine-onednn.hpp, the one the training step runs), on the CPU engine. Reference:
// reference/trainer2/trainer2.hpp (rotor_update); definition: suites/trainer2/rotor_update.cpp.
//
//   for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//     θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;   then θ wrapped to [−π, π)
//
// oneDNN has no atan2 and no fmod, and the work is a handful of values: the angle arithmetic is
// plain C++ in host kernels over the CPU engine's memory (ob::run_host_kernel: one dispatched op,
// no host sync). Every run() starts from the input θ (a reorder copies it in).

#include <memory>
#include <optional>
#include <string>

#include "optimized/trainer2/trainer2_engine-onednn.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
namespace t2 = pb::suites::trainer2;
using dnnl::memory;

class RotorUpdateOnednn final : public pb::Variant {
 public:
  explicit RotorUpdateOnednn(const pb::VariantContext& context)
      : device_(context.device), vectorized_(context.has(t2::kVectorizedRotor)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    const int64_t slots = t2o::ref::kRotorSlots;
    u_ = ob::upload(pb::require(inputs, "u"), {1, t2o::kN});
    theta_input_ = ob::upload(pb::require(inputs, "theta"), {slots});
    lior_diff_ = ob::upload(pb::require(inputs, "lior_diff"), {1, 1});
    theta_ = ob::allocate(ob::dense({slots}));
    restart_.add(ob::copy(theta_input_, theta_));
    update_.emplace(vectorized_, u_, lior_diff_, theta_);
  }

  void poison_outputs() override { ob::fill_floats(theta_, t2o::kNaN); }

  void run() override {
    restart_();  // θ = the input θ
    (*update_)();
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    out["theta"] = ob::download(theta_, {t2o::ref::kRotorSlots});
    return out;
  }

 private:
  std::string device_;
  bool vectorized_;
  memory u_, theta_input_, lior_diff_, theta_;
  ob::Program restart_;
  std::optional<t2o::RotorUpdate> update_;
};

const pb::VariantRegistration registration{
    "trainer2/rotor_update", "onednn", {t2::kBaseline, t2::kVectorizedRotor},
    [](const pb::VariantContext& context) { return std::make_unique<RotorUpdateOnednn>(context); }};

}  // namespace
