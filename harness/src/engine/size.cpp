// Sizes: the named ones, scales of the default, random shapes, their texts, the rounding rules of
// scale rules and the drawing rules of random-shape rules.

#include "phasebench/size.hpp"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "phasebench/errors.hpp"
#include "phasebench/rng.hpp"
#include "phasebench/workload.hpp"

namespace pb {
namespace {

// The shortest %g text that reads back as `value`, with the exponent's "+" and leading zeros
// dropped ("1e12", "6.25e-05" -> "6.25e-5").
std::string shortest_text(double value) {
  char text[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  std::string out = text;
  const size_t e = out.find('e');
  if (e == std::string::npos) return out;
  std::string exponent = out.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent[0] == '-' || exponent[0] == '+' ? 1 : 0);
  exponent.erase(0, std::min(exponent.find_first_not_of('0'), exponent.size() - 1));
  return out.substr(0, e + 1) + (negative ? "-" : "") + exponent;
}

// A plain decimal number, all of `text` ("0.25", "1e3"); nullopt for anything else.
std::optional<double> decimal(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return value;
}

// The factor a scale's text spells, before its range is checked; nullopt when it spells none.
std::optional<double> scale_factor(std::string_view text) {
  if (text.size() < 2 || text.back() != 'x') return std::nullopt;
  const std::string_view body = text.substr(0, text.size() - 1);
  const size_t slash = body.find('/');
  if (slash == std::string_view::npos) {
    if (body == "nan" || body == "inf" || body == "-inf" || body == "+inf")
      return body == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    return decimal(body);
  }
  const auto numerator = decimal(body.substr(0, slash)), denominator = decimal(body.substr(slash + 1));
  if (!numerator || !denominator) return std::nullopt;
  return *numerator / *denominator;
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

constexpr std::string_view kRandomPrefix = "random-";
constexpr std::string_view kRandomListPrefix = "random:";
constexpr uint32_t kMaxRandomCount = 1000;

// A positive decimal integer without leading zeros, up to `maximum`; nullopt for anything else.
std::optional<uint32_t> positive_integer(std::string_view text, uint32_t maximum) {
  if (text.empty() || text.size() > 10 || text[0] == '0' ||
      text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  const uint64_t value = std::strtoull(std::string(text).c_str(), nullptr, 10);
  if (value > maximum) return std::nullopt;
  return static_cast<uint32_t>(value);
}

// The random shape "random-<k>" names; nullopt when `text` is no such name.
std::optional<SizeClass> random_size(std::string_view text) {
  if (text.substr(0, kRandomPrefix.size()) != kRandomPrefix) return std::nullopt;
  const auto seed = positive_integer(text.substr(kRandomPrefix.size()), SizeClass::kMaxShapeSeed);
  if (!seed) return std::nullopt;
  return SizeClass::random(*seed);
}

// random-1 ... random-N for the item "random:N"; InputError for a bad count.
std::vector<SizeClass> random_sizes(std::string_view item) {
  const auto count = positive_integer(item.substr(kRandomListPrefix.size()), kMaxRandomCount);
  if (!count)
    throw InputError("--size " + quoted(item) + ": give the count of random shapes as a whole number from 1 to " +
                     std::to_string(kMaxRandomCount) + ", as in random:8");
  std::vector<SizeClass> sizes;
  for (uint32_t k = 1; k <= *count; ++k) sizes.push_back(SizeClass::random(k));
  return sizes;
}

// The size `text` names, or InputError saying why it names none.
SizeClass size_from_text(std::string_view text) {
  const std::optional<double> factor = scale_factor(text);
  if (!factor) {
    if (const auto named = parse_size(text)) return *named;
    if (text.substr(0, kRandomPrefix.size()) == kRandomPrefix)
      throw InputError("--size " + quoted(text) + ": a random shape is random-<k>, k a whole number from 1 to " +
                       std::to_string(SizeClass::kMaxShapeSeed) + ", as in random-3");
    throw InputError("--size " + quoted(text) +
                     " is no size: give small, default, large, a scale of the default such as 4x, 0.25x, 1/16x, "
                     "or random shapes such as random:8 or random-3");
  }
  if (!std::isfinite(*factor) || *factor <= 0)
    throw InputError("--size " + quoted(text) + ": a scale must be a positive finite number, as in 4x or 1/16x");
  return SizeClass::scaled(*factor);
}

int64_t checked(double count, double factor) {
  if (!(count <= std::numeric_limits<int>::max()))
    throw InputError("a scale of " + shortest_text(factor) + " gives a dimension of " + shortest_text(count) +
                     ", past the range of an int: no valid shape");
  return static_cast<int64_t>(count);
}

}  // namespace

SizeClass SizeClass::scaled(double factor) { return {SizeName::Scaled, factor}; }
SizeClass SizeClass::random(uint32_t shape_seed) { return {SizeName::Random, 1.0, shape_seed}; }

bool SizeClass::same_point(const SizeClass& other) const {
  const auto as_scale = [](const SizeClass& size) { return size == Default ? scaled(1.0) : size; };
  return as_scale(*this) == as_scale(other);
}

std::string to_string(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return "small";
    case SizeName::Default:
      return "default";
    case SizeName::Large:
      return "large";
    case SizeName::Scaled:
      return shortest_text(size.scale()) + "x";
    case SizeName::Random:
      return std::string(kRandomPrefix) + std::to_string(size.shape_seed());
  }
  return "?";
}

std::optional<SizeClass> parse_size(std::string_view text) {
  for (SizeClass size : all_sizes())
    if (to_string(size) == text) return size;
  if (const auto random = random_size(text)) return random;
  const std::optional<double> factor = scale_factor(text);
  if (!factor || !std::isfinite(*factor) || *factor <= 0) return std::nullopt;
  return SizeClass::scaled(*factor);
}

std::vector<SizeClass> parse_size_list(std::string_view text) {
  std::vector<SizeClass> sizes;
  std::vector<std::string_view> item_of;  // the item each size came from
  std::vector<std::string_view> items;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty()) throw InputError("--size " + quoted(text) + ": item " + std::to_string(i + 1) + " is empty");
    const bool is_random_list = items[i].substr(0, kRandomListPrefix.size()) == kRandomListPrefix;
    for (const SizeClass size : is_random_list ? random_sizes(items[i]) : std::vector{size_from_text(items[i])}) {
      for (size_t j = 0; j < sizes.size(); ++j)
        if (sizes[j].same_point(size))
          throw InputError("--size " + quoted(text) + ": " + quoted(items[i]) + " is the same size as " +
                           quoted(item_of[j]) + "; give each size once");
      sizes.push_back(size);
      item_of.push_back(items[i]);
    }
  }
  return sizes;
}

std::string size_list_text(const std::vector<SizeClass>& sizes) {
  std::string text;
  for (const SizeClass size : sizes) text += (text.empty() ? "" : ",") + to_string(size);
  return text;
}

std::vector<SizeClass> all_sizes() { return {SizeClass::Small, SizeClass::Default, SizeClass::Large}; }

double machine_memory_bytes() {
  struct sysinfo info {};
  sysinfo(&info);
  return static_cast<double>(info.totalram) * info.mem_unit;
}

namespace {

// The bytes `size` needs: the default's times the scale where that is already past four times the
// machine's memory for a workload whose shape grows with the scale, so that a far too large
// scale's counts are never multiplied out (their products could pass int64's range); else its
// shape's own.
double bytes_needed(const Workload& workload, SizeClass size, double total) {
  const double estimate = workload.memory_bytes(SizeClass::Default) * size.scale();
  const bool grows = workload.shape(SizeClass::scaled(64)) != workload.shape(SizeClass::Default);
  if (grows && size.scale() > 1 && !(estimate < 4 * total)) return estimate;
  return workload.memory_bytes(size);
}

}  // namespace

void require_valid_size(const Workload& workload, SizeClass size) {
  if (size.is_named()) return;
  const double total = machine_memory_bytes();
  double needed = 0;
  try {
    needed = bytes_needed(workload, size, total);
  } catch (const InputError& error) {
    throw InputError("--size " + to_string(size) + " has no valid shape for " + workload.full_name() + ": " +
                     error.what());
  }
  if (!(needed < total))
    throw InputError("--size " + to_string(size) + " of " + workload.full_name() + " needs " + shortest_text(needed) +
                     " bytes for its inputs, outputs and fp64 check; this machine has " + shortest_text(total) +
                     " bytes of memory: choose a smaller scale");
}

namespace scaling {

int64_t count(int64_t base, double factor, int64_t minimum) {
  return std::max(minimum, checked(std::round(static_cast<double>(base) * factor), factor));
}

int64_t whole_blocks(int64_t base, double factor, int64_t block) {
  const double blocks = std::round(static_cast<double>(base) * factor / static_cast<double>(block));
  return checked(std::max(1.0, blocks) * static_cast<double>(block), factor);
}

int64_t power_of_two(int64_t base, double factor, int64_t minimum) {
  const double exponent = std::round(std::log2(static_cast<double>(base) * factor));
  return std::max(minimum, checked(std::exp2(exponent), factor));
}

}  // namespace scaling

namespace random_shape {

int64_t count(SizeClass size, int dimension, int64_t minimum, int64_t maximum) {
  if (size.shape_seed() <= 1 || maximum <= minimum) return minimum;
  SeededGenerator generator(size.shape_seed(), "random_shape/" + std::to_string(dimension));
  return minimum + static_cast<int64_t>(generator.next_bits() % static_cast<uint64_t>(maximum - minimum + 1));
}

int64_t power_of_two(SizeClass size, int dimension, int64_t minimum, int64_t maximum) {
  const int64_t low = std::llround(std::log2(static_cast<double>(minimum)));
  const int64_t high = std::llround(std::log2(static_cast<double>(maximum)));
  return int64_t{1} << count(size, dimension, low, high);
}

}  // namespace random_shape

}  // namespace pb
