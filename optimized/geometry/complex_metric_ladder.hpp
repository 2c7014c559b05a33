#pragma once
// geometry/complex_metric on an executor: the kernel bodies and the ladder, written once against
// the executor interface of backends/cuda/device_executor.cuh (allocate, for_each, zero, upload,
// download), so that the same code runs as CUDA kernels (DeviceExecutor, complex_metric-cuda.cu),
// as Kokkos kernels (KokkosExecutor, complex_metric-kokkos.hpp) and on the host in the tests
// (HostExecutor, tests/geometry_metric_test.cpp). The bodies call the reference's own per-entry
// functions (reference/geometry/complex_metric.hpp). No host read in run().
//
//   baseline:            per output and (m, n): a fresh [S,S] buffer, one launch writing G_mn,
//                        one launch of psi^T G_mn psi over all items into out[..., m, n];
//                        the outputs fresh and zeroed each run (the original's torch.zeros)
//   batched_contraction: one launch writing all 2 d^2 pair matrices, one launch per output
//                        over (item, m, n)                                     (the seed)
//   shared_pairs:        one launch writing all pair matrices, one folding them over i <= j into
//                        [2 d^2, 10] weights, one launch over items: the 10 products psi_i psi_j
//                        once, the 28 + 36 upper entries, the rest written by (anti)symmetry
// Kernel names are at most 15 characters: KokkosExecutor builds a std::string from each, which
// then needs no heap allocation (counted as bytes allocated inside run()).

#include <cstdint>
#include <vector>

#include "backends/cuda/host_device.hpp"
#include "phasebench/arrays.hpp"
#include "optimized/geometry/metric_executor.hpp"
#include "phasebench/phases.hpp"
#include "suites/geometry/complex_metric.hpp"

namespace pb::geometry_kernels {

namespace cm = pb::suites::geometry::complex_metric;
constexpr int kS = cm::ref::kSpinor, kD = cm::ref::kCoordinates, kPairCount = cm::ref::kPairs;
constexpr int64_t kMatrixSize = kS * kS, kPlane = kD * kD;

/// Pair p < S(S+1)/2 in the order (0,0), (0,1), ..., (0,S-1), (1,1), ...: its (i, j), i <= j.
PB_HOST_DEVICE inline void pair_of(int p, int& i, int& j) {
  i = 0;
  while (p >= kS - i) p -= kS - i++;
  j = i + p;
}

/// One pair matrix 1/2 (gamma_m gamma_n + sign gamma_n gamma_m) [S, S] (baseline).
struct OnePairMatrix {
  const float* gamma;
  float* out;
  int m, n;
  float sign;
  PB_HOST_DEVICE void operator()(int64_t ij) const {
    out[ij] = cm::ref::pair_matrix_entry(gamma, m, n, static_cast<int>(ij / kS), static_cast<int>(ij % kS), sign);
  }
};

/// Every pair matrix: out [2, d, d, S, S], part 0 the commutators (Phi), part 1 the
/// anticommutators (Theta).
struct AllPairMatrices {
  const float* gamma;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t index) const {
    const int64_t matrix = index / kMatrixSize, ij = index % kMatrixSize;
    const int m = static_cast<int>(matrix / kD % kD), n = static_cast<int>(matrix % kD);
    const float sign = matrix < kPlane ? float(cm::ref::kWedgeSign) : float(cm::ref::kTensorSign);
    out[index] = cm::ref::pair_matrix_entry(gamma, m, n, static_cast<int>(ij / kS), static_cast<int>(ij % kS), sign);
  }
};

/// psi^T M_k psi for `per_item` consecutive matrices M_k per item: index = item * per_item + k
/// writes out[item * stride + offset + k].
struct QuadraticForms {
  const float* psi;
  const float* matrices;
  float* out;
  int64_t per_item, stride, offset;
  PB_HOST_DEVICE void operator()(int64_t index) const {
    const int64_t item = index / per_item, k = index % per_item;
    out[item * stride + offset + k] = cm::ref::quadratic_form(psi + item * kS, matrices + k * kMatrixSize);
  }
};

/// The pair matrices folded over i <= j: weights [2 d^2, 10], M_ij + M_ji off the diagonal, M_ii
/// on it, so that psi^T M psi = sum_p weights[p] psi_i psi_j.
struct FoldedPairWeights {
  const float* matrices;  // [2 d^2, S, S]
  float* weights;         // [2 d^2, 10]
  PB_HOST_DEVICE void operator()(int64_t index) const {
    const float* matrix = matrices + index / kPairCount * kMatrixSize;
    int i = 0, j = 0;
    pair_of(static_cast<int>(index % kPairCount), i, j);
    weights[index] = i == j ? matrix[i * kS + i] : matrix[i * kS + j] + matrix[j * kS + i];
  }
};

/// One item: the 10 pair products once, the upper triangles of Phi (m < n) and Theta (m <= n),
/// the rest by Phi_nm = -Phi_mn, Phi_mm = 0, Theta_nm = Theta_mn.
struct SharedPairs {
  const float* psi;
  const float* weights;  // FoldedPairWeights: rows [0, d^2) Phi's, [d^2, 2 d^2) Theta's
  float* phi;
  float* theta;
  PB_HOST_DEVICE void operator()(int64_t item) const {
    const float* x = psi + item * kS;
    float pairs[kPairCount];
    for (int p = 0; p < kPairCount; ++p) {
      int i = 0, j = 0;
      pair_of(p, i, j);
      pairs[p] = x[i] * x[j];
    }
    float* phi_item = phi + item * kPlane;
    float* theta_item = theta + item * kPlane;
    for (int m = 0; m < kD; ++m) {
      phi_item[m * kD + m] = 0.f;
      for (int n = m; n < kD; ++n) {
        const float* w_theta = weights + (kPlane + m * kD + n) * kPairCount;
        float t = 0.f;
        for (int p = 0; p < kPairCount; ++p) t += w_theta[p] * pairs[p];
        theta_item[m * kD + n] = theta_item[n * kD + m] = t;
        if (n == m) continue;
        const float* w_phi = weights + (m * kD + n) * kPairCount;
        float f = 0.f;
        for (int p = 0; p < kPairCount; ++p) f += w_phi[p] * pairs[p];
        phi_item[m * kD + n] = f;
        phi_item[n * kD + m] = -f;
      }
    }
  }
};

template <typename Exec>
class ComplexMetricLadder {
 public:
  ComplexMetricLadder(Exec& exec, const ArrayMap& in, const PhasePlan& plan)
      : exec_(exec),
        batched_(plan.has(cm::kBatchedContraction)),
        shared_pairs_(plan.has(cm::kSharedPairs)),
        gamma_(upload_array(exec, require(in, cm::kGamma))),
        psi_(upload_array(exec, require(in, cm::kPsi))) {
    const HostArray& psi = require(in, cm::kPsi);
    batch_ = psi.shape.at(0), positions_ = psi.shape.at(1);
    items_ = batch_ * positions_;
  }

  /// Queues one iteration: fresh outputs, as the original returns new tensors.
  void run() {
    phi_ = exec_.template allocate<float>(items_ * kPlane);
    theta_ = exec_.template allocate<float>(items_ * kPlane);
    if (!batched_) return run_per_pair();
    Buffer matrices = exec_.template allocate<float>(2 * kPlane * kMatrixSize);
    exec_.for_each("cm.pairs", 2 * kPlane * kMatrixSize, AllPairMatrices{gamma_.data(), matrices.data()});
    if (shared_pairs_) {
      Buffer weights = exec_.template allocate<float>(2 * kPlane * kPairCount);
      exec_.for_each("cm.fold", 2 * kPlane * kPairCount, FoldedPairWeights{matrices.data(), weights.data()});
      exec_.for_each("cm.shared_pairs", items_, SharedPairs{psi_.data(), weights.data(), phi_.data(), theta_.data()});
      return;
    }
    exec_.for_each("cm.phi", items_ * kPlane, QuadraticForms{psi_.data(), matrices.data(), phi_.data(), kPlane, kPlane, 0});
    exec_.for_each("cm.theta", items_ * kPlane,
                   QuadraticForms{psi_.data(), matrices.data() + kPlane * kMatrixSize, theta_.data(), kPlane, kPlane, 0});
  }

  void poison_outputs() {
    poison_buffers(exec_, {&phi_, &theta_}, items_ * kPlane);
  }

  ArrayMap outputs() {
    const std::vector<int64_t> shape{batch_, positions_, kD, kD};
    return {{cm::kPhi, download_array(exec_, phi_, shape)}, {cm::kTheta, download_array(exec_, theta_, shape)}};
  }

 private:
  using Buffer = typename Exec::template Buffer<float>;

  /// k1_wedge, then k2_tensor, as the original: d^2 pair matrices and contractions each.
  void run_per_pair() {
    for (auto [out, sign] : {std::pair{phi_.data(), float(cm::ref::kWedgeSign)}, std::pair{theta_.data(), float(cm::ref::kTensorSign)}}) {
      exec_.zero(out, items_ * kPlane);
      for (int m = 0; m < kD; ++m)
        for (int n = 0; n < kD; ++n) {
          Buffer g = exec_.template allocate<float>(kMatrixSize);
          exec_.for_each("cm.pair_matrix", kMatrixSize, OnePairMatrix{gamma_.data(), g.data(), m, n, sign});
          exec_.for_each("cm.contraction", items_, QuadraticForms{psi_.data(), g.data(), out, 1, kPlane, m * kD + n});
        }
    }
  }



  Exec& exec_;
  bool batched_, shared_pairs_;
  Buffer gamma_, psi_, phi_, theta_;
  int64_t batch_ = 0, positions_ = 0, items_ = 0;
};

}  // namespace pb::geometry_kernels
