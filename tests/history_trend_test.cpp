// The series of a history (history_trend.hpp) built from stored rows: a series per row and thread
// count, `--threads` choosing counts, and ratios over the reference measured at the row's own count.

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

// Three runs, each at 1 and 2 threads: the reference takes 10 ms at 1 thread and 12 ms at 2 (a
// serial loop slowed by the other thread's work), kokkos 4 ms and 2 ms.
std::vector<TrendRow> runs_at_two_counts() {
  std::vector<TrendRow> rows;
  for (const std::string run : {"r1", "r2", "r3"})
    for (const auto& [threads, reference_ms, kokkos_ms] : {std::tuple{1, 10.0, 4.0}, std::tuple{2, 12.0, 2.0}}) {
      rows.push_back(row_at(run, "reference", threads, reference_ms));
      rows.push_back(row_at(run, "kokkos", threads, kokkos_ms));
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
                                   "trainer2/lior_step/small/reference/cpu/0_serial_fp32/threads=1",
                                   "trainer2/lior_step/small/reference/cpu/0_serial_fp32/threads=2"}));
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

TEST(HistoryTrend, RatiosDivideByTheReferenceAtTheRowsOwnThreadCount) {
  TrendOptions options;
  options.ratio = true;
  const std::vector<Series> series = build_trends(runs_at_two_counts(), options);
  ASSERT_EQ(series.size(), 2u);  // the reference's own series are left out
  for (const Series& one : series) {
    const double expected = one.threads == 1 ? 4.0 / 10.0 : 2.0 / 12.0;
    for (const SeriesPoint& point : one.points) EXPECT_DOUBLE_EQ(point.value, expected) << one.name();
  }
}

}  // namespace
}  // namespace pb::history
