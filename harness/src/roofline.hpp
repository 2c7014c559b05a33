#pragma once
// The machine's roofline (DESIGN.md "Roofline"): a memory-bandwidth ceiling measured with a triad
// over arrays far larger than the last-level cache, and an fp32 compute ceiling measured with a
// large sgemm (oneDNN's, when the oneDNN backend is linked in) or a vectorized FMA kernel. Both
// are measured once per (hardware fingerprint, thread count, method) and cached, because they
// take a second or two and do not change between runs on one machine.

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasebench/results.hpp"

namespace pb::roofline {

struct Ceilings {
  double bandwidth_gb_per_s = kMissing;
  double peak_gflop_per_s = kMissing;
  std::string bandwidth_method;  // how the bandwidth was measured, in words
  std::string compute_method;    // "onednn_sgemm", "fma_kernel_avx512", ...
  std::string compute_detail;    // the size or kernel shape, in words
  int threads = 0;
  std::string fingerprint;  // hardware_fingerprint() of the machine measured
  std::string measured_at;  // UTC, ISO 8601
  double probe_seconds = kMissing;
  std::string source;  // "measured" or "cache <path>" (how this process got it; not cached)
};

/// The compute method measure() will use in this process: "onednn_sgemm" when oneDNN is linked
/// in, else the widest FMA kernel this CPU runs.
std::string compute_method_available();

/// Runs the probe now (about a second or two) with `threads` OpenMP threads.
Ceilings measure(int threads);

/// $PHASEBENCH_CACHE_DIR, else $XDG_CACHE_HOME/phasebench, else ~/.cache/phasebench.
std::filesystem::path cache_directory();
/// roofline-<fingerprint>-<threads>t-<method>.json under cache_directory().
std::filesystem::path cache_file(const std::string& fingerprint, int threads, const std::string& method);

/// The cached ceilings of this machine at `threads`, or a fresh measurement that is then cached.
/// A cache that cannot be read is measured over; one that cannot be written is only reported.
/// Writes one line to `log` saying which it was.
Ceilings cached_or_measured(int threads, std::ostream& log);

nlohmann::json to_json(const Ceilings& ceilings);
/// Throws InputError naming the missing or mistyped key.
Ceilings from_json(const nlohmann::json& json);

/// Achieved share of the attainable rate: gflop_per_s / min(peak, intensity * bandwidth) * 100,
/// with intensity = gflop_per_s / gb_per_s (flops per byte). A row with bytes but no flops is
/// measured against the bandwidth alone. NaN when the row or the ceilings lack the numbers.
double percent_of_roofline(double gflop_per_s, double gb_per_s, const Ceilings& ceilings);

/// Sets roofline_pct in every row that has gb_per_s or gflop_per_s.
void add_roofline_pct(std::vector<ResultRow>& rows, const Ceilings& ceilings);

}  // namespace pb::roofline
