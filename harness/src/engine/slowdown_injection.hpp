#pragma once
// Test-only fault injection, to measure how well `compare` catches slowdowns
// (ci/measure-gate.sh, docs/regression-gate.md). With PHASEBENCH_INJECT_SLOWDOWN="<regex>:<fraction>"
// (e.g. "kokkos/cpu/3_:0.25") the harness wraps the variant of every case whose row name matches
// the regex in a variant whose run() takes (1 + fraction) times as long: after the real run() and a
// synchronize, CPU work worth that fraction of the variant's fastest iteration. The wrapper is
// installed only when the variable selects the case, so the timed path itself has no test branch.
// Internal to the harness.

#include <memory>
#include <string>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"

namespace pb::detail {

/// The fraction `spec` injects into `row_name` (0 when unset, empty or not matching). Throws
/// InputError on a malformed value.
double slowdown_injected_into(const std::string& row_name, const char* spec);

/// `variant` wrapped as PHASEBENCH_INJECT_SLOWDOWN asks for `row_name`, or `variant` itself when
/// the variable does not select it. Throws InputError on a malformed value.
std::unique_ptr<Variant> with_injected_slowdown(std::unique_ptr<Variant> variant, Backend& backend,
                                                const std::string& device, const std::string& row_name);

}  // namespace pb::detail
