// The "reference" backend: the naive loops of reference/, run serially on the host in fp32.
// Nothing is dispatched and nothing waits for a device, so its counters are zero by construction
// (bytes allocated come from the harness's C++ heap hook).

#include "phasebench/backend.hpp"

namespace pb::reference_backend {
namespace {

class ReferenceBackend final : public Backend {
 public:
  std::string name() const override { return "reference"; }
  std::vector<DeviceInfo> devices() const override {
    return {{"cpu", false, "", "one host thread, naive loops"}};
  }
  int effective_threads(int) const override { return 1; }
  nlohmann::json metadata() const override {
    return {{"kind", "serial C++ loops, fp32 timed, fp64 oracle"}, {"threads", 1}};
  }
};

const BackendRegistration registration{std::make_shared<ReferenceBackend>()};

}  // namespace
}  // namespace pb::reference_backend
