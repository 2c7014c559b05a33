// geometry/mamba_conjugate on CUDA: the executor ladder of mamba_conjugate_ladder.hpp (what each phase launches and
// allocates; the kernel bodies, which tests/geometry_metric_test.cpp runs on the host) on a
// DeviceExecutor (metric_variant-cuda.cuh). SKIPPED without a device: compiled here, never run on a
// GPU. Math: reference/geometry/mamba_conjugate.hpp.

#include "optimized/geometry/mamba_conjugate_ladder.hpp"
#include "optimized/geometry/metric_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::mc::kMambaConjugate, "cuda", {gk::mc::kCloneAssign, gk::mc::kInPlaceNeg, gk::mc::kSinglePass}, cuda_ladder_factory<gk::MambaConjugateLadder>()};

}  // namespace
}  // namespace pb::cuda_backend
