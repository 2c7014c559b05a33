// trainer2/window on CUDA: one run_window of W steps from F = F0, P = 0 (the reset is part of
// every run). The ladder, phase by phase (0 baseline at 3 W host syncs ... 10 deferred_metrics at
// one per window; 7 a CUDA graph of the whole run), is described and implemented once in
// trainer2-cuda-ladders.hpp (WindowLadder, WindowRunner); the kernel bodies are in
// trainer2-cuda.cuh, and both run on the host in tests/cuda/trainer2_cuda_ladders_test.cpp. This
// file registers the ladder; trainer2-cuda-variant.cuh runs it on the device (and captures the
// graph). Phase 5 (adaptive_cleanup) is UNSUPPORTED; without a device every row is SKIPPED.

#include "optimized/trainer2/trainer2-cuda-variant.cuh"

namespace pb::cuda_backend {
namespace {

const VariantRegistration registration{"trainer2/window", "cuda", {0, 1, 3, 4, 5, 6, 7, 8, 9, 10},
                                       trainer2::make_ladder_variant<trainer2::WindowLadder>};

}  // namespace
}  // namespace pb::cuda_backend
