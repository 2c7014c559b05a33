#pragma once
// Step detection in a series of run times (docs/history.md, "Step detection"). The method is asv's
// (airspeed velocity, `asv.step_detect`): fit the series with a piecewise-constant function that
// minimizes the L1 distance to the points plus a penalty gamma for every level (the "Potts"
// problem), solved exactly by dynamic programming; each change of level is a step. Our own
// implementation, on log(time) so a step's size is relative, with gamma scaled by a robust noise
// estimate of the series itself. Pure functions: no database, testable on synthetic series.

#include <cstddef>
#include <vector>

#include "phasebench/stats.hpp"

namespace pb::history {

struct StepOptions {
  // gamma = penalty_scale * noise * ln(n), noise the series' robust noise estimate (log units).
  // 8 keeps false steps rare in flat series made of real repetitions on a loaded machine, where
  // half of it does not; tests/history_steps_test.cpp measures it, docs/history.md quotes it.
  double penalty_scale = 8.0;
  // Levels closer than this (relative) are not reported as a step: below it a change is not worth
  // a person's time, whatever its significance.
  double min_relative_size = 0.02;
};

struct Step {
  size_t index = 0;           // the first point of the new level
  double level_before = 0;    // median of the level that ends at index - 1 (series units)
  double level_after = 0;     // median of the level that starts at index
  double relative_size = 0;   // level_after / level_before - 1: > 0 slower (a regression) for times
  stats::Interval interval;   // 95% bootstrap interval of relative_size (the two levels' points resampled)
};

/// The share of a run's repetitions the history keeps the median of: the fastest quarter, as the gate
/// compares (docs/regression-gate.md).
constexpr double kFastestPercent = 25;

/// The finite ones of a row's repetitions: a NaN is a time not recorded (CPU times of a run made
/// before they were kept).
std::vector<double> recorded_times(const std::vector<double>& repetitions);

/// The point of one row of one run in its series, what the history stores: the median of the
/// fastest quarter of its repetitions (at least 3; stats::fastest). Other work on the machine only
/// ever adds time to a repetition, and on a busy machine a run's median lands tens of percent high
/// now and then; its fastest quarter is the part such work left alone. NaN without a finite
/// repetition.
double run_point(const std::vector<double>& repetitions);

/// Robust noise of `log_values` (one standard deviation): the upper quartile of the absolute
/// differences of neighbours, scaled to a normal's sigma. A few steps and outliers move it little.
/// Never below 1e-3.
double noise_scale(const std::vector<double>& log_values);

/// The starts of the levels of the L1 Potts fit of `values` with penalty `gamma` per level: always
/// begins with 0. O(n^3) in time: callers keep n in the hundreds.
std::vector<size_t> potts_levels(const std::vector<double>& values, double gamma);

/// The steps of `values` (positive: times, say). Needs no fewer than 3 points.
std::vector<Step> detect_steps(const std::vector<double>& values, const StepOptions& options = {});

}  // namespace pb::history
