// Every reader's validation rule, as a crafted run directory broken in one way, refused by every
// command that reads runs (compare, report, merge, baseline record): exit 2, and a message naming
// the file and, where the file has them, its line and column.

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "crafted_runs.hpp"
#include "phasebench/cli.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::CraftedRun;

// ---- editing a crafted run's files ---------------------------------------------------------------

std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const fs::path& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const std::string& line : lines) out << line << '\n';
}

std::vector<std::string> cells_of(const std::string& line) {
  EXPECT_EQ(line.find('"'), std::string::npos) << "the crafted files quote nothing: " << line;
  std::vector<std::string> cells;
  std::istringstream in(line + ",");
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

std::string joined(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + cells[i];
  return line;
}

// Sets `column` of line `line_number` (1: the header) of the CSV file `name` in `dir`.
void set_cell(const fs::path& dir, const std::string& name, size_t line_number, const std::string& column,
              const std::string& value) {
  std::vector<std::string> lines = lines_of(dir / name);
  const std::vector<std::string> header = cells_of(lines.at(0));
  std::vector<std::string> cells = cells_of(lines.at(line_number - 1));
  const auto at = std::find(header.begin(), header.end(), column);
  ASSERT_NE(at, header.end()) << column;
  cells.at(at - header.begin()) = value;
  lines[line_number - 1] = joined(cells);
  write_lines(dir / name, lines);
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// ---- the rules -----------------------------------------------------------------------------------

// The crafted ladder (crafted_runs.hpp): results.csv line 2 the reference, 3 kokkos phase 0,
// 4 phase 1, 5 phase 3; samples.csv 12 repetitions each, kokkos phase 0 on lines 14 to 25.
struct BrokenRun {
  std::string name;
  std::function<void(const fs::path&)> damage;
  std::vector<std::string> mentions;  // "{dir}" stands for the run directory
};

std::string results(size_t line) { return "{dir}/results.csv line " + std::to_string(line); }
std::string samples(size_t line) { return "{dir}/samples.csv line " + std::to_string(line); }

BrokenRun results_cell(const std::string& name, size_t line, const std::string& column, const std::string& value,
                       const std::string& says) {
  return {name, [=](const fs::path& dir) { set_cell(dir, "results.csv", line, column, value); },
          {results(line) + ", column " + column, says}};
}

BrokenRun samples_cell(const std::string& name, size_t line, const std::string& column, const std::string& value,
                       const std::string& says) {
  return {name, [=](const fs::path& dir) { set_cell(dir, "samples.csv", line, column, value); },
          {samples(line) + ", column " + column, says}};
}

BrokenRun renamed_column(const std::string& name, const std::string& file, const std::string& column) {
  return {name, [=](const fs::path& dir) { set_cell(dir, file, 1, column, column + "_renamed"); },
          {"{dir}/" + file, "missing column '" + column + "'"}};
}

// Line `line_number` of `file` appended again at its end.
BrokenRun line_repeated(const std::string& name, const std::string& file, size_t line_number,
                        std::vector<std::string> mentions) {
  return {name,
          [=](const fs::path& dir) {
            std::vector<std::string> lines = lines_of(dir / file);
            lines.push_back(lines.at(line_number - 1));
            write_lines(dir / file, lines);
          },
          std::move(mentions)};
}

std::vector<BrokenRun> broken_runs() {
  return {
      results_cell("UnknownStatus", 3, "status", "BOGUS", "unknown status 'BOGUS'"),
      results_cell("LowerCaseStatus", 3, "status", "ok", "unknown status 'ok'"),
      results_cell("NanTime", 3, "median_ms", "nan", "'nan' is not a number"),
      results_cell("NegativeTime", 3, "min_ms", "-5", "'-5' is not a time"),
      results_cell("InfiniteTime", 3, "max_ms", "inf", "'inf' is not a time"),
      results_cell("NegativeReps", 4, "reps", "-3", "'-3' is not a count"),
      results_cell("NegativeHostSyncs", 3, "host_syncs_per_iter", "-1", "'-1' is not a count"),
      results_cell("NegativeError", 3, "rel_l2_err", "-0.5", "'-0.5' is not an error"),
      results_cell("NegativeSpeedup", 4, "speedup_vs_prev", "-2", "'-2' is not a rate or ratio"),
      results_cell("PhaseIndexOverflow", 3, "phase_index", "99999999999", "out of range"),
      results_cell("SeedOverflow", 3, "seed", "99999999999999999999999", "out of range"),
      results_cell("TrailingGarbage", 3, "threads", "4x", "'4x' is not"),
      results_cell("UnknownBackend", 3, "backend", "kokos", "'kokos' is not a backend of this phasebench"),
      results_cell("UnknownSize", 3, "size", "medium", "'medium' is not a size"),
      results_cell("BadDevice", 3, "device", "CPU 0", "'CPU 0' is not a device name"),
      results_cell("NotABoolean", 3, "exact", "maybe", "'maybe' is not true or false"),
      results_cell("EmptyWorkload", 3, "workload", "", "cannot be empty"),
      samples_cell("NanSample", 14, "ms", "nan", "'nan' is not a number"),
      samples_cell("NegativeSample", 14, "ms", "-5", "'-5' is not a time"),
      samples_cell("NegativeRepetition", 14, "rep", "-1", "'-1' is not a count"),
      samples_cell("SampleOfUnknownBackend", 14, "backend", "tensorflow", "'tensorflow' is not a backend"),
      line_repeated("DuplicateRow", "results.csv", 3, {results(6), "already appeared on line 3"}),
      line_repeated("DuplicateSample", "samples.csv", 14, {samples(50), "appears twice"}),
      {"SamplesWithoutARow",
       [](const fs::path& dir) { set_cell(dir, "results.csv", 3, "phase", "renamed"); },
       {samples(14), "which has no row in {dir}/results.csv"}},
      {"RowWithoutItsSamples",
       [](const fs::path& dir) {
         std::vector<std::string> lines = lines_of(dir / "samples.csv");
         lines.erase(lines.begin() + 13, lines.begin() + 25);
         write_lines(dir / "samples.csv", lines);
       },
       {results(3), "has 12 repetitions but {dir}/samples.csv holds 0"}},
      {"RunIdOfAnotherRun",
       [](const fs::path& dir) { set_cell(dir, "results.csv", 4, "run_id", "20261122T000000Z-other"); },
       {results(4) + ", column run_id", "{dir}/machine.json is run"}},
      renamed_column("ResultsWithoutStatus", "results.csv", "status"),
      renamed_column("SamplesWithoutTimes", "samples.csv", "ms"),
      {"MachineJsonMalformed", [](const fs::path& dir) { write_text(dir / "machine.json", "{\"run_id\": \"x\",\n  42}"); },
       {"{dir}/machine.json is not valid JSON", "line 2, column"}},
      {"MachineJsonNotAnObject", [](const fs::path& dir) { write_text(dir / "machine.json", "[1, 2]"); },
       {"{dir}/machine.json: expected a JSON object, found array"}},
      {"FingerprintNotAString",
       [](const fs::path& dir) { write_text(dir / "machine.json", R"({"fingerprint": 42, "run_id": "20261121T000000Z-crafted"})"); },
       {"{dir}/machine.json: \"fingerprint\" is number, expected a string"}},
      {"CatalogMalformed", [](const fs::path& dir) { write_text(dir / "catalog.json", "{\"schema\": 1,\n\"workloads\": [}"); },
       {"{dir}/catalog.json is not valid JSON", "line 2, column"}},
      {"CatalogWrongType",
       [](const fs::path& dir) { write_text(dir / "catalog.json", R"({"schema": "one", "workloads": []})"); },
       {"{dir}/catalog.json is not a phasebench catalog", "type must be number"}},
      {"RowOfAPhaseTheCatalogLacks",
       [](const fs::path& dir) { set_cell(dir, "results.csv", 5, "phase_index", "2"); },
       {results(5), "is phase 2, which {dir}/catalog.json does not list"}},
      {"RowNamingAnotherPhase",
       [](const fs::path& dir) {
         set_cell(dir, "results.csv", 4, "phase", "fused");
         for (size_t line = 26; line < 38; ++line) set_cell(dir, "samples.csv", line, "phase", "fused");
       },
       {results(4) + ", column phase: 'fused'", "names phase 1 of trainer2/lior_step 'batched_metrics'"}},
  };
}

// ---- the commands --------------------------------------------------------------------------------

struct Command {
  std::string name;
  std::function<std::string(const fs::path& broken)> arguments;
};

fs::path good_run() {
  CraftedRun run;
  run.rows = testing::ladder_rows();
  run.catalog = testing::crafted_catalog();
  return testing::write_run("good", run);
}

std::vector<Command> commands() {
  return {
      {"compare", [](const fs::path& broken) { return "compare " + good_run().string() + " " + broken.string(); }},
      {"report",
       [](const fs::path& broken) {
         return "report " + broken.string() + " --out " + testing::fresh_temp_path("report").string() + ".html";
       }},
      {"merge",
       [](const fs::path& broken) {
         return "merge " + broken.string() + " --out " + testing::fresh_temp_path("merged").string();
       }},
      {"baseline_record",
       [](const fs::path& broken) {
         return "baseline record " + broken.string() + " --root " + testing::fresh_temp_path("baselines").string();
       }},
  };
}

std::string with_dir(std::string text, const fs::path& dir) {
  for (size_t at; (at = text.find("{dir}")) != std::string::npos;) text.replace(at, 5, dir.string());
  return text;
}

// The command line run in this process: 37 rules times 4 commands would start the executable 148
// times.
using testing::run_in_process;

class BadInput : public ::testing::TestWithParam<std::tuple<BrokenRun, Command>> {};

TEST_P(BadInput, IsRefusedWithExitTwoNamingWhereItIs) {
  const auto& [broken, command] = GetParam();
  const fs::path dir = good_run();
  broken.damage(dir);
  const auto result = run_in_process(command.arguments(dir));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  for (const std::string& mention : broken.mentions)
    EXPECT_NE(result.output.find(with_dir(mention, dir)), std::string::npos)
        << "should say '" << with_dir(mention, dir) << "':\n" << result.output;
}

INSTANTIATE_TEST_SUITE_P(EveryRuleEveryCommand, BadInput, ::testing::Combine(::testing::ValuesIn(broken_runs()),
                                                                             ::testing::ValuesIn(commands())),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
                         });

// The crafted run unbroken is accepted by all four: the refusals above are the damage's.
TEST(BadInput, TheUndamagedRunIsAccepted) {
  for (const Command& command : commands()) {
    const auto result = run_in_process(command.arguments(good_run()));
    EXPECT_EQ(result.exit_code, 0) << command.name << ":\n" << result.output;
  }
}

// One rule through the executable itself, so the in-process runs above stand for what a user sees.
TEST(BadInput, TheExecutableRefusesAsRunCliDoes) {
  const fs::path dir = good_run();
  set_cell(dir, "results.csv", 3, "status", "BOGUS");
  const auto result = testing::run_phasebench("compare " + good_run().string() + " " + dir.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find((dir / "results.csv").string() + " line 3, column status: unknown status 'BOGUS'"),
            std::string::npos) << result.output;
}

}  // namespace
}  // namespace pb
