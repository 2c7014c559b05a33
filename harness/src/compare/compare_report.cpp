// `compare`'s output: one table of cells, printed aligned for the terminal and as Markdown for a
// pull-request comment, so the two always show the same thing.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/number_text.hpp"
#include "compare/compare.hpp"

namespace pb::compare {
namespace {

using Cells = std::vector<std::vector<std::string>>;

std::string ratio_base_name(const Options& options) {
  return options.ratio_to == RatioBase::Reference ? "reference" : "phase 0";
}

// Milliseconds in time mode; in ratio mode the compared value is a relative time, shown as the
// speedup users know from results.csv.
std::string value_text(double value, const Options& options) {
  if (std::isnan(value)) return "-";
  if (options.mode == Mode::Time) return format_significant(value, 4);
  return format_significant(1 / value, 3) + "x";
}

// The threshold column appears only where a thresholds file gives rows their own.
bool shows_thresholds(const Comparison& c) { return !c.options.row_thresholds.rules.empty(); }

// The CPUs' column appears where both runs probed the CPUs of some row tested.
bool shows_cpu_change(const Comparison& c) {
  return std::any_of(c.rows.begin(), c.rows.end(), [](const RowComparison& rc) { return !std::isnan(rc.cpu_change); });
}

std::vector<std::string> header(const Comparison& c) {
  const Options& options = c.options;
  const std::string unit = options.mode == Mode::Time ? (options.metric == Metric::Cpu ? " CPU ms" : " ms")
                                                      : " vs " + ratio_base_name(options);
  std::vector<std::string> cells{
      "row",     "status", "base" + unit, "new" + unit, c.shift.applied ? "change vs run [95% CI]" : "change [95% CI]",
      "p (Holm)"};
  if (c.spread.applied) cells.push_back("z vs spread");
  if (shows_thresholds(c)) cells.push_back("threshold");
  if (shows_cpu_change(c)) cells.push_back("CPUs");
  cells.push_back("verdict");
  return cells;
}

std::vector<std::string> cells_of(const RowComparison& rc, const Comparison& c) {
  std::vector<std::string> cells{
      rc.name,         status_text(rc), value_text(rc.base_value, c.options), value_text(rc.new_value, c.options),
      change_text(rc), holm_p_text(rc)};
  if (c.spread.applied) cells.push_back(spread_z_text(rc));
  if (shows_thresholds(c)) cells.push_back(format_significant(rc.threshold_pct, 6) + "%");
  if (shows_cpu_change(c)) cells.push_back(std::isnan(rc.cpu_change) ? "-" : format_change_percent(rc.cpu_change));
  cells.push_back(verdict_name(rc.verdict));
  return cells;
}

bool is_notable(Verdict verdict) {
  return verdict != Verdict::Unchanged && verdict != Verdict::RatioBase && verdict != Verdict::NotTimed;
}

std::string counts_text(const Comparison& c) {
  std::vector<std::string> parts;
  // The noun is the first word: "1 row broken", "2 rows broken".
  const auto add = [&](Verdict verdict, const std::string& noun, const std::string& rest = "") {
    if (const int n = c.count(verdict)) parts.push_back(plural(n, noun) + rest);
  };
  if (c.shift.fails) parts.push_back("the whole run " + format_change_percent(c.shift.change) + " slower");
  add(Verdict::Regression, "regression");
  add(Verdict::Broken, "row", " broken (now failing its check)");
  add(Verdict::NewFailure, "new row", " failing its check");
  add(Verdict::StillFailing, "row", " still failing");
  add(Verdict::Improved, "improvement");
  add(Verdict::Fixed, "row", " fixed");
  add(Verdict::New, "new row");
  add(Verdict::Missing, "missing row");
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text.empty() ? "no change beyond the noise" : text;
}

std::string settings_text(const Comparison& c) {
  const Options& o = c.options;
  std::string mode = o.mode == Mode::Time ? "time" : "ratio (time relative to " + ratio_base_name(o) + ")";
  if (o.metric == Metric::Cpu) mode += ", CPU time of the process";
  if (o.fastest_pct < 100) mode += ", fastest " + format_significant(o.fastest_pct, 6) + "% of repetitions";
  const std::string thresholds =
      o.row_thresholds.rules.empty() ? "" : " (rows of " + o.row_thresholds.file + " their own)";
  return "mode " + mode + ", threshold " + format_significant(o.threshold_pct, 6) + "%" + thresholds + ", alpha " +
         format_significant(o.alpha, 6) + " (Holm over " + plural(c.tested, "tested row") + " of " +
         std::to_string(c.rows.size()) + ")";
}

// "+-6.6%": a standard deviation of log changes, as a percent either way.
std::string plus_minus_percent(double log_deviation) {
  char text[32];
  std::snprintf(text, sizeof text, "+-%.1f%%", 100 * std::expm1(log_deviation));
  return text;
}

// How far the rows scatter around the shift, and what that asks of a regression.
std::string spread_text(const RunSpread& spread, double alpha) {
  if (!spread.applied) return "; the run's spread: not measured (" + spread.not_applied_why + ")";
  return "; the rows scatter around it by " + plus_minus_percent(spread.sigma) +
         " (the run's spread: 1.4826 x the median absolute log change; " + plus_minus_percent(spread.drift) +
         " of it drift between runs, the rest the rows' own error), so a row regresses only when it also "
         "stands out of the drift and its own error, Holm-corrected at alpha " +
         format_significant(alpha, 6) + ": a row of the typical error alone, by more than " +
         format_change_percent(spread.smallest_outstanding_change) + " (z " + format_significant(spread.z_needed, 3) +
         "; --spread none: by its rank test alone)";
}

// What each row's change is measured against.
std::string shift_text(const Comparison& c) {
  const RunShift& shift = c.shift;
  if (!shift.applied)
    return "run-wide shift: not taken (" + shift.not_applied_why + "): each row is judged on its own times";
  return "run-wide shift: " + change_with_interval_text(shift.change, shift.ci) + ", the median change of " +
         plural(shift.rows, "row") +
         " tested; each row's change is measured against it (--shift none: against nothing)" +
         spread_text(c.spread, c.options.alpha);
}

// Why each failing row fails, from NEW's reason column.
std::vector<std::string> failure_reasons(const Comparison& c) {
  std::vector<std::string> reasons;
  for (const RowComparison& rc : c.rows)
    if ((rc.verdict == Verdict::Broken || rc.verdict == Verdict::NewFailure) && rc.fresh)
      reasons.push_back(rc.name + ": " + to_string(rc.fresh->status) + (rc.fresh->reason.empty() ? "" : ": " + rc.fresh->reason));
  return reasons;
}

// ---- terminal ------------------------------------------------------------------------------------

std::string aligned(const Cells& rows) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += row[i] + (i + 1 < row.size() ? std::string(widths[i] - row[i].size() + 2, ' ') : "");
    out << line << "\n";
  }
  return out.str();
}

// ---- Markdown ------------------------------------------------------------------------------------

std::string markdown_cell(const std::string& text) {
  std::string escaped;
  for (char c : text) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return escaped;
}

std::string markdown_table(const Cells& rows) {
  std::ostringstream out;
  for (size_t r = 0; r < rows.size(); ++r) {
    out << "|";
    for (const std::string& cell : rows[r]) out << " " << markdown_cell(cell) << " |";
    out << "\n";
    if (r == 0) {
      out << "|";
      for (size_t i = 0; i < rows[r].size(); ++i) out << (i < 2 || i == rows[r].size() - 1 ? "---|" : "--:|");
      out << "\n";
    }
  }
  return out.str();
}

std::string method_text(const Comparison& c) {
  const std::string which = c.options.fastest_pct < 100
                                ? " over its fastest " + format_significant(c.options.fastest_pct, 6) + "% of repetitions"
                                : "";
  return "A row regresses when its median " + std::string(c.options.metric == Metric::Cpu ? "CPU time" : "time") +
         which + std::string(c.options.mode == Mode::Ratio ? " relative to " + ratio_base_name(c.options) : "") +
         (c.shift.applied ? " beyond the run-wide shift" : "") + " grows by more than " +
         format_significant(c.options.threshold_pct, 6) + "%" +
         (c.options.row_thresholds.rules.empty() ? "" : " (or its own threshold)") +
         " and a one-sided Mann-Whitney U test on the repetition samples, Holm-corrected over the rows "
         "tested, gives p <= " +
         format_significant(c.options.alpha, 6) +
         (c.spread.applied ? ", and its change beyond the shift stands out of how far an unchanged row moves: "
                             "the drift between runs (the part of the run's spread that the rows' own errors do "
                             "not explain) and the row's own error (from its interval), a normal tail at its z, "
                             "Holm-corrected alike"
                           : std::string()) +
         (c.shift.applied && !std::isnan(c.options.max_shift_pct)
              ? ". A run-wide slowdown above " + format_significant(c.options.max_shift_pct, 6) + "% fails on its own"
              : std::string()) +
         (c.options.cpu_speed == CpuSpeed::Explain && c.options.mode == Mode::Time && shows_cpu_change(c)
              ? ". A row that moved no further than the probe of the CPUs did between its repetitions in the two "
                "runs (column CPUs) is not judged: the CPUs' speed can account for it. Nor is one that stands out "
                "of the shift only by not following CPUs that moved the other way, its own change not significant"
              : std::string()) +
         ". A row that was not failing and now fails its check (FAIL, MISTRUSTED, ERROR) always fails "
         "the gate. The change's interval is a 95% bootstrap interval of the ratio of medians.";
}

}  // namespace

std::string change_with_interval_text(double change, const stats::Interval& interval) {
  if (std::isnan(interval.low)) return format_change_percent(change);
  return format_change_percent(change) + " [" + format_change_percent(interval.low) + ", " +
         format_change_percent(interval.high) + "]";
}

std::string change_text(const RowComparison& rc) {
  return std::isnan(rc.change) ? "-" : change_with_interval_text(rc.change, rc.change_ci);
}

std::string holm_p_text(const RowComparison& rc) {
  const double p = rc.change >= 0 ? rc.p_slower_holm : rc.p_faster_holm;
  return std::isnan(p) ? "-" : format_significant(p, 2);
}

std::string spread_z_text(const RowComparison& rc) {
  if (std::isnan(rc.spread_z)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f", rc.spread_z);
  return text;
}

std::string status_text(const RowComparison& rc) {
  const std::string before = rc.base ? to_string(rc.base->status) : "-",
                    after = rc.fresh ? to_string(rc.fresh->status) : "-";
  return before == after ? before : before + " -> " + after;
}

std::string terminal_report(const Comparison& c) {
  Cells cells{header(c)};
  for (const RowComparison& rc : c.rows) cells.push_back(cells_of(rc, c));
  std::ostringstream out;
  out << "compare " << c.base_label << " (base) -> " << c.new_label << " (new): " << settings_text(c) << "\n"
      << shift_text(c) << "\n\n"
      << aligned(cells);
  for (const std::string& reason : failure_reasons(c)) out << "  failing: " << reason << "\n";
  for (const std::string& warning : c.warnings) out << "warning: " << warning << "\n";
  for (const std::string& note : c.notes) out << "note: " << note << "\n";
  out << "\ncompare: " << (c.failed() ? "FAILED: " : "passed: ") << counts_text(c) << "\n";
  return out.str();
}

std::string markdown_report(const Comparison& c) {
  std::ostringstream out;
  out << "### phasebench compare: " << (c.failed() ? "FAILED" : "passed") << " (" << counts_text(c) << ")\n\n"
      << "`" << c.new_label << "` against `" << c.base_label << "`: " << settings_text(c) << "; " << shift_text(c)
      << ".\n\n";
  for (const std::string& warning : c.warnings) out << "> **Warning:** " << markdown_cell(warning) << "\n>\n";
  for (const std::string& note : c.notes) out << "> **Note:** " << markdown_cell(note) << "\n>\n";
  if (!c.warnings.empty() || !c.notes.empty()) out << "\n";
  for (const std::string& reason : failure_reasons(c)) out << "- **Failing:** " << markdown_cell(reason) << "\n";
  if (!failure_reasons(c).empty()) out << "\n";
  Cells notable{header(c)}, all{header(c)};
  for (const RowComparison& rc : c.rows) {
    all.push_back(cells_of(rc, c));
    if (is_notable(rc.verdict)) notable.push_back(all.back());
  }
  if (notable.size() > 1) out << markdown_table(notable) << "\n";
  out << "<details><summary>All " << c.rows.size() << " rows</summary>\n\n"
      << markdown_table(all) << "\n</details>\n\n"
      << method_text(c) << "\n";
  return out.str();
}

}  // namespace pb::compare
