// The report in a real browser: headless Chromium (Debian's chromium, installed by
// ci/install-deps.sh) opens the report of the fixture runs, logs no console message (no script
// error, no failed fetch) and renders a screenshot of the expected size with content on it; so does
// a report with approximate phases and per-step rollout errors.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "crafted_runs.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;

std::string chromium_path() {
  std::string path = testing::run_command("command -v chromium || command -v chromium-browser").output;
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  return path;
}

// One headless Chromium that touches nothing but the file: no network services, a fresh profile.
// With --enable-logging, console messages appear in its output as ":CONSOLE" lines.
testing::ProcessResult open_in_chromium(const std::string& chromium, const fs::path& page, const std::string& action) {
  const fs::path profile = testing::fresh_temp_path("chromium-profile");
  const auto result = testing::run_command(
      chromium + " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                 " --disable-background-networking --disable-component-update --disable-sync"
                 " --enable-logging=stderr --v=0 --user-data-dir=" + profile.string() + " " + action + " file://" +
      page.string() + " 2>&1");
  fs::remove_all(profile);
  return result;
}

std::vector<std::string> console_messages(const std::string& log) {
  std::vector<std::string> messages;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) messages.push_back(line);
  return messages;
}

struct PngSize {
  uint32_t width = 0, height = 0;
};

// Width and height from the IHDR chunk: bytes 16-23, big-endian, after the 8-byte signature.
PngSize png_size(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[24] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  if (!in || header[1] != 'P' || header[2] != 'N' || header[3] != 'G') return {};
  const auto big_endian = [&](int at) {
    return uint32_t(header[at]) << 24 | uint32_t(header[at + 1]) << 16 | uint32_t(header[at + 2]) << 8 | header[at + 3];
  };
  return {big_endian(16), big_endian(20)};
}

class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = chromium_path();
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed (bash ci/install-deps.sh installs it)";
    dir_ = testing::fresh_temp_path("report-browser");
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string chromium_;
  fs::path dir_;
};

// The detector itself: a page with a script error must be caught, or the test below proves nothing.
TEST_F(ReportInBrowser, AScriptErrorIsSeen) {
  const fs::path page = dir_ / "broken.html";
  std::ofstream(page) << "<!DOCTYPE html><html><body><p>x</p><script>no_such_function();</script></body></html>";
  const auto browser = open_in_chromium(chromium_, page, "--dump-dom");
  const auto messages = console_messages(browser.output);
  ASSERT_EQ(messages.size(), 1u) << browser.output;
  EXPECT_NE(messages[0].find("Uncaught ReferenceError"), std::string::npos) << messages[0];
}

// Opens `report` for a screenshot (expected size, content on it) and for its DOM, with no console
// message either time; returns the DOM.
std::string expect_renders_cleanly(const std::string& chromium, const fs::path& report, const fs::path& dir) {
  const fs::path screenshot = dir / (report.stem().string() + ".png");
  const auto shot = open_in_chromium(chromium, report, "--window-size=1280,2000 --screenshot=" + screenshot.string());
  EXPECT_EQ(shot.exit_code, 0) << shot.output;
  EXPECT_TRUE(console_messages(shot.output).empty()) << shot.output;
  if (!fs::exists(screenshot)) {
    ADD_FAILURE() << "no screenshot: " << shot.output;
    return "";
  }
  const PngSize size = png_size(screenshot);
  EXPECT_EQ(size.width, 1280u);
  EXPECT_EQ(size.height, 2000u);
  // A blank 1280x2000 page compresses to a few kilobytes; charts, tables and text do not.
  EXPECT_GT(fs::file_size(screenshot), 60u * 1024) << "the screenshot looks empty";

  const auto dom = open_in_chromium(chromium, report, "--dump-dom");
  EXPECT_TRUE(console_messages(dom.output).empty()) << dom.output;
  EXPECT_NE(dom.output.find("<h1>phasebench report</h1>"), std::string::npos) << "the browser did not parse the page";
  EXPECT_NE(dom.output.find("<svg class=\"chart roofline\""), std::string::npos);
  return dom.output;
}

TEST_F(ReportInBrowser, OpensWithoutConsoleMessagesAndRendersAScreenshot) {
  const fs::path report = dir_ / "report.html";
  const std::string data = std::string(PHASEBENCH_TESTS_DIR) + "/data/report/";
  const auto written = testing::run_phasebench("report " + data + "run-a " + data + "run-b --out " + report.string());
  ASSERT_EQ(written.exit_code, 0) << written.output;
  expect_renders_cleanly(chromium_, report, dir_);
}

// A rollout ladder whose later phases are approximate (one failing), with per-step errors that
// hold a zero, an empty entry and a "nan", as `run` may write them.
void write_rollout_run(const fs::path& dir) {
  std::vector<ResultRow> rows;
  std::vector<SampleRow> samples;  // each timed row's one repetition: a run's files agree
  for (int phase = 0; phase < 4; ++phase) {
    testing::CraftedRow crafted{"kokkos", phase, "phase" + std::to_string(phase), 4.0 / (phase + 1)};
    crafted.status = phase == 3 ? Status::Fail : Status::Ok;  // a failed approximate row still has its step errors drawn
    ResultRow row = testing::result_row({}, crafted, {crafted.median_ms});
    row.suite = "spinlock";
    row.workload = "cnn_rollout_residual";
    row.exact = phase < 2;
    row.speedup_vs_reference = 2.0 * (phase + 1);
    row.step_output = "trajectory";
    row.step_rel_l2_err = row.exact ? "0;1e-7;2e-7;;4e-7" : "0;3e-3;6e-3;nan;2e-2";
    row.step_budget = row.exact ? "" : "0;1e-2;2e-2;4e-2;8e-2";
    rows.push_back(row);
    if (row.status == Status::Ok)
      samples.push_back({row.workload, row.size, row.backend, row.device, row.phase, 0, row.median_ms, row.suite});
  }
  fs::create_directories(dir);
  std::ofstream(dir / "results.csv") << results_csv(rows);
  std::ofstream(dir / "samples.csv") << samples_csv(samples);
}

TEST_F(ReportInBrowser, ApproximatePhasesAndStepErrorsRenderWithoutConsoleMessages) {
  const fs::path rollout = dir_ / "rollout-run", report = dir_ / "report.html";
  write_rollout_run(rollout);
  const std::string data = std::string(PHASEBENCH_TESTS_DIR) + "/data/report/";
  const auto written = testing::run_phasebench("report " + data + "run-a " + rollout.string() + " --out " + report.string());
  ASSERT_EQ(written.exit_code, 0) << written.output;
  const std::string dom = expect_renders_cleanly(chromium_, report, dir_);
  EXPECT_NE(dom.find("<svg class=\"chart step-errors\""), std::string::npos);
  EXPECT_NE(dom.find("<span class=\"approx\""), std::string::npos);
}

}  // namespace
}  // namespace pb
