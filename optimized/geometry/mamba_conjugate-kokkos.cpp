// geometry/mamba_conjugate on Kokkos (default execution space). Phases 0-2: the executor ladder of
// mamba_conjugate_ladder.hpp (what each phase launches and allocates; the kernel bodies the CUDA
// variant and the host tests run too) on KokkosExecutor (metric_executor-kokkos.hpp). Phase 3,
// sign_vectors (host cores only): both results in one kernel over blocks of rows, each
// row multiplied by the constant signs (mamba_conjugate_bodies.hpp), compiled for AVX-512, AVX2
// and the baseline (host_vectorization.hpp). Math: reference/geometry/mamba_conjugate.hpp.

#include <memory>
#include <optional>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/geometry/mamba_conjugate_bodies.hpp"
#include "optimized/geometry/mamba_conjugate_ladder.hpp"
#include "optimized/geometry/metric_executor-kokkos.hpp"

namespace pb::kokkos_backend {
namespace {

namespace gk = pb::geometry_kernels;
namespace sv = pb::geometry_kernels::sign_vectors;

#ifdef PB_KOKKOS_KERNELS_ON_HOST

#ifdef PB_KOKKOS_HOST_ISA_CLONES
PB_HOST_ISA_CLONES void both_tensors_block_cloned(
    const float* r, const float* i, float* r_conj, float* i_conj, int64_t rows, int64_t item) {
  sv::both_tensors_block(r, i, r_conj, i_conj, rows, item);
}
#define PB_MC_BOTH_TENSORS_BLOCK both_tensors_block_cloned
#else
#define PB_MC_BOTH_TENSORS_BLOCK sv::both_tensors_block
#endif

/// Work item b: one block of one of the two results (sv::both_tensors_block).
struct BothConjugates {
  const float* r;
  const float* i;
  float* r_conj;
  float* i_conj;
  int64_t rows;
  void operator()(int64_t b) const { PB_MC_BOTH_TENSORS_BLOCK(r, i, r_conj, i_conj, rows, b); }
};

#endif  // PB_KOKKOS_KERNELS_ON_HOST

/// sign_vectors: one kernel per iteration, results fresh each run as the original returns new
/// tensors, no host read.
class MambaConjugateSignVectors final : public Variant {
 public:
  std::optional<CannotRun> support() const override { return host_cores_only(gk::mc::kSignVectors); }

  void setup(const ArrayMap& in) override {
    const HostArray& r = require(in, gk::mc::kStateReal);
    shape_ = r.shape;
    values_ = r.numel();
    r_ = gk::upload_array(exec_, r);
    i_ = gk::upload_array(exec_, require(in, gk::mc::kStateImag));
  }

  void poison_outputs() override {
    gk::poison_buffers(exec_, {&r_conj_, &i_conj_}, values_);
    Kokkos::fence();
  }

  void run() override {
    r_conj_ = exec_.allocate<float>(values_);
    i_conj_ = exec_.allocate<float>(values_);
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    const int64_t rows = values_ / gk::kComponents;
    exec_.for_each("mc.sign_rows", 2 * sv::blocks(rows), BothConjugates{r_.data(), i_.data(), r_conj_.data(), i_conj_.data(), rows});
#endif
  }

  ArrayMap outputs() override {
    return {{gk::mc::kConjReal, gk::download_array(exec_, r_conj_, shape_)},
            {gk::mc::kConjImag, gk::download_array(exec_, i_conj_, shape_)}};
  }

 private:
  using Buffer = KokkosExecutor::Buffer<float>;
  KokkosExecutor exec_;
  Buffer r_, i_, r_conj_, i_conj_;
  std::vector<int64_t> shape_;
  int64_t values_ = 0;
};

const VariantRegistration registration{
    gk::mc::kMambaConjugate, "kokkos",
    {gk::mc::kCloneAssign, gk::mc::kInPlaceNeg, gk::mc::kSinglePass, gk::mc::kSignVectors},
    kokkos_ladder_factory_beyond<gk::MambaConjugateLadder, MambaConjugateSignVectors>(gk::mc::kSignVectors)};

}  // namespace
}  // namespace pb::kokkos_backend
