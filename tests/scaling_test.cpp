// scaling.csv's computations on synthetic rows: growth exponents, crossovers, thread scaling, and
// the file's header.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "phasebench/stats.hpp"
#include "process.hpp"
#include "results/results_model.hpp"
#include "results/scaling.hpp"

namespace pb::results {
namespace {

// A timed row of `suite/sweep` at `scale` (its size "<scale>x"), with a 2% interval around `ms`.
ResultRow timed_row(const std::string& backend, int phase_index, double scale, double ms, int threads = 1) {
  ResultRow row;
  row.suite = "suite";
  row.workload = "sweep";
  row.backend = backend;
  row.device = "cpu";
  row.phase_index = phase_index;
  row.phase = "phase" + std::to_string(phase_index);
  row.size = std::to_string(scale) + "x";
  row.scale = scale;
  row.threads = threads;
  row.status = Status::Ok;
  row.median_ms = ms;
  row.ci_low_ms = ms * 0.98;
  row.ci_high_ms = ms * 1.02;
  row.bound = "memory";
  return row;
}

// A catalog that declares `flops_per_scale` flops per iteration per unit of scale at each scale.
catalog::Catalog catalog_for(const std::vector<double>& scales, double flops_per_scale) {
  catalog::Catalog catalog;
  catalog.saved = true;
  catalog::WorkloadEntry& entry = catalog.workloads["suite/sweep"];
  entry.name = "suite/sweep";
  for (double scale : scales) entry.sizes[std::to_string(scale) + "x"].work = {flops_per_scale * scale, 0};
  return catalog;
}

const std::vector<double> kScales{0.25, 0.5, 1, 2, 4, 8};

// t = 3 n^1.5 ms, each point off by a small deterministic factor.
std::vector<ResultRow> power_law_rows(const std::string& backend, double exponent, double noise) {
  std::vector<ResultRow> rows;
  for (size_t i = 0; i < kScales.size(); ++i) {
    const double wobble = 1 + noise * ((i % 2) ? 1 : -1) * static_cast<double>(i % 3 + 1) / 3;
    rows.push_back(timed_row(backend, 0, kScales[i], 3 * std::pow(kScales[i], exponent) * wobble));
  }
  return rows;
}

const GrowthFit& only_fit(const std::vector<GrowthFit>& fits, const std::string& backend) {
  for (const GrowthFit& fit : fits)
    if (fit.identity.backend == backend) return fit;
  throw std::runtime_error("no fit for " + backend);
}

TEST(Scaling, StudentTQuantilesMatchTheTable) {
  EXPECT_NEAR(stats::student_t_95(1), 12.706, 1e-3);
  EXPECT_NEAR(stats::student_t_95(4), 2.776, 1e-3);
  EXPECT_NEAR(stats::student_t_95(31), 2.0395, 1e-3);
  EXPECT_NEAR(stats::student_t_95(120), 1.9799, 1e-3);
  EXPECT_THROW(stats::student_t_95(0), std::invalid_argument);
}

TEST(Scaling, GrowthExponentOfANoisyPowerLawIsRecoveredWithinItsInterval) {
  const std::vector<ResultRow> rows = power_law_rows("kokkos", 1.5, 0.03);
  const GrowthFit fit = only_fit(fit_growth(rows, nullptr), "kokkos");
  EXPECT_EQ(fit.unit, WorkUnit::Scale);
  EXPECT_EQ(fit.points, kScales.size());
  EXPECT_NEAR(fit.exponent, 1.5, 0.05);
  EXPECT_LT(fit.exponent_ci_low, 1.5);
  EXPECT_GT(fit.exponent_ci_high, 1.5);
  EXPECT_GT(fit.exponent_ci_high - fit.exponent_ci_low, 0.005);  // noise gives the interval a width
  EXPECT_LT(fit.exponent_ci_high - fit.exponent_ci_low, 0.2);
}

TEST(Scaling, GrowthExponentUsesTheDeclaredWork) {
  std::vector<ResultRow> rows = power_law_rows("kokkos", 1.0, 0);
  // n = 1e6 flops per unit of scale: the exponent stays, the unit is flops.
  const catalog::Catalog catalog = catalog_for(kScales, 1e6);
  const GrowthFit fit = only_fit(fit_growth(rows, &catalog), "kokkos");
  EXPECT_EQ(fit.unit, WorkUnit::Flops);
  EXPECT_NEAR(fit.exponent, 1.0, 1e-9);
}

TEST(Scaling, APureLineHasANearlyZeroWidthInterval) {
  const GrowthFit fit = only_fit(fit_growth(power_law_rows("kokkos", 2.0, 0), nullptr), "kokkos");
  EXPECT_NEAR(fit.exponent, 2.0, 1e-9);
  EXPECT_LT(fit.exponent_ci_high - fit.exponent_ci_low, 1e-6);
}

TEST(Scaling, TwoPointsGiveAnExponentWithoutInterval) {
  const std::vector<ResultRow> rows{timed_row("kokkos", 0, 1, 2), timed_row("kokkos", 0, 4, 8)};
  const GrowthFit fit = only_fit(fit_growth(rows, nullptr), "kokkos");
  EXPECT_NEAR(fit.exponent, 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(fit.exponent_ci_low));
  EXPECT_TRUE(std::isnan(fit.exponent_ci_high));
}

TEST(Scaling, LatencyBoundDisturbedAndUntimedPointsAreLeftOutOfTheFit) {
  std::vector<ResultRow> rows = power_law_rows("kokkos", 1.0, 0);
  rows[0].median_ms = 50;  // the latency floor holds the smallest size far above the line
  rows[0].bound = "latency";
  rows[1].median_ms = 40;
  rows[1].bound = "scatter";
  rows[2].status = Status::Fail;
  rows.push_back(timed_row("kokkos", 0, 16, kMissing));  // untimed
  rows.push_back(timed_row("kokkos", 0, 32, 900));       // far off the line, while other work ran
  rows.back().disturbed = "other work used 1.2 cores of 2 while it ran on 2 threads";
  const GrowthFit fit = only_fit(fit_growth(rows, nullptr), "kokkos");
  EXPECT_EQ(fit.points, 3u);
  EXPECT_EQ(fit.excluded_points, 5u);
  EXPECT_NEAR(fit.exponent, 1.0, 1e-9);
}

TEST(Scaling, ASingleSizeSaysNothing) {
  const std::vector<ResultRow> rows{timed_row("reference", 0, 1, 5), timed_row("kokkos", 0, 1, 2),
                                    timed_row("kokkos", 1, 1, 1)};
  const ScalingAnalysis analysis = analyze_scaling(rows, nullptr);
  EXPECT_TRUE(analysis.empty());
  EXPECT_TRUE(scaling_summary(analysis).empty());
}

TEST(Scaling, AVariantGrowingFasterThanTheReferenceIsFlagged) {
  std::vector<ResultRow> rows = power_law_rows("reference", 1.0, 0.02);
  for (const ResultRow& row : power_law_rows("kokkos", 1.5, 0.02)) rows.push_back(row);
  for (const ResultRow& row : power_law_rows("torch", 1.01, 0.02)) rows.push_back(row);
  const std::vector<GrowthFit> fits = fit_growth(rows, nullptr);
  EXPECT_TRUE(only_fit(fits, "kokkos").grows_faster_than_reference);
  EXPECT_NEAR(only_fit(fits, "kokkos").reference_exponent, 1.0, 0.05);
  EXPECT_FALSE(only_fit(fits, "torch").grows_faster_than_reference);  // within the intervals
  EXPECT_TRUE(std::isnan(only_fit(fits, "reference").reference_exponent));
}

// Phase 1 against phase 0 of kokkos, phase 0 taking `phase0_ms` at each of kScales and phase 1
// `phase1_ms`.
Crossover crossover_of(const std::vector<double>& phase0_ms, const std::vector<double>& phase1_ms) {
  std::vector<ResultRow> rows;
  for (size_t i = 0; i < kScales.size(); ++i) {
    rows.push_back(timed_row("kokkos", 0, kScales[i], phase0_ms[i]));
    rows.push_back(timed_row("kokkos", 1, kScales[i], phase1_ms[i]));
  }
  const std::vector<Crossover> crossovers = find_crossovers(rows, nullptr);
  EXPECT_EQ(crossovers.size(), 1u);
  return crossovers.at(0);
}

TEST(Scaling, CrossoverIsInterpolatedOnLogLogWithAnInterval) {
  // Phase 1 is slower by 4x at 0.25x and faster by 4x at 4x: the ratio is n^-1, crossing 1 at 1x
  // exactly, and the 2% intervals move either end to where the ratio is 1.02^2 from 1.
  std::vector<double> phase0, phase1;
  for (double scale : kScales) {
    phase0.push_back(10 * scale);
    phase1.push_back(10);
  }
  const Crossover crossover = crossover_of(phase0, phase1);
  EXPECT_EQ(crossover.verdict, CrossoverVerdict::FasterFrom);
  EXPECT_EQ(crossover.previous_phase_index, 0);
  EXPECT_EQ(crossover.points, kScales.size());
  EXPECT_NEAR(crossover.work, 1.0, 1e-9);
  EXPECT_NEAR(crossover.work_low, 0.98 / 1.02, 1e-9);
  EXPECT_NEAR(crossover.work_high, 1.02 / 0.98, 1e-9);
}

// A crossing at sqrt(2), between 1x and 2x, inside its interval.
void expect_crossing_at_root_two(const Crossover& crossover, CrossoverVerdict verdict) {
  EXPECT_EQ(crossover.verdict, verdict);
  EXPECT_NEAR(crossover.work, std::sqrt(2.0), 1e-9);
  EXPECT_LT(crossover.work_low, crossover.work);
  EXPECT_GT(crossover.work_high, crossover.work);
}

TEST(Scaling, CrossoverBetweenTwoSizesInterpolates) {
  // Ratio 2 at 1x and 0.5 at 2x: the log ratio is 0 half way in log n, at sqrt(2).
  expect_crossing_at_root_two(crossover_of({1, 1, 1, 1, 1, 1}, {3, 3, 2, 0.5, 0.4, 0.3}), CrossoverVerdict::FasterFrom);
}

TEST(Scaling, CrossoverWhoseIntervalReachesBeyondTheSizesIsOpenThere) {
  // Faster by 1% only at the largest size: within the intervals, it may still be slower there.
  const Crossover crossover = crossover_of({1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 0.99});
  EXPECT_EQ(crossover.verdict, CrossoverVerdict::FasterFrom);
  EXPECT_FALSE(std::isnan(crossover.work_low));
  EXPECT_TRUE(std::isnan(crossover.work_high));
}

TEST(Scaling, CrossoverFasterOnlyAtSmallSizes) {
  expect_crossing_at_root_two(crossover_of({1, 1, 1, 1, 1, 1}, {0.5, 0.5, 0.5, 2, 2, 2}),
                              CrossoverVerdict::FasterBelow);
}

TEST(Scaling, CrossoverVerdictsWithoutACrossing) {
  EXPECT_EQ(crossover_of({2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}).verdict, CrossoverVerdict::FasterEverywhere);
  const Crossover never = crossover_of({1, 1, 1, 1, 1, 1}, {1, 1.5, 2, 2, 2, 1.1});
  EXPECT_EQ(never.verdict, CrossoverVerdict::NeverFaster);
  EXPECT_TRUE(std::isnan(never.work));
  EXPECT_EQ(crossover_of({1, 1, 1, 1, 1, 1}, {2, 0.5, 0.5, 2, 2, 2}).verdict, CrossoverVerdict::CrossesMoreThanOnce);
}

TEST(Scaling, CrossoverComparesTheNearestLowerRungAtCommonSizesOnly) {
  std::vector<ResultRow> rows{timed_row("kokkos", 0, 1, 1), timed_row("kokkos", 0, 2, 2),
                              timed_row("kokkos", 2, 1, 0.5), timed_row("kokkos", 2, 2, 1),
                              timed_row("kokkos", 2, 4, 2)};
  const std::vector<Crossover> crossovers = find_crossovers(rows, nullptr);
  ASSERT_EQ(crossovers.size(), 1u);
  EXPECT_EQ(crossovers[0].identity.phase_index, 2);
  EXPECT_EQ(crossovers[0].previous_phase_index, 0);
  EXPECT_EQ(crossovers[0].points, 2u);
}

TEST(Scaling, ThreadScalingAgainstTheFewestThreads) {
  const std::vector<ResultRow> rows{timed_row("kokkos", 1, 1, 8, 1), timed_row("kokkos", 1, 1, 5, 2),
                                    timed_row("kokkos", 1, 1, 2.5, 4), timed_row("kokkos", 0, 1, 3, 2)};
  const std::vector<ThreadScaling> scaling = thread_scaling(rows, nullptr);
  ASSERT_EQ(scaling.size(), 2u);
  EXPECT_EQ(scaling[0].identity.threads, 2);
  EXPECT_EQ(scaling[0].base_threads, 1);
  EXPECT_DOUBLE_EQ(scaling[0].speedup, 1.6);
  EXPECT_DOUBLE_EQ(scaling[0].parallel_efficiency, 0.8);
  EXPECT_EQ(scaling[1].identity.threads, 4);
  EXPECT_DOUBLE_EQ(scaling[1].speedup, 3.2);
  EXPECT_DOUBLE_EQ(scaling[1].parallel_efficiency, 0.8);
  EXPECT_TRUE(thread_scaling({rows[0], rows[3]}, nullptr).empty());  // one thread count per rung
}

TEST(Scaling, CsvHeaderIsPinned) {
  EXPECT_EQ(scaling_csv({}),
            "kind,suite,workload,backend,device,phase_index,phase,threads,size,work_unit,work,points,"
            "excluded_points,exponent,exponent_ci_low,exponent_ci_high,reference_exponent,"
            "grows_faster_than_reference,versus_phase_index,versus_phase,verdict,crossover_work,"
            "crossover_work_low,crossover_work_high,base_threads,speedup,parallel_efficiency\n");
}

TEST(Scaling, CsvRecordsAndSummaryOfASweep) {
  std::vector<ResultRow> rows = power_law_rows("kokkos", 2.0, 0);
  for (size_t i = 0; i < kScales.size(); ++i) rows.push_back(timed_row("kokkos", 1, kScales[i], 3 * kScales[i]));
  const ScalingAnalysis analysis = analyze_scaling(rows, nullptr);
  const std::string csv = scaling_csv(analysis);
  EXPECT_NE(csv.find("\ngrowth,suite,sweep,kokkos,cpu,0,phase0,1,,scale,,6,0,2,2,2,,,,,,,,,,,\n"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\ncrossover,suite,sweep,kokkos,cpu,1,phase1,1,,scale,,6,,,,,,,0,phase0,faster_from,1,"),
            std::string::npos)
      << csv;
  const std::vector<std::string> summary = scaling_summary(analysis);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(
      summary[0].rfind("suite/sweep kokkos cpu 1t: phase 1 grows as n^1 [1, 1]; phase 1 vs 0: faster from 1 scale", 0),
      0u)
      << summary[0];
}

// Every run directory written (run, merge, baseline record) gets scaling.csv beside results.csv
// when its rows sweep a size; one size has nothing to say, and no file.
TEST(Scaling, ARunDirectoryOfASweepHoldsScalingCsvAndOneOfASingleSizeNone) {
  namespace fs = std::filesystem;
  RunFiles sweep;
  sweep.rows = power_law_rows("kokkos", 1.0, 0.01);
  sweep.machine = {{"run_id", "sweep"}};
  const fs::path swept = testing::fresh_temp_path("scaling-run");
  write_run_directory(swept, sweep);
  ASSERT_TRUE(fs::exists(swept / "scaling.csv"));
  std::ifstream in(swept / "scaling.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("growth,suite,sweep,kokkos,cpu,0,"), std::string::npos) << text;

  RunFiles single = sweep;
  single.rows.resize(1);
  const fs::path one = testing::fresh_temp_path("scaling-run");
  write_run_directory(one, single);
  EXPECT_TRUE(fs::exists(one / "results.csv"));
  EXPECT_FALSE(fs::exists(one / "scaling.csv"));
  fs::remove_all(swept);
  fs::remove_all(one);
}

}  // namespace
}  // namespace pb::results
