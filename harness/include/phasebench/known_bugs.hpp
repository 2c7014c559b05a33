#pragma once
// Known bugs reproduced on purpose. A workload may keep a phase of its catalog that is no
// optimization but a real bug of the original code, so that the equivalence check is seen
// catching it. Its suite declares it here, next to the catalog:
//
//   const pb::KnownBugRegistration legacy{"energy_flow/aggregate", "legacy_xy_grouping", "groups keyed by ..."};
//
// and the harness then judges that phase the other way round (check.hpp, judge_known_bug): a
// check that disagrees is CAUGHT (the check did its job: exit 0), one that agrees is a FAIL (the
// check has lost its teeth: exit 1). Such a phase is never timed (a CAUGHT row has no time, so no
// speedup), runs the baseline with the bug (its plan holds only its own name), and no other
// phase's plan includes it.

#include <string>
#include <string_view>

#include "phasebench/phases.hpp"
#include "phasebench/workload.hpp"

namespace pb {

/// Declares the bug for as long as it lives (a suite's is static; a test's may be scoped).
class KnownBugRegistration {
 public:
  KnownBugRegistration(std::string workload, std::string phase, std::string description);
  ~KnownBugRegistration();
  KnownBugRegistration(const KnownBugRegistration&) = delete;
  KnownBugRegistration& operator=(const KnownBugRegistration&) = delete;

 private:
  std::string workload_, phase_;
};

/// The description of the known bug phase `phase` of `workload` (full name) reproduces; empty
/// when it reproduces none.
std::string known_bug(std::string_view workload, std::string_view phase);

/// `derived` (derive_phase_plan's plan of `phase`) with the known bugs put in their place: a
/// known-bug phase's plan is that phase alone; every other phase's plan leaves them out.
PhasePlan without_known_bugs(const Workload& workload, int phase, const PhasePlan& derived);

}  // namespace pb
