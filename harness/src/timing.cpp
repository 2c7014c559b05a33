#include "timing.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <sstream>

namespace pb::detail {
namespace {

// Runs warm-up iterations and returns how many iterations make one repetition.
int64_t warm_up_and_calibrate(LiveCase& live, const TimingPlan& plan) {
  double spent = 0;
  int iterations = 0;
  while (iterations < 2 || spent < plan.warmup_ms) {
    spent += timed_iteration(live);
    ++iterations;
  }
  const double per_iteration = std::max(spent / iterations, 1e-6);
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(plan.min_rep_ms / per_iteration)), 1,
                             1000000);
}

// Forwards everything to Google Benchmark's JSON reporter (benchmark.json) and collects each
// repetition's wall and CPU time per iteration, keyed by benchmark name.
class CollectingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit CollectingReporter(std::ostream& json_out) {
    json_.SetOutputStream(&json_out);
    json_.SetErrorStream(&std::cerr);
  }
  bool ReportContext(const Context& context) override { return json_.ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs)
      if (run.iterations > 0)
        milliseconds_[run.run_name.function_name] = {run.GetAdjustedRealTime(), run.GetAdjustedCPUTime()};
    json_.ReportRuns(runs);
  }
  void Finalize() override { json_.Finalize(); }
  struct WallAndCpu {
    double wall_ms, cpu_ms;
  };
  const std::map<std::string, WallAndCpu>& milliseconds() const { return milliseconds_; }

 private:
  benchmark::JSONReporter json_;
  std::map<std::string, WallAndCpu> milliseconds_;
};

struct Registered {
  size_t case_index;
  int rep;
  std::string name;
};

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

}  // namespace

Timings time_cases(std::vector<LiveCase>& cases, const TimingPlan& plan,
                   const std::function<void(const std::string&)>& journal) {
  initialize_benchmark_library();
  Timings timings;
  std::vector<size_t> timed;
  for (size_t i = 0; i < cases.size(); ++i) {
    LiveCase& live = cases[i];
    if (!live.variant || live.status != Status::Ok) continue;
    if (journal) journal(live.spec.row_name());
    try {
      timings.iterations_per_rep[i] = warm_up_and_calibrate(live, plan);
      timed.push_back(i);
    } catch (const std::exception& error) {
      record_error(live, "warm-up", error);
    }
  }

  std::mt19937_64 shuffle(plan.shuffle_seed);
  std::vector<Registered> registered;
  for (int rep = 0; rep < plan.reps; ++rep) {
    std::vector<size_t> order = timed;
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t index : order) {
      LiveCase* live = &cases[index];
      std::string name = live->spec.row_name() + "/rep:" + std::to_string(rep);
      benchmark::RegisterBenchmark(name.c_str(), [live, journal](benchmark::State& state) {
        if (!live->variant) {
          state.SkipWithError("variant failed in an earlier repetition");
          for (auto _ : state) state.SetIterationTime(0);
          return;
        }
        if (journal) journal(live->spec.row_name());
        try {
          for (auto _ : state) state.SetIterationTime(timed_iteration(*live) / 1e3);
        } catch (const std::exception& error) {
          record_error(*live, "timed run", error);
          state.SkipWithError(live->reason.c_str());
        }
      })
          ->Iterations(timings.iterations_per_rep[index])
          ->UseManualTime()
          // CPU time of every thread of the process, not only this one: a variant's worker
          // threads do its work too.
          ->MeasureProcessCPUTime()
          ->Unit(benchmark::kMillisecond);
      registered.push_back({index, rep, name});
    }
  }

  std::ostringstream json;
  CollectingReporter reporter(json);
  if (registered.empty()) {
    // Nothing to time (every case skipped, or an empty shard): Google Benchmark would write no
    // JSON at all, and benchmark.json must still parse.
    timings.benchmark_json = "{\n  \"context\": {},\n  \"benchmarks\": []\n}\n";
    return timings;
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::ClearRegisteredBenchmarks();
  timings.benchmark_json = json.str();

  for (const Registered& r : registered) {
    if (cases[r.case_index].status != Status::Ok) continue;
    const auto found = reporter.milliseconds().find(r.name);
    if (found == reporter.milliseconds().end()) continue;
    timings.samples[r.case_index].push_back(found->second.wall_ms);
    timings.cpu_samples[r.case_index].push_back(found->second.cpu_ms);
  }
  return timings;
}

}  // namespace pb::detail
