// geometry/complex_metric on oneDNN (CPU engine): primitives only (matmul, binary with an eltwise
// post-op, reduction, reorder). Math: reference/geometry/complex_metric.hpp; catalog:
// suites/geometry/complex_metric.cpp. gamma [d,S,S], psi as [items, S], outputs as [items, d^2].
//
//   baseline:            per output and (m, n): G_mn = 0.5 (gamma_m gamma_n -+ gamma_n gamma_m)
//                        (two matmuls, a binary with a linear post-op), then psi^T G_mn psi over
//                        all items as matmul psi G_mn, binary mul by psi, reduction over S, and a
//                        reorder into the strided column out[:, m d + n]: 7 primitives, 2 d^2 times
//   batched_contraction: P = gamma_m gamma_n for all (m, n) (one matmul, broadcast batch), G =
//                        0.5 (P -+ P^T(m,n)) (binary against a transposed view, linear post-op);
//                        per output: psi psi^T [items, S, S] (a batched matmul with K = 1) and one
//                        matmul [items, S^2] x G^T [S^2, d^2]                        (the seed)
//   shared_pairs:        psi psi^T once, shared by both outputs, one matmul [items, S^2] x
//                        [S^2, 2 d^2] writing Phi and Theta together. The S(S+1)/2 = 10 distinct
//                        pair products and the upper triangle alone need a gather / scatter
//                        primitive, which oneDNN lacks: here the S^2 products and all d^2 entries.
// Every array written in run() gets new storage first (RenewableMemory::renew(), counted as bytes
// allocated), as PyTorch allocates each result. No host read in run().

#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "suites/geometry/complex_metric.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace geo = pb::suites::geometry::complex_metric;
using dnnl::algorithm;
constexpr int64_t S = geo::ref::kSpinor, d = geo::ref::kCoordinates, kPlane = d * d, kMatrix = S * S;

class ComplexMetricOnednn final : public pb::Variant {
 public:
  explicit ComplexMetricOnednn(const pb::VariantContext& context)
      : device_(context.device),
        shape_(geo::metric_shape(context.size)),
        batched_(context.has(geo::kBatchedContraction)),
        shared_pairs_(context.has(geo::kSharedPairs)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    items_ = shape_.items();
    gamma_ = ob::upload(pb::require(in, geo::kGamma), {d, S, S});
    psi_ = ob::upload(pb::require(in, geo::kPsi), {items_, S});
    if (!batched_) {
      outputs_ = {&per_pair(float(geo::ref::kWedgeSign)), &per_pair(float(geo::ref::kTensorSign))};
      return;
    }
    ob::RenewableMemory& g = pair_matrices();  // [2, d, d, S, S]
    if (shared_pairs_) {
      ob::RenewableMemory& both = contraction(outer_product(), g, 0, 2 * kPlane);
      outputs_ = {&both, &both};
      return;
    }
    outputs_ = {&contraction(outer_product(), g, 0, kPlane), &contraction(outer_product(), g, kPlane * kMatrix, kPlane)};
  }

  void poison_outputs() override {
    for (ob::RenewableMemory* out : outputs_) ob::fill_floats(out->get(), std::numeric_limits<float>::quiet_NaN());
  }

  void run() override { program_(); }

  pb::ArrayMap outputs() override {
    const std::vector<int64_t> shape{shape_.batch, shape_.positions, d, d};
    if (!shared_pairs_) return {{geo::kPhi, ob::download(outputs_[0]->get(), shape)}, {geo::kTheta, ob::download(outputs_[1]->get(), shape)}};
    const std::vector<float> both = ob::read_floats_to_host(outputs_[0]->get());  // [items, 2 d^2]
    pb::ArrayMap out{{geo::kPhi, pb::HostArray::zeros(shape)}, {geo::kTheta, pb::HostArray::zeros(shape)}};
    for (int64_t item = 0; item < items_; ++item)
      for (int64_t e = 0; e < kPlane; ++e) {
        out[geo::kPhi].values[item * kPlane + e] = both[item * 2 * kPlane + e];
        out[geo::kTheta].values[item * kPlane + e] = both[item * 2 * kPlane + kPlane + e];
      }
    return out;
  }

 private:
  /// A new array written in run(): renewed before its writer runs.
  ob::RenewableMemory& fresh(const dnnl::memory::desc& desc) {
    ob::RenewableMemory& array = arrays_.emplace_back(desc);
    program_.host_step([&array] { array.renew(); });
    return array;
  }

  dnnl::memory gamma_matrix(int64_t m) const { return ob::view(gamma_, ob::dense({S, S}), m * kMatrix); }

  /// The original loop of one output (k1_wedge with sign -1, k2_tensor with +1).
  ob::RenewableMemory& per_pair(float sign) {
    ob::RenewableMemory& out = fresh(ob::dense({items_, kPlane}));
    ob::PostOps half;
    half.eltwise(algorithm::eltwise_linear, 0.5f, 0.0f);
    for (int64_t m = 0; m < d; ++m)
      for (int64_t n = 0; n < d; ++n) {
        ob::RenewableMemory& forward = fresh(ob::dense({S, S}));
        program_.add(ob::matmul(gamma_matrix(m), gamma_matrix(n), forward.get()));
        ob::RenewableMemory& backward = fresh(ob::dense({S, S}));
        program_.add(ob::matmul(gamma_matrix(n), gamma_matrix(m), backward.get()));
        ob::RenewableMemory& g = fresh(ob::dense({S, S}));
        program_.add(ob::binary(sign < 0 ? algorithm::binary_sub : algorithm::binary_add, forward.get(), backward.get(), g.get(), half));
        ob::RenewableMemory& t = fresh(ob::dense({items_, S}));
        program_.add(ob::matmul(psi_, g.get(), t.get()));
        program_.add(ob::binary(algorithm::binary_mul, t.get(), psi_, t.get()));
        ob::RenewableMemory& form = fresh(ob::dense({items_, 1}));
        program_.add(ob::reduce(algorithm::reduction_sum, t.get(), form.get()));
        program_.add(ob::copy(form.get(), out.view(ob::strided({items_, 1}, {kPlane, 1}), m * d + n)));
      }
    return out;
  }

  /// G [2, d, d, S, S]: P = gamma_m gamma_n by one broadcast matmul, then 0.5 (P - P^T) and
  /// 0.5 (P + P^T), P^T being P viewed with m and n swapped.
  ob::RenewableMemory& pair_matrices() {
    ob::RenewableMemory& p = fresh(ob::dense({d, d, S, S}));
    program_.add(ob::matmul(ob::view(gamma_, ob::dense({d, 1, S, S})), ob::view(gamma_, ob::dense({1, d, S, S})), p.get()));
    const dnnl::memory swapped = p.view(ob::strided({d, d, S, S}, {S * S, d * S * S, S, 1}));
    ob::RenewableMemory& g = fresh(ob::dense({2, d, d, S, S}));
    ob::PostOps half;
    half.eltwise(algorithm::eltwise_linear, 0.5f, 0.0f);
    program_.add(ob::binary(algorithm::binary_sub, p.get(), swapped, g.view(ob::dense({d, d, S, S}), 0), half));
    program_.add(ob::binary(algorithm::binary_add, p.get(), swapped, g.view(ob::dense({d, d, S, S}), kPlane * kMatrix), half));
    return g;
  }

  /// psi psi^T for every item, [items, S, S]: a batched matmul [S, 1] x [1, S].
  ob::RenewableMemory& outer_product() {
    ob::RenewableMemory& outer = fresh(ob::dense({items_, S, S}));
    program_.add(ob::matmul(ob::view(psi_, ob::dense({items_, S, 1})), ob::view(psi_, ob::dense({items_, 1, S})), outer.get()));
    return outer;
  }

  /// out [items, columns] = outer [items, S^2] x G^T, G the `columns` matrices of S^2 values
  /// starting `offset` values into `g`. (Views of a renewed array come from its own view(), so
  /// they follow it to new storage.)
  ob::RenewableMemory& contraction(ob::RenewableMemory& outer, ob::RenewableMemory& g, int64_t offset, int64_t columns) {
    ob::RenewableMemory& out = fresh(ob::dense({items_, columns}));
    const dnnl::memory g_transposed = g.view(ob::strided({kMatrix, columns}, {1, kMatrix}), offset);
    program_.add(ob::matmul(outer.view(ob::dense({items_, kMatrix})), g_transposed, out.get()));
    return out;
  }

  std::string device_;
  geo::MetricShape shape_;
  bool batched_, shared_pairs_;
  int64_t items_ = 0;
  dnnl::memory gamma_, psi_;
  std::deque<ob::RenewableMemory> arrays_;  // stable addresses: the program's steps hold them
  std::vector<ob::RenewableMemory*> outputs_;
  ob::Program program_;
};

const pb::VariantRegistration registration{
    geo::kComplexMetric, "onednn", {geo::kBaseline, geo::kBatchedContraction, geo::kSharedPairs},
    [](const pb::VariantContext& context) { return std::make_unique<ComplexMetricOnednn>(context); }};

}  // namespace
