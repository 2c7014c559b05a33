// What is timed must be what was checked: a variant whose later runs differ from its first (state
// kept between runs) passes the check of its first run, and is caught by the checks of later runs,
// in-process and through `verify` and `run` end to end.

#include <gtest/gtest.h>

#include <cmath>
#include <deque>

#include "engine/case_runner.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;

constexpr const char* kWorkload = "trainer2/lior_step";

// The serial reference's variant, computing into an accumulator that setup() zeroes and run()
// adds to: right on the first run after setup, twice the answer on the second.
class AccumulatingVariant : public Variant {
 public:
  explicit AccumulatingVariant(std::unique_ptr<Variant> inner) : inner_(std::move(inner)) {}
  void setup(const ArrayMap& inputs) override {
    inner_->setup(inputs);
    sums_.clear();
  }
  void poison_outputs() override { inner_->poison_outputs(); }
  void run() override {
    inner_->run();
    for (const auto& [name, array] : inner_->outputs()) {
      auto [sum, fresh] = sums_.try_emplace(name, array);
      if (fresh) continue;
      for (size_t i = 0; i < array.values.size(); ++i) sum->second.values[i] += array.values[i];
    }
  }
  ArrayMap outputs() override { return sums_; }

 private:
  std::unique_ptr<Variant> inner_;
  ArrayMap sums_;
};

const VariantLadder& reference_ladder() {
  for (const VariantLadder& ladder : registered_ladders())
    if (ladder.workload == kWorkload && ladder.backend == kReferenceBackend) {
      static const VariantLadder found = ladder;
      return found;
    }
  throw std::logic_error("no reference ladder for the test's workload");
}

// A case of `make` on the reference backend's CPU, prepared and checked on its first run.
struct CheckedCase {
  explicit CheckedCase(const VariantFactory& make) : live(make_case(make)) {
    problem = detail::make_problem(*live.spec.workload, live.spec.size, 1);
    detail::prepare(live, problem, 1);
    detail::check(live, problem);
  }
  static Case make_case(const VariantFactory& make) {
    static std::deque<VariantLadder> ladders;  // a case points at its ladder: a deque never moves them
    ladders.push_back({kWorkload, kReferenceBackend, {kSerialRung}, make, __FILE__});
    Case c;
    c.workload = find_workload(kWorkload);
    c.backend = find_backend(kReferenceBackend);
    c.ladder = &ladders.back();
    c.device = "cpu";
    c.phase_name = kSerialRung;
    c.size = SizeClass::Small;
    return c;
  }
  detail::LiveCase live;
  detail::Problem problem;
};

TEST(LaterCheck, AnAccumulatorNeverResetPassesTheFirstCheckAndFailsTheNext) {
  CheckedCase accumulating([](const VariantContext& context) {
    return std::make_unique<AccumulatingVariant>(reference_ladder().make(context));
  });
  ASSERT_EQ(accumulating.live.status, Status::Ok) << "the first run is right: " << accumulating.live.reason;
  detail::check_later_run(accumulating.live, accumulating.problem, "run 2 of the same setup");
  EXPECT_EQ(accumulating.live.status, Status::Fail);
  EXPECT_NE(accumulating.live.reason.find("run 2 of the same setup disagrees with the oracle although the first "
                                          "run passed"),
            std::string::npos)
      << accumulating.live.reason;
  EXPECT_GT(accumulating.live.later_rel_l2_err, 0.5) << "twice the answer is 100% off";
  EXPECT_GT(accumulating.live.check.worst.rel_l2_err, accumulating.live.check.worst.tolerance);
}

TEST(LaterCheck, AVariantThatStartsAfreshEachRunPassesEveryLaterCheck) {
  CheckedCase fresh([](const VariantContext& context) { return reference_ladder().make(context); });
  ASSERT_EQ(fresh.live.status, Status::Ok) << fresh.live.reason;
  for (int run = 2; run <= 4; ++run) {
    detail::check_later_run(fresh.live, fresh.problem, "run " + std::to_string(run));
    EXPECT_EQ(fresh.live.status, Status::Ok) << fresh.live.reason;
  }
  EXPECT_LE(fresh.live.later_rel_l2_err, fresh.live.check.worst.tolerance);
}

TEST(LaterCheck, AFailedFirstCheckIsLeftAsItIs) {
  CheckedCase accumulating([](const VariantContext& context) {
    return std::make_unique<AccumulatingVariant>(reference_ladder().make(context));
  });
  accumulating.live.status = Status::Fail;
  accumulating.live.reason = "the first check's reason";
  detail::check_later_run(accumulating.live, accumulating.problem, "run 2");
  EXPECT_EQ(accumulating.live.reason, "the first check's reason");
  EXPECT_TRUE(std::isnan(accumulating.live.later_rel_l2_err)) << "no later run was made";
}

constexpr const char* kDriftingRow = "reference/cpu/0_serial_fp32";

// `verify` checks three runs of one setup: the drifting row fails on its second, the others pass.
TEST(LaterCheck, VerifyFailsARowWhoseSecondRunDrifts) {
  const auto result = run_phasebench(std::string("verify --size small --seeds 1 --filter ") + kWorkload,
                                     std::string("PHASEBENCH_INJECT_DRIFT=") + kDriftingRow);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("run 2 of the same setup disagrees with the oracle"), std::string::npos)
      << result.output;
  const auto clean = run_phasebench(std::string("verify --size small --seeds 1 --filter ") + kWorkload);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
}

// `run` checks what every timed case's last repetition left: the drifting row is a FAIL without
// a time (it timed other work than was checked), every other row keeps its time and the later
// check's error, within its tolerance.
TEST(LaterCheck, RunFailsARowThatDriftsDuringItsTimingAndKeepsTheOthers) {
  const fs::path out = fresh_temp_path("drift-run");
  const auto result =
      run_phasebench(std::string("run --quick --size small --filter ") + kWorkload + " --out " + out.string(),
                     std::string("PHASEBENCH_INJECT_DRIFT=") + kDriftingRow);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  bool drifted_row_seen = false;
  int others_ok = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    const std::string name = results::row_name(row);
    if (name.find(kDriftingRow) != std::string::npos) {
      drifted_row_seen = true;
      EXPECT_EQ(row.status, Status::Fail) << name;
      EXPECT_NE(row.reason.find("the last timed repetition disagrees with the oracle"), std::string::npos)
          << row.reason;
      EXPECT_TRUE(std::isnan(row.median_ms)) << "a drifting row's timing is dropped";
      EXPECT_GT(row.later_rel_l2_err, row.tolerance);
      EXPECT_LE(row.rel_l2_err, row.tolerance) << "its first run passed";
    } else if (row.status == Status::Ok) {
      ++others_ok;
      EXPECT_FALSE(std::isnan(row.median_ms)) << name;
      EXPECT_LE(row.later_rel_l2_err, row.tolerance) << name;
    }
  }
  EXPECT_TRUE(drifted_row_seen) << result.output;
  EXPECT_GT(others_ok, 0) << result.output;
  fs::remove_all(out);
}

// A variant whose runs after the first do no work leaves the first run's right outputs in place
// unless they are poisoned again before the timing: the check after it sees the poison.
TEST(LaterCheck, RunFailsARowWhoseLaterRunsStopWritingItsOutputs) {
  const fs::path out = fresh_temp_path("stale-run");
  const auto result =
      run_phasebench(std::string("run --quick --size small --filter ") + kWorkload + " --out " + out.string(),
                     std::string("PHASEBENCH_INJECT_STALE=") + kDriftingRow);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  bool stale_row_seen = false;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (results::row_name(row).find(kDriftingRow) == std::string::npos) continue;
    stale_row_seen = true;
    EXPECT_EQ(row.status, Status::Fail);
    EXPECT_NE(row.reason.find("the last timed repetition disagrees with the oracle"), std::string::npos) << row.reason;
    EXPECT_NE(row.reason.find("NaN"), std::string::npos) << "the poison is what it left: " << row.reason;
    EXPECT_LE(row.rel_l2_err, row.tolerance) << "its first run passed";
  }
  EXPECT_TRUE(stale_row_seen) << result.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb
