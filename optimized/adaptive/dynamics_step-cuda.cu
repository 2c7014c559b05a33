// adaptive/dynamics_step on CUDA: the ladder of dynamics_step_bodies.hpp (the kernel bodies and
// which kernels each phase launches) on a DeviceExecutor, a stream of the variant's own
// (optimized/geometry/metric_variant-cuda.cuh). Math: reference/adaptive/dynamics_step.hpp;
// catalog: suites/adaptive/dynamics_step.cpp; docs/adaptive.md. Each function of the original is a
// named region (pb::counters::Region), its launches counted apart. There is no autograd graph, so
// detached_state is UNSUPPORTED (the harness writes that row from the catalog). Without a usable
// device support() reports SKIPPED. Compiled by nvcc here, its ladder run on the host by
// tests/cuda/adaptive_cuda_test.cpp; never run on a GPU.

#include "optimized/adaptive/dynamics_step_bodies.hpp"
#include "optimized/geometry/metric_variant-cuda.cuh"
#include "phasebench/variant.hpp"

namespace pb::cuda_backend::adaptive {
namespace {

const VariantRegistration registration{ad::kDynamicsStep, "cuda", ad::kGraphFreePhases,
                                       cuda_ladder_factory<DynamicsLadder>()};

}  // namespace
}  // namespace pb::cuda_backend::adaptive
