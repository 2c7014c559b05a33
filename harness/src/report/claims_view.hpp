#pragma once
// The claims view printed at the end of `run`: per workload, backend and device, every phase's
// claimed gain (the seed document's, from the run's catalog) beside the measured gain with its
// interval, the cumulative speedup beside the seed's whole-ladder claim, and host syncs per
// iteration.

#include <ostream>
#include <vector>

#include "results/catalog.hpp"
#include "phasebench/results.hpp"

namespace pb {

/// The whole-ladder line needs the ladder's phase 0 timed: without it (filtered out, or not OK)
/// no speedup in the run spans the ladder, and none is held against the claim.
void print_claims_view(std::ostream& out, const std::vector<ResultRow>& rows, const catalog::Catalog& catalog);

}  // namespace pb
