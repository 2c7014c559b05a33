// trainer2/retrieval on oneDNN: the retrieval step alone on the CPU engine.
// Reference: reference/trainer2/trainer2.hpp (retrieval). Definition:
// suites/trainer2/retrieval.cpp.
// The retrieval itself is build_retrieval() in trainer2-onednn.hpp, shared with the window.
//
//   u = cand_coord − q;  spd = sqrt(max(0, Σ_i g_i u_i²) + eps);  cost = R spd;
//   w = softmax_K(−β cost);  act = Σ_k w_k cand_state_k
//
// The ladder (both phases allocate their arrays afresh in every run(), as an eager framework's
// ops do: buffers are only preallocated from the window ladder's phase 6 on):
//   0 baseline    op by op as the original PyTorch code: binary sub, two binary muls ((g u) u),
//                 a sum over n, relu, +eps, sqrt, × R, × −β, softmax, w × cand_state into a
//                 [B,K,d] product, and its sum over K (a row of ones times each batch's products,
//                 as B inner products: oneDNN 2.6's reduction over a middle axis is its slow
//                 reference implementation). 11 primitives + B gemvs; cand_state read once and
//                 a [B,K,d] product written and read.
//   4 jit_fusion  3 fused primitives + B gemvs: (cand − q)² as a binary with a square post-op;
//                 the g-weighted sum over n as a matmul with g as an [n,1] column whose post-ops
//                 (max 0, + eps, sqrt, × R, × −β) give the logits; softmax; the mixing Σ_k w
//                 cand_state as one inner product (gemv) per batch row, one pass over
//                 cand_state. oneDNN has no user kernels, so "one kernel" is as few fused
//                 primitives as its post-ops allow.

#include <memory>
#include <optional>
#include <string>

#include "optimized/trainer2/trainer2-onednn.hpp"
#include "phasebench/variant.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace t2o = pb::onednn_backend::trainer2;
using dnnl::memory;

class RetrievalOnednn final : public pb::Variant {
 public:
  explicit RetrievalOnednn(const pb::VariantContext& context)
      : phase_(context.phase), device_(context.device), arrays_(true) {}

  std::optional<pb::CannotRun> support() const override { return t2o::cannot_run(device_, phase_); }

  void setup(const pb::ArrayMap& inputs) override {
    const pb::HostArray& state = pb::require(inputs, "cand_state");
    B_ = state.shape.at(0);
    K_ = state.shape.at(1);
    d_ = state.shape.at(2);
    q_ = t2o::upload(pb::require(inputs, "q"), {B_, 1, t2o::kN});
    cand_coord_ = t2o::upload(pb::require(inputs, "cand_coord"), {B_, K_, t2o::kN});
    cand_state_ = t2o::upload(state, {B_, K_, d_});
    g_ = t2o::upload(pb::require(inputs, "g"), {1, t2o::kN});
    R_ = t2o::upload(pb::require(inputs, "R"), {B_, 1, 1});
    retrieval_ = t2o::build_retrieval(phase_ >= 4, q_, cand_coord_, cand_state_, g_, R_, arrays_);
  }

  void poison_outputs() override {
    ob::fill_floats(retrieval_.act, t2o::kNaN);
    ob::fill_floats(retrieval_.weights, t2o::kNaN);
  }

  void run() override {
    arrays_.begin_step();  // fresh arrays, as eager ops allocate their results
    retrieval_.program();
  }

  pb::ArrayMap outputs() override {
    pb::ArrayMap out;
    out["act"] = t2o::download(retrieval_.act, {B_, d_});
    out["weights"] = t2o::download(retrieval_.weights, {B_, K_});
    return out;
  }

 private:
  int phase_;
  std::string device_;
  t2o::StepBuffers arrays_;
  int64_t B_ = 0, K_ = 0, d_ = 0;
  memory q_, cand_coord_, cand_state_, g_, R_;
  t2o::Retrieval retrieval_;
};

const pb::VariantRegistration registration{
    "trainer2/retrieval", "onednn", {0, 4}, [](const pb::VariantContext& context) {
      return std::make_unique<RetrievalOnednn>(context);
    }};

}  // namespace
