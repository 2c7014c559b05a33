#include "phasebench/npy.hpp"

#include <cstring>

namespace pb {
namespace {

std::string shape_tuple(const HostArray& array) {
  if (array.shape.empty()) return "()";
  std::string text = "(";
  for (int64_t extent : array.shape) text += std::to_string(extent) + ", ";
  text.erase(text.size() - 1);  // "(3,)" and "(3, 4,)": both valid Python tuples
  return text + ")";
}

template <typename T>
void append_values(std::string& out, const HostArray& array) {
  for (double value : array.values) {
    const T converted = static_cast<T>(value);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &converted, sizeof(T));
    out.append(bytes, sizeof(T));
  }
}

}  // namespace

// Header: magic, version 1.0, little-endian header length, a Python dict literal padded with
// spaces and ending in '\n' so that the data starts on a 64-byte boundary.
std::string npy_bytes(const HostArray& array) {
  std::string header = "{'descr': '" + std::string(numpy_dtype(array.element_type)) +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(array) + ", }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  switch (array.element_type) {
    case ElementType::Float32: append_values<float>(out, array); break;
    case ElementType::Float64: append_values<double>(out, array); break;
    case ElementType::Int64: append_values<int64_t>(out, array); break;
  }
  return out;
}

}  // namespace pb
