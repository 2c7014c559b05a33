// geometry/lior_optimizer_step: definition (sizes, inputs, outputs, tolerance, phases and seed
// 001's claim). Reference: reference/geometry/lior_optimizer_step.hpp. Variants:
// optimized/geometry/lior_optimizer_step-<backend>.*

#include "suites/geometry/lior_optimizer_step.hpp"

#include "phasebench/rng.hpp"

namespace pb::suites::geometry {
namespace {

class LiorOptimizerStep final : public Workload {
  static constexpr double kGateRange = 1e-3;  // a scalar gate's values: U(-1e-3, 1e-3)

 public:
  std::string suite() const override { return "geometry"; }
  std::string name() const override { return "lior_optimizer_step"; }
  std::string description() const override {
    return "LIoRManifoldOptimizer.step: per tensor R_j = R(first 8 values), p_j -= lr kappa R_j^-2 grad_j";
  }

  std::string shape(SizeClass size) const override {
    const auto shapes = parameter_shapes(size);
    return "P=" + std::to_string(shapes.size()) + " values=" + std::to_string(flat_offsets(shapes).back());
  }

  // p ~ U(-1, 1), so that the first 8 values of each tensor differ and R_j differs from tensor to
  // tensor (a variant that uses another tensor's R fails); grad ~ N(0, 1). Even seeds end with a
  // scalar and a 4-value tensor (parameter_shapes(size, seed) says why). The scalar is a gate near
  // 0, as a zero-initialised residual gate is: the output p - s g (s ~ 1e-3) shows an error of R_j
  // at ~1e-3 of its size when |p| ~ 1, so a wrong padding that moves R_j by a fraction of a percent
  // passes the 1e-5 check; with |p| <~ s |g| it shows at full size.
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    ArrayMap inputs;
    add_resilience_inputs(inputs, seed, kLiorOptimizerStep);
    const auto shapes = parameter_shapes(size, seed);
    for (size_t j = 0; j < shapes.size(); ++j) {
      const int i = static_cast<int>(j);
      const double range = numel_of(shapes[j]) == 1 ? kGateRange : 1;
      inputs[param_name(i)] = uniform_array(seed, kLiorOptimizerStep + "/" + param_name(i), shapes[j], -range, range);
      inputs[grad_name(i)] = normal_array(seed, kLiorOptimizerStep + "/" + grad_name(i), shapes[j], 0, 1);
    }
    return inputs;
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const ResilienceParameters<double> weights(inputs);
    ArrayMap out;
    std::vector<double*> params;
    std::vector<const double*> grads;
    std::vector<int64_t> sizes;
    for (int j = 0; inputs.count(param_name(j)); ++j) {
      HostArray& updated = out[param_name(j)] = require(inputs, param_name(j));
      updated.element_type = ElementType::Float64;
      params.push_back(updated.values.data());
      grads.push_back(require(inputs, grad_name(j)).values.data());
      sizes.push_back(updated.numel());
    }
    ref::lior_optimizer_step<double>(weights.view(), params.data(), grads.data(), sizes.data(),
                                     static_cast<int>(sizes.size()));
    return out;
  }

  std::vector<OutputSpec> outputs() const override {
    std::vector<OutputSpec> specs;
    const size_t tensors = parameter_shapes(SizeClass::Default).size();
    for (size_t j = 0; j < tensors; ++j)
      specs.push_back({param_name(static_cast<int>(j)), 1e-5,
                       "fp32: one multiply-subtract per value, plus R's fp32 error scaled by the step's size "
                       "relative to p: the fp32 default"});
    return specs;
  }

  // The small size has 3 tensors, the others 48 and 96: the checks follow the size.
  std::vector<OutputSpec> outputs_for(int, SizeClass size) const override {
    std::vector<OutputSpec> specs = outputs();
    specs.resize(parameter_shapes(size).size(), specs.front());
    for (size_t j = 0; j < specs.size(); ++j) specs[j].name = param_name(static_cast<int>(j));
    return specs;
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kPerTensorSync,
         "as the original: per tensor, R_j evaluated op by op on its 8 values and read by the host "
         "(R.item(): one host sync per tensor), then the update with that host scalar"},
        {1, kDeviceResilience,
         "the seed ('keep R as a tensor'): the update reads R_j on the device; host syncs per step "
         "P -> 0 (the seed claims no time ratio)"},
        {2, kBatchedStep,
         "beyond the seed: all R_j from one [P,8] evaluation and the updates as one multi-tensor pass"},
        {3, kStreamingUpdate,
         "beyond the seed, host cores: the multi-tensor pass as one flat vectorized pass over spans of "
         "the values (each in one tensor), the outputs written with non-temporal stores (no "
         "write-allocate read of out: 12 B moved per value instead of 16)"},
    };
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, multiply,
  // divide, exp, log, erf or compare. Per tensor: R (2 d^2 + 8 d + 5 = 197 for d = 8), the clamp
  // again (2) and the scale lr kappa / R^2 (2); per value: one multiply and one subtract.
  // Bytes, fp32: read every parameter and gradient once, write every parameter once (the 8
  // leading values are re-read from cache) and read the resilience weights once.
  WorkEstimate work(SizeClass size) const override {
    const auto shapes = parameter_shapes(size);
    const double d = ref::kDim, tensors = double(shapes.size()), values = double(flat_offsets(shapes).back());
    const double weights = d * d + d + d + 1;
    return {tensors * (2 * d * d + 8 * d + 9) + 2 * values, 4.0 * (3 * values + weights)};
  }

  // Per value: p and g held as fp64 inputs, the fp64 reference output, the variant's output as
  // fp64 and the fp32 copies of p, g and the output (about 44 bytes; 48 counted).
  double memory_bytes(SizeClass size) const override {
    return double(flat_offsets(parameter_shapes(size)).back()) * 48;
  }
};

const WorkloadRegistration registration{std::make_shared<LiorOptimizerStep>()};

}  // namespace
}  // namespace pb::suites::geometry
