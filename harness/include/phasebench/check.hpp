#pragma once
// The correctness check of one variant's outputs against the fp64 oracle.
//
// Order matters and is part of the contract: a reference that is mostly zero makes the check
// worthless (MISTRUSTED); then missing outputs and wrong shapes; then NaN/Inf; only then the
// error metrics, relative L2 ||out - ref|| / ||ref|| and max |out - ref|, against the tolerance
// each output declares.

#include <string>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/status.hpp"
#include "phasebench/workload.hpp"

namespace pb {

/// More than this share of exactly-zero reference values and the inputs do not exercise the code.
constexpr double kMistrustZeroShare = 0.30;

struct OutputError {
  std::string name;
  double rel_l2_err = 0;
  double max_abs_err = 0;
  size_t max_abs_index = 0;          // where max_abs_err is: the flat (row-major) element index
  double tolerance = 0;
  bool within_tolerance = false;
  std::string reference;             // the reference array compared with
  std::vector<double> step_errors;   // per step of the leading axis, when the spec asks for it
  std::vector<double> step_budget;   // the spec's per-step budget (empty: none)
  int first_step_over_budget = -1;   // -1 when every step is within its budget
};

struct CheckResult {
  Status status = Status::Ok;
  std::string reason;                // empty when OK
  std::vector<OutputError> outputs;  // one per declared output that got as far as the metrics
  // The output whose error is largest relative to its tolerance (what results.csv reports).
  OutputError worst;
};

CheckResult check_outputs(const ArrayMap& produced, const ArrayMap& reference,
                          const std::vector<OutputSpec>& specs);

/// The verdict on a variant that reproduces `known_bug` on purpose (a KnownBugRegistration,
/// known_bugs.hpp): a FAIL becomes CAUGHT (the check did its job; the reason names the bug and by
/// how much it is off), an OK becomes a FAIL (the check has lost its teeth). Other statuses stay as
/// they are.
CheckResult judge_known_bug(CheckResult check, const std::string& known_bug);

/// Relative L2 error; with an all-zero reference it falls back to the absolute L2 norm.
double relative_l2_error(const std::vector<double>& produced, const std::vector<double>& reference);

/// Relative L2 error of each slice along the leading axis (each step of a trajectory).
std::vector<double> step_errors(const HostArray& produced, const HostArray& reference);

}  // namespace pb
