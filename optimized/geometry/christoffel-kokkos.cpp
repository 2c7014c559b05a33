// geometry/christoffel on Kokkos (default execution space). Math: reference/geometry/christoffel.hpp
// (its per-point functions run in these kernels); catalog: suites/geometry/christoffel.cpp.
//
//   metrics[p, k] = G(x_p + shift_k), k = 0 the point itself, 1..d the +e shifts, d+1..2d the -e
//   D[p, rho] = (metrics[p, 1+rho] - metrics[p, 1+d+rho]) / 2e;  Gamma = 1/2 Ginv S
//
// Ladder: nested_loops clones x per shifted column (fresh Views, as torch's clone()), runs one
// metric kernel per evaluation, the inverse, and one kernel per (lam, mu, nu, rho) accumulating a
// slice of Gamma (d^4 launches); einsum_contraction shifts inside the metric kernel (no clones)
// and contracts S with Ginv in one kernel per point; batched_metric evaluates all 2d + 1 metrics
// in one launch; solve solves G Gamma = S^T / 2 per point instead of forming Ginv.
//
// vectorized_points (host cores only): one block of 16 points per work item, the block's
// body optimized/geometry/christoffel_simd_bodies.hpp (one point per SIMD lane) compiled for
// AVX-512, AVX2 and the baseline (host_vectorization.hpp). No intermediate View: a block's metrics,
// derivatives and solve stay in its 48 kB of stack scratch, and Gamma is written once.

#include <memory>
#include <optional>
#include <string>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/geometry/christoffel_simd_bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/christoffel.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

using Vec = DeviceView<float*>;
using Rows = Kokkos::View<float**, Kokkos::LayoutRight, MemSpace>;     // [points, width]
using Slots = Kokkos::View<float***, Kokkos::LayoutRight, MemSpace>;   // [points, slots, d^2]

constexpr int d = ref::kDim;
constexpr int kEvaluations = ref::kEvaluations;

const std::string kCloneLabel = "christoffel/clone", kShiftLabel = "christoffel/shift";
const std::string kMetricLabel = "christoffel/metric", kDerivativeLabel = "christoffel/derivative";
const std::string kInverseLabel = "christoffel/inverse", kLoopLabel = "christoffel/accumulate";
const std::string kContractLabel = "christoffel/contract", kSolveLabel = "christoffel/solve";
const std::string kBlocksLabel = "christoffel/blocks";

#ifdef PB_KOKKOS_KERNELS_ON_HOST
namespace simd = pb::geometry_kernels::christoffel_simd;

/// One block, its scratch on this thread's stack (compiled once per ISA: the loader picks the clone).
PB_HOST_ISA_CLONES void christoffel_block_cloned(const simd::PreparedWeights& w, const float* x, float* gamma,
                                                 int64_t points, int64_t block) {
  simd::BlockScratch scratch;
  simd::christoffel_block_of(w, x, gamma, points, block, scratch);
}

/// vectorized_points' kernel: block b (points [16 b, 16 b + 16) of x) per work item, through the
/// Views' pointers (the host's LayoutRight: a point's d coordinates and d^3 symbols are contiguous).
struct ChristoffelBlocks {
  const simd::PreparedWeights* weights;
  const float* x;
  float* gamma;
  int64_t points;
  void operator()(int64_t block) const { christoffel_block_cloned(*weights, x, gamma, points, block); }
};
#endif  // PB_KOKKOS_KERNELS_ON_HOST

class ChristoffelKokkos final : public Variant {
 public:
  explicit ChristoffelKokkos(const VariantContext& context)
      : contraction_(context.has(geo::kContraction)),
        batched_(context.has(geo::kBatchedMetric)),
        solve_(context.has(geo::kSolve)),
        vectorized_(context.has(geo::kVectorizedPoints)) {}

  std::optional<CannotRun> support() const override {
    return vectorized_ ? host_cores_only(geo::kVectorizedPoints) : std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    const HostArray& x = require(inputs, geo::kPoints);
    points_ = x.numel() / d;
    x_ = to_device<Rows>("x", x, points_, d);
    gamma_ = Rows("gamma", points_, ref::kGammaSize);
    shape_ = geo::gamma_shape(x);
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    if (vectorized_) {  // its own weight layout; a block keeps its intermediates in registers and stack
      prepared_ = simd::prepare(geo::MetricParameters<float>(inputs).view());
      return;
    }
#endif
    const auto upload = [&](const std::string& name) {
      const HostArray& array = require(inputs, name);
      return to_device<Vec>(name, array, array.numel());
    };
    for (const std::string& name : {geo::kResilienceW1, geo::kResilienceB1, geo::kResilienceW2, geo::kResilienceB2,
                                    geo::kMetricW1, geo::kMetricB1, geo::kMetricW2, geo::kMetricB2, geo::kFactor})
      weights_.push_back(upload(name));
    metrics_ = Slots("metrics", points_, kEvaluations, ref::kMetricSize);
    derivatives_ = Slots("derivatives", points_, d, ref::kMetricSize);
    inverse_ = Rows("inverse", points_, ref::kMetricSize);
  }

  void poison_outputs() override {
    fill_nan(gamma_);
    Kokkos::fence();
  }

  void run() override {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    if (vectorized_) {
      Kokkos::parallel_for(kBlocksLabel, RangePolicy(0, simd::blocks(points_)),
                           ChristoffelBlocks{&prepared_, x_.data(), gamma_.data(), points_});
      return;
    }
#endif
    evaluate_metrics();
    differentiate();
    if (solve_) return solve_per_point();
    invert();
    if (contraction_) return contract();
    nested_loops();
  }

  ArrayMap outputs() override {
    const auto host = copy_for_outputs(gamma_);
    return {{geo::kGamma, HostArray::from_floats(shape_, host.data(), static_cast<int64_t>(host.span()))}};
  }

 private:
  ref::MetricWeights<float> weights() const {
    const auto p = [&](int i) { return static_cast<const float*>(weights_[i].data()); };
    return {{p(0), p(1), p(2), p(3)}, p(4), p(5), p(6), p(7), p(8)};
  }

  /// metrics[., k] for every slot k: one launch per slot, or (batched_metric) one for all. Without
  /// einsum_contraction each shifted input is a clone of x with one column shifted, as the original.
  void evaluate_metrics() {
    const auto w = weights();
    const Slots metrics = metrics_;
    if (batched_) {
      const Rows x = x_;
      Kokkos::parallel_for(
          kMetricLabel, RangePolicy(0, points_ * kEvaluations), KOKKOS_LAMBDA(int64_t i) {
            const int64_t p = i / kEvaluations;
            ref::metric_at_slot(w, &x(p, 0), static_cast<int>(i % kEvaluations), &metrics(p, i % kEvaluations, 0));
          });
      return;
    }
    for (int k = 0; k < kEvaluations; ++k) {
      const Rows x = contraction_ ? x_ : cloned_and_shifted(k);
      const int shift = contraction_ ? k : 0;  // a clone carries its shift already
      Kokkos::parallel_for(
          kMetricLabel, RangePolicy(0, points_),
          KOKKOS_LAMBDA(int64_t p) { ref::metric_at_slot(w, &x(p, 0), shift, &metrics(p, k, 0)); });
    }
  }

  /// A fresh copy of x with slot k's shift applied to its column (the original's clone + add_).
  Rows cloned_and_shifted(int k) const {
    const Rows clone = uninitialized<Rows>(kCloneLabel, points_, d);
    Kokkos::deep_copy(clone, x_);
    if (k == 0) return clone;
    const int axis = (k - 1) % d;
    const float step = ref::slot_shift<float>(k, axis);
    Kokkos::parallel_for(
        kShiftLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) { clone(p, axis) += step; });
    return clone;
  }

  /// derivatives[p, rho, ab] = (G(x + e e_rho) - G(x - e e_rho))_ab / 2e.
  void differentiate() const {
    const Slots metrics = metrics_, derivatives = derivatives_;
    Kokkos::parallel_for(
        kDerivativeLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) {
          ref::derivatives_from_slots(&metrics(p, 0, 0), &derivatives(p, 0, 0));
        });
  }

  void invert() const {
    const Slots metrics = metrics_;
    const Rows inverse = inverse_;
    Kokkos::parallel_for(
        kInverseLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) { ref::inverse(&metrics(p, 0, 0), &inverse(p, 0)); });
  }

  /// The original's four loops: one launch per (lam, mu, nu, rho), each adding its term to one
  /// slice of Gamma at every point.
  void nested_loops() const {
    const Slots D = derivatives_;
    const Rows inverse = inverse_, gamma = gamma_;
    Kokkos::deep_copy(gamma, 0.f);
    for (int lam = 0; lam < d; ++lam)
      for (int mu = 0; mu < d; ++mu)
        for (int nu = 0; nu < d; ++nu)
          for (int rho = 0; rho < d; ++rho) {
            const int out = (lam * d + mu) * d + nu;
            Kokkos::parallel_for(
                kLoopLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) {
                  gamma(p, out) += ref::loop_term(&inverse(p, 0), &D(p, 0, 0), lam, mu, nu, rho);
                });
          }
  }

  /// einsum_contraction: Gamma[l,m,n] = 1/2 sum_r Ginv[l,r] S[m,n,r], one kernel per point.
  void contract() const {
    const Slots D = derivatives_;
    const Rows inverse = inverse_, gamma = gamma_;
    Kokkos::parallel_for(
        kContractLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) {
          ref::contract_with_inverse(&inverse(p, 0), &D(p, 0, 0), &gamma(p, 0));
        });
  }

  /// solve: G X = S^T per point (X [d, d^2]), Gamma = X / 2, without forming Ginv.
  void solve_per_point() const {
    const Slots metrics = metrics_, D = derivatives_;
    const Rows gamma = gamma_;
    Kokkos::parallel_for(
        kSolveLabel, RangePolicy(0, points_), KOKKOS_LAMBDA(int64_t p) {
          ref::contract_by_solve(&metrics(p, 0, 0), &D(p, 0, 0), &gamma(p, 0));
        });
  }

  bool contraction_, batched_, solve_, vectorized_;
#ifdef PB_KOKKOS_KERNELS_ON_HOST
  simd::PreparedWeights prepared_{};
#endif
  int64_t points_ = 0;
  Rows x_;
  std::vector<Vec> weights_;  // R.w1, R.b1, R.w2, R.b2, H.w1, H.b1, H.w2, H.b2, L
  Slots metrics_, derivatives_;
  Rows inverse_, gamma_;
  std::vector<int64_t> shape_;
};

const VariantRegistration registration{
    geo::kChristoffel, "kokkos", {geo::kNestedLoops, geo::kContraction, geo::kBatchedMetric, geo::kSolve, geo::kVectorizedPoints},
    [](const VariantContext& context) { return std::make_unique<ChristoffelKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
