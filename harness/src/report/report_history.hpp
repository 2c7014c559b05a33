#pragma once
// `phasebench report --history DB --out FILE`: the history's trends as one self-contained HTML page
// (the report's own style, inline SVG, no script): per workload, one chart per backend and phase
// with every run's time, the detected steps marked, and a table of the steps with their commit
// ranges, linked to the repository when its web address is known. Internal to the harness.

#include <string>
#include <vector>

#include "history/history_trend.hpp"

namespace pb::report {

/// The page for `series` (history_trend.hpp). `commit_url`: the repository's web address
/// ("https://github.com/o/r"), "" for none. A pure function of its inputs.
std::string render_history(const std::vector<history::Series>& series, const std::string& source,
                           const std::string& commit_url);

/// The repository's web address from the CI's variables (GitHub Actions, GitLab CI); "" outside CI.
std::string repository_url_from_environment();

}  // namespace pb::report
