#pragma once
// Bringing one case to life: construct the variant, check it against the oracle, count one
// iteration. Shared by `run` and `verify`. Internal to the harness.

#include <chrono>
#include <limits>
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
  // The worst relative L2 error of the check of a later run (check_later_run); NaN when none ran.
  double later_rel_l2_err = std::numeric_limits<double>::quiet_NaN();
  counters::Totals counts;
  bool counted = false;
};

/// Constructs and sets up the variant, or records why it cannot run (SKIPPED/UNSUPPORTED/ERROR).
/// A test's PHASEBENCH_INJECT_SLOWDOWN or _DRIFT wraps it here (slowdown_injection.hpp,
/// fault_injection.hpp), never in the timer.
void prepare(LiveCase& live, const Problem& problem, int threads);
/// Poisons the outputs, runs once, checks. Status becomes OK, FAIL, MISTRUSTED or ERROR.
void check(LiveCase& live, const Problem& problem);
/// The check of a run long after the first (after the timing in `run`, the later runs in
/// `verify`): poisons the outputs, runs once, checks again. A variant that does not restore its
/// state between runs (a buffer not reset, inputs changed in place, an accumulator that keeps
/// growing) passes its first check and fails this one: the status becomes FAIL, the reason names
/// `which_run`, and `check` holds the later run's errors. A case whose first check did not pass
/// is left as it is.
void check_later_run(LiveCase& live, const Problem& problem, const std::string& which_run);
/// The same check on the outputs the variant's last run left, without running it again: after the
/// timing, the last timed repetition's (the outputs were poisoned before the warm-up, so a variant
/// that stopped writing them shows it too).
void check_outputs_left(LiveCase& live, const Problem& problem, const std::string& which_run);
/// The runs `verify` makes of a case beyond the first, each checked; the last is the third.
inline constexpr int kVerifiedRunsPerCase = 3;
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
