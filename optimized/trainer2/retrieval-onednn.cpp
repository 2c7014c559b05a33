// trainer2/retrieval on oneDNN: the trainer2 engine's retrieval step alone (build_retrieval() in
// trainer2_engine-onednn.hpp, the one the window runs), on the CPU engine. Reference:
// reference/trainer2/trainer2.hpp (retrieval); definition: suites/trainer2/retrieval.cpp.
//
//   u = cand_coord − q;  spd = sqrt(max(0, Σ_i g_i u_i²) + eps);  cost = R spd;
//   w = softmax_K(−β cost);  act = Σ_k w_k cand_state_k
//
// Every run() allocates its arrays afresh, as an eager framework's ops do: this workload's
// catalog has no inplace.

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

class RetrievalOnednn final : public pb::Variant {
 public:
  explicit RetrievalOnednn(const pb::VariantContext& context)
      : device_(context.device), fused_(context.has(t2::kJitFusion)), arrays_(true) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    const pb::HostArray& state = pb::require(inputs, "cand_state");
    B_ = state.shape.at(0);
    K_ = state.shape.at(1);
    d_ = state.shape.at(2);
    q_ = ob::upload(pb::require(inputs, "q"), {B_, 1, t2o::kN});
    cand_coord_ = ob::upload(pb::require(inputs, "cand_coord"), {B_, K_, t2o::kN});
    cand_state_ = ob::upload(state, {B_, K_, d_});
    g_ = ob::upload(pb::require(inputs, "g"), {1, t2o::kN});
    R_ = ob::upload(pb::require(inputs, "R"), {B_, 1, 1});
    retrieval_ = t2o::build_retrieval(fused_, q_, cand_coord_, cand_state_, g_, R_, arrays_);
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
    out["act"] = ob::download(retrieval_.act, {B_, d_});
    out["weights"] = ob::download(retrieval_.weights, {B_, K_});
    return out;
  }

 private:
  std::string device_;
  bool fused_;
  t2o::StepBuffers arrays_;
  int64_t B_ = 0, K_ = 0, d_ = 0;
  memory q_, cand_coord_, cand_state_, g_, R_;
  t2o::Retrieval retrieval_;
};

const pb::VariantRegistration registration{
    "trainer2/retrieval", "onednn", {t2::kBaseline, t2::kJitFusion},
    [](const pb::VariantContext& context) { return std::make_unique<RetrievalOnednn>(context); }};

}  // namespace
