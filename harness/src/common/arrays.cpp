#include "phasebench/arrays.hpp"

#include <limits>
#include <stdexcept>

namespace pb {

const char* numpy_dtype(ElementType type) {
  switch (type) {
    case ElementType::Float32: return "<f4";
    case ElementType::Float64: return "<f8";
    case ElementType::Int64: return "<i8";
  }
  return "?";
}

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::Float32: return "float32";
    case ElementType::Float64: return "float64";
    case ElementType::Int64: return "int64";
  }
  return "?";
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

int64_t HostArray::numel() const { return element_count(shape); }

std::string HostArray::shape_string() const {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

HostArray HostArray::zeros(std::vector<int64_t> shape, ElementType type) {
  HostArray array;
  array.shape = std::move(shape);
  array.values.assign(static_cast<size_t>(array.numel()), 0.0);
  array.element_type = type;
  return array;
}

HostArray HostArray::from_floats(std::vector<int64_t> shape, const float* data, int64_t count) {
  HostArray array = zeros(std::move(shape), ElementType::Float32);
  if (array.numel() != count) {
    throw std::invalid_argument("from_floats: shape " + array.shape_string() + " holds " +
                                std::to_string(array.numel()) + " values, got " +
                                std::to_string(count));
  }
  for (int64_t i = 0; i < count; ++i) array.values[i] = data[i];
  return array;
}

HostArray HostArray::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  return from_floats(std::move(shape), values.data(), static_cast<int64_t>(values.size()));
}

std::vector<float> nan_floats(const std::vector<int64_t>& shape) {
  return std::vector<float>(static_cast<size_t>(element_count(shape)), std::numeric_limits<float>::quiet_NaN());
}

HostArray HostArray::scalar(double value, ElementType type) {
  HostArray array = zeros({}, type);
  array.values[0] = value;
  return array;
}

std::vector<float> HostArray::to_floats() const {
  return std::vector<float>(values.begin(), values.end());
}

const HostArray& require(const ArrayMap& arrays, const std::string& name) {
  const auto found = arrays.find(name);
  if (found == arrays.end()) throw std::invalid_argument("no array named '" + name + "'");
  return found->second;
}

}  // namespace pb
