// Incomplete runs, the reading side: a run stopped before it finished says so in machine.json
// ("complete": false and "incomplete": {reason, cases_planned, cases_done, resume};
// docs/file-formats.md). `compare`, `baseline record` and `merge` refuse it with exit code 2 unless
// given --allow-incomplete; `report` shows it under a banner. Older runs without "complete" are
// complete.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "crafted_runs.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;
using testing::write_run;

const nlohmann::json kStopped = {{"reason", "stopped by SIGTERM"},
                                 {"cases_planned", 40},
                                 {"cases_done", 12},
                                 {"resume", "phasebench run --resume results/runs/20261121T000000Z-stopped"}};

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Marks the run directory `dir` incomplete the way `run` does when stopped.
void mark_incomplete(const fs::path& dir, const nlohmann::json& incomplete = kStopped) {
  nlohmann::json machine = read_json(dir / "machine.json");
  machine["complete"] = false;
  machine["incomplete"] = incomplete;
  std::ofstream(dir / "machine.json") << machine.dump(2);
}

testing::CraftedRun crafted(std::vector<testing::CraftedRow> rows = testing::ladder_rows(), uint64_t noise_seed = 1) {
  testing::CraftedRun run;
  run.rows = std::move(rows);
  run.noise_seed = noise_seed;
  return run;
}

fs::path complete_run(const std::string& name, uint64_t noise_seed = 1) {
  testing::CraftedRun run = crafted(testing::ladder_rows(), noise_seed);
  run.extra_machine = {{"complete", true}};
  return write_run(name, run);
}

fs::path incomplete_run(const std::string& name, uint64_t noise_seed = 2) {
  const fs::path dir = write_run(name, crafted(testing::ladder_rows(), noise_seed));
  mark_incomplete(dir);
  return dir;
}

// A refusal names the run's directory, says it is incomplete and why, how to resume it, and the
// way around.
void expect_refusal(const testing::ProcessResult& result, const fs::path& run) {
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(run.string() + " is an incomplete run"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("stopped by SIGTERM; 12 of 40 cases done"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("resume with: " + kStopped["resume"].get<std::string>()), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("--allow-incomplete"), std::string::npos) << result.output;
}

// ---- reading the mark ----------------------------------------------------------------------------

TEST(IncompleteRun, TheMarkReadsAsOneLine) {
  const results::RunData run = results::load_run(incomplete_run("marked").string());
  ASSERT_TRUE(run.incomplete());
  EXPECT_EQ(*run.incomplete(), "stopped by SIGTERM; 12 of 40 cases done; resume with: " +
                                   kStopped["resume"].get<std::string>());
}

TEST(IncompleteRun, RunsWithoutTheMarkOrMarkedCompleteAreComplete) {
  EXPECT_FALSE(results::load_run(write_run("older", crafted()).string()).incomplete()) << "no \"complete\": older";
  EXPECT_FALSE(results::load_run(complete_run("complete").string()).incomplete());
  const fs::path fixture = fs::path(PHASEBENCH_TESTS_DIR) / "data/report/run-a";  // a real run of an older phasebench
  EXPECT_FALSE(read_json(fixture / "machine.json").contains("complete"));
  EXPECT_FALSE(results::load_run(fixture.string()).incomplete());
}

TEST(IncompleteRun, AMalformedMarkStillReadsAsIncomplete) {
  for (const nlohmann::json& mark : {nlohmann::json("garbage"), nlohmann::json::array({1, 2}), nlohmann::json(nullptr),
                                     nlohmann::json{{"cases_done", "twelve"}, {"resume", 7}}}) {
    const fs::path dir = write_run("malformed", crafted());
    mark_incomplete(dir, mark);
    const results::RunData run = results::load_run(dir.string());
    ASSERT_TRUE(run.incomplete()) << mark;
    EXPECT_EQ(*run.incomplete(), "no reason recorded") << mark;
  }
  const fs::path only_incomplete = write_run("only-incomplete", crafted());
  const nlohmann::json only_mark = {{"incomplete", {{"reason", "worker kept dying"}}}};
  std::ofstream(only_incomplete / "machine.json") << only_mark.dump();
  EXPECT_EQ(results::load_run(only_incomplete.string()).incomplete(), "worker kept dying");
  const fs::path odd_complete = write_run("odd-complete", crafted());
  std::ofstream(odd_complete / "machine.json") << nlohmann::json{{"complete", "no"}}.dump();
  EXPECT_TRUE(results::load_run(odd_complete.string()).incomplete()) << "anything but true is not complete";
}

// ---- compare -------------------------------------------------------------------------------------

TEST(IncompleteRun, CompareRefusesItOnEitherSide) {
  const fs::path complete = complete_run("complete"), incomplete = incomplete_run("incomplete");
  expect_refusal(run_phasebench("compare " + complete.string() + " " + incomplete.string()), incomplete);
  expect_refusal(run_phasebench("compare " + incomplete.string() + " " + complete.string()), incomplete);
}

TEST(IncompleteRun, CompareWithAllowIncompleteProceedsWithANote) {
  const fs::path complete = complete_run("complete"), incomplete = incomplete_run("incomplete");
  const fs::path markdown = fresh_temp_path("summary.md");
  const auto result = run_phasebench("compare " + complete.string() + " " + incomplete.string() +
                                     " --allow-incomplete --markdown " + markdown.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("note: " + incomplete.string() + " is an incomplete run (stopped by SIGTERM"),
            std::string::npos)
      << result.output;
  EXPECT_NE(read_text(markdown).find("is an incomplete run"), std::string::npos) << "the pull request is told too";
}

TEST(IncompleteRun, OlderAndCompleteRunsAreStillCompared) {
  const auto result = run_phasebench("compare " + write_run("older", crafted()).string() + " " +
                                     complete_run("complete", 2).string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.find("incomplete"), std::string::npos) << result.output;
}

// ---- baseline record -----------------------------------------------------------------------------

TEST(IncompleteRun, BaselineRecordRefusesItUnlessAllowed) {
  const fs::path root = fresh_temp_path("baselines"), incomplete = incomplete_run("incomplete");
  expect_refusal(run_phasebench("baseline record " + incomplete.string() + " --root " + root.string()), incomplete);
  EXPECT_FALSE(fs::exists(root / testing::CraftedRun().fingerprint));

  const auto result =
      run_phasebench("baseline record " + incomplete.string() + " --root " + root.string() + " --allow-incomplete");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(results::load_run((root / testing::CraftedRun().fingerprint).string()).incomplete()) << "it stays marked";
}

// ---- merge ---------------------------------------------------------------------------------------

testing::CraftedRun shard(int index, std::vector<testing::CraftedRow> rows) {
  testing::CraftedRun run = crafted(std::move(rows));
  run.extra_machine = {{"shard", {{"index", index}, {"count", 2}}}};
  return run;
}

TEST(IncompleteRun, MergeOfShardsRefusesAnIncompleteShard) {
  const fs::path first = write_run("s1", shard(1, {{"reference", 0, "serial_fp32"}, {"kokkos", 0, "baseline"}}));
  const fs::path second = write_run("s2", shard(2, {{"reference", 0, "serial_fp32"}, {"onednn", 0, "baseline"}}));
  mark_incomplete(second);
  const fs::path out = fresh_temp_path("merged");
  expect_refusal(run_phasebench("merge " + first.string() + " " + second.string() + " --out " + out.string()), second);
  EXPECT_FALSE(fs::exists(out));

  const auto result =
      run_phasebench("merge " + first.string() + " " + second.string() + " --allow-incomplete --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json machine = read_json(out / "machine.json");
  EXPECT_EQ(machine["complete"], false);
  const std::string reason = machine["incomplete"]["reason"];
  EXPECT_NE(reason.find(second.string() + " (shard 2/2, stopped by SIGTERM"), std::string::npos) << reason;
  EXPECT_EQ(reason.find(first.string()), std::string::npos) << "only the incomplete input is named: " << reason;
  EXPECT_EQ(machine["incomplete"]["resume"], kStopped["resume"]);
  expect_refusal(run_phasebench("compare " + first.string() + " " + out.string()), out);
}

TEST(IncompleteRun, MergePoolRefusesAnIncompleteRun) {
  const fs::path complete = complete_run("p1"), incomplete = incomplete_run("p2");
  const fs::path out = fresh_temp_path("pooled");
  const std::string inputs = complete.string() + " " + incomplete.string();
  expect_refusal(run_phasebench("merge --pool " + inputs + " --out " + out.string()), incomplete);
  EXPECT_FALSE(fs::exists(out));

  const auto result = run_phasebench("merge --pool " + inputs + " --allow-incomplete --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("the merged run is marked incomplete"), std::string::npos) << result.output;
  EXPECT_TRUE(results::load_run(out.string()).incomplete());
}

TEST(IncompleteRun, AMergeOfCompleteRunsIsComplete) {
  const fs::path out = fresh_temp_path("pooled");
  const fs::path second = write_run("p2", crafted(testing::ladder_rows(), 2));
  const std::string inputs = complete_run("p1").string() + " " + second.string();
  const auto result = run_phasebench("merge --pool " + inputs + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const nlohmann::json machine = read_json(out / "machine.json");
  EXPECT_EQ(machine["complete"], true);
  EXPECT_FALSE(machine.contains("incomplete"));
}

// ---- report --------------------------------------------------------------------------------------

// A real run (the report fixture) stopped part way: the page opens with the banner and the runs
// table says it again.
TEST(IncompleteRun, ReportRendersItUnderABanner) {
  const fs::path run = fresh_temp_path("stopped-run");
  fs::copy(fs::path(PHASEBENCH_TESTS_DIR) / "data/report/run-a", run);
  mark_incomplete(run);
  const fs::path out = fresh_temp_path("report.html");
  const auto result = run_phasebench("report " + run.string() + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string note = "note: run A (" + run.string() + ") is incomplete: stopped by SIGTERM";
  EXPECT_NE(result.output.find(note), std::string::npos) << result.output;
  const std::string html = read_text(out);
  const size_t banner = html.find("<p class=\"banner\">incomplete run: A (" + run.string() +
                                  "): stopped by SIGTERM; 12 of 40 cases done; resume with: " +
                                  kStopped["resume"].get<std::string>() + "</p>");
  ASSERT_NE(banner, std::string::npos) << html.substr(0, 4000);
  EXPECT_LT(banner, html.find("<nav>")) << "at the top of the page";
  const size_t runs_section = html.find("<section id=\"runs\">");
  EXPECT_NE(html.find("Run A is incomplete: stopped by SIGTERM; 12 of 40 cases done", runs_section), std::string::npos);
}

TEST(IncompleteRun, ReportOfACompleteRunHasNoBanner) {
  const fs::path out = fresh_temp_path("report.html");
  const auto result = run_phasebench("report " + complete_run("complete").string() + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_text(out).find("class=\"banner\""), std::string::npos);
}

}  // namespace
}  // namespace pb
