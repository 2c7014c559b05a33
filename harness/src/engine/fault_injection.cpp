#include "engine/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <regex>
#include <thread>

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

}  // namespace

void inject_faults(const std::string& row_name) {
  if (selects("PHASEBENCH_INJECT_CRASH", row_name)) std::raise(SIGSEGV);
  if (selects("PHASEBENCH_INJECT_HANG", row_name))
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace pb::detail
