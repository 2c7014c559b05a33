// How `run` plans its timing: repetitions fitted to the time budget (cheap cases keep all they
// asked for, expensive ones give up repetitions first: below three only when three of each do not
// fit, as on a GPU node whose serial references take seconds), the interleaved
// schedule that a restarted worker continues, its rounds divided over workers (--processes), the limits that end a
// hang, and the run record that survives a killed worker.

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <set>

#include "process.hpp"
#include "engine/run_record.hpp"
#include "engine/timing.hpp"
#include "results/results_model.hpp"

namespace pb::detail {
namespace {
namespace fs = std::filesystem;

CaseTiming costing(double seconds_per_rep) {
  CaseTiming timing;
  timing.iterations_per_rep = 1;
  timing.iteration_ms = seconds_per_rep * 1e3;
  return timing;
}

double planned_seconds(const std::vector<CaseTiming>& timings) {
  double total = 0;
  for (const CaseTiming& timing : timings) total += timing.reps * repetition_seconds(timing);
  return total;
}

std::vector<CaseTiming*> all(std::vector<CaseTiming>& timings) {
  std::vector<CaseTiming*> pointers;
  for (CaseTiming& timing : timings) pointers.push_back(&timing);
  return pointers;
}

TEST(FitRepetitions, EveryCaseKeepsItsRepetitionsWhenTheyFit) {
  std::vector<CaseTiming> timings{costing(0.05), costing(0.5), costing(2)};
  TimingPlan plan;
  const double expected = fit_repetitions(all(timings), plan, 1000);
  for (const CaseTiming& timing : timings) EXPECT_EQ(timing.reps, 10);
  EXPECT_NEAR(expected, planned_seconds(timings), 1e-9);
}

TEST(FitRepetitions, TheExpensiveCasesGiveUpRepetitionsFirstAndNeverGoBelowThree) {
  std::vector<CaseTiming> timings{costing(0.05), costing(0.05), costing(5), costing(20)};
  TimingPlan plan;
  const double budget = 90;
  fit_repetitions(all(timings), plan, budget);
  EXPECT_EQ(timings[0].reps, 10);
  EXPECT_EQ(timings[1].reps, 10);
  EXPECT_EQ(timings[3].reps, 3);  // 60 s at the least
  EXPECT_EQ(timings[2].reps, 5);  // what is left: 90 - 60 - 1 s
  EXPECT_LE(planned_seconds(timings), budget);
  // As many as fit: one more repetition of the 5 s case would not.
  EXPECT_GT(planned_seconds(timings) + repetition_seconds(timings[2]), budget);
}

TEST(FitRepetitions, ABudgetTooSmallForThreeEachGivesTheSlowestCasesFewerButEveryCaseOne) {
  std::vector<CaseTiming> timings{costing(1), costing(10)};
  TimingPlan plan;
  EXPECT_EQ(repetition_floor(all(timings), plan, 0), 1);
  const double expected = fit_repetitions(all(timings), plan, 0);
  for (const CaseTiming& timing : timings) EXPECT_EQ(timing.reps, 1);
  // Over the budget, and the estimate says so: it is what one repetition of each costs.
  EXPECT_NEAR(expected, planned_seconds(timings), 1e-9);
  EXPECT_GT(expected, 0);
}

// A GPU node such as an H200: variants take milliseconds (a repetition is then the minimum
// length), the serial fp32 references seconds. Three repetitions of each do not fit the budget;
// with the floor at one they do, and the variants keep more than the references.
TEST(FitRepetitions, OnAGpuNodeTheSerialReferencesDropBelowThreeAndTheBudgetHolds) {
  std::vector<CaseTiming> timings(90, costing(0.052));
  for (int i = 0; i < 8; ++i) timings.push_back(costing(3));
  TimingPlan plan;
  const double budget = 60;
  std::vector<CaseTiming> three_each = timings;
  for (CaseTiming& timing : three_each) timing.reps = kMinimumReps;
  ASSERT_GT(planned_seconds(three_each), budget);
  EXPECT_EQ(repetition_floor(all(timings), plan, budget), 1);
  const double expected = fit_repetitions(all(timings), plan, budget);
  EXPECT_LE(expected, budget);
  EXPECT_NEAR(expected, planned_seconds(timings), 1e-9);
  for (int i = 0; i < 90; ++i) EXPECT_GE(timings[i].reps, kMinimumReps) << "variant " << i;
  for (size_t i = 90; i < timings.size(); ++i) EXPECT_EQ(timings[i].reps, 1) << "reference " << i;
}

TEST(FitRepetitions, TheFloorStaysAtThreeWhileThreeOfEachFit) {
  std::vector<CaseTiming> timings{costing(0.05), costing(5)};
  TimingPlan plan;
  const double three_each = 3 * (repetition_seconds(timings[0]) + repetition_seconds(timings[1]));  // 15.16 s
  EXPECT_EQ(repetition_floor(all(timings), plan, three_each + 0.01), kMinimumReps);
  EXPECT_EQ(repetition_floor(all(timings), plan, three_each - 0.01), 1);
}

TEST(FitRepetitions, RepetitionsGivenOnTheCommandLineAreKeptWhateverTheBudget) {
  std::vector<CaseTiming> timings{costing(0.05), costing(30)};
  TimingPlan plan;
  plan.reps = 2;
  plan.reps_fixed = true;
  fit_repetitions(all(timings), plan, 1);
  for (const CaseTiming& timing : timings) EXPECT_EQ(timing.reps, 2);
}

TEST(InterleavedSchedule, EachRepetitionOnceRoundByRoundFromWhereTheRecordStops) {
  std::vector<CaseTiming> timings{costing(0.1), costing(0.1), costing(0.1)};
  timings[0].reps = 5;
  timings[1].reps = 3;
  timings[2].reps = 0;  // not timed
  const std::vector<int> done{2, 0, 0};
  const std::vector<Repetition> schedule = interleaved_schedule(done, timings, 7);
  std::set<std::pair<size_t, int>> seen;
  int last_round = -1;
  for (const Repetition& repetition : schedule) {
    EXPECT_TRUE(seen.insert({repetition.case_index, repetition.rep}).second) << "twice";
    EXPECT_GE(repetition.rep, last_round) << "rounds in order";
    last_round = repetition.rep;
  }
  std::set<std::pair<size_t, int>> expected{{0, 2}, {0, 3}, {0, 4}, {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(schedule.size(), interleaved_schedule(done, timings, 7).size());
}

// --processes: each worker times the rounds up to the next boundary that divides them evenly, and
// one that took over after a crash goes on to the same boundary.
TEST(ProcessShare, TheRoundsAreDividedEvenlyOverTheWorkersInTurn) {
  std::vector<CaseTiming> timings{costing(0.1), costing(0.1), costing(0.1)};
  timings[0].reps = 10;
  timings[1].reps = 6;  // fewer, fitted to the budget: done before the last round
  timings[2].reps = 0;  // not timed
  EXPECT_EQ(end_of_this_process_rounds({0, 0, 0}, timings, 1), 10) << "one process times every round";
  EXPECT_EQ(end_of_this_process_rounds({0, 0, 0}, timings, 3), 4);
  EXPECT_EQ(end_of_this_process_rounds({4, 4, 0}, timings, 3), 7);
  EXPECT_EQ(end_of_this_process_rounds({7, 6, 0}, timings, 3), 10);
  EXPECT_EQ(end_of_this_process_rounds({5, 4, 0}, timings, 3), 7) << "a crash in round 5: the next goes on to 7";
  EXPECT_EQ(end_of_this_process_rounds({10, 6, 0}, timings, 3), 10) << "nothing left";
  EXPECT_EQ(end_of_this_process_rounds({0, 0, 0}, timings, 10), 1);
  EXPECT_EQ(end_of_this_process_rounds({9, 6, 0}, timings, 10), 10);
  timings[0].reps = timings[1].reps = 2;
  EXPECT_EQ(end_of_this_process_rounds({0, 0, 0}, timings, 5), 1) << "more processes than rounds: one round each";
  EXPECT_EQ(end_of_this_process_rounds({1, 1, 0}, timings, 5), 2);
}

TEST(StepLimits, ARepetitionMayRunTenTimesItsPlanAndNeverLessThanAMinute) {
  TimingPlan plan;
  EXPECT_DOUBLE_EQ(check_limit_seconds(plan), 300);
  EXPECT_DOUBLE_EQ(repetition_limit_seconds(costing(0.05), plan), 60);
  EXPECT_NEAR(repetition_limit_seconds(costing(20), plan), 10 * repetition_seconds(costing(20)), 1e-9);
  plan.hang_timeout_s = 2;  // a test's short limit shortens the floor too
  EXPECT_DOUBLE_EQ(repetition_limit_seconds(costing(0.05), plan), 2);
}

ResultRow checked_row(const std::string& workload) {
  ResultRow row;
  row.run_id = "r";
  row.suite = "trainer2";
  row.workload = workload;
  row.size = "small";
  row.backend = "reference";
  row.device = "cpu";
  row.phase = "serial_fp32";
  row.status = Status::Ok;
  return row;
}

SampleRow sample(const std::string& workload, int rep) {
  return {workload, "small", "reference", "cpu", "serial_fp32", rep, 1.5 + rep, "trainer2", 1.0};
}

TEST(RunRecord, ReadsBackWhatWasRecordedAndDropsALineCutShortByAKill) {
  const fs::path dir = testing::fresh_temp_path("record");
  {
    RunRecorder recorder(dir);
    recorder.checked(checked_row("lior_step"));
    recorder.checked(checked_row("retrieval"));
    recorder.plan({{"trainer2/lior_step/small/reference/cpu/0_serial_fp32", {4, 20, 0.5}}});
    recorder.repetition(sample("lior_step", 0), {{"name", "a"}});
    recorder.repetition(sample("lior_step", 1), {{"name", "a"}});
    recorder.error("trainer2/retrieval/small/reference/cpu/0_serial_fp32", "timed out after\t2 s");
    recorder.arguments({{"run_id", "r"}});
    recorder.later_check("trainer2/lior_step/small/reference/cpu/0_serial_fp32", {Status::Ok, 2.5e-7, ""});
    recorder.later_check("trainer2/retrieval/small/reference/cpu/0_serial_fp32",
                         {Status::Fail, 1.0, "a run after the timing disagrees\twith the oracle"});
  }
  std::ofstream(dir / "samples.csv", std::ios::app) << "lior_step,small,refer";  // a worker killed mid-write
  std::ofstream(dir / "later_checks.tsv", std::ios::app) << "trainer2/window/small/ref";
  const RunRecord record = read_run_record(dir);
  EXPECT_EQ(record.checked.size(), 2u);
  ASSERT_TRUE(record.checked.count(results::row_key(checked_row("lior_step"))));
  const auto& samples = record.samples_of(checked_row("lior_step"));
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[1].ms, 2.5);
  EXPECT_EQ(record.plan.at("trainer2/lior_step/small/reference/cpu/0_serial_fp32").reps, 4);
  EXPECT_EQ(record.errors.at("trainer2/retrieval/small/reference/cpu/0_serial_fp32"), "timed out after 2 s");
  EXPECT_EQ(record.arguments["run_id"], "r");
  ASSERT_EQ(record.later_checks.size(), 2u) << "the cut line is dropped";
  const LaterCheck& passed = record.later_checks.at("trainer2/lior_step/small/reference/cpu/0_serial_fp32");
  EXPECT_EQ(passed.status, Status::Ok);
  EXPECT_DOUBLE_EQ(passed.rel_l2_err, 2.5e-7);
  const LaterCheck& failed = record.later_checks.at("trainer2/retrieval/small/reference/cpu/0_serial_fp32");
  EXPECT_EQ(failed.status, Status::Fail);
  EXPECT_EQ(failed.reason, "a run after the timing disagrees with the oracle");
  EXPECT_TRUE(read_run_record(testing::fresh_temp_path("none")).checked.empty()) << "no record: an empty one";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pb::detail
