#pragma once
// The sections of the HTML report, each a piece of markup. Internal to the harness.

#include <string>
#include <vector>

#include "report/report_model.hpp"

namespace pb::report {

/// Which runs, from which machines and commits, and how many of their rows passed.
std::string runs_section(const std::vector<Run>& runs);
/// One workload: ladder charts, claims, best phases, every phase side by side, every repetition.
std::string workload_section(const std::vector<Run>& runs, const WorkloadKey& key, const Colors& colors);
/// The id of the "error per rollout step" section.
constexpr const char* kStepErrorsId = "step-errors";
/// Per rollout workload (rows with step_rel_l2_err): the relative L2 error after every step, a
/// chart per run and a table of every row. Empty when no row has step errors.
std::string step_errors_section(const std::vector<Run>& runs, const Colors& colors);
/// One run's table of each workload's checked variant nearest to its bound (highest roofline_pct
/// of its OK rows, the reference's aside, per size and device), farthest first, with the bound
/// named; empty when no such row has a roofline_pct.
std::string nearest_to_the_bound_table(const Run& run);
/// Every run's roofline chart and ceilings, and nearest_to_the_bound_table of each.
std::string roofline_section(const std::vector<Run>& runs, const Colors& colors);
/// FAIL, MISTRUSTED, ERROR, SKIPPED and UNSUPPORTED rows with their reasons.
std::string problems_section(const std::vector<Run>& runs);
/// machine.json side by side (differences marked) and in full.
std::string machines_section(const std::vector<Run>& runs);
/// The rows flagged `disturbed`, with why; empty (no section) when there are none.
std::string disturbed_section(const std::vector<Run>& runs);
/// Every row of every run in one table per run (collapsed).
std::string all_rows_section(const std::vector<Run>& runs);

/// Chart width when `runs` charts share a line of the page.
int chart_width(size_t runs);

// Pieces of the page every section is built from.
/// <section id=...><h2>title</h2>body</section>; `title` and `body` are markup.
std::string section(const std::string& id, const std::string& title, const std::string& body);
/// A chart (`svg`, markup) with its caption (text).
std::string figure(const std::string& caption, const std::string& svg);
/// Figures side by side, wrapping.
std::string charts_row(const std::vector<std::string>& figures);
/// <p class=css_class>text</p>; `text` is markup.
std::string paragraph(const std::string& text, const std::string& css_class = "note");

}  // namespace pb::report
