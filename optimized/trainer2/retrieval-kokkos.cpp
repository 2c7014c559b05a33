// trainer2/retrieval on Kokkos (default execution space): the retrieval step alone on one step's
// batch. Math: reference/trainer2/trainer2.hpp retrieval; kernels (op by op, or one per batch
// row with jit_fusion): trainer2_engine-kokkos.hpp.
//
//   spd_bk = sqrt(max(0, Σ_i g_i (cand_coord_bki − q_bi)²) + eps);  w_b = softmax_k(−β R_b spd_b)
//   act_b = Σ_k w_bk cand_state_bk
//
// Both forms sum in the reference's order on one thread (the softmax sum and each act_bj over k
// ascending), so on Serial Kokkos they match the fp32 reference bit for bit.
//
// vectorized_retrieval (host cores only): one batch row per work item, the row's body
// optimized/trainer2/retrieval_simd_bodies.hpp compiled for AVX-512, AVX2 and the baseline
// (host_vectorization.hpp); act in the same order, the exponentials within 1 ulp of expf.

#include <memory>
#include <optional>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/trainer2/retrieval_simd_bodies.hpp"
#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"

namespace pb::kokkos_backend {
namespace {

namespace t2 = pb::suites::trainer2;
namespace k2 = pb::kokkos_backend::trainer2;
namespace rs = pb::trainer2_kernels::retrieval_simd;

#ifdef PB_KOKKOS_KERNELS_ON_HOST

#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void retrieval_row_cloned(
    const float* coords, const float* states, int64_t K, int64_t d, const float* query, const float* metric,
    float curvature, float* weights, float* act) {
  rs::retrieval_row(coords, states, K, d, query, metric, curvature, weights, act);
}
#define PB_T2_RETRIEVAL_ROW retrieval_row_cloned
#else
#define PB_T2_RETRIEVAL_ROW rs::retrieval_row
#endif

/// vectorized_retrieval's kernel: batch row b per work item, through the Views' pointers (the
/// host's LayoutRight: row b's candidates are contiguous).
struct RetrievalRows {
  const float *q, *cand_coord, *cand_state, *g, *R;
  float *weights, *act;
  int64_t K, d;
  void operator()(int64_t b) const {
    PB_T2_RETRIEVAL_ROW(cand_coord + b * K * k2::kDim, cand_state + b * K * d, K, d, q + b * k2::kDim, g, R[b],
                        weights + b * K, act + b * d);
  }
};

#endif  // PB_KOKKOS_KERNELS_ON_HOST

class RetrievalKokkos final : public Variant {
 public:
  explicit RetrievalKokkos(const VariantContext& context)
      : fused_(context.has(t2::kJitFusion)), vectorized_(context.has(t2::kVectorizedRetrieval)) {}

  std::optional<CannotRun> support() const override {
    return vectorized_ ? host_cores_only(t2::kVectorizedRetrieval) : std::nullopt;
  }

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

  void run() override {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    if (vectorized_) {
      Kokkos::parallel_for(k2::kFusedRetrievalLabel, RangePolicy(0, B_),
                           RetrievalRows{q_.data(), cand_coord_.data(), cand_state_.data(), g_.data(), R_.data(),
                                         weights_.data(), act_.data(), K_, d_});
      return;
    }
#endif
    k2::retrieval(fused_, q_, cand_coord_, cand_state_, g_, R_, weights_, act_);
  }

  ArrayMap outputs() override {
    const std::vector<float> act = to_host_vector(act_), weights = to_host_vector(weights_);
    return {{"act", HostArray::from_floats({B_, d_}, act.data(), B_ * d_)},
            {"weights", HostArray::from_floats({B_, K_}, weights.data(), B_ * K_)}};
  }

 private:
  bool fused_, vectorized_;
  int64_t B_ = 0, K_ = 0, d_ = 0;
  k2::Mat q_, act_, weights_;
  k2::Cube cand_coord_, cand_state_;
  k2::Vec g_, R_;
};

const VariantRegistration registration{
    "trainer2/retrieval", "kokkos", {t2::kBaseline, t2::kJitFusion, t2::kVectorizedRetrieval},
    [](const VariantContext& context) { return std::make_unique<RetrievalKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
