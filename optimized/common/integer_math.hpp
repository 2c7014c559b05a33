#pragma once
// Integer arithmetic the optimized variants share, on the host and in CUDA kernels.

#include <cstdint>

#include "phasebench/host_device.hpp"

namespace pb::optimized {

/// ⌈a / b⌉ for a >= 0, b > 0: how many pieces of b cover a (the last one partial).
PB_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace pb::optimized
