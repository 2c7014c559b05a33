#pragma once
// `phasebench report RUN... --out report.html`: one self-contained HTML page (inline CSS and SVG,
// no script, nothing fetched) with, per workload, the phase ladder, claimed against measured
// gains and each backend at its best phase; the roofline of every run; the rows that failed,
// were skipped or are unsupported, with their reasons; and the machines. Several runs (other
// machines, other commits) are shown side by side. Internal to the harness.

#include <string>
#include <vector>

#include "report/report_model.hpp"

namespace pb::report {

/// The page. A pure function of the runs (no clock, no environment), so the same runs always
/// give the same file.
std::string render(const std::vector<Run>& runs);

/// A whole page in the report's style: `title` as its heading, then `header_html` (markup) and
/// `main_html`. Every page phasebench writes goes through it, so they look alike.
std::string standalone_page(const std::string& title, const std::string& header_html, const std::string& main_html);

/// Throws InputError when `out_path` exists (reports are never overwritten) or has no directory.
void require_new_page_path(const std::string& out_path);

/// Loads the runs, renders them and writes `out_path` atomically; returns notes for the user (runs
/// whose claims are unknown, and why; incomplete runs). Throws InputError when a run cannot be read, or `out_path`
/// exists (reports are never overwritten) or has no directory.
std::vector<std::string> write_report(const std::vector<std::string>& run_paths, const std::string& out_path);

}  // namespace pb::report
