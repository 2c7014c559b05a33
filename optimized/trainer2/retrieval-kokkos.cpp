// trainer2/retrieval on Kokkos (default execution space): the retrieval step alone on one step's
// batch. Math: reference/trainer2/trainer2.hpp retrieval; kernels (op by op, or one per batch
// row with jit_fusion): trainer2_engine-kokkos.hpp.
//
//   spd_bk = sqrt(max(0, Σ_i g_i (cand_coord_bki − q_bi)²) + eps);  w_b = softmax_k(−β R_b spd_b)
//   act_b = Σ_k w_bk cand_state_bk
//
// Both forms sum in the reference's order on one thread (the softmax sum and each act_bj over k
// ascending), so on Serial Kokkos they match the fp32 reference bit for bit.

#include <memory>

#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::kokkos_backend {
namespace {

namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;

class RetrievalKokkos final : public Variant {
 public:
  explicit RetrievalKokkos(const VariantContext& context) : fused_(context.has(t2::kJitFusion)) {}

  void setup(const ArrayMap& in) override {
    const HostArray& state = require(in, "cand_state");
    B_ = state.shape.at(0), K_ = state.shape.at(1), d_ = state.shape.at(2);
    q_ = to_device<k2::Mat>("q", require(in, "q"), B_, k2::kDim);
    cand_coord_ = to_device<k2::Cube>("cand_coord", require(in, "cand_coord"), B_, K_, k2::kDim);
    cand_state_ = to_device<k2::Cube>("cand_state", state, B_, K_, d_);
    g_ = to_device<k2::Vec>("g", require(in, "g"), k2::kDim);
    R_ = to_device<k2::Vec>("R", require(in, "R"), B_);
    act_ = k2::Mat("act", B_, d_);
    weights_ = k2::Mat("weights", B_, K_);
  }

  void poison_outputs() override {
    fill_nan(act_);
    fill_nan(weights_);
    Kokkos::fence();
  }

  void run() override { k2::retrieval(fused_, q_, cand_coord_, cand_state_, g_, R_, weights_, act_); }

  ArrayMap outputs() override {
    const std::vector<float> act = to_host_vector(act_), weights = to_host_vector(weights_);
    return {{"act", HostArray::from_floats({B_, d_}, act.data(), B_ * d_)},
            {"weights", HostArray::from_floats({B_, K_}, weights.data(), B_ * K_)}};
  }

 private:
  bool fused_;
  int64_t B_ = 0, K_ = 0, d_ = 0;
  k2::Mat q_, act_, weights_;
  k2::Cube cand_coord_, cand_state_;
  k2::Vec g_, R_;
};

const VariantRegistration registration{
    "trainer2/retrieval", "kokkos", {t2::kBaseline, t2::kJitFusion},
    [](const VariantContext& context) { return std::make_unique<RetrievalKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
