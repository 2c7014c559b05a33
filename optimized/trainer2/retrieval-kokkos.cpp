// trainer2/retrieval on Kokkos (default execution space): the retrieval step alone on one step's
// batch. Math: reference/trainer2/trainer2.hpp retrieval; phase catalog: suites/trainer2/retrieval.cpp;
// kernels: trainer2-kokkos.hpp.
//
//   spd_bk = sqrt(max(0, Σ_i g_i (cand_coord_bki − q_bi)²) + eps);  w_b = softmax_k(−β R_b spd_b)
//   act_b = Σ_k w_bk cand_state_bk
//
// The ladder:
//   0 baseline    op by op as the original PyTorch code: displacement, quadratic form, spd, cost,
//                 logits, row max, exp, row sum, normalization, mixing: 10 kernels, each writing a
//                 freshly allocated View (B·K·(n + 5) + 2B floats per run).
//   4 jit_fusion  one kernel, one team per batch row: the logits and their maximum in one pass,
//                 the exponentials and their sum in a second, the normalization, then the mixing
//                 as K contiguous vector updates of the row's act; nothing allocated.
// Both sum in the reference's order on one thread (the softmax sum and each act_bj over k
// ascending), so on Serial Kokkos they match the fp32 reference bit for bit.

#include <memory>

#include "optimized/trainer2/trainer2-kokkos.hpp"
#include "phasebench/variant.hpp"

namespace pb::kokkos_backend {
namespace {

namespace k2 = pb::kokkos_backend::trainer2;

class RetrievalKokkos final : public Variant {
 public:
  explicit RetrievalKokkos(int phase) : phase_(phase) {}

  void setup(const ArrayMap& in) override {
    const HostArray& state = require(in, "cand_state");
    B_ = state.shape.at(0), K_ = state.shape.at(1), d_ = state.shape.at(2);
    q_ = k2::to_device<k2::Mat>("q", require(in, "q"), B_, k2::kDim);
    cand_coord_ = k2::to_device<k2::Cube>("cand_coord", require(in, "cand_coord"), B_, K_, k2::kDim);
    cand_state_ = k2::to_device<k2::Cube>("cand_state", state, B_, K_, d_);
    g_ = k2::to_device<k2::Vec>("g", require(in, "g"), k2::kDim);
    R_ = k2::to_device<k2::Vec>("R", require(in, "R"), B_);
    act_ = k2::Mat("act", B_, d_);
    weights_ = k2::Mat("weights", B_, K_);
  }

  void poison_outputs() override {
    k2::fill_nan(act_);
    k2::fill_nan(weights_);
    Kokkos::fence();
  }

  void run() override {
    if (phase_ >= 4) {
      k2::retrieval_fused(k2::MaterializedCandidates{cand_coord_, cand_state_}, q_, g_, R_, weights_, act_);
    } else {
      k2::retrieval_op_by_op(q_, cand_coord_, cand_state_, g_, R_, weights_, act_);
    }
  }

  ArrayMap outputs() override {
    const std::vector<float> act = k2::to_floats(act_), weights = k2::to_floats(weights_);
    return {{"act", HostArray::from_floats({B_, d_}, act.data(), B_ * d_)},
            {"weights", HostArray::from_floats({B_, K_}, weights.data(), B_ * K_)}};
  }

 private:
  int phase_;
  int64_t B_ = 0, K_ = 0, d_ = 0;
  k2::Mat q_, act_, weights_;
  k2::Cube cand_coord_, cand_state_;
  k2::Vec g_, R_;
};

const VariantRegistration registration{
    "trainer2/retrieval", "kokkos", {0, 4}, [](const VariantContext& context) {
      return std::make_unique<RetrievalKokkos>(context.phase);
    }};

}  // namespace
}  // namespace pb::kokkos_backend
