#include "engine/worker_environment.hpp"

#include <unistd.h>  // environ

#include <cstdlib>
#include <cstring>
#include <string>

namespace pb::worker_environment {
namespace {

// Tell the worker which variables the supervisor set, as the environment is all they share.
constexpr const char* kSpinCountMarker = "PHASEBENCH_SET_GOMP_SPINCOUNT";
constexpr const char* kTunablesMarker = "PHASEBENCH_SET_GLIBC_TUNABLES";

bool marked(const char* marker) {
  const char* value = std::getenv(marker);
  return value && std::string(value) == "1";
}

// A glibc.malloc tunable in GLIBC_TUNABLES, or one of glibc's MALLOC_*_ variables
// (MALLOC_ARENA_MAX has no trailing underscore).
bool user_chose_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return true;
  for (char** entry = environ; *entry; ++entry) {
    const std::string variable(*entry);
    const std::string name = variable.substr(0, variable.find('='));
    if (name.rfind("MALLOC_", 0) == 0 && (name.back() == '_' || name == "MALLOC_ARENA_MAX")) return true;
  }
  return false;
}

}  // namespace

void bound_spinning_for_workers() {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  setenv("GOMP_SPINCOUNT", kBoundedSpinCount, 1);
  setenv(kSpinCountMarker, "1", 1);
}

void keep_freed_memory_for_workers() {
  if (user_chose_malloc()) return;
  const char* theirs = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = theirs && *theirs ? std::string(theirs) + ":" + kKeepFreedMemory : kKeepFreedMemory;
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  setenv(kTunablesMarker, "1", 1);
}

void prepare_for_workers() {
  bound_spinning_for_workers();
  keep_freed_memory_for_workers();
}

nlohmann::json set_by_phasebench() {
  nlohmann::json names = nlohmann::json::array();
  if (marked(kSpinCountMarker)) names.push_back("GOMP_SPINCOUNT");
  if (marked(kTunablesMarker)) names.push_back("GLIBC_TUNABLES");
  return names;
}

}  // namespace pb::worker_environment
