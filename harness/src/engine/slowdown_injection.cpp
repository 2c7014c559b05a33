// The test-only slowdown wrapper (slowdown_injection.hpp).

#include "engine/slowdown_injection.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>

#include "engine/forwarding_variant.hpp"
#include "phasebench/errors.hpp"

namespace pb::detail {
namespace {

using Clock = std::chrono::steady_clock;

volatile uint64_t spin_result;  // keeps spin()'s work observable

// Busy work the compiler cannot remove: a chain of dependent multiply-adds.
void spin(uint64_t units) {
  uint64_t x = units;
  for (uint64_t i = 0; i < units; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  spin_result = x;
}

// Nanoseconds one unit of spin() takes when nothing interferes: the fastest of several timings.
double spin_unit_ns() {
  static const double nanoseconds = [] {
    constexpr uint64_t kUnits = 20000;
    double fastest = 1e30;
    for (int attempt = 0; attempt < 20; ++attempt) {
      const auto start = Clock::now();
      spin(kUnits);
      fastest = std::min(fastest, std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    }
    return fastest / kUnits;
  }();
  return nanoseconds;
}

// Forwards everything to the real variant; run() adds the injected work. CPU work rather than a
// wait on the clock: on a busy machine the variant's work and the extra work slow down alike,
// while a wait proportional to the wall time would grow with every preemption and overstate it.
class SlowedVariant : public ForwardingVariant {
 public:
  SlowedVariant(std::unique_ptr<Variant> inner, Backend& backend, std::string device, double fraction)
      : ForwardingVariant(std::move(inner)), backend_(backend), device_(std::move(device)), fraction_(fraction) {}

  void run() override {
    const auto start = Clock::now();
    inner().run();
    backend_.synchronize(device_);  // the variant's own work, finished: what the fraction is of
    fastest_ns_ = std::min(fastest_ns_, std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    spin(static_cast<uint64_t>(fraction_ * fastest_ns_ / spin_unit_ns()));
  }

 private:
  Backend& backend_;
  std::string device_;
  double fraction_;
  double fastest_ns_ = 1e30;
};

}  // namespace

double slowdown_injected_into(const std::string& row_name, const char* spec) {
  if (!spec || !*spec) return 0;
  const std::string text = spec;
  const size_t colon = text.rfind(':');
  char* end = nullptr;
  const double fraction = colon == std::string::npos ? 0 : std::strtod(text.c_str() + colon + 1, &end);
  if (colon == std::string::npos || end == text.c_str() + colon + 1 || *end != '\0' || !(fraction >= 0))
    throw InputError("PHASEBENCH_INJECT_SLOWDOWN='" + text + "' is not <regex>:<fraction>, e.g. 'kokkos:0.25'");
  try {
    return std::regex_search(row_name, std::regex(text.substr(0, colon))) ? fraction : 0;
  } catch (const std::regex_error& error) {
    throw InputError("PHASEBENCH_INJECT_SLOWDOWN: bad regular expression: " + std::string(error.what()));
  }
}

std::unique_ptr<Variant> with_injected_slowdown(std::unique_ptr<Variant> variant, Backend& backend,
                                                const std::string& device, const std::string& row_name) {
  const double fraction = slowdown_injected_into(row_name, std::getenv("PHASEBENCH_INJECT_SLOWDOWN"));
  if (fraction <= 0) return variant;
  return std::make_unique<SlowedVariant>(std::move(variant), backend, device, fraction);
}

}  // namespace pb::detail
