// trainer2/rotor_update on LibTorch, devices cpu and cuda: the rotor part of the manual update.
// Math: reference/trainer2/trainer2.hpp (rotor_update). Phase catalog: suites/trainer2/rotor_update.cpp.
//
//   for learnt pair k < 6 on (i, j), r = hypot(u_i, u_j) >= 1e-6:  θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r;
//   then θ wrapped to [−π, π)
//
// The ladder (every run starts from the input θ):
//   0 baseline          the original loop over the 6 pairs: i, j, u_i and u_j read back to the
//                       host one at a time (4 host syncs per pair, 24 per run), one device op
//                       per updated angle.
//   2 vectorized_rotor  u_i, u_j gathered with index tensors, atan2 and hypot for all pairs at
//                       once, small-r pairs masked with where(), one index_add: no host reads.

#include <limits>

#include "optimized/trainer2/trainer2-torch.hpp"

namespace {

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;

class RotorUpdateTorch final : public pb::Variant {
 public:
  explicit RotorUpdateTorch(const pb::VariantContext& ctx) : phase_(ctx.phase), device_(ctx.device) {}

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

  void run() override {
    theta_ = phase_ < t2tb::kVectorizedRotor ? t2tb::rotor_update_per_pair(u_, lior_diff_, theta0_, index_)
                                             : t2tb::rotor_update_vectorized(u_, lior_diff_, theta0_, index_);
  }

  pb::ArrayMap outputs() override { return {{"theta", tb::to_host_array(theta_)}}; }

 private:
  int phase_;
  std::string device_;
  torch::Tensor u_, theta0_, lior_diff_, theta_;  // [8], [8], [], [8]
  t2tb::RotorIndex index_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& ctx) { return std::make_unique<RotorUpdateTorch>(ctx); }

const pb::VariantRegistration registration{"trainer2/rotor_update", "torch", {0, 2}, make};

}  // namespace
