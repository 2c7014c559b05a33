// geometry/mamba_conjugate on Kokkos (default execution space): the executor ladder of
// mamba_conjugate-ladder.hpp (what each phase launches and allocates; the kernel bodies the CUDA
// variant and the host tests run too) on KokkosExecutor (metric-kokkos_executor.hpp). Math:
// reference/geometry/mamba_conjugate.hpp.

#include "optimized/geometry/mamba_conjugate-ladder.hpp"
#include "optimized/geometry/metric-kokkos_executor.hpp"

namespace pb::kokkos_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::mc::kMambaConjugate, "kokkos",
                                       {gk::mc::kCloneAssign, gk::mc::kInPlaceNeg, gk::mc::kSinglePass},
                                       kokkos_ladder_factory<gk::MambaConjugateLadder>()};

}  // namespace
}  // namespace pb::kokkos_backend
