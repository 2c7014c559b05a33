#pragma once
// The machine's roofline: the ceilings every row's roofline_pct is measured against. Memory: a
// triad (and a read-only sweep) over arrays far larger than the last-level cache. Caches: the same
// two kernels over data that fits each cache level, because a workload whose data fits a cache
// keeps it there between iterations and is bound by that level's bandwidth, not by memory's.
// Compute: fp32, the larger of oneDNN's sgemm (when the oneDNN backend is linked in) and a
// vectorized FMA kernel. All are measured once per (hardware fingerprint, thread count, method)
// and cached, because they take a few seconds and do not change between runs on one machine.
// A GPU has ceilings of its own (phasebench/device_ceilings.hpp, measured by its backend's probe,
// cached per physical device in roofline_devices.cpp): every row on a GPU device is measured
// against them, never against the CPU's.

#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasebench/backend.hpp"
#include "phasebench/device_ceilings.hpp"
#include "phasebench/results.hpp"

namespace pb::roofline {

/// One cache level's bandwidth, measured over data that fits it.
struct CacheCeiling {
  std::string name;               // "L1d", "L2", "L3"
  double capacity_bytes = 0;      // what the probe's threads hold of this level together
  double working_set_bytes = 0;   // the data the probe swept (fits the level, not the faster one)
  double gb_per_s = kMissing;
};

/// One latency chain's time on this machine's host (phasebench/workload.hpp, LatencyChain;
/// measured in roofline_latency.cpp): the least time one iteration of its workload at its size
/// takes there, whatever its bytes and flops.
struct LatencyFloor {
  double ms = kMissing;  // the floor: the median of the chain's timed calls, over `threads`
  std::string what;      // the workload's words for the chain
  std::string method;    // how it was timed, in words
  int calls = 0;         // how many calls were timed
  std::string bound = "latency";  // the row's `bound` where this floor binds (LatencyChain::bound)
  int threads = 1;                // what the one-thread median is divided by (LatencyChain::splits_over_threads)
};

/// One point of a working-set sweep: the read rate of `threads` threads, each over its own
/// `bytes_per_thread` of data again and again.
struct WorkingSetRate {
  double bytes_per_thread = 0;
  double gb_per_s = kMissing;  // all threads together
};

/// A cache level a working-set sweep shows: the largest working set per thread that still reads
/// at the level's rate, and the best rate measured over working sets of that level.
struct FoundCacheLevel {
  double bytes_per_thread = 0;
  double gb_per_s = kMissing;
};

/// What a short probe at a run's start measured against the cached ceilings: on a shared machine
/// memory bandwidth and the fp32 peak change from one hour to the next, so a run whose ceilings
/// come from the cache holds its rows to this hour's (Ceilings' bandwidth and peak) and keeps the
/// cached ones here.
struct Recheck {
  double cached_bandwidth_gb_per_s = kMissing, cached_peak_gflop_per_s = kMissing;
  std::string cached_measured_at;
  double noise = kMissing;    // how far two back-to-back short probes of memory differ, relative
  double seconds = kMissing;  // the short probe's time
};

struct Ceilings {
  double bandwidth_gb_per_s = kMissing;  // memory (DRAM): data larger than every cache
  double peak_gflop_per_s = kMissing;
  std::vector<CacheCeiling> caches;      // fastest first; empty in runs before the cache probe
  // How the cache levels' sizes were found, in words: the operating system's list, or a
  // working-set sweep (then `cache_sweep` holds its points) where the machine lists none.
  std::string cache_method;
  std::vector<WorkingSetRate> cache_sweep;
  std::string bandwidth_method;  // how the bandwidth was measured, in words
  std::string compute_method;    // "onednn_sgemm", "fma_kernel_avx512", ...
  std::string compute_detail;    // the size or kernel shape, in words
  int threads = 0;
  std::string fingerprint;  // hardware_fingerprint() of the machine measured
  std::string measured_at;  // UTC, ISO 8601
  double probe_seconds = kMissing;
  std::string source;  // "measured" or "cache <path>" (how this process got it; not cached)
  // The GPU devices of the run, by device name ("cuda"): their own ceilings, or why they have none.
  // Every GPU device is in one of the two; neither is in a CPU cache file.
  std::map<std::string, DeviceCeilings> devices;
  std::map<std::string, std::string> devices_without_ceilings;
  // The latency floors of the workloads that declare a chain, by latency_floor_key: the host's,
  // measured every run (microseconds each), never cached; a GPU's ceilings have none.
  std::map<std::string, LatencyFloor> latency_floors;
  // Where the ceilings came from the cache: the short probe that replaced its bandwidth and peak
  // with this hour's (hold_to_this_hour). Only in a run's ceilings, never in a cache file.
  std::optional<Recheck> recheck;
};

/// The compute method measure() will use in this process: "onednn_sgemm" when oneDNN is linked
/// in, else the widest FMA kernel this CPU runs.
std::string compute_method_available();

/// Runs the probe now (a few seconds) with `threads` OpenMP threads.
Ceilings measure(int threads);

/// $PHASEBENCH_CACHE_DIR, else $XDG_CACHE_HOME/phasebench, else ~/.cache/phasebench.
std::filesystem::path cache_directory();
/// roofline-<fingerprint>-<threads>t-<method>.json under cache_directory().
std::filesystem::path cache_file(const std::string& fingerprint, int threads, const std::string& method);

/// The cached ceilings of this machine at `threads`, or a fresh measurement that is then cached.
/// A cache that cannot be read is measured over; one that cannot be written is only reported.
/// Writes one line to `log` saying which it was.
Ceilings cached_or_measured(int threads, std::ostream& log);

/// This hour's memory bandwidth and fp32 peak from measure()'s kernels with a fraction of its
/// time budget, at `cached`'s threads, arrays sized by its cache levels, and the peak by its
/// compute method: memory twice (the larger counts, their difference is the noise).
struct BriefProbe {
  double bandwidth_gb_per_s = kMissing, peak_gflop_per_s = kMissing, noise = kMissing, seconds = kMissing;
};
BriefProbe measure_briefly(const Ceilings& cached);

/// Replaces cached ceilings' memory bandwidth and fp32 peak with this hour's (measure_briefly),
/// keeping the cached ones in `recheck`; one line to `log` with both. The cache levels stay.
void hold_to_this_hour(Ceilings& ceilings, std::ostream& log);

/// Whether a rechecked run's bandwidth or peak differs from the cached one by more than the short
/// probe's noise: by more than twice its noise and more than 5%.
bool differs_from_cache(const Ceilings& ceilings);

/// Writes a cache file atomically (creating its directory) and one line to `log` naming it with
/// `summary`; a file that cannot be written is only reported.
void write_cache(const std::filesystem::path& path, const nlohmann::json& json, const std::string& summary,
                 std::ostream& log);

/// Ceilings files carry "format": 2 since the cache levels were added, 3 since a machine that
/// lists no caches has them found by a working-set sweep; a cache file of an older format is
/// measured over (its ceilings may lack the levels), an old run's machine.json still reads.
constexpr int kCeilingsFormat = 3;

/// The cache levels in a working-set sweep (points in any order), fastest first. A point below a
/// later point's rate was disturbed and counts at that rate (rates only fall as the working set
/// grows). The sweep is then cut into plateaus where a rate falls by kCacheStep or more from the
/// point before it. A plateau of one point between two others is a transition and belongs to no
/// level, and neighbouring plateaus whose best rates are within kCacheStep of each other are one
/// level (noise split it). Every plateau but the last (memory) is a level: its largest
/// working set and its best rate, so that both err towards a ceiling no row can beat. None when
/// the sweep shows a single plateau or has fewer than three points.
constexpr double kCacheStep = 1.25;
std::vector<FoundCacheLevel> cache_levels_in_sweep(std::vector<WorkingSetRate> sweep);

nlohmann::json to_json(const Ceilings& ceilings);
/// Throws InputError naming the missing or mistyped key.
Ceilings from_json(const nlohmann::json& json);

/// The highest bandwidth at which `working_set_bytes` of data can be read and written again and
/// again: the first bytes at the fastest cache's bandwidth up to its capacity, the next at the
/// next level's up to the levels' summed capacity, and so on, the rest at memory bandwidth; the
/// result is the working set over that time. A level measured slower than a slower level (noise)
/// counts as fast as that one. Memory bandwidth alone when the working set is unknown or the
/// ceilings have no cache levels.
double attainable_bandwidth(double working_set_bytes, const Ceilings& ceilings);

/// The least data one iteration can keep between iterations, from its declared (compulsory)
/// bytes: every value is read once or written once, and one that is both (updated in place) is
/// counted twice, so the data occupy at least half the declared bytes.
double working_set_lower_bound(double declared_bytes);

/// The ceiling `working_set_bytes` of data is streamed from when it stays between iterations: the
/// first cache level whose capacity, summed with the faster levels' (as attainable_bandwidth fills
/// them), holds it; "memory" when none does, the size is unknown, or there are no cache levels.
std::string slowest_level_reached(double working_set_bytes, const Ceilings& ceilings);

/// Where a row stands on its roofline: its share of the attainable rate and the ceiling that sets
/// that rate (results.csv's roofline_pct and bound).
struct RooflinePosition {
  double percent = kMissing;
  std::string bound;  // "compute", "memory" or a cache level ("L2"); empty when percent is NaN
};

/// The row's share of the attainable rate, in percent: the larger of gflop_per_s / peak and
/// gb_per_s / bandwidth (each ceiling's least time for the row's work over its time), with
/// bandwidth = attainable_bandwidth(working_set_lower_bound(bytes_per_iteration)); that equals
/// gflop_per_s / min(peak, intensity * bandwidth) with intensity = gflop_per_s / gb_per_s. The
/// bound is "compute" when the peak gives the larger share, else the level the data are streamed
/// from (slowest_level_reached). A row with bytes but no flops is bound by its data, one with
/// flops but no bytes by compute. NaN and no bound when the row or the ceilings lack the numbers.
/// bytes_per_iteration NaN: memory bandwidth.
RooflinePosition roofline_position(double gflop_per_s, double gb_per_s, double bytes_per_iteration,
                                   const Ceilings& ceilings);

/// roofline_position(...).percent.
double percent_of_roofline(double gflop_per_s, double gb_per_s, double bytes_per_iteration,
                           const Ceilings& ceilings);

/// The ceilings a row on `device` is measured against: a GPU's own (memory, its L2 as the one cache
/// level, and the bf16 tensor-core peak when the row computes in bf16, else the fp32 peak; a bf16
/// row on a GPU without a measured bf16 peak gets no compute ceiling); nullopt for a GPU without
/// ceilings; the CPU's (`machine` itself, devices dropped) for every other device.
std::optional<Ceilings> ceilings_for_device(const Ceilings& machine, const std::string& device, bool computes_in_bf16);

/// "suite/workload/size": a latency floor's key in Ceilings::latency_floors.
std::string latency_floor_key(const std::string& suite, const std::string& workload, const std::string& size);

/// `position` held to the row's latency floor as well: where the floor of the row's workload and
/// size over the row's median time is the larger share, that share, with the floor's own bound
/// ("latency", "scatter"). Unchanged without a floor for the row (a GPU row's ceilings have none)
/// or without a median.
RooflinePosition with_latency_floor(const RooflinePosition& position, const ResultRow& row, const Ceilings& ceilings);

/// Whether `bound` is a latency floor's ("latency", "scatter": LatencyChain::bound) rather than
/// one of the roofline's ceilings ("compute", "memory", a cache level "L1d", "L2") or empty.
bool is_latency_floor_bound(const std::string& bound);

/// Times the latency chain of every registered workload that declares one, at every size it can
/// run, on the calling thread (the same clock reads around each call as a timed iteration), into
/// `ceilings.latency_floors`; one line to `log` per floor. A chain that throws is reported, not
/// recorded.
void add_latency_floors(Ceilings& ceilings, std::ostream& log);

/// Sets roofline_pct and bound in every row that has gb_per_s or gflop_per_s (its declared bytes
/// per iteration are gb_per_s times median_ms), against ceilings_for_device(row.device, fp32).
void add_roofline_pct(std::vector<ResultRow>& rows, const Ceilings& ceilings);

// ---- GPU devices (roofline_devices.cpp) -----------------------------------------------------------

/// GPU ceilings files and machine.json's roofline.devices entries carry "format": 1.
constexpr int kDeviceCeilingsFormat = 1;

nlohmann::json to_json(const DeviceCeilings& ceilings);
/// Throws InputError naming the missing or mistyped key.
DeviceCeilings device_ceilings_from_json(const nlohmann::json& json);

/// roofline-gpu-<identity>-<probe method>.json under cache_directory(), every character of the
/// identity other than [A-Za-z0-9._-] written as '_': one file per physical GPU and probe.
std::filesystem::path device_cache_file(const DeviceIdentity& identity);

/// `backend`'s ceilings of `device`: cached for its physical device, else measured (and cached;
/// a cache that cannot be written is only reported). No ceilings, with why, when the backend has
/// no probe for the device or the probe fails. One line to `log` saying which.
DeviceProbe device_ceilings_cached_or_measured(Backend& backend, const std::string& device, std::ostream& log);

/// Every GPU device of `backends` into `ceilings.devices` (the first backend whose probe measures
/// it: torch's "cuda" and cuda's "cuda" are one physical GPU) or, when none does, into
/// `ceilings.devices_without_ceilings` with the reason (the device's own unavailability first).
void add_device_ceilings(Ceilings& ceilings, const std::vector<std::shared_ptr<Backend>>& backends,
                         std::ostream& log);

/// What `run` records: cached_or_measured(threads), held to this hour's by hold_to_this_hour when
/// they came from the cache, then add_device_ceilings over the registry, then add_latency_floors.
Ceilings machine_ceilings(int threads, std::ostream& log);

/// UTC now, ISO 8601 ("2026-11-23T10:00:00Z"): when ceilings were measured.
std::string utc_now();

}  // namespace pb::roofline
