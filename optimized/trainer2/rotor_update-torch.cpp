// trainer2/rotor_update on LibTorch, devices cpu and cuda: the rotor part of the manual update,
// the engine's (trainer2_engine-torch.hpp: per pair with host reads, or under vectorized_rotor
// gathered with no host reads). Every run starts from the input θ.
// Math: reference/trainer2/trainer2.hpp (rotor_update).
//
//   for learnt pair k < 6 on (i, j), r = hypot(u_i, u_j) >= 1e-6:  θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;
//   then θ wrapped to [−π, π)

#include <limits>

#include "optimized/trainer2/trainer2_engine-torch.hpp"
#include "suites/trainer2/phases.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;

class RotorUpdateTorch final : public pb::Variant {
 public:
  explicit RotorUpdateTorch(const pb::VariantContext& context)
      : device_(context.device), vectorized_rotor_(context.has(t2::kVectorizedRotor)) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    u_ = tb::to_tensor(pb::require(in, "u"), device);
    theta0_ = tb::to_tensor(pb::require(in, "theta"), device);
    lior_diff_ = tb::to_tensor(pb::require(in, "lior_diff"), device);  // 0-dim, on the device
    index_ = t2tb::make_rotor_index(device);
    theta_ = torch::empty_like(theta0_);
  }

  void poison_outputs() override { theta_.fill_(std::numeric_limits<float>::quiet_NaN()); }

  void run() override { theta_ = t2tb::rotor_update(u_, lior_diff_, theta0_, index_, vectorized_rotor_); }

  pb::ArrayMap outputs() override { return {{"theta", tb::to_host_array(theta_)}}; }

 private:
  std::string device_;
  bool vectorized_rotor_;
  torch::Tensor u_, theta0_, lior_diff_, theta_;  // [8], [8], [], [8]
  t2tb::RotorIndex index_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& context) {
  return std::make_unique<RotorUpdateTorch>(context);
}

const pb::VariantRegistration registration{"trainer2/rotor_update", "torch",
                                           {t2::kBaseline, t2::kVectorizedRotor}, make};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
