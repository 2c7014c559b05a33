#pragma once
// Seeded input generation, identical on every machine, compiler and backend.
//
// std::normal_distribution and friends are implementation-defined, so inputs are drawn from a
// generator written here: splitmix64 seeded by (seed, stream name), uniform doubles from the top
// 53 bits, normals by Box-Muller. Each input array uses its own named stream, so adding an input
// never changes the values of the others.

#include <cstdint>
#include <string_view>
#include <vector>

#include "phasebench/arrays.hpp"

namespace pb {

class SeededGenerator {
 public:
  SeededGenerator(uint64_t seed, std::string_view stream);

  uint64_t next_bits();
  double uniform(double low, double high);  // in [low, high)
  double normal(double mean = 0.0, double stddev = 1.0);

 private:
  uint64_t state_;
};

/// An array of `shape` with uniform values, rounded to `type`.
HostArray uniform_array(uint64_t seed, std::string_view stream, std::vector<int64_t> shape,
                        double low, double high, ElementType type = ElementType::Float32);
/// An array of `shape` with normal values, rounded to `type`.
HostArray normal_array(uint64_t seed, std::string_view stream, std::vector<int64_t> shape,
                       double mean, double stddev, ElementType type = ElementType::Float32);

/// Rounds a value to what the element type can hold (fp32: nearest float).
double round_to(ElementType type, double value);

}  // namespace pb
