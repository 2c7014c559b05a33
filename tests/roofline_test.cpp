// The roofline: the share-of-roofline formula, the ceilings' JSON, and end to end through `run`:
// the probe measures once and caches per machine, a cached file is what every row is measured
// against, and machine.json records it.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "phasebench/errors.hpp"
#include "phasebench/machine.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"
#include "roofline.hpp"

namespace pb {
namespace {
namespace fs = std::filesystem;
using testing::fresh_temp_path;
using testing::run_phasebench;

roofline::Ceilings ceilings(double bandwidth, double peak) {
  roofline::Ceilings c;
  c.bandwidth_gb_per_s = bandwidth;
  c.peak_gflop_per_s = peak;
  c.bandwidth_method = "test";
  c.compute_method = "test";
  c.threads = 1;
  c.fingerprint = "test";
  return c;
}

TEST(RooflinePercent, MemoryBoundRowsAreMeasuredAgainstBandwidthTimesIntensity) {
  // 10 GB/s and 5 GFLOP/s: intensity 0.5 flop/byte; attainable min(1000, 0.5 * 100) = 50.
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(5, 10, ceilings(100, 1000)), 10.0);
}

TEST(RooflinePercent, ComputeBoundRowsAreMeasuredAgainstThePeak) {
  // Intensity 100 flop/byte: attainable min(200, 100 * 50) = 200.
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(50, 0.5, ceilings(50, 200)), 25.0);
}

TEST(RooflinePercent, RowsWithOnlyFlopsOrOnlyBytesUseTheirOneCeiling) {
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(kMissing, 20, ceilings(80, 1000)), 25.0);
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(100, kMissing, ceilings(80, 400)), 25.0);
}

TEST(RooflinePercent, MissingNumbersGiveNoPercentage) {
  EXPECT_TRUE(std::isnan(roofline::percent_of_roofline(kMissing, kMissing, ceilings(80, 400))));
  EXPECT_TRUE(std::isnan(roofline::percent_of_roofline(5, 10, ceilings(kMissing, 400))));
}

TEST(RooflineJson, RoundTripsAndRejectsWhatIsNotCeilings) {
  const roofline::Ceilings original = ceilings(12.5, 300);
  const roofline::Ceilings back = roofline::from_json(roofline::to_json(original));
  EXPECT_DOUBLE_EQ(back.bandwidth_gb_per_s, 12.5);
  EXPECT_DOUBLE_EQ(back.peak_gflop_per_s, 300);
  EXPECT_EQ(back.compute_method, "test");
  EXPECT_THROW(roofline::from_json(nlohmann::json{{"bandwidth_gb_per_s", 1}}), InputError);
  nlohmann::json negative = roofline::to_json(original);
  negative["peak_gflop_per_s"] = -1;
  EXPECT_THROW(roofline::from_json(negative), InputError);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string quick_run(const fs::path& out, const fs::path& cache, const std::string& extra_environment = "") {
  const auto result = run_phasebench("run --quick --size small --threads 1 --filter 'trainer2/lior_step/(reference|kokkos)' --out " +
                                         out.string(),
                                     "PHASEBENCH_CACHE_DIR=" + cache.string() + " " + extra_environment);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output;
}

// A cache file with made-up ceilings: every row must then be measured against exactly them.
TEST(RooflineRun, EveryTimedRowIsMeasuredAgainstTheCachedCeilings) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "needs the Kokkos backend (rows besides the reference)";
  const fs::path cache = fresh_temp_path("roofline-cache");
  fs::create_directories(cache);
  const std::string method = [&] {  // the method the executable will look for (oneDNN or kernel)
    const fs::path probe_out = fresh_temp_path("probe-run");
    quick_run(probe_out, cache);
    const std::string found = read_json(probe_out / "machine.json")["roofline"]["compute_method"];
    fs::remove_all(probe_out);
    return found;
  }();
  const fs::path file = cache / ("roofline-" + hardware_fingerprint() + "-1t-" + method + ".json");
  ASSERT_TRUE(fs::exists(file)) << "the probe did not cache under " << file;
  roofline::Ceilings fake = ceilings(0.5, 2.0);  // far below any real machine: percentages > 100
  fake.threads = 1;
  fake.compute_method = method;
  fake.fingerprint = hardware_fingerprint();
  std::ofstream(file) << roofline::to_json(fake).dump();

  const fs::path out = fresh_temp_path("roofline-run");
  const std::string output = quick_run(out, cache);
  EXPECT_NE(output.find("cached in " + file.string()), std::string::npos) << output;
  const nlohmann::json machine = read_json(out / "machine.json");
  EXPECT_DOUBLE_EQ(machine["roofline"]["bandwidth_gb_per_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(machine["roofline"]["peak_gflop_per_s"].get<double>(), 2.0);
  EXPECT_EQ(machine["roofline"]["source"], "cache " + file.string());
  int timed = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != "OK") continue;
    ++timed;
    ASSERT_FALSE(std::isnan(row.roofline_pct)) << row.backend << "/" << row.phase;
    const double intensity = row.gflop_per_s / row.gb_per_s;
    const double expected = row.gflop_per_s / std::min(2.0, intensity * 0.5) * 100;
    EXPECT_NEAR(row.roofline_pct, expected, expected * 1e-6) << row.backend << "/" << row.phase;
  }
  EXPECT_GT(timed, 1);
  fs::remove_all(out);
  fs::remove_all(cache);
}

TEST(RooflineRun, TheProbeMeasuresOnceThenTheCacheIsUsed) {
  const fs::path cache = fresh_temp_path("roofline-cache");
  const fs::path first = fresh_temp_path("roofline-first"), second = fresh_temp_path("roofline-second");
  const std::string first_output = quick_run(first, cache);
  EXPECT_NE(first_output.find("roofline: measuring"), std::string::npos) << first_output;
  const nlohmann::json measured = read_json(first / "machine.json")["roofline"];
  EXPECT_GT(measured["bandwidth_gb_per_s"].get<double>(), 0);
  EXPECT_GT(measured["peak_gflop_per_s"].get<double>(), 0);
  EXPECT_EQ(measured["source"], "measured");
  EXPECT_EQ(measured["fingerprint"], hardware_fingerprint());
  EXPECT_EQ(measured["threads"], 1);

  const std::string second_output = quick_run(second, cache);
  EXPECT_EQ(second_output.find("roofline: measuring"), std::string::npos) << second_output;
  const nlohmann::json cached = read_json(second / "machine.json")["roofline"];
  EXPECT_EQ(cached["bandwidth_gb_per_s"], measured["bandwidth_gb_per_s"]);
  EXPECT_EQ(cached["measured_at"], measured["measured_at"]);
  for (const fs::path& dir : {first, second, cache}) fs::remove_all(dir);
}

TEST(RooflineRun, TheFmaKernelIsTheFallbackAndACorruptCacheIsMeasuredOver) {
  const fs::path cache = fresh_temp_path("roofline-cache");
  fs::create_directories(cache);
  const fs::path first = fresh_temp_path("roofline-kernel");
  quick_run(first, cache, "PHASEBENCH_ROOFLINE_COMPUTE=kernel");
  const std::string method = read_json(first / "machine.json")["roofline"]["compute_method"];
  EXPECT_TRUE(method.rfind("fma_kernel_", 0) == 0 || method == "mul_add_kernel_sse2") << method;
  const fs::path file = cache / ("roofline-" + hardware_fingerprint() + "-1t-" + method + ".json");
  ASSERT_TRUE(fs::exists(file));
  std::ofstream(file) << "{ not json";
  const fs::path second = fresh_temp_path("roofline-kernel");
  const std::string output = quick_run(second, cache, "PHASEBENCH_ROOFLINE_COMPUTE=kernel");
  EXPECT_NE(output.find("roofline: measuring"), std::string::npos) << output;
  EXPECT_NO_THROW(roofline::from_json(read_json(file))) << "the corrupt cache was not replaced";
  for (const fs::path& dir : {first, second, cache}) fs::remove_all(dir);
}

}  // namespace
}  // namespace pb
