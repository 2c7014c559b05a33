#include "phasebench/rng.hpp"

#include <cmath>

namespace pb {
namespace {

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

SeededGenerator::SeededGenerator(uint64_t seed, std::string_view stream)
    : state_(seed * 0x9E3779B97F4A7C15ull ^ fnv1a(stream)) {}

// splitmix64: tiny, fast, statistically good enough for test inputs, trivially portable.
uint64_t SeededGenerator::next_bits() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SeededGenerator::uniform(double low, double high) {
  const double unit = static_cast<double>(next_bits() >> 11) * 0x1.0p-53;  // [0, 1)
  return low + (high - low) * unit;
}

// Box-Muller with one draw per call (the second value is discarded to keep the stream stateless).
double SeededGenerator::normal(double mean, double stddev) {
  const double u1 = 1.0 - uniform(0.0, 1.0);  // (0, 1]: log stays finite
  const double u2 = uniform(0.0, 1.0);
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

double round_to(ElementType type, double value) {
  switch (type) {
    case ElementType::Float32: return static_cast<double>(static_cast<float>(value));
    case ElementType::Int64: return std::nearbyint(value);
    case ElementType::Float64: return value;
  }
  return value;
}

namespace {

template <typename Draw>
HostArray generate(uint64_t seed, std::string_view stream, std::vector<int64_t> shape,
                   ElementType type, Draw draw) {
  HostArray array = HostArray::zeros(std::move(shape), type);
  SeededGenerator generator(seed, stream);
  for (double& value : array.values) value = round_to(type, draw(generator));
  return array;
}

}  // namespace

HostArray uniform_array(uint64_t seed, std::string_view stream, std::vector<int64_t> shape,
                        double low, double high, ElementType type) {
  return generate(seed, stream, std::move(shape), type,
                  [&](SeededGenerator& g) { return g.uniform(low, high); });
}

HostArray normal_array(uint64_t seed, std::string_view stream, std::vector<int64_t> shape,
                       double mean, double stddev, ElementType type) {
  return generate(seed, stream, std::move(shape), type,
                  [&](SeededGenerator& g) { return g.normal(mean, stddev); });
}

}  // namespace pb
