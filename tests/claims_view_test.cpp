// The claims view printed at the end of a run: the whole-ladder claim is held against the phases
// it covers, approximate phases are marked, and the fastest exact phase is named beside them.

#include <gtest/gtest.h>

#include <sstream>

#include "claims_view.hpp"
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
  row.status = "OK";
  row.median_ms = median_ms;
  row.speedup_vs_phase0 = vs_phase0;
  row.speedup_vs_phase0_ci_low = vs_phase0 * 0.9;
  row.speedup_vs_phase0_ci_high = vs_phase0 * 1.1;
  row.host_syncs_per_iter = 0;
  return row;
}

std::string claims_view_of(const std::vector<ResultRow>& rows) {
  std::ostringstream out;
  print_claims_view(out, rows);
  return out.str();
}

TEST(ClaimsView, TheWholeLadderClaimCoversOnlyTheSeedsPhasesAndTheFastestExactPhaseIsNamed) {
  const std::string view = claims_view_of({rollout_row(0, "eager", true, 100, 1),
                                           rollout_row(2, "mixed_precision", false, 40, 2.5),
                                           rollout_row(5, "profile_guided", false, 10, 10),
                                           rollout_row(6, "exact_fast", true, 20, 5)});
  EXPECT_NE(view.find("whole ladder (phase 0 -> 5)"), std::string::npos) << view;
  EXPECT_NE(view.find("claimed 8.00-12.00x"), std::string::npos) << view;
  EXPECT_NE(view.find("2 mixed_precision (approx)"), std::string::npos) << view;
  EXPECT_EQ(view.find("6 exact_fast (approx)"), std::string::npos) << view;
  EXPECT_NE(view.find("fastest exact phase: 6 exact_fast, 5 [4.5,5.5]"), std::string::npos) << view;
}

TEST(ClaimsView, ALadderOfExactPhasesNamesNoSeparateExactPhase) {
  ResultRow first = rollout_row(0, "baseline", true, 100, 1), last = rollout_row(6, "inplace", true, 20, 5);
  for (ResultRow* row : {&first, &last}) {  // trainer2's claim covers its whole ladder
    row->suite = "trainer2";
    row->workload = "window";
  }
  const std::string view = claims_view_of({first, last});
  EXPECT_NE(view.find("whole ladder (phase 0 -> 6)"), std::string::npos) << view;
  EXPECT_EQ(view.find("fastest exact phase"), std::string::npos) << view;
}

}  // namespace
}  // namespace pb
