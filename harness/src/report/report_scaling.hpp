#pragma once
// The report's scaling section, for runs that sweep sizes: where each backend's best phase stands
// against the cache-aware roofline as its working set grows, and the growth fits and crossovers
// of scaling.csv. Internal to the harness.

#include <string>
#include <vector>

#include "report/report_model.hpp"

namespace pb::report {

/// The id of the scaling section.
constexpr const char* kScalingId = "scaling";

/// Per run and per workload timed at two sizes or more: a chart of each backend's best phase's
/// achieved GB/s against its working set (log axes), with the run's cache levels and the
/// bandwidth attainable at each working set (roofline::attainable_bandwidth) marked, and a
/// table of the growth fits, crossovers and thread scaling (results/scaling.hpp). Empty (no
/// section) when no run sweeps a workload's size.
std::string scaling_section(const std::vector<Run>& runs, const Colors& colors);

}  // namespace pb::report
