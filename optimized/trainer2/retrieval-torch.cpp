// trainer2/retrieval on LibTorch, devices cpu and cuda: the retrieval step alone, the engine's
// (trainer2_engine-torch.hpp: eager, or under jit_fusion compiled with TorchScript).
// Math: reference/trainer2/trainer2.hpp (retrieval).
//
//   u = cand_coord − q;  spd = sqrt(max(0, Σ g u²) + eps);  w = softmax(−β R spd);  act = Σ_k w cand_state

#include <limits>

#include "optimized/trainer2/trainer2_engine-torch.hpp"
#include "suites/trainer2/phases.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;
namespace t2 = pb::suites::trainer2;

class RetrievalTorch final : public pb::Variant {
 public:
  explicit RetrievalTorch(const pb::VariantContext& context)
      : device_(context.device), compiled_(context.has(t2::kJitFusion)) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    q_ = tb::to_tensor(pb::require(in, "q"), device);
    cand_coord_ = tb::to_tensor(pb::require(in, "cand_coord"), device);
    cand_state_ = tb::to_tensor(pb::require(in, "cand_state"), device);
    g_ = tb::to_tensor(pb::require(in, "g"), device);
    R_ = tb::to_tensor(pb::require(in, "R"), device);
    const int64_t B = cand_state_.size(0), K = cand_state_.size(1), d = cand_state_.size(2);
    retrieval_.prepare(compiled_, B, K, d, q_.options());
    result_ = {torch::empty({B, d}, q_.options()), torch::empty({B, K}, q_.options())};
  }

  void poison_outputs() override {
    result_.act.fill_(std::numeric_limits<float>::quiet_NaN());
    result_.weights.fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override { result_ = retrieval_(q_, cand_coord_, cand_state_, g_, R_); }

  pb::ArrayMap outputs() override {
    return {{"act", tb::to_host_array(result_.act)}, {"weights", tb::to_host_array(result_.weights)}};
  }

 private:
  std::string device_;
  bool compiled_;
  torch::Tensor q_, cand_coord_, cand_state_, g_, R_;  // [B,n], [B,K,n], [B,K,d], [n], [B]
  t2tb::Retrieval retrieval_;
  t2tb::RetrievalResult result_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& context) {
  return std::make_unique<RetrievalTorch>(context);
}

const pb::VariantRegistration registration{"trainer2/retrieval", "torch", {t2::kBaseline, t2::kJitFusion}, make};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
