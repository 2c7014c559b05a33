// The correctness checker: each way a variant can be wrong must be caught, in the documented order.

#include <gtest/gtest.h>

#include <limits>

#include "phasebench/check.hpp"

namespace pb {
namespace {

const std::vector<OutputSpec> kSpecs{{"y", 1e-5, "test"}};

ArrayMap with_y(std::vector<double> values) {
  HostArray y = HostArray::zeros({static_cast<int64_t>(values.size())});
  y.values = std::move(values);
  return {{"y", y}};
}

TEST(Check, CorrectOutputPasses) {
  const CheckResult result = check_outputs(with_y({1, 2, 3.0000001}), with_y({1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Ok) << result.reason;
  EXPECT_GT(result.worst.rel_l2_err, 0);
  EXPECT_LT(result.worst.rel_l2_err, 1e-7);
  EXPECT_NEAR(result.worst.max_abs_err, 1e-7, 1e-12);
}

TEST(Check, WrongOutputFailsNamingTheOutput) {
  const CheckResult result = check_outputs(with_y({1, 2, 3.1}), with_y({1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_NE(result.reason.find("output y"), std::string::npos) << result.reason;
  EXPECT_NEAR(result.worst.max_abs_err, 0.1, 1e-12);
  EXPECT_EQ(result.worst.max_abs_index, 2u);  // where it is: `check` names the element
}

TEST(Check, NaNFailsBeforeTheErrorMetric) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const CheckResult result = check_outputs(with_y({1, nan, 3}), with_y({1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_NE(result.reason.find("1 NaN"), std::string::npos) << result.reason;
  EXPECT_NE(result.reason.find("index 1"), std::string::npos) << result.reason;
}

TEST(Check, InfFails) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(check_outputs(with_y({1, 2, inf}), with_y({1, 2, 3}), kSpecs).status, Status::Fail);
}

TEST(Check, MissingOutputFails) {
  const CheckResult result = check_outputs({}, with_y({1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_NE(result.reason.find("missing"), std::string::npos);
}

TEST(Check, WrongShapeFails) {
  const CheckResult result = check_outputs(with_y({1, 2}), with_y({1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_NE(result.reason.find("shape"), std::string::npos);
}

TEST(Check, MostlyZeroReferenceIsMistrusted) {
  // 2 of 5 exact zeros (40% > 30%): even a perfect answer proves little.
  const CheckResult result = check_outputs(with_y({0, 0, 1, 2, 3}), with_y({0, 0, 1, 2, 3}), kSpecs);
  EXPECT_EQ(result.status, Status::Mistrusted);
  EXPECT_NE(result.reason.find("zeros"), std::string::npos);
}

TEST(Check, AFewZerosAreTrusted) {
  // 1 of 4 (25%) is within the 30% rule.
  EXPECT_EQ(check_outputs(with_y({0, 1, 2, 3}), with_y({0, 1, 2, 3}), kSpecs).status, Status::Ok);
}

TEST(Check, WorstOutputIsTheOneFarthestPastItsTolerance) {
  const std::vector<OutputSpec> specs{{"a", 1e-2, "loose"}, {"b", 1e-6, "tight"}};
  ArrayMap produced{{"a", with_y({1.001}).at("y")}, {"b", with_y({1.00001}).at("y")}};
  ArrayMap reference{{"a", with_y({1}).at("y")}, {"b", with_y({1}).at("y")}};
  const CheckResult result = check_outputs(produced, reference, specs);
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_EQ(result.worst.name, "b");
  EXPECT_EQ(result.worst.tolerance, 1e-6);
}

TEST(Check, RelativeL2ErrorOfKnownVectors) {
  // ||(3,4) - (0,0)|| / ||(3,4)|| = 1;  ||(1,1) - (1,0)|| / ||(1,0)|| = 1.
  EXPECT_DOUBLE_EQ(relative_l2_error({0, 0}, {3, 4}), 1.0);
  EXPECT_DOUBLE_EQ(relative_l2_error({1, 1}, {1, 0}), 1.0);
  EXPECT_DOUBLE_EQ(relative_l2_error({3, 4}, {0, 0}), 5.0);  // zero reference: absolute norm
}

// A rollout [steps, 2]: the per-step errors are measured slice by slice, and each step is held to
// its own budget (errors grow with t).
HostArray rollout_array(std::vector<double> values) {
  HostArray array = HostArray::zeros({static_cast<int64_t>(values.size() / 2), 2});
  array.values = std::move(values);
  return array;
}

OutputSpec budgeted_spec(std::vector<double> budget) {
  OutputSpec spec{"x", 1.0, "test"};
  spec.per_step = true;
  spec.step_budget = std::move(budget);
  return spec;
}

TEST(CheckSteps, ErrorsAreMeasuredStepByStep) {
  const ArrayMap reference{{"x", rollout_array({1, 1, 3, 4, 3, 4})}};
  const ArrayMap produced{{"x", rollout_array({1, 1, 3.3, 4.4, 3, 4.5})}};
  const CheckResult result = check_outputs(produced, reference, {budgeted_spec({1e-9, 0.2, 0.2})});
  ASSERT_EQ(result.outputs.size(), 1u);
  const std::vector<double>& steps = result.outputs[0].step_errors;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_DOUBLE_EQ(steps[0], 0);
  EXPECT_NEAR(steps[1], 0.1, 1e-12);
  EXPECT_NEAR(steps[2], 0.1, 1e-12);
  EXPECT_EQ(result.status, Status::Ok) << result.reason;
}

TEST(CheckSteps, AStepOverItsBudgetFailsNamingTheStep) {
  const ArrayMap reference{{"x", rollout_array({1, 1, 3, 4, 3, 4})}};
  const ArrayMap produced{{"x", rollout_array({1, 1, 3.3, 4.4, 3, 4.5})}};
  // Whole-output error 0.097 is within the tolerance of 1; step 1 (0.1) is not within 0.05.
  const CheckResult result = check_outputs(produced, reference, {budgeted_spec({1e-9, 0.05, 0.2})});
  EXPECT_EQ(result.status, Status::Fail);
  EXPECT_NE(result.reason.find("step 1"), std::string::npos) << result.reason;
  EXPECT_EQ(result.outputs[0].first_step_over_budget, 1);
}

TEST(CheckSteps, ASpecCanCompareWithAnotherReferenceArray) {
  const ArrayMap reference{{"x", rollout_array({1, 1, 2, 2})}, {"x.model", rollout_array({1, 1, 3, 3})}};
  const ArrayMap produced{{"x", rollout_array({1, 1, 3, 3})}};
  OutputSpec against_model = budgeted_spec({1e-9, 1e-9});
  against_model.reference = "x.model";
  EXPECT_EQ(check_outputs(produced, reference, {against_model}).status, Status::Ok);
  const CheckResult exact = check_outputs(produced, reference, {budgeted_spec({1e-9, 1e-9})});
  EXPECT_EQ(exact.status, Status::Fail);
  EXPECT_NEAR(exact.outputs[0].step_errors[1], 0.5, 1e-12);
}

}  // namespace
}  // namespace pb
