#pragma once
// Test-only fault injection for the isolation tests of `run` and `verify`: a variant that crashes
// or hangs, without writing one. Each variable holds a regular expression searched in the row name
// of the case a worker is about to check (suite/workload/size/backend/device/phase):
//   PHASEBENCH_INJECT_CRASH=<regex>  the worker raises SIGSEGV there, as a crashing variant would;
//   PHASEBENCH_INJECT_HANG=<regex>   the worker sleeps there for ever, as a hanging variant would.
// Internal to the harness.

#include <string>

namespace pb::detail {

/// Crashes or hangs when the variables above select `row_name`; returns at once otherwise.
/// Throws InputError for a variable that is not a regular expression.
void inject_faults(const std::string& row_name);

}  // namespace pb::detail
