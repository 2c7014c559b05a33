// The latency floors: each workload's latency chain (phasebench/workload.hpp), timed on the host.
// A chain is microseconds of work where bytes and flops price it at nanoseconds: its time, not the
// bandwidth's or the peak's, is what the workload's rows can approach.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <ostream>
#include <vector>

#include "common/number_text.hpp"
#include "phasebench/workload.hpp"
#include "roofline/roofline.hpp"

namespace pb::roofline {
namespace {

// Enough calls for a stable median, and no more than a tenth of a second per floor.
constexpr int kWarmUpCalls = 200, kMinCalls = 1000, kMaxCalls = 20000;
constexpr double kTimeLimitSeconds = 0.1;
constexpr uint64_t kInputSeed = 1;  // verify's first seed: any inputs take the chain's one path length

// Each call between two reads of the clock, as timed_iteration times a variant (case_runner.cpp):
// the floor carries the same cost of measuring as the rows held to it.
LatencyFloor time_chain(const std::function<double()>& chain) {
  using Clock = std::chrono::steady_clock;
  double kept = 0;  // every result summed and printed nowhere: the calls cannot be dropped
  for (int call = 0; call < kWarmUpCalls; ++call) kept += chain();
  std::vector<double> ms;
  const auto started = Clock::now();
  while (static_cast<int>(ms.size()) < kMaxCalls &&
         (static_cast<int>(ms.size()) < kMinCalls ||
          std::chrono::duration<double>(Clock::now() - started).count() < kTimeLimitSeconds)) {
    const auto start = Clock::now();
    kept += chain();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  asm volatile("" : : "g"(&kept) : "memory");
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  LatencyFloor floor;
  floor.ms = ms[ms.size() / 2];
  floor.calls = static_cast<int>(ms.size());
  floor.method = "median of " + std::to_string(floor.calls) +
                 " calls on the calling thread, each between two steady_clock reads, after " +
                 std::to_string(kWarmUpCalls) + " warm-up calls (inputs of seed 1)";
  return floor;
}

// Work a row splits over its threads: the floor is one thread's time shared by all of them.
void split_over_threads(LatencyFloor& floor, int threads) {
  floor.threads = threads;
  floor.method += ", divided by the run's " + std::to_string(threads) + " threads (work that splits over them)";
  floor.ms /= threads;
}

std::string microseconds(double ms) { return format_significant(ms * 1e3, 3) + " us"; }

}  // namespace

void add_latency_floors(Ceilings& ceilings, std::ostream& log) {
  for (const auto& workload : registered_workloads()) {
    std::string measured, what;  // one line per workload: its floor at each size
    for (const SizeClass size : all_sizes()) {
      if (workload->size_unsupported_reason(size)) continue;
      const std::optional<LatencyChain> chain = workload->latency_chain(size);
      if (!chain) continue;
      const std::string key = latency_floor_key(workload->suite(), workload->name(), to_string(size));
      try {
        LatencyFloor floor = time_chain(chain->prepare(workload->make_inputs(size, kInputSeed)));
        floor.what = what = chain->what;
        floor.bound = chain->bound;
        if (chain->splits_over_threads && ceilings.threads > 1) split_over_threads(floor, ceilings.threads);
        measured += (measured.empty() ? "" : ", ") + to_string(size) + " " + microseconds(floor.ms);
        ceilings.latency_floors[key] = floor;
      } catch (const std::exception& error) {
        log << "roofline: latency floor of " << key << " not measured: " << error.what() << "\n";
      }
    }
    if (!measured.empty())
      log << "roofline: latency floor of " << workload->full_name() << ": " << measured << " (" << what << ")\n";
  }
}

}  // namespace pb::roofline
