#include "phasebench/check.hpp"

#include <cmath>
#include <sstream>

namespace pb {

namespace {

// ||produced - reference|| / ||reference|| over `count` values; the absolute norm when the
// reference is all zeros.
double range_relative_l2_error(const double* produced, const double* reference, size_t count) {
  double diff_sq = 0, ref_sq = 0;
  for (size_t i = 0; i < count; ++i) {
    const double diff = produced[i] - reference[i];
    diff_sq += diff * diff;
    ref_sq += reference[i] * reference[i];
  }
  return ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
}

}  // namespace

double relative_l2_error(const std::vector<double>& produced, const std::vector<double>& reference) {
  return range_relative_l2_error(produced.data(), reference.data(), reference.size());
}

std::vector<double> step_errors(const HostArray& produced, const HostArray& reference) {
  std::vector<double> errors;
  if (reference.shape.empty() || reference.shape[0] <= 0) return errors;
  const size_t steps = static_cast<size_t>(reference.shape[0]);
  const size_t per_step = reference.values.size() / steps;
  for (size_t t = 0; t < steps; ++t)
    errors.push_back(range_relative_l2_error(produced.values.data() + t * per_step,
                                             reference.values.data() + t * per_step, per_step));
  return errors;
}

namespace {

CheckResult failure(Status status, std::string reason) {
  CheckResult result;
  result.status = status;
  result.reason = std::move(reason);
  return result;
}

double zero_share(const HostArray& array) {
  if (array.values.empty()) return 0;
  size_t zeros = 0;
  for (double value : array.values) zeros += value == 0.0;
  return static_cast<double>(zeros) / static_cast<double>(array.values.size());
}

// "3 NaN, 0 Inf, first at index 17", or empty when every value is finite.
std::string describe_non_finite(const HostArray& array) {
  size_t nans = 0, infs = 0, first = array.values.size();
  for (size_t i = 0; i < array.values.size(); ++i) {
    const double value = array.values[i];
    if (std::isfinite(value)) continue;
    (std::isnan(value) ? nans : infs) += 1;
    if (first == array.values.size()) first = i;
  }
  if (nans + infs == 0) return {};
  std::ostringstream text;
  text << nans << " NaN and " << infs << " Inf of " << array.values.size() << " (first at index "
       << first << ")";
  return text.str();
}

OutputError measure(const OutputSpec& spec, const HostArray& produced, const HostArray& reference) {
  OutputError error;
  error.name = spec.name;
  error.tolerance = spec.tolerance;
  error.rel_l2_err = relative_l2_error(produced.values, reference.values);
  for (size_t i = 0; i < reference.values.size(); ++i) {
    const double abs_err = std::abs(produced.values[i] - reference.values[i]);
    if (abs_err > error.max_abs_err) {
      error.max_abs_err = abs_err;
      error.max_abs_index = i;
    }
  }
  error.within_tolerance = error.rel_l2_err <= spec.tolerance;
  error.reference = spec.reference_name();
  if (spec.per_step || !spec.step_budget.empty()) error.step_errors = step_errors(produced, reference);
  error.step_budget = spec.step_budget;
  for (size_t t = 0; t < error.step_budget.size() && t < error.step_errors.size(); ++t)
    if (!(error.step_errors[t] <= error.step_budget[t])) {
      error.first_step_over_budget = static_cast<int>(t);
      error.within_tolerance = false;
      break;
    }
  return error;
}

// How close an output came to failing: 1 is at its tolerance (or at a step's budget).
double share_of_tolerance(const OutputError& error) {
  double share = error.rel_l2_err / error.tolerance;
  for (size_t t = 0; t < error.step_budget.size() && t < error.step_errors.size(); ++t)
    share = std::max(share, error.step_errors[t] / error.step_budget[t]);
  return share;
}

std::string format_error(const OutputError& error) {
  std::ostringstream text;
  text.precision(3);
  const std::string against = error.reference == error.name ? "" : " against " + error.reference;
  if (error.first_step_over_budget >= 0) {
    const auto t = static_cast<size_t>(error.first_step_over_budget);
    text << "output " << error.name << against << ": step " << t << " rel_l2_err "
         << error.step_errors[t] << " > budget " << error.step_budget[t];
    return text.str();
  }
  text << "output " << error.name << against << ": rel_l2_err " << error.rel_l2_err << " > tolerance "
       << error.tolerance << " (max_abs_err " << error.max_abs_err << ")";
  return text.str();
}

}  // namespace

CheckResult check_outputs(const ArrayMap& produced, const ArrayMap& reference,
                          const std::vector<OutputSpec>& specs) {
  for (const OutputSpec& spec : specs) {
    const HostArray& expected = require(reference, spec.reference_name());
    if (zero_share(expected) > kMistrustZeroShare) {
      std::ostringstream text;
      text << "reference output " << spec.name << " is " << 100 * zero_share(expected)
           << "% exact zeros (> 30%): these inputs do not exercise the code";
      return failure(Status::Mistrusted, text.str());
    }
  }
  for (const OutputSpec& spec : specs) {
    const auto found = produced.find(spec.name);
    if (found == produced.end()) return failure(Status::Fail, "output " + spec.name + " missing");
    const HostArray& expected = require(reference, spec.reference_name());
    if (found->second.shape != expected.shape || found->second.values.size() != expected.values.size())
      return failure(Status::Fail, "output " + spec.name + " has shape " +
                                       found->second.shape_string() + ", expected " +
                                       expected.shape_string());
    const std::string non_finite = describe_non_finite(found->second);
    if (!non_finite.empty())
      return failure(Status::Fail, "output " + spec.name + " has " + non_finite +
                                       " (unwritten outputs stay NaN)");
  }
  CheckResult result;
  double worst_ratio = -1;
  for (const OutputSpec& spec : specs) {
    const OutputError error = measure(spec, produced.at(spec.name), require(reference, spec.reference_name()));
    result.outputs.push_back(error);
    const double ratio = share_of_tolerance(error);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      result.worst = error;
    }
    if (!error.within_tolerance && result.status == Status::Ok) {
      result.status = Status::Fail;
      result.reason = format_error(error);
    }
  }
  return result;
}

}  // namespace pb

namespace pb {

CheckResult judge_known_bug(CheckResult check, const std::string& known_bug) {
  // Only a disagreement the metrics measured is the bug showing: a missing output, a wrong shape
  // or a NaN (check.outputs empty) is a plain FAIL of the variant itself.
  const bool measured = !check.outputs.empty();
  if (check.status == Status::Fail && measured) {
    check.status = Status::Caught;
    check.reason = "caught the known bug " + known_bug + ": " + check.reason;
  } else if (check.status == Status::Ok) {
    std::ostringstream text;
    text.precision(3);
    text << "the check has lost its teeth: this variant reproduces the known bug " << known_bug
         << " on purpose, yet agrees with the reference (output " << check.worst.name << " rel_l2_err "
         << check.worst.rel_l2_err << " <= tolerance " << check.worst.tolerance << ")";
    check.status = Status::Fail;
    check.reason = text.str();
  }
  return check;
}

}  // namespace pb
