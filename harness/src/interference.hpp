#pragma once
// Other work on the machine, measured while phasebench measures (issue 29). On a shared machine a
// row's repetitions can be slowed by processes that compete for the cores: on 2 busy cores, two
// OpenMP threads that spin waiting for each other lose whole time slices (0.015 ms repetitions
// became 68 ms). Such a row is not a regression, and neither is it a measurement: it is flagged.
//
// What is measured: the CPU time the whole machine spent busy (/proc/stat, steal included: time a
// hypervisor gave to other guests) minus the CPU time of this process (/proc/self/stat, all its
// threads), over the same interval, in cores: 1.0 means other work kept one core busy all along.
// Both counters tick at the same clock (USER_HZ), so a short interval is coarse (about 0.02 cores
// x cores per reading); a row's verdict averages over its repetitions. Internal to the harness.

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
  double cores = 0;        // busy time of everything but this process and its children, >= 0
  double steal_cores = 0;  // of which stolen by the hypervisor
  double seconds = 0;      // the interval
};
/// Nothing measured (cores NaN) when either reading failed or no time passed.
OtherWork other_work_between(const CpuClock& before, const CpuClock& after);

/// /proc/loadavg's three averages; NaN where unreadable.
nlohmann::json load_average();

/// Other work must exceed the cores a row leaves spare by this many cores, on average over its
/// repetitions, before the row is called disturbed: more than measurement noise (see above) and
/// the supervisor's polling, less than the one competing thread that doubles a 2-thread row.
constexpr double kContentionCores = 0.3;
/// Repetitions whose sorted times jump by this factor between two neighbours, with enough of them
/// on each side, form two clusters: the fast one is what the code does, the other what the
/// machine did to it.
constexpr double kClusterJump = 4;

/// Why a row's repetitions were disturbed by other work on the machine, in words; empty when
/// they were not. `wall_ms` and `others_cores` are parallel (one per repetition; NaN others: not
/// measured); `threads` are the row's threads and `cores` the machine's logical cores (0: unknown,
/// no contention verdict).
std::string disturbance(const std::vector<double>& wall_ms, const std::vector<double>& others_cores, int threads,
                        int cores);

}  // namespace pb::interference
