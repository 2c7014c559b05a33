// geometry/mamba_conjugate on LibTorch, devices cpu and cuda. Math:
// reference/geometry/mamba_conjugate.hpp; catalog: suites/geometry/mamba_conjugate.cpp.
//
//   baseline:     c = x.clone(); c[..., 1:] = -c[..., 1:]   (neg allocates a [B,L,7] temporary, copy_ back)
//   inplace_neg:  c = x.clone(); c[..., 1:].neg_()          (the seed: no temporary)
//   single_pass:  c = x * [1, -1, ..., -1]                  (one pass, the result the only allocation)
// for x = r and x = i. No host reads.

#include <limits>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "suites/geometry/mamba_conjugate.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace geo = pb::suites::geometry::mamba_conjugate;
constexpr int C = geo::ref::kStateComponents;

class MambaConjugateTorch final : public pb::Variant {
 public:
  explicit MambaConjugateTorch(const pb::VariantContext& context)
      : device_(context.device), in_place_(context.has(geo::kInPlaceNeg)), single_pass_(context.has(geo::kSinglePass)) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    r_ = tb::to_tensor(pb::require(in, geo::kStateReal), device);
    i_ = tb::to_tensor(pb::require(in, geo::kStateImag), device);
    std::vector<float> sign(C, -1.0f);
    sign[0] = 1.0f;
    sign_ = torch::tensor(sign).to(device);
  }

  void poison_outputs() override {
    for (torch::Tensor* out : {&r_conj_, &i_conj_})
      if (out->defined()) out->fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    r_conj_ = conjugate(r_);
    i_conj_ = conjugate(i_);
  }

  pb::ArrayMap outputs() override {
    return {{geo::kConjReal, tb::to_host_array(r_conj_)}, {geo::kConjImag, tb::to_host_array(i_conj_)}};
  }

 private:
  torch::Tensor conjugate(const torch::Tensor& x) const {
    if (single_pass_) return x * sign_;
    torch::Tensor c = x.clone();
    torch::Tensor tail = c.narrow(-1, 1, C - 1);
    if (in_place_) {
      tail.neg_();
    } else {
      tail.copy_(-tail);
    }
    return c;
  }

  std::string device_;
  bool in_place_, single_pass_;
  torch::Tensor r_, i_, sign_, r_conj_, i_conj_;
};

const pb::VariantRegistration registration{
    geo::kMambaConjugate, "torch", {geo::kCloneAssign, geo::kInPlaceNeg, geo::kSinglePass},
    [](const pb::VariantContext& context) { return std::make_unique<MambaConjugateTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
