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

}  // namespace
}  // namespace pb
