#pragma once
// `compare`: the regression gate between two runs (docs/regression-gate.md).
//
// Rows are matched by (suite, workload, size, backend, device, phase). A row is a regression only
// when its slowdown is both statistically significant -- a one-sided Mann-Whitney U test on the
// repetition samples, Holm-corrected over every row tested -- and larger than the threshold: the
// test guards against noise, the threshold against differences too small to matter. In time mode
// a row is judged against what the whole run did: the median change of all rows tested (the
// run-wide shift) is taken out first, so a machine that drifted between two runs does not make
// every row a suspect; a shift beyond --max-shift, when given, fails on its own. Beyond the shift,
// two runs of one build differ row by row by more than a row's repetitions show (each process has
// its own state of caches, pages and clocks), so a regression must also stand out of how far all
// rows scatter around the shift (the run's spread). A correctness change (OK -> FAIL, MISTRUSTED or
// ERROR) always fails. Internal to the harness.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "phasebench/results.hpp"
#include "phasebench/stats.hpp"
#include "compare/row_thresholds.hpp"
#include "results/junit.hpp"
#include "results/results_model.hpp"

namespace pb::compare {

enum class Mode { Time, Ratio };
/// What a repetition's time is: the wall clock (what users wait for), or the CPU time the
/// process used. CPU time leaves out the time other processes held the CPU, so it survives a
/// busy machine; it also leaves out waiting (for a GPU, for I/O), so it is for CPU rows.
enum class Metric { Wall, Cpu };
/// What a row's time is divided by in ratio mode (each run's own rows, so machines cancel out).
enum class RatioBase { Reference, Phase0 };
/// What a row's change is measured against in time mode: the run-wide shift (the median change of
/// the rows tested), or nothing (each row's own times). Ratio mode divides by a row of the same
/// run instead, which cancels drift already.
enum class Shift { Run, None };
/// Whether a row's change beyond the run-wide shift must also stand out of the run's spread (how
/// far the rows' changes scatter around the shift), or is judged by its rank test alone.
enum class Spread { Run, None };
/// Whether a row that slowed (or sped up) beyond its threshold is excused when the CPUs were
/// slower (faster) by at least as much during its NEW repetitions than during its BASE ones, as
/// run's probe of them measured (samples.csv's cpu_probe_us), or judged by its times alone.
enum class CpuSpeed { Explain, Ignore };
/// A run-wide shift is taken only over at least this many rows: the median of fewer follows the
/// rows that really changed.
constexpr int kFewestRowsForShift = 8;

struct Options {
  double threshold_pct = 5;  // a slowdown must exceed this (percent of the base median) to fail
  double alpha = 0.05;       // family-wise error rate over the rows tested (Holm)
  Mode mode = Mode::Time;
  Metric metric = Metric::Wall;
  RatioBase ratio_to = RatioBase::Reference;
  double fastest_pct = 100;  // compare only the fastest this many percent of each row's samples
  bool allow_incomplete = false;  // compare a run marked incomplete (with a note) instead of refusing it
  Shift shift = Shift::Run;
  Spread spread = Spread::Run;  // applies where the run-wide shift is taken
  CpuSpeed cpu_speed = CpuSpeed::Explain;  // applies where both runs probed the CPUs
  // A run-wide slowdown above this (percent) fails the comparison; NaN: none does. Separate runs
  // of one build drift by more than a row's threshold on a shared machine (docs/regression-gate.md),
  // so only a bound well above that drift tells a change that slowed everything from the machine.
  double max_shift_pct = kMissing;
  RowThresholds row_thresholds;  // per-row thresholds (--thresholds FILE); rows it leaves out get threshold_pct
};

enum class Verdict {
  Regression,    // significantly slower, by more than the threshold      (fails)
  Broken,        // was not failing, now FAIL/MISTRUSTED/ERROR             (fails)
  NewFailure,    // a row only NEW has, and it fails its check             (fails)
  StillFailing,  // failing in both
  Fixed,         // failing in BASE, not in NEW
  Improved,      // significantly faster, by more than the threshold
  WithinSpread,  // beyond the threshold and significant over its repetitions, but no further from
                 // the run-wide shift than rows of an unchanged build scatter between two runs
  Slower,        // significantly slower, within the threshold
  Faster,        // significantly faster, within the threshold
  Noisy,         // the median moved beyond the threshold, but not significantly
  Unchanged,     // no significant change
  New,           // only in NEW
  Missing,       // only in BASE
  NotTimed,      // not OK on one side (SKIPPED, UNSUPPORTED): nothing to compare
  Untested,      // OK on both sides but without samples to test
  RatioBase,     // in ratio mode, the row the others are divided by
  Disturbed,     // OK on both sides, but other work on the machine disturbed its repetitions in one
                 // run or both (results.csv's `disturbed`): its times are not judged
  CpuSpeed,      // beyond the threshold and significant, but the CPUs' speed changed as much between
                 // its BASE and NEW repetitions (cpu_probe_us), or changed the other way while the
                 // row itself did not move: the machine, not judged
};

std::string verdict_name(Verdict verdict);
bool fails_gate(Verdict verdict);

struct RowComparison {
  std::string name;
  std::optional<ResultRow> base, fresh;
  // Medians compared: milliseconds in time mode; time relative to the ratio base in ratio mode.
  double base_value = kMissing, new_value = kMissing;
  double change = kMissing;  // new / base - 1: +0.10 is 10% slower
  stats::Interval change_ci{kMissing, kMissing};
  double p_slower = kMissing, p_faster = kMissing;            // one-sided rank tests
  double p_slower_holm = kMissing, p_faster_holm = kMissing;  // Holm-adjusted over rows tested
  int base_reps = 0, new_reps = 0;
  double threshold_pct = kMissing;  // the threshold this row is judged by
  double raw_change = kMissing;     // new / base - 1 before the run-wide shift is taken out
  // The row's own measurement error: the standard error of its log change, from its interval.
  double own_error = kMissing;
  // The change beyond the shift in units of what an unchanged row scatters by (the drift between
  // runs and its own error, log scale), and how likely a row of an unchanged build is that far out
  // (one-sided, normal), Holm-adjusted over the rows tested.
  double spread_z = kMissing;
  double p_spread_slower_holm = kMissing, p_spread_faster_holm = kMissing;
  // How much longer the probe of the CPUs took during NEW's repetitions of the row than during
  // BASE's (ratio of medians, minus 1: +0.4 is CPUs 40% slower); NaN where a run has no probe.
  double cpu_change = kMissing;
  Verdict verdict = Verdict::Unchanged;
};

/// Whether a row beyond the run-wide shift got there only by not following CPUs that moved the
/// other way, at least as far as the shift did: its own change, before the shift, is not
/// significant.
bool stayed_while_cpus_moved(const RowComparison& rc);

/// The median change of the rows tested, new over base, with a 95% bootstrap interval over rows.
struct RunShift {
  bool applied = false;  // rows' changes are measured against it
  double change = kMissing;
  stats::Interval ci;
  int rows = 0;  // rows it is the median of
  std::string not_applied_why;
  bool fails = false;  // significantly slower, by more than --max-shift
};

/// How far the rows' changes scatter around the run-wide shift: 1.4826 times the median absolute
/// deviation of their log changes, a standard deviation that the rows which really changed do not
/// inflate. Measured where the shift is taken. It holds two parts: how far each row drifts between
/// two processes, and the error of measuring a row over its repetitions. A row is judged against
/// the drift and its own error: a change that the row's own repetitions leave uncertain does not
/// stand out.
struct RunSpread {
  bool applied = false;
  double sigma = kMissing;  // of log(new / base) beyond the shift
  double typical_error = kMissing;  // the median of the rows' own errors
  // sqrt(sigma^2 - typical_error^2), at least sigma / 2: the part of the spread that is drift
  double drift = kMissing;
  int rows = 0;
  // The z one row needs to stand out alone (the first step of Holm: alpha / rows), and the
  // change beyond the shift that it means for a row of the typical error: smaller slowdowns of
  // such a row cannot fail in this comparison.
  double z_needed = kMissing, smallest_outstanding_change = kMissing;
  std::string not_applied_why;
};

struct Comparison {
  Options options;
  std::string base_label, new_label, base_fingerprint, new_fingerprint;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // what the reader should know that is no warning sign
  std::vector<RowComparison> rows;
  int tested = 0;  // rows in the Holm family
  RunShift shift;
  RunSpread spread;
  int count(Verdict verdict) const;
  bool failed() const;
};

Comparison compare_runs(const results::RunData& base, const results::RunData& fresh, const Options& options);

/// An aligned table for the terminal and a Markdown summary for a pull-request comment.
std::string terminal_report(const Comparison& comparison);
std::string markdown_report(const Comparison& comparison);
/// A row's cells in those reports: "+12.3% [+9.1%, +15.0%]" ("-" when not compared), the
/// Holm-adjusted p-value of the direction the median moved, "OK" or "OK -> FAIL".
std::string change_text(const RowComparison& row);
/// "+12.3% [+9.1%, +15.0%]": a change with its interval (without it where the interval is missing).
std::string change_with_interval_text(double change, const stats::Interval& interval);
std::string holm_p_text(const RowComparison& row);
/// The row's change beyond the shift in units of the run's spread: "+3.4" ("-" where not measured).
std::string spread_z_text(const RowComparison& row);
std::string status_text(const RowComparison& row);
/// The JUnit report of `compare --junit` (junit.hpp): a case per row; the rows that fail the gate
/// fail, the rows whose time is not judged are skipped.
junit::Report junit_report(const Comparison& comparison);

}  // namespace pb::compare
