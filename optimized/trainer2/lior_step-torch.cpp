// trainer2/lior_step on LibTorch, devices cpu and cuda: the engine's LIoR step
// (trainer2_engine-torch.hpp) and its three means read by the host: with a .item() each as the
// original, or (batched_metrics) gathered on the device and read with one transfer.
// Math: reference/trainer2/lior_step.hpp; catalog: suites/trainer2/lior_step.cpp.
//
//   s = sqrt(max(0, sum_i g[i] v[m,i]^2) + eps);  dlior = R * s;  three means read by the host

#include <limits>

#include "optimized/trainer2/trainer2_engine-torch.hpp"
#include "suites/trainer2/phases.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;

class LiorStepTorch final : public pb::Variant {
 public:
  explicit LiorStepTorch(const pb::VariantContext& context)
      : device_(context.device),
        batched_metrics_(context.has(t2::kBatchedMetrics)),
        fused_lior_spd_(context.has(t2::kFusedLiorSpd)) {}

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
    const t2tb::LiorStep step = t2tb::lior_step(R_, v_, g_, fused_lior_spd_);
    dlior_ = step.dlior;
    s_ = step.s;
    if (batched_metrics_) {
      read_means();
    } else {  // three reads, three host syncs
      mean_dlior_ = dlior_.mean().item<float>();
      mean_R_ = R_.mean().item<float>();
      mean_s_ = s_.mean().item<float>();
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
  /// The three means gathered on the device and brought to the host in one transfer.
  void read_means() {
    const torch::Tensor means = tb::read_to_host(torch::stack({dlior_.mean(), R_.mean(), s_.mean()}));
    const float* host = means.data_ptr<float>();
    mean_dlior_ = host[0];
    mean_R_ = host[1];
    mean_s_ = host[2];
  }

  std::string device_;
  bool batched_metrics_, fused_lior_spd_;
  torch::Tensor v_, R_, g_;  // inputs: [M, 8], [M], [8]
  torch::Tensor s_, dlior_;  // outputs: [M] each
  float mean_dlior_ = 0, mean_R_ = 0, mean_s_ = 0;  // what the host read
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& context) {
  return std::make_unique<LiorStepTorch>(context);
}

const pb::VariantRegistration registration{"trainer2/lior_step", "torch",
                                           {t2::kBaseline, t2::kBatchedMetrics, t2::kFusedLiorSpd}, make};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
