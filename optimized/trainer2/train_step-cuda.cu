// trainer2/train_step on CUDA: the two-phase step from the inputs every run: reset, snapshot,
// free window, nudge, nudged window, metric update, rotor update, memory ring update. The two
// windows are the window's ladder; the rotor update is rotor_update's. Implemented in
// trainer2_engine_ladders-cuda.hpp (TrainStepLadder), bodies in trainer2_engine-cuda.cuh, both
// run on the host in tests/cuda/trainer2_cuda_ladders_test.cpp; trainer2_engine_variant-cuda.cuh
// runs it on the device (and captures the graph). SKIPPED without a device.

#include "optimized/trainer2/trainer2_engine_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

const trainer2::LadderRegistration<trainer2::TrainStepLadder> registration{"trainer2/train_step"};

}  // namespace
}  // namespace pb::cuda_backend
