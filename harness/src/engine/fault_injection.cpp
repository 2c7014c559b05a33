#include "engine/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <thread>

#include "engine/forwarding_variant.hpp"
#include "phasebench/errors.hpp"

namespace pb::detail {
namespace {

bool selects(const char* variable, const std::string& row_name) {
  const char* pattern = std::getenv(variable);
  if (!pattern || !*pattern) return false;
  try {
    return std::regex_search(row_name, std::regex(pattern));
  } catch (const std::regex_error& error) {
    throw InputError(std::string(variable) + "='" + pattern + "' is not a regular expression: " + error.what());
  }
}

// Forwards to the real variant, but hands back the sum of the outputs of every run since setup,
// as a variant that accumulates into a buffer it never resets would.
class DriftingVariant : public ForwardingVariant {
 public:
  using ForwardingVariant::ForwardingVariant;

  void setup(const ArrayMap& inputs) override {
    inner().setup(inputs);
    runs_since_setup_ = 0;
  }
  void run() override {
    inner().run();
    ++runs_since_setup_;
  }
  ArrayMap outputs() override {
    ArrayMap sums = inner().outputs();
    for (auto& [name, array] : sums)
      for (double& value : array.values) value *= static_cast<double>(runs_since_setup_);
    return sums;
  }

 private:
  int64_t runs_since_setup_ = 0;
};

// Forwards to the real variant, but only its first run after setup does any work, as a variant
// that caches its result (or skips work it believes done) would: later runs leave the outputs as
// they are.
class StaleVariant : public ForwardingVariant {
 public:
  using ForwardingVariant::ForwardingVariant;

  void setup(const ArrayMap& inputs) override {
    inner().setup(inputs);
    ran_since_setup_ = false;
  }
  void run() override {
    if (!ran_since_setup_) inner().run();
    ran_since_setup_ = true;
  }

 private:
  bool ran_since_setup_ = false;
};

}  // namespace

std::unique_ptr<Variant> with_injected_stale_outputs(std::unique_ptr<Variant> variant, const std::string& row_name) {
  if (!selects("PHASEBENCH_INJECT_STALE", row_name)) return variant;
  return std::make_unique<StaleVariant>(std::move(variant));
}

std::unique_ptr<Variant> with_injected_drift(std::unique_ptr<Variant> variant, const std::string& row_name) {
  if (!selects("PHASEBENCH_INJECT_DRIFT", row_name)) return variant;
  return std::make_unique<DriftingVariant>(std::move(variant));
}

void inject_faults(const std::string& row_name) {
  if (selects("PHASEBENCH_INJECT_CRASH", row_name)) std::raise(SIGSEGV);
  if (selects("PHASEBENCH_INJECT_HANG", row_name))
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace pb::detail
