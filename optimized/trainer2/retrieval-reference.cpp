// trainer2/retrieval on the reference backend: reference<float>, the serial baseline.

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::reference_backend {
namespace {

namespace ref = pb::reference::trainer2;
using suites::trainer2::values_as;

class RetrievalReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    const HostArray& state = require(in, "cand_state");
    B_ = state.shape.at(0), K_ = state.shape.at(1), d_ = state.shape.at(2);
    act_shape_ = {B_, d_};
    weights_shape_ = {B_, K_};
    q_ = values_as<float>(require(in, "q"));
    cand_coord_ = values_as<float>(require(in, "cand_coord"));
    cand_state_ = values_as<float>(state);
    g_ = values_as<float>(require(in, "g"));
    R_ = values_as<float>(require(in, "R"));
  }
  // Each output buffer is sized from the shape it is handed back with.
  void poison_outputs() override {
    act_ = nan_floats(act_shape_);
    weights_ = nan_floats(weights_shape_);
  }
  void run() override {
    ref::retrieval<float>(B_, K_, d_, q_.data(), cand_coord_.data(), cand_state_.data(), g_.data(),
                          R_.data(), act_.data(), weights_.data());
  }
  ArrayMap outputs() override {
    return {{"act", HostArray::from_floats(act_shape_, act_)},
            {"weights", HostArray::from_floats(weights_shape_, weights_)}};
  }

 private:
  int64_t B_ = 0, K_ = 0, d_ = 0;
  std::vector<int64_t> act_shape_, weights_shape_;
  std::vector<float> q_, cand_coord_, cand_state_, g_, R_, act_, weights_;
};

const VariantRegistration registration{"trainer2/retrieval", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<RetrievalReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
