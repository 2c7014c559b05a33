// JUnit XML of `compare --junit` and the writer's escaping, each file read back by
// tests/junit_report_test.py --check, which parses it as GitLab and Jenkins do (xml.etree) and
// checks its counts. `verify --junit` end to end is that script's own test (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "crafted_runs.hpp"
#include "results/junit.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::CraftedRun;
using testing::run_command;
using testing::run_phasebench;

struct ParsedCase {
  std::string outcome, classname, name, message;
};

// The cases of the JUnit file at `path` as the parser read them; a failed structure check fails
// the test.
std::vector<ParsedCase> parsed(const fs::path& path) {
  const auto checked = run_command("python3 " + std::string(PHASEBENCH_TESTS_DIR) + "/junit_report_test.py --check " +
                                   path.string() + " 2>&1");
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  std::vector<ParsedCase> cases;
  std::istringstream lines(checked.output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
    fields.resize(4);
    cases.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return cases;
}

const ParsedCase& case_named(const std::vector<ParsedCase>& cases, const std::string& name) {
  for (const ParsedCase& c : cases)
    if (c.name == name) return c;
  static const ParsedCase none{"(no such case)", "", "", ""};
  ADD_FAILURE() << "no case named " << name;
  return none;
}

// ---- the writer ----------------------------------------------------------------------------------

TEST(JunitReport, EscapesMarkupAndReplacesWhatXmlForbids) {
  junit::Report report("phasebench <test>");
  junit::TestCase failing{"suite/a&b", "x<y>\"z\" 'q'",
                          0.5,         junit::Outcome::Failed,
                          "FAIL",      "err 3 > 1e-4 & bell\x07 and a stray byte \xff"};
  report.add("suite", failing);
  report.add("suite", {"suite/ok", "fine", 0.25});
  const fs::path path = testing::fresh_temp_path("junit-escape.xml");
  junit::write(report, path, "--junit");
  const std::string xml = testing::read_text(path);
  EXPECT_NE(xml.find("suite/a&amp;b"), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x07'), std::string::npos) << "a control character XML 1.0 forbids";
  EXPECT_EQ(xml.find('\xff'), std::string::npos) << "a byte that is not UTF-8";
  const std::vector<ParsedCase> cases = parsed(path);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].outcome, "failure");
  EXPECT_EQ(cases[0].classname, "suite/a&b");
  EXPECT_EQ(cases[0].name, "x<y>\"z\" 'q'");
  EXPECT_EQ(cases[0].message, "err 3 > 1e-4 & bell\xEF\xBF\xBD and a stray byte \xEF\xBF\xBD");
  EXPECT_EQ(cases[1].outcome, "passed");
  fs::remove(path);
}

TEST(JunitReport, ARowNameSplitsIntoSuiteClassAndName) {
  const junit::RowParts parts = junit::row_parts("trainer2/lior_step/small/kokkos/cpu/0_baseline");
  EXPECT_EQ(parts.suite, "trainer2");
  EXPECT_EQ(parts.classname, "trainer2/lior_step");
  EXPECT_EQ(parts.name, "small/kokkos/cpu/0_baseline");
}

// ---- compare -------------------------------------------------------------------------------------

// The crafted ladder again with kokkos/baseline 30% slower, batched_metrics now failing its check,
// fused_lior_spd skipped and a row the base lacks.
CraftedRun regressed_run() {
  CraftedRun run;
  run.rows = testing::ladder_rows();
  run.noise_seed = 2;
  run.run_id = "20261121T010000Z-crafted";
  testing::find_row(run, "kokkos", "baseline").median_ms *= 1.3;
  testing::find_row(run, "kokkos", "batched_metrics").status = Status::Fail;
  testing::find_row(run, "kokkos", "fused_lior_spd").status = Status::Skipped;
  run.rows.push_back({"kokkos", 4, "added_later", 1.0});
  return run;
}

TEST(JunitCompare, ARegressionABrokenRowAndRowsNotJudged) {
  CraftedRun base_run;
  base_run.rows = testing::ladder_rows();
  const fs::path base = testing::write_run("junit-base", base_run),
                 fresh = testing::write_run("junit-new", regressed_run());
  const fs::path report = testing::fresh_temp_path("compare.xml");
  const std::string command = "compare " + base.string() + " " + fresh.string();
  const auto plain = run_phasebench(command);
  const auto with_junit = run_phasebench(command + " --junit " + report.string());
  EXPECT_EQ(with_junit.exit_code, 1) << with_junit.output;
  EXPECT_EQ(with_junit.output, plain.output) << "--junit changes nothing on the terminal";

  const std::vector<ParsedCase> cases = parsed(report);
  ASSERT_EQ(cases.size(), 5u);
  const ParsedCase& regression = case_named(cases, "small/kokkos/cpu/0_baseline");
  EXPECT_EQ(regression.classname, "trainer2/lior_step");
  EXPECT_EQ(regression.outcome, "failure");
  // "+30.0% slower [+29.1%, +31.2%], Holm p 0.00012, threshold 5%"
  EXPECT_TRUE(std::regex_search(
      regression.message,
      std::regex(R"(^\+3\d\.\d% slower \[\+\d+\.\d%, \+\d+\.\d%\], Holm p [0-9.e-]+, threshold 5%$)")))
      << regression.message;
  const ParsedCase& broken = case_named(cases, "small/kokkos/cpu/1_batched_metrics");
  EXPECT_EQ(broken.outcome, "failure");
  EXPECT_EQ(broken.message, "OK -> FAIL: output s: rel_l2_err 0.5 > tolerance 1e-05");
  const ParsedCase& skipped = case_named(cases, "small/kokkos/cpu/3_fused_lior_spd");
  EXPECT_EQ(skipped.outcome, "skipped");
  EXPECT_EQ(skipped.message.rfind("not timed: OK -> SKIPPED", 0), 0u) << skipped.message;
  const ParsedCase& added = case_named(cases, "small/kokkos/cpu/4_added_later");
  EXPECT_EQ(added.outcome, "skipped");
  EXPECT_EQ(added.message.rfind("new: ", 0), 0u) << added.message;
  EXPECT_EQ(case_named(cases, "small/reference/cpu/0_serial_fp32").outcome, "passed");
  fs::remove_all(base);
  fs::remove_all(fresh);
  fs::remove(report);
}

TEST(JunitCompare, AReportThatCannotBeWrittenExits2) {
  CraftedRun run;
  run.rows = testing::ladder_rows();
  const fs::path base = testing::write_run("junit-unwritable", run);
  const fs::path folder = testing::fresh_temp_path("junit-folder");
  fs::create_directories(folder);
  for (const fs::path& target : {folder / "no-such-folder" / "compare.xml", folder}) {
    const auto result =
        run_phasebench("compare " + base.string() + " " + base.string() + " --junit " + target.string());
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("--junit " + target.string()), std::string::npos) << result.output;
  }
  fs::remove_all(base);
  fs::remove_all(folder);
}

}  // namespace
}  // namespace pb
