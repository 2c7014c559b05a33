// spinlock/cnn_rollout_<policy> on the reference backend: reference<float>, timed as the serial
// baseline that speedup_vs_reference divides by. Math: reference/spinlock/cnn_rollout.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::reference_backend {
namespace {

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;

class CnnRolloutReference final : public Variant {
 public:
  explicit CnnRolloutReference(const VariantContext& context)
      : arch_(sp::architecture(context)),
        policy_(sp::policy_of(*context.workload)) {}

  void setup(const ArrayMap& inputs) override {
    weights_ = sp::load_weights<float>(inputs, arch_);
    x0_ = require(inputs, sp::kInitialField).to_floats();
  }

  void poison_outputs() override { trajectory_.assign(trajectory_.size(), std::numeric_limits<float>::quiet_NaN()); }

  void run() override { trajectory_ = ref::rollout<float>(weights_, x0_.data(), arch_, policy_, {}); }

  ArrayMap outputs() override {
    ArrayMap out;
    out[sp::kTrajectory] = HostArray::from_floats(
        {arch_.steps, arch_.realizations, ref::kFieldChannels, arch_.height, arch_.width}, trajectory_.data(),
        static_cast<int64_t>(trajectory_.size()));
    return out;
  }

 private:
  ref::Architecture arch_;
  ref::Policy policy_;
  ref::OperatorWeights<float> weights_;
  std::vector<float> x0_, trajectory_;
};

VariantFactory factory() {
  return [](const VariantContext& context) { return std::make_unique<CnnRolloutReference>(context); };
}

const sp::RolloutRegistration registration{kReferenceBackend, {kSerialRung}, factory()};

}  // namespace
}  // namespace pb::reference_backend
