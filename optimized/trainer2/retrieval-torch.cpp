// trainer2/retrieval on LibTorch, devices cpu and cuda: the retrieval step alone.
// Math: reference/trainer2/trainer2.hpp (retrieval). Phase catalog: suites/trainer2/retrieval.cpp.
//
//   u = cand_coord − q;  spd = sqrt(max(0, Σ g u²) + eps);  w = softmax(−β R spd);  act = Σ_k w cand_state
//
// The ladder:
//   0 baseline    op by op as the original PyTorch code (u, spd, cost, softmax, then the
//                 product w[..., None] * cand_state summed over k).
//   4 jit_fusion  the same function compiled from TorchScript source with torch::jit::compile; its
//                 graph executor fuses what the build can (a CPU-only LibTorch without LLVM, as
//                 Debian's, has no CPU fuser: there it is the interpreter running the same ops).

#include <limits>

#include "optimized/trainer2/trainer2-torch.hpp"

namespace {

namespace tb = pb::torch_backend;
namespace t2tb = pb::torch_backend::trainer2;

class RetrievalTorch final : public pb::Variant {
 public:
  explicit RetrievalTorch(const pb::VariantContext& ctx) : phase_(ctx.phase), device_(ctx.device) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    q_ = tb::to_tensor(pb::require(in, "q"), device);
    cand_coord_ = tb::to_tensor(pb::require(in, "cand_coord"), device);
    cand_state_ = tb::to_tensor(pb::require(in, "cand_state"), device);
    g_ = tb::to_tensor(pb::require(in, "g"), device);
    R_ = tb::to_tensor(pb::require(in, "R"), device);
    if (phase_ >= t2tb::kJitFusion) {
      compiled_ = std::make_unique<t2tb::CompiledRetrieval>();
      compiled_->warm_up(cand_state_.size(0), cand_state_.size(1), cand_state_.size(2), q_.options());
    }
    result_ = {torch::empty({cand_state_.size(0), cand_state_.size(2)}, q_.options()),
               torch::empty({cand_state_.size(0), cand_state_.size(1)}, q_.options())};
  }

  void poison_outputs() override {
    result_.act.fill_(std::numeric_limits<float>::quiet_NaN());
    result_.weights.fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    result_ = compiled_ ? (*compiled_)(q_, cand_coord_, cand_state_, g_, R_)
                        : t2tb::retrieval_eager(q_, cand_coord_, cand_state_, g_, R_);
  }

  pb::ArrayMap outputs() override {
    return {{"act", tb::to_host_array(result_.act)}, {"weights", tb::to_host_array(result_.weights)}};
  }

 private:
  int phase_;
  std::string device_;
  torch::Tensor q_, cand_coord_, cand_state_, g_, R_;  // [B,n], [B,K,n], [B,K,d], [n], [B]
  std::unique_ptr<t2tb::CompiledRetrieval> compiled_;
  t2tb::RetrievalResult result_;
};

std::unique_ptr<pb::Variant> make(const pb::VariantContext& ctx) { return std::make_unique<RetrievalTorch>(ctx); }

const pb::VariantRegistration registration{"trainer2/retrieval", "torch", {0, 4}, make};

}  // namespace
