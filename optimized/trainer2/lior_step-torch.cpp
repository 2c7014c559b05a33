// trainer2/lior_step on LibTorch, devices cpu and cuda.
// Math: reference/trainer2/lior_step.hpp. Phase catalog: suites/trainer2/lior_step.cpp.
//
//   s = sqrt(max(0, sum_i g[i] v[m,i]^2) + eps);  dlior = R * s;  three means read by the host
//
// The ladder, each phase one change on the previous:
//   0 baseline         as the original: dlior = lior_step(R, v, g) computes s inside, then
//                      s = quad_form(v, g) again for the metrics, then each mean read with its
//                      own .item() (3 host syncs).
//   1 batched_metrics  the three means stacked on the device and read with one transfer
//                      (1 host sync); s still computed twice.
//   3 fused_lior_spd   one function returns (dlior, s): s is computed once.

#include <cmath>
#include <limits>
#include <tuple>

#include "backends/torch/torch_backend.hpp"
#include "reference/trainer2/lior_step.hpp"

namespace {

namespace tb = pb::torch_backend;
using pb::reference::trainer2::kLiorEps;

/// s = sqrt(max(0, sum_i g_i v_i^2) + eps), one value per row of v.
torch::Tensor quad_form(const torch::Tensor& v, const torch::Tensor& g) {
  return (g * v * v).sum(1).clamp_min(0.0).add(kLiorEps).sqrt();
}

/// The original step: dlior = R * s, with s computed internally and not returned.
torch::Tensor lior_step(const torch::Tensor& R, const torch::Tensor& v, const torch::Tensor& g) {
  return R * quad_form(v, g);
}

/// Phase 3's step: returns (dlior, s) so the caller need not recompute s.
std::tuple<torch::Tensor, torch::Tensor> lior_step_with_speed(const torch::Tensor& R,
                                                              const torch::Tensor& v,
                                                              const torch::Tensor& g) {
  torch::Tensor s = quad_form(v, g);
  return {R * s, s};
}

class LiorStepTorch final : public pb::Variant {
 public:
  explicit LiorStepTorch(const pb::VariantContext& ctx) : phase_(ctx.phase), device_(ctx.device) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    const torch::Device device = tb::device_for(device_);
    v_ = tb::to_tensor(pb::require(inputs, "v"), device);
    R_ = tb::to_tensor(pb::require(inputs, "R"), device);
    g_ = tb::to_tensor(pb::require(inputs, "g"), device);
    s_ = torch::empty_like(R_);
    dlior_ = torch::empty_like(R_);
  }

  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    s_.fill_(nan);
    dlior_.fill_(nan);
    mean_dlior_ = mean_R_ = mean_s_ = nan;
  }

  void run() override {
    if (phase_ == 0) {
      run_baseline();
    } else if (phase_ == 1) {
      run_batched_metrics();
    } else {
      run_fused();
    }
  }

  pb::ArrayMap outputs() override {
    return {{"s", tb::to_host_array(s_)},
            {"dlior", tb::to_host_array(dlior_)},
            {"mean_dlior", pb::HostArray::scalar(mean_dlior_)},
            {"mean_R", pb::HostArray::scalar(mean_R_)},
            {"mean_s", pb::HostArray::scalar(mean_s_)}};
  }

 private:
  void run_baseline() {
    dlior_ = lior_step(R_, v_, g_);
    s_ = quad_form(v_, g_);  // the metrics recompute s: lior_step does not return it
    mean_dlior_ = dlior_.mean().item<float>();
    mean_R_ = R_.mean().item<float>();
    mean_s_ = s_.mean().item<float>();
  }

  void run_batched_metrics() {
    dlior_ = lior_step(R_, v_, g_);
    s_ = quad_form(v_, g_);
    read_means();
  }

  void run_fused() {
    std::tie(dlior_, s_) = lior_step_with_speed(R_, v_, g_);
    read_means();
  }

  /// The three means gathered on the device and brought to the host in one transfer.
  void read_means() {
    const torch::Tensor means =
        tb::read_to_host(torch::stack({dlior_.mean(), R_.mean(), s_.mean()}));
    const float* host = means.data_ptr<float>();
    mean_dlior_ = host[0];
    mean_R_ = host[1];
    mean_s_ = host[2];
  }

  int phase_;
  std::string device_;
  torch::Tensor v_, R_, g_;  // inputs: [M, 8], [M], [8]
  torch::Tensor s_, dlior_;  // outputs: [M] each
  float mean_dlior_ = 0, mean_R_ = 0, mean_s_ = 0;  // what the host read
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& ctx) {
  return std::make_unique<LiorStepTorch>(ctx);
}

const pb::VariantRegistration registration{"trainer2/lior_step", "torch", {0, 1, 3}, make};

}  // namespace
