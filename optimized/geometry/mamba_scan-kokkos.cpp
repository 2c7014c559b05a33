// geometry/mamba_scan on Kokkos (default execution space): the executor ladder of
// mamba_scan_ladder.hpp (what each phase launches; the kernel bodies the CUDA variant and the host
// tests run too) on KokkosExecutor (metric_executor-kokkos.hpp). Math:
// reference/geometry/mamba_scan.hpp.

#include "optimized/geometry/mamba_scan_ladder.hpp"
#include "optimized/geometry/metric_executor-kokkos.hpp"

namespace pb::kokkos_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::ms::kMambaScan, "kokkos",
                                       {gk::ms::kSequential, gk::ms::kHoisted, gk::ms::kParallelScan},
                                       kokkos_ladder_factory<gk::MambaScanLadder>()};

}  // namespace
}  // namespace pb::kokkos_backend
