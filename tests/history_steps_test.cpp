// Step detection (history_steps.hpp) on synthetic series with known answers. The noise is real:
// the 20 wall-time repetitions of each of the 78 rows of a run of the trainer2 suite at the small
// size on the development machine (a 2-core KVM guest shared with other sessions: heavily loaded),
// in tests/data/history/noise_samples.csv; wall time there is so disturbed by the other work (a
// robust sigma of 17% to 250% per repetition) that the known-answer tests use CPU time (`history
// trend --metric cpu`), as the gate does (docs/regression-gate.md). A synthetic point is what the
// history stores for a run (run_point: the median of the fastest quarter of its repetitions) of the
// default 10 repetitions, here 10 drawn from one real row's repetitions (over that row's median).
// What this leaves out: shifts between processes and days, which a history of real runs would also
// carry. docs/history.md quotes what these tests print.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <map>

#include "history/history_steps.hpp"
#include "phasebench/results.hpp"
#include "phasebench/rng.hpp"

namespace pb::history {
namespace {

constexpr int kSeries = 200;     // per experiment
constexpr int kPoints = 30;      // runs per series
constexpr int kRepsPerRun = 10;  // `run`'s default repetitions
// The known-answer tests use the rows whose run points stay within 5% in 9 runs of 10 (42 of the 78
// recorded rows): a 20% step in one run per commit is beyond what the others can show (the oneDNN
// rows: a robust sigma of 50% to 250% per repetition even in CPU time).
constexpr double kResolvableSpread = 0.05;

// How far a run's point (of kRepsPerRun repetitions drawn from `relative`) strays from the point
// of all of them: the 90th percentile of |log(ratio)| over 400 runs. A tail, not a sigma: on the
// loaded machine many rows are bimodal (a run's median lands 20-50% high now and then), which a
// sigma misses.
double run_point_spread(const std::vector<double>& relative) {
  SeededGenerator draw(7, "run_median_sigma");
  std::vector<double> deviations;
  for (int run = 0; run < 400; ++run) {
    std::vector<double> reps;
    for (int rep = 0; rep < kRepsPerRun; ++rep)
      reps.push_back(relative[std::min(static_cast<size_t>(draw.uniform(0, static_cast<double>(relative.size()))),
                                       relative.size() - 1)]);
    deviations.push_back(std::fabs(std::log(run_point(reps) / run_point(relative))));
  }
  return stats::quantile(deviations, 0.9);
}

// Per row of the recorded run, its repetitions over their median: the multiplicative noise.
// `cpu`: the CPU time of each repetition (trend --metric cpu), else its wall time.
std::vector<std::vector<double>> real_noise(bool cpu, double max_spread = INFINITY) {
  std::map<std::string, std::vector<double>> by_row;
  for (const SampleRow& sample :
       read_samples_csv(std::string(PHASEBENCH_TESTS_DIR) + "/data/history/noise_samples.csv"))
    by_row[sample.suite + "/" + sample.workload + "/" + sample.backend + "/" + sample.phase].push_back(
        cpu ? sample.cpu_ms : sample.ms);
  std::vector<std::vector<double>> noise;
  for (auto& [row, times] : by_row) {
    const double median = stats::median(times);
    for (double& time : times) time /= median;
    if (run_point_spread(times) <= max_spread) noise.push_back(times);
  }
  return noise;
}

// Series `index` of an experiment: `level(i)` times noise drawn from one real row (rows taken in
// turn), seeded by the index so every run of the test sees the same series.
template <typename Level>
std::vector<double> noisy_series(const std::vector<std::vector<double>>& noise, int index, Level level) {
  const std::vector<double>& row = noise[static_cast<size_t>(index) % noise.size()];
  SeededGenerator draw(static_cast<uint64_t>(index), "history_steps_test");
  std::vector<double> series;
  for (int i = 0; i < kPoints; ++i) {
    std::vector<double> reps;
    for (int rep = 0; rep < kRepsPerRun; ++rep) {
      const auto pick = static_cast<size_t>(draw.uniform(0, static_cast<double>(row.size())));
      reps.push_back(row[std::min(pick, row.size() - 1)]);
    }
    series.push_back(level(i) * run_point(reps));
  }
  return series;
}

TEST(StepDetection, FitsANoiselessStepExactly) {
  std::vector<double> values(20, 1.0);
  for (size_t i = 12; i < values.size(); ++i) values[i] = 1.2;
  const auto steps = detect_steps(values);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].index, 12u);
  EXPECT_NEAR(steps[0].relative_size, 0.2, 1e-12);
  EXPECT_EQ(potts_levels({0, 0, 0, 5, 5, 5}, 1.0), (std::vector<size_t>{0, 3}));
  EXPECT_EQ(potts_levels({0, 0, 0, 5, 5, 5}, 100.0), (std::vector<size_t>{0}));  // a step not worth its penalty
}

TEST(StepDetection, NoiseScaleIgnoresAStep) {
  std::vector<double> values;
  for (int i = 0; i < 40; ++i) values.push_back((i % 2 ? 0.01 : -0.01) + (i >= 20 ? 0.5 : 0.0));
  EXPECT_NEAR(noise_scale(values), 0.02 / 1.1503 / std::sqrt(2.0), 1e-9);
}

TEST(StepDetection, FlatNoisySeriesGiveAtMostOnePercentFalseSteps) {
  for (const bool cpu : {false, true}) {
    const auto noise = real_noise(cpu);
    ASSERT_GE(noise.size(), 10u) << "too few rows of real noise";
    int with_steps = 0;
    for (int index = 0; index < kSeries; ++index)
      with_steps += detect_steps(noisy_series(noise, index, [](int) { return 1.0; })).empty() ? 0 : 1;
    std::printf("flat, %s time: %d of %d series (%d runs each, noise of all %zu real rows) with a false step\n",
                cpu ? "CPU" : "wall", with_steps, kSeries, kPoints, noise.size());
    EXPECT_LE(with_steps, kSeries / 100);
  }
}

TEST(StepDetection, FindsATwentyPercentStepAtItsCommit) {
  const auto noise = real_noise(true, kResolvableSpread);
  ASSERT_GE(noise.size(), 4u) << "too few rows of real noise quiet enough to show a 20% step";
  std::printf("rows whose CPU-time run points stray <= %.0f%% in 9 runs of 10: %zu of %zu\n", 100 * kResolvableSpread,
              noise.size(), real_noise(true).size());
  for (const int at : {8, 15, 22}) {
    int found_at = 0, found_elsewhere = 0;
    double size_sum = 0;
    for (int index = 0; index < kSeries; ++index) {
      const auto steps = detect_steps(noisy_series(noise, index, [at](int i) { return i < at ? 1.0 : 1.2; }));
      for (const Step& step : steps) {
        const bool here = step.index == static_cast<size_t>(at);
        found_at += here ? 1 : 0;
        found_elsewhere += here ? 0 : 1;
        if (here) size_sum += step.relative_size;
      }
    }
    std::printf("20%% step at %d of %d points: found there in %d of %d series (mean size %+.1f%%), %d steps elsewhere\n",
                at, kPoints, found_at, kSeries, 100 * size_sum / std::max(1, found_at), found_elsewhere);
    // Measured 99-100% found at the very run, 1-1.5% other steps (docs/history.md). With the median
    // of all repetitions as the point it was 83-87% and 12-19%: a run's median lands 20-50% high
    // about one run in ten on the loaded machine, and such a run beside the step moved it or added one.
    EXPECT_GE(found_at, kSeries * 95 / 100) << "step at " << at;
    EXPECT_LE(found_elsewhere, kSeries * 5 / 100) << "step at " << at;
  }
}

TEST(StepDetection, FlagsAThreePercentPerCommitCreep) {
  const auto noise = real_noise(true, kResolvableSpread);
  // Flat for 10 runs, 3% slower with each of the next 10 commits, flat again at 1.03^10 = +34%.
  const auto creep = [](int i) { return std::pow(1.03, std::clamp(i - 9, 0, 10)); };
  int flagged = 0;
  for (int index = 0; index < kSeries; ++index) {
    bool inside_creep = false;
    for (const Step& step : detect_steps(noisy_series(noise, index, creep)))
      inside_creep |= step.relative_size > 0 && step.index >= 10 && step.index <= 20;
    flagged += inside_creep ? 1 : 0;
  }
  std::printf("3%%/commit creep over 10 commits: flagged in %d of %d series\n", flagged, kSeries);
  EXPECT_GE(flagged, kSeries * 95 / 100);
}

}  // namespace
}  // namespace pb::history
