// geometry/complex_metric: definition (sizes, inputs, outputs, tolerances, phases and seed 001's
// claim, declared work). Reference: reference/geometry/complex_metric.hpp. Variants:
// optimized/geometry/complex_metric-<backend>.*
//
// Note on the seed: its batched einsum 'bni,mnij,bnj->bnmn' uses the letter n both for the
// position axis and for nu, so numpy and PyTorch reject it (repeated output subscript); the
// contraction it means is 'bki,mnij,bkj->bkmn', which phase 1 implements.

#include "suites/geometry/complex_metric.hpp"

#include <cmath>

#include "phasebench/rng.hpp"

namespace pb::suites::geometry::complex_metric {
namespace {

constexpr int S = ref::kSpinor, d = ref::kCoordinates;

class ComplexMetric final : public Workload {
 public:
  std::string suite() const override { return "geometry"; }
  std::string name() const override { return "complex_metric"; }
  std::string description() const override {
    return "Liorhybrid k1_wedge and k2_tensor: psi^T 1/2(gamma_m gamma_n -+ gamma_n gamma_m) psi for all "
           "(m, n), d = 8, S = 4";
  }
  std::string shape(SizeClass size) const override {
    const MetricShape s = metric_shape(size);
    return "B=" + std::to_string(s.batch) + " N=" + std::to_string(s.positions) + " d=8 S=4";
  }

  // gamma ~ N(0,1)/sqrt(S) as the original initializes it; psi ~ N(0,1). Phi's diagonal is zero by
  // antisymmetry (8 of 64 values, 12.5%: below the 30% that would make the check mistrusted).
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const MetricShape s = metric_shape(size);
    ArrayMap in;
    in[kGamma] = normal_array(seed, "geometry/complex_metric/gamma", {d, S, S}, 0, 1 / std::sqrt(double(S)));
    in[kPsi] = normal_array(seed, "geometry/complex_metric/psi", {s.batch, s.positions, S}, 0, 1);
    return in;
  }

  ArrayMap reference_fp64(const ArrayMap& in) const override {
    const HostArray& psi = require(in, kPsi);
    const int64_t items = psi.numel() / S;
    const std::vector<int64_t> shape{psi.shape.at(0), psi.shape.at(1), d, d};
    ArrayMap out;
    out[kPhi] = HostArray::zeros(shape, ElementType::Float64);
    out[kTheta] = HostArray::zeros(shape, ElementType::Float64);
    ref::evaluate<double>(require(in, kGamma).values.data(), psi.values.data(), items,
                                out[kPhi].values.data(), out[kTheta].values.data());
    return out;
  }

  // Each value is a sum of 16 products psi_i M_ij psi_j, M itself 1/2 of a difference or sum of
  // two 4-term dot products of gamma entries: ~40 fp32 roundings in a short, well-conditioned
  // sum; phasebench's fp32 default 1e-5 leaves two orders of margin over what verify finds
  // (docs/geometry.md) and still catches a wrong index.
  std::vector<OutputSpec> outputs() const override {
    const std::string reason =
        "fp32: 16 products psi_i M_ij psi_j over 1/2 of two 4-term gamma products, in any association: "
        "the fp32 default";
    return {{kPhi, 1e-5, reason}, {kTheta, 1e-5, reason}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kBaseline,
         "as the original k1_wedge and k2_tensor: for each (m, n) its pair matrix, then one "
         "contraction over all items into Phi[..., m, n] (2 d^2 = 128 contractions)"},
        PhaseInfo(1, kBatchedContraction,
                  "the seed: every pair matrix at once into G[m,n,S,S], then one batched contraction per "
                  "output ('bki,mnij,bkj->bkmn')")
            .claims(64, 64),
        {2, kSharedPairs,
         "beyond the seed: the S(S+1)/2 = 10 products psi_i psi_j once per item, shared by Phi and "
         "Theta, contracted with the pair matrices folded over i <= j; where the backend can, only "
         "the upper triangle, the rest by (anti)symmetry"},
        {3, kEntryVectors,
         "beyond the seed: Q_mn = psi^T 1/2 gamma_m gamma_n psi as four SIMD registers, "
         "one multiply-add per pair psi_i psi_j against weights laid out by pair, then Phi = Q - Q^T "
         "and Theta = Q + Q^T by register permutes, stored as they lie; host cores only"},
    };
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"), counted for the cheapest exact
  // form (shared_pairs). A flop is one add or multiply. Per item: the 10 pair products psi_i
  // psi_j (10), then the 28 entries of Phi above the diagonal and the 36 of Theta on or above it,
  // each a 10-term dot product (19); the rest are copies by (anti)symmetry: 10 + 64 * 19 = 1226.
  // Once per iteration, the folded pair matrices: for the 64 upper entries, 16 entries of
  // 1/2 (gamma_m gamma_n -+ gamma_n gamma_m) (two 4-term products 14, combine 1, halve 1: 16),
  // folded to 10 pairs (6 adds): 64 * (16 * 16 + 6) = 16,768.
  // Bytes, fp32: read gamma [d,S,S] and psi [B,N,S] once, write Phi and Theta [B,N,d,d] once.
  // Default (B N = 16384): 20.1 MFLOP, 8.65 MB.
  WorkEstimate work(SizeClass size) const override {
    const double items = double(metric_shape(size).items());
    const double upper = d * (d - 1) / 2 + d * (d + 1) / 2;
    const double flops = items * (ref::kPairs + upper * (2 * ref::kPairs - 1)) + upper * (S * S * 16.0 + 6);
    const double bytes = 4.0 * (d * S * S + items * S) + 4.0 * 2 * items * d * d;
    return {flops, bytes};
  }

  // The fp64 check holds inputs, the reference and a variant's outputs (fp64 host arrays) at
  // once, with room for one copy more.
  double memory_bytes(SizeClass size) const override {
    const double items = double(metric_shape(size).items());
    return 8.0 * 4 * (items * S + 2 * items * d * d);
  }
};

const WorkloadRegistration registration{std::make_shared<ComplexMetric>()};

}  // namespace
}  // namespace pb::suites::geometry::complex_metric
