// The GPU side of the roofline (roofline.hpp, "GPU devices"): each GPU device's own ceilings, from
// its backend's probe (Backend::measure_device_ceilings), cached per physical device and probe
// method like the CPU's, and their JSON.

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <ostream>

#include "phasebench/errors.hpp"
#include "roofline/roofline.hpp"

namespace pb::roofline {
namespace fs = std::filesystem;

namespace {

// A cache file name keeps letters, digits, '.', '_' and '-' only.
std::string file_name_safe(const std::string& text) {
  std::string safe = text;
  for (char& c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return safe;
}

void put_if_measured(nlohmann::json& json, const char* key, double value) {
  if (std::isfinite(value)) json[key] = value;  // JSON has no NaN: absent means not measured
}

double optional_number(const nlohmann::json& json, const char* key) {
  if (!json.contains(key) || json[key].is_null()) return kMissing;
  return json.at(key).get<double>();  // a string here throws, and names the key
}

// As read_cache in roofline.cpp: any problem, or another device's file, means "measure again".
bool read_device_cache(const fs::path& path, const DeviceIdentity& identity, DeviceCeilings& ceilings) {
  std::ifstream in(path);
  if (!in) return false;
  try {
    const nlohmann::json json = nlohmann::json::parse(in);
    if (!json.is_object() || json.value("format", 0) != kDeviceCeilingsFormat) return false;
    ceilings = device_ceilings_from_json(json);
    return ceilings.device.identity == identity.identity && ceilings.device.probe_method == identity.probe_method;
  } catch (const std::exception&) {
    return false;
  }
}

std::string summary(const DeviceCeilings& ceilings) {
  char text[256];
  std::snprintf(text, sizeof text, "%s: %.0f GB/s memory, %.0f GB/s L2, %.0f GFLOP/s fp32, %.0f GFLOP/s bf16",
                ceilings.device.gpu.c_str(), ceilings.bandwidth_gb_per_s, ceilings.l2_gb_per_s,
                ceilings.fp32_peak_gflop_per_s, ceilings.bf16_peak_gflop_per_s);
  return text;
}

// Measures, stamps and caches; the probe's own failure comes back as its reason.
DeviceProbe measure_and_cache(Backend& backend, const std::string& device, const fs::path& path, std::ostream& log) {
  log << "roofline: measuring the memory bandwidth and peak rates of " << backend.name() << "/" << device
      << " (once per GPU)...\n";
  const auto start = std::chrono::steady_clock::now();
  DeviceProbe probe = backend.measure_device_ceilings(device);
  if (!probe.ceilings) {
    log << "roofline: no ceilings for " << backend.name() << "/" << device << ": " << probe.why_not << "\n";
    return probe;
  }
  DeviceCeilings& ceilings = *probe.ceilings;
  ceilings.measured_at = utc_now();
  ceilings.probe_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ceilings.source = "measured";
  write_cache(path, to_json(ceilings), summary(ceilings), log);
  return probe;
}

}  // namespace

nlohmann::json to_json(const DeviceCeilings& ceilings) {
  nlohmann::json json = {{"format", kDeviceCeilingsFormat},
                         {"gpu", ceilings.device.gpu},
                         {"identity", ceilings.device.identity},
                         {"probe_method", ceilings.device.probe_method},
                         {"bandwidth_method", ceilings.bandwidth_method},
                         {"fp32_method", ceilings.fp32_method},
                         {"bf16_method", ceilings.bf16_method},
                         {"measured_at", ceilings.measured_at}};
  put_if_measured(json, "bandwidth_gb_per_s", ceilings.bandwidth_gb_per_s);
  put_if_measured(json, "l2_bytes", ceilings.l2_bytes);
  put_if_measured(json, "l2_gb_per_s", ceilings.l2_gb_per_s);
  put_if_measured(json, "fp32_peak_gflop_per_s", ceilings.fp32_peak_gflop_per_s);
  put_if_measured(json, "bf16_peak_gflop_per_s", ceilings.bf16_peak_gflop_per_s);
  put_if_measured(json, "probe_seconds", ceilings.probe_seconds);
  if (!ceilings.source.empty()) json["source"] = ceilings.source;
  return json;
}

DeviceCeilings device_ceilings_from_json(const nlohmann::json& json) {
  DeviceCeilings ceilings;
  try {
    ceilings.device.gpu = json.at("gpu").get<std::string>();
    ceilings.device.identity = json.at("identity").get<std::string>();
    ceilings.device.probe_method = json.at("probe_method").get<std::string>();
    ceilings.bandwidth_gb_per_s = json.at("bandwidth_gb_per_s").get<double>();
    ceilings.fp32_peak_gflop_per_s = json.at("fp32_peak_gflop_per_s").get<double>();
    ceilings.bf16_peak_gflop_per_s = optional_number(json, "bf16_peak_gflop_per_s");
    ceilings.l2_bytes = optional_number(json, "l2_bytes");
    ceilings.l2_gb_per_s = optional_number(json, "l2_gb_per_s");
    ceilings.probe_seconds = optional_number(json, "probe_seconds");
    ceilings.bandwidth_method = json.value("bandwidth_method", "");
    ceilings.fp32_method = json.value("fp32_method", "");
    ceilings.bf16_method = json.value("bf16_method", "");
    ceilings.measured_at = json.value("measured_at", "");
    ceilings.source = json.value("source", "");
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("GPU roofline ceilings: ") + error.what());
  }
  if (!(ceilings.bandwidth_gb_per_s > 0) || !(ceilings.fp32_peak_gflop_per_s > 0))
    throw InputError("GPU roofline ceilings of " + ceilings.device.identity +
                     ": bandwidth_gb_per_s and fp32_peak_gflop_per_s must be positive");
  return ceilings;
}

fs::path device_cache_file(const DeviceIdentity& identity) {
  return cache_directory() /
         ("roofline-gpu-" + file_name_safe(identity.identity) + "-" + file_name_safe(identity.probe_method) + ".json");
}

DeviceProbe device_ceilings_cached_or_measured(Backend& backend, const std::string& device, std::ostream& log) {
  const DeviceIdentity identity = backend.device_ceilings_identity(device);
  if (!identity.why_not.empty()) return {std::nullopt, identity.why_not};
  const fs::path path = device_cache_file(identity);
  DeviceCeilings ceilings;
  if (read_device_cache(path, identity, ceilings)) {
    ceilings.source = "cache " + path.string();
    log << "roofline: " << summary(ceilings) << ", cached in " << path.string() << " (delete it to measure again)\n";
    return {ceilings, ""};
  }
  return measure_and_cache(backend, device, path, log);
}

void add_device_ceilings(Ceilings& ceilings, const std::vector<std::shared_ptr<Backend>>& backends, std::ostream& log) {
  for (const auto& backend : backends)
    for (const DeviceInfo& device : backend->devices()) {
      if (!device.is_gpu || ceilings.devices.count(device.name)) continue;
      DeviceProbe probe;
      if (device.unavailable_reason.empty())
        probe = device_ceilings_cached_or_measured(*backend, device.name, log);
      else
        probe.why_not = device.unavailable_reason;
      if (probe.ceilings) {
        ceilings.devices[device.name] = *probe.ceilings;
        ceilings.devices_without_ceilings.erase(device.name);
      } else if (!ceilings.devices_without_ceilings.count(device.name)) {
        ceilings.devices_without_ceilings[device.name] = probe.why_not;
      }
    }
}

Ceilings machine_ceilings(int threads, std::ostream& log) {
  Ceilings ceilings = cached_or_measured(threads, log);
  if (ceilings.source != "measured") hold_to_this_hour(ceilings, log);
  add_device_ceilings(ceilings, registered_backends(), log);
  add_latency_floors(ceilings, log);
  return ceilings;
}

}  // namespace pb::roofline
