// The history page's charts: the x axis counts runs, so it labels whole runs, each once (ticks at
// halves, rounded, would label three runs "0 1 2 2").

#include <gtest/gtest.h>

#include <regex>

#include "report/report_history.hpp"

namespace pb::report {
namespace {

// The labels of the x axis's ticks: text centred under the plot (y 216.0), in order.
std::vector<std::string> run_labels(const std::string& page) {
  std::vector<std::string> labels;
  const std::regex tick("<text x=\"[0-9.]+\" y=\"216[.]0\" class=\"tick\" text-anchor=\"middle\">([^<]*)</text>");
  for (std::sregex_iterator it(page.begin(), page.end(), tick), end; it != end; ++it) labels.push_back((*it)[1]);
  return labels;
}

history::Series series_of(size_t runs) {
  history::Series series{"trainer2", "lior_step", "small", "kokkos", "cpu", "baseline", 0, 1, "f00d", {}, {}};
  for (size_t i = 0; i < runs; ++i)
    series.points.push_back({"run" + std::to_string(i), "c" + std::to_string(i), "", "main", 1.0 + 0.01 * i});
  return series;
}

TEST(HistoryChart, TheXAxisLabelsEachRunOnce) {
  EXPECT_EQ(run_labels(render_history({series_of(3)}, "test.sqlite", "")),
            (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(run_labels(render_history({series_of(2)}, "test.sqlite", "")), (std::vector<std::string>{"0", "1"}));
  // Many runs: every few labelled, none twice, all whole.
  const std::vector<std::string> many = run_labels(render_history({series_of(37)}, "test.sqlite", ""));
  EXPECT_LE(many.size(), 10u);
  EXPECT_GE(many.size(), 5u);
  for (size_t i = 1; i < many.size(); ++i) EXPECT_LT(std::stoi(many[i - 1]), std::stoi(many[i]));
}

}  // namespace
}  // namespace pb::report
