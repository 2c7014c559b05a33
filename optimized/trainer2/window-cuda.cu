// trainer2/window on CUDA: one run_window of W steps from F = F0, P = 0 (the reset is part of
// every run). Implemented once in trainer2_engine_ladders-cuda.hpp (WindowLadder, WindowRunner),
// kernel bodies in trainer2_engine-cuda.cuh, both run on the host in
// tests/cuda/trainer2_cuda_ladders_test.cpp; trainer2_engine_variant-cuda.cuh runs it on the
// device (and captures the graph). SKIPPED without a device.

#include "optimized/trainer2/trainer2_engine_variant-cuda.cuh"

namespace pb::cuda_backend {
namespace {

const trainer2::LadderRegistration<trainer2::WindowLadder> registration{"trainer2/window"};

}  // namespace
}  // namespace pb::cuda_backend
