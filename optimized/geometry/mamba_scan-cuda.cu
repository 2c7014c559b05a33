// geometry/mamba_scan on CUDA: the executor ladder of mamba_scan_ladder.hpp (what each phase
// launches; the kernel bodies, which tests/geometry_scan_test.cpp runs on the host) on a
// DeviceExecutor (metric_variant-cuda.cuh). SKIPPED without a device: compiled here, never run on
// a GPU. Math: reference/geometry/mamba_scan.hpp.

#include "optimized/geometry/mamba_scan_ladder.hpp"
#include "optimized/geometry/metric_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

namespace gk = pb::geometry_kernels;

const VariantRegistration registration{gk::ms::kMambaScan, "cuda",
                                       {gk::ms::kSequential, gk::ms::kHoisted, gk::ms::kParallelScan},
                                       cuda_ladder_factory<gk::MambaScanLadder>()};

}  // namespace
}  // namespace pb::cuda_backend
