#pragma once
// Bringing one case to life: construct the variant, check it against the oracle, count one
// iteration. Shared by `run` and `verify`. Internal to the harness.

#include <chrono>
#include <memory>
#include <string>

#include "phasebench/check.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/runner.hpp"

namespace pb::detail {

/// The inputs and fp64 outputs of one (workload, size, seed), computed once and shared.
struct Problem {
  ArrayMap inputs;
  ArrayMap reference;
};
Problem make_problem(const Workload& workload, SizeClass size, uint64_t seed);

struct LiveCase {
  explicit LiveCase(Case c) : spec(std::move(c)) {}
  Case spec;
  std::unique_ptr<Variant> variant;  // set while the case can still be timed
  Status status = Status::Ok;
  std::string reason;
  CheckResult check;
  counters::Totals counts;
  bool counted = false;
  double injected_slowdown = 0;      // test-only: see slowdown_injected_into()
  double fastest_iteration_ns = 1e30;  // the injection's measure of the variant's own work
};

/// Constructs and sets up the variant, or records why it cannot run (SKIPPED/UNSUPPORTED/ERROR).
void prepare(LiveCase& live, const Problem& problem, int threads);
/// Poisons the outputs, runs once, checks. Status becomes OK, FAIL, MISTRUSTED or ERROR.
void check(LiveCase& live, const Problem& problem);
/// One untimed iteration inside a CountingScope, with the backend's hooks attached.
void count(LiveCase& live);

/// One timed iteration: synchronize, run, synchronize; milliseconds.
double timed_iteration(LiveCase& live);

/// Test-only fault injection, to measure how well `compare` catches slowdowns: with
/// PHASEBENCH_INJECT_SLOWDOWN="<regex>:<fraction>" (e.g. "kokkos/cpu/3_:0.25"), timed iterations
/// of cases whose row name matches the regex take (1 + fraction) times as long (extra CPU work
/// worth that fraction of the case's fastest iteration, done inside the timed region). Returns that
/// fraction for `row_name` (0 when unset or not matching); throws InputError on a malformed value.
double slowdown_injected_into(const std::string& row_name, const char* spec);

/// Drops the variant and records an ERROR with the exception's text.
void record_error(LiveCase& live, const std::string& stage, const std::exception& error);

}  // namespace pb::detail
