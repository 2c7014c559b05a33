// Registry-driven: every registered variant of every backend is verified against the fp64 oracle
// at the small size on fresh seeds, so a new variant or backend is tested without editing a test.
// And the checker is shown catching broken variants end to end.

#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "broken_variant.hpp"
#include "engine/case_runner.hpp"
#include "phasebench/runner.hpp"
#include "reference/trainer2/lior_step.hpp"
#include "suites/trainer2/lior_step_outputs.hpp"

namespace pb {
namespace {

TEST(Equivalence, EveryRegisteredVariantMatchesTheReference) {
  VerifyOptions options;
  options.sizes = {SizeClass::Small};
  options.seeds = 2;
  options.first_seed = 101;
  options.threads = 2;
  const std::vector<VerifyLine> lines = execute_verify(options);
  std::set<std::string> ladders_seen;
  for (const VerifyLine& line : lines) {
    EXPECT_FALSE(is_failure(line.status)) << line.status << " " << line.row_name << " seed " << line.seed
                                          << ": " << line.detail;
    if (line.status == Status::Skipped || line.status == Status::Unsupported)
      EXPECT_FALSE(line.detail.empty()) << line.row_name << " cannot run but gives no reason";
    ladders_seen.insert(line.row_name);
  }
  // Every ladder of every backend was covered, on every phase and device.
  size_t expected = 0;
  for (const Case& c : plan_cases({}, SizeClass::Small)) {
    ++expected;
    EXPECT_TRUE(ladders_seen.count(c.row_name())) << c.row_name() << " was not verified";
  }
  EXPECT_EQ(ladders_seen.size(), expected);
  EXPECT_GT(expected, 0u);
}

// ---- deliberately broken variants ------------------------------------------------------------

namespace ref = reference::trainer2;

// reference<float> with one thing wrong, selected by `Bug`.
enum class Bug { None, WrongCoordinateWeight, SkipsDlior, Throws };

class BrokenLiorStep final : public Variant {
 public:
  explicit BrokenLiorStep(Bug bug) : bug_(bug) {}
  void setup(const ArrayMap& inputs) override {
    v_ = require(inputs, "v").to_floats();
    R_ = require(inputs, "R").to_floats();
    g_ = require(inputs, "g").to_floats();
    rows_ = static_cast<int64_t>(R_.size());
  }
  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    s_.assign(rows_, nan);
    dlior_.assign(rows_, nan);
  }
  void run() override {
    if (bug_ == Bug::Throws) throw std::runtime_error("device lost");
    std::vector<float> g = g_;
    if (bug_ == Bug::WrongCoordinateWeight) g[3] = g[2];  // the one wrong line
    means_ = ref::lior_step<float>(v_.data(), R_.data(), g.data(), rows_, ref::kCoordinateDim,
                                   s_.data(), bug_ == Bug::SkipsDlior ? scratch(rows_) : dlior_.data());
  }
  ArrayMap outputs() override {
    return suites::trainer2::lior_step_outputs(rows_, s_.data(), dlior_.data(), means_);
  }

 private:
  float* scratch(int64_t n) {
    scratch_.assign(n, 0.f);
    return scratch_.data();
  }
  Bug bug_;
  std::vector<float> v_, R_, g_, s_, dlior_, scratch_;
  int64_t rows_ = 0;
  ref::LiorStepMeans<float> means_;
};

detail::LiveCase checked(Bug bug) {
  return testing::check_broken_variant(
      "trainer2/lior_step", [bug](const VariantContext&) { return std::make_unique<BrokenLiorStep>(bug); },
      SizeClass::Default, 3);
}

TEST(Equivalence, TheHarnessAcceptsTheUnbrokenControl) {
  EXPECT_EQ(checked(Bug::None).status, Status::Ok);
}

TEST(Equivalence, OneWrongLineIsCaught) {
  const detail::LiveCase live = checked(Bug::WrongCoordinateWeight);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("rel_l2_err"), std::string::npos) << live.reason;
}

TEST(Equivalence, AnUnwrittenOutputIsCaughtByThePoison) {
  const detail::LiveCase live = checked(Bug::SkipsDlior);
  EXPECT_EQ(live.status, Status::Fail);
  EXPECT_NE(live.reason.find("dlior"), std::string::npos) << live.reason;
  EXPECT_NE(live.reason.find("NaN"), std::string::npos) << live.reason;
}

TEST(Equivalence, AThrowingVariantIsAnErrorNotACrash) {
  const detail::LiveCase live = checked(Bug::Throws);
  EXPECT_EQ(live.status, Status::Error);
  EXPECT_NE(live.reason.find("device lost"), std::string::npos) << live.reason;
}

}  // namespace
}  // namespace pb
