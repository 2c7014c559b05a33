// trainer2/train_step on CUDA: the two-phase step from the inputs every run: reset, snapshot,
// free window, nudge, nudged window, metric update, rotor update, memory ring update. The two
// windows follow the window ladder (trainer2-cuda-ladders.hpp); phase 2 (vectorized_rotor)
// replaces the rotor update's 24 per-pair host reads with one launch; phase 7 captures the whole
// step as one CUDA graph. Implemented in trainer2-cuda-ladders.hpp (TrainStepLadder), bodies in
// trainer2-cuda.cuh, both run on the host in tests/cuda/trainer2_cuda_ladders_test.cpp. Phase 5
// (adaptive_cleanup) is UNSUPPORTED; without a device every row is SKIPPED.

#include "optimized/trainer2/trainer2-cuda-variant.cuh"

namespace pb::cuda_backend {
namespace {

const VariantRegistration registration{"trainer2/train_step", "cuda", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                                       trainer2::make_ladder_variant<trainer2::TrainStepLadder>};

}  // namespace
}  // namespace pb::cuda_backend
