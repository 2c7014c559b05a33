#pragma once
// Other work on the machine, measured while phasebench measures. On a shared machine a row's
// repetitions can be slowed by processes that compete for the cores: on busy cores, two OpenMP
// threads that spin waiting for each other lose whole time slices, and a repetition takes
// thousands of times as long. Such a row is not a regression, and neither is it a measurement: it
// is flagged.
//
// What is measured: the CPU time the whole machine spent busy (/proc/stat, steal included: time a
// hypervisor gave to other guests) minus the CPU time of this process (/proc/self/stat, all its
// threads), over the same interval, in cores: 1.0 means other work kept one core busy all along.
// The machine's counter ticks (USER_HZ) while this process's is exact, so one short interval is
// coarse (a tick per CPU either way); a row's verdict averages over its repetitions and asks for
// more than that resolution. Internal to the harness.

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pb::interference {

/// The machine's and this process's CPU time at one instant.
struct CpuClock {
  double wall_s = 0;          // steady clock
  double machine_busy_s = 0;  // every CPU's non-idle time, steal included (/proc/stat "cpu")
  double steal_s = 0;         // the part of it stolen by the hypervisor
  double own_s = 0;           // this process, every thread, user + system (/proc/self/stat)
  double children_s = 0;      // its reaped children (a supervisor's workers)
  bool readable = false;      // false where /proc is not there: nothing is measured
};
CpuClock read_cpu_clock();

/// What other work did between two readings, in cores (averages over the interval).
struct OtherWork {
  double cores = 0;           // busy time of everything but this process and its children, >= 0
  double estimate_cores = 0;  // the same before clipping at 0: what a mean over intervals averages
  double steal_cores = 0;     // of which stolen by the hypervisor
  double seconds = 0;         // the interval
};
/// Nothing measured (cores NaN) when either reading failed or no time passed.
OtherWork other_work_between(const CpuClock& before, const CpuClock& after);

/// The machine's counters count whole ticks (USER_HZ, 10 ms on Linux), per CPU: over one interval
/// other work's CPU time is known to about a tick per CPU either way. Over a 5 ms repetition that
/// is several cores, so a single short reading says nothing; a mean over a row's repetitions does.
double counter_tick_seconds();

/// /proc/loadavg's three averages; NaN where unreadable.
nlohmann::json load_average();

/// Other work must exceed the cores a row leaves spare by this many cores, on average over its
/// repetitions and beyond what the counters resolve over them (counter_tick_seconds), before the
/// row is called disturbed: more than the supervisor's polling, less than the one competing
/// thread that doubles a 2-thread row.
constexpr double kContentionCores = 0.3;
/// Repetitions whose sorted times jump by this factor between two neighbours, with enough of them
/// on each side, form two clusters: the fast one is what the code does, the other what the
/// machine did to it.
constexpr double kClusterJump = 4;

/// A row's repetitions as measured, one entry per repetition in each.
struct RowRepetitions {
  std::vector<double> wall_ms;       // per iteration
  std::vector<double> others_cores;  // other work meanwhile, OtherWork::estimate_cores (NaN: not measured)
  std::vector<double> rep_ms;        // how long the repetition ran, all its iterations (NaN: not recorded)
};

/// Why a row's repetitions were disturbed by other work on the machine, in words; empty when they
/// were not. `threads` are the row's threads and `cores` the machine's logical cores (0: unknown,
/// no contention verdict). Contention needs both others_cores and rep_ms: its mean is weighted by
/// the repetitions' lengths. Where the counters cannot decide over them either way (too short,
/// or a mean within their resolution of the threshold), `timing_stage_cores` decides: other
/// work's mean over the whole timing stage, whose interleaved schedule spreads every row's
/// repetitions over it (NaN: not known, no verdict): without it, a busy machine slows a row of
/// short repetitions many times over, unflagged.
std::string disturbance(const RowRepetitions& reps, int threads, int cores,
                        double timing_stage_cores = std::numeric_limits<double>::quiet_NaN());

/// machine.json's machine_state in a few words ("quiet"; "busy: other work used 1.1 cores while
/// timing, 3 rows disturbed"), for `history list` and the report; empty when the run has none.
std::string machine_state_in_words(const nlohmann::json& machine);

}  // namespace pb::interference
