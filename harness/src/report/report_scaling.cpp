#include "report/report_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/report_html.hpp"
#include "report/report_sections.hpp"
#include "report/report_svg.hpp"
#include "results/scaling.hpp"
#include "roofline/roofline.hpp"

namespace pb::report {
namespace {

using svg::Canvas;
using svg::Scale;
using Rows = std::vector<const ResultRow*>;

constexpr int kChartHeight = 360;

bool of_workload(const results::RowIdentity& id, const std::string& workload) {
  return id.suite + "/" + id.workload == workload;
}

// The run's timed rows of each workload ("suite/workload") timed at two sizes or more, or with rows
// at several thread counts (`analysis` has their speedups).
std::map<std::string, Rows> swept_workloads(const Run& run, const results::ScalingAnalysis& analysis) {
  std::map<std::string, Rows> rows;
  std::map<std::string, std::set<std::string>> sizes;
  for (const ResultRow& row : run.data.rows) {
    if (!is_timed(row)) continue;
    rows[row.suite + "/" + row.workload].push_back(&row);
    sizes[row.suite + "/" + row.workload].insert(row.size);
  }
  for (const auto& [workload, seen] : sizes) {
    const std::string& name = workload;  // a structured binding cannot be captured in C++17
    const bool threads_vary =
        std::any_of(analysis.threads.begin(), analysis.threads.end(),
                    [&](const results::ThreadScaling& s) { return of_workload(s.identity, name); });
    if (seen.size() < 2 && !threads_vary) rows.erase(name);
  }
  return rows;
}

// The sizes a workload's rows were timed at.
size_t size_count(const Rows& rows) {
  std::set<std::string> sizes;
  for (const ResultRow* row : rows) sizes.insert(row->size);
  return sizes.size();
}

struct SweepPoint {
  double working_set_bytes, gb_per_s;
  const ResultRow* row;
};

// Each ladder's (backend/device) fastest phase at each size that declares bytes, as points in
// order of working set: the data one iteration keeps, at least half its declared bytes.
std::map<std::string, std::vector<SweepPoint>> best_phase_points(const Rows& rows) {
  std::map<std::pair<std::string, std::string>, const ResultRow*> fastest;  // by ladder and size
  for (const ResultRow* row : rows) {
    if (!(row->gb_per_s > 0)) continue;
    const ResultRow*& held = fastest[{ladder_name(*row), row->size}];
    if (!held || row->median_ms < held->median_ms) held = row;
  }
  std::map<std::string, std::vector<SweepPoint>> points;
  for (const auto& [key, row] : fastest) {
    const double declared_bytes = row->gb_per_s * 1e9 * row->median_ms / 1e3;
    points[key.first].push_back({roofline::working_set_lower_bound(declared_bytes), row->gb_per_s, row});
  }
  for (auto& [ladder, line] : points)
    std::sort(line.begin(), line.end(),
              [](const SweepPoint& a, const SweepPoint& b) { return a.working_set_bytes < b.working_set_bytes; });
  return points;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) bytes /= 1024, ++unit;
  return format_number(bytes) + " " + units[unit];
}

std::string point_tooltip(const SweepPoint& p) {
  const ResultRow& row = *p.row;
  return row.suite + "/" + row.workload + " \xC2\xB7 " + ladder_name(row) + " \xC2\xB7 phase " +
         std::to_string(row.phase_index) + " " + row.phase + " (fastest at this size)\nsize " + row.size + ": " +
         row.shape + "\n" + format_ms(row.median_ms) + ", " + format_number(p.gb_per_s) + " GB/s, working set " +
         format_bytes(p.working_set_bytes) +
         (std::isnan(row.roofline_pct) ? ""
                                       : ", " + format_number(row.roofline_pct) + "% of roofline (" + row.bound + ")");
}

// The cache levels as vertical lines at the working sets they hold (capacities summed, as
// attainable_bandwidth fills them), and the bandwidth attainable at every working set.
void draw_memory_hierarchy(Canvas& canvas, const roofline::Ceilings& ceilings, const Scale& x, const Scale& y,
                           double y_top) {
  double held = 0;
  for (const roofline::CacheCeiling& cache : ceilings.caches) {
    held += cache.capacity_bytes;
    if (held < x.lo || held > x.hi) continue;
    canvas.line(x(held), y(y.lo), x(held), y_top, "budget", "#6b7785");
    canvas.text(x(held) + 3, y_top + 10, cache.name + " " + format_bytes(held), "ceiling-label");
  }
  std::vector<svg::Point> attainable;
  for (int i = 0; i <= 48; ++i) {
    const double bytes = x.lo * std::pow(x.hi / x.lo, i / 48.0);
    const double rate = roofline::attainable_bandwidth(bytes, ceilings);
    if (rate >= y.lo && rate <= y.hi) attainable.push_back({x(bytes), y(rate)});
  }
  canvas.polyline(attainable, "#222", "series dashed thin");
}

std::string working_set_chart(const Run& run, const std::string& workload, const Rows& rows, const Colors& colors) {
  const auto points = best_phase_points(rows);
  if (points.empty()) return "";
  std::vector<double> xs, ys;
  for (const auto& [ladder, line] : points)
    for (const SweepPoint& p : line) xs.push_back(p.working_set_bytes), ys.push_back(p.gb_per_s);
  if (run.ceilings) {  // the axes hold every cache boundary and ceiling: where the sweep sits among them
    ys.push_back(run.ceilings->bandwidth_gb_per_s);
    double held = 0;
    for (const roofline::CacheCeiling& cache : run.ceilings->caches) {
      ys.push_back(cache.gb_per_s);
      xs.push_back(held += cache.capacity_bytes);
    }
  }
  const int width = chart_width(1);
  Canvas canvas(width, kChartHeight, "scaling", workload + ": GB/s against working set, run " + run.letter);
  const double left = 70, right = width - 16.0, top = 30, bottom = kChartHeight - 48.0;
  const auto [x_lo, x_hi] = svg::log_range(xs, 2, 16);
  const auto [y_lo, y_hi] = svg::log_range(ys, 1.5, 10);
  const Scale x{x_lo, x_hi, left, right, true}, y{y_lo, y_hi, bottom, top, true};
  svg::y_axis(canvas, y, left, right, "GB/s (declared bytes)", format_number);
  svg::x_axis(canvas, x, bottom, top, "working set (at least half the declared bytes)", format_bytes);
  if (run.ceilings) draw_memory_hierarchy(canvas, *run.ceilings, x, y, top);
  std::vector<std::pair<std::string, std::string>> legend;
  for (const auto& [ladder, line] : points) {
    const std::string color = colors.of(line.front().row->backend);
    std::vector<svg::Point> drawn;
    for (const SweepPoint& p : line) drawn.push_back({x(p.working_set_bytes), y(p.gb_per_s)});
    canvas.polyline(drawn, color);
    for (size_t i = 0; i < line.size(); ++i)
      canvas.point(drawn[i].first, drawn[i].second, color, point_tooltip(line[i]), 4);
    legend.emplace_back(ladder, color);
  }
  legend.emplace_back("attainable", "#222");  // the cache-aware roofline
  svg::legend(canvas, left, 16, legend);
  return figure("Run " + run.letter + ": " + workload, canvas.str());
}

std::string rung_name(const results::RowIdentity& id) {
  return id.backend + "/" + id.device + " " + std::to_string(id.phase_index) + " " + id.phase + ", " +
         std::to_string(id.threads) + (id.threads == 1 ? " thread" : " threads");
}

std::string growth_table(const results::ScalingAnalysis& analysis, const std::string& workload) {
  Table table({"variant", "points", "time grows as n^p: p [95%]", "reference's p", "faster than the reference"});
  for (const results::GrowthFit& fit : analysis.growth) {
    if (!of_workload(fit.identity, workload)) continue;
    table.cell(rung_name(fit.identity))
        .cell(std::to_string(fit.points), "num")
        .cell(format_number(fit.exponent) + " " +
                  format_interval(fit.exponent_ci_low, fit.exponent_ci_high, format_number),
              "num")
        .cell(format_number(fit.reference_exponent), "num")
        .cell(fit.grows_faster_than_reference ? "yes" : "", fit.grows_faster_than_reference ? "differs" : "");
    table.end_row();
  }
  return table.rows() ? table.html() : "";
}

std::string crossover_table(const results::ScalingAnalysis& analysis, const std::string& workload) {
  Table table({"phase", "against", "sizes", "where it becomes faster"});
  for (const results::Crossover& crossover : analysis.crossovers) {
    if (!of_workload(crossover.identity, workload)) continue;
    table.cell(rung_name(crossover.identity))
        .cell(std::to_string(crossover.previous_phase_index) + " " + crossover.previous_phase)
        .cell(std::to_string(crossover.points), "num")
        .cell(results::verdict_text(crossover));
    table.end_row();
  }
  return table.rows() ? table.html() : "";
}

std::string threads_table(const results::ScalingAnalysis& analysis, const std::string& workload) {
  Table table({"variant", "size", "over", "speedup", "parallel efficiency"});
  for (const results::ThreadScaling& s : analysis.threads) {
    if (!of_workload(s.identity, workload)) continue;
    table.cell(rung_name(s.identity))
        .cell(s.size)
        .cell(std::to_string(s.base_threads) + " threads", "num")
        .cell(format_ratio(s.speedup), "num")
        .cell(format_number(100 * s.parallel_efficiency) + "%", "num");
    table.end_row();
  }
  return table.rows() ? table.html() : "";
}

std::string thread_tooltip(const results::ThreadScaling& s) {
  return rung_name(s.identity) + "\nsize " + s.size + ": " + format_ratio(s.speedup) + " over " +
         std::to_string(s.base_threads) + (s.base_threads == 1 ? " thread" : " threads") + ", parallel efficiency " +
         format_number(100 * s.parallel_efficiency) + "%";
}

// Every rung's speedup over its fewest threads against its threads, a point per rung and size
// (beside each other by backend), with perfect scaling (speedup = threads over the fewest) dashed.
std::string thread_chart(const Run& run, const std::string& workload, const results::ScalingAnalysis& analysis,
                         const Colors& colors) {
  std::vector<const results::ThreadScaling*> records;
  for (const results::ThreadScaling& s : analysis.threads)
    if (of_workload(s.identity, workload) && std::isfinite(s.speedup)) records.push_back(&s);
  if (records.empty()) return "";
  double most_threads = 1, highest = 1;
  std::vector<std::string> backends;
  for (const results::ThreadScaling* s : records) {
    most_threads = std::max(most_threads, static_cast<double>(s->identity.threads));
    highest = std::max(highest, s->speedup);
    if (std::find(backends.begin(), backends.end(), s->identity.backend) == backends.end())
      backends.push_back(s->identity.backend);
  }
  const int width = chart_width(2);
  Canvas canvas(width, kChartHeight, "scaling", workload + ": speedup against threads, run " + run.letter);
  const double left = 60, right = width - 16.0, top = 30, bottom = kChartHeight - 48.0;
  const Scale x{0.5, most_threads + 0.5, left, right, false};
  const Scale y{0, std::max(highest, most_threads) * 1.1, bottom, top, false};
  svg::y_axis(canvas, y, left, right, "speedup over the fewest threads", format_number);
  svg::x_axis(canvas, x, bottom, top, "threads", format_number);
  canvas.polyline({{x(1), y(1)}, {x(most_threads), y(most_threads)}}, "#222", "series dashed thin");
  std::vector<std::pair<std::string, std::string>> legend;
  const double spread = (x(1.4) - x(1)) / static_cast<double>(backends.size());
  for (size_t b = 0; b < backends.size(); ++b) {
    const std::string color = colors.of(backends[b]);
    for (const results::ThreadScaling* s : records)
      if (s->identity.backend == backends[b])
        canvas.point(x(s->identity.threads) + (static_cast<double>(b) - backends.size() / 2.0) * spread, y(s->speedup),
                     color, thread_tooltip(*s), 3.5);
    legend.emplace_back(backends[b], color);
  }
  legend.emplace_back("perfect scaling", "#222");
  svg::legend(canvas, left, 16, legend);
  return figure("Run " + run.letter + ": " + workload + ", threads", canvas.str());
}

std::string run_scaling(const Run& run, const Colors& colors) {
  const results::ScalingAnalysis analysis = results::analyze_scaling(run.data.rows, &run.data.catalog);
  const std::map<std::string, Rows> swept = swept_workloads(run, analysis);
  if (swept.empty()) return "";
  std::string html;
  for (const auto& [workload, rows] : swept) {
    std::vector<std::string> charts;
    if (size_count(rows) > 1) charts.push_back(working_set_chart(run, workload, rows, colors));
    charts.push_back(thread_chart(run, workload, analysis, colors));
    html += "<h3>" + escape("Run " + run.letter + ": " + workload) + "</h3>\n" + charts_row(charts) +
            growth_table(analysis, workload) + crossover_table(analysis, workload) + threads_table(analysis, workload);
  }
  return html;
}

}  // namespace

std::string scaling_section(const std::vector<Run>& runs, const Colors& colors) {
  std::string body;
  for (const Run& run : runs) body += run_scaling(run, colors);
  if (body.empty()) return "";
  return section(
      kScalingId, "Scaling",
      paragraph(
          "Workloads timed at two sizes or more, or at several thread counts (run --threads "
          "1,2). The first chart: each backend's fastest phase at each size, its achieved GB/s (declared bytes over "
          "the median) against its working set, with "
          "the cache levels the run's ceilings hold (dotted, their capacities summed) and the "
          "bandwidth attainable at each working set (dashed). The second: every rung's speedup over "
          "its fewest threads, a point per rung and size, perfect scaling dashed. The tables: scaling.csv's growth "
          "fits (time ~ a&middot;n^p over the sizes not held to a latency floor nor disturbed; n "
          "the declared work), each phase's crossover with the phase before it, and the speedup "
          "over the fewest threads.") +
          body);
}

}  // namespace pb::report
