// trainer2/rotor_update on CUDA: the rotor part of the manual update alone. Every run starts with
// a device copy of the input θ.
//   phase 0 baseline          the original's loop: for each of the 6 learnt pairs, i, j, u_i, u_j
//                             read back to the host one at a time (24 host syncs), one launch
//                             per pair, then one launch that wraps θ
//   phase 2 vectorized_rotor  one launch of 8 threads: gathered indices, update, wrap; no reads
// The ladder: RotorUpdateLadder in trainer2-cuda-ladders.hpp; the bodies: trainer2-cuda.cuh (run
// on the host by tests/cuda/trainer2_cuda_ladders_test.cpp). SKIPPED without a device.

#include "optimized/trainer2/trainer2-cuda-variant.cuh"

namespace pb::cuda_backend {
namespace {

const VariantRegistration registration{"trainer2/rotor_update", "cuda", {0, 2},
                                       trainer2::make_ladder_variant<trainer2::RotorUpdateLadder>};

}  // namespace
}  // namespace pb::cuda_backend
