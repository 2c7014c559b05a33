// `compare --junit` (compare.hpp): each matched row as a JUnit case. A row that fails the gate
// fails with what failed it; a row whose time the gate does not judge is skipped with why, so
// that a CI system's count of passed cases is the rows that were compared and passed.

#include <cmath>

#include "common/number_text.hpp"
#include "compare/compare.hpp"

namespace pb::compare {
namespace {

// "+12.3% slower [+9.1%, +15.0%]": a change and its interval, when it has one.
std::string interval_text(double change, const stats::Interval& ci) {
  return format_change_percent(change) + (change >= 0 ? " slower" : " faster") +
         (std::isnan(ci.low) ? "" : " [" + format_change_percent(ci.low) + ", " + format_change_percent(ci.high) + "]");
}

// "+12.3% slower [+9.1%, +15.0%], Holm p 0.002, threshold 5%": the numbers that made it a
// regression (its change beyond the run-wide shift where one was taken).
std::string regression_message(const RowComparison& rc, const RunShift& shift) {
  return interval_text(rc.change, rc.change_ci) +
         (shift.applied ? " than the whole run (" + format_change_percent(shift.change) + ")" : "") + ", Holm p " +
         format_significant(rc.p_slower_holm, 2) +
         (std::isnan(rc.spread_z) ? ""
                                  : ", z " + spread_z_text(rc) + " vs the run's spread (Holm p " +
                                        format_significant(rc.p_spread_slower_holm, 2) + ")") +
         ", threshold " + format_significant(rc.threshold_pct, 6) + "%";
}

// The run-wide shift as a case of its own: a shift above --max-shift fails compare without any row
// failing, and a CI system's test report must show why.
junit::TestCase shift_case(const Comparison& comparison) {
  const RunShift& shift = comparison.shift;
  junit::TestCase c = junit::test_case("phasebench.compare", "run-wide shift");
  c.type = "run-wide shift";
  const std::string text = interval_text(shift.change, shift.ci) + ", the median change of " +
                           std::to_string(shift.rows) + " rows" +
                           (std::isnan(comparison.options.max_shift_pct)
                                ? std::string()
                                : ", --max-shift " + format_significant(comparison.options.max_shift_pct, 6) + "%");
  if (shift.fails) {
    c.outcome = junit::Outcome::Failed;
    c.message = "the whole run is slower: " + text;
  } else {
    c.output = text;
  }
  return c;
}

// "OK -> FAIL: output s: rel_l2_err 0.5 > tolerance 1e-05": the statuses and NEW's reason.
std::string failure_message(const RowComparison& rc) {
  const std::string reason = rc.fresh && !rc.fresh->reason.empty() ? ": " + rc.fresh->reason : "";
  if (rc.verdict == Verdict::NewFailure) return "a new row, " + status_text(rc) + reason;
  return status_text(rc) + reason;
}

// Why the gate does not judge the row's time; empty for a row it judges.
std::string skip_reason(const RowComparison& rc) {
  switch (rc.verdict) {
    case Verdict::NotTimed:
      return "not timed: " + status_text(rc) + (rc.fresh && !rc.fresh->reason.empty() ? ": " + rc.fresh->reason : "");
    case Verdict::Disturbed:
      return "disturbed: other work on the machine slowed its repetitions; not judged";
    case Verdict::CpuSpeed:
      return "the CPUs' speed: the probe of the CPUs moved by " + format_change_percent(rc.cpu_change) +
             " between its repetitions in the two runs, " +
             (stayed_while_cpus_moved(rc) ? "and the run-wide shift with it, while the row did not move significantly ("
                                          : "as far as the row (") +
             format_change_percent(rc.raw_change) + "); not judged";
    case Verdict::Untested:
      return "untested: no repetition samples to compare";
    case Verdict::Missing:
      return "missing: only in the base run";
    case Verdict::New:
      return "new: only in the new run, nothing to compare with";
    case Verdict::RatioBase:
      return "ratio base: the row the others' times are divided by";
    case Verdict::StillFailing:
      return "still failing: " + failure_message(rc) + " (failing in the base too)";
    default:
      return "";
  }
}

junit::TestCase row_case(const RowComparison& rc, const RunShift& shift) {
  const junit::RowParts parts = junit::row_parts(rc.name);
  junit::TestCase c = junit::test_case(parts.classname, parts.name);
  c.type = verdict_name(rc.verdict);
  if (rc.verdict == Verdict::Regression) {
    c.outcome = junit::Outcome::Failed;
    c.message = regression_message(rc, shift);
  } else if (fails_gate(rc.verdict)) {
    c.outcome = junit::Outcome::Failed;
    c.message = failure_message(rc);
  } else if (const std::string why = skip_reason(rc); !why.empty()) {
    c.outcome = junit::Outcome::Skipped;
    c.message = why;
  } else {
    c.output = c.type + ": " + change_text(rc) + ", Holm p " + holm_p_text(rc);
  }
  return c;
}

}  // namespace

junit::Report junit_report(const Comparison& comparison) {
  junit::Report report("phasebench compare " + comparison.base_label + " -> " + comparison.new_label);
  if (comparison.shift.applied) report.add("phasebench", shift_case(comparison));
  for (const RowComparison& rc : comparison.rows)
    report.add(junit::row_parts(rc.name).suite, row_case(rc, comparison.shift));
  return report;
}

}  // namespace pb::compare
