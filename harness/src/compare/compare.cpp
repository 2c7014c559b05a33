// `compare`: matching rows, testing each for a change, and the verdicts (compare.hpp).

#include "compare/compare.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "phasebench/errors.hpp"
#include "phasebench/backend.hpp"
#include "common/number_text.hpp"

namespace pb::compare {
using results::row_key;
using results::RunData;

namespace {

// ---- what is compared per row --------------------------------------------------------------------

struct Measurement {
  enum class State { Available, NoSamples, IsRatioBase } state = State::NoSamples;
  std::vector<double> values;
};

// The row's values in one sample column (`by_key`, by row key); nullptr when there are none or one
// is missing (a file that predates the column).
const std::vector<double>* complete_values(const results::SampleIndex& by_key, const ResultRow& row) {
  const auto found = by_key.find(row_key(row));
  if (found == by_key.end() || found->second.empty()) return nullptr;
  const auto& values = found->second;
  if (std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) return nullptr;
  return &values;
}

// The row's repetitions in the metric compared; nullptr when there are none (or, for CPU time,
// when the file predates the cpu_ms column).
const std::vector<double>* samples_of(const RunData& run, const ResultRow& row, Metric metric) {
  return complete_values(metric == Metric::Cpu ? run.cpu_samples : run.samples, row);
}

// The row `row` is divided by in ratio mode: the workload's serial reference, or the lowest timed
// phase of the same backend and device (results::baselines_of). Only rows timed in the metric qualify.
const ResultRow* ratio_base_of(const RunData& run, const ResultRow& row, RatioBase base, Metric metric) {
  const auto timed = [&](const ResultRow& other) { return other.status == Status::Ok && samples_of(run, other, metric); };
  const results::Baselines bases = results::baselines_of(row, results::pointers_to(run.rows), timed);
  return base == RatioBase::Reference ? bases.reference : bases.first;
}

// Time relative to the ratio base. Repetition k of two rows of one run ran in the same
// interleaved round, so they are divided pairwise and drift cancels; rows from different runs
// (a merged fleet run) are divided by the base's median instead.
std::vector<double> relative_times(const std::vector<double>& times, const std::vector<double>& base,
                                   bool same_run) {
  std::vector<double> relative;
  const double base_median = stats::median(base);
  const bool paired = same_run && times.size() == base.size();
  for (size_t k = 0; k < times.size(); ++k) relative.push_back(times[k] / (paired ? base[k] : base_median));
  return relative;
}

Measurement measure(const RunData& run, const ResultRow& row, const Options& options) {
  Measurement measurement;
  const std::vector<double>* times = samples_of(run, row, options.metric);
  if (!times) return measurement;
  if (options.mode == Mode::Time) {
    measurement.state = Measurement::State::Available;
    measurement.values = stats::fastest(*times, options.fastest_pct);
    return measurement;
  }
  const ResultRow* base = ratio_base_of(run, row, options.ratio_to, options.metric);
  if (!base) return measurement;  // nothing to divide by: untested
  const std::vector<double>& base_times = *samples_of(run, *base, options.metric);
  if (row_key(*base) == row_key(row)) {
    measurement.state = Measurement::State::IsRatioBase;
    return measurement;
  }
  measurement.state = Measurement::State::Available;
  if (options.fastest_pct >= 100) {
    measurement.values = relative_times(*times, base_times, base->run_id == row.run_id);
  } else {  // undisturbed repetitions of the row over the base's undisturbed level
    const std::vector<double> base_fastest = stats::fastest(base_times, options.fastest_pct);
    measurement.values = relative_times(stats::fastest(*times, options.fastest_pct), base_fastest, false);
  }
  return measurement;
}

// ---- one row -------------------------------------------------------------------------------------

// NEW's median probe of the CPUs over the row's repetitions, over BASE's, minus 1; NaN where either
// run lacks a probe of some repetition (a file written before the probe).
double cpu_change_of(const RunData& base, const ResultRow& base_row, const RunData& fresh, const ResultRow& new_row) {
  const std::vector<double>* before = complete_values(base.cpu_probe_samples, base_row);
  const std::vector<double>* after = complete_values(fresh.cpu_probe_samples, new_row);
  if (!before || !after) return kMissing;
  return stats::median(*after) / stats::median(*before) - 1;
}

// Rows without samples still show the medians results.csv recorded (wall time mode only).
void add_recorded_medians(RowComparison& rc, const Options& options) {
  if (options.mode != Mode::Time || options.metric != Metric::Wall) return;
  if (rc.base) rc.base_value = rc.base->median_ms;
  if (rc.fresh) rc.new_value = rc.fresh->median_ms;
  if (!std::isnan(rc.base_value) && !std::isnan(rc.new_value)) rc.change = rc.new_value / rc.base_value - 1;
}

// The rank tests and the change of NEW over BASE, NEW first divided by `shift_factor` (1 + the
// run-wide shift): what is judged is how much more the row moved than the whole run did.
void test_change(RowComparison& rc, const std::vector<double>& base, const std::vector<double>& fresh,
                 double shift_factor) {
  std::vector<double> shifted = fresh;
  for (double& value : shifted) value /= shift_factor;
  rc.base_value = stats::median(base);
  rc.new_value = stats::median(fresh);
  rc.raw_change = rc.new_value / rc.base_value - 1;
  rc.base_reps = static_cast<int>(base.size());
  rc.new_reps = static_cast<int>(fresh.size());
  // "Speedup of BASE over NEW" is NEW's median over BASE's: how much slower NEW is, with a
  // bootstrap interval that resamples both sets.
  const stats::Ratio slowdown = stats::speedup(shifted, base);
  rc.change = slowdown.value - 1;
  rc.change_ci = {slowdown.ci.low - 1, slowdown.ci.high - 1};
  rc.p_slower = stats::mann_whitney_p_greater(base, shifted);
  rc.p_faster = stats::mann_whitney_p_greater(shifted, base);
}

// Statuses first: a correctness change decides the verdict whatever the times say. Returns
// whether the row still needs a timing test.
bool classify_by_status(RowComparison& rc) {
  if (!rc.base) {
    rc.verdict = is_failure(rc.fresh->status) ? Verdict::NewFailure : Verdict::New;
    return false;
  }
  if (!rc.fresh) {
    rc.verdict = Verdict::Missing;
    return false;
  }
  const bool failed_before = is_failure(rc.base->status), fails_now = is_failure(rc.fresh->status);
  if (fails_now) rc.verdict = failed_before ? Verdict::StillFailing : Verdict::Broken;
  else if (failed_before) rc.verdict = Verdict::Fixed;
  else if (rc.base->status != Status::Ok || rc.fresh->status != Status::Ok) rc.verdict = Verdict::NotTimed;
  else return true;
  return false;
}

// What a row's rank test compares: its measured values in BASE and in NEW.
struct PendingTest {
  size_t row = 0;
  std::vector<double> base, fresh;
};

// Decides the row's verdict where its statuses or samples already do; otherwise returns the
// values it is to be tested on (it joins the family of rank tests).
std::optional<PendingTest> compare_row(RowComparison& rc, const RunData& base, const RunData& fresh,
                                       const Options& options) {
  if (!classify_by_status(rc)) {
    add_recorded_medians(rc, options);
    return std::nullopt;
  }
  if (!rc.base->disturbed.empty() || !rc.fresh->disturbed.empty()) {
    rc.verdict = Verdict::Disturbed;  // neither a regression nor an improvement: not a measurement
    add_recorded_medians(rc, options);
    return std::nullopt;
  }
  Measurement before = measure(base, *rc.base, options), after = measure(fresh, *rc.fresh, options);
  using State = Measurement::State;
  if (before.state == State::IsRatioBase || after.state == State::IsRatioBase) {
    rc.verdict = Verdict::RatioBase;
    return std::nullopt;
  }
  if (before.state != State::Available || after.state != State::Available) {
    rc.verdict = Verdict::Untested;
    add_recorded_medians(rc, options);
    return std::nullopt;
  }
  rc.cpu_change = cpu_change_of(base, *rc.base, fresh, *rc.fresh);
  return PendingTest{0, std::move(before.values), std::move(after.values)};
}

// The run-wide shift: the median over the rows tested of each row's change, with a bootstrap
// interval over rows. Rows that really changed are a minority of a run, so the median follows
// what moved every row: the machine between two runs, or a change to everything at once.
RunShift run_shift(const std::vector<PendingTest>& tests, const Options& options) {
  RunShift shift;
  shift.rows = static_cast<int>(tests.size());
  if (options.shift == Shift::None) {
    shift.not_applied_why = "--shift none";
    return shift;
  }
  if (options.mode == Mode::Ratio) {
    shift.not_applied_why = "ratio mode divides each row by a row of its own run";
    return shift;
  }
  if (shift.rows < kFewestRowsForShift) {
    shift.not_applied_why = "too few rows tested (" + std::to_string(shift.rows) + ", fewer than " +
                            std::to_string(kFewestRowsForShift) + ") to measure it";
    return shift;
  }
  std::vector<double> ratios;
  for (const PendingTest& test : tests) ratios.push_back(stats::median(test.fresh) / stats::median(test.base));
  const stats::Summary summary = stats::summarize(ratios);
  shift.applied = true;
  shift.change = summary.median - 1;
  shift.ci = {summary.median_ci.low - 1, summary.median_ci.high - 1};
  shift.fails = shift.change > options.max_shift_pct / 100 && shift.ci.low > 0;  // false when NaN
  return shift;
}

double threshold_of(const RowComparison& rc, const Options& options) {
  const ThresholdRule* rule = options.row_thresholds.rule_for(rc.name);
  return rule ? rule->threshold_pct : options.threshold_pct;
}

// A row's own error: the standard error of its log change, from the width of its interval (NaN
// where too few repetitions gave none).
double own_error_of(const RowComparison& rc) {
  const double interval_width_in_errors = 2 * stats::normal_quantile_above((1 - stats::kConfidence) / 2);
  return (std::log1p(rc.change_ci.high) - std::log1p(rc.change_ci.low)) / interval_width_in_errors;
}

// The part of the spread that is drift between runs: what is left of it beyond the rows' typical
// error, at least half of it. The floor keeps a row measured more precisely than most from
// standing out for drift that the rows' errors hid (the two are estimated from the same rows).
void split_spread(RunSpread& spread, const Comparison& comparison, const std::vector<size_t>& tested) {
  std::vector<double> errors;
  for (size_t i : tested)
    if (const double error = comparison.rows[i].own_error; std::isfinite(error)) errors.push_back(error);
  spread.typical_error = errors.empty() ? 0.0 : stats::median(errors);
  const double drift_squared = spread.sigma * spread.sigma - spread.typical_error * spread.typical_error;
  spread.drift = std::max(std::sqrt(std::max(drift_squared, 0.0)), spread.sigma / 2);
}

// The run's spread: 1.4826 times the median absolute log change beyond the shift of the rows
// tested. The shift is their median change, so the log changes centre on zero; the rows that
// really changed are a minority and barely move the median of the deviations.
RunSpread run_spread(const Comparison& comparison, const std::vector<size_t>& tested) {
  RunSpread spread;
  spread.rows = static_cast<int>(tested.size());
  if (comparison.options.spread == Spread::None) {
    spread.not_applied_why = "--spread none";
    return spread;
  }
  if (!comparison.shift.applied) {
    spread.not_applied_why = "it is measured around the run-wide shift, which was not taken";
    return spread;
  }
  std::vector<double> deviations;
  for (size_t i : tested) deviations.push_back(std::abs(std::log1p(comparison.rows[i].change)));
  spread.sigma = 1.4826 * stats::median(deviations);
  if (!(spread.sigma > 0)) {
    spread.not_applied_why = "the rows' changes do not scatter (a run compared with itself?)";
    return spread;
  }
  spread.applied = true;
  split_spread(spread, comparison, tested);
  spread.z_needed = stats::normal_quantile_above(comparison.options.alpha / spread.rows);
  spread.smallest_outstanding_change = std::expm1(spread.z_needed * std::hypot(spread.drift, spread.typical_error));
  return spread;
}

// Whether the CPUs slowed (sped up) between the row's BASE and NEW repetitions by at least as much
// as the row's own time did, before the run-wide shift.
bool moved_no_further_than_cpus(const RowComparison& rc, bool slower) {
  return slower ? rc.cpu_change >= rc.raw_change : rc.cpu_change <= rc.raw_change;
}

}  // namespace

bool stayed_while_cpus_moved(const RowComparison& rc) {
  const bool slower = rc.change > 0;
  if (moved_no_further_than_cpus(rc, slower)) return false;
  // The row's own change before the shift, at the end of its interval nearer to no change: the
  // interval is measured after the shift, so it is moved back by it.
  const double shift = (1 + rc.raw_change) / (1 + rc.change) - 1;
  const double own_bound = (1 + (slower ? rc.change_ci.low : rc.change_ci.high)) * (1 + shift) - 1;
  // The CPUs account for the shift only where they moved at least as far, the other way.
  return slower ? rc.cpu_change < 0 && rc.cpu_change <= shift && own_bound <= 0
                : rc.cpu_change > 0 && rc.cpu_change >= shift && own_bound >= 0;
}

namespace {

// Whether the CPUs' speed alone can account for the row's move beyond the run-wide shift. Either
// the row moved no further than its CPUs: the probe's work is the kind of code a busy neighbour
// slows most, so such a row may have moved for no other reason. Or the CPUs moved the other way,
// taking the shift with them, and the row itself did not move significantly: it stands out of the
// shift only because the CPUs' state does not reach its code.
bool explained_by_cpus(const RowComparison& rc, const Options& options, bool slower) {
  // In ratio mode a row is divided by a row of its own run, which met the same CPUs.
  if (options.cpu_speed == CpuSpeed::Ignore || options.mode == Mode::Ratio || std::isnan(rc.cpu_change)) return false;
  return moved_no_further_than_cpus(rc, slower) || stayed_while_cpus_moved(rc);
}

Verdict timing_verdict(const RowComparison& rc, const Options& options, bool spread_applied) {
  const double threshold = rc.threshold_pct / 100;
  const bool slower = rc.p_slower_holm <= options.alpha, faster = rc.p_faster_holm <= options.alpha;
  const bool stands_out_slower = !spread_applied || rc.p_spread_slower_holm <= options.alpha;
  const bool stands_out_faster = !spread_applied || rc.p_spread_faster_holm <= options.alpha;
  if (slower && rc.change > threshold) {
    if (!stands_out_slower) return Verdict::WithinSpread;
    return explained_by_cpus(rc, options, true) ? Verdict::CpuSpeed : Verdict::Regression;
  }
  if (faster && rc.change < -threshold) {
    if (!stands_out_faster) return Verdict::WithinSpread;
    return explained_by_cpus(rc, options, false) ? Verdict::CpuSpeed : Verdict::Improved;
  }
  if (slower) return Verdict::Slower;
  if (faster) return Verdict::Faster;
  if (std::abs(rc.change) > threshold) return Verdict::Noisy;
  return Verdict::Unchanged;
}

// Holm over the rows tested, for the rank tests and, where the spread was measured, for how far
// each row stands out of it; then each row's verdict.
void apply_holm(Comparison& comparison, const std::vector<size_t>& tested) {
  for (size_t i : tested) comparison.rows[i].own_error = own_error_of(comparison.rows[i]);
  const RunSpread& spread = comparison.spread = run_spread(comparison, tested);
  std::vector<double> slower, faster, spread_slower, spread_faster;
  for (size_t i : tested) {
    RowComparison& rc = comparison.rows[i];
    slower.push_back(rc.p_slower);
    faster.push_back(rc.p_faster);
    if (!spread.applied) continue;
    const double own = std::isfinite(rc.own_error) ? rc.own_error : spread.typical_error;
    rc.spread_z = std::log1p(rc.change) / std::hypot(spread.drift, own);
    spread_slower.push_back(stats::normal_tail(rc.spread_z));
    spread_faster.push_back(stats::normal_tail(-rc.spread_z));
  }
  const std::vector<double> slower_holm = stats::holm_adjust(slower), faster_holm = stats::holm_adjust(faster);
  const std::vector<double> spread_slower_holm = stats::holm_adjust(spread_slower),
                            spread_faster_holm = stats::holm_adjust(spread_faster);
  for (size_t j = 0; j < tested.size(); ++j) {
    RowComparison& rc = comparison.rows[tested[j]];
    rc.p_slower_holm = slower_holm[j];
    rc.p_faster_holm = faster_holm[j];
    if (spread.applied) {
      rc.p_spread_slower_holm = spread_slower_holm[j];
      rc.p_spread_faster_holm = spread_faster_holm[j];
    }
    rc.verdict = timing_verdict(rc, comparison.options, spread.applied);
  }
  comparison.tested = static_cast<int>(tested.size());
}

// ---- matching and warnings -----------------------------------------------------------------------

std::vector<RowComparison> match_rows(const RunData& base, const RunData& fresh) {
  std::map<std::string, RowComparison> by_key;
  for (const ResultRow& row : base.rows) by_key[row_key(row)].base = row;
  for (const ResultRow& row : fresh.rows) by_key[row_key(row)].fresh = row;
  std::vector<ResultRow> shown;  // one of each key: a row at other threads in each run is two
  for (const auto& [key, rc] : by_key) shown.push_back(rc.fresh ? *rc.fresh : *rc.base);
  const results::ShownRowNames shown_name(shown);
  std::vector<RowComparison> rows;
  for (auto& [key, rc] : by_key) {
    rc.name = shown_name(rc.fresh ? *rc.fresh : *rc.base);
    rows.push_back(std::move(rc));
  }
  const auto order = [](const RowComparison& rc) {
    const ResultRow& r = rc.fresh ? *rc.fresh : *rc.base;
    return std::tie(r.suite, r.workload, r.size, r.backend, r.device, r.phase_index, r.threads);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) { return order(a) < order(b); });
  return rows;
}

void warn_about_machines(Comparison& comparison) {
  const std::string& a = comparison.base_fingerprint;
  const std::string& b = comparison.new_fingerprint;
  if (comparison.options.mode != Mode::Time) return;
  if (a.empty() || b.empty())
    comparison.warnings.push_back("no machine fingerprint for " +
                                  (a.empty() ? comparison.base_label : comparison.new_label) +
                                  " (machine.json missing): cannot tell whether the times are comparable");
  else if (a != b)
    comparison.warnings.push_back("the runs come from different machines (fingerprints " + a + " and " + b +
                                  "): absolute times are not comparable; use --mode ratio");
}

// The smallest p-value a rank test can reach with n and m samples: 1 / C(n+m, n).
double smallest_p(int n, int m) {
  return std::exp(std::lgamma(n + 1.0) + std::lgamma(m + 1.0) - std::lgamma(n + m + 1.0));
}

// A row with too few repetitions can never be flagged: say so rather than pass silently.
void warn_about_power(Comparison& comparison) {
  if (comparison.tested == 0) return;
  const double needed = comparison.options.alpha / comparison.tested;
  int powerless = 0, fewest = 0;
  for (const RowComparison& rc : comparison.rows) {
    if (std::isnan(rc.p_slower) || smallest_p(rc.base_reps, rc.new_reps) <= needed) continue;
    ++powerless;
    fewest = fewest ? std::min(fewest, std::min(rc.base_reps, rc.new_reps)) : std::min(rc.base_reps, rc.new_reps);
  }
  int enough = 2;
  while (smallest_p(enough, enough) > needed) ++enough;
  const double kept = comparison.options.fastest_pct / 100;  // --fastest compares only these
  if (powerless)
    comparison.warnings.push_back(std::to_string(powerless) + " of " + std::to_string(comparison.tested) +
                                  " rows have too few repetitions compared (as few as " + std::to_string(fewest) +
                                  ") for any slowdown to be significant after the correction for " +
                                  std::to_string(comparison.tested) + " rows; run with --reps " +
                                  std::to_string(static_cast<int>(std::ceil(enough / kept))) + " or more");
}

void warn_about_rows(Comparison& comparison) {
  int matched = 0, threads_differ = 0, untested = 0, devices = 0, disturbed = 0;
  for (const RowComparison& rc : comparison.rows) {
    matched += rc.base && rc.fresh;
    if (rc.base && rc.fresh && rc.fresh->device != "cpu" && !std::isnan(rc.p_slower)) ++devices;
    if (rc.base && rc.fresh && rc.base->threads != rc.fresh->threads) ++threads_differ;
    if (rc.verdict == Verdict::Untested) ++untested;
    if (rc.verdict == Verdict::Disturbed) ++disturbed;
  }
  if (disturbed)
    comparison.warnings.push_back(std::to_string(disturbed) +
                                  " rows were disturbed by other work on the machine in one run or both (column "
                                  "`disturbed`): their times are not judged; measure them again on a quieter machine");
  if (matched == 0 && !comparison.rows.empty())
    comparison.warnings.push_back("no row of the base matches a row of the new run (another --size or suite?)");
  if (threads_differ)
    comparison.warnings.push_back(std::to_string(threads_differ) + " rows ran with a different thread count");
  if (untested)
    comparison.warnings.push_back(std::to_string(untested) + " rows are OK on both sides but have no samples" +
                                  (comparison.options.metric == Metric::Cpu ? " in CPU time" : "") +
                                  (comparison.options.mode == Mode::Ratio ? " or no timed ratio base" : "") +
                                  ": not tested" +
                                  (comparison.options.metric == Metric::Cpu
                                       ? " (runs written before phasebench recorded cpu_ms have none)"
                                       : ""));
  if (devices && comparison.options.metric == Metric::Cpu)
    comparison.warnings.push_back(std::to_string(devices) +
                                  " rows ran on a device: their CPU time leaves out the time the host waited "
                                  "for it, so --metric cpu does not see the device's work slow down");
}

// A run-wide shift beyond the threshold is either the machine (another clock, other tenants) or a
// change that moved every row; rows are judged against it, so the reader must hear of it.
void warn_about_shift(Comparison& comparison) {
  const RunShift& shift = comparison.shift;
  const Options& options = comparison.options;
  if (!shift.applied || std::abs(shift.change) <= options.threshold_pct / 100) return;
  const std::string moved = change_with_interval_text(shift.change, shift.ci);
  const std::string consequence =
      shift.fails ? "; it is above --max-shift " + format_significant(options.max_shift_pct, 6) +
                        "%, which fails the comparison"
                  : "; rows are judged against it, so a change that slowed every row alike does not fail (--max-shift "
                    "PCT fails a shift above PCT; the gate's interleaved runs see such a change)";
  comparison.warnings.push_back("the whole run moved by " + moved + " (the median change of " +
                                std::to_string(shift.rows) +
                                " rows), more than the threshold: either the machine differs between the runs or a "
                                "change moved every row (compiler flags, a library)" +
                                consequence);
}

// A row's workload on its backend: "suite/workload/size/backend/device".
std::string group_of(const RowComparison& rc) {
  const ResultRow& r = rc.fresh ? *rc.fresh : *rc.base;
  return r.suite + "/" + r.workload + "/" + r.size + "/" + r.backend + "/" + r.device;
}

// A workload on one backend where two rows regressed, or one did and at least two others moved
// with it (rows tested that are slower than their threshold). On a shared machine such a group can
// slow together between two runs of one build, for as long as a run (docs/regression-gate.md, "Two
// runs of one build"); two runs cannot tell that from a change to code the rows share, so the
// reader hears it beside the verdicts, which stay as they are. One other row slower is too often
// an unchanged row's noise beside a real slowdown to be worth the warning.
constexpr size_t kFewestRowsMovingTogether = 3;
constexpr int kFewestRegressionsTogether = 2;

struct GroupMove {
  int regressions = 0, tested = 0;
  std::vector<double> slower;  // the changes of the rows tested that are slower than their threshold
};

void warn_about_groups_that_moved_together(Comparison& comparison) {
  std::map<std::string, GroupMove> groups;
  for (const RowComparison& rc : comparison.rows) {
    if (std::isnan(rc.p_slower)) continue;  // not tested (disturbed rows are not either)
    GroupMove& group = groups[group_of(rc)];
    ++group.tested;
    group.regressions += rc.verdict == Verdict::Regression;
    if (rc.change > rc.threshold_pct / 100) group.slower.push_back(rc.change);
  }
  const std::string measured_against = comparison.shift.applied ? " beyond the run-wide shift" : "";
  for (const auto& [name, group] : groups) {
    const bool together = group.regressions >= kFewestRegressionsTogether ||
                          (group.regressions > 0 && group.slower.size() >= kFewestRowsMovingTogether);
    if (!together) continue;
    const auto [fewest, most] = std::minmax_element(group.slower.begin(), group.slower.end());
    comparison.warnings.push_back(
        name + ": " + plural(group.regressions, "row") + " regressed and " + std::to_string(group.slower.size()) +
        " of its " + std::to_string(group.tested) + " rows tested moved together, slower than the threshold (" +
        format_change_percent(*fewest) + " to " + format_change_percent(*most) + measured_against +
        "): on a shared machine the rows of one workload on one backend can slow together between two runs of "
        "one build; unless the change touched code they share, compare new runs of both builds, or gate them "
        "(ci/gate.sh: interleaved runs), before believing it");
  }
}

// Rows excused by the CPUs' speed are neither failed nor improved: the reader hears how many, and
// how far the CPUs moved, since a real change hidden among them shows only in other runs.
void warn_about_cpu_speed(Comparison& comparison) {
  std::vector<double> moves;
  int stayed = 0;
  for (const RowComparison& rc : comparison.rows)
    if (rc.verdict == Verdict::CpuSpeed) {
      moves.push_back(rc.cpu_change);
      stayed += stayed_while_cpus_moved(rc) ? 1 : 0;
    }
  if (moves.empty()) return;
  const auto [fewest, most] = std::minmax_element(moves.begin(), moves.end());
  const int moved_with_cpus = static_cast<int>(moves.size()) - stayed;
  std::string what;
  if (moved_with_cpus > 0)
    what = plural(moved_with_cpus, "row") + " moved beyond the threshold no further than the CPUs' speed did";
  if (moved_with_cpus > 0 && stayed > 0) what += ", and ";
  if (stayed > 0)
    what += plural(stayed, "row") + " stood out of the run-wide shift only by not following the CPUs' speed, " +
            "which moved the other way and the shift with it";
  comparison.warnings.push_back(
      what + " (the CPUs' speed between the rows' repetitions in the two runs, by the probe of the CPUs, " +
      "samples.csv's cpu_probe_us: " + format_change_percent(*fewest) + " to " + format_change_percent(*most) +
      "): not judged. On a shared host another tenant's threads on a virtual CPU's core slow it for seconds to "
      "minutes, unseen by the guest's counters; compare new runs, or gate them (ci/gate.sh: interleaved runs). "
      "--cpu-speed ignore judges them by their times alone");
}

// Rows that regressed beyond the run-wide shift between runs that timed each row in one worker
// process. All of a process's repetitions of a row share where its memory landed and where its
// threads ran, which can hold that one row off for the whole run (docs/regression-gate.md, "Two
// runs of one build"); two such runs cannot tell that from a change to the row, runs of several
// processes each can. The gate's pooled runs and runs of `run --processes N` are not warned about.
void warn_about_one_process_runs(Comparison& comparison, const RunData& base, const RunData& fresh) {
  if (!comparison.shift.applied || comparison.count(Verdict::Regression) == 0) return;
  const bool base_one = base.processes() == 1, fresh_one = fresh.processes() == 1;
  if (!base_one && !fresh_one) return;
  comparison.warnings.push_back(
      (base_one && fresh_one ? "both runs each timed" : (base_one ? base.label : fresh.label) + " timed") +
      " every row in one worker process: all of a process's repetitions of a row share where its memory landed "
      "and where its threads ran, which can hold one row off for the whole run, and a pair of such runs cannot "
      "tell that from a change to the row; record runs with `run --processes 3` (each row's repetitions then "
      "come from three processes), or gate them (ci/gate.sh), before believing a lone regressed row");
}

// A rule that matches no row is most likely a typo in its pattern.
void warn_about_unused_rules(Comparison& comparison) {
  const RowThresholds& thresholds = comparison.options.row_thresholds;
  for (const ThresholdRule& rule : thresholds.rules) {
    const bool used = std::any_of(comparison.rows.begin(), comparison.rows.end(),
                                  [&](const RowComparison& rc) { return thresholds.rule_for(rc.name) == &rule; });
    if (!used)
      comparison.warnings.push_back(thresholds.file + ":" + std::to_string(rule.line) + ": the pattern '" +
                                    rule.pattern + "' is the first match of no row");
  }
}

}  // namespace

// ---- public --------------------------------------------------------------------------------------

std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::Regression: return "REGRESSION";
    case Verdict::Broken: return "BROKEN";
    case Verdict::NewFailure: return "NEW FAILURE";
    case Verdict::StillFailing: return "still failing";
    case Verdict::Fixed: return "fixed";
    case Verdict::Improved: return "improved";
    case Verdict::WithinSpread:
      return "within the run's spread";
    case Verdict::Slower: return "slower, within threshold";
    case Verdict::Faster: return "faster, within threshold";
    case Verdict::Noisy: return "noisy, not significant";
    case Verdict::Unchanged: return "unchanged";
    case Verdict::New: return "new";
    case Verdict::Missing: return "missing";
    case Verdict::NotTimed: return "not timed";
    case Verdict::Untested: return "untested";
    case Verdict::RatioBase: return "ratio base";
    case Verdict::Disturbed: return "disturbed, not judged";
    case Verdict::CpuSpeed:
      return "CPUs' speed, not judged";
  }
  return "?";
}

bool fails_gate(Verdict verdict) {
  return verdict == Verdict::Regression || verdict == Verdict::Broken || verdict == Verdict::NewFailure;
}

int Comparison::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const auto& rc) { return rc.verdict == verdict; }));
}

bool Comparison::failed() const {
  return shift.fails || std::any_of(rows.begin(), rows.end(), [](const auto& rc) { return fails_gate(rc.verdict); });
}

namespace {

// A run with no CPU time at all cannot be compared in it: better said at once than every row
// reported untested.
void require_cpu_times(const RunData& run) {
  for (const auto& [key, values] : run.cpu_samples)
    if (std::none_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) return;
  if (run.samples.empty()) return;  // nothing timed at all: no time to compare either
  throw InputError(run.label + " has no CPU times (its samples.csv has no cpu_ms values: recorded by "
                   "an older phasebench); record it again, or compare with --metric wall");
}

void add_note_once(Comparison& comparison, const std::string& note) {
  if (std::find(comparison.notes.begin(), comparison.notes.end(), note) == comparison.notes.end())
    comparison.notes.push_back(note);  // once when a run is compared with itself
}

// What each run's catalog.json says: unknown claims for a run from before catalogs were saved, and
// a warning when the two runs were checked against different tolerances or claims.
void note_catalogs(Comparison& comparison, const RunData& base, const RunData& fresh) {
  for (const RunData* run : {&base, &fresh})
    if (!run->catalog.saved) add_note_once(comparison, run->label + ": " + catalog::kNoCatalogNote);
  for (const std::string& difference : catalog::differences(base.catalog, fresh.catalog))
    comparison.warnings.push_back("the runs were measured with different catalogs: " + difference);
}

// An incomplete run (compared with --allow-incomplete) lacks the cases it never reached.
void note_incomplete(Comparison& comparison, const RunData& base, const RunData& fresh) {
  for (const RunData* run : {&base, &fresh})
    if (const auto why = run->incomplete())
      add_note_once(comparison, run->label + " is an incomplete run (" + *why +
                                    "): the cases it never reached show as missing or new rows");
}

}  // namespace

Comparison compare_runs(const RunData& base, const RunData& fresh, const Options& options) {
  if (!options.allow_incomplete) {
    results::require_complete(base, "compare");
    results::require_complete(fresh, "compare");
  }
  if (options.metric == Metric::Cpu) {
    require_cpu_times(base);
    require_cpu_times(fresh);
  }
  Comparison comparison;
  comparison.options = options;
  comparison.base_label = base.label;
  comparison.new_label = fresh.label;
  comparison.base_fingerprint = base.fingerprint();
  comparison.new_fingerprint = fresh.fingerprint();
  comparison.rows = match_rows(base, fresh);
  std::vector<PendingTest> tests;
  for (size_t i = 0; i < comparison.rows.size(); ++i) {
    RowComparison& rc = comparison.rows[i];
    rc.threshold_pct = threshold_of(rc, options);
    if (std::optional<PendingTest> test = compare_row(rc, base, fresh, options)) {
      test->row = i;
      tests.push_back(std::move(*test));
    }
  }
  comparison.shift = run_shift(tests, options);
  const double shift_factor = comparison.shift.applied ? 1 + comparison.shift.change : 1;
  std::vector<size_t> tested;
  for (const PendingTest& test : tests) {
    test_change(comparison.rows[test.row], test.base, test.fresh, shift_factor);
    tested.push_back(test.row);
  }
  apply_holm(comparison, tested);
  warn_about_shift(comparison);
  warn_about_unused_rules(comparison);
  warn_about_machines(comparison);
  warn_about_power(comparison);
  warn_about_rows(comparison);
  warn_about_groups_that_moved_together(comparison);
  warn_about_cpu_speed(comparison);
  warn_about_one_process_runs(comparison, base, fresh);
  note_catalogs(comparison, base, fresh);
  note_incomplete(comparison, base, fresh);
  return comparison;
}

}  // namespace pb::compare
