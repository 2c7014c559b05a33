#include "engine/timing.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "engine/cpu_probe.hpp"
#include "engine/interference.hpp"

namespace pb::detail {
namespace {

// What Google Benchmark adds to a repetition around its iterations (registering, starting the
// run, reporting), about a millisecond; counted with a margin so that a plan of thousands of
// short repetitions is not underestimated.
constexpr double kRepetitionOverheadSeconds = 0.002;
constexpr int64_t kMaxIterationsPerRep = 1000000;

void initialize_benchmark_library() {
  static bool done = false;
  if (done) return;
  // Google Benchmark keeps argv[0] for its context block: it must outlive the process's runs.
  static char program[] = "phasebench";
  static char* argv[] = {program, nullptr};
  int argc = 1;
  benchmark::Initialize(&argc, argv);
  done = true;
}

// Keeps the one run a repetition reports: its times and Google Benchmark's own JSON entry for it
// (written by a JSONReporter of its own, so the entry is exactly the library's).
class RepetitionReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      error_ = run.error_occurred ? run.error_message : "";
      wall_ms_ = run.GetAdjustedRealTime();
      cpu_ms_ = run.GetAdjustedCPUTime();
      std::ostringstream text;
      benchmark::JSONReporter json;
      json.SetOutputStream(&text);
      json.SetErrorStream(&std::cerr);
      json.ReportRuns({run});
      entry_ = nlohmann::json::parse(text.str());
      reported_ = true;
    }
  }
  bool reported_ = false;
  std::string error_;
  double wall_ms_ = 0, cpu_ms_ = 0;
  nlohmann::json entry_;
};

// Every repetition of a case carries the same name, and its number among the case's repetitions,
// as Google Benchmark names its own repetitions: compare.py groups them into one benchmark.
void name_as_repetition(nlohmann::json& entry, const std::string& name, size_t case_index, int rep, int reps) {
  entry["name"] = name;
  entry["run_name"] = name;
  entry["run_type"] = "iteration";
  entry["family_index"] = case_index;
  entry["per_family_instance_index"] = 0;
  entry["repetitions"] = reps;
  entry["repetition_index"] = rep;
}

std::optional<TimedRepetition> run_repetition(LiveCase& live, const CaseTiming& timing, const Repetition& repetition) {
  LiveCase* target = &live;
  benchmark::RegisterBenchmark(live.spec.row_name().c_str(), [target](benchmark::State& state) {
    try {
      for (auto _ : state) state.SetIterationTime(timed_iteration(*target) / 1e3);
    } catch (const std::exception& error) {
      record_error(*target, "timed run", error);
      state.SkipWithError(target->reason.c_str());
    }
  })
      ->Iterations(timing.iterations_per_rep)
      ->UseManualTime()
      // CPU time of every thread of the process, not only this one: a variant's worker threads do
      // its work too.
      ->MeasureProcessCPUTime()
      ->Unit(benchmark::kMillisecond);
  RepetitionReporter reporter;
  const double cpu_probe_us = cpu_probe::slowest_cpu_us();
  const interference::CpuClock before = interference::read_cpu_clock();
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const interference::OtherWork others = interference::other_work_between(before, interference::read_cpu_clock());
  benchmark::ClearRegisteredBenchmarks();
  if (!reporter.reported_ || !reporter.error_.empty() || live.status != Status::Ok) return std::nullopt;
  TimedRepetition timed{
      repetition,           reporter.wall_ms_, reporter.cpu_ms_, std::move(reporter.entry_), others.estimate_cores,
      others.seconds * 1e3, cpu_probe_us};
  name_as_repetition(timed.benchmark_entry, live.spec.row_name(), repetition.case_index, repetition.rep, timing.reps);
  return timed;
}

}  // namespace

double expected_warm_up_seconds(const TimingPlan& plan, double checked_ms, bool fresh) {
  if (checked_ms >= kSlowIterationMs) return fresh ? checked_ms / 1e3 : 0;
  return std::max(checked_ms, plan.warmup_ms) / 1e3;
}

CaseTiming warm_up(LiveCase& live, const TimingPlan& plan, double checked_ms, bool fresh) {
  CaseTiming timing;
  if (checked_ms >= kSlowIterationMs && !fresh) {
    timing.iteration_ms = checked_ms;  // the check was the warm-up, and the measure of the pace
  } else {
    // The first iteration may still pay for first touches (caches, JIT, allocator pools): the
    // pace is taken from the later ones when there are any.
    const double first = timed_iteration(live);
    double later = 0;
    int later_count = 0;
    while (first < kSlowIterationMs && first + later < plan.warmup_ms) {
      later += timed_iteration(live);
      ++later_count;
    }
    timing.iteration_ms = later_count > 0 ? later / later_count : first;
  }
  timing.iteration_ms = std::max(timing.iteration_ms, 1e-6);
  timing.iterations_per_rep = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(plan.min_rep_ms / timing.iteration_ms)), 1, kMaxIterationsPerRep);
  timing.reps = plan.reps;
  return timing;
}

double repetition_seconds(const CaseTiming& timing) {
  return static_cast<double>(timing.iterations_per_rep) * timing.iteration_ms / 1e3 + kRepetitionOverheadSeconds;
}

namespace {

// Each case's repetitions at `level` seconds: every case may spend up to `level` seconds, the cheap
// ones keep all their repetitions, none gets fewer than `floor_reps`.
int reps_at(const CaseTiming& timing, const TimingPlan& plan, int floor_reps, double level) {
  if (plan.reps_fixed) return plan.reps;
  const double affordable = std::floor(level / repetition_seconds(timing));
  return static_cast<int>(std::clamp<double>(affordable, floor_reps, plan.reps));
}

double seconds_at(const std::vector<CaseTiming*>& timings, const TimingPlan& plan, int floor_reps, double level) {
  double total = 0;
  for (const CaseTiming* timing : timings) total += reps_at(*timing, plan, floor_reps, level) * repetition_seconds(*timing);
  return total;
}

}  // namespace

int repetition_floor(const std::vector<CaseTiming*>& timings, const TimingPlan& plan, double budget_seconds) {
  const int preferred = std::min(kMinimumReps, plan.reps);
  return seconds_at(timings, plan, preferred, 0) <= budget_seconds ? preferred : std::min(1, plan.reps);
}

double fit_repetitions(std::vector<CaseTiming*> timings, const TimingPlan& plan, double budget_seconds) {
  const int floor_reps = repetition_floor(timings, plan, budget_seconds);
  double level = std::numeric_limits<double>::infinity();
  if (seconds_at(timings, plan, floor_reps, level) > budget_seconds) {
    double low = 0, high = 0;
    for (const CaseTiming* timing : timings) high = std::max(high, plan.reps * repetition_seconds(*timing));
    for (int i = 0; i < 60; ++i) {  // the largest level whose total fits
      const double middle = (low + high) / 2;
      (seconds_at(timings, plan, floor_reps, middle) <= budget_seconds ? low : high) = middle;
    }
    level = low;
  }
  for (CaseTiming* timing : timings) timing->reps = reps_at(*timing, plan, floor_reps, level);
  return seconds_at(timings, plan, floor_reps, level);
}

double check_limit_seconds(const TimingPlan& plan) { return plan.hang_timeout_s; }

double repetition_limit_seconds(const CaseTiming& timing, const TimingPlan& plan) {
  const double planned = repetition_seconds(timing);
  return std::max(kHangMultiple * planned, std::min(60.0, plan.hang_timeout_s));
}

std::vector<Repetition> interleaved_schedule(const std::vector<int>& done, const std::vector<CaseTiming>& timings,
                                             uint64_t seed) {
  int rounds = 0;
  for (const CaseTiming& timing : timings) rounds = std::max(rounds, timing.reps);
  std::mt19937_64 shuffle(seed);
  std::vector<Repetition> schedule;
  for (int rep = 0; rep < rounds; ++rep) {
    std::vector<Repetition> round;
    for (size_t i = 0; i < timings.size(); ++i)
      if (rep >= done[i] && rep < timings[i].reps) round.push_back({i, rep});
    std::shuffle(round.begin(), round.end(), shuffle);
    schedule.insert(schedule.end(), round.begin(), round.end());
  }
  return schedule;
}

int rounds_of(const std::vector<CaseTiming>& timings) {
  int rounds = 0;
  for (const CaseTiming& timing : timings) rounds = std::max(rounds, timing.reps);
  return rounds;
}

int end_of_this_process_rounds(const std::vector<int>& done, const std::vector<CaseTiming>& timings, int processes) {
  const int rounds = rounds_of(timings);
  int first_open = std::numeric_limits<int>::max();
  for (size_t i = 0; i < timings.size(); ++i)
    if (done[i] < timings[i].reps) first_open = std::min(first_open, done[i]);
  for (int k = 1; k < processes; ++k) {
    const int boundary = (k * rounds + processes - 1) / processes;  // ceil(k * rounds / processes)
    if (boundary > first_open) return boundary;
  }
  return rounds;
}

void run_schedule(std::vector<LiveCase>& cases, const std::vector<CaseTiming>& timings,
                  const std::vector<Repetition>& schedule, const TimingCallbacks& callbacks) {
  initialize_benchmark_library();
  for (const Repetition& repetition : schedule) {
    LiveCase& live = cases[repetition.case_index];
    if (!live.variant || live.status != Status::Ok) continue;  // failed in an earlier repetition
    if (callbacks.starting) callbacks.starting(repetition);
    if (auto timed = run_repetition(live, timings[repetition.case_index], repetition)) {
      if (callbacks.finished) callbacks.finished(*timed);
    } else if (callbacks.failed) {
      callbacks.failed(repetition.case_index);
    }
  }
}

std::string benchmark_json(const std::vector<nlohmann::json>& entries) {
  initialize_benchmark_library();
  std::ostringstream text;
  benchmark::JSONReporter json;
  json.SetOutputStream(&text);
  json.SetErrorStream(&std::cerr);
  json.ReportContext(benchmark::BenchmarkReporter::Context());
  // The reporter has opened the "benchmarks" array; closed here, the text parses.
  nlohmann::json document = nlohmann::json::parse(text.str() + "]}");
  document["benchmarks"] = entries;
  return document.dump(2) + "\n";
}

}  // namespace pb::detail
