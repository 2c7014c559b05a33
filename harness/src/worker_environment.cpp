#include "openmp_waiting.hpp"

#include <cstdlib>
#include <string>

namespace pb::openmp_waiting {
namespace {
// Tells the worker which variables the supervisor set, as the environment is all they share.
constexpr const char* kSetByPhasebench = "PHASEBENCH_SET_GOMP_SPINCOUNT";
}  // namespace

void bound_spinning_for_workers() {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  setenv("GOMP_SPINCOUNT", kBoundedSpinCount, 1);
  setenv(kSetByPhasebench, "1", 1);
}

nlohmann::json set_by_phasebench() {
  nlohmann::json names = nlohmann::json::array();
  const char* marker = std::getenv(kSetByPhasebench);
  if (marker && std::string(marker) == "1") names.push_back("GOMP_SPINCOUNT");
  return names;
}

}  // namespace pb::openmp_waiting
