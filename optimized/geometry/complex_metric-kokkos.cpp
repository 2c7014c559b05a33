// geometry/complex_metric on Kokkos (default execution space): the executor ladder of
// complex_metric-ladder.hpp (what each phase launches; the kernel bodies the CUDA variant and the
// host tests run too) on KokkosExecutor (metric-kokkos_executor.hpp). Math:
// reference/geometry/complex_metric.hpp.

#include "optimized/geometry/complex_metric-ladder.hpp"
#include "optimized/geometry/metric-kokkos_executor.hpp"

namespace pb::kokkos_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::cm::kComplexMetric, "kokkos",
                                       {gk::cm::kBaseline, gk::cm::kBatchedContraction, gk::cm::kSharedPairs},
                                       kokkos_ladder_factory<gk::ComplexMetricLadder>()};

}  // namespace
}  // namespace pb::kokkos_backend
