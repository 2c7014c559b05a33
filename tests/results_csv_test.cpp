// results.csv and samples.csv: the header is a contract (golden), and what is written reads back.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "phasebench/errors.hpp"
#include "phasebench/results.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;

// The contract's first 32 columns (docs/file-formats.md "Columns"), in order, then the additions.
const char* kGoldenResultsHeader =
    "run_id,suite,workload,size,backend,device,phase_index,phase,exact,status,reason,rel_l2_err,"
    "max_abs_err,tolerance,reps,median_ms,min_ms,max_ms,ci_low_ms,ci_high_ms,speedup_vs_prev,"
    "speedup_vs_phase0,speedup_vs_reference,claimed_min,claimed_max,host_syncs_per_iter,"
    "ops_per_iter,bytes_alloc_per_iter,gb_per_s,gflop_per_s,roofline_pct,threads,"
    "shape,seed,worst_output,speedup_vs_prev_ci_low,speedup_vs_prev_ci_high,"
    "speedup_vs_phase0_ci_low,speedup_vs_phase0_ci_high,speedup_vs_reference_ci_low,"
    "speedup_vs_reference_ci_high,iterations_per_rep,schema,step_output,step_rel_l2_err,step_budget,"
    "ops_by_region,step_memory_bytes,disturbed,bound,later_rel_l2_err,scale";
const char* kGoldenSamplesHeader =
    "workload,size,backend,device,phase,rep,ms,suite,cpu_ms,others_cores,rep_ms,threads,cpu_probe_us";

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

fs::path write_temp(const std::string& name, const std::string& content) {
  const fs::path path = fs::temp_directory_path() / ("phasebench-csv-test-" + name);
  std::ofstream(path) << content;
  return path;
}

// A row with every column at its default but the ones that name the case (the readers refuse
// empty names).
ResultRow named_row() {
  ResultRow row;
  row.suite = "trainer2";
  row.workload = "lior_step";
  row.size = "small";
  row.backend = "reference";
  row.device = "cpu";
  row.phase = "serial_fp32";
  return row;
}

ResultRow sample_row() {
  ResultRow row = named_row();
  row.run_id = "20261121T000000Z-test";
  row.backend = "torch";
  row.phase_index = 3;
  row.phase = "fused_lior_spd";
  row.status = Status::Fail;
  row.reason = "output s: rel_l2_err 0.5 > tolerance 1e-05, \"quoted\"\nsecond line";
  row.rel_l2_err = 0.5;
  row.median_ms = 1.25;
  row.speedup_vs_phase0 = 1.0625;
  row.speedup_vs_phase0_ci_low = 1.01;
  row.host_syncs_per_iter = 1;
  row.threads = 2;
  row.shape = "M=48 (B=3 K=16) n=8";
  row.seed = 7;
  row.iterations_per_rep = 123456;
  row.step_rel_l2_err = "0;1.5e-07;3e-07";
  row.ops_by_region = "anxiety=6;phase_scale=28";
  row.step_memory_bytes = "0;4096;8192";
  row.bound = "L2";
  row.size = "0.25x";
  row.scale = 0.25;
  return row;
}

TEST(ResultsCsv, HeaderIsTheContract) {
  EXPECT_EQ(first_line(results_csv({})), kGoldenResultsHeader);
  EXPECT_EQ(first_line(samples_csv({})), kGoldenSamplesHeader);
}

TEST(ResultsCsv, RowsRoundTripThroughTheCsvParser) {
  const fs::path path = write_temp("roundtrip.csv", results_csv({sample_row(), named_row()}));
  const std::vector<ResultRow> rows = read_results_csv(path.string());
  ASSERT_EQ(rows.size(), 2u);
  const ResultRow& row = rows[0];
  EXPECT_EQ(row.run_id, "20261121T000000Z-test");
  EXPECT_EQ(row.phase_index, 3);
  EXPECT_EQ(row.phase, "fused_lior_spd");
  // Separators and quotes survive; the newline became a space (one record per line).
  EXPECT_EQ(row.reason, "output s: rel_l2_err 0.5 > tolerance 1e-05, \"quoted\" second line");
  EXPECT_DOUBLE_EQ(row.median_ms, 1.25);
  EXPECT_DOUBLE_EQ(row.speedup_vs_phase0, 1.0625);
  EXPECT_DOUBLE_EQ(row.speedup_vs_phase0_ci_low, 1.01);
  EXPECT_TRUE(std::isnan(row.min_ms));  // missing values stay missing
  EXPECT_EQ(row.seed, 7u);
  EXPECT_EQ(row.iterations_per_rep, 123456);
  EXPECT_EQ(row.step_rel_l2_err, "0;1.5e-07;3e-07");
  EXPECT_EQ(row.ops_by_region, "anxiety=6;phase_scale=28");
  EXPECT_EQ(row.step_memory_bytes, "0;4096;8192");
  EXPECT_EQ(row.bound, "L2");
  EXPECT_EQ(row.size, "0.25x");
  EXPECT_DOUBLE_EQ(row.scale, 0.25);
  EXPECT_TRUE(std::isnan(rows[1].scale));  // a named size has none
  EXPECT_TRUE(row.exact);
  EXPECT_EQ(rows[1].schema, kResultsSchemaVersion);
}

TEST(ResultsCsv, SamplesRoundTrip) {
  SampleRow probed{"lior_step", "small", "kokkos", "cpu", "baseline", 5, 0.25, "trainer2"};
  probed.cpu_probe_us = 33.5;
  const fs::path path = write_temp(
      "samples.csv", samples_csv({{"lior_step", "small", "kokkos", "cpu", "baseline", 4, 0.125, "trainer2"}, probed}));
  const std::vector<SampleRow> rows = read_samples_csv(path.string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].backend, "kokkos");
  EXPECT_EQ(rows[0].rep, 4);
  EXPECT_DOUBLE_EQ(rows[0].ms, 0.125);
  EXPECT_TRUE(std::isnan(rows[0].cpu_probe_us));  // not probed: an empty cell, read back as missing
  EXPECT_DOUBLE_EQ(rows[1].cpu_probe_us, 33.5);
}

// The InputError reading `path` gives; "" when it reads.
std::string read_error(const fs::path& path) {
  try {
    read_results_csv(path.string());
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(ResultsCsv, MalformedNumberNamesFileLineAndColumn) {
  std::string text = results_csv({sample_row()});
  const size_t at = text.find("1.25");
  text.replace(at, 4, "fast");
  const fs::path path = write_temp("malformed.csv", text);
  const std::string message = read_error(path);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  EXPECT_NE(message.find("median_ms"), std::string::npos) << message;
}

// The status column is parsed into the enum when read: every word round-trips, anything else
// is bad input named by file, line and column.
TEST(ResultsCsv, StatusesRoundTripAndAnUnknownOneIsRejected) {
  std::vector<ResultRow> rows;
  for (const char* word : {"OK", "FAIL", "MISTRUSTED", "ERROR", "SKIPPED", "UNSUPPORTED", "CAUGHT"}) {
    rows.push_back(sample_row());
    rows.back().status = *parse_status(word);
  }
  const std::vector<ResultRow> read = read_results_csv(write_temp("statuses.csv", results_csv(rows)).string());
  ASSERT_EQ(read.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(read[i].status, rows[i].status) << to_string(rows[i].status);
  EXPECT_FALSE(is_failure(Status::Caught)) << "a check that caught a known bug did its job";

  std::string text = results_csv({sample_row()});
  text.replace(text.find(",FAIL,"), 6, ",BOGUS,");
  const fs::path path = write_temp("bogus.csv", text);
  const std::string message = read_error(path);
  for (const std::string& part : {path.string() + " line 2", std::string("column status"), std::string("'BOGUS'")})
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

// Times must be finite and not negative, counts not negative: a sample of nan or -5 ms would
// otherwise enter the statistics of compare and report. An empty cell (not timed) still reads.
TEST(ResultsCsv, NonFiniteOrNegativeTimesAndCountsAreRejected) {
  for (const char* bad : {"nan", "-5", "inf"}) {
    std::string text = samples_csv({{"lior_step", "small", "kokkos", "cpu", "baseline", 4, 0.125, "trainer2"}});
    text.replace(text.find("0.125"), 5, bad);
    const fs::path path = write_temp("bad-samples.csv", text);
    try {
      read_samples_csv(path.string());
      ADD_FAILURE() << "a sample of " << bad << " ms was read";
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(path.string() + " line 2, column ms"), std::string::npos) << message;
    }
  }
  std::string text = results_csv({sample_row()});
  text.replace(text.find("1.25"), 4, "-1.25");
  EXPECT_NE(read_error(write_temp("negative-median.csv", text)).find("column median_ms"), std::string::npos);
  ResultRow untimed = sample_row();
  untimed.median_ms = kMissing;
  untimed.host_syncs_per_iter = kMissing;
  EXPECT_EQ(read_error(write_temp("untimed.csv", results_csv({untimed}))), "");
}

TEST(ResultsCsv, FileWithoutContractColumnsIsRejected) {
  const fs::path path = write_temp("other.csv", "a,b,c\n1,2,3\n");
  EXPECT_THROW(read_results_csv(path.string()), InputError);
}

TEST(ResultsCsv, MissingFileIsAnInputError) {
  EXPECT_THROW(read_results_csv("/nonexistent/results.csv"), InputError);
}

TEST(ResultsCsv, OlderFilesWithoutAddedColumnsStillLoad) {
  // Only the contract's columns: the added ones take their defaults.
  const std::string full = results_csv({sample_row()});
  const fs::path path = write_temp("contract-only.csv", [&] {
    std::string out;
    std::istringstream in(full);
    for (std::string line; std::getline(in, line);) {
      // keep the first 32 columns (the contract), splitting on commas outside quotes
      int column = 0;
      bool quoted = false;
      std::string kept;
      for (char c : line) {
        if (c == '"') quoted = !quoted;
        if (c == ',' && !quoted && ++column == 32) break;
        kept += c;
      }
      out += kept + "\n";
    }
    return out;
  }());
  const auto rows = read_results_csv(path.string());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].threads, 2);
  EXPECT_TRUE(rows[0].shape.empty());
}

}  // namespace
}  // namespace pb
