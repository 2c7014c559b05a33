// Threads as an axis of a run: `run --threads 1,2` has each case at each count (interleaved in one
// worker where the backend's threads change in a process, a worker per count for Kokkos), the
// serial reference once, every row checked and timed at its own count, its speedups
// taken against the phase 0 of the same count, and samples.csv telling the counts apart. A run of
// one count keeps the row names it always had; the history stores a run of several, a series per
// count.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "phasebench/backend.hpp"
#include "phasebench/results.hpp"
#include "phasebench/runner.hpp"
#include "process.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {

namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;

TEST(ThreadCounts, BadListsAreUsageErrors) {
  const std::vector<std::pair<std::string, std::string>> refused{
      {"run --threads 1,1", "names 1 threads twice"},
      {"run --threads 1,x", "'x' is not a whole number"},
      {"run --threads 1,", "is no list of thread counts"},
      {"run --threads 0,2", "'0' is out of range (a whole number from 1 to 4096) (or max: all cores)"},
  };
  for (const auto& [arguments, mentions] : refused) {
    const auto result = run_phasebench(arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.output;
    EXPECT_NE(result.output.find(mentions), std::string::npos) << arguments << "\n" << result.output;
  }
}

class ThreadCountsRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = new fs::path(fresh_temp_path("thread-counts"));
    result_ = new testing::ProcessResult(run_phasebench(
        "run --quick --size small --filter '^trainer2/lior_step/(torch|reference|kokkos)/' --threads 1,2 --out " +
        out_->string()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*out_);
    delete out_;
    delete result_;
  }
  static fs::path* out_;
  static testing::ProcessResult* result_;
};
fs::path* ThreadCountsRun::out_ = nullptr;
testing::ProcessResult* ThreadCountsRun::result_ = nullptr;

TEST_F(ThreadCountsRun, EachCaseAtEachCountTheReferenceOnce) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  std::map<std::string, std::set<int>> counts_of_phase;
  int reference_rows = 0;
  for (const ResultRow& row : read_results_csv((*out_ / "results.csv").string())) {
    if (row.device != "cpu") continue;
    if (row.backend == "reference") {
      ++reference_rows;
      EXPECT_EQ(row.threads, 1);
      continue;
    }
    EXPECT_EQ(row.status, Status::Ok) << row.phase << " at " << row.threads << ": " << row.reason;
    EXPECT_GT(row.reps, 0) << row.phase << " at " << row.threads;
    counts_of_phase[row.phase].insert(row.threads);
    if (row.phase_index == 0) EXPECT_DOUBLE_EQ(row.speedup_vs_phase0, 1.0) << "phase 0 at " << row.threads;
    EXPECT_FALSE(std::isnan(row.speedup_vs_reference)) << row.phase << " at " << row.threads;
  }
  EXPECT_EQ(reference_rows, 1);
  ASSERT_FALSE(counts_of_phase.empty());
  for (const auto& [phase, counts] : counts_of_phase) EXPECT_EQ(counts, (std::set<int>{1, 2})) << phase;
}

// Each worker announces the cases it times and their counts: the first has LibTorch's at both
// counts, interleaved, with the reference and Kokkos at 1 thread; the second Kokkos at 2 alone.
TEST_F(ThreadCountsRun, CountsThatChangeInAProcessShareAWorkerKokkosHasOneEach) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  std::map<std::string, int> rows_of;  // "<backend> <threads>"
  for (const ResultRow& row : read_results_csv((*out_ / "results.csv").string()))
    if (row.device == "cpu" && row.status == Status::Ok) ++rows_of[row.backend + " " + std::to_string(row.threads)];
  ASSERT_GT(rows_of["torch 2"], 0);
  ASSERT_GT(rows_of["kokkos 2"], 0);
  const int first = rows_of["torch 1"] + rows_of["torch 2"] + rows_of["reference 1"] + rows_of["kokkos 1"];
  const std::string output = result_->output;
  const std::string interleaved = "timing: " + std::to_string(first) + " cases x ";
  const size_t announced = output.find(interleaved);
  ASSERT_NE(announced, std::string::npos) << interleaved << "\n" << output;
  const std::string line = output.substr(announced, output.find('\n', announced) - announced);
  EXPECT_NE(line.find(" on 1,2 threads, interleaved; a backend whose thread pool is fixed"), std::string::npos) << line;
  const std::string second = "timing: " + std::to_string(rows_of["kokkos 2"]) + " cases x ";
  const size_t then = output.find(second, announced + line.size());
  ASSERT_NE(then, std::string::npos) << second << "\n" << output;
  EXPECT_NE(output.find(" on 2 threads; a backend whose thread pool is fixed", then), std::string::npos) << output;
}

// The engine sets each case's count before each of its steps: OpenMP's, and LibTorch's pool.
TEST(ThreadCounts, EachCaseRunsAtItsOwnCountAndKokkosOnlyInTheWorkerOfItsCount) {
  const std::shared_ptr<Backend> torch = find_backend("torch"), kokkos = find_backend("kokkos");
  ASSERT_TRUE(torch && kokkos);
  EXPECT_TRUE(torch->threads_change_in_process());
  EXPECT_FALSE(kokkos->threads_change_in_process());
  Case on_torch, on_kokkos;
  on_torch.backend = torch;
  on_kokkos.backend = kokkos;
  for (const int threads : {2, 1, 3}) {
    on_torch.threads = threads;
    use_threads_of(on_torch);
    EXPECT_EQ(omp_get_max_threads(), threads);
    EXPECT_EQ(torch->metadata().at("threads"), threads);  // at::get_num_threads()
  }
  const std::vector<int> counts{1, 2};
  on_torch.threads = on_kokkos.threads = 2;
  EXPECT_TRUE(runs_in_worker(on_torch, counts, 1));
  EXPECT_FALSE(runs_in_worker(on_torch, counts, 2));
  EXPECT_FALSE(runs_in_worker(on_kokkos, counts, 1));
  EXPECT_TRUE(runs_in_worker(on_kokkos, counts, 2));
}

TEST_F(ThreadCountsRun, SamplesCarryTheirThreadsAndTheRunRecordsItsCounts) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  const results::RunData run = results::load_run(out_->string());  // every timed row's samples found
  std::set<int> sample_threads;
  for (const SampleRow& sample : read_samples_csv((*out_ / "samples.csv").string()))
    sample_threads.insert(sample.threads);
  EXPECT_EQ(sample_threads, (std::set<int>{1, 2}));
  for (const ResultRow& row : run.rows)
    if (row.reps > 0) EXPECT_EQ(run.samples.at(results::row_key(row)).size(), static_cast<size_t>(row.reps));
  std::ifstream machine_file(*out_ / "machine.json");
  const nlohmann::json machine = nlohmann::json::parse(machine_file);
  EXPECT_EQ(machine.at("thread_counts"), nlohmann::json({1, 2}));
  EXPECT_EQ(machine.at("threads"), 2) << "the ceilings are those of the most threads";
}

TEST_F(ThreadCountsRun, TheSummaryAndTheScalingFileNameTheCounts) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  EXPECT_NE(result_->output.find("trainer2/lior_step/small/torch/cpu/0_baseline/threads=2"), std::string::npos)
      << result_->output;
  EXPECT_NE(result_->output.find("torch on cpu, 1 thread\n"), std::string::npos) << result_->output;
  EXPECT_NE(result_->output.find("torch on cpu, 2 threads\n"), std::string::npos) << result_->output;
  // Each torch phase has its threads record, unless other work disturbed one of its two rows (such
  // rows are left out of every fit: docs/file-formats.md).
  std::map<int, bool> judged;  // by phase: both rows undisturbed
  for (const ResultRow& row : read_results_csv((*out_ / "results.csv").string()))
    if (row.backend == "torch" && row.device == "cpu")
      judged.emplace(row.phase_index, true).first->second &= row.disturbed.empty();
  std::ifstream in(*out_ / "scaling.csv");
  const std::string scaling((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(judged.empty());
  for (const auto& [phase, undisturbed] : judged) {
    const std::string record = "\nthreads,trainer2,lior_step,torch,cpu," + std::to_string(phase) + ",";
    EXPECT_EQ(scaling.find(record) != std::string::npos, undisturbed) << "phase " << phase << ":\n" << scaling;
  }
}

TEST_F(ThreadCountsRun, CompareMatchesEachCountWithItselfAndTheHistoryKeepsASeriesPerCount) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  const auto compared = run_phasebench("compare " + out_->string() + " " + out_->string());
  EXPECT_EQ(compared.exit_code, 0) << compared.output;
  EXPECT_EQ(compared.output.find("different thread count"), std::string::npos) << compared.output;
  for (const char* count : {"1", "2"})  // each count's row by a name of its own
    EXPECT_NE(compared.output.find("trainer2/lior_step/small/torch/cpu/0_baseline/threads=" + std::string(count)),
              std::string::npos)
        << compared.output;
  const std::string database = "--db " + fresh_temp_path("thread-counts-history").string() + ".sqlite";
  const auto added = run_phasebench("history " + database + " add " + out_->string());
  EXPECT_EQ(added.exit_code, 0) << added.output;
  // A series at each count with an undisturbed torch row (a disturbed row stays out of trends).
  const std::vector<ResultRow> rows = read_results_csv((*out_ / "results.csv").string());
  std::set<int> counts_in_trends;
  for (const ResultRow& row : rows)
    if (row.backend == "torch" && row.device == "cpu" && row.disturbed.empty()) counts_in_trends.insert(row.threads);
  const auto trend = run_phasebench("history " + database + " trend --all --filter '^trainer2/lior_step/torch/'");
  ASSERT_EQ(trend.exit_code, 0) << trend.output;
  for (const int threads : {1, 2})
    EXPECT_EQ(trend.output.find("/threads=" + std::to_string(threads) + "  ") != std::string::npos,
              counts_in_trends.count(threads) == 1)
        << threads << " threads\n"
        << trend.output;
  const fs::path exported = fresh_temp_path("thread-counts-exported");
  const auto export_run =
      run_phasebench("history " + database + " export " + rows.front().run_id + " --out " + exported.string());
  ASSERT_EQ(export_run.exit_code, 0) << export_run.output;
  EXPECT_EQ(testing::read_text(exported / "results.csv"), testing::read_text(*out_ / "results.csv"));
  EXPECT_EQ(testing::read_text(exported / "samples.csv"), testing::read_text(*out_ / "samples.csv"));
  fs::remove_all(exported);
  fs::remove_all(database.substr(5));
}

// A run of one count names its rows as before: nothing says threads where nothing differs.
TEST(ThreadCounts, ARunOfOneCountKeepsItsRowNames) {
  const fs::path out = fresh_temp_path("thread-count-one");
  const auto result = run_phasebench(
      "run --quick --size small --filter '^trainer2/lior_step/torch/' --threads 2 --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("trainer2/lior_step/small/torch/cpu/0_baseline "), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("/threads="), std::string::npos) << result.output;
  fs::remove_all(out);
}

}  // namespace
}  // namespace pb
