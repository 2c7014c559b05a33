// geometry/christoffel on oneDNN: UNSUPPORTED on every phase. The metric network maps onto matmul
// with binary and eltwise (gelu_erf, soft_relu, tanh, clip) post-ops, but every phase needs G^-1
// or a solve with G at each point, and oneDNN has no matrix inverse, LU or linear-solve primitive
// (batched or not); a hand-written loop in its place would not be oneDNN.

#include <memory>

#include "phasebench/variant.hpp"
#include "suites/geometry/christoffel.hpp"

namespace {

namespace geo = pb::suites::geometry;

class ChristoffelOnednn final : public pb::Variant {
 public:
  std::optional<pb::CannotRun> support() const override {
    return pb::CannotRun{pb::CannotRun::Kind::Unsupported,
                         "oneDNN has no matrix inverse, LU or linear-solve primitive (G^-1 / solve(G, S) per point)"};
  }
  void setup(const pb::ArrayMap&) override {}
  void poison_outputs() override {}
  void run() override {}
  pb::ArrayMap outputs() override { return {}; }
};

const pb::VariantRegistration registration{
    geo::kChristoffel, "onednn", {geo::kNestedLoops, geo::kContraction, geo::kBatchedMetric, geo::kSolve},
    [](const pb::VariantContext&) { return std::make_unique<ChristoffelOnednn>(); }};

}  // namespace
