// `run` under its supervisor: stopped by a signal it keeps what was finished, marks the run
// incomplete and removes its scratch files, and `run --resume` finishes it; its worker never
// outlives it; a hanging case is timed out while the others finish; repetitions follow the time
// budget (below three only when three of each do not fit); --processes has fresh workers time the
// rounds in turn; Google Benchmark's compare.py reads benchmark.json as it reads its own.
// Faults are injected with PHASEBENCH_INJECT_HANG (harness/src/engine/fault_injection.hpp) into the serial
// reference of trainer2/train_step, among the five trainer2 references at the small size.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "phasebench/results.hpp"
#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using namespace pb::testing;

const std::vector<std::string> kReferenceRun{"run", "--size", "small", "--quick", "--backend", "reference",
                                             "--filter", "trainer2/"};
const std::string kHanging = "trainer2/train_step/small/reference/cpu/0_serial_fp32";
const std::string kHangingPattern = "PHASEBENCH_INJECT_HANG=trainer2/train_step/small/reference";

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += word + " ";
  return text;
}

nlohmann::json machine_of(const fs::path& run) { return nlohmann::json::parse(read_text(run / "machine.json")); }

std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) files[entry.path().string()] = read_text(entry.path());
  return files;
}

// The worker's journal (in run's scratch directory under `tmp`) names the step it is in.
bool journal_names(const fs::path& tmp, const std::string& row) {
  for (const auto& entry : fs::directory_iterator(tmp))
    if (read_text(entry.path() / "journal").find(row) != std::string::npos) return true;
  return false;
}

// A run started in the background whose worker has reached the hanging case.
struct HangingRun {
  fs::path tmp = empty_temp_directory(), out = fresh_temp_path("stopped-run"), log = fresh_temp_path("run-log");
  pid_t supervisor = -1, worker = -1;

  HangingRun() {
    std::vector<std::string> arguments = kReferenceRun;
    arguments.insert(arguments.end(), {"--out", out.string()});
    supervisor = start_phasebench(arguments, {"TMPDIR=" + tmp.string(), kHangingPattern}, log);
    if (supervisor <= 0) return;
    if (within(std::chrono::seconds(120), [&] { return journal_names(tmp, kHanging); })) worker = child_of(supervisor);
  }
  // Waits up to 5 s for the supervisor to end; its exit status, or -1 when it did not end.
  int ended_within_five_seconds() {
    int status = 0;
    if (within(std::chrono::seconds(5), [&] { return waitpid(supervisor, &status, WNOHANG) == supervisor; }))
      return status;
    kill(supervisor, SIGKILL);  // leave nothing behind for the tests after this one
    waitpid(supervisor, &status, 0);
    return -1;
  }
  ~HangingRun() {
    if (worker > 0) kill(-worker, SIGKILL);
    fs::remove_all(tmp);
    fs::remove_all(out);
    fs::remove_all(log);
  }
};

TEST(RunStop, SigtermKeepsWhatWasFinishedAndResumeCompletesIt) {
  const fs::path earlier = fresh_temp_path("earlier-run");
  ASSERT_EQ(run_phasebench(joined(kReferenceRun) + " --out " + earlier.string()).exit_code, 0);
  const auto earlier_files = contents(earlier);

  HangingRun run;
  ASSERT_GT(run.worker, 0) << "the worker never reached the hanging case\n" << read_text(run.log);
  ASSERT_EQ(kill(run.supervisor, SIGTERM), 0);
  const int status = run.ended_within_five_seconds();
  ASSERT_NE(status, -1) << "run did not end within 5 s of SIGTERM\n" << read_text(run.log);
  EXPECT_TRUE(within(std::chrono::seconds(5), [&] { return process_gone(run.worker); })) << "the worker is left";
  ASSERT_TRUE(WIFEXITED(status)) << "run died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read_text(run.log);
  EXPECT_TRUE(holds_nothing(run.tmp)) << "the scratch directory is removed";

  // Written, with the cases checked before the hanging one, and marked incomplete.
  const nlohmann::json machine = machine_of(run.out);
  EXPECT_EQ(machine["complete"], false);
  EXPECT_EQ(machine["incomplete"]["reason"], "stopped by SIGTERM");
  EXPECT_EQ(machine["incomplete"]["cases_planned"], 5);
  const auto stopped_rows = read_results_csv((run.out / "results.csv").string());
  EXPECT_GE(stopped_rows.size(), 1u);
  for (const ResultRow& row : stopped_rows) EXPECT_NE(row.workload, "train_step") << "it never finished its check";
  EXPECT_TRUE(fs::is_directory(run.out / "resume"));

  const auto refused = run_phasebench("compare " + run.out.string() + " " + earlier.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("incomplete"), std::string::npos) << refused.output;

  const auto resumed = run_phasebench("run --resume " + run.out.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(machine_of(run.out)["complete"], true);
  EXPECT_FALSE(machine_of(run.out).contains("incomplete"));
  EXPECT_FALSE(fs::exists(run.out / "resume"));
  const auto rows = read_results_csv((run.out / "results.csv").string());
  EXPECT_EQ(rows.size(), 5u);
  for (const ResultRow& row : rows) {
    EXPECT_EQ(row.status, Status::Ok) << row.workload << ": " << row.reason;
    EXPECT_EQ(row.reps, 3) << row.workload;
  }
  for (const auto& entry : fs::directory_iterator(run.out.parent_path()))
    EXPECT_EQ(entry.path().string().find(run.out.string() + "."), std::string::npos) << "left behind: " << entry.path();
  // Accepted now (whatever the noise between two quick runs says: not the refusal's exit code 2).
  EXPECT_NE(run_phasebench("compare " + run.out.string() + " " + earlier.string()).exit_code, 2);
  EXPECT_EQ(contents(earlier), earlier_files) << "an earlier run is never touched";
  fs::remove_all(earlier);
}

// Slurm's scancel and a container's stop signal every process of the job, and the worker may die
// of it before the supervisor's handler runs: its case did not crash, and resume runs it.
TEST(RunStop, AStopSignalThatEndsTheWorkerFirstStopsTheRunAndResumeRunsTheCase) {
  HangingRun run;
  ASSERT_GT(run.worker, 0) << "the worker never reached the hanging case\n" << read_text(run.log);
  ASSERT_EQ(kill(-run.worker, SIGTERM), 0);
  const int status = run.ended_within_five_seconds();
  ASSERT_NE(status, -1) << "run did not end within 5 s of its worker's SIGTERM\n" << read_text(run.log);
  ASSERT_TRUE(WIFEXITED(status)) << "run died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << read_text(run.log);
  EXPECT_EQ(read_text(run.log).find("crashed"), std::string::npos) << read_text(run.log);
  EXPECT_EQ(machine_of(run.out)["incomplete"]["reason"], "stopped by SIGTERM");

  const auto resumed = run_phasebench("run --resume " + run.out.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto rows = read_results_csv((run.out / "results.csv").string());
  EXPECT_EQ(rows.size(), 5u);
  for (const ResultRow& row : rows) EXPECT_EQ(row.status, Status::Ok) << row.workload << ": " << row.reason;
}

TEST(RunStop, TheWorkerDiesWithItsSupervisorWhateverKillsIt) {
  HangingRun run;
  ASSERT_GT(run.worker, 0) << read_text(run.log);
  ASSERT_EQ(kill(run.supervisor, SIGKILL), 0);
  int status = 0;
  waitpid(run.supervisor, &status, 0);
  EXPECT_TRUE(within(std::chrono::seconds(5), [&] { return process_gone(run.worker); }))
      << "worker " << run.worker << " outlived its supervisor";
}

TEST(RunStop, ResumeRefusesACompleteRunAndOtherOptions) {
  const fs::path out = fresh_temp_path("complete-run");
  ASSERT_EQ(run_phasebench("run --size small --quick --backend reference --filter trainer2/lior_step --out " +
                           out.string())
                .exit_code,
            0);
  const auto complete = run_phasebench("run --resume " + out.string());
  EXPECT_EQ(complete.exit_code, 2);
  EXPECT_NE(complete.output.find("complete run: there is nothing to resume"), std::string::npos) << complete.output;
  const auto with_options = run_phasebench("run --resume " + out.string() + " --reps 4");
  EXPECT_EQ(with_options.exit_code, 2);
  EXPECT_NE(with_options.output.find("--resume takes no other option"), std::string::npos) << with_options.output;
  fs::remove_all(out);
}

TEST(RunHang, AHangingCaseIsTimedOutAndTheOthersFinish) {
  const fs::path tmp = empty_temp_directory(), out = fresh_temp_path("hang-run");
  const auto result = run_phasebench(joined(kReferenceRun) + " --hang-timeout 2 --out " + out.string(),
                                     "TMPDIR=" + tmp.string() + " " + kHangingPattern);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  const auto rows = read_results_csv((out / "results.csv").string());
  ASSERT_EQ(rows.size(), 5u) << result.output;
  for (const ResultRow& row : rows) {
    if (row.workload == "train_step") {
      EXPECT_EQ(row.status, Status::Error);
      EXPECT_EQ(row.reason, "timed out after 2 s");
    } else {
      EXPECT_EQ(row.status, Status::Ok) << row.workload << ": " << row.reason;
      EXPECT_EQ(row.reps, 3);
    }
  }
  EXPECT_EQ(machine_of(out)["complete"], true);
  EXPECT_TRUE(holds_nothing(tmp));
  fs::remove_all(tmp);
  fs::remove_all(out);
}

// Repetitions per row, from a run of the five trainer2 references with `options`.
std::vector<int> reps_of_run(const std::string& options) {
  const fs::path out = fresh_temp_path("budget-run");
  const auto result = run_phasebench("run --size small --backend reference --filter trainer2/ " + options +
                                     " --out " + out.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::vector<int> reps;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    EXPECT_EQ(row.status, Status::Ok);
    reps.push_back(row.reps);
  }
  fs::remove_all(out);
  return reps;
}

TEST(RunBudget, RepetitionsFollowTheBudgetAndEveryCaseGetsOne) {
  // Every repetition lasts at least 50 ms: ten of five cases cannot fit in a budget of one second
  // (less what checking took), nor can three of each once checking took a quarter of it; every
  // case is still timed at least once (timing_plan_test.cpp has the floor's rule, 3 while 3 fit).
  const std::vector<int> squeezed = reps_of_run("--time-budget 1");
  for (int reps : squeezed) EXPECT_GE(reps, 1);
  EXPECT_LT(*std::min_element(squeezed.begin(), squeezed.end()), 10) << "the budget was not applied";
  for (int reps : reps_of_run("--time-budget 1 --reps 4")) EXPECT_EQ(reps, 4) << "--reps given keeps its meaning";
  for (int reps : reps_of_run("--time-budget 600")) EXPECT_EQ(reps, 10) << "fast cases keep all the reps asked for";
}

// --processes 3: each of three workers in turn sets every case up and times its share of the
// rounds; the run holds every repetition once, and the last worker checks what was timed.
TEST(RunProcesses, TheRoundsAreTimedByFreshWorkersInTurn) {
  const fs::path tmp = empty_temp_directory(), out = fresh_temp_path("processes-run");
  const auto result = run_phasebench(
      "run --size small --backend reference --filter trainer2/ --quick --reps 5 --processes 3 --out " + out.string(),
      "TMPDIR=" + tmp.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const std::string share : {"rounds 1-2 of 5", "rounds 3-4 of 5", "rounds 5-5 of 5"})
    EXPECT_NE(result.output.find(share + " in this worker process"), std::string::npos) << share << "\n"
                                                                                        << result.output;
  const auto rows = read_results_csv((out / "results.csv").string());
  ASSERT_EQ(rows.size(), 5u);
  std::map<std::string, std::vector<int>> reps_of;
  for (const SampleRow& sample : read_samples_csv((out / "samples.csv").string())) {
    reps_of[sample.workload].push_back(sample.rep);
    EXPECT_GT(sample.cpu_probe_us, 0) << sample.workload << " rep " << sample.rep << ": its CPUs not probed";
  }
  for (const ResultRow& row : rows) {
    EXPECT_EQ(row.status, Status::Ok) << row.workload << ": " << row.reason;
    EXPECT_EQ(row.reps, 5);
    std::vector<int> reps = reps_of[row.workload];
    std::sort(reps.begin(), reps.end());
    EXPECT_EQ(reps, (std::vector<int>{0, 1, 2, 3, 4})) << row.workload;
    EXPECT_TRUE(std::isfinite(row.later_rel_l2_err)) << row.workload << ": not checked after its timing";
  }
  EXPECT_EQ(machine_of(out)["timing"]["processes"], 3);
  EXPECT_EQ(machine_of(out)["complete"], true);
  EXPECT_TRUE(holds_nothing(tmp));
  fs::remove_all(tmp);
  fs::remove_all(out);
}

TEST(GoogleBenchmarkTools, ComparePyGroupsTheRepetitionsOfACaseAndRunsItsUTest) {
  const std::string compare_py = "/usr/share/benchmark/compare.py";  // Debian's libbenchmark-tools
  if (!fs::exists(compare_py)) GTEST_SKIP() << compare_py << " is not installed (ci/install-deps.sh installs it)";
  std::vector<fs::path> runs{fresh_temp_path("gbench-a"), fresh_temp_path("gbench-b")};
  for (const fs::path& out : runs)
    ASSERT_EQ(run_phasebench("run --size small --backend reference --filter 'trainer2/(lior_step|retrieval)' "
                             "--reps 5 --out " + out.string())
                  .exit_code,
              0);
  const auto compared = run_command("/usr/bin/python3 " + compare_py + " --no-color benchmarks " +
                                    (runs[0] / "benchmark.json").string() + " " +
                                    (runs[1] / "benchmark.json").string() + " 2>&1");
  ASSERT_EQ(compared.exit_code, 0) << compared.output;
  for (const std::string workload : {"lior_step", "retrieval"}) {
    const std::string pvalue_row = "trainer2/" + workload + "/small/reference/cpu/0_serial_fp32_pvalue";
    EXPECT_NE(compared.output.find(pvalue_row), std::string::npos) << compared.output;
  }
  size_t u_tests = 0;
  for (size_t at = 0; (at = compared.output.find("U Test, Repetitions: 5 vs 5", at)) != std::string::npos; ++at)
    ++u_tests;
  EXPECT_EQ(u_tests, 2u) << "one U-test per case\n" << compared.output;
  for (const fs::path& out : runs) fs::remove_all(out);
}

}  // namespace
}  // namespace pb
