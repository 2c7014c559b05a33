#pragma once
// Timing through Google Benchmark: every (case, repetition) is one registered benchmark with a
// fixed iteration count and manual time (synchronize on both ends of each iteration). Benchmarks
// run in registration order, so registering round by round, each round in a fresh random order,
// interleaves the repetitions: slow drift of the machine hits every variant alike.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "case_runner.hpp"

namespace pb::detail {

struct TimingPlan {
  int reps = 10;
  double warmup_ms = 20;   // per case, before calibration
  double min_rep_ms = 50;  // each repetition runs at least this long (iterations calibrated)
  uint64_t shuffle_seed = 1;
};

struct Timings {
  // Per case index: milliseconds per iteration, one value per repetition, in repetition order.
  std::map<size_t, std::vector<double>> samples;
  // The same, in CPU time of the process per iteration (SampleRow::cpu_ms).
  std::map<size_t, std::vector<double>> cpu_samples;
  std::map<size_t, int64_t> iterations_per_rep;
  std::string benchmark_json;  // Google Benchmark's own JSON report
};

/// Times every case whose variant is alive and OK; a case that throws becomes ERROR.
Timings time_cases(std::vector<LiveCase>& cases, const TimingPlan& plan,
                   const std::function<void(const std::string&)>& journal);

}  // namespace pb::detail
