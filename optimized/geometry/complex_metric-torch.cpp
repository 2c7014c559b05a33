// geometry/complex_metric on LibTorch, devices cpu and cuda. Math:
// reference/geometry/complex_metric.hpp; catalog: suites/geometry/complex_metric.cpp.
//
//   baseline:            per output, for each (m, n): G_mn = 0.5 (gamma[m] gamma[n] -+ gamma[n] gamma[m]),
//                        out[..., m, n] = einsum('...i,ij,...j->...', psi, G_mn, psi)   (the original loop)
//   batched_contraction: G = 0.5 (P -+ P^T(m,n)) with P = gamma[m] gamma[n] for all (m, n) in one
//                        matmul, then one einsum('bki,mnij,bkj->bkmn') per output      (the seed)
//   shared_pairs:        pairs = psi_i psi_j (i <= j), W [2 d^2, 10] = G folded over i <= j, one
//                        matmul pairs W^T gives Phi and Theta together (the mirror is in W's columns:
//                        on torch a scatter of the upper triangle costs more than the 64 extra columns)
// No host reads anywhere: the original has none either.

#include <limits>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "suites/geometry/complex_metric.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace geo = pb::suites::geometry::complex_metric;
constexpr int S = geo::ref::kSpinor, d = geo::ref::kCoordinates;

class ComplexMetricTorch final : public pb::Variant {
 public:
  explicit ComplexMetricTorch(const pb::VariantContext& context)
      : device_(context.device),
        shape_(geo::metric_shape(context.size)),
        batched_(context.has(geo::kBatchedContraction)),
        shared_pairs_(context.has(geo::kSharedPairs)) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    gamma_ = tb::to_tensor(pb::require(in, geo::kGamma), device);
    psi_ = tb::to_tensor(pb::require(in, geo::kPsi), device);
    // Pair p = (i, j), i <= j: the columns of G [.., S*S] holding (i, j) and (j, i), and the
    // weight that folds them (1 off the diagonal, where both count; 0.5 on it, where both are one).
    std::vector<int64_t> ij, ji, first, second;
    std::vector<float> fold;
    for (int i = 0; i < S; ++i)
      for (int j = i; j < S; ++j) {
        ij.push_back(i * S + j), ji.push_back(j * S + i), first.push_back(i), second.push_back(j);
        fold.push_back(i == j ? 0.5f : 1.0f);
      }
    const auto longs = [&](const std::vector<int64_t>& v) { return torch::tensor(v, torch::kLong).to(device); };
    ij_ = longs(ij), ji_ = longs(ji), first_ = longs(first), second_ = longs(second);
    fold_ = torch::tensor(fold).to(device);
  }

  void poison_outputs() override {
    if (phi_.defined()) phi_.fill_(std::numeric_limits<float>::quiet_NaN());
    if (theta_.defined()) theta_.fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    if (shared_pairs_) return run_shared_pairs();
    if (batched_) return run_batched();
    phi_ = per_pair_loop(-1);   // k1_wedge
    theta_ = per_pair_loop(+1);  // k2_tensor
  }

  pb::ArrayMap outputs() override { return {{geo::kPhi, tb::to_host_array(phi_)}, {geo::kTheta, tb::to_host_array(theta_)}}; }

 private:
  torch::Tensor per_pair_loop(float sign) const {
    torch::Tensor out = torch::zeros({shape_.batch, shape_.positions, d, d}, psi_.options());
    for (int m = 0; m < d; ++m)
      for (int n = 0; n < d; ++n) {
        const torch::Tensor g_mn = 0.5 * (gamma_[m].mm(gamma_[n]) + sign * gamma_[n].mm(gamma_[m]));
        out.select(3, n).select(2, m).copy_(torch::einsum("...i,ij,...j->...", {psi_, g_mn, psi_}));
      }
    return out;
  }

  /// P[m, n] = gamma[m] gamma[n] for all (m, n): one broadcast matmul [d,1,S,S] x [1,d,S,S].
  torch::Tensor products() const { return torch::matmul(gamma_.unsqueeze(1), gamma_.unsqueeze(0)); }

  void run_batched() {
    const torch::Tensor p = products(), swapped = p.transpose(0, 1);
    phi_ = torch::einsum("bki,mnij,bkj->bkmn", {psi_, 0.5 * (p - swapped), psi_});
    theta_ = torch::einsum("bki,mnij,bkj->bkmn", {psi_, 0.5 * (p + swapped), psi_});
  }

  void run_shared_pairs() {
    const torch::Tensor p = products(), swapped = p.transpose(0, 1);
    const torch::Tensor g = torch::cat({0.5 * (p - swapped), 0.5 * (p + swapped)}).reshape({2 * d * d, S * S});
    const torch::Tensor w = (g.index_select(1, ij_) + g.index_select(1, ji_)) * fold_;  // [2 d^2, 10]
    const torch::Tensor pairs = psi_.index_select(2, first_) * psi_.index_select(2, second_);  // [B, N, 10]
    const torch::Tensor both = pairs.reshape({shape_.items(), geo::ref::kPairs}).mm(w.t());  // [items, 2 d^2]
    phi_ = both.narrow(1, 0, d * d).view({shape_.batch, shape_.positions, d, d});
    theta_ = both.narrow(1, d * d, d * d).view({shape_.batch, shape_.positions, d, d});
  }

  std::string device_;
  geo::MetricShape shape_;
  bool batched_, shared_pairs_;
  torch::Tensor gamma_, psi_, phi_, theta_, ij_, ji_, first_, second_, fold_;
};

const pb::VariantRegistration registration{
    geo::kComplexMetric, "torch", {geo::kBaseline, geo::kBatchedContraction, geo::kSharedPairs},
    [](const pb::VariantContext& context) { return std::make_unique<ComplexMetricTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
