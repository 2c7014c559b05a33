#include "report/report.hpp"

#include <filesystem>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "report/report_html.hpp"
#include "report/report_scaling.hpp"
#include "report/report_sections.hpp"

namespace pb::report {
namespace fs = std::filesystem;
namespace {

// Inline, so the file stands alone: opened from disk, mailed, or archived by CI.
const char* const kStyle = R"css(
:root { --ink: #1d2329; --muted: #5b6670; --line: #d9dee3; --panel: #ffffff; --page: #f4f6f8; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header, main { max-width: 1240px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 19px; margin: 0 0 6px; }
h3 { font-size: 15px; margin: 18px 0 6px; color: #2b3640; }
.sub, .note, figcaption, .meta { color: var(--muted); font-weight: normal; }
.sub { font-size: 14px; margin-left: 8px; }
nav { margin: 8px 0 0; }
nav a { display: inline-block; margin: 0 10px 4px 0; color: #0b5cab; text-decoration: none; }
nav a:hover { text-decoration: underline; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px;
          margin: 14px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; }
figcaption { font-size: 13px; margin-bottom: 2px; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.differs { background: #fff4d6; }
td.wrap { max-width: 520px; overflow-wrap: anywhere; }
.status { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; font-weight: 600; }
.status-ok, .status-caught { background: #dcf2e3; color: #17602e; }
.status-fail, .status-mistrusted, .status-error { background: #fbdcdc; color: #8e1b1b; }
.status-skipped, .status-unsupported { background: #e8eaed; color: #4a535c; }
.verdict-below { color: #8e1b1b; font-weight: 600; }
.verdict-above { color: #17602e; font-weight: 600; }
.verdict-within { color: #2b3640; }
details { margin: 8px 0; }
summary { cursor: pointer; color: #0b5cab; }
pre { background: #f7f8fa; border: 1px solid var(--line); padding: 8px; font-size: 12px;
      white-space: pre-wrap; overflow-wrap: anywhere; max-height: 420px; overflow: auto; }
svg.chart { background: #fff; }
svg .grid { stroke: #eceff2; stroke-width: 1; }
svg .axis { stroke: #8a939b; stroke-width: 1; }
svg .baseline { stroke: #6b6b6b; stroke-dasharray: 4 3; stroke-width: 1; }
svg .series { fill: none; stroke-width: 2; }
svg .series.dashed { stroke-dasharray: 6 4; }
svg .interval { stroke-width: 1.5; }
svg .lollipop { stroke-width: 3; opacity: 0.45; }
svg .ci-band { stroke-width: 6; opacity: 0.3; }
svg .median-tick { stroke: #1d2329; stroke-width: 2; }
svg .claim-band { opacity: 0.22; }
svg .leader { stroke: #9aa3ab; stroke-width: 1; }
svg .not-timed { fill: #8e1b1b; font-size: 15px; font-weight: 700; }
svg .not-timed-hit { opacity: 0; }
svg .point { stroke: #fff; stroke-width: 1; }
svg .sample { opacity: 0.7; }
svg text { fill: var(--ink); font-size: 11px; }
svg .tick { fill: var(--muted); }
svg .axis-label { fill: var(--muted); font-size: 12px; }
svg .legend, svg .row-label, svg .annotation { font-size: 12px; }
svg .baseline-label, svg .ceiling-label, svg .point-label { fill: #3d4750; font-size: 11px; }
svg .note { fill: var(--muted); font-style: italic; }
.approx { display: inline-block; padding: 0 5px; border: 1px dashed #b7791f; border-radius: 4px; background: #fdf1dc;
          color: #7a4a00; font-size: 11px; font-weight: 600; }
svg .approx-core, svg .legend-point { pointer-events: none; }
svg .approx-legend { font-size: 10.5px; }
svg .lollipop.dashed { stroke-dasharray: 5 3; }
svg .series.thin { stroke-width: 1.2; }
svg .budget { fill: none; stroke-width: 1; stroke-dasharray: 1 3; }
svg .step-point { opacity: 0.8; }
svg .step-mark { stroke-width: 1.5; stroke-dasharray: 3 2; }
.banner { margin: 10px 0 0; padding: 8px 12px; border: 1px solid #b7791f; border-radius: 8px; background: #fdf1dc;
          color: #7a4a00; font-weight: 600; }
)css";

std::string navigation(const std::vector<WorkloadKey>& keys, bool has_step_errors, bool has_scaling) {
  std::string links = "<a href=\"#runs\">Runs</a>";
  for (const WorkloadKey& key : keys)
    links += "<a href=\"#" + key.anchor() + "\">" + escape(key.name() + " (" + key.size + ")") + "</a>";
  if (has_scaling) links += "<a href=\"#" + std::string(kScalingId) + "\">scaling</a>";
  if (has_step_errors) links += "<a href=\"#" + std::string(kStepErrorsId) + "\">error per rollout step</a>";
  for (const char* section : {"roofline", "problems", "machines", "all-rows"})
    links += "<a href=\"#" + std::string(section) + "\">" + section + "</a>";
  return "<nav>" + links + "</nav>";
}

// Above everything else: an incomplete run's rows are only the cases it finished, and every count
// and chart on the page is short by the rest.
std::string incomplete_banners(const std::vector<Run>& runs) {
  std::string html;
  for (const Run& run : runs)
    if (const auto why = run.data.incomplete())
      html += "<p class=\"banner\">" +
              escape("incomplete run: " + run.letter + " (" + run.data.directory() + "): " + *why) + "</p>";
  return html;
}

}  // namespace

std::string render(const std::vector<Run>& runs) {
  const Colors colors(runs);
  const std::vector<WorkloadKey> keys = workloads(runs);
  const std::string step_errors = step_errors_section(runs, colors);
  const std::string scaling = scaling_section(runs, colors);
  std::string header = "<p class=\"meta\">" + std::to_string(runs.size()) + " run" + (runs.size() == 1 ? "" : "s") +
                       ", " + std::to_string(keys.size()) + " workload" + (keys.size() == 1 ? "" : "s") +
                       "; written by phasebench " + PHASEBENCH_VERSION + ". Hover over a point for its numbers.</p>" +
                       incomplete_banners(runs) + navigation(keys, !step_errors.empty(), !scaling.empty());
  std::string page;
  page += runs_section(runs);
  for (const WorkloadKey& key : keys) page += workload_section(runs, key, colors);
  page += scaling;
  page += step_errors;
  page += roofline_section(runs, colors);
  page += problems_section(runs);
  page += disturbed_section(runs);
  page += machines_section(runs);
  page += all_rows_section(runs);
  return standalone_page("phasebench report", header, page);
}

std::string standalone_page(const std::string& title, const std::string& header_html, const std::string& main_html) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" + escape(title) +
         "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<header><h1>" + escape(title) +
         "</h1>" + header_html + "</header>\n<main>\n" + main_html + "</main>\n</body>\n</html>\n";
}

void require_new_page_path(const std::string& out_path) {
  const fs::path out(out_path);
  if (fs::exists(out))
    throw InputError("--out " + out_path + " already exists; phasebench never overwrites a report: choose a new name");
  const fs::path directory = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(directory))
    throw InputError("--out " + out_path + ": directory " + directory.string() + " does not exist");
}

std::vector<std::string> write_report(const std::vector<std::string>& run_paths, const std::string& out_path) {
  require_new_page_path(out_path);
  const fs::path out(out_path);
  const std::vector<Run> runs = load_runs(run_paths);
  const std::string html = render(runs);
  if (fs::exists(out))  // appeared while rendering: still never overwritten
    throw InputError("--out " + out_path + " appeared while the report was being written");
  write_file_atomically(out, html);
  std::vector<std::string> notes;
  for (const Run& run : runs) {
    if (!run.data.catalog.saved) notes.push_back("run " + run.letter + " (" + run.data.label + "): " + catalog::kNoCatalogNote);
    if (const auto why = run.data.incomplete())
      notes.push_back("run " + run.letter + " (" + run.data.label + ") is incomplete: " + *why);
  }
  return notes;
}

}  // namespace pb::report
