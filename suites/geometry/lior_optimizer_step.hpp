#pragma once
// geometry/lior_optimizer_step: what every variant shares: the parameter shapes of each size, the
// input and output names, the phase names, and the tensors' offsets in one flat buffer. Math:
// reference/geometry/lior_optimizer_step.hpp. Definition (catalog, tolerances, work):
// lior_optimizer_step.cpp.
//
// Every variant writes the updated tensors out of place (out_j = p_j - s_j g_j, p_j an input): each
// timed iteration then performs the same step from the same parameters, and poisoning an output
// cannot destroy an input. It moves the bytes an in-place step moves (read p and g, write p).

#include <cstdint>
#include <string>
#include <vector>

#include "phasebench/workload.hpp"
#include "reference/geometry/lior_optimizer_step.hpp"
#include "suites/geometry/resilience.hpp"

namespace pb::suites::geometry {

inline const std::string kLiorOptimizerStep = "geometry/lior_optimizer_step";

// The optimization each phase adds (catalog: lior_optimizer_step.cpp).
inline constexpr const char* kPerTensorSync = "per_tensor_sync";      // the original: R.item() per tensor
inline constexpr const char* kDeviceResilience = "device_resilience";  // the seed: R stays a tensor
inline constexpr const char* kBatchedStep = "batched_step";           // [P,8] R, one multi-tensor update
inline constexpr const char* kStreamingUpdate = "streaming_update";   // one flat pass, non-temporal stores

/// Input p_j ("param.07"), its gradient ("grad.07"); the output has the parameter's name.
inline std::string param_name(int j) { return std::string("param.") + (j < 10 ? "0" : "") + std::to_string(j); }
inline std::string grad_name(int j) { return std::string("grad.") + (j < 10 ? "0" : "") + std::to_string(j); }

/// Random shapes: 3 to 10 tensors (at least 3, so that even seeds' last two tiny tensors follow a
/// first one), each a vector or a matrix, every extent 1 to 40: tensors shorter and longer than
/// the 8 leading coordinates, and flat offsets on no block boundary.
inline std::vector<std::vector<int64_t>> random_parameter_shapes(SizeClass size) {
  const int64_t tensors = random_shape::count(size, 0, 3, 10);
  std::vector<std::vector<int64_t>> shapes;
  for (int j = 0; j < tensors; ++j) {
    const int first = 1 + 3 * j;
    std::vector<int64_t> shape{random_shape::count(size, first, 1, 40)};
    if (random_shape::count(size, first + 1, 1, 2) == 2) shape.push_back(random_shape::count(size, first + 2, 1, 40));
    shapes.push_back(shape);
  }
  return shapes;
}

/// The parameter shapes of a size: small [5], [4,3], [11]; default and large a transformer's set,
/// per block 4 x [w,w] (attention), [4w,w] and [w,4w] (MLP), 2 x [w] (norms).
inline std::vector<std::vector<int64_t>> parameter_shapes(SizeClass size) {
  if (size == SizeClass::Small) return {{5}, {4, 3}, {11}};
  if (size.is_random()) return random_parameter_shapes(size);
  // A scale keeps the default's 6 blocks (48 tensors) and grows the values: the width by the
  // scale's square root, in whole blocks of 16 (at least 16).
  const int64_t blocks = size == SizeClass::Large ? 12 : 6;
  const int64_t width = size == SizeClass::Large     ? 1024
                        : size == SizeClass::Default ? 512
                                                     : scaling::whole_blocks(512, std::sqrt(size.scale()), 16);
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int i = 0; i < 4; ++i) shapes.push_back({width, width});
    shapes.push_back({4 * width, width});
    shapes.push_back({width, 4 * width});
    shapes.push_back({width});
    shapes.push_back({width});
  }
  return shapes;
}

/// Even seeds' models also have the tiny tensors real models have: their last two tensors are a
/// scalar ([1], a learnt gate) and a short bias ([4]), fewer values than the resilience network's
/// d = 8 leading coordinates. leading_coordinates then zero-pads a tensor that is not the first
/// (offsets(0) = 0 hides a wrong size of the first one: offsets(j + 1) + offsets(j) survived verify
/// on Kokkos). Odd seeds, the timed seed 1 among them, keep parameter_shapes(size), for which
/// work() and memory_bytes() are declared (the even seeds' sets are 2w - 5 values smaller).
inline std::vector<std::vector<int64_t>> parameter_shapes(SizeClass size, uint64_t seed) {
  std::vector<std::vector<int64_t>> shapes = parameter_shapes(size);
  if (seed % 2 == 0) {
    shapes[shapes.size() - 2] = {1};
    shapes.back() = {4};
  }
  return shapes;
}

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

/// Where each tensor starts in one flat buffer of all of them, and the total (P + 1 entries).
inline std::vector<int64_t> flat_offsets(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<int64_t> offsets{0};
  for (const auto& shape : shapes) offsets.push_back(offsets.back() + numel_of(shape));
  return offsets;
}

/// The parameter shapes of the inputs (param.00, param.01, ... in order).
inline std::vector<std::vector<int64_t>> shapes_of(const ArrayMap& inputs) {
  std::vector<std::vector<int64_t>> shapes;
  for (int j = 0; inputs.count(param_name(j)); ++j) shapes.push_back(inputs.at(param_name(j)).shape);
  return shapes;
}

/// Every parameter (or gradient) input's values, as float, one after the other.
inline std::vector<float> flat_floats(const ArrayMap& inputs, std::string (*name)(int), size_t tensors) {
  std::vector<float> flat;
  for (size_t j = 0; j < tensors; ++j) {
    const std::vector<float> values = require(inputs, name(static_cast<int>(j))).to_floats();
    flat.insert(flat.end(), values.begin(), values.end());
  }
  return flat;
}

/// The outputs from one flat fp32 buffer of every updated tensor.
inline ArrayMap outputs_from_flat(const std::vector<std::vector<int64_t>>& shapes, const float* flat) {
  ArrayMap out;
  const std::vector<int64_t> offsets = flat_offsets(shapes);
  for (size_t j = 0; j < shapes.size(); ++j)
    out[param_name(static_cast<int>(j))] = HostArray::from_floats(shapes[j], flat + offsets[j], numel_of(shapes[j]));
  return out;
}

}  // namespace pb::suites::geometry
