#include "report/report_history.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "common/number_text.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "report/report_svg.hpp"

namespace pb::report {
namespace {

constexpr int kWidth = 560, kHeight = 240;
constexpr size_t kMostRunLabels = 10;
constexpr double kLeft = 64, kRight = kWidth - 16, kTop = 16, kBottom = kHeight - 40;

std::string value_text(double value, bool ratio) { return ratio ? format_ratio(value) + " ref" : format_ms(value); }

// "kokkos/cpu 0_baseline, 2 threads": a figure's caption within its workload's section.
std::string caption(const history::Series& series) {
  return series.backend + "/" + series.device + " " + std::to_string(series.phase_index) + "_" + series.phase + ", " +
         std::to_string(series.threads) + (series.threads == 1 ? " thread" : " threads");
}

// The runs the x axis labels: whole numbers only, each run at most once (a scale's own ticks fall
// between runs, and rounded they would label one run twice: "0 1 2 2"), at most about ten.
std::vector<double> run_ticks(size_t runs) {
  const size_t stride = std::max<size_t>(1, (runs + kMostRunLabels - 1) / kMostRunLabels);
  std::vector<double> ticks;
  for (size_t run = 0; run < std::max<size_t>(runs, 1); run += stride) ticks.push_back(static_cast<double>(run));
  return ticks;
}

// "abc..def" as a link to the repository's comparison of the two commits (GitHub and GitLab both
// serve <repository>/compare/<a>...<b>), or as text without an address or a commit.
std::string commit_range_markup(const std::string& range, const std::string& commit_url) {
  const size_t dots = range.find("..");
  const std::string from = range.substr(0, dots), to = range.substr(dots + 2);
  if (commit_url.empty() || from == "?" || to == "?") return "<code>" + escape(range) + "</code>";
  return "<a href=\"" + escape(commit_url + "/compare/" + from + "..." + to) + "\"><code>" + escape(range) +
         "</code></a>";
}

std::string chart(const history::Series& series, bool ratio) {
  std::vector<double> values;
  for (const history::SeriesPoint& point : series.points) values.push_back(point.value);
  const auto range = svg::log_range(values, 1.15, 1.5);
  const svg::Scale y{range.first, range.second, kBottom, kTop, true};
  const double last = static_cast<double>(std::max<size_t>(series.points.size(), 2) - 1);
  const svg::Scale x{0, last, kLeft, kRight, false};
  svg::Canvas canvas(kWidth, kHeight, "chart", "trend of " + series.name());
  svg::y_axis(canvas, y, kLeft, kRight, ratio ? "time / reference" : "time (fastest quarter)", format_ms);
  svg::x_axis_at(canvas, x, run_ticks(series.points.size()), kBottom, kTop, "run (oldest first)", format_number);
  std::vector<svg::Point> line;
  for (size_t i = 0; i < series.points.size(); ++i) line.emplace_back(x(static_cast<double>(i)), y(values[i]));
  canvas.polyline(line, "#0b5cab", "series thin");
  for (size_t i = 0; i < series.points.size(); ++i) {
    const history::SeriesPoint& point = series.points[i];
    canvas.point(line[i].first, line[i].second, "#0b5cab",
                 point.run_id + " (commit " + (point.git_commit.empty() ? "?" : point.git_commit) + "): " +
                     value_text(point.value, ratio), 3.5);
  }
  for (const history::TrendStep& found : series.steps) {
    const double at = x(static_cast<double>(found.step.index) - 0.5);
    canvas.line(at, kTop, at, kBottom, "step-mark", found.step.relative_size > 0 ? "#b3261e" : "#17602e");
    canvas.text(at + 3, kTop + 10, format_change_percent(found.step.relative_size), "annotation");
  }
  return canvas.str();
}

std::string steps_table(const history::Series& series, bool ratio, const std::string& commit_url) {
  if (series.steps.empty()) return "<p class=\"note\">no step detected</p>";
  Table table({"step", "95% interval", "from", "to", "first run at the new level", "commits"});
  for (const history::TrendStep& found : series.steps) {
    table.cell(format_change_percent(found.step.relative_size), "num")
        .cell("[" + format_change_percent(found.step.interval.low) + ", " + format_change_percent(found.step.interval.high) + "]",
              "num")
        .cell(value_text(found.step.level_before, ratio), "num")
        .cell(value_text(found.step.level_after, ratio), "num")
        .cell(found.run_id)
        .markup(commit_range_markup(found.commit_range, commit_url));
    table.end_row();
  }
  return table.html();
}

}  // namespace

std::string repository_url_from_environment() {
  const auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  if (!env("GITHUB_REPOSITORY").empty())
    return (env("GITHUB_SERVER_URL").empty() ? "https://github.com" : env("GITHUB_SERVER_URL")) + "/" +
           env("GITHUB_REPOSITORY");
  return env("CI_PROJECT_URL").empty() ? "" : env("CI_PROJECT_URL") + "/-";
}

std::string render_history(const std::vector<history::Series>& series, const std::string& source,
                           const std::string& commit_url) {
  // One section per workload and machine, one figure per row of it.
  std::map<std::string, std::vector<const history::Series*>> sections;
  for (const history::Series& one : series)
    sections[one.suite + "/" + one.workload + " (" + one.size + ")" +
             (one.fingerprint.empty() ? "" : ", machine " + one.fingerprint)]
        .push_back(&one);
  size_t with_steps = 0;
  for (const history::Series& one : series) with_steps += one.steps.empty() ? 0 : 1;
  std::string body;
  for (const auto& [title, members] : sections) {
    body += "<section><h2>" + escape(title) + "</h2><div class=\"charts\">";
    for (const history::Series* one : members) {
      const bool ratio = one->fingerprint.empty();
      body += "<figure class=\"trend\"><figcaption>" + escape(caption(*one)) + "</figcaption>" + chart(*one, ratio) +
              steps_table(*one, ratio, commit_url) + "</figure>";
    }
    body += "</div></section>\n";
  }
  const std::string meta = std::to_string(series.size()) + " series from " + source + ", " +
                           std::to_string(with_steps) +
                           " with steps (asv-style L1 step detection, docs/history.md); complete runs without a "
                           "failed check only.";
  return standalone_page("phasebench history", "<p class=\"meta\">" + escape(meta) + "</p>", body);
}

}  // namespace pb::report
