// The series of a history (history_trend.hpp) built from stored rows: a series per row and thread
// count, `--threads` choosing counts, and ratios of every count over the run's serial reference.

#include <gtest/gtest.h>

#include <set>

#include "history/history_trend.hpp"

namespace pb::history {
namespace {

TrendRow row_at(const std::string& run_id, const std::string& backend, int threads, double ms) {
  TrendRow row;
  row.suite = "trainer2";
  row.workload = "lior_step";
  row.size = "small";
  row.backend = backend;
  row.device = "cpu";
  row.phase = backend == "reference" ? "serial_fp32" : "baseline";
  row.threads = threads;
  row.fingerprint = "machine";
  row.run_id = run_id;
  row.point_ms = ms;
  row.cpu_point_ms = ms;
  return row;
}

// Three runs at 1 and 2 threads, as `run --threads 1,2` stores them: the serial reference once,
// at 1 thread (10 ms), kokkos at each count (4 ms and 2 ms).
std::vector<TrendRow> runs_at_two_counts() {
  std::vector<TrendRow> rows;
  for (const std::string run : {"r1", "r2", "r3"}) {
    rows.push_back(row_at(run, "reference", 1, 10.0));
    rows.push_back(row_at(run, "kokkos", 1, 4.0));
    rows.push_back(row_at(run, "kokkos", 2, 2.0));
  }
  return rows;
}

std::set<std::string> names_of(const std::vector<Series>& series) {
  std::set<std::string> names;
  for (const Series& one : series) names.insert(one.name());
  return names;
}

TEST(HistoryTrend, MakesASeriesPerRowAndThreadCount) {
  const std::vector<Series> series = build_trends(runs_at_two_counts(), {});
  EXPECT_EQ(names_of(series),
            (std::set<std::string>{"trainer2/lior_step/small/kokkos/cpu/0_baseline/threads=1",
                                   "trainer2/lior_step/small/kokkos/cpu/0_baseline/threads=2",
                                   "trainer2/lior_step/small/reference/cpu/0_serial_fp32/threads=1"}));
  for (const Series& one : series) EXPECT_EQ(one.points.size(), 3u) << one.name();
}

TEST(HistoryTrend, ThreadsChooseTheSeriesAtThoseCounts) {
  TrendOptions options;
  options.threads = {2};
  options.filter = "kokkos";
  const std::vector<Series> series = build_trends(runs_at_two_counts(), options);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].name(), "trainer2/lior_step/small/kokkos/cpu/0_baseline/threads=2");
  for (const SeriesPoint& point : series[0].points) EXPECT_DOUBLE_EQ(point.value, 2.0);
}

// The reference runs serially, once per run: a row at every count is divided by it.
TEST(HistoryTrend, RatiosDivideEveryThreadCountByTheRunsSerialReference) {
  TrendOptions options;
  options.ratio = true;
  const std::vector<Series> series = build_trends(runs_at_two_counts(), options);
  ASSERT_EQ(series.size(), 2u);  // the reference's own series is left out
  for (const Series& one : series) {
    const double expected = one.threads == 1 ? 4.0 / 10.0 : 2.0 / 10.0;
    for (const SeriesPoint& point : one.points) EXPECT_DOUBLE_EQ(point.value, expected) << one.name();
  }
}

}  // namespace
}  // namespace pb::history
