// The roofline cache and the share of the roofline each row reaches. The probe's kernels are in
// roofline_probe.cpp.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <ostream>

#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/machine.hpp"
#include "roofline/roofline.hpp"

namespace pb::roofline {
namespace fs = std::filesystem;

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The cache is only a shortcut: any problem reading it, or an older format without the cache
// levels, means "measure again".
bool read_cache(const fs::path& path, Ceilings& ceilings) {
  std::ifstream in(path);
  if (!in) return false;
  try {
    const nlohmann::json json = nlohmann::json::parse(in);
    if (!json.is_object() || json.value("format", 1) < kCeilingsFormat) return false;
    ceilings = from_json(json);
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
  std::string line = text;
  for (const CacheCeiling& cache : ceilings.caches) {
    std::snprintf(text, sizeof text, ", %s %.0f GB/s", cache.name.c_str(), cache.gb_per_s);
    line += text;
  }
  return line;
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
  write_cache(path, to_json(ceilings), summary(ceilings), log);
  return ceilings;
}

void hold_to_this_hour(Ceilings& ceilings, std::ostream& log) {
  const BriefProbe now = measure_briefly(ceilings);
  Recheck recheck;
  recheck.cached_bandwidth_gb_per_s = ceilings.bandwidth_gb_per_s;
  recheck.cached_peak_gflop_per_s = ceilings.peak_gflop_per_s;
  recheck.cached_measured_at = ceilings.measured_at;
  recheck.noise = now.noise;
  recheck.seconds = now.seconds;
  ceilings.bandwidth_gb_per_s = now.bandwidth_gb_per_s;
  ceilings.peak_gflop_per_s = now.peak_gflop_per_s;
  ceilings.measured_at = utc_now();
  ceilings.recheck = recheck;
  char text[256];
  std::snprintf(text, sizeof text,
                "roofline: this hour's short probe (%.1f s): %.1f GB/s memory (cached %.1f), %.1f GFLOP/s fp32 "
                "(cached %.1f), noise %.0f%%: rows are held to this hour's%s\n",
                now.seconds, now.bandwidth_gb_per_s, recheck.cached_bandwidth_gb_per_s, now.peak_gflop_per_s,
                recheck.cached_peak_gflop_per_s, 100 * now.noise,
                differs_from_cache(ceilings) ? " (they differ from the cache beyond the noise)" : "");
  log << text;
}

bool differs_from_cache(const Ceilings& ceilings) {
  if (!ceilings.recheck) return false;
  const Recheck& r = *ceilings.recheck;
  const double threshold = std::max(0.05, 2 * (std::isfinite(r.noise) ? r.noise : 0.0));
  const auto differs = [&](double now, double cached) { return std::abs(now / cached - 1) > threshold; };
  return differs(ceilings.bandwidth_gb_per_s, r.cached_bandwidth_gb_per_s) ||
         differs(ceilings.peak_gflop_per_s, r.cached_peak_gflop_per_s);
}

void write_cache(const fs::path& path, const nlohmann::json& json, const std::string& summary, std::ostream& log) {
  try {
    fs::create_directories(path.parent_path());
    write_file_atomically(path, json.dump(2) + "\n");
    log << "roofline: " << summary << "; cached in " << path.string() << "\n";
  } catch (const std::exception& error) {
    log << "roofline: " << summary << "; not cached (" << error.what() << ")\n";
  }
}

nlohmann::json to_json(const Ceilings& ceilings) {
  nlohmann::json caches = nlohmann::json::array();
  for (const CacheCeiling& cache : ceilings.caches)
    caches.push_back({{"name", cache.name},
                      {"capacity_bytes", cache.capacity_bytes},
                      {"working_set_bytes", cache.working_set_bytes},
                      {"gb_per_s", cache.gb_per_s}});
  nlohmann::json json = {{"format", kCeilingsFormat},
                         {"bandwidth_gb_per_s", ceilings.bandwidth_gb_per_s},
                         {"peak_gflop_per_s", ceilings.peak_gflop_per_s},
                         {"caches", caches},
                         {"bandwidth_method", ceilings.bandwidth_method},
                         {"compute_method", ceilings.compute_method},
                         {"compute_detail", ceilings.compute_detail},
                         {"threads", ceilings.threads},
                         {"fingerprint", ceilings.fingerprint},
                         {"measured_at", ceilings.measured_at}};
  if (!ceilings.cache_method.empty()) json["cache_method"] = ceilings.cache_method;
  for (const WorkingSetRate& point : ceilings.cache_sweep)
    json["cache_sweep"].push_back({{"bytes_per_thread", point.bytes_per_thread}, {"gb_per_s", point.gb_per_s}});
  if (std::isfinite(ceilings.probe_seconds)) json["probe_seconds"] = ceilings.probe_seconds;  // JSON has no NaN
  if (!ceilings.source.empty()) json["source"] = ceilings.source;
  // Only in a run's ceilings (machine.json), never in the CPU's cache files.
  if (const auto& r = ceilings.recheck)
    json["recheck"] = {{"cached_bandwidth_gb_per_s", r->cached_bandwidth_gb_per_s},
                       {"cached_peak_gflop_per_s", r->cached_peak_gflop_per_s},
                       {"cached_measured_at", r->cached_measured_at},
                       {"noise", std::isfinite(r->noise) ? r->noise : 0.0},
                       {"seconds", std::isfinite(r->seconds) ? r->seconds : 0.0}};
  for (const auto& [device, gpu] : ceilings.devices) json["devices"][device] = to_json(gpu);
  if (!ceilings.devices_without_ceilings.empty()) json["devices_without_ceilings"] = ceilings.devices_without_ceilings;
  for (const auto& [key, floor] : ceilings.latency_floors)
    if (std::isfinite(floor.ms))
      json["latency_floors"][key] = {{"ms", floor.ms},       {"what", floor.what},   {"method", floor.method},
                                     {"calls", floor.calls}, {"bound", floor.bound}, {"threads", floor.threads}};
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
    if (json.contains("caches"))  // absent before the cache levels were measured
      for (const nlohmann::json& cache : json.at("caches"))
        ceilings.caches.push_back({cache.at("name").get<std::string>(), cache.at("capacity_bytes").get<double>(),
                                   cache.at("working_set_bytes").get<double>(), cache.at("gb_per_s").get<double>()});
    ceilings.cache_method = json.value("cache_method", "");  // absent before the cache sweep
    if (json.contains("cache_sweep"))                        // only where the levels were found by the sweep
      for (const nlohmann::json& point : json.at("cache_sweep"))
        ceilings.cache_sweep.push_back(
            {point.at("bytes_per_thread").get<double>(), point.at("gb_per_s").get<double>()});
    if (json.contains("recheck")) {  // absent before the per-run recheck, and where the probe ran in full
      const nlohmann::json& r = json.at("recheck");
      ceilings.recheck =
          Recheck{r.at("cached_bandwidth_gb_per_s").get<double>(), r.at("cached_peak_gflop_per_s").get<double>(),
                  r.value("cached_measured_at", ""), r.value("noise", kMissing), r.value("seconds", kMissing)};
    }
    if (json.contains("devices"))  // absent before the GPU probe, and on machines without a GPU
      for (const auto& [device, gpu] : json.at("devices").items())
        ceilings.devices[device] = device_ceilings_from_json(gpu);
    if (json.contains("devices_without_ceilings"))
      ceilings.devices_without_ceilings = json.at("devices_without_ceilings").get<std::map<std::string, std::string>>();
    if (json.contains("latency_floors"))  // absent before the latency floors, and where no workload declares one
      for (const auto& [key, floor] : json.at("latency_floors").items())
        ceilings.latency_floors[key] = {floor.at("ms").get<double>(), floor.value("what", ""),
                                        floor.value("method", ""),        floor.value("calls", 0),
                                        floor.value("bound", "latency"),  floor.value("threads", 1)};
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("roofline ceilings: ") + error.what());
  }
  if (!(ceilings.bandwidth_gb_per_s > 0) || !(ceilings.peak_gflop_per_s > 0))
    throw InputError("roofline ceilings: bandwidth and peak must be positive");
  for (const CacheCeiling& cache : ceilings.caches)
    if (!(cache.capacity_bytes > 0) || !(cache.gb_per_s > 0))
      throw InputError("roofline ceilings: cache " + cache.name + " needs a positive capacity and bandwidth");
  for (const auto& [key, floor] : ceilings.latency_floors) {
    if (!(floor.ms > 0)) throw InputError("roofline ceilings: latency floor " + key + " needs a positive ms");
    if (floor.threads < 1 || floor.bound.empty())
      throw InputError("roofline ceilings: latency floor " + key + " needs a bound and at least one thread");
  }
  return ceilings;
}

double attainable_bandwidth(double working_set_bytes, const Ceilings& ceilings) {
  const double memory = ceilings.bandwidth_gb_per_s;
  const std::vector<CacheCeiling>& caches = ceilings.caches;
  if (!(working_set_bytes > 0) || caches.empty()) return memory;
  // Each level at least as fast as every slower one: the bound must hold whatever the noise.
  std::vector<double> speed(caches.size());
  double slower = memory;
  for (size_t level = caches.size(); level-- > 0;) slower = speed[level] = std::max(caches[level].gb_per_s, slower);
  // Fill the fastest levels first; a level holds at most the capacities up to it summed (an
  // exclusive hierarchy holds the sum, an inclusive one less: the sum is the bound).
  double placed = 0, held = 0, seconds_per_gb = 0;
  for (size_t level = 0; level < caches.size(); ++level) {
    held += caches[level].capacity_bytes;
    const double here = std::min(working_set_bytes, held) - placed;
    if (here <= 0) continue;
    seconds_per_gb += here / speed[level];
    placed += here;
  }
  seconds_per_gb += (working_set_bytes - placed) / memory;
  return working_set_bytes / seconds_per_gb;
}

double working_set_lower_bound(double declared_bytes) { return declared_bytes / 2; }

std::string slowest_level_reached(double working_set_bytes, const Ceilings& ceilings) {
  if (!(working_set_bytes > 0)) return "memory";
  double held = 0;
  for (const CacheCeiling& cache : ceilings.caches) {
    held += cache.capacity_bytes;  // the same summed capacities attainable_bandwidth fills
    if (working_set_bytes <= held) return cache.name;
  }
  return "memory";
}

RooflinePosition roofline_position(double gflop_per_s, double gb_per_s, double bytes_per_iteration,
                                   const Ceilings& ceilings) {
  const double peak = ceilings.peak_gflop_per_s;
  if (!(ceilings.bandwidth_gb_per_s > 0) || !(peak > 0)) return {};
  const double working_set = working_set_lower_bound(bytes_per_iteration);
  const double bandwidth = attainable_bandwidth(working_set, ceilings);
  // The least time per unit of work each ceiling allows, as a share of the row's time: the
  // larger one binds (equal to gflop_per_s / min(peak, intensity * bandwidth)).
  const double compute_share = gflop_per_s > 0 ? gflop_per_s / peak * 100.0 : kMissing;
  const double traffic_share = gb_per_s > 0 ? gb_per_s / bandwidth * 100.0 : kMissing;
  if (std::isnan(compute_share) && std::isnan(traffic_share)) return {};
  if (std::isnan(traffic_share) || compute_share > traffic_share) return {compute_share, "compute"};
  return {traffic_share, slowest_level_reached(working_set, ceilings)};
}

double percent_of_roofline(double gflop_per_s, double gb_per_s, double bytes_per_iteration,
                           const Ceilings& ceilings) {
  return roofline_position(gflop_per_s, gb_per_s, bytes_per_iteration, ceilings).percent;
}

std::optional<Ceilings> ceilings_for_device(const Ceilings& machine, const std::string& device, bool computes_in_bf16) {
  if (machine.devices_without_ceilings.count(device)) return std::nullopt;
  const auto gpu = machine.devices.find(device);
  if (gpu == machine.devices.end()) {
    Ceilings cpu = machine;
    cpu.devices.clear();
    cpu.devices_without_ceilings.clear();
    return cpu;
  }
  const DeviceCeilings& own = gpu->second;
  Ceilings ceilings;
  ceilings.bandwidth_gb_per_s = own.bandwidth_gb_per_s;
  ceilings.bandwidth_method = own.bandwidth_method;
  if (own.l2_gb_per_s > 0 && own.l2_bytes > 0)
    ceilings.caches.push_back({"L2", own.l2_bytes, own.l2_bytes / 2, own.l2_gb_per_s});
  // A bf16 phase may still do part of its work in fp32: its ceiling is the larger of the two, and
  // it has none without a measured tensor-core peak (the fp32 one alone could be beaten).
  ceilings.peak_gflop_per_s = own.fp32_peak_gflop_per_s;
  ceilings.compute_method = own.fp32_method;
  if (computes_in_bf16) {
    ceilings.peak_gflop_per_s = own.bf16_peak_gflop_per_s > 0 ? std::max(own.bf16_peak_gflop_per_s, own.fp32_peak_gflop_per_s) : kMissing;
    ceilings.compute_method = own.bf16_method;
  }
  ceilings.fingerprint = own.device.identity;
  ceilings.measured_at = own.measured_at;
  ceilings.source = own.source;
  return ceilings;
}

std::string latency_floor_key(const std::string& suite, const std::string& workload, const std::string& size) {
  return suite + "/" + workload + "/" + size;
}

RooflinePosition with_latency_floor(const RooflinePosition& position, const ResultRow& row, const Ceilings& ceilings) {
  const auto floor = ceilings.latency_floors.find(latency_floor_key(row.suite, row.workload, row.size));
  if (floor == ceilings.latency_floors.end() || !(row.median_ms > 0)) return position;
  const double latency_share = floor->second.ms / row.median_ms * 100.0;
  if (!(latency_share > position.percent) && !std::isnan(position.percent)) return position;
  return {latency_share, floor->second.bound};
}

bool is_latency_floor_bound(const std::string& bound) {
  if (bound.empty() || bound == "compute" || bound == "memory") return false;
  const bool cache_level = bound.size() >= 2 && bound[0] == 'L' && std::isdigit(static_cast<unsigned char>(bound[1]));
  return !cache_level;
}

void add_roofline_pct(std::vector<ResultRow>& rows, const Ceilings& ceilings) {
  for (ResultRow& row : rows) {
    const double bytes_per_iteration = row.gb_per_s * 1e9 * row.median_ms / 1e3;  // NaN without bytes
    const std::optional<Ceilings> own = ceilings_for_device(ceilings, row.device, false);
    const RooflinePosition position =
        own ? with_latency_floor(roofline_position(row.gflop_per_s, row.gb_per_s, bytes_per_iteration, *own), row, *own)
            : RooflinePosition{};
    row.roofline_pct = position.percent;
    row.bound = position.bound;
  }
}

}  // namespace pb::roofline
