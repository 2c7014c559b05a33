#pragma once
// The resilience network R(x) in LibTorch ops, shared by geometry/christoffel and
// geometry/lior_optimizer_step on torch. Math: reference/geometry/resilience.hpp.

#include "backends/torch/torch_backend.hpp"
#include "suites/geometry/resilience.hpp"

namespace pb::torch_backend::geometry {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

struct ResilienceTensors {
  ResilienceTensors() = default;
  ResilienceTensors(const ArrayMap& inputs, const torch::Device& device)
      : w1(to_tensor(require(inputs, geo::kResilienceW1), device)),
        b1(to_tensor(require(inputs, geo::kResilienceB1), device)),
        w2(to_tensor(require(inputs, geo::kResilienceW2), device)),
        b2(to_tensor(require(inputs, geo::kResilienceB2), device)) {}
  torch::Tensor w1, b1, w2, b2;
};

/// R(x) for x [..., d]: [...]. As the original module: Linear, exact GELU, Linear, softplus, clamp.
inline torch::Tensor resilience(const ResilienceTensors& w, const torch::Tensor& x) {
  const torch::Tensor hidden = torch::gelu(torch::linear(x, w.w1, w.b1));
  const torch::Tensor z = torch::linear(hidden, w.w2, w.b2).squeeze(-1);
  return torch::clamp(torch::softplus(z, 1, ref::kSoftplusThreshold), ref::kResilienceMin, ref::kResilienceMax);
}

}  // namespace pb::torch_backend::geometry
