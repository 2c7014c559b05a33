#pragma once
// Host arrays: how inputs, reference outputs and variant outputs travel through the harness.
//
// Every value is held in fp64 whatever the element type the workload declares for it; an fp32
// input is generated in fp64 and rounded to float once, so the fp64 oracle and every fp32 variant
// see exactly the same numbers.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pb {

/// The element type an array has in the original code (what `dump` writes, what variants use).
enum class ElementType { Float32, Float64, Int64 };

const char* numpy_dtype(ElementType type);  // "<f4", "<f8", "<i8"
const char* element_type_name(ElementType type);  // "float32", ...

struct HostArray {
  std::vector<int64_t> shape;  // empty shape: a scalar
  std::vector<double> values;  // row-major, numel() of them
  ElementType element_type = ElementType::Float32;

  int64_t numel() const;
  std::string shape_string() const;  // "[48,8]", "[]" for a scalar

  /// A zero-filled array of the given shape.
  static HostArray zeros(std::vector<int64_t> shape, ElementType type = ElementType::Float32);
  /// Copies `count` floats (count must equal the product of shape).
  static HostArray from_floats(std::vector<int64_t> shape, const float* data, int64_t count);
  static HostArray from_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static HostArray scalar(double value, ElementType type = ElementType::Float32);

  /// The values rounded to float, in order (for fp32 variants).
  std::vector<float> to_floats() const;
};

/// The number of elements of an array of `shape` (1 for a scalar's empty shape).
int64_t element_count(const std::vector<int64_t>& shape);

/// A host buffer for a variant's fp32 output of `shape`, every value NaN (poison_outputs()). Sized
/// from the shape the output is handed back with (from_floats), so the two cannot disagree.
std::vector<float> nan_floats(const std::vector<int64_t>& shape);

/// Arrays by name; ordered so that files and manifests list them in a stable order.
using ArrayMap = std::map<std::string, HostArray>;

/// The array named `name`, or a std::invalid_argument naming what is missing.
const HostArray& require(const ArrayMap& arrays, const std::string& name);

}  // namespace pb
