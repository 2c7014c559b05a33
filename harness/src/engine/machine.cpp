#include "phasebench/machine.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/worker_environment.hpp"
#include "phasebench/backend.hpp"

namespace pb {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The value of the first "key : value" line of /proc/cpuinfo or /proc/meminfo with this key.
std::string proc_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

// Environment variables that change how threaded backends behave, and so the timings: on a shared
// machine OpenMP's active waiting (the default) makes 2-thread rows stall; OMP_WAIT_POLICY=passive
// is then worth recording beside the numbers.
nlohmann::json timing_environment() {
  nlohmann::json environment = nlohmann::json::object();
  for (const char* name : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_SPINCOUNT",
                           "GLIBC_TUNABLES", "OPENBLAS_CORETYPE", "DNNL_MAX_CPU_ISA", "ONEDNN_MAX_CPU_ISA"})
    environment[name] = getenv(name) ? getenv(name) : "";
  environment["set_by_phasebench"] = worker_environment::set_by_phasebench();
  return environment;
}

nlohmann::json cpu_caches() {
  nlohmann::json caches = nlohmann::json::array();
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string size = read_first_line(dir + "/size");
    if (size.empty()) break;
    caches.push_back({{"level", read_first_line(dir + "/level")},
                      {"type", read_first_line(dir + "/type")},
                      {"size", size}});
  }
  return caches;
}

std::string os_name() {
  std::ifstream in("/etc/os-release");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string value = line.substr(12);
    if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
    return value;
  }
  return "unknown";
}

// The commit of the source tree at run time (the build may be older: both are recorded).
std::string current_git_commit() {
  const std::string command =
      std::string("git -C '") + PHASEBENCH_SOURCE_DIR + "' rev-parse --short=12 HEAD 2>/dev/null";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[64];
    while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
    pclose(pipe);
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  return output;
}

std::string hex_hash(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(out).substr(0, 12);
}

nlohmann::json backends_metadata(int threads) {
  nlohmann::json all = nlohmann::json::object();
  for (const auto& backend : registered_backends()) {
    nlohmann::json entry;
    const std::string why_not = backend->unavailable_reason();
    entry["available"] = why_not.empty();
    if (!why_not.empty()) entry["unavailable_reason"] = why_not;
    entry["threads"] = backend->effective_threads(threads);  // what its rows record for --threads
    try {
      entry["config"] = backend->metadata();
    } catch (const std::exception& error) {
      entry["config_error"] = error.what();
    }
    for (const DeviceInfo& device : backend->devices())
      entry["devices"].push_back({{"name", device.name},
                                  {"gpu", device.is_gpu},
                                  {"available", device.unavailable_reason.empty()},
                                  {"reason", device.unavailable_reason},
                                  {"description", device.description}});
    all[backend->name()] = entry;
  }
  return all;
}

std::string gpu_names() {
  std::string names;
  for (const auto& backend : registered_backends())
    for (const DeviceInfo& device : backend->devices())
      if (device.is_gpu && device.unavailable_reason.empty()) names += device.description + ";";
  return names;
}

}  // namespace

std::string hardware_fingerprint() {
  const std::string identity = proc_value("/proc/cpuinfo", "model name") + "|" +
                               std::to_string(std::thread::hardware_concurrency()) + "|" +
                               proc_value("/proc/meminfo", "MemTotal") + "|" + gpu_names();
  return hex_hash(identity);
}

nlohmann::json collect_machine_metadata(const MachineOptions& options) {
  utsname uts{};
  uname(&uts);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  return {
      {"fingerprint", hardware_fingerprint()},
      {"hostname", host},
      {"cpu",
       {{"model", proc_value("/proc/cpuinfo", "model name")},
        {"logical_cores", std::thread::hardware_concurrency()},
        {"flags", proc_value("/proc/cpuinfo", "flags")},
        {"caches", cpu_caches()}}},
      {"memory", proc_value("/proc/meminfo", "MemTotal")},
      {"os", {{"name", os_name()}, {"kernel", std::string(uts.release)}, {"arch", uts.machine}}},
      {"build",
       {{"phasebench_version", PHASEBENCH_VERSION},
        {"compiler", PHASEBENCH_COMPILER},
        {"build_type", PHASEBENCH_BUILD_TYPE},
        {"cxx_flags", PHASEBENCH_CXX_FLAGS},
        {"git_commit_at_configure", PHASEBENCH_CONFIGURE_GIT_COMMIT}}},
      {"git_commit", current_git_commit()},
      {"threads", options.threads},
      {"environment", timing_environment()},
      {"backends", backends_metadata(options.threads)},
  };
}

}  // namespace pb
