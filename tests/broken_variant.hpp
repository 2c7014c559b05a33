#pragma once
// A deliberately broken variant, checked end to end as `run` checks a registered one (prepare,
// poison, run, compare with the fp64 oracle), on the reference backend's CPU: how a test shows
// that the checks catch a wrong line. Shared by every test file that breaks a variant.

#include <deque>
#include <string>

#include "engine/case_runner.hpp"
#include "phasebench/runner.hpp"

namespace pb::testing {

inline detail::LiveCase check_broken_variant(const std::string& workload, const VariantFactory& make,
                                             SizeClass size, uint64_t seed) {
  static std::deque<VariantLadder> ladders;  // cases point at their ladder: a deque never moves them
  ladders.push_back({workload, kReferenceBackend, {kSerialRung}, make, __FILE__});
  Case c;
  c.workload = find_workload(workload);
  c.backend = find_backend("reference");
  c.ladder = &ladders.back();
  c.device = "cpu";
  c.phase_name = "broken";
  c.size = size;
  const detail::Problem problem = detail::make_problem(*c.workload, c.size, seed);
  detail::LiveCase live(c);
  detail::prepare(live, problem, 1);
  detail::check(live, problem);
  return live;
}

}  // namespace pb::testing
