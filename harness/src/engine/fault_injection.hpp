#pragma once
// Test-only fault injection for the isolation tests of `run` and `verify`: a variant that crashes
// or hangs, without writing one. Each variable holds a regular expression searched in the row name
// of the case a worker is about to check (suite/workload/size/backend/device/phase):
//   PHASEBENCH_INJECT_CRASH=<regex>  the worker raises SIGSEGV there, as a crashing variant would;
//   PHASEBENCH_INJECT_HANG=<regex>   the worker sleeps there for ever, as a hanging variant would;
//   PHASEBENCH_INJECT_DRIFT=<regex>  the variant's outputs add up over its runs, as those of one
//                                    that never resets an accumulator would: its first run after
//                                    setup is right, every later one is off (the checks of later
//                                    runs must catch it);
//   PHASEBENCH_INJECT_STALE=<regex>  only the variant's first run after setup does any work, as one
//                                    that caches its result would: later runs leave the outputs as
//                                    they are (the outputs poisoned before the timing must show it).
// Internal to the harness.

#include <memory>
#include <string>

#include "phasebench/variant.hpp"

namespace pb::detail {

/// Crashes or hangs when the variables above select `row_name`; returns at once otherwise.
/// Throws InputError for a variable that is not a regular expression.
void inject_faults(const std::string& row_name);

/// `variant` wrapped to drift as PHASEBENCH_INJECT_DRIFT asks for `row_name`, or `variant` itself
/// when the variable does not select it. Throws InputError for a variable that is not a regex.
std::unique_ptr<Variant> with_injected_drift(std::unique_ptr<Variant> variant, const std::string& row_name);
/// `variant` wrapped to stop working after its first run as PHASEBENCH_INJECT_STALE asks, or itself.
std::unique_ptr<Variant> with_injected_stale_outputs(std::unique_ptr<Variant> variant, const std::string& row_name);

}  // namespace pb::detail
