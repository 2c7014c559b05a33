#pragma once
// Timing through Google Benchmark. Every (case, repetition) is one registered benchmark with a
// fixed iteration count and manual time (synchronize on both ends of each iteration). Benchmarks
// run in registration order, so registering round by round, each round in a fresh random order,
// interleaves the repetitions: slow drift of the machine hits every variant alike.
//
// How many repetitions a case gets is fitted to a time budget: every case gets the repetitions
// asked for (--reps) while they fit; when they do not, the most expensive cases give up
// repetitions first, down to kMinimumReps; when even kMinimumReps of every case would not fit,
// down to one (repetition_floor()), so that the budget holds. benchmark.json names every repetition of
// a case alike and numbers them (repetition_index of repetitions), as Google Benchmark does for
// its own repetitions, so its tools (compare.py) group them.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/case_runner.hpp"
#include "engine/run_record.hpp"

namespace pb::detail {

constexpr int kMinimumReps = 3;             // what the median and its interval need, at the least
constexpr double kSlowIterationMs = 1000;   // a case this slow needs no warm-up beyond its check
constexpr double kHangMultiple = 10;        // a repetition this many times its planned time hangs

struct TimingPlan {
  int reps = 10;            // repetitions asked for
  bool reps_fixed = false;  // --reps given: every case gets exactly `reps`, whatever the budget
  double warmup_ms = 20;    // per case, before calibration
  double min_rep_ms = 50;   // each repetition runs at least this long (iterations calibrated)
  uint64_t shuffle_seed = 1;
  double hang_timeout_s = 300;  // see step_limit_seconds()
};

/// Warms a case up and calibrates it: its iterations per repetition and time per iteration.
/// `checked_ms` is the time of its checked iteration, which warmed it up, unless `fresh`: the
/// variant was set up again since (a worker restarted or a run resumed). A case slower than
/// kSlowIterationMs needs no more warm-up than that iteration (or one when fresh); a faster one
/// runs at least one iteration and at least plan.warmup_ms.
CaseTiming warm_up(LiveCase& live, const TimingPlan& plan, double checked_ms, bool fresh);

/// What one repetition of `timing` costs, in seconds (with Google Benchmark's own overhead).
double repetition_seconds(const CaseTiming& timing);
/// What warm_up() will cost a case, in seconds, before it runs (for the progress estimate).
double expected_warm_up_seconds(const TimingPlan& plan, double checked_ms, bool fresh);

/// Sets each timing's `reps` so that all of them together fit in `budget_seconds` where they can
/// (see the file comment). Returns the seconds the repetitions are expected to take: more than
/// the budget only when one repetition of every case is already more.
double fit_repetitions(std::vector<CaseTiming*> timings, const TimingPlan& plan, double budget_seconds);

/// The fewest repetitions fit_repetitions() gives a case: kMinimumReps while every case at that
/// many fits the budget; otherwise 1, so that the budget holds on a machine whose variants take
/// milliseconds and whose serial references take seconds (a GPU node). The slowest cases then
/// drop below kMinimumReps first, and their rows have no confidence interval (stats.hpp).
int repetition_floor(const std::vector<CaseTiming*>& timings, const TimingPlan& plan, double budget_seconds);

/// The limit the supervisor puts on one step: a check runs at most `hang_timeout_s`; a timed
/// repetition at most kHangMultiple times its planned time (and never less than a minute, or
/// than hang_timeout_s when that is shorter).
double check_limit_seconds(const TimingPlan& plan);
double repetition_limit_seconds(const CaseTiming& timing, const TimingPlan& plan);

/// One repetition to run: the index of its case and its number.
struct Repetition {
  size_t case_index;
  int rep;
};
/// The repetitions still to run, round by round, each round shuffled; `done[i]` repetitions of
/// case i are already in the record and `timings[i].reps` are planned.
std::vector<Repetition> interleaved_schedule(const std::vector<int>& done, const std::vector<CaseTiming>& timings,
                                             uint64_t seed);

/// The number of rounds of repetitions: the most repetitions any case is planned.
int rounds_of(const std::vector<CaseTiming>& timings);

/// With the repetitions split over `processes` workers one after another (--processes), the
/// rounds this worker times: from the first round not finished up to the next of the boundaries
/// that divide the rounds evenly (10 rounds over 3 processes: 4, 3, 3). Returns the first round it
/// leaves to the next worker; the number of rounds when it leaves none.
int end_of_this_process_rounds(const std::vector<int>& done, const std::vector<CaseTiming>& timings, int processes);

/// A finished repetition: milliseconds per iteration (wall and process CPU) and Google
/// Benchmark's JSON entry for it (renamed as the file comment says).
struct TimedRepetition {
  Repetition repetition;
  double wall_ms = 0, cpu_ms = 0;
  nlohmann::json benchmark_entry;
  double others_cores = 0;  // other work on the machine meanwhile: OtherWork::estimate_cores
  double rep_ms = 0;        // the repetition's length, all its iterations: the interval measured
  double cpu_probe_us = std::numeric_limits<double>::quiet_NaN();  // cpu_probe.hpp, just before it
};

/// Runs `schedule`. `starting` is called before each repetition (for the journal and progress),
/// `finished` after each, as soon as it is done (for the record). A case that throws becomes
/// ERROR (recorded through `failed`) and its remaining repetitions are skipped.
struct TimingCallbacks {
  std::function<void(const Repetition&)> starting;
  std::function<void(const TimedRepetition&)> finished;
  std::function<void(size_t case_index)> failed;
};
void run_schedule(std::vector<LiveCase>& cases, const std::vector<CaseTiming>& timings,
                  const std::vector<Repetition>& schedule, const TimingCallbacks& callbacks);

/// benchmark.json: Google Benchmark's context block for this machine and `entries` (each case's
/// repetitions, in order).
std::string benchmark_json(const std::vector<nlohmann::json>& entries);

}  // namespace pb::detail
