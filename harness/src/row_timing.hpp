#pragma once
// The timing columns of a results row, from its repetition samples: what `run` writes and what
// `merge --pool` recomputes from pooled samples, so both derive them one way.

#include <vector>

#include "phasebench/results.hpp"

namespace pb {

/// reps, median_ms, min_ms, max_ms and the 95% interval of the median.
void set_time_columns(ResultRow& row, const std::vector<double>& samples);

/// One speedup column (base time / this row's time) and its interval, resampled from both sets.
void set_speedup(double& value, double& low, double& high, const std::vector<double>& base,
                 const std::vector<double>& samples);

}  // namespace pb
