// `phasebench report`: the page's structure against a golden outline for a fixed small run
// (tests/data/report: two real --quick runs of this harness), the numbers it shows against the
// rows it was given, the claim verdicts, approximate phases and per-step rollout errors (crafted
// rows), self-containment, and the command's error paths.
//
// After a deliberate change of the page, rewrite the goldens with
//   PHASEBENCH_UPDATE_GOLDEN=1 ctest -R ReportGolden      (then review the diff)

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

#include "phasebench/results.hpp"
#include "crafted_runs.hpp"
#include "process.hpp"
#include "report/report.hpp"
#include "report/report_html.hpp"
#include "report/report_sections.hpp"
#include "report/report_svg.hpp"
#include "results/results_model.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;

const fs::path kData = fs::path(PHASEBENCH_TESTS_DIR) / "data" / "report";
const std::string kRunA = (kData / "run-a").string();
const std::string kRunB = (kData / "run-b").string();

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string strip_tags(const std::string& html) { return std::regex_replace(html, std::regex("<[^>]*>"), ""); }

// The page's skeleton in document order: headings with their text, each chart with how many
// result points, samples and intervals it draws, each table with its columns and rows, each
// collapsible part's summary. Numbers and styling are left out: they are checked elsewhere.
std::string outline(const std::string& html) {
  std::ostringstream out;
  const std::regex tag(R"(<(h[1-3]|svg|table|summary)\b([^>]*)>)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    const size_t start = static_cast<size_t>(it->position() + it->length());
    const size_t end = html.find("</" + name + ">", start);
    const std::string body = html.substr(start, end - start);
    if (name == "svg") {
      std::smatch css;
      const std::string attributes = (*it)[2];
      std::regex_search(attributes, css, std::regex("class=\"([^\"]*)\""));
      out << "svg " << css[1] << ": points " << count(body, "class=\"point\"") << ", samples "
          << count(body, "class=\"sample\"") << ", intervals " << count(body, "class=\"interval\"") / 3 << "\n";
    } else if (name == "table") {
      out << "table: columns " << count(body, "<th>") << ", rows " << count(body, "<tr>") - 1 << "\n";
    } else {
      out << name << ": " << strip_tags(body) << "\n";
    }
  }
  return out.str();
}

void expect_golden(const std::string& actual, const std::string& golden_name) {
  const fs::path golden = kData / golden_name;
  if (std::getenv("PHASEBENCH_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << golden << ": review the diff";
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing (PHASEBENCH_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(actual, read_file(golden)) << "the report's structure changed; if on purpose, rewrite the golden";
}

std::string render_runs(const std::vector<std::string>& paths) { return report::render(report::load_runs(paths)); }

TEST(ReportGolden, OneRun) { expect_golden(outline(render_runs({kRunA})), "outline-one-run.txt"); }

TEST(ReportGolden, TwoRunsSideBySide) { expect_golden(outline(render_runs({kRunA, kRunB})), "outline-two-runs.txt"); }

TEST(Report, IsTheSamePageForTheSameRuns) { EXPECT_EQ(render_runs({kRunA, kRunB}), render_runs({kRunA, kRunB})); }

TEST(Report, FetchesNothingAndRunsNoScript) {
  const std::string html = render_runs({kRunA, kRunB});
  for (const char* forbidden : {"<script", "http://", "https://", " src=", "url(", "@import", "<link", "<iframe", "<img", "<object"})
    EXPECT_EQ(html.find(forbidden), std::string::npos) << forbidden;
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<style>"), std::string::npos) << "the style is inline";
}

// The fixture has timed rows, an ERROR row (run B), SKIPPED cuda rows and a workload with only
// its reference: each must show up where a reader looks for it.
TEST(Report, EveryTimedRowIsAPointAndEveryOtherRowIsListedWithItsReason) {
  const std::string html = render_runs({kRunA, kRunB});
  int timed = 0, listed = 0;
  for (const std::string& path : {kRunA, kRunB}) {
    for (const ResultRow& row : read_results_csv(path + "/results.csv")) {
      const std::string point_title = "<title>" + report::escape(row.suite + "/" + row.workload + " \xC2\xB7 " + row.backend +
                                                                 "/" + row.device + " \xC2\xB7 phase " +
                                                                 std::to_string(row.phase_index) + " " + row.phase);
      if (row.status == Status::Ok) {
        ++timed;
        EXPECT_NE(html.find(point_title + "\nmedian " + report::format_ms(row.median_ms)), std::string::npos)
            << "no point with the median of " << row.backend << "/" << row.phase;
      } else {
        ++listed;
        ASSERT_FALSE(row.reason.empty());
        const std::string problem_row = "<td>" + report::escape(row.suite + "/" + row.workload + "/" + row.size + "/" +
                                                                row.backend + "/" + row.device + "/" +
                                                                std::to_string(row.phase_index) + "_" + row.phase) +
                                        "</td><td class=\"wrap\">" + report::escape(row.reason) + "</td>";
        EXPECT_NE(html.find(problem_row), std::string::npos) << "not in the problems table: " << row.reason;
      }
    }
  }
  EXPECT_GT(timed, 5);
  EXPECT_GT(listed, 0) << "the fixture should hold rows that did not run";
}

TEST(Report, ShowsTheMachinesAndTheirRooflines) {
  const std::string html = render_runs({kRunA});
  std::ifstream in(kRunA + "/machine.json");
  const nlohmann::json machine = nlohmann::json::parse(in);
  EXPECT_NE(html.find(report::escape(machine["cpu"]["model"].get<std::string>())), std::string::npos);
  EXPECT_NE(html.find(machine["fingerprint"].get<std::string>()), std::string::npos);
  const double bandwidth = machine["roofline"]["bandwidth_gb_per_s"];
  const double peak = machine["roofline"]["peak_gflop_per_s"];
  EXPECT_NE(html.find(">" + report::format_number(bandwidth) + " GB/s</text>"), std::string::npos) << "bandwidth ceiling";
  EXPECT_NE(html.find(">" + report::format_number(peak) + " GFLOP/s fp32"), std::string::npos) << "compute ceiling";
}

// A run whose machine was busy: the machines table says so and a section names each
// disturbed row with why; a quiet run has no such section.
TEST(Report, NamesTheRowsOtherWorkDisturbedAndHowBusyTheMachineWas) {
  EXPECT_EQ(render_runs({kRunA}).find("id=\"disturbed\""), std::string::npos) << "no disturbed row, no section";
  const fs::path busy = fresh_temp_path("report-busy-run");
  fs::copy(kRunA, busy, fs::copy_options::recursive);
  std::vector<ResultRow> rows = read_results_csv((busy / "results.csv").string());
  auto timed = std::find_if(rows.begin(), rows.end(), [](const ResultRow& row) { return row.status == Status::Ok; });
  ASSERT_NE(timed, rows.end());
  timed->disturbed = "other work used 1.2 cores of 2 while it ran on 2 threads";
  std::ofstream(busy / "results.csv") << results_csv(rows);
  nlohmann::json machine = nlohmann::json::parse(std::ifstream(busy / "machine.json"));
  machine["machine_state"] = {{"cores_to_itself", false},
                              {"disturbed_rows", 1},
                              {"stages", {{"timing", {{"others_cores", 1.2}, {"seconds", 10}}}}}};
  std::ofstream(busy / "machine.json") << machine.dump();
  const std::string html = render_runs({busy.string()});
  const size_t section = html.find("id=\"disturbed\"");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find(report::escape(results::row_name(*timed)), section), std::string::npos);
  EXPECT_NE(html.find("other work used 1.2 cores of 2 while it ran on 2 threads", section), std::string::npos);
  EXPECT_NE(html.find("busy: other work used 1.2 cores while timing, 1 row disturbed"), std::string::npos);
  fs::remove_all(busy);
}

// A run that sweeps a workload's size: the scaling section charts each backend's fastest phase
// against its working set with the cache levels and the attainable bandwidth, and tables the
// growth fits and the crossovers; a run of one size has no such section.
TEST(Report, ASweepGetsAScalingSectionWithCacheLevelsFitsAndCrossovers) {
  EXPECT_EQ(render_runs({kRunA}).find("id=\"scaling\""), std::string::npos) << "one size, no section";
  const fs::path sweep = fresh_temp_path("report-sweep-run");
  fs::copy(kRunA, sweep, fs::copy_options::recursive);
  std::vector<ResultRow> rows = read_results_csv((sweep / "results.csv").string());
  // lior_step's kokkos and reference rows again at 4x and 16x the work (the same rates): phase 3,
  // slower than phase 1 at the first size, is twice as fast as it at 16x.
  std::vector<SampleRow> samples = read_samples_csv((sweep / "samples.csv").string());
  const size_t named = rows.size();
  for (const double scale : {4.0, 16.0})
    for (size_t i = 0; i < named; ++i) {
      ResultRow row = rows[i];
      if (row.workload != "lior_step" || row.status != Status::Ok ||
          (row.backend != "kokkos" && row.backend != "reference"))
        continue;
      row.size = format_number(scale) + "x";
      row.scale = scale;
      for (double* ms : {&row.median_ms, &row.min_ms, &row.max_ms, &row.ci_low_ms, &row.ci_high_ms}) *ms *= scale;
      if (row.backend == "kokkos" && row.phase_index == 3 && scale == 16) {
        const double faster = 0.5 * 16 * 0.000746030651 / row.median_ms;
        for (double* ms : {&row.median_ms, &row.min_ms, &row.max_ms, &row.ci_low_ms, &row.ci_high_ms}) *ms *= faster;
        row.gb_per_s /= faster;
        row.gflop_per_s /= faster;
      }
      rows.push_back(row);
      for (int rep = 0; rep < row.reps; ++rep) {  // each repetition at the median: the rows' samples
        SampleRow sample{row.workload, row.size, row.backend, row.device, row.phase, rep, row.median_ms};
        sample.suite = row.suite;
        samples.push_back(sample);
      }
    }
  std::ofstream(sweep / "results.csv") << results_csv(rows);
  std::ofstream(sweep / "samples.csv") << samples_csv(samples);
  nlohmann::json machine = nlohmann::json::parse(std::ifstream(sweep / "machine.json"));
  machine["roofline"]["caches"] = {
      {{"name", "L1d"}, {"capacity_bytes", 65536}, {"working_set_bytes", 32768}, {"gb_per_s", 900}},
      {{"name", "L2"}, {"capacity_bytes", 2097152}, {"working_set_bytes", 131072}, {"gb_per_s", 300}}};
  std::ofstream(sweep / "machine.json") << machine.dump();
  const std::string html = render_runs({sweep.string()});
  const size_t section = html.find("id=\"scaling\"");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("Run A: trainer2/lior_step", section), std::string::npos);
  EXPECT_NE(html.find(">attainable<", section), std::string::npos);
  EXPECT_NE(html.find(">L2 2.06 MiB</text>", section), std::string::npos) << "L1d and L2 summed";
  EXPECT_NE(html.find("time grows as n^p", section), std::string::npos);
  EXPECT_NE(html.find("kokkos/cpu 3 ", section), std::string::npos);
  EXPECT_NE(html.find("faster from ", section), std::string::npos) << "phase 3 against phase 1";
  EXPECT_NE(html.find("href=\"#scaling\""), std::string::npos) << "linked from the navigation";
  fs::remove_all(sweep);
}

// A run of one size at two thread counts (run --threads 1,2) gets the section too: no working-set
// chart (one size), the speedup-against-threads chart and its table.
TEST(Report, ARunAtTwoThreadCountsGetsTheThreadChart) {
  const fs::path run = fresh_temp_path("report-threads-run");
  fs::copy(kRunA, run, fs::copy_options::recursive);
  std::vector<ResultRow> rows = read_results_csv((run / "results.csv").string());
  std::vector<SampleRow> samples = read_samples_csv((run / "samples.csv").string());
  for (SampleRow& sample : samples)  // the fixture's samples predate the threads column: each its row's
    for (const ResultRow& row : rows)
      if (row.workload == sample.workload && row.backend == sample.backend && row.phase == sample.phase &&
          row.device == sample.device && row.size == sample.size)
        sample.threads = row.threads;
  const size_t measured = rows.size();
  for (size_t i = 0; i < measured; ++i) {
    ResultRow row = rows[i];
    if (row.workload != "lior_step" || row.status != Status::Ok || row.backend != "kokkos") continue;
    row.threads *= 2;  // 1.6 times as fast on twice the threads: 80% efficiency
    for (double* ms : {&row.median_ms, &row.min_ms, &row.max_ms, &row.ci_low_ms, &row.ci_high_ms}) *ms /= 1.6;
    rows.push_back(row);
    for (int rep = 0; rep < row.reps; ++rep) {
      SampleRow sample{row.workload, row.size, row.backend, row.device, row.phase, rep, row.median_ms};
      sample.suite = row.suite;
      sample.threads = row.threads;
      samples.push_back(sample);
    }
  }
  ASSERT_GT(rows.size(), measured);
  std::ofstream(run / "results.csv") << results_csv(rows);
  std::ofstream(run / "samples.csv") << samples_csv(samples);
  const std::string html = render_runs({run.string()});
  const size_t section = html.find("id=\"scaling\"");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("trainer2/lior_step: speedup against threads", section), std::string::npos);
  EXPECT_NE(html.find(">perfect scaling<", section), std::string::npos);
  EXPECT_NE(html.find(">80%<", section), std::string::npos) << "the threads table's efficiency";
  EXPECT_EQ(html.find("GB/s against working set", section), std::string::npos) << "one size: no such chart";
  fs::remove_all(run);
}

// ---- the numbers behind the page -----------------------------------------------------------------

ResultRow timed_row(const std::string& backend, int phase, double median, double vs_prev, double low, double high) {
  ResultRow row;
  row.suite = "s";
  row.workload = "w";
  row.size = "small";
  row.backend = backend;
  row.device = "cpu";
  row.phase_index = phase;
  row.phase = "p" + std::to_string(phase);
  row.status = Status::Ok;
  row.median_ms = median;
  row.speedup_vs_prev = vs_prev;
  row.speedup_vs_prev_ci_low = low;
  row.speedup_vs_prev_ci_high = high;
  return row;
}

// The catalog of the crafted workload s/w: phase i claims claims[i] over phase i - 1 ({NaN, NaN}:
// nothing), as a run's catalog.json would.
catalog::Catalog claims_catalog(const std::vector<std::pair<double, double>>& claims) {
  catalog::WorkloadEntry entry;
  entry.name = "s/w";
  for (size_t i = 0; i < claims.size(); ++i) {
    PhaseInfo phase;
    phase.index = static_cast<int>(i);
    phase.name = "p" + std::to_string(i);
    std::tie(phase.claimed_min, phase.claimed_max) = claims[i];
    entry.phases.push_back(phase);
  }
  return testing::catalog_of(entry);
}

TEST(ReportClaims, OnlyAnIntervalWhollyOutsideTheClaimMissesOrBeatsIt) {
  using V = report::ClaimCheck::Verdict;
  const std::vector<ResultRow> rows{
      timed_row("b", 0, 10, kMissing, kMissing, kMissing),
      timed_row("b", 1, 5, 2.0, 1.9, 2.1),  // inside
      timed_row("b", 2, 4, 1.2, 1.1, 1.6),  // overlaps the low end: consistent
      timed_row("b", 3, 3, 1.2, 1.1, 1.3),  // wholly below
      timed_row("b", 4, 1, 3.5, 3.1, 3.9),  // wholly above
      timed_row("b", 5, 1, 1.0, 0.9, 1.1),  // no claim
  };
  const catalog::Catalog catalog =
      claims_catalog({{kMissing, kMissing}, {1.5, 3.0}, {1.5, 3.0}, {1.5, 3.0}, {1.5, 3.0}, {kMissing, kMissing}});
  const auto all = results::pointers_to(rows);
  EXPECT_EQ(report::check_claim(rows[0], all, catalog).verdict, V::NoClaim) << "phase 0 has nothing to gain over";
  EXPECT_EQ(report::check_claim(rows[1], all, catalog).verdict, V::Consistent);
  EXPECT_EQ(report::check_claim(rows[2], all, catalog).verdict, V::Consistent);
  EXPECT_EQ(report::check_claim(rows[3], all, catalog).verdict, V::Below);
  EXPECT_EQ(report::check_claim(rows[4], all, catalog).verdict, V::Above);
  EXPECT_EQ(report::check_claim(rows[5], all, catalog).verdict, V::NoClaim);
}

TEST(ReportClaims, ComeFromTheRunsCatalogNeverFromTheRowsOrTheRegistry) {
  using V = report::ClaimCheck::Verdict;
  std::vector<ResultRow> rows{timed_row("b", 0, 10, kMissing, kMissing, kMissing), timed_row("b", 1, 5, 2.0, 1.9, 2.1)};
  rows[1].claimed_min = 1.9;  // what an older run copied into its rows does not count
  rows[1].claimed_max = 2.1;
  const auto all = results::pointers_to(rows);
  EXPECT_EQ(report::check_claim(rows[1], all, claims_catalog({{kMissing, kMissing}, {3, 4}})).verdict, V::Below);
  const report::ClaimCheck unknown = report::check_claim(rows[1], all, catalog::Catalog{});
  EXPECT_EQ(unknown.verdict, V::Unknown) << "no catalog.json: the claim is unknown";
  EXPECT_EQ(unknown.claim_text(), "unknown");
}

TEST(ReportClaims, ASkippedPhaseMultipliesTheClaimsItJumpsOver) {
  const std::vector<ResultRow> rows{
      timed_row("full", 0, 10, kMissing, kMissing, kMissing),
      timed_row("full", 1, 5, 2.0, 1.9, 2.1),
      timed_row("full", 2, 2, 2.5, 2.4, 2.6),
      timed_row("skips", 0, 10, kMissing, kMissing, kMissing),
      timed_row("skips", 2, 4, 2.4, 2.3, 2.5),  // over phase 0: claims of 1 and 2 apply
  };
  const auto all = results::pointers_to(rows);
  const report::ClaimCheck check = report::check_claim(rows[4], all, claims_catalog({{kMissing, kMissing}, {2.0, 2.5}, {1.1, 1.2}}));
  EXPECT_EQ(check.first_phase, 1);
  EXPECT_EQ(check.last_phase, 2);
  EXPECT_DOUBLE_EQ(check.claimed_min, 2.0 * 1.1);
  EXPECT_DOUBLE_EQ(check.claimed_max, 2.5 * 1.2);
  EXPECT_EQ(check.verdict, report::ClaimCheck::Verdict::Consistent) << "2.4x is within 2.2x-3.0x, not above 1.2x";
  EXPECT_NE(check.claim_text().find("phases 1"), std::string::npos) << check.claim_text();
}

TEST(ReportClaims, AnIndexTheCatalogSkipsIsNoPhaseJumpedOver) {
  const std::vector<ResultRow> rows{timed_row("b", 0, 10, kMissing, kMissing, kMissing), timed_row("b", 1, 5, 2.0, 1.9, 2.1),
                                    timed_row("b", 3, 4, 1.2, 1.1, 1.3)};
  catalog::Catalog catalog = claims_catalog({{kMissing, kMissing}, {2.0, 2.5}, {kMissing, kMissing}, {1.1, 1.2}});
  auto& phases = catalog.workloads.at("s/w").phases;
  phases.erase(phases.begin() + 2);  // like trainer2/lior_step: phases 0, 1, 3
  const report::ClaimCheck check = report::check_claim(rows[2], results::pointers_to(rows), catalog);
  EXPECT_EQ(check.first_phase, 3);
  EXPECT_DOUBLE_EQ(check.claimed_min, 1.1);
  EXPECT_EQ(check.claim_text().find("phases"), std::string::npos) << check.claim_text();
}

TEST(ReportBest, EachLadderAtItsFastestTimedPhase) {
  std::vector<ResultRow> rows{timed_row("a", 0, 10, kMissing, kMissing, kMissing), timed_row("a", 1, 3, 3, 3, 3),
                              timed_row("a", 2, 4, 0.7, 0.7, 0.7), timed_row("b", 0, 8, kMissing, kMissing, kMissing)};
  rows.push_back(timed_row("b", 1, 1, 8, 8, 8));
  rows.back().status = Status::Fail;  // fast but wrong: never the best
  const auto best = report::best_phase_rows(results::pointers_to(rows));
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0]->backend, "a");
  EXPECT_EQ(best[0]->phase_index, 1);
  EXPECT_EQ(best[1]->backend, "b");
  EXPECT_EQ(best[1]->phase_index, 0);
}

// Issue 28's table: per workload the checked, non-reference row with the highest roofline %, its
// bound named, farthest from its bound first; a wrong row or the reference never stands for it.
TEST(ReportRoofline, EachWorkloadsCheckedVariantNearestToItsBoundFarthestFirst) {
  const auto row = [](const std::string& workload, const std::string& backend, int phase, double pct,
                      const std::string& bound) {
    ResultRow r = timed_row(backend, phase, 1.0, kMissing, kMissing, kMissing);
    r.workload = workload;
    r.roofline_pct = pct;
    r.bound = bound;
    return r;
  };
  report::Run run;
  run.letter = "A";
  run.data.rows = {row("near", "kokkos", 0, 20, "memory"), row("near", "kokkos", 3, 60, "L2"),
                   row("near", "reference", 0, 90, "memory"), row("near", "torch", 1, 95, "compute"),
                   row("far", "torch", 0, 10, "compute"), row("far", "onednn", 2, kMissing, "")};
  run.data.rows[3].status = Status::Fail;
  const std::string text = strip_tags(report::nearest_to_the_bound_table(run));
  const size_t far = text.find("s/far"), near = text.find("s/near");
  ASSERT_NE(far, std::string::npos) << text;
  ASSERT_NE(near, std::string::npos) << text;
  EXPECT_LT(far, near) << "farthest first";
  EXPECT_NE(text.find("kokkos 3_p3"), std::string::npos) << text;
  EXPECT_NE(text.find("L2"), std::string::npos) << text;
  EXPECT_NE(text.find("compute"), std::string::npos) << text;
  for (const char* never : {"95", "90", "reference", "onednn", "kokkos 0_p0"})
    EXPECT_EQ(text.find(never), std::string::npos) << never << " in " << text;
  EXPECT_EQ(count(report::nearest_to_the_bound_table(run), "<tr>"), 3u) << "a header and one row per workload";
}

TEST(ReportBest, AnApproximateWinIsShownBesideTheBestExactPhaseNeverAsIt) {
  std::vector<ResultRow> rows{timed_row("a", 0, 10, kMissing, kMissing, kMissing), timed_row("a", 1, 4, 2.5, 2.5, 2.5),
                              timed_row("a", 2, 2, 2, 2, 2), timed_row("b", 0, 8, kMissing, kMissing, kMissing),
                              timed_row("b", 1, 9, 0.9, 0.9, 0.9)};
  rows[2].exact = false;  // a: bf16 phase 2 is the fastest of all
  rows[4].exact = false;  // b: its approximate phase is slower than phase 0: not shown
  const auto best = report::best_phase_rows(results::pointers_to(rows));
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0]->phase_index, 1) << "the best exact phase of a comes first";
  EXPECT_TRUE(best[0]->exact);
  EXPECT_EQ(best[1]->phase_index, 2);
  EXPECT_FALSE(best[1]->exact);
  EXPECT_EQ(best[2]->backend, "b");
  EXPECT_EQ(best[2]->phase_index, 0);
}

TEST(ReportSteps, StepListsKeepTheirPositionsThroughEmptyAndBadEntries) {
  const std::vector<double> values = report::parse_step_values("0;1.5e-07;;nan; 2e-3 ;x1;inf;");
  ASSERT_EQ(values.size(), 8u);
  EXPECT_EQ(values[0], 0);
  EXPECT_DOUBLE_EQ(values[1], 1.5e-7);
  EXPECT_TRUE(std::isnan(values[2])) << "an empty entry is a gap";
  EXPECT_TRUE(std::isnan(values[3]));
  EXPECT_DOUBLE_EQ(values[4], 2e-3);
  EXPECT_TRUE(std::isnan(values[5])) << "not a number";
  EXPECT_TRUE(std::isinf(values[6]));
  EXPECT_TRUE(std::isnan(values[7])) << "a trailing ';' leaves an empty last entry";
  EXPECT_TRUE(report::parse_step_values("").empty());
  EXPECT_EQ(report::parse_step_values("3").size(), 1u);
}

std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// A rollout row as `run` writes it: errors start at zero (the exact initial state) and grow.
ResultRow rollout_row(const std::string& backend, int phase, bool exact, double median, double local_error) {
  ResultRow row = timed_row(backend, phase, median, kMissing, kMissing, kMissing);
  row.suite = "spinlock";
  row.workload = "cnn_rollout_autoregressive";
  row.exact = exact;
  row.speedup_vs_reference = 10 / median;
  row.step_output = "trajectory";
  std::string errors = "0", budget = exact ? "" : "0";
  for (int step = 1, growth = 1; step < 6; ++step, growth *= 2) {
    errors += ";" + shortest(local_error * growth);
    if (!exact) budget += ";" + shortest(1e-2 * growth);
  }
  row.step_rel_l2_err = errors;
  row.step_budget = budget;
  return row;
}

TEST(ReportSteps, ManyRowsAreThinnedToPhaseZeroBestExactAndBestApproximatePerLadder) {
  std::vector<ResultRow> rows;
  for (const char* backend : {"kokkos", "torch"})
    for (int phase = 0; phase < 7; ++phase) rows.push_back(rollout_row(backend, phase, phase < 2, 10.0 - phase, 1e-6));
  EXPECT_EQ(report::step_error_rows(results::pointers_to(rows), 14).size(), 14u) << "few enough: every row";
  const auto chosen = report::step_error_rows(results::pointers_to(rows), 12);
  ASSERT_EQ(chosen.size(), 6u);
  for (size_t i : {0u, 3u}) {
    EXPECT_EQ(chosen[i]->phase_index, 0);
    EXPECT_EQ(chosen[i + 1]->phase_index, 1) << "the fastest exact phase";
    EXPECT_EQ(chosen[i + 2]->phase_index, 6) << "the fastest approximate phase";
  }
}

// A spinlock-like run: the reference, an exact ladder whose bf16 phases are faster, a failing
// approximate row, and a workload without rollouts.
fs::path rollout_run() {
  std::vector<ResultRow> rows{rollout_row("reference", 0, true, 10, 1e-7), rollout_row("kokkos", 0, true, 20, 1e-7),
                              rollout_row("kokkos", 1, true, 5, 1e-7), rollout_row("kokkos", 2, false, 2, 1e-3),
                              rollout_row("kokkos", 3, false, 3, 2e-3), rollout_row("torch", 0, true, 8, 1e-7),
                              rollout_row("torch", 2, false, 6, 5e-2)};
  rows.back().status = Status::Fail;
  rows.back().reason = "trajectory step 3: rel_l2_err 0.4 > budget 0.08";
  rows.push_back(timed_row("kokkos", 0, 1, kMissing, kMissing, kMissing));  // s/w: no step errors
  const fs::path dir = fresh_temp_path("rollout-run");
  fs::create_directories(dir);
  std::ofstream(dir / "results.csv") << results_csv(rows);
  std::ofstream(dir / "samples.csv") << samples_csv({});
  return dir;
}

// The markup of the first <svg> of class `css_class` in the section of the rollout workload.
std::string rollout_svg(const std::string& html, const std::string& css_class) {
  const size_t start = html.find("<svg class=\"chart " + css_class + "\"", html.find("<section id=\"w-spinlock-"));
  if (start == std::string::npos) return "";
  return html.substr(start, html.find("</svg>", start) - start);
}

TEST(ReportApproximate, RowsAreBadgedInTablesAndRingedInCharts) {
  const fs::path run = rollout_run();
  const std::string html = render_runs({run.string()});
  EXPECT_NE(html.find(report::kApproximateMeaning), std::string::npos) << "the legend line";
  EXPECT_NE(html.find("<td>2 p2 <span class=\"approx\""), std::string::npos) << "badge in the phase tables";
  EXPECT_NE(html.find("/kokkos/cpu/3_p3 <span class=\"approx\""), std::string::npos) << "badge in the all-rows table";
  const std::string ladder = rollout_svg(html, "ladder");
  EXPECT_EQ(count(ladder, "class=\"approx-core\""), 2u + 1u) << "kokkos 2 and 3 ringed, and the legend's ring";
  EXPECT_NE(ladder.find("<polyline class=\"series dashed\""), std::string::npos) << "dashed into approximate phases";
  fs::remove_all(run);
}

TEST(ReportApproximate, BestPhaseShowsTheBestExactPhaseAndTheFasterApproximateOneApart) {
  const fs::path run = rollout_run();
  const std::string best = rollout_svg(render_runs({run.string()}), "best-phase");
  const size_t exact = best.find(">kokkos/cpu best exact</text>"), approximate = best.find(">kokkos/cpu best approx.</text>");
  ASSERT_NE(exact, std::string::npos) << best;
  ASSERT_NE(approximate, std::string::npos) << best;
  EXPECT_LT(exact, approximate);
  const std::string exact_line = best.substr(exact, approximate - exact);
  EXPECT_NE(exact_line.find("phase 1 p1</text>"), std::string::npos) << "kokkos' best exact phase is 1";
  EXPECT_NE(best.find("phase 2 p2 (approximate)</text>", approximate), std::string::npos);
  EXPECT_NE(best.find(">torch/cpu</text>"), std::string::npos) << "torch's approximate row failed: one line only";
  fs::remove_all(run);
}

TEST(ReportSteps, EachRolloutWorkloadHasAChartWithOneLinePerRowAndTheApproximateBudgets) {
  const fs::path run = rollout_run();
  const std::string html = render_runs({run.string()});
  const size_t section = html.find("<section id=\"step-errors\"><h2>Error per rollout step</h2>");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("<a href=\"#step-errors\">"), std::string::npos) << "linked from the navigation";
  EXPECT_EQ(count(html, "<svg class=\"chart step-errors\""), 1u) << "one chart: s/w has no rollout";
  const std::string chart = rollout_svg(html, "step-errors");
  EXPECT_EQ(count(chart, "<polyline class=\"series"), 7u) << "reference, kokkos 0-3, torch 0 and the failed torch 2";
  EXPECT_EQ(count(chart, "<polyline class=\"series dashed\""), 3u) << "the approximate rows";
  EXPECT_EQ(count(chart, "<polyline class=\"budget\""), 3u) << "each approximate row's budget";
  EXPECT_EQ(count(chart, "class=\"step-point\""), 7u * 5) << "steps 1-5 of every line; step 0 is zero";
  EXPECT_NE(chart.find(">torch/cpu 2 p2 approx.</text>"), std::string::npos) << "legend entry";
  EXPECT_NE(html.find("Step 0 has zero error in 7 of 7 lines"), std::string::npos) << "says why step 0 is missing";
  EXPECT_NE(html.find("<summary>Error per step of every row</summary>"), std::string::npos);
  fs::remove_all(run);
}

TEST(ReportText, NumbersAndTimesReadPlainly) {
  EXPECT_EQ(report::format_number(1000), "1000");
  EXPECT_EQ(report::format_number(1.5), "1.5");
  EXPECT_EQ(report::format_number(0.000123), "0.000123");
  EXPECT_EQ(report::format_number(12345678), "1.23e+07");
  EXPECT_EQ(report::format_number(kMissing), "-");
  EXPECT_EQ(report::format_ms(0.000805), "805 ns");
  EXPECT_EQ(report::format_ms(0.0123), "12.3 \xC2\xB5s");
  EXPECT_EQ(report::format_ms(4.56), "4.56 ms");
  EXPECT_EQ(report::format_ms(1234), "1.23 s");
  EXPECT_EQ(report::escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(ReportSvg, LogTicksAreDecadesOrFinerOnShortRanges) {
  const report::svg::Scale wide{1e-3, 1e3, 0, 100, true};
  EXPECT_EQ(wide.ticks(), (std::vector<double>{1e-3, 1e-2, 1e-1, 1, 10, 100, 1000}));
  const report::svg::Scale narrow{0.9, 1.8, 0, 100, true};
  const auto ticks = narrow.ticks();
  EXPECT_NE(std::find(ticks.begin(), ticks.end(), 1.0), ticks.end());
  EXPECT_GE(ticks.size(), 1u);
  EXPECT_DOUBLE_EQ(wide(1), 50);
}

// ---- catalogs: where the claims come from --------------------------------------------------------

// The fixture's runs were written before catalogs were saved: they render, with claims unknown.
TEST(ReportCatalog, ARunWithoutACatalogShowsItsClaimsUnknownAndWhy) {
  const std::string html = render_runs({kRunA});
  EXPECT_NE(html.find(report::escape("Claims of run A are unknown: " + std::string(catalog::kNoCatalogNote))),
            std::string::npos);
  EXPECT_NE(html.find("unknown: no catalog.json (measured before catalogs were saved)"), std::string::npos)
      << "the runs table says so too";
  EXPECT_EQ(html.find("<svg class=\"chart claims\""), std::string::npos) << "no claims to draw";
  const fs::path out = fresh_temp_path("old-run.html");
  const auto result = run_phasebench("report " + kRunA + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("note: run A (" + kRunA + "): " + catalog::kNoCatalogNote), std::string::npos)
      << result.output;
  fs::remove(out);
}

// Appends the rows and samples of a crafted run to the run directory `dir`; each row after the
// first gains 2x (speedup_vs_prev 2, interval 1.9-2.1).
void append_crafted(const fs::path& dir, const testing::CraftedRun& crafted) {
  const fs::path extra = testing::write_run("extra", crafted);
  std::vector<ResultRow> rows = read_results_csv((dir / "results.csv").string());
  std::vector<SampleRow> samples = read_samples_csv((dir / "samples.csv").string());
  const std::string run_id = rows.empty() ? crafted.run_id : rows.front().run_id;  // one run's rows
  for (ResultRow row : read_results_csv((extra / "results.csv").string())) {
    row.run_id = run_id;
    if (row.phase_index > 0) std::tie(row.speedup_vs_prev, row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high) =
                                 std::make_tuple(2.0, 1.9, 2.1);
    rows.push_back(row);
  }
  for (const SampleRow& sample : read_samples_csv((extra / "samples.csv").string())) samples.push_back(sample);
  std::ofstream(dir / "results.csv") << results_csv(rows);
  std::ofstream(dir / "samples.csv") << samples_csv(samples);
  fs::remove_all(extra);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A real quick run writes catalog.json; the report takes the claims from that file, so editing a
// claim in it (as a run measured with another catalog would have it) moves what the page shows.
// A crafted ladder of phases 0 and 1 is added to the run, so that this holds whatever backends
// this build has (the reference alone claims nothing): the cuda backend on the cpu device, a
// ladder no run measures, so it collides with none (a backend name the readers do not know would
// be refused).
TEST(ReportCatalog, ClaimsAreReadFromTheRunsCatalogJson) {
  const fs::path run = fresh_temp_path("real-run");
  const auto result = run_phasebench("run --quick --size small --filter trainer2/lior_step --out " + run.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  testing::CraftedRun ladder;
  ladder.rows = {{"cuda", 0, "baseline", 2.0}, {"cuda", 1, "batched_metrics", 1.0}};
  append_crafted(run, ladder);

  nlohmann::json catalog = read_json(run / "catalog.json");
  nlohmann::json* phase1 = nullptr;
  for (nlohmann::json& workload : catalog["workloads"])
    if (workload["workload"] == "trainer2/lior_step")
      for (nlohmann::json& phase : workload["phases"])
        if (phase["index"] == 1) phase1 = &phase;
  ASSERT_NE(phase1, nullptr) << catalog.dump(2);
  const std::string saved = report::format_number((*phase1)["claimed_min"].get<double>()) + "\xE2\x80\x93" +
                            report::format_ratio((*phase1)["claimed_max"].get<double>());
  EXPECT_NE(render_runs({run.string()}).find(saved), std::string::npos) << "the saved claim " << saved;

  (*phase1)["claimed_min"] = 7.25;
  (*phase1)["claimed_max"] = 7.75;
  std::ofstream(run / "catalog.json") << catalog.dump(2);
  const std::string html = render_runs({run.string()});
  EXPECT_NE(html.find("7.25\xE2\x80\x93" "7.75\xC3\x97"), std::string::npos) << "the edited claim";
  EXPECT_EQ(html.find(saved), std::string::npos) << "the registry's claim is not what the report shows";
  EXPECT_NE(html.find(report::escape("below claim")), std::string::npos) << "2x against 7.25-7.75x";
  fs::remove_all(run);
}

// ---- the command ---------------------------------------------------------------------------------

// A run written with the harness's own writers, whose reason holds markup.
fs::path run_with_markup_in_a_reason() {
  const fs::path dir = fresh_temp_path("markup-run");
  fs::create_directories(dir);
  ResultRow row = timed_row("torch", 0, 1, kMissing, kMissing, kMissing);
  row.status = Status::Error;
  row.reason = "threw <script>alert('x')</script> & died";
  std::ofstream(dir / "results.csv") << results_csv({row});
  std::ofstream(dir / "samples.csv") << samples_csv({});
  return dir;
}

TEST(ReportCommand, WritesTheFileAndPrintsWhere) {
  const fs::path dir = fresh_temp_path("report-out");
  fs::create_directories(dir);
  const fs::path out = dir / "report.html";
  const auto result = run_phasebench("report " + kRunA + " " + kRunB + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("report: " + out.string()), std::string::npos) << result.output;
  EXPECT_EQ(read_file(out), render_runs({kRunA, kRunB}));
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  fs::remove_all(dir);
}

TEST(ReportCommand, NeverOverwritesAnExistingReport) {
  const fs::path out = fresh_temp_path("existing.html");
  std::ofstream(out) << "keep me";
  const auto result = run_phasebench("report " + kRunA + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("already exists"), std::string::npos) << result.output;
  EXPECT_EQ(read_file(out), "keep me");
  fs::remove(out);
}

TEST(ReportCommand, BadInputNamesWhatWasWrong) {
  const fs::path out = fresh_temp_path("never.html");
  const auto missing_run = run_phasebench("report /nonexistent/run-dir --out " + out.string());
  EXPECT_EQ(missing_run.exit_code, 2) << missing_run.output;
  EXPECT_NE(missing_run.output.find("/nonexistent/run-dir"), std::string::npos) << missing_run.output;
  const auto missing_dir = run_phasebench("report " + kRunA + " --out /nonexistent/dir/report.html");
  EXPECT_EQ(missing_dir.exit_code, 2) << missing_dir.output;
  EXPECT_NE(missing_dir.output.find("/nonexistent/dir"), std::string::npos) << missing_dir.output;
  const auto no_out = run_phasebench("report " + kRunA);
  EXPECT_EQ(no_out.exit_code, 2) << no_out.output;
  EXPECT_NE(no_out.output.find("--out"), std::string::npos) << no_out.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ReportCommand, AnUnknownStatusExitsTwoNamingFileLineAndColumn) {
  const fs::path run = fresh_temp_path("bogus-run");
  fs::copy(kRunA, run);
  std::ifstream in(run / "results.csv");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const size_t cell = text.find(",SKIPPED,");  // on line 2, the first row
  ASSERT_NE(cell, std::string::npos);
  ASSERT_LT(cell, text.find('\n', text.find('\n') + 1));
  text.replace(cell, 9, ",BOGUS,");
  std::ofstream(run / "results.csv") << text;
  const fs::path out = fresh_temp_path("never.html");
  const auto result = run_phasebench("report " + run.string() + " --out " + out.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  for (const std::string& mention : {(run / "results.csv").string() + " line 2", std::string("column status"),
                                     std::string("unknown status 'BOGUS'")})
    EXPECT_NE(result.output.find(mention), std::string::npos) << mention << "\n" << result.output;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(run);
}

TEST(ReportCommand, TextFromTheRunIsEscaped) {
  const fs::path run = run_with_markup_in_a_reason();
  const fs::path out = fresh_temp_path("escaped.html");
  const auto result = run_phasebench("report " + run.string() + " --out " + out.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string html = read_file(out);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("threw &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; died"), std::string::npos);
  fs::remove_all(run);
  fs::remove(out);
}

}  // namespace
}  // namespace pb
