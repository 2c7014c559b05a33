// geometry/lior_optimizer_step on LibTorch, devices cpu and cuda. Math:
// reference/geometry/lior_optimizer_step.hpp; catalog: suites/geometry/lior_optimizer_step.cpp.
//
//   per tensor j: R_j = clamp(R(first 8 values of p_j), 0.1, 10);  out_j = p_j - lr kappa R_j^-2 g_j
//
// The parameters and gradients are views into one flat buffer each (how a fused optimizer keeps
// them), so that batched_step can gather every tensor's 8 leading values with one index_select;
// the flat parameter buffer ends in one zero, the value the gather takes for padding.

#include <algorithm>
#include <limits>
#include <vector>

#include "optimized/geometry/resilience-torch.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb::torch_backend {
namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
using geometry::ResilienceTensors;

class LiorOptimizerStepTorch final : public Variant {
 public:
  explicit LiorOptimizerStepTorch(const VariantContext& context)
      : device_(context.device),
        device_resilience_(context.has(geo::kDeviceResilience)),
        batched_(context.has(geo::kBatchedStep)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_); }

  void setup(const ArrayMap& inputs) override {
    const torch::Device device = device_for(device_);
    resilience_ = ResilienceTensors(inputs, device);
    shapes_ = geo::shapes_of(inputs);
    const std::vector<int64_t> offsets = geo::flat_offsets(shapes_);
    const int64_t total = offsets.back();
    std::vector<float> params = geo::flat_floats(inputs, geo::param_name, shapes_.size());
    params.push_back(0.f);  // the padding value
    const auto options = torch::TensorOptions().dtype(torch::kFloat32);
    flat_params_ = torch::from_blob(params.data(), {total + 1}, options).to(device, false, true);
    std::vector<float> grads = geo::flat_floats(inputs, geo::grad_name, shapes_.size());
    flat_grads_ = torch::from_blob(grads.data(), {total}, options).to(device, false, true);
    flat_out_ = torch::zeros({total}, flat_grads_.options());
    std::vector<int64_t> leading;  // batched_step's gather: 8 positions per tensor
    for (size_t j = 0; j < shapes_.size(); ++j) {
      const int64_t n = offsets[j + 1] - offsets[j];
      params_.push_back(flat_params_.narrow(0, offsets[j], n).view(shapes_[j]));
      grads_.push_back(flat_grads_.narrow(0, offsets[j], n).view(shapes_[j]));
      out_.push_back(flat_out_.narrow(0, offsets[j], n).view(shapes_[j]));
      for (int64_t i = 0; i < ref::kDim; ++i) leading.push_back(i < n ? offsets[j] + i : total);
    }
    leading_ = torch::tensor(leading, torch::kInt64).to(device);
  }

  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    flat_out_.fill_(nan);
    for (torch::Tensor& out : out_) out.fill_(nan);  // batched_step's outputs are its own tensors
  }

  void run() override {
    if (batched_) {
      step_batched();
      return;
    }
    for (size_t j = 0; j < params_.size(); ++j) {
      const torch::Tensor R = tensor_resilience(params_[j]);
      if (device_resilience_) {  // the seed: R stays on the device
        torch::addcmul_out(out_[j], params_[j], grads_[j], kLrKappa / R.square(), -1);
      } else {  // the original: R.item(), one host sync per tensor
        const double r = R.item<float>();
        torch::add_out(out_[j], params_[j], grads_[j], -kLrKappa / (r * r));
      }
    }
  }

  ArrayMap outputs() override {
    ArrayMap out;
    for (size_t j = 0; j < out_.size(); ++j) out[geo::param_name(static_cast<int>(j))] = to_host_array(out_[j]);
    return out;
  }

 private:
  static constexpr double kLrKappa = ref::kLearningRate * ref::kKappa;

  /// As the original: the tensor's first 8 values, zero-padded, through the network, clamped.
  torch::Tensor tensor_resilience(const torch::Tensor& p) const {
    torch::Tensor c = p.flatten().narrow(0, 0, std::min<int64_t>(ref::kDim, p.numel()));
    if (c.numel() < ref::kDim) c = torch::constant_pad_nd(c, {0, ref::kDim - c.numel()});
    return torch::clamp(geometry::resilience(resilience_, c), ref::kResilienceMin, ref::kResilienceMax);
  }

  /// batched_step: R of all P tensors from one [P, 8] evaluation, then one multi-tensor update.
  /// LibTorch 1.13 has no multi-tensor op with per-tensor device scales that writes into given
  /// outputs: _foreach_addcmul returns new tensors (counted in bytes allocated).
  void step_batched() {
    const torch::Tensor leading = flat_params_.index_select(0, leading_).view({-1, ref::kDim});
    const torch::Tensor R = torch::clamp(geometry::resilience(resilience_, leading), ref::kResilienceMin,
                                         ref::kResilienceMax);
    const std::vector<torch::Tensor> scales = (kLrKappa / R.square()).unbind(0);
    out_ = at::_foreach_addcmul(params_, grads_, scales, -1);
  }

  std::string device_;
  bool device_resilience_, batched_;
  ResilienceTensors resilience_;
  std::vector<std::vector<int64_t>> shapes_;
  torch::Tensor flat_params_, flat_grads_, flat_out_, leading_;
  std::vector<torch::Tensor> params_, grads_, out_;  // views of the flat buffers (out_: until batched_step)
};

const VariantRegistration registration{
    geo::kLiorOptimizerStep, "torch", {geo::kPerTensorSync, geo::kDeviceResilience, geo::kBatchedStep},
    [](const VariantContext& context) { return std::make_unique<LiorOptimizerStepTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
}  // namespace pb::torch_backend
