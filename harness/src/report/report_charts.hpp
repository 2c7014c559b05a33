#pragma once
// The report's charts, each an inline <svg> string. Charts of one workload share their y range
// across runs (the caller passes it), so runs side by side compare at a glance.
// Internal to the harness.

#include <string>
#include <utility>
#include <vector>

#include "report/report_model.hpp"

namespace pb::report {

using Rows = std::vector<const ResultRow*>;
using Range = std::pair<double, double>;

/// The phases on a ladder chart's x axis: every non-reference phase index in `rows_per_run`.
std::vector<int> ladder_phases(const std::vector<Rows>& rows_per_run);
/// y ranges covering every run's values and intervals (log scale).
Range speedup_range(const std::vector<Rows>& rows_per_run);
Range gain_range(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run);

/// Speedup over the serial reference per phase, one line per ladder (backend/device), with 95%
/// intervals; phases that did not run are marked on the floor with their status.
std::string ladder_chart(const Rows& rows, const std::vector<int>& phases, const Colors& colors, Range y_range,
                         int width, const std::string& label);

/// Measured gain over the previous timed phase (with interval) against the claimed range (band)
/// from the run's catalog.
std::string claims_chart(const Run& run, const Rows& rows, const std::vector<int>& phases, const Colors& colors,
                         Range y_range, int width, const std::string& label);

/// Each ladder at its fastest phase, one line per run: speedup over the reference with interval.
std::string best_phase_chart(const std::vector<Run>& runs, const std::vector<Rows>& best_per_run, const Colors& colors);

/// A log y range covering the drawable step errors of these rows and the budgets of their
/// approximate ones.
Range step_error_range(const std::vector<Rows>& rows_per_run);
/// Relative L2 error after each rollout step (log scale), one line per row: solid when exact
/// (thin for phase 0), dashed when approximate, with an approximate row's budget dotted in its
/// color. Zero, missing and non-finite errors cannot sit on a log axis: they leave gaps.
std::string step_error_chart(const Rows& rows, const Colors& colors, Range y_range, int width, const std::string& label);

/// x (flop per byte) and y (GFLOP/s) ranges covering every run's points and ceilings.
std::pair<Range, Range> roofline_ranges(const std::vector<Run>& runs);
/// Achieved GFLOP/s against arithmetic intensity under the run's bandwidth and compute ceilings.
std::string roofline_chart(const Run& run, const Colors& colors, std::pair<Range, Range> ranges, int width);

/// The milliseconds of every repetition of these rows (rows_per_run[i] of runs[i]).
std::vector<double> sample_times(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run);
/// Every repetition of every timed row, with median and interval (milliseconds, log scale).
std::string samples_chart(const Run& run, const Rows& rows, const Colors& colors, Range x_range, int width);

}  // namespace pb::report
