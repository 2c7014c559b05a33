// geometry/lior_memory_conv on the reference backend: reference<float> (taps on the host, the
// direct O(N^2) causal convolution), timed as the serial baseline that speedup_vs_reference
// divides by. Math: reference/geometry/lior_memory_conv.hpp.

#include <algorithm>
#include <limits>
#include <vector>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_memory_conv.hpp"

namespace pb::reference_backend {
namespace {

namespace conv = pb::suites::geometry::lior_memory_conv;

class LiorMemoryConvReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    const HostArray& x = require(inputs, conv::kInput);
    shape_ = x.shape;
    x_ = x.to_floats();
    params_ = require(inputs, conv::kKernelParams).to_floats();
    out_.assign(x_.size(), 0.f);
  }

  void poison_outputs() override { std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    conv::ref::lior_memory_conv<float>(params_.data(), x_.data(), shape_[0], shape_[1], shape_[2], out_.data());
  }

  ArrayMap outputs() override {
    ArrayMap out;
    out[conv::kOutput] = HostArray::from_floats(shape_, out_.data(), static_cast<int64_t>(out_.size()));
    return out;
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<float> x_, params_, out_;
};

const VariantRegistration registration{
    conv::kWorkload, kReferenceBackend, {kSerialRung},
    [](const VariantContext&) { return std::make_unique<LiorMemoryConvReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
