// The roofline cache and the share of the roofline each row reaches. The probe's kernels are in
// roofline_probe.cpp.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/machine.hpp"
#include "roofline.hpp"

namespace pb::roofline {
namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The cache is only a shortcut: any problem reading it means "measure again".
bool read_cache(const fs::path& path, Ceilings& ceilings) {
  std::ifstream in(path);
  if (!in) return false;
  try {
    ceilings = from_json(nlohmann::json::parse(in));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::string summary(const Ceilings& ceilings) {
  char text[160];
  std::snprintf(text, sizeof text, "%.1f GB/s memory bandwidth, %.1f GFLOP/s fp32 peak (%s), %d threads",
                ceilings.bandwidth_gb_per_s, ceilings.peak_gflop_per_s,
                ceilings.compute_method.c_str(), ceilings.threads);
  return text;
}

}  // namespace

fs::path cache_directory() {
  if (const std::string dir = environment("PHASEBENCH_CACHE_DIR"); !dir.empty()) return dir;
  if (const std::string dir = environment("XDG_CACHE_HOME"); !dir.empty()) return fs::path(dir) / "phasebench";
  if (const std::string home = environment("HOME"); !home.empty()) return fs::path(home) / ".cache" / "phasebench";
  return fs::temp_directory_path() / "phasebench-cache";
}

fs::path cache_file(const std::string& fingerprint, int threads, const std::string& method) {
  return cache_directory() / ("roofline-" + fingerprint + "-" + std::to_string(threads) + "t-" + method + ".json");
}

Ceilings cached_or_measured(int threads, std::ostream& log) {
  const fs::path path = cache_file(hardware_fingerprint(), threads, compute_method_available());
  Ceilings ceilings;
  if (read_cache(path, ceilings) && ceilings.threads == threads) {
    ceilings.source = "cache " + path.string();
    log << "roofline: " << summary(ceilings) << ", cached in " << path.string()
        << " (delete it to measure again)\n";
    return ceilings;
  }
  log << "roofline: measuring memory bandwidth and peak fp32 rate (once per machine)...\n";
  ceilings = measure(threads);
  try {
    fs::create_directories(path.parent_path());
    write_file_atomically(path, to_json(ceilings).dump(2) + "\n");
    log << "roofline: " << summary(ceilings) << "; cached in " << path.string() << "\n";
  } catch (const std::exception& error) {
    log << "roofline: " << summary(ceilings) << "; not cached (" << error.what() << ")\n";
  }
  return ceilings;
}

nlohmann::json to_json(const Ceilings& ceilings) {
  nlohmann::json json = {{"bandwidth_gb_per_s", ceilings.bandwidth_gb_per_s},
                         {"peak_gflop_per_s", ceilings.peak_gflop_per_s},
                         {"bandwidth_method", ceilings.bandwidth_method},
                         {"compute_method", ceilings.compute_method},
                         {"compute_detail", ceilings.compute_detail},
                         {"threads", ceilings.threads},
                         {"fingerprint", ceilings.fingerprint},
                         {"measured_at", ceilings.measured_at}};
  if (std::isfinite(ceilings.probe_seconds)) json["probe_seconds"] = ceilings.probe_seconds;  // JSON has no NaN
  if (!ceilings.source.empty()) json["source"] = ceilings.source;
  return json;
}

Ceilings from_json(const nlohmann::json& json) {
  Ceilings ceilings;
  try {
    ceilings.bandwidth_gb_per_s = json.at("bandwidth_gb_per_s").get<double>();
    ceilings.peak_gflop_per_s = json.at("peak_gflop_per_s").get<double>();
    ceilings.bandwidth_method = json.at("bandwidth_method").get<std::string>();
    ceilings.compute_method = json.at("compute_method").get<std::string>();
    ceilings.compute_detail = json.value("compute_detail", "");
    ceilings.threads = json.at("threads").get<int>();
    ceilings.fingerprint = json.at("fingerprint").get<std::string>();
    ceilings.measured_at = json.value("measured_at", "");
    if (json.contains("probe_seconds") && json["probe_seconds"].is_number())
      ceilings.probe_seconds = json["probe_seconds"].get<double>();
    ceilings.source = json.value("source", "");
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("roofline ceilings: ") + error.what());
  }
  if (!(ceilings.bandwidth_gb_per_s > 0) || !(ceilings.peak_gflop_per_s > 0))
    throw InputError("roofline ceilings: bandwidth and peak must be positive");
  return ceilings;
}

double percent_of_roofline(double gflop_per_s, double gb_per_s, const Ceilings& ceilings) {
  const double bandwidth = ceilings.bandwidth_gb_per_s, peak = ceilings.peak_gflop_per_s;
  if (!(bandwidth > 0) || !(peak > 0)) return kMissing;
  if (gflop_per_s > 0 && gb_per_s > 0) {
    const double intensity = gflop_per_s / gb_per_s;  // flops per byte
    return gflop_per_s / std::min(peak, intensity * bandwidth) * 100.0;
  }
  if (gflop_per_s > 0) return gflop_per_s / peak * 100.0;  // no declared bytes: compute-bound
  if (gb_per_s > 0) return gb_per_s / bandwidth * 100.0;   // no declared flops: a copy
  return kMissing;
}

void add_roofline_pct(std::vector<ResultRow>& rows, const Ceilings& ceilings) {
  for (ResultRow& row : rows) row.roofline_pct = percent_of_roofline(row.gflop_per_s, row.gb_per_s, ceilings);
}

}  // namespace pb::roofline
