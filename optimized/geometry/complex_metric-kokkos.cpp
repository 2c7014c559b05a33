// geometry/complex_metric on Kokkos (default execution space). Phases 0-2: the executor ladder of
// complex_metric_ladder.hpp (what each phase launches; the kernel bodies the CUDA variant and the
// host tests run too) on KokkosExecutor (metric_executor-kokkos.hpp). Phase 3, entry_vectors
// (host cores only): the weights of Q = psi^T 1/2 gamma_m gamma_n psi laid out by pair,
// then one kernel over blocks of items, Q in SIMD registers, Phi = Q - Q^T and Theta = Q + Q^T
// (complex_metric_bodies.hpp), compiled for AVX-512, AVX2 and the baseline (host_vectorization.hpp). Math: reference/geometry/complex_metric.hpp.

#include <memory>
#include <optional>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/geometry/complex_metric_bodies.hpp"
#include "optimized/geometry/complex_metric_ladder.hpp"
#include "optimized/geometry/metric_executor-kokkos.hpp"

namespace pb::kokkos_backend {
namespace {

namespace gk = pb::geometry_kernels;
namespace ev = pb::geometry_kernels::entry_vectors;

#ifdef PB_KOKKOS_KERNELS_ON_HOST

#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void entry_vectors_block_cloned(
    const float* weights, const float* psi, float* phi, float* theta, int64_t items, int64_t block) {
  ev::block(weights, psi, phi, theta, items, block);
}
#define PB_CM_ENTRY_VECTORS_BLOCK entry_vectors_block_cloned
#else
#define PB_CM_ENTRY_VECTORS_BLOCK ev::block
#endif

/// The weights of Q by pair ([pair][entry], complex_metric_bodies.hpp), from gamma.
struct EntryWeights {
  const float* gamma;
  float* weights;
  void operator()(int64_t index) const { weights[index] = ev::folded_weight(gamma, index); }
};

/// One block of items: both outputs of each, every entry.
struct EntryBlocks {
  const float* weights;
  const float* psi;
  float* phi;
  float* theta;
  int64_t items;
  void operator()(int64_t block) const { PB_CM_ENTRY_VECTORS_BLOCK(weights, psi, phi, theta, items, block); }
};

#endif  // PB_KOKKOS_KERNELS_ON_HOST

/// entry_vectors: two kernels per iteration (the 640 weights from gamma, as the original builds
/// its pair matrices per call; then the items), outputs fresh each run as the original returns new
/// tensors, no host read.
class ComplexMetricEntryVectors final : public Variant {
 public:
  std::optional<CannotRun> support() const override { return host_cores_only(gk::cm::kEntryVectors); }

  void setup(const ArrayMap& in) override {
    const HostArray& psi = require(in, gk::cm::kPsi);
    batch_ = psi.shape.at(0), positions_ = psi.shape.at(1);
    items_ = batch_ * positions_;
    gamma_ = gk::upload_array(exec_, require(in, gk::cm::kGamma));
    psi_ = gk::upload_array(exec_, psi);
    weights_ = exec_.allocate<float>(ev::kWeightCount);
  }

  void poison_outputs() override {
    gk::poison_buffers(exec_, {&phi_, &theta_}, items_ * gk::kPlane);
    Kokkos::fence();
  }

  void run() override {
    phi_ = exec_.allocate<float>(items_ * gk::kPlane);
    theta_ = exec_.allocate<float>(items_ * gk::kPlane);
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    exec_.for_each("cm.weights", ev::kWeightCount, EntryWeights{gamma_.data(), weights_.data()});
    exec_.for_each("cm.entry_rows", ev::blocks(items_),
                   EntryBlocks{weights_.data(), psi_.data(), phi_.data(), theta_.data(), items_});
#endif
  }

  ArrayMap outputs() override {
    const std::vector<int64_t> shape{batch_, positions_, gk::kD, gk::kD};
    return {{gk::cm::kPhi, gk::download_array(exec_, phi_, shape)},
            {gk::cm::kTheta, gk::download_array(exec_, theta_, shape)}};
  }

 private:
  using Buffer = KokkosExecutor::Buffer<float>;
  KokkosExecutor exec_;
  Buffer gamma_, psi_, weights_, phi_, theta_;
  int64_t batch_ = 0, positions_ = 0, items_ = 0;
};

const VariantRegistration registration{
    gk::cm::kComplexMetric, "kokkos",
    {gk::cm::kBaseline, gk::cm::kBatchedContraction, gk::cm::kSharedPairs, gk::cm::kEntryVectors},
    kokkos_ladder_factory_beyond<gk::ComplexMetricLadder, ComplexMetricEntryVectors>(gk::cm::kEntryVectors)};

}  // namespace
}  // namespace pb::kokkos_backend
