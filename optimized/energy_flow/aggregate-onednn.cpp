// energy_flow/aggregate on oneDNN: UNSUPPORTED on every phase. The work is a grouping: a
// compaction of the completed flows by a mask, a hash map or sort by key, and a softmax and sum
// over segments of varying length. oneDNN has no compaction, sort, scatter, gather-by-index or
// segment-reduction primitive, and its softmax and reduction primitives work along a dense axis
// of a fixed shape (one primitive per group size would be built at run time around a hand-written
// grouping loop); a hand-written loop in their place would not be oneDNN.

#include <memory>

#include "phasebench/variant.hpp"
#include "suites/energy_flow/aggregate.hpp"

namespace {

namespace ef = pb::suites::energy_flow;

class AggregateOnednn final : public pb::Variant {
 public:
  std::optional<pb::CannotRun> support() const override {
    return pb::CannotRun{pb::CannotRun::Kind::Unsupported,
                         "oneDNN has no compaction, sort, scatter or segment-reduction primitive (its softmax "
                         "works along a dense axis, not over groups of varying size)"};
  }
  void setup(const pb::ArrayMap&) override {}
  void poison_outputs() override {}
  void run() override {}
  pb::ArrayMap outputs() override { return {}; }
};

const pb::VariantRegistration registration{
    ef::kWorkload, "onednn", {ef::kBaseline, ef::kMaskCollection, ef::kSegmentSoftmax, ef::kBf16Weights},
    [](const pb::VariantContext&) { return std::make_unique<AggregateOnednn>(); }};

}  // namespace
