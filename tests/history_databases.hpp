#pragma once
// What the history tests share: crafted runs to add (the usual ladder under a given run id) and a
// fixture that gives each test an empty history of the kind its parameter names, "sqlite" (a new
// file) or "postgresql" (a new database on the throwaway server, throwaway_postgres.hpp).

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "crafted_runs.hpp"
#include "throwaway_postgres.hpp"

namespace pb::testing {

/// The ladder (four rows of 12 repetitions) as one run with this id, every time `slowdown` x.
inline CraftedRun crafted_run(const std::string& run_id, double slowdown = 1.0) {
  CraftedRun run;
  run.run_id = run_id;
  run.rows = ladder_rows();
  for (CraftedRow& row : run.rows) row.median_ms *= slowdown;
  run.extra_machine = {{"git_commit", "c0ffee" + run_id.substr(9, 6)}, {"hostname", "crafted"}};
  run.catalog = crafted_catalog();
  return run;
}

/// "20261125T10MM00Z-crafted": a run id whose time is `minute` minutes past 10:00.
inline std::string run_id_at(int minute) {
  char id[40];
  std::snprintf(id, sizeof id, "20261125T10%02d00Z-crafted", minute);
  return id;
}

/// Each test gets an empty database of the kind its parameter names, at url_ (skipped where the
/// PostgreSQL server cannot be started, with why).
class HistoryDatabaseTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      url_ = (fresh_temp_path("history") += ".sqlite").string();
      return;
    }
    ThrowawayPostgres& server = ThrowawayPostgres::shared();
    if (!server.unavailable().empty()) GTEST_SKIP() << server.unavailable();
    url_ = server.fresh_database_url();
  }
  std::string url_;
};

}  // namespace pb::testing
