// The command line's error paths: every bad argument exits 2 with a message that names it.

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "phasebench/results.hpp"
#include "process.hpp"

namespace pb {
namespace {

using testing::run_phasebench;

void expect_usage_error(const std::string& arguments, const std::string& mentions) {
  const auto result = run_phasebench(arguments);
  EXPECT_EQ(result.exit_code, 2) << arguments << "\n" << result.output;
  EXPECT_NE(result.output.find(mentions), std::string::npos)
      << "`phasebench " << arguments << "` should mention '" << mentions << "':\n" << result.output;
}

TEST(Cli, HelpExitsZeroAndListsTheCommands) {
  const auto result = run_phasebench("--help");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"list", "run", "verify", "dump", "check"})
    EXPECT_NE(result.output.find(command), std::string::npos) << command;
}

TEST(Cli, NoCommandIsAUsageError) { expect_usage_error("", "subcommand"); }
TEST(Cli, UnknownCommand) { expect_usage_error("frobnicate", "frobnicate"); }
TEST(Cli, UnknownOption) { expect_usage_error("run --fast", "--fast"); }
TEST(Cli, BadSize) { expect_usage_error("run --size huge", "huge"); }
TEST(Cli, ZeroReps) { expect_usage_error("run --reps 0", "--reps"); }
TEST(Cli, NonNumericThreads) { expect_usage_error("run --threads many", "--threads"); }
TEST(Cli, UnknownBackend) { expect_usage_error("run --backend tensorflow", "tensorflow"); }
TEST(Cli, UnknownSuite) { expect_usage_error("list --suite nosuch", "nosuch"); }
TEST(Cli, CheckWithoutItsDirectories) { expect_usage_error("check", "DUMP_DIR is required"); }
TEST(Cli, BadRegex) { expect_usage_error("verify --filter '(['", "regular expression"); }
TEST(Cli, VerifyMatchingNothing) { expect_usage_error("verify --filter nothing-matches-this", "matches no variant"); }
TEST(Cli, RunMatchingNothing) { expect_usage_error("run --quick --filter nothing-matches-this", "matches no variant"); }
TEST(Cli, SeedPastItsRangeIsAnErrorNotSaturated) {
  expect_usage_error("run --quick --seed 99999999999999999999999", "out of range (a whole number from 0 to 18446744073709551615)");
  expect_usage_error("verify --seed -1", "'-1' is not a whole number");
  expect_usage_error("dump --workload trainer2/lior_step --seed 12x --out /tmp/x", "'12x' is not a whole number");
}
// Every numeric option through one strict parser (cli_numbers.cpp): CLI11 alone read "010" as
// octal, "0x10" as hex, and let "nan" through its range checks.
TEST(Cli, NumbersAreDecimalFiniteInRangeAndNothingElse) {
  const std::vector<std::pair<std::string, std::string>> refused{
      {"run --reps 010x", "--reps: '010x' is not a whole number (a whole number from 1 to 100000)"},
      {"run --reps 0x10", "'0x10' is not a whole number"},
      {"run --reps 99999999999", "'99999999999' is out of range"},
      {"run --reps ' 5'", "' 5' is not a whole number"},
      {"run --threads -1", "'-1' is out of range (a whole number from 1 to 4096)"},
      {"verify --threads 2.5", "'2.5' is not a whole number"},
      {"verify --seeds 1001", "'1001' is out of range"},
      {"run --time-budget nan", "'nan' is not a finite number"},
      {"run --hang-timeout inf", "'inf' is not a finite number"},
      {"run --processes 0", "--processes: '0' is out of range (a whole number from 1 to 100)"},
      {"verify --hang-timeout 0", "'0' is out of range (a number from 0.1 to 1e+07)"},
      {"compare a b --threshold nan", "--threshold: 'nan' is not a finite number"},
      {"compare a b --threshold -1", "'-1' is out of range"},
      {"compare a b --alpha 1e-400", "'1e-400' is out of range"},
      {"compare a b --fastest 25%", "'25%' is not a number"},
      {"run --shard 1/2x", "'1/2x' is not i/n"},
      {"run --shard +1/2", "'+1/2' is not i/n"},
      {"run --shard 1/99999999999", "'1/99999999999' is not i/n"},
  };
  for (const auto& [arguments, mentions] : refused) expect_usage_error(arguments, mentions);
}
TEST(Cli, AnOutDirectoryThatCannotBeMadeIsABadInput) {
  expect_usage_error("run --quick --size small --filter lior_step/reference --out /proc/none/x",
                     "cannot create the directory /proc/none for --out");
}
TEST(Cli, BaselineRecordOfNothingPrintsOnlyTheError) {
  const auto result = run_phasebench("baseline record /nonexistent-run-dir");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_EQ(result.output.find("baseline recorded"), std::string::npos) << result.output;
}
// A run directory whose samples.csv, results.csv and machine.json do not describe the same run is refused by
// every command that reads runs, with both files named.
TEST(Cli, FilesOfOneRunThatDisagreeAreRefused) {
  ResultRow row;
  row.run_id = "20261125T000000Z-test";
  row.suite = "trainer2";
  row.workload = "lior_step";
  row.size = "small";
  row.backend = "torch";
  row.device = "cpu";
  row.phase = "baseline";
  row.status = Status::Ok;
  row.reps = 2;
  row.median_ms = 1.5;
  const SampleRow one_of_two{"lior_step", "small", "torch", "cpu", "baseline", 0, 1.5, "trainer2"};
  const SampleRow orphan{"lior_step", "small", "kokkos", "cpu", "baseline", 0, 1.5, "trainer2"};
  const auto write_run = [&](const std::string& name, const std::vector<SampleRow>& samples) {
    const auto dir = testing::fresh_temp_path(name);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "results.csv") << results_csv({row});
    std::ofstream(dir / "samples.csv") << samples_csv(samples);
    return dir.string();
  };
  const std::string missing = write_run("missing-sample", {one_of_two});
  SampleRow second = one_of_two;
  second.rep = 1;
  const std::string extra = write_run("orphan-sample", {one_of_two, second, orphan});
  for (const std::string& command : {"compare " + missing + " " + missing, "report " + missing + " --out " +
                                     testing::fresh_temp_path("report").string() + ".html",
                                     "baseline record " + missing})
    expect_usage_error(command, "has 2 repetitions but");
  expect_usage_error("compare " + extra + " " + extra, "which has no row in");

  const std::string other_machine = write_run("other-machine", {one_of_two, second});
  std::ofstream(std::filesystem::path(other_machine) / "machine.json") << R"({"run_id": "20261125T000001Z-other"})";
  expect_usage_error("report " + other_machine + " --out " + testing::fresh_temp_path("report2").string() + ".html",
                     "column run_id: '20261125T000000Z-test', but");
  expect_usage_error("merge " + other_machine + " " + other_machine + " --out " +
                         testing::fresh_temp_path("merged").string(), "files from different runs");
}
TEST(Cli, BadSeedCount) { expect_usage_error("verify --seeds 0", "--seeds"); }
TEST(Cli, DumpNeedsAWorkload) { expect_usage_error("dump --out /tmp/x", "--workload"); }
TEST(Cli, DumpUnknownWorkload) {
  expect_usage_error("dump --workload trainer2/nosuch --out " +
                         testing::fresh_temp_path("dump").string(), "trainer2/nosuch");
}

TEST(Cli, RunRefusesToOverwriteAnExistingDirectory) {
  const auto existing = testing::fresh_temp_path("existing");
  std::filesystem::create_directories(existing);
  std::ofstream(existing / "results.csv") << "precious\n";
  expect_usage_error("run --quick --size small --out " + existing.string(), "already exists");
  std::ifstream kept(existing / "results.csv");
  std::string content;
  std::getline(kept, content);
  EXPECT_EQ(content, "precious");
}

TEST(Cli, DumpRefusesToOverwrite) {
  const auto existing = testing::fresh_temp_path("existing-dump");
  std::filesystem::create_directories(existing);
  expect_usage_error("dump --workload trainer2/lior_step --out " + existing.string(), "already exists");
}

TEST(Cli, ListShowsEveryBackendWithAvailability) {
  const auto result = run_phasebench("list");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("trainer2/lior_step"), std::string::npos);
  EXPECT_NE(result.output.find("reference"), std::string::npos);
}

}  // namespace
}  // namespace pb
