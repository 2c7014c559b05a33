#pragma once
// Bringing one case to life: construct the variant, check it against the oracle, count one
// iteration. Shared by `run` and `verify`. Internal to the harness.

#include <chrono>
#include <map>
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
/// The problem of `c` at `seed`, made on first use and shared by its workload's other cases in
/// `problems`. A case that cannot run (a capability gap) gets an empty problem: prepare() stops
/// before reading it, and an fp64 reference nobody reads is never paid for.
const Problem& problem_for(std::map<std::string, Problem>& problems, const Case& c, uint64_t seed);

struct LiveCase {
  explicit LiveCase(Case c) : spec(std::move(c)) {}
  Case spec;
  std::unique_ptr<Variant> variant;  // set while the case can still be timed
  Status status = Status::Ok;
  std::string reason;
  CheckResult check;
  counters::Totals counts;
  bool counted = false;
};

/// Constructs and sets up the variant, or records why it cannot run (SKIPPED/UNSUPPORTED/ERROR).
/// A test's PHASEBENCH_INJECT_SLOWDOWN wraps it here (slowdown_injection.hpp), never in the timer.
void prepare(LiveCase& live, const Problem& problem, int threads);
/// Poisons the outputs, runs once, checks. Status becomes OK, FAIL, MISTRUSTED or ERROR.
void check(LiveCase& live, const Problem& problem);
/// One untimed iteration inside a CountingScope, with the backend's hooks attached.
void count(LiveCase& live);
/// check() and count() in one iteration (counting changes no output, and a slow case is not run
/// twice): poisons the outputs, runs once counted, checks. Returns the iteration's milliseconds
/// (0 when it did not run); the counts are kept only when the check passed.
double check_and_count(LiveCase& live, const Problem& problem);

/// One timed iteration: synchronize, run, synchronize; milliseconds.
double timed_iteration(LiveCase& live);

/// Drops the variant and records an ERROR with the exception's text.
void record_error(LiveCase& live, const std::string& stage, const std::exception& error);

}  // namespace pb::detail
