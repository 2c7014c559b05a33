// The roofline: the share-of-roofline formula, the cache-aware bandwidth ceiling, the ceilings'
// JSON, and end to end through `run`: the probe measures memory, every cache level and the peak
// once and caches them per machine, a cached file is what every row is measured against, and
// machine.json records it. GPU devices: their own ceilings' JSON and cache, and which ceilings each
// row is measured against (a GPU row never against the CPU's).

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "phasebench/errors.hpp"
#include "phasebench/machine.hpp"
#include "phasebench/results.hpp"
#include "process.hpp"
#include "results/results_model.hpp"
#include "roofline/roofline.hpp"

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

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(RooflinePercent, MemoryBoundRowsAreMeasuredAgainstBandwidthTimesIntensity) {
  // 10 GB/s and 5 GFLOP/s: intensity 0.5 flop/byte; attainable min(1000, 0.5 * 100) = 50.
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(5, 10, kGiB, ceilings(100, 1000)), 10.0);
}

TEST(RooflinePercent, ComputeBoundRowsAreMeasuredAgainstThePeak) {
  // Intensity 100 flop/byte: attainable min(200, 100 * 50) = 200.
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(50, 0.5, kGiB, ceilings(50, 200)), 25.0);
}

TEST(RooflinePercent, RowsWithOnlyFlopsOrOnlyBytesUseTheirOneCeiling) {
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(kMissing, 20, kGiB, ceilings(80, 1000)), 25.0);
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(100, kMissing, kMissing, ceilings(80, 400)), 25.0);
}

TEST(RooflinePercent, MissingNumbersGiveNoPercentage) {
  EXPECT_TRUE(std::isnan(roofline::percent_of_roofline(kMissing, kMissing, kMissing, ceilings(80, 400))));
  EXPECT_TRUE(std::isnan(roofline::percent_of_roofline(5, 10, kGiB, ceilings(kMissing, 400))));
}

// A machine with 64 KiB of L1 at 400 GB/s, 1 MiB of L2 at 200 GB/s, 16 MiB of L3 at 100 GB/s and
// memory at 20 GB/s.
roofline::Ceilings cached_machine() {
  roofline::Ceilings c = ceilings(20, 1000);
  c.caches = {{"L1d", 64 * 1024.0, 32 * 1024.0, 400},
              {"L2", 1024 * 1024.0, 128 * 1024.0, 200},
              {"L3", 16 * 1024 * 1024.0, 2 * 1024 * 1024.0, 100}};
  return c;
}

TEST(RooflineCaches, DataThatFitsALevelIsBoundByThatLevel) {
  const roofline::Ceilings c = cached_machine();
  EXPECT_DOUBLE_EQ(roofline::attainable_bandwidth(16 * 1024.0, c), 400);
  EXPECT_DOUBLE_EQ(roofline::attainable_bandwidth(64 * 1024.0, c), 400);
  // 128 KiB: 64 KiB at 400 GB/s, 64 KiB at 200 GB/s; 128 KiB / (64/400 + 64/200) = 266.7 GB/s.
  EXPECT_NEAR(roofline::attainable_bandwidth(128 * 1024.0, c), 128.0 / (64.0 / 400 + 64.0 / 200), 1e-9);
  // Far larger than every cache: memory bandwidth, less than 1% above it.
  const double huge = roofline::attainable_bandwidth(64 * kGiB, c);
  EXPECT_GT(huge, 20);
  EXPECT_LT(huge, 20 * 1.01);
  // Unknown working set or no cache levels: memory bandwidth, as before the cache probe.
  EXPECT_DOUBLE_EQ(roofline::attainable_bandwidth(kMissing, c), 20);
  EXPECT_DOUBLE_EQ(roofline::attainable_bandwidth(16 * 1024.0, ceilings(20, 1000)), 20);
}

TEST(RooflineCaches, TheBandwidthCeilingFallsWithTheWorkingSetAndStaysBetweenMemoryAndL1) {
  const roofline::Ceilings c = cached_machine();
  double previous = 1e30;
  for (double bytes = 1024; bytes < 16 * kGiB; bytes *= 1.1) {
    const double bandwidth = roofline::attainable_bandwidth(bytes, c);
    EXPECT_LE(bandwidth, previous * (1 + 1e-12)) << bytes;
    EXPECT_LE(bandwidth, 400 * (1 + 1e-12)) << bytes;
    EXPECT_GE(bandwidth, 20) << bytes;
    previous = bandwidth;
  }
}

TEST(RooflineCaches, ALevelMeasuredSlowerThanASlowerOneCountsAsFastAsIt) {
  roofline::Ceilings c = cached_machine();
  c.caches[2].gb_per_s = 10;  // a disturbed L3 measurement, below memory's 20 GB/s
  // 8 MiB: 64 KiB from L1, 1024 KiB from L2, the rest from L3 at memory's 20 GB/s (in KiB).
  EXPECT_NEAR(roofline::attainable_bandwidth(8 * 1024 * 1024.0, c),
              8192.0 / (64.0 / 400 + 1024.0 / 200 + (8192.0 - 1088) / 20), 1e-9);
}

// The promise of the ceiling: a row that moves its declared bytes at the fastest rate its data can
// be moved (its working set streamed from the levels it fits in, flops at the peak) is at 100%,
// never above, whatever its size and intensity; half as fast is 50%.
TEST(RooflineCaches, ARowAtTheMachinesLimitIsAtMostOneHundredPercent) {
  const roofline::Ceilings c = cached_machine();
  for (double bytes = 4096; bytes < 4 * kGiB; bytes *= 3) {
    const double bandwidth = roofline::attainable_bandwidth(roofline::working_set_lower_bound(bytes), c);
    for (double intensity : {0.01, 0.5, 5.0, 50.0, 5000.0}) {
      const double gflop_per_s = std::min(c.peak_gflop_per_s, intensity * bandwidth);
      const double gb_per_s = gflop_per_s / intensity;
      EXPECT_NEAR(roofline::percent_of_roofline(gflop_per_s, gb_per_s, bytes, c), 100, 1e-9) << bytes << " " << intensity;
      EXPECT_NEAR(roofline::percent_of_roofline(gflop_per_s / 2, gb_per_s / 2, bytes, c), 50, 1e-9);
    }
  }
}

TEST(RooflineCaches, ARowWhoseDataFitsInL2IsMeasuredAgainstL2NotMemory) {
  const roofline::Ceilings c = cached_machine();
  // 512 KiB declared, a working set of at least 256 KiB: 64 KiB from L1 at best, the rest from L2.
  const double bytes = 512 * 1024.0;
  const double bandwidth = 256.0 / (64.0 / 400 + 192.0 / 200);
  // 150 GB/s, a copy (no flops): 150 / 228.6 of the ceiling; against memory alone it read 750%.
  EXPECT_NEAR(roofline::percent_of_roofline(kMissing, 150, bytes, c), 150 / bandwidth * 100, 1e-9);
  EXPECT_LT(roofline::percent_of_roofline(kMissing, 150, bytes, c), 100);
  EXPECT_DOUBLE_EQ(roofline::percent_of_roofline(kMissing, 150, bytes, ceilings(20, 1000)), 750);
}

// results.csv's bound column: which ceiling the percentage is against.
TEST(RooflineBound, TheCeilingGivingTheLargerShareBindsAndIsNamed) {
  // Intensity 0.5 flop/byte on 100 GB/s and 1000 GFLOP/s: the bytes bind (10% vs 0.5%).
  const roofline::RooflinePosition memory = roofline::roofline_position(5, 10, kGiB, ceilings(100, 1000));
  EXPECT_DOUBLE_EQ(memory.percent, 10.0);
  EXPECT_EQ(memory.bound, "memory");
  // Intensity 100: the peak binds (25% vs 1%).
  const roofline::RooflinePosition compute = roofline::roofline_position(50, 0.5, kGiB, ceilings(50, 200));
  EXPECT_DOUBLE_EQ(compute.percent, 25.0);
  EXPECT_EQ(compute.bound, "compute");
  EXPECT_EQ(roofline::roofline_position(100, kMissing, kMissing, ceilings(80, 400)).bound, "compute");
  EXPECT_EQ(roofline::roofline_position(kMissing, 20, kGiB, ceilings(80, 1000)).bound, "memory");
  const roofline::RooflinePosition none = roofline::roofline_position(kMissing, kMissing, kMissing, ceilings(80, 400));
  EXPECT_TRUE(std::isnan(none.percent));
  EXPECT_EQ(none.bound, "");
}

TEST(RooflineBound, ADataBoundRowNamesTheSlowestCacheLevelItsWorkingSetReaches) {
  const roofline::Ceilings c = cached_machine();  // L1d 64 KiB, L2 1 MiB, L3 16 MiB (summed: 17.06 MiB)
  EXPECT_EQ(roofline::slowest_level_reached(48 * 1024.0, c), "L1d");
  EXPECT_EQ(roofline::slowest_level_reached(256 * 1024.0, c), "L2");
  EXPECT_EQ(roofline::slowest_level_reached(1088 * 1024.0, c), "L2");  // exactly L1d + L2
  EXPECT_EQ(roofline::slowest_level_reached(1089 * 1024.0, c), "L3");
  EXPECT_EQ(roofline::slowest_level_reached(18 * 1024 * 1024.0, c), "memory");
  EXPECT_EQ(roofline::slowest_level_reached(kMissing, c), "memory");
  EXPECT_EQ(roofline::slowest_level_reached(1024.0, ceilings(20, 1000)), "memory");  // no levels known
  // 512 KiB declared: a working set of 256 KiB, streamed from L2 (and L1d), a copy.
  EXPECT_EQ(roofline::roofline_position(kMissing, 150, 512 * 1024.0, c).bound, "L2");
  // The same bytes at an intensity above the L2 ridge point: compute binds.
  EXPECT_EQ(roofline::roofline_position(900, 150, 512 * 1024.0, c).bound, "compute");
}

TEST(RooflineCaches, AddRooflinePctTakesTheDeclaredBytesFromTheRowsRateAndTime) {
  const roofline::Ceilings c = cached_machine();
  std::vector<ResultRow> rows(2);
  rows[0].gb_per_s = 150, rows[0].median_ms = 512 * 1024.0 / 150e9 * 1e3;  // 512 KiB per iteration
  rows[1].gflop_per_s = 10;  // flops only: against the peak
  roofline::add_roofline_pct(rows, c);
  EXPECT_NEAR(rows[0].roofline_pct, roofline::percent_of_roofline(kMissing, 150, 512 * 1024.0, c), 1e-9);
  EXPECT_EQ(rows[0].bound, "L2");
  EXPECT_DOUBLE_EQ(rows[1].roofline_pct, 1.0);
  EXPECT_EQ(rows[1].bound, "compute");
}

// A read sweep over a machine with 32 KiB of L1 at 100 GB/s, 512 KiB of L2 at 50, 16 MiB of L3 at
// 25 and memory at 10: a working set fills the fastest levels first and streams the rest from the
// next (the transitions are gradual, as a real sweep's are), from 4 KiB to 256 MiB, doubling.
// `factor(i)` scales point i's rate (noise).
template <typename Factor>
std::vector<roofline::WorkingSetRate> three_level_sweep(Factor factor) {
  const double levels[][2] = {{32 * 1024.0, 100}, {512 * 1024.0, 50}, {16 * 1024 * 1024.0, 25}};
  std::vector<roofline::WorkingSetRate> sweep;
  for (double bytes = 4096; bytes <= 256.0 * 1024 * 1024; bytes *= 2) {
    double seconds = 0, placed = 0;
    for (const auto& [capacity, gb_per_s] : levels) {
      const double here = std::max(0.0, std::min(bytes, capacity) - placed);
      seconds += here / gb_per_s;
      placed += here;
    }
    seconds += (bytes - placed) / 10;
    sweep.push_back({bytes, bytes / seconds * factor(sweep.size())});
  }
  return sweep;
}

// The three levels, each size exact or (with noise) one doubling of the sweep above it at most.
void expect_three_levels(const std::vector<roofline::FoundCacheLevel>& found, double resolution = 1) {
  ASSERT_EQ(found.size(), 3u);
  const double sizes[] = {32 * 1024.0, 512 * 1024.0, 16 * 1024 * 1024.0};
  for (int level = 0; level < 3; ++level) {
    EXPECT_GE(found[level].bytes_per_thread, sizes[level]) << "level " << level;
    EXPECT_LE(found[level].bytes_per_thread, sizes[level] * resolution) << "level " << level;
  }
  EXPECT_GT(found[0].gb_per_s, found[1].gb_per_s);
  EXPECT_GT(found[1].gb_per_s, found[2].gb_per_s);
}

TEST(RooflineCacheSweep, FindsEachLevelsSizeInASweepWithGradualTransitions) {
  const auto sweep = three_level_sweep([](size_t) { return 1.0; });
  const auto found = roofline::cache_levels_in_sweep(sweep);
  expect_three_levels(found);
  EXPECT_NEAR(found[0].gb_per_s, 100, 1e-9);  // each level's best point
  // The points' order does not matter.
  EXPECT_EQ(roofline::cache_levels_in_sweep({sweep.rbegin(), sweep.rend()}).size(), 3u);
}

TEST(RooflineCacheSweep, NoiseAndADisturbedPointDoNotMoveOrSplitALevel) {
  // +-8% on every point, and the 256 KiB point (inside L2) at 0.6 of its rate: a busy machine.
  const auto noisy = three_level_sweep([](size_t i) { return i == 6 ? 0.6 : (i % 2 ? 1.08 : 0.92); });
  ASSERT_DOUBLE_EQ(noisy[6].bytes_per_thread, 256 * 1024.0);
  expect_three_levels(roofline::cache_levels_in_sweep(noisy), 2);
  const auto other_phase = three_level_sweep([](size_t i) { return i == 6 ? 0.6 : (i % 2 ? 0.92 : 1.08); });
  expect_three_levels(roofline::cache_levels_in_sweep(other_phase), 2);
}

TEST(RooflineCacheSweep, AFlatOrShortSweepShowsNoLevels) {
  std::vector<roofline::WorkingSetRate> flat;
  for (double bytes = 4096; bytes <= 64.0 * 1024 * 1024; bytes *= 2) flat.push_back({bytes, 12.0});
  EXPECT_TRUE(roofline::cache_levels_in_sweep(flat).empty());
  EXPECT_TRUE(roofline::cache_levels_in_sweep({{4096, 100}, {1 << 30, 10}}).empty());
  // Points without a rate are left out, not read as a step.
  flat[3].gb_per_s = kMissing;
  flat[5].gb_per_s = 0;
  EXPECT_TRUE(roofline::cache_levels_in_sweep(flat).empty());
}

TEST(RooflineCacheSweep, OneStepIsOneLevelAndASinglePointAfterItIsATransitionOfNoLevel) {
  // 8 points at 80 GB/s, one at 40 (past the level, not yet memory), then memory at 10.
  std::vector<roofline::WorkingSetRate> sweep;
  double bytes = 4096;
  for (int i = 0; i < 8; ++i, bytes *= 2) sweep.push_back({bytes, 80});
  sweep.push_back({bytes, 40});
  for (int i = 0; i < 4; ++i) sweep.push_back({bytes *= 2, 10});
  const auto found = roofline::cache_levels_in_sweep(sweep);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].bytes_per_thread, 4096 * 128.0);  // the last point at the level's rate
  EXPECT_DOUBLE_EQ(found[0].gb_per_s, 80);
  // A transition of two single points (the fall into memory in two steps) stretches no level.
  sweep.push_back({4096 * 256 * 1.5, 20});  // between 1 MiB (40) and 2 MiB (10)
  ASSERT_EQ(roofline::cache_levels_in_sweep(sweep).size(), 1u);
  EXPECT_DOUBLE_EQ(roofline::cache_levels_in_sweep(sweep)[0].bytes_per_thread, 4096 * 128.0);
}

TEST(RooflineJson, RoundTripsAndRejectsWhatIsNotCeilings) {
  roofline::Ceilings original = ceilings(12.5, 300);
  original.caches = cached_machine().caches;
  const nlohmann::json json = roofline::to_json(original);
  EXPECT_EQ(json["format"], roofline::kCeilingsFormat);
  const roofline::Ceilings back = roofline::from_json(json);
  EXPECT_DOUBLE_EQ(back.bandwidth_gb_per_s, 12.5);
  EXPECT_DOUBLE_EQ(back.peak_gflop_per_s, 300);
  EXPECT_EQ(back.compute_method, "test");
  ASSERT_EQ(back.caches.size(), 3u);
  EXPECT_EQ(back.caches[1].name, "L2");
  EXPECT_DOUBLE_EQ(back.caches[1].capacity_bytes, 1024 * 1024.0);
  EXPECT_DOUBLE_EQ(back.caches[1].gb_per_s, 200);
  // Where the levels were found by a sweep, its method and points travel with them.
  roofline::Ceilings swept = original;
  swept.cache_method = "found by a read sweep";
  swept.cache_sweep = {{4096, 100}, {8192, 99}};
  const roofline::Ceilings swept_back = roofline::from_json(roofline::to_json(swept));
  EXPECT_EQ(swept_back.cache_method, "found by a read sweep");
  ASSERT_EQ(swept_back.cache_sweep.size(), 2u);
  EXPECT_DOUBLE_EQ(swept_back.cache_sweep[1].bytes_per_thread, 8192);
  EXPECT_DOUBLE_EQ(swept_back.cache_sweep[1].gb_per_s, 99);
  // machine.json of a run before the cache probe: no levels, still read.
  nlohmann::json old = roofline::to_json(ceilings(12.5, 300));
  old.erase("caches");
  old.erase("format");
  EXPECT_TRUE(roofline::from_json(old).caches.empty());
  EXPECT_THROW(roofline::from_json(nlohmann::json{{"bandwidth_gb_per_s", 1}}), InputError);
  nlohmann::json negative = roofline::to_json(original);
  negative["peak_gflop_per_s"] = -1;
  EXPECT_THROW(roofline::from_json(negative), InputError);
  nlohmann::json empty_cache = roofline::to_json(original);
  empty_cache["caches"][0]["gb_per_s"] = 0;
  EXPECT_THROW(roofline::from_json(empty_cache), InputError);
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

// A cache file with made-up ceilings far below any real machine: the run's short probe measures
// this hour's, every row is measured against exactly those, and the cached ones are kept beside
// them and named in the report.
TEST(RooflineRun, RowsAreHeldToThisHoursCeilingsAndTheCachedOnesAreKept) {
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
  EXPECT_NE(output.find("this hour's short probe"), std::string::npos) << output;
  const nlohmann::json roofline = read_json(out / "machine.json")["roofline"];
  EXPECT_EQ(roofline["source"], "cache " + file.string());
  EXPECT_DOUBLE_EQ(roofline["recheck"]["cached_bandwidth_gb_per_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(roofline["recheck"]["cached_peak_gflop_per_s"].get<double>(), 2.0);
  const double bandwidth = roofline["bandwidth_gb_per_s"], peak = roofline["peak_gflop_per_s"];
  EXPECT_GT(bandwidth, 1.0);  // this hour's, measured: no machine here is that slow
  EXPECT_GT(peak, 4.0);
  int timed = 0;
  for (const ResultRow& row : read_results_csv((out / "results.csv").string())) {
    if (row.status != Status::Ok) continue;
    ++timed;
    ASSERT_FALSE(std::isnan(row.roofline_pct)) << row.backend << "/" << row.phase;
    const double intensity = row.gflop_per_s / row.gb_per_s;
    const double expected = row.gflop_per_s / std::min(peak, intensity * bandwidth) * 100;
    EXPECT_NEAR(row.roofline_pct, expected, expected * 1e-6) << row.backend << "/" << row.phase;
  }
  EXPECT_GT(timed, 1);
  const fs::path page = fresh_temp_path("roofline-report") += ".html";
  const auto report = run_phasebench("report " + out.string() + " --out " + page.string());
  ASSERT_EQ(report.exit_code, 0) << report.output;
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("measured its own ceilings"), std::string::npos);
  for (const fs::path& path : {out, cache, page}) fs::remove_all(path);
}

TEST(RooflineRecheck, DiffersFromTheCacheOnlyBeyondTheProbesNoise) {
  roofline::Ceilings c = ceilings(100, 500);
  EXPECT_FALSE(roofline::differs_from_cache(c));  // not rechecked
  c.recheck = roofline::Recheck{104, 500, "2026-12-05T07:00:00Z", 0.01, 0.5};
  EXPECT_FALSE(roofline::differs_from_cache(c));  // 4%: within 5%
  c.recheck->cached_bandwidth_gb_per_s = 120;
  EXPECT_TRUE(roofline::differs_from_cache(c));  // 17% down
  c.recheck->noise = 0.1;
  EXPECT_FALSE(roofline::differs_from_cache(c));  // within twice a 10% noise
  c.recheck->noise = 0.01;
  c.recheck->cached_bandwidth_gb_per_s = 100;
  c.recheck->cached_peak_gflop_per_s = 400;
  EXPECT_TRUE(roofline::differs_from_cache(c));  // the peak alone
  const roofline::Ceilings back = roofline::from_json(roofline::to_json(c));
  ASSERT_TRUE(back.recheck.has_value());
  EXPECT_DOUBLE_EQ(back.recheck->cached_peak_gflop_per_s, 400);
  EXPECT_EQ(back.recheck->cached_measured_at, "2026-12-05T07:00:00Z");
  EXPECT_DOUBLE_EQ(back.recheck->noise, 0.01);
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
  // Every data cache level sysfs lists has a bandwidth, and none is below memory's by much (a
  // cache slower than memory is noise; 0.8 leaves room for a busy machine).
  const nlohmann::json caches = measured["caches"];
  ASSERT_TRUE(caches.is_array());
  for (const nlohmann::json& cache : caches) {
    EXPECT_GT(cache["capacity_bytes"].get<double>(), cache["working_set_bytes"].get<double>()) << cache;
    EXPECT_GT(cache["gb_per_s"].get<double>(), 0.8 * measured["bandwidth_gb_per_s"].get<double>()) << cache;
  }
  // The levels sysfs lists, or, where it lists none (as on many VMs), those a working-set sweep
  // shows: the sweep's points are then recorded, from 4 KiB on, and the levels grow in size.
  const std::string cache_method = measured["cache_method"];
  if (fs::exists("/sys/devices/system/cpu/cpu0/cache/index0/size")) {
    EXPECT_FALSE(caches.empty());
    EXPECT_NE(cache_method.find("operating system"), std::string::npos) << cache_method;
  } else {
    EXPECT_NE(cache_method.find("found by a read sweep"), std::string::npos) << cache_method;
    ASSERT_GE(measured["cache_sweep"].size(), 10u);
    EXPECT_EQ(measured["cache_sweep"][0]["bytes_per_thread"], 4096);
    for (size_t i = 1; i < caches.size(); ++i)
      EXPECT_GT(caches[i]["capacity_bytes"].get<double>(), caches[i - 1]["capacity_bytes"].get<double>()) << caches;
  }

  EXPECT_FALSE(measured.contains("recheck"));  // measured in full: nothing to recheck

  const std::string second_output = quick_run(second, cache);
  EXPECT_EQ(second_output.find("roofline: measuring"), std::string::npos) << second_output;
  const nlohmann::json cached = read_json(second / "machine.json")["roofline"];
  EXPECT_EQ(cached["recheck"]["cached_bandwidth_gb_per_s"], measured["bandwidth_gb_per_s"]);
  EXPECT_EQ(cached["recheck"]["cached_measured_at"], measured["measured_at"]);
  EXPECT_EQ(cached["caches"], measured["caches"]);  // the levels stay the cached ones
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
  // A cache written before the cache levels were measured (no "format") is measured over too.
  nlohmann::json old = read_json(file);
  old.erase("format");
  old.erase("caches");
  std::ofstream(file) << old.dump();
  const fs::path third = fresh_temp_path("roofline-kernel");
  const std::string third_output = quick_run(third, cache, "PHASEBENCH_ROOFLINE_COMPUTE=kernel");
  EXPECT_NE(third_output.find("roofline: measuring"), std::string::npos) << third_output;
  EXPECT_EQ(read_json(file)["format"], roofline::kCeilingsFormat);
  for (const fs::path& dir : {first, second, third, cache}) fs::remove_all(dir);
}

// ---- GPU devices ---------------------------------------------------------------------------------

// An H200-like GPU: 4000 GB/s memory, 50 MiB of L2 at 10000 GB/s, 60 TFLOP/s fp32, 900 TFLOP/s bf16.
DeviceCeilings gpu_ceilings() {
  DeviceCeilings gpu;
  gpu.device = {"NVIDIA Test GPU", "NVIDIA Test GPU GPU-0001", "test_probe_v1", ""};
  gpu.bandwidth_gb_per_s = 4000;
  gpu.l2_bytes = 50 * 1024 * 1024.0;
  gpu.l2_gb_per_s = 10000;
  gpu.fp32_peak_gflop_per_s = 60000;
  gpu.bf16_peak_gflop_per_s = 900000;
  gpu.bandwidth_method = gpu.fp32_method = gpu.bf16_method = "test";
  return gpu;
}

// The CPU of the H200 machine (211 GB/s) with its GPU measured, and a second GPU device without.
roofline::Ceilings machine_with_gpu() {
  roofline::Ceilings machine = ceilings(211, 3000);
  machine.devices["cuda"] = gpu_ceilings();
  machine.devices_without_ceilings["cuda:1"] = "cudaGetDeviceProperties: invalid device ordinal";
  return machine;
}

TEST(RooflineDevices, GpuCeilingsRoundTripAndRejectionsNameTheKey) {
  const nlohmann::json json = roofline::to_json(gpu_ceilings());
  EXPECT_EQ(json["format"], roofline::kDeviceCeilingsFormat);
  const DeviceCeilings back = roofline::device_ceilings_from_json(json);
  EXPECT_EQ(back.device.identity, "NVIDIA Test GPU GPU-0001");
  EXPECT_EQ(back.device.probe_method, "test_probe_v1");
  EXPECT_DOUBLE_EQ(back.bandwidth_gb_per_s, 4000);
  EXPECT_DOUBLE_EQ(back.l2_gb_per_s, 10000);
  EXPECT_DOUBLE_EQ(back.bf16_peak_gflop_per_s, 900000);
  // An unmeasured bf16 peak is absent, and reads back as not measured.
  DeviceCeilings without_bf16 = gpu_ceilings();
  without_bf16.bf16_peak_gflop_per_s = kMissing;
  const nlohmann::json partial = roofline::to_json(without_bf16);
  EXPECT_FALSE(partial.contains("bf16_peak_gflop_per_s"));
  EXPECT_TRUE(std::isnan(roofline::device_ceilings_from_json(partial).bf16_peak_gflop_per_s));
  nlohmann::json no_bandwidth = json;
  no_bandwidth.erase("bandwidth_gb_per_s");
  try {
    roofline::device_ceilings_from_json(no_bandwidth);
    ADD_FAILURE() << "read ceilings without a bandwidth";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("bandwidth_gb_per_s"), std::string::npos) << error.what();
  }
  nlohmann::json text_peak = json;
  text_peak["bf16_peak_gflop_per_s"] = "fast";
  EXPECT_THROW(roofline::device_ceilings_from_json(text_peak), InputError);
}

TEST(RooflineDevices, MachineJsonKeepsTheGpusAndAnOldRunStillReads) {
  const roofline::Ceilings back = roofline::from_json(roofline::to_json(machine_with_gpu()));
  ASSERT_EQ(back.devices.count("cuda"), 1u);
  EXPECT_DOUBLE_EQ(back.devices.at("cuda").fp32_peak_gflop_per_s, 60000);
  EXPECT_EQ(back.devices_without_ceilings.at("cuda:1"), "cudaGetDeviceProperties: invalid device ordinal");
  // The CPU's cache file and an old run's machine.json carry neither key.
  const nlohmann::json cpu_only = roofline::to_json(ceilings(211, 3000));
  EXPECT_FALSE(cpu_only.contains("devices"));
  EXPECT_FALSE(cpu_only.contains("devices_without_ceilings"));
  EXPECT_TRUE(roofline::from_json(cpu_only).devices.empty());
  nlohmann::json broken = roofline::to_json(machine_with_gpu());
  broken["devices"]["cuda"].erase("fp32_peak_gflop_per_s");
  EXPECT_THROW(roofline::from_json(broken), InputError);
}

TEST(RooflineDevices, EachDeviceGetsItsOwnCeilings) {
  const roofline::Ceilings machine = machine_with_gpu();
  const auto cpu = roofline::ceilings_for_device(machine, "cpu", false);
  ASSERT_TRUE(cpu);
  EXPECT_DOUBLE_EQ(cpu->bandwidth_gb_per_s, 211);
  EXPECT_TRUE(cpu->devices.empty());
  const auto gpu = roofline::ceilings_for_device(machine, "cuda", false);
  ASSERT_TRUE(gpu);
  EXPECT_DOUBLE_EQ(gpu->bandwidth_gb_per_s, 4000);
  EXPECT_DOUBLE_EQ(gpu->peak_gflop_per_s, 60000);
  ASSERT_EQ(gpu->caches.size(), 1u);
  EXPECT_EQ(gpu->caches[0].name, "L2");
  EXPECT_DOUBLE_EQ(gpu->caches[0].gb_per_s, 10000);
  EXPECT_DOUBLE_EQ(roofline::ceilings_for_device(machine, "cuda", true)->peak_gflop_per_s, 900000);
  EXPECT_FALSE(roofline::ceilings_for_device(machine, "cuda:1", false));
  // A bf16 row on a GPU whose tensor-core peak was not measured has no compute ceiling.
  roofline::Ceilings no_bf16 = machine;
  no_bf16.devices["cuda"].bf16_peak_gflop_per_s = kMissing;
  EXPECT_TRUE(std::isnan(roofline::ceilings_for_device(no_bf16, "cuda", true)->peak_gflop_per_s));
}

// The H200 run: 300 GB/s on the GPU read as 143% of the CPU's 211 GB/s; against the GPU, 7.5%.
TEST(RooflineDevices, AGpuRowIsNeverMeasuredAgainstTheCpu) {
  std::vector<ResultRow> rows(3);
  for (ResultRow& row : rows) row.gb_per_s = 300, row.median_ms = 4 * kGiB / 300e9 * 1e3;  // 4 GiB per iteration
  rows[0].device = "cpu", rows[1].device = "cuda", rows[2].device = "cuda:1";
  roofline::add_roofline_pct(rows, machine_with_gpu());
  EXPECT_NEAR(rows[0].roofline_pct, 300.0 / 211 * 100, 1e-9);
  // 4 GiB: 2 GiB of data, of which the L2 holds 50 MiB: a little above memory bandwidth.
  const double gpu_bandwidth = roofline::attainable_bandwidth(2 * kGiB, *roofline::ceilings_for_device(machine_with_gpu(), "cuda", false));
  EXPECT_GT(gpu_bandwidth, 4000);
  EXPECT_LT(gpu_bandwidth, 4000 * 1.02);
  EXPECT_NEAR(rows[1].roofline_pct, 300.0 / gpu_bandwidth * 100, 1e-9);
  EXPECT_LT(rows[1].roofline_pct, 100);
  EXPECT_TRUE(std::isnan(rows[2].roofline_pct));  // no ceilings of its own: none, not the CPU's
}

// derive_columns, as `run` and `merge --pool` call it: per device, and the bf16 peak for a phase
// that computes in bf16 (and every later phase that keeps it).
TEST(RooflineDevices, DerivedColumnsUseTheDevicesCeilingsAndTheBf16PeakForBf16Phases) {
  catalog::WorkloadEntry entry;
  entry.name = "spinlock/cnn_rollout";
  entry.phases = {PhaseInfo(0, "eager", "-"),
                  PhaseInfo(1, "mixed_precision", "-").approximate().claims(1, 2).needing({Capability::Bf16}),
                  PhaseInfo(2, "batching", "-").approximate()};
  entry.sizes["small"].work = {6e9, 0};  // 6 GFLOP per iteration, no declared bytes
  catalog::Catalog catalog;
  catalog.saved = true;
  catalog.workloads[entry.name] = entry;
  std::vector<ResultRow> rows;
  results::SampleIndex samples;
  for (const auto& [device, phase] : std::vector<std::pair<std::string, int>>{{"cpu", 0}, {"cuda", 0}, {"cuda", 1}, {"cuda", 2}}) {
    ResultRow row;
    row.suite = "spinlock", row.workload = "cnn_rollout", row.size = "small", row.backend = "torch";
    row.device = device, row.phase_index = phase, row.phase = entry.phases[phase].name;
    rows.push_back(row);
    samples[results::row_key(row)] = {1.0, 1.0, 1.0};  // 1 ms: 6000 GFLOP/s
  }
  results::derive_columns(rows, {&samples, &catalog, machine_with_gpu()});
  EXPECT_DOUBLE_EQ(rows[0].roofline_pct, 200);                  // the CPU's 3000 GFLOP/s
  EXPECT_DOUBLE_EQ(rows[1].roofline_pct, 10);                   // fp32: 60000
  EXPECT_NEAR(rows[2].roofline_pct, 6000.0 / 900000 * 100, 1e-9);  // bf16: 900000
  EXPECT_NEAR(rows[3].roofline_pct, 6000.0 / 900000 * 100, 1e-9);  // still bf16 after it
}

TEST(RooflineDevices, AnOldRunsGpuRowsGetNoCeilings) {
  results::RunData run;
  run.machine = {{"roofline", roofline::to_json(ceilings(211, 3000))},
                 {"backends",
                  {{"cuda", {{"devices", {{{"name", "cuda"}, {"gpu", true}}}}}},
                   {"kokkos", {{"devices", {{{"name", "cpu"}, {"gpu", false}}}}}}}}};
  const std::optional<roofline::Ceilings> read = run.ceilings();
  ASSERT_TRUE(read);
  EXPECT_EQ(read->devices_without_ceilings.count("cuda"), 1u);
  EXPECT_EQ(read->devices_without_ceilings.count("cpu"), 0u);
  EXPECT_FALSE(roofline::ceilings_for_device(*read, "cuda", false));
  EXPECT_TRUE(roofline::ceilings_for_device(*read, "cpu", false));
}

// A stand-in for a GPU backend (there is no GPU here): fixed ceilings for its device "gpu",
// counting how often it was asked to measure, so the cache's behaviour can be seen.
class FixedProbeBackend final : public Backend {
 public:
  int measurements = 0;
  bool fails = false;
  std::string name() const override { return "fixedprobe"; }
  std::vector<DeviceInfo> devices() const override { return {{"cpu", false, "", ""}, {"gpu", true, "", ""}}; }
  nlohmann::json metadata() const override { return nlohmann::json::object(); }
  DeviceIdentity device_ceilings_identity(const std::string& device) const override {
    if (device != "gpu") return Backend::device_ceilings_identity(device);
    return gpu_ceilings().device;
  }
  DeviceProbe measure_device_ceilings(const std::string&) override {
    ++measurements;
    if (fails) return {std::nullopt, "cudaMalloc: out of memory (cudaErrorMemoryAllocation)"};
    return {gpu_ceilings(), ""};
  }
};

TEST(RooflineDevices, TheGpuProbeRunsOncePerPhysicalDeviceThenItsCacheIsRead) {
  const fs::path cache = fresh_temp_path("gpu-cache");
  ::setenv("PHASEBENCH_CACHE_DIR", cache.c_str(), 1);
  auto backend = std::make_shared<FixedProbeBackend>();
  std::ostringstream log;
  const fs::path file = roofline::device_cache_file(gpu_ceilings().device);
  EXPECT_EQ(file.parent_path(), cache);
  EXPECT_EQ(file.filename(), "roofline-gpu-NVIDIA_Test_GPU_GPU-0001-test_probe_v1.json");
  roofline::Ceilings first = ceilings(211, 3000);
  roofline::add_device_ceilings(first, {backend}, log);
  EXPECT_EQ(backend->measurements, 1);
  ASSERT_EQ(first.devices.count("gpu"), 1u);
  EXPECT_EQ(first.devices.at("gpu").source, "measured");
  EXPECT_FALSE(first.devices.at("gpu").measured_at.empty());
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(first.devices.count("cpu") + first.devices_without_ceilings.count("cpu"), 0u);  // not a GPU
  roofline::Ceilings second = ceilings(211, 3000);
  roofline::add_device_ceilings(second, {backend}, log);
  EXPECT_EQ(backend->measurements, 1) << log.str();
  EXPECT_EQ(second.devices.at("gpu").source, "cache " + file.string());
  EXPECT_DOUBLE_EQ(second.devices.at("gpu").bf16_peak_gflop_per_s, 900000);
  // A corrupt cache is measured over; a failing probe leaves the GPU without ceilings, with why.
  std::ofstream(file) << "{ not json";
  backend->fails = true;
  roofline::Ceilings third = ceilings(211, 3000);
  roofline::add_device_ceilings(third, {backend}, log);
  EXPECT_EQ(backend->measurements, 2);
  EXPECT_TRUE(third.devices.empty());
  EXPECT_EQ(third.devices_without_ceilings.at("gpu"), "cudaMalloc: out of memory (cudaErrorMemoryAllocation)");
  ::unsetenv("PHASEBENCH_CACHE_DIR");
  fs::remove_all(cache);
}

// A workload's latency chain: a row of 100 bytes in 0.2 us is at a few percent of any
// bandwidth, but its chain takes 0.1 us on this host: it is at 50% of what binds it, "latency".
ResultRow tiny_row(const std::string& device, double median_ms) {
  ResultRow row;
  row.suite = "trainer2", row.workload = "rotor_update", row.size = "default", row.device = device;
  row.median_ms = median_ms;
  row.gb_per_s = 100 / (median_ms / 1e3) / 1e9;
  return row;
}

roofline::Ceilings with_rotor_floor(roofline::Ceilings c, double floor_ms) {
  c.latency_floors[roofline::latency_floor_key("trainer2", "rotor_update", "default")] = {floor_ms, "the chain", "test", 1000};
  return c;
}

TEST(RooflineLatency, ARowHeldToALatencyFloorIsMeasuredAgainstItWhereItBindsHarder) {
  const roofline::Ceilings c = with_rotor_floor(ceilings(50, 1000), 1e-4);
  std::vector<ResultRow> rows = {tiny_row("cpu", 2e-4), tiny_row("cpu", 2e-4), tiny_row("cpu", 5e-5), tiny_row("cpu", 2e-4)};
  rows[1].size = "small";         // no floor for this size: the bandwidth alone
  rows[3].workload = "lior_step";  // nor for this workload
  roofline::add_roofline_pct(rows, c);
  EXPECT_NEAR(rows[0].roofline_pct, 50.0, 1e-9);
  EXPECT_EQ(rows[0].bound, "latency");
  EXPECT_EQ(rows[1].bound, "memory");
  EXPECT_NEAR(rows[1].roofline_pct, 100 / 2e-7 / 1e9 / 50 * 100, 1e-9);
  EXPECT_NEAR(rows[2].roofline_pct, 200.0, 1e-9);  // faster than the chain: above 100%, as measured
  EXPECT_EQ(rows[3].bound, "memory");
  // Where the bytes' share is larger than the floor's, the bytes bind: the floor only adds a ceiling.
  const roofline::RooflinePosition data{80, "L2"};
  EXPECT_EQ(roofline::with_latency_floor(data, tiny_row("cpu", 2e-4), c).bound, "L2");
  EXPECT_DOUBLE_EQ(roofline::with_latency_floor(data, tiny_row("cpu", 2e-4), c).percent, 80);
  // A row without a median has no share of anything.
  EXPECT_TRUE(std::isnan(roofline::with_latency_floor({}, tiny_row("cpu", kMissing), c).percent));
}

TEST(RooflineLatency, TheHostsFloorsAreNotAGpusAndTravelInMachineJson) {
  roofline::Ceilings machine = with_rotor_floor(machine_with_gpu(), 1e-4);
  EXPECT_EQ(roofline::ceilings_for_device(machine, "cpu", false)->latency_floors.size(), 1u);
  EXPECT_TRUE(roofline::ceilings_for_device(machine, "cuda", false)->latency_floors.empty());
  std::vector<ResultRow> rows = {tiny_row("cuda", 2e-4)};
  roofline::add_roofline_pct(rows, machine);
  EXPECT_NE(rows[0].bound, "latency");
  const roofline::Ceilings back = roofline::from_json(roofline::to_json(machine));
  ASSERT_EQ(back.latency_floors.size(), 1u);
  const roofline::LatencyFloor& floor = back.latency_floors.begin()->second;
  EXPECT_DOUBLE_EQ(floor.ms, 1e-4);
  EXPECT_EQ(floor.what, "the chain");
  EXPECT_EQ(floor.calls, 1000);
  EXPECT_FALSE(roofline::to_json(ceilings(211, 3000)).contains("latency_floors"));
  nlohmann::json broken = roofline::to_json(machine);
  broken["latency_floors"]["trainer2/rotor_update/default"]["ms"] = 0;
  EXPECT_THROW(roofline::from_json(broken), InputError);
}

// energy_flow/aggregate's scatter floor: work that splits over the run's threads, so
// the floor is one thread's time over them, and a row it binds says "scatter", not "latency".
TEST(RooflineLatency, AScatterFloorSplitsOverTheThreadsAndNamesItsBound) {
  for (int threads : {1, 2}) {
    roofline::Ceilings c = ceilings(50, 1000);
    c.threads = threads;
    std::ostringstream log;
    roofline::add_latency_floors(c, log);
    const auto floor = c.latency_floors.find(roofline::latency_floor_key("energy_flow", "aggregate", "default"));
    ASSERT_NE(floor, c.latency_floors.end()) << log.str();
    EXPECT_EQ(floor->second.bound, "scatter");
    EXPECT_EQ(floor->second.threads, threads);
    EXPECT_EQ(floor->second.method.find("divided by") != std::string::npos, threads > 1) << floor->second.method;
    EXPECT_GT(floor->second.ms, 0);
    EXPECT_EQ(c.latency_floors.count(roofline::latency_floor_key("energy_flow", "aggregate", "large")), 0u);
    // rotor_update's chain waits on itself: never divided, whatever the threads.
    EXPECT_EQ(c.latency_floors.at(roofline::latency_floor_key("trainer2", "rotor_update", "default")).threads, 1);
    EXPECT_EQ(c.latency_floors.at(roofline::latency_floor_key("trainer2", "rotor_update", "default")).bound, "latency");
  }
  // A row slower than the floor by 4x is at 25% of it, bound "scatter"; the fields travel in
  // machine.json, and an older file without them reads as a one-thread latency floor.
  roofline::Ceilings c = ceilings(50, 1000);
  c.latency_floors[roofline::latency_floor_key("trainer2", "rotor_update", "default")] = {1e-4, "scatter", "test", 1000,
                                                                                         "scatter", 2};
  std::vector<ResultRow> rows = {tiny_row("cpu", 4e-4)};
  roofline::add_roofline_pct(rows, c);
  EXPECT_EQ(rows[0].bound, "scatter");
  EXPECT_NEAR(rows[0].roofline_pct, 25.0, 1e-9);
  nlohmann::json json = roofline::to_json(c);
  const roofline::LatencyFloor back = roofline::from_json(json).latency_floors.begin()->second;
  EXPECT_EQ(back.bound, "scatter");
  EXPECT_EQ(back.threads, 2);
  json["latency_floors"]["trainer2/rotor_update/default"].erase("bound");
  json["latency_floors"]["trainer2/rotor_update/default"].erase("threads");
  const roofline::LatencyFloor older = roofline::from_json(json).latency_floors.begin()->second;
  EXPECT_EQ(older.bound, "latency");
  EXPECT_EQ(older.threads, 1);
  json["latency_floors"]["trainer2/rotor_update/default"]["threads"] = 0;
  EXPECT_THROW(roofline::from_json(json), InputError);
}

}  // namespace
}  // namespace pb
