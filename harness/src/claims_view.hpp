#pragma once
// The claims view printed at the end of `run`: per workload, backend and device, every phase's
// claimed gain (from the seed document) beside the measured gain with its interval, the
// cumulative speedup beside the seed's whole-ladder claim, and host syncs per iteration.

#include <ostream>
#include <vector>

#include "phasebench/results.hpp"

namespace pb {

void print_claims_view(std::ostream& out, const std::vector<ResultRow>& rows);

}  // namespace pb
