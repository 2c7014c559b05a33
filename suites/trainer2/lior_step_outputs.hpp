#pragma once
// The outputs of trainer2/lior_step as the harness expects them, packed from fp32 host data:
// s and dlior ([M] each) and the three means the host read (scalars).

#include "phasebench/arrays.hpp"
#include "reference/trainer2/lior_step.hpp"

namespace pb::suites::trainer2 {

inline ArrayMap lior_step_outputs(int64_t rows, const float* s, const float* dlior,
                                  const reference::trainer2::LiorStepMeans<float>& means) {
  return {{"s", HostArray::from_floats({rows}, s, rows)},
          {"dlior", HostArray::from_floats({rows}, dlior, rows)},
          {"mean_dlior", HostArray::scalar(means.mean_dlior)},
          {"mean_R", HostArray::scalar(means.mean_R)},
          {"mean_s", HostArray::scalar(means.mean_s)}};
}

}  // namespace pb::suites::trainer2
