// The claims view printed at the end of a run: claims come from the run's catalog, the whole-ladder
// claim is held against the phases it covers (and only when the ladder's phase 0 was timed),
// approximate phases are marked, and the fastest exact phase is named beside them.

#include <gtest/gtest.h>

#include <sstream>

#include "report/claims_view.hpp"
#include "crafted_runs.hpp"
#include "phasebench/results.hpp"

namespace pb {
namespace {

ResultRow rollout_row(int phase_index, const std::string& phase, bool exact, double median_ms, double vs_phase0) {
  ResultRow row;
  row.suite = "spinlock";
  row.workload = "cnn_rollout_convex";
  row.size = "default";
  row.backend = "onednn";
  row.device = "cpu";
  row.phase_index = phase_index;
  row.phase = phase;
  row.exact = exact;
  row.status = Status::Ok;
  row.median_ms = median_ms;
  row.speedup_vs_phase0 = vs_phase0;
  row.speedup_vs_phase0_ci_low = vs_phase0 * 0.9;
  row.speedup_vs_phase0_ci_high = vs_phase0 * 1.1;
  row.host_syncs_per_iter = 0;
  return row;
}

// A catalog for `rows`' workload: phases 0-11 each claiming 1.1-1.2x (none for phase 0), and a
// whole-ladder claim of 8-12x over phases up to `claim_last_phase` (0: all of them).
catalog::Catalog catalog_for(const ResultRow& row, int claim_last_phase) {
  catalog::WorkloadEntry entry;
  entry.name = row.suite + "/" + row.workload;
  for (int index = 0; index <= 11; ++index) {
    PhaseInfo phase;
    phase.index = index;
    phase.name = "p" + std::to_string(index);
    if (index > 0) {
      phase.claimed_min = 1.1;
      phase.claimed_max = 1.2;
    }
    entry.phases.push_back(phase);
  }
  entry.cumulative_claim.index = claim_last_phase;
  entry.cumulative_claim.claimed_min = 8;
  entry.cumulative_claim.claimed_max = 12;
  return testing::catalog_of(entry);
}

std::string claims_view_of(const std::vector<ResultRow>& rows, const catalog::Catalog& catalog) {
  std::ostringstream out;
  print_claims_view(out, rows, catalog);
  return out.str();
}

TEST(ClaimsView, TheWholeLadderClaimCoversOnlyTheSeedsPhasesAndTheFastestExactPhaseIsNamed) {
  const std::vector<ResultRow> rows{rollout_row(0, "eager", true, 100, 1), rollout_row(2, "mixed_precision", false, 40, 2.5),
                                    rollout_row(5, "profile_guided", false, 10, 10),
                                    rollout_row(6, "exact_fast", true, 20, 5)};
  const std::string view = claims_view_of(rows, catalog_for(rows[0], 5));
  EXPECT_NE(view.find("whole ladder (phase 0 -> 5)"), std::string::npos) << view;
  EXPECT_NE(view.find("claimed 8.00-12.00x"), std::string::npos) << view;
  EXPECT_NE(view.find("2 mixed_precision (approx)"), std::string::npos) << view;
  EXPECT_EQ(view.find("6 exact_fast (approx)"), std::string::npos) << view;
  EXPECT_NE(view.find("fastest exact phase: 6 exact_fast, 5 [4.5,5.5]"), std::string::npos) << view;
}

TEST(ClaimsView, ALadderOfExactPhasesNamesNoSeparateExactPhase) {
  const std::vector<ResultRow> rows{rollout_row(0, "baseline", true, 100, 1), rollout_row(6, "inplace", true, 20, 5)};
  const std::string view = claims_view_of(rows, catalog_for(rows[0], 0));
  EXPECT_NE(view.find("whole ladder (phase 0 -> 6)"), std::string::npos) << view;
  EXPECT_EQ(view.find("fastest exact phase"), std::string::npos) << view;
}

// `run --filter '.../(last_step_act|temporal_blocking)'` times phases 9 and 11 only: their
// speedup "vs phase 0" is over phase 9, which is no whole ladder, so no claim is held against it.
TEST(ClaimsView, ALadderWithoutItsPhaseZeroGetsNoWholeLadderLine) {
  const std::vector<ResultRow> rows{rollout_row(9, "last_step_act", true, 10, 1), rollout_row(11, "temporal_blocking", true, 9, 1.1)};
  const std::string view = claims_view_of(rows, catalog_for(rows[0], 0));
  EXPECT_EQ(view.find("whole ladder ("), std::string::npos) << view;
  EXPECT_EQ(view.find("claimed 8.00-12.00x"), std::string::npos) << view;
  EXPECT_NE(view.find("no whole-ladder comparison: phase 0 was not timed"), std::string::npos) << view;

  std::vector<ResultRow> failed_phase0 = rows;  // phase 0 there but not timed: the same
  failed_phase0.insert(failed_phase0.begin(), rollout_row(0, "baseline", true, 100, 1));
  failed_phase0.front().status = Status::Fail;
  EXPECT_EQ(claims_view_of(failed_phase0, catalog_for(rows[0], 0)).find("whole ladder ("), std::string::npos);
}

TEST(ClaimsView, ClaimsComeFromTheCatalogAndAreUnknownWithoutOne) {
  std::vector<ResultRow> rows{rollout_row(0, "baseline", true, 100, 1), rollout_row(1, "p1", true, 80, 1.25)};
  rows[1].claimed_min = 5;  // a stale column is not what the view shows: the catalog is
  rows[1].claimed_max = 6;
  catalog::Catalog catalog = catalog_for(rows[0], 0);
  const std::string view = claims_view_of(rows, catalog);
  EXPECT_NE(view.find("1.10-1.20x"), std::string::npos) << view;
  EXPECT_EQ(view.find("5.00-6.00x"), std::string::npos) << view;

  const std::string unknown = claims_view_of(rows, catalog::Catalog{});
  EXPECT_NE(unknown.find("claimed unknown (" + std::string(catalog::kNoCatalogNote) + ")"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace pb
