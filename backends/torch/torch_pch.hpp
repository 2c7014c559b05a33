#pragma once
// The precompiled header of every torch translation unit (backends/torch/CMakeLists.txt).
// ATen plus torch/types.h (the torch:: names) is all the variants use; <torch/torch.h> would add
// nn, optim and data loading at twice the parse time.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/cuda.h>
#include <torch/types.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>
