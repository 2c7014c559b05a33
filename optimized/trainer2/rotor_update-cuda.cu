// trainer2/rotor_update on CUDA: the rotor part of the manual update alone, from a device copy
// of the input θ every run: the original's loop (i, j, u_i, u_j of each learnt pair read back to
// the host, one launch per pair, then the wrap) or, with vectorized_rotor, one launch and no
// host read. The ladder: RotorUpdateLadder in trainer2_engine_ladders-cuda.hpp; the bodies:
// trainer2_engine-cuda.cuh (run on the host by tests/cuda/trainer2_cuda_ladders_test.cpp).
// SKIPPED without a device.

#include "optimized/trainer2/trainer2_engine_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

const trainer2::LadderRegistration<trainer2::RotorUpdateLadder> registration{"trainer2/rotor_update"};

}  // namespace
}  // namespace pb::cuda_backend
