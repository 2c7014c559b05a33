#include "report/report_charts.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "phasebench/backend.hpp"
#include "report/report_html.hpp"
#include "report/report_svg.hpp"

namespace pb::report {
namespace {

using svg::Canvas;
using svg::Scale;

// Plot area inside a chart: room on the left for tick labels, below for the x axis.
struct Frame {
  double left = 70, right, top = 30, bottom;
};

Frame frame_for(int width, int height, double left = 70, double bottom_room = 48) {
  return {left, static_cast<double>(width) - 16, 30, static_cast<double>(height) - bottom_room};
}

std::string phase_label(const ResultRow& row) { return std::to_string(row.phase_index) + " " + row.phase; }

std::string row_tooltip(const ResultRow& row) {
  std::string text = row.suite + "/" + row.workload + " \xC2\xB7 " + ladder_name(row) + " \xC2\xB7 phase " +
                     phase_label(row) + "\n";
  if (!is_timed(row)) return text + to_string(row.status) + (row.reason.empty() ? "" : ": " + row.reason);
  text += "median " + format_ms(row.median_ms) + " " + format_interval(row.ci_low_ms, row.ci_high_ms, format_ms) +
          " over " + std::to_string(row.reps) + " repetitions\n";
  text += format_ratio(row.speedup_vs_reference) + " vs reference " +
          format_interval(row.speedup_vs_reference_ci_low, row.speedup_vs_reference_ci_high, format_ratio);
  if (!std::isnan(row.speedup_vs_prev))
    text += "\n" + format_ratio(row.speedup_vs_prev) + " vs previous phase " +
            format_interval(row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high, format_ratio);
  text += "\nhost syncs " + format_number(row.host_syncs_per_iter) + ", ops " + format_number(row.ops_per_iter);
  if (!std::isnan(row.roofline_pct))
    text += ", " + format_number(row.roofline_pct) + "% of roofline" + (row.bound.empty() ? "" : " (" + row.bound + " bound)");
  if (!row.exact) text += "\n" + std::string(kApproximateMeaning);
  return text;
}

// A result row's point; an approximate row's is a ring (a white core that lets hovers through),
// so it stands apart from exact rows in every chart without a second color per backend.
void row_point(Canvas& canvas, double x, double y, const ResultRow& row, const std::string& color,
               const std::string& tooltip, double radius = 4.5) {
  canvas.point(x, y, color, tooltip, radius);
  if (!row.exact) canvas.point(x, y, "#fff", "", radius * 0.45, "approx-core");
}

bool any_approximate(const Rows& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const ResultRow* row) { return !row->exact; });
}

// Extra height of a chart that explains its approximate marks on a line of its own at the bottom.
constexpr double kApproximateLegendRoom = 18;

// The ring and the dashed stroke an approximate row is drawn with, and what they mean.
void approximate_legend(Canvas& canvas, double x, double y) {
  canvas.line(x, y - 4, x + 22, y - 4, "series dashed", "#5b6670");
  canvas.point(x + 11, y - 4, "#5b6670", "", 4.5, "legend-point");
  canvas.point(x + 11, y - 4, "#fff", "", 2, "approx-core");
  canvas.text(x + 30, y, kApproximateMeaning, "approx-legend");
}

// The ladders of `rows` (backend/device, in name order) and their rows in phase order.
std::map<std::string, Rows> by_ladder(const Rows& rows, bool with_reference) {
  std::map<std::string, Rows> ladders;
  for (const ResultRow* row : rows)
    if (with_reference || row->backend != kReferenceBackend) ladders[ladder_name(*row)].push_back(row);
  for (auto& entry : ladders)
    std::sort(entry.second.begin(), entry.second.end(),
              [](const ResultRow* a, const ResultRow* b) { return a->phase_index < b->phase_index; });
  return ladders;
}

// Category positions for the phases, and a small sideways offset per ladder so that the
// intervals of ladders at the same phase do not hide each other.
struct PhaseAxis {
  std::map<int, double> x;
  double dodge = 0;
};

PhaseAxis phase_axis(const std::vector<int>& phases, const Frame& frame, size_t ladders) {
  PhaseAxis axis;
  const double step = (frame.right - frame.left) / static_cast<double>(std::max<size_t>(phases.size(), 1));
  for (size_t i = 0; i < phases.size(); ++i) axis.x[phases[i]] = frame.left + step * (static_cast<double>(i) + 0.5);
  axis.dodge = std::min(8.0, step / static_cast<double>(ladders + 2));
  return axis;
}

void phase_ticks(Canvas& canvas, const PhaseAxis& axis, const Frame& frame, const std::string& label) {
  std::vector<std::pair<double, std::string>> ticks;
  for (const auto& [phase, x] : axis.x) ticks.emplace_back(x, std::to_string(phase));
  svg::x_categories(canvas, ticks, frame.bottom);
  canvas.line(frame.left, frame.bottom, frame.right, frame.bottom, "axis");
  canvas.text((frame.left + frame.right) / 2, frame.bottom + 34, label, "axis-label", "middle");
}

std::vector<std::pair<std::string, std::string>> ladder_legend(const std::map<std::string, Rows>& ladders,
                                                               const Colors& colors) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [name, rows] : ladders) entries.emplace_back(name, colors.of(rows.front()->backend));
  return entries;
}

// A row that has a phase on the chart but no time: an "x" on the floor with its status.
void not_timed_marker(Canvas& canvas, const ResultRow& row, double x, const Frame& frame, const std::string& color) {
  canvas.text(x, frame.bottom - 6, "\xC3\x97", "not-timed", "middle");
  canvas.rect(x - 5, frame.bottom - 16, 10, 12, color, "not-timed-hit", row_tooltip(row));
}

Range log_range_of(const std::vector<double>& values) { return svg::log_range(values, 1.3, 4); }

// A chart over phases: a log y axis with a dashed line at 1x.
struct PhaseChart {
  Canvas canvas;
  Frame frame;
  Scale y;
};

PhaseChart phase_chart(const std::string& css_class, const std::string& label, int width, int height, Range y_range,
                       const std::string& y_label, bool has_approximate) {
  const double legend_room = has_approximate ? kApproximateLegendRoom : 0;
  height += static_cast<int>(legend_room);
  PhaseChart chart{Canvas(width, height, css_class, label), frame_for(width, height, 70, 48 + legend_room), {}};
  chart.y = Scale{y_range.first, y_range.second, chart.frame.bottom, chart.frame.top, true};
  svg::y_axis(chart.canvas, chart.y, chart.frame.left, chart.frame.right, y_label, format_ratio);
  chart.canvas.line(chart.frame.left, chart.y(1), chart.frame.right, chart.y(1), "baseline");
  if (has_approximate) approximate_legend(chart.canvas, 8, height - 6.0);  // from the edge: the sentence is long
  return chart;
}

// A ladder's line: solid between exact phases, dashed into and between approximate ones (and
// dashed throughout on a GPU, as before), one polyline per stretch of the same style.
void ladder_line(Canvas& canvas, const std::vector<std::pair<svg::Point, bool>>& points_and_exact,
                 const std::string& color, bool on_gpu) {
  std::vector<svg::Point> stretch;
  bool stretch_dashed = false;
  for (size_t i = 0; i + 1 < points_and_exact.size(); ++i) {
    const bool dashed = on_gpu || !points_and_exact[i].second || !points_and_exact[i + 1].second;
    if (!stretch.empty() && dashed != stretch_dashed) {
      canvas.polyline(stretch, color, stretch_dashed ? "series dashed" : "series");
      stretch.clear();
    }
    if (stretch.empty()) stretch.push_back(points_and_exact[i].first);
    stretch.push_back(points_and_exact[i + 1].first);
    stretch_dashed = dashed;
  }
  canvas.polyline(stretch, color, stretch_dashed ? "series dashed" : "series");
}

// The sideways offset of the index-th of `count` ladders drawn at one phase.
double dodge_offset(size_t index, size_t count, double dodge) {
  return (static_cast<double>(index) - static_cast<double>(count - 1) / 2) * dodge;
}

}  // namespace

std::vector<int> ladder_phases(const std::vector<Rows>& rows_per_run) {
  std::set<int> phases;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (row->backend != kReferenceBackend) phases.insert(row->phase_index);
  return {phases.begin(), phases.end()};
}

Range speedup_range(const std::vector<Rows>& rows_per_run) {
  std::vector<double> values{1.0};
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      if (is_timed(*row))
        values.insert(values.end(), {row->speedup_vs_reference, row->speedup_vs_reference_ci_low,
                                     row->speedup_vs_reference_ci_high});
  return log_range_of(values);
}

Range gain_range(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  std::vector<double> values{1.0};
  for (size_t r = 0; r < runs.size(); ++r)
    for (const ResultRow* row : rows_per_run[r]) {
      if (!is_timed(*row) || row->backend == kReferenceBackend) continue;
      const ClaimCheck claim = check_claim(*row, rows_per_run[r], runs[r].data.catalog);
      values.insert(values.end(), {row->speedup_vs_prev, row->speedup_vs_prev_ci_low, row->speedup_vs_prev_ci_high,
                                   claim.claimed_min, claim.claimed_max});
    }
  return log_range_of(values);
}

std::string ladder_chart(const Rows& rows, const std::vector<int>& phases, const Colors& colors, Range y_range,
                         int width, const std::string& label) {
  PhaseChart chart = phase_chart("ladder", label, width, 330, y_range, "speedup vs serial reference", any_approximate(rows));
  auto& [canvas, frame, y] = chart;
  canvas.text(frame.right - 4, y(1) - 5, "serial reference", "baseline-label", "end");
  const auto ladders = by_ladder(rows, false);
  const PhaseAxis axis = phase_axis(phases, frame, ladders.size());
  phase_ticks(canvas, axis, frame, "phase");
  size_t index = 0;
  for (const auto& [name, ladder_rows] : ladders) {
    const std::string color = colors.of(ladder_rows.front()->backend);
    const double shift = dodge_offset(index++, ladders.size(), axis.dodge);
    std::vector<std::pair<svg::Point, bool>> line;
    for (const ResultRow* row : ladder_rows) {
      const double x = axis.x.at(row->phase_index) + shift;
      if (!is_timed(*row)) {
        not_timed_marker(canvas, *row, x, frame, color);
        continue;
      }
      line.push_back({{x, y(row->speedup_vs_reference)}, row->exact});
      if (!std::isnan(row->speedup_vs_reference_ci_low))
        canvas.error_bar(x, y(row->speedup_vs_reference_ci_low), x, y(row->speedup_vs_reference_ci_high), color);
    }
    ladder_line(canvas, line, color, ladder_rows.front()->device != "cpu");
    for (const ResultRow* row : ladder_rows)
      if (is_timed(*row))
        row_point(canvas, axis.x.at(row->phase_index) + shift, y(row->speedup_vs_reference), *row, color, row_tooltip(*row));
  }
  svg::legend(canvas, frame.left, 16, ladder_legend(ladders, colors));
  return canvas.str();
}

std::string claims_chart(const Run& run, const Rows& rows, const std::vector<int>& phases, const Colors& colors,
                         Range y_range, int width, const std::string& label) {
  PhaseChart chart = phase_chart("claims", label, width, 300, y_range, "gain over previous phase", any_approximate(rows));
  auto& [canvas, frame, y] = chart;
  std::vector<int> gained(phases.size());
  gained.erase(std::copy_if(phases.begin(), phases.end(), gained.begin(), [](int p) { return p > 0; }), gained.end());
  const auto ladders = by_ladder(rows, false);
  const PhaseAxis axis = phase_axis(gained, frame, ladders.size());
  phase_ticks(canvas, axis, frame, "phase");
  size_t index = 0;
  for (const auto& [name, ladder_rows] : ladders) {
    const std::string color = colors.of(ladder_rows.front()->backend);
    const double shift = dodge_offset(index++, ladders.size(), axis.dodge * 1.6);
    for (const ResultRow* row : ladder_rows) {
      if (!axis.x.count(row->phase_index) || !is_timed(*row) || std::isnan(row->speedup_vs_prev)) continue;
      const double x = axis.x.at(row->phase_index) + shift;
      const ClaimCheck claim = check_claim(*row, rows, run.data.catalog);
      if (!std::isnan(claim.claimed_min))
        canvas.rect(x - 6, y(claim.claimed_max), 12, y(claim.claimed_min) - y(claim.claimed_max) + 1, color,
                    "claim-band", name + " phase " + phase_label(*row) + ": claimed " + claim.claim_text());
      if (!std::isnan(row->speedup_vs_prev_ci_low))
        canvas.error_bar(x, y(row->speedup_vs_prev_ci_low), x, y(row->speedup_vs_prev_ci_high), color);
      row_point(canvas, x, y(row->speedup_vs_prev), *row, color,
                row_tooltip(*row) + "\nclaimed " + claim.claim_text() + ": " + claim.text());
    }
  }
  std::vector<std::pair<std::string, std::string>> entries = ladder_legend(ladders, colors);
  svg::legend(canvas, frame.left, 16, entries);
  return canvas.str();
}

namespace {

// One line of the best-phase chart: a ladder's best exact row or (when faster) its best
// approximate one; no row: the ladder has no timed phase of that kind in that run.
struct BestLine {
  std::string ladder, label;
  const ResultRow* row = nullptr;
  std::string missing;  // what to say when there is no row
};

std::vector<BestLine> best_lines(const std::vector<Run>& runs, const std::vector<Rows>& best_per_run) {
  std::set<std::string> ladder_names;
  for (const Rows& rows : best_per_run)
    for (const ResultRow* row : rows) ladder_names.insert(ladder_name(*row));
  std::vector<BestLine> lines;
  for (const std::string& ladder : ladder_names)
    for (size_t r = 0; r < runs.size(); ++r) {
      const ResultRow *exact = nullptr, *approximate = nullptr;
      for (const ResultRow* row : best_per_run[r])
        if (ladder_name(*row) == ladder) (row->exact ? exact : approximate) = row;
      const std::string run = runs.size() > 1 ? "  " + runs[r].letter : "";
      if (!approximate) {
        lines.push_back({ladder, ladder + run, exact, "no timed phase"});
        continue;
      }
      lines.push_back({ladder, ladder + " best exact" + run, exact, "no timed exact phase"});
      lines.push_back({ladder, ladder + " best approx." + run, approximate, ""});
    }
  return lines;
}

}  // namespace

std::string best_phase_chart(const std::vector<Run>& runs, const std::vector<Rows>& best_per_run, const Colors& colors) {
  const std::vector<BestLine> lines = best_lines(runs, best_per_run);
  std::vector<double> values{1.0};
  bool has_approximate = false;
  for (const Rows& rows : best_per_run) {
    has_approximate = has_approximate || any_approximate(rows);
    for (const ResultRow* row : rows)
      values.insert(values.end(), {row->speedup_vs_reference, row->speedup_vs_reference_ci_low,
                                   row->speedup_vs_reference_ci_high});
  }
  const double line_height = 20, group_gap = 10, legend_room = has_approximate ? kApproximateLegendRoom : 0;
  double lines_height = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    lines_height += line_height + (i > 0 && lines[i].ladder != lines[i - 1].ladder ? group_gap : 0);
  const int width = 1150;
  const int height = static_cast<int>(50 + group_gap + legend_room + lines_height);
  Canvas canvas(width, height, "best-phase", "each backend at its fastest exact phase (and fastest approximate one)");
  const double left = 230, right = width - 330.0, top = 12, bottom = height - 40.0 - legend_room;
  const Range range = log_range_of(values);
  const Scale x{range.first, range.second, left, right, true};
  svg::x_axis(canvas, x, bottom, top, "speedup vs serial reference (log scale)", format_ratio);
  canvas.line(x(1), top, x(1), bottom, "baseline");
  if (has_approximate) approximate_legend(canvas, left, height - 6.0);
  double y = top + 14;
  for (size_t i = 0; i < lines.size(); ++i) {
    const BestLine& line = lines[i];
    if (i > 0 && line.ladder != lines[i - 1].ladder) y += group_gap;  // a ladder's runs stay together
    canvas.text(left - 8, y + 4, line.label, "row-label", "end");
    if (!line.row) {
      canvas.text(left + 4, y + 4, line.missing, "note");
    } else {
      const ResultRow& row = *line.row;
      const std::string color = colors.of(row.backend);
      canvas.line(x(1), y, x(row.speedup_vs_reference), y, row.exact ? "lollipop" : "lollipop dashed", color);
      if (!std::isnan(row.speedup_vs_reference_ci_low))
        canvas.error_bar(x(row.speedup_vs_reference_ci_low), y, x(row.speedup_vs_reference_ci_high), y, color);
      row_point(canvas, x(row.speedup_vs_reference), y, row, color, row_tooltip(row), 5.5);
      canvas.text(right + 12, y + 4, format_ratio(row.speedup_vs_reference) + "  " + format_ms(row.median_ms) +
                                         "  phase " + phase_label(row) + (row.exact ? "" : " (approximate)"),
                  "annotation");
    }
    y += line_height;
  }
  return canvas.str();
}

namespace {

bool on_log_axis(double value) { return value > 0 && std::isfinite(value); }

// The budget drawn for a row: only approximate rows', whose budget is the point of the chart.
std::vector<double> drawn_budget(const ResultRow& row) {
  return row.exact ? std::vector<double>{} : parse_step_values(row.step_budget);
}

std::string step_line_class(const ResultRow& row) {
  if (!row.exact) return "series dashed";
  return row.phase_index == 0 ? "series thin" : "series";
}

std::string step_row_name(const ResultRow& row) {
  return ladder_name(row) + " " + phase_label(row) + (row.exact ? "" : " approx.");
}

// One polyline per stretch of consecutive drawable values, so a gap is never bridged.
void step_polylines(Canvas& canvas, const std::vector<double>& values, const PhaseAxis& steps, const Scale& y,
                    const std::string& color, const std::string& css_class) {
  std::vector<svg::Point> stretch;
  for (size_t t = 0; t <= values.size(); ++t) {
    if (t < values.size() && on_log_axis(values[t])) {
      stretch.emplace_back(steps.x.at(static_cast<int>(t)), y(values[t]));
      continue;
    }
    canvas.polyline(stretch, color, css_class);
    stretch.clear();
  }
}

void step_points(Canvas& canvas, const ResultRow& row, const std::vector<double>& errors, const PhaseAxis& steps,
                 const Scale& y, const std::string& color) {
  const std::vector<double> budget = parse_step_values(row.step_budget);
  for (size_t t = 0; t < errors.size(); ++t) {
    if (!on_log_axis(errors[t])) continue;
    std::string tooltip = step_row_name(row) + " (" + to_string(row.status) + ")\nstep " + std::to_string(t) +
                          ": relative L2 error " + format_number(errors[t]);
    if (t < budget.size()) tooltip += ", budget " + format_number(budget[t]);
    canvas.point(steps.x.at(static_cast<int>(t)), y(errors[t]), color, tooltip, 2.5, "step-point");
  }
}

// One entry per line, stacked in a column right of the plot: with a dozen lines a row of swatches
// would not fit, and the line sample shows the style (thin, solid, dashed) as well as the color.
void step_legend(Canvas& canvas, double x, double y, const Rows& rows, const Colors& colors) {
  constexpr double kEntryHeight = 16;
  for (const ResultRow* row : rows) {
    canvas.line(x, y - 4, x + 24, y - 4, step_line_class(*row), colors.of(row->backend));
    canvas.text(x + 30, y, step_row_name(*row), "legend");
    y += kEntryHeight;
  }
  if (std::none_of(rows.begin(), rows.end(), [](const ResultRow* row) { return !drawn_budget(*row).empty(); })) return;
  canvas.line(x, y - 4, x + 24, y - 4, "budget", "#5b6670");
  canvas.text(x + 30, y, "budget of an approximate row", "legend");
}

}  // namespace

Range step_error_range(const std::vector<Rows>& rows_per_run) {
  std::vector<double> values;
  for (const Rows& rows : rows_per_run)
    for (const ResultRow* row : rows)
      for (const std::vector<double>& series : {parse_step_values(row->step_rel_l2_err), drawn_budget(*row)})
        values.insert(values.end(), series.begin(), series.end());
  return svg::log_range(values, 2, 100);
}

std::string step_error_chart(const Rows& rows, const Colors& colors, Range y_range, int width, const std::string& label) {
  constexpr double kLegendWidth = 300, kEntryHeight = 16;
  const int height = static_cast<int>(std::max(340.0, 80 + kEntryHeight * static_cast<double>(rows.size() + 1)));
  Canvas canvas(width, height, "step-errors", label);
  const Frame frame{70, width - kLegendWidth, 30, height - 48.0};
  const Scale y{y_range.first, y_range.second, frame.bottom, frame.top, true};
  svg::y_axis(canvas, y, frame.left, frame.right, "relative L2 error vs fp64 (log)", format_number);
  size_t step_count = 0;
  for (const ResultRow* row : rows)
    step_count = std::max({step_count, parse_step_values(row->step_rel_l2_err).size(), drawn_budget(*row).size()});
  std::vector<int> step_indices(step_count);
  for (size_t t = 0; t < step_count; ++t) step_indices[t] = static_cast<int>(t);
  const PhaseAxis steps = phase_axis(step_indices, frame, 1);  // steps are categories, like phases
  phase_ticks(canvas, steps, frame, "rollout step");
  for (const ResultRow* row : rows) {
    const std::string color = colors.of(row->backend);
    const std::vector<double> errors = parse_step_values(row->step_rel_l2_err);
    step_polylines(canvas, drawn_budget(*row), steps, y, color, "budget");
    step_polylines(canvas, errors, steps, y, color, step_line_class(*row));
    step_points(canvas, *row, errors, steps, y, color);
  }
  step_legend(canvas, frame.right + 20, frame.top + 4, rows, colors);
  return canvas.str();
}

namespace {

struct RooflinePoint {
  const ResultRow* row;
  double intensity, gflop_per_s;
};

std::vector<RooflinePoint> roofline_points(const Run& run) {
  std::vector<RooflinePoint> points;
  for (const ResultRow& row : run.data.rows)
    if (is_timed(row) && row.gflop_per_s > 0 && row.gb_per_s > 0)
      points.push_back({&row, row.gflop_per_s / row.gb_per_s, row.gflop_per_s});
  return points;
}

struct Label {
  double x, y;  // the point it names
  std::string text;
  double text_y = 0;
};

// Each label goes right of its point; one that would overlap a label already placed moves down
// a line at a time (workloads of similar intensity), with a leader line back to its point.
void draw_labels(Canvas& canvas, std::vector<Label> labels) {
  constexpr double kLineHeight = 12, kCharWidth = 6.2, kGap = 7;
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.y < b.y; });
  std::vector<Label> placed;
  for (Label label : labels) {
    label.text_y = label.y + 4;
    const auto overlaps = [&](const Label& other) {
      return std::fabs(other.text_y - label.text_y) < kLineHeight &&
             label.x < other.x + kCharWidth * static_cast<double>(other.text.size()) &&
             other.x < label.x + kCharWidth * static_cast<double>(label.text.size());
    };
    while (std::any_of(placed.begin(), placed.end(), overlaps)) label.text_y += kLineHeight;
    if (label.text_y - label.y > kLineHeight / 2) canvas.line(label.x + 2, label.y, label.x + kGap - 1, label.text_y - 4, "leader");
    canvas.text(label.x + kGap, label.text_y, label.text, "point-label");
    placed.push_back(label);
  }
}

// The memory ceiling (bandwidth x intensity) up to the ridge point, then the compute ceiling.
void draw_ceilings(Canvas& canvas, const roofline::Ceilings& ceilings, const Scale& x, const Scale& y) {
  const double bandwidth = ceilings.bandwidth_gb_per_s, peak = ceilings.peak_gflop_per_s;
  const double ridge = peak / bandwidth;
  const double start = std::max(x.lo, y.lo / bandwidth);
  canvas.polyline({{x(start), y(start * bandwidth)}, {x(ridge), y(peak)}, {x(x.hi), y(peak)}}, "#222");
  canvas.text(x(x.hi) - 4, y(peak) - 6, format_number(peak) + " GFLOP/s fp32 (" + ceilings.compute_method + ")",
              "ceiling-label", "end");
  const double mid = start * std::pow(ridge / start, 0.2);  // near the left end, clear of most points
  const double angle = std::atan2(y(ridge) - y(start), x(ridge) - x(start)) * 180 / M_PI;
  canvas.text(x(mid), y(mid * bandwidth) - 6, format_number(bandwidth) + " GB/s", "ceiling-label", "middle", angle);
}

}  // namespace

std::pair<Range, Range> roofline_ranges(const std::vector<Run>& runs) {
  std::vector<double> xs, ys;
  for (const Run& run : runs) {
    for (const RooflinePoint& p : roofline_points(run)) xs.push_back(p.intensity), ys.push_back(p.gflop_per_s);
    if (run.ceilings) {
      xs.push_back(run.ceilings->peak_gflop_per_s / run.ceilings->bandwidth_gb_per_s);  // the ridge point
      ys.push_back(run.ceilings->peak_gflop_per_s);
    }
  }
  return {svg::log_range(xs, 3, 100), svg::log_range(ys, 2.5, 100)};
}

std::string roofline_chart(const Run& run, const Colors& colors, std::pair<Range, Range> ranges, int width) {
  const std::vector<RooflinePoint> points = roofline_points(run);
  const auto& [x_range, y_range] = ranges;
  Canvas canvas(width, 380, "roofline", "roofline of run " + run.letter);
  const Frame frame = frame_for(width, 380);
  const Scale x{x_range.first, x_range.second, frame.left, frame.right, true};
  const Scale y{y_range.first, y_range.second, frame.bottom, frame.top, true};
  svg::y_axis(canvas, y, frame.left, frame.right, "GFLOP/s", format_number);
  svg::x_axis(canvas, x, frame.bottom, frame.top, "arithmetic intensity (flop per byte)", format_number);
  if (run.ceilings) draw_ceilings(canvas, *run.ceilings, x, y);
  std::map<std::string, RooflinePoint> highest;  // per workload: where its name goes
  std::set<std::string> backends;
  for (const RooflinePoint& p : points) {
    row_point(canvas, x(p.intensity), y(p.gflop_per_s), *p.row, colors.of(p.row->backend),
              row_tooltip(*p.row) + "\n" + format_number(p.gflop_per_s) + " GFLOP/s at " +
                  format_number(p.intensity) + " flop/byte, " + format_number(p.row->gb_per_s) + " GB/s",
              4);
    backends.insert(p.row->backend);
    auto& top = highest.emplace(p.row->workload, p).first->second;
    if (p.gflop_per_s > top.gflop_per_s) top = p;
  }
  std::vector<Label> labels;
  for (const auto& [workload, p] : highest) labels.push_back({x(p.intensity), y(p.gflop_per_s), workload});
  draw_labels(canvas, labels);
  std::vector<std::pair<std::string, std::string>> entries;
  for (const std::string& backend : backends) entries.emplace_back(backend, colors.of(backend));
  svg::legend(canvas, frame.left, 16, entries);
  return canvas.str();
}

namespace {

// The timed rows of `rows` that have samples in `run`.
Rows rows_with_samples(const Run& run, const Rows& rows) {
  Rows found;
  for (const ResultRow* row : rows)
    if (is_timed(*row) && run.data.samples.count(results::row_key(*row))) found.push_back(row);
  return found;
}

}  // namespace

std::vector<double> sample_times(const std::vector<Run>& runs, const std::vector<Rows>& rows_per_run) {
  std::vector<double> times;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const ResultRow* row : rows_with_samples(runs[r], rows_per_run[r])) {
      const std::vector<double>& samples = runs[r].data.samples.at(results::row_key(*row));
      times.insert(times.end(), samples.begin(), samples.end());
    }
  return times;
}

std::string samples_chart(const Run& run, const Rows& rows, const Colors& colors, Range x_range, int width) {
  const Rows timed = rows_with_samples(run, rows);
  const double line_height = 22;
  const int height = static_cast<int>(60 + line_height * static_cast<double>(timed.size()));
  Canvas canvas(width, height, "samples", "every repetition of run " + run.letter);
  const double left = 260, right = width - 16.0, top = 10, bottom = height - 44.0;
  const Scale x{x_range.first, x_range.second, left, right, true};
  svg::x_axis(canvas, x, bottom, top, "milliseconds per iteration (log scale)", format_number);
  double y = top + 14;
  for (const ResultRow* row : timed) {
    const std::string color = colors.of(row->backend);
    canvas.text(left - 8, y + 4, ladder_name(*row) + " " + phase_label(*row) + (row->exact ? "" : " (approx.)"),
                "row-label", "end");
    if (!std::isnan(row->ci_low_ms)) canvas.line(x(row->ci_low_ms), y, x(row->ci_high_ms), y, "ci-band", color);
    for (double ms : run.data.samples.at(results::row_key(*row))) canvas.point(x(ms), y, color, format_ms(ms), 2.5, "sample");
    canvas.line(x(row->median_ms), y - 8, x(row->median_ms), y + 8, "median-tick");
    y += line_height;
  }
  return canvas.str();
}

}  // namespace pb::report
