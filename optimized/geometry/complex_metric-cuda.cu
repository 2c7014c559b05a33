// geometry/complex_metric on CUDA: the executor ladder of complex_metric_ladder.hpp (what each phase launches and
// allocates; the kernel bodies, which tests/geometry_metric_test.cpp runs on the host) on a
// DeviceExecutor (metric_variant-cuda.cuh). SKIPPED without a device: compiled here, never run on a
// GPU. Math: reference/geometry/complex_metric.hpp.

#include "optimized/geometry/complex_metric_ladder.hpp"
#include "optimized/geometry/metric_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::cm::kComplexMetric, "cuda", {gk::cm::kBaseline, gk::cm::kBatchedContraction, gk::cm::kSharedPairs}, cuda_ladder_factory<gk::ComplexMetricLadder>()};

}  // namespace
}  // namespace pb::cuda_backend
