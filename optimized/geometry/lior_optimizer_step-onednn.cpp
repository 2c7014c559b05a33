// geometry/lior_optimizer_step on oneDNN (CPU engine). Math:
// reference/geometry/lior_optimizer_step.hpp; catalog: suites/geometry/lior_optimizer_step.cpp.
//
//   R(c) = clip(soft_relu(matmul(gelu_erf(matmul(c, W1^T) + b1), W2^T) + b2), 0.1, 10), clipped again
//   out_j = p_j - lr kappa R_j^-2 g_j   as binary_mul(g_j, -lr kappa R_j^-2) with a binary_add post-op of p_j
//
// per_tensor_sync: per tensor, a reorder copies its leading values into a zero-padded [1,8] row, the
// network runs primitive by primitive, R_j is read by the host (one host sync) and -lr kappa R_j^-2,
// computed there, is written into the update's [1] scale operand. device_resilience: eltwise_pow
// (alpha x^beta with alpha = -lr kappa, beta = -2) makes the scale from R_j in place, no read.
// batched_step: one [P,8] network with bias and activations as post-ops, and the updates of each
// run of consecutive tensors of equal size as one binary over [k, n] with scales [k,1]. oneDNN has
// no primitive that applies a different scale to each of several differently sized segments (no
// segmented broadcast or gather), so the multi-tensor pass is one binary per such run (18 for the
// 48 default tensors), and the [P,8] gather is P reorders.

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;
using dnnl::algorithm;
using dnnl::memory;
using ob::dense;

constexpr int64_t d = ref::kDim;
constexpr float kNegLrKappa = -float(ref::kLearningRate * ref::kKappa);

/// The resilience network over `rows` rows of c [rows, 8] into R [rows, 1]: primitive by
/// primitive as the original module runs, or (fused) bias and activations as matmul post-ops.
struct Network {
  std::vector<ob::Execution> steps;
  memory R;
  void operator()() const {
    for (const ob::Execution& step : steps) step();
  }
};

class LiorOptimizerStepOnednn final : public pb::Variant {
 public:
  explicit LiorOptimizerStepOnednn(const pb::VariantContext& context)
      : device_(context.device),
        device_resilience_(context.has(geo::kDeviceResilience)),
        batched_(context.has(geo::kBatchedStep)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& inputs) override {
    shapes_ = geo::shapes_of(inputs);
    offsets_ = geo::flat_offsets(shapes_);
    const int64_t total = offsets_.back(), tensors = static_cast<int64_t>(shapes_.size());
    params_ = ob::upload(dense({total}), geo::flat_floats(inputs, geo::param_name, shapes_.size()));
    grads_ = ob::upload(dense({total}), geo::flat_floats(inputs, geo::grad_name, shapes_.size()));
    out_ = ob::filled({total}, 0.f);
    w1_ = ob::upload(pb::require(inputs, geo::kResilienceW1), {d, d});
    b1_ = ob::upload(pb::require(inputs, geo::kResilienceB1), {1, d});
    w2_ = ob::upload(pb::require(inputs, geo::kResilienceW2), {d, 1});  // [1,d] read as [d,1]
    b2_ = ob::upload(pb::require(inputs, geo::kResilienceB2), {1, 1});
    if (batched_) {
      leading_ = ob::filled({tensors, d}, 0.f);
      for (int64_t j = 0; j < tensors; ++j) gathers_.push_back(gather(j, leading_, j * d));
      network_.push_back(network(leading_, tensors, true));
      scales_ = ob::allocate(dense({tensors, 1}));
      scale_steps_.emplace_back(ob::eltwise(algorithm::eltwise_pow, network_.back().R, scales_, kNegLrKappa, -2.f));
      setup_grouped_updates();
      return;
    }
    for (int64_t j = 0; j < tensors; ++j) {
      const memory row = ob::filled({1, d}, 0.f);
      gathers_.push_back(gather(j, row, 0));
      network_.push_back(network(row, 1, false));
      const memory scale = ob::filled({1}, 0.f);
      if (device_resilience_)
        scale_steps_.emplace_back(ob::eltwise(algorithm::eltwise_pow, network_.back().R, ob::view(scale, dense({1, 1})),
                                              kNegLrKappa, -2.f));
      per_tensor_scales_.push_back(scale);
      updates_.push_back(update(offsets_[j], 1, offsets_[j + 1] - offsets_[j], scale));
    }
  }

  void poison_outputs() override { ob::fill_floats(out_, std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    if (batched_) {
      for (const ob::Execution& copy : gathers_) copy();
      network_.front()();
      scale_steps_.front()();
      for (const ob::Execution& step : updates_) step();
      return;
    }
    for (size_t j = 0; j < network_.size(); ++j) {
      gathers_[j]();
      network_[j]();
      if (device_resilience_) {
        scale_steps_[j]();
      } else {  // the original: R.item(), one host sync, and the scale computed on the host
        float R = 0;
        ob::read_floats_to_host(network_[j].R, &R, 1);
        *ob::host_floats(per_tensor_scales_[j]) = kNegLrKappa / (R * R);  // a host write of the operand
      }
      updates_[j]();
    }
  }

  pb::ArrayMap outputs() override {
    const std::vector<float> flat = ob::read_floats_to_host(out_);
    return geo::outputs_from_flat(shapes_, flat.data());
  }

 private:
  /// A reorder of tensor j's leading min(n, 8) values into `rows` at `offset` (the rest stays 0).
  ob::Execution gather(int64_t j, const memory& rows, int64_t offset) const {
    const int64_t count = std::min<int64_t>(d, offsets_[j + 1] - offsets_[j]);
    return ob::copy(ob::view(params_, dense({1, count}), offsets_[j]), ob::view(rows, dense({1, count}), offset));
  }

  Network network(const memory& c, int64_t rows, bool fused) const {
    Network net;
    const memory w1t = ob::view(w1_, ob::strided({d, d}, {1, d}));  // W1^T: [in, out]
    const memory hidden = ob::allocate(dense({rows, d}));
    net.R = ob::allocate(dense({rows, 1}));
    if (fused) {
      net.steps.push_back(ob::matmul(c, w1t, hidden,
                                     ob::PostOps().binary(algorithm::binary_add, b1_).eltwise(algorithm::eltwise_gelu_erf)));
      net.steps.push_back(ob::matmul(hidden, w2_, net.R,
                                     ob::PostOps()
                                         .binary(algorithm::binary_add, b2_)
                                         .eltwise(algorithm::eltwise_soft_relu, 1.f)
                                         .eltwise(algorithm::eltwise_clip, ref::kResilienceMin, ref::kResilienceMax)
                                         .eltwise(algorithm::eltwise_clip, ref::kResilienceMin, ref::kResilienceMax)));
      return net;
    }
    const memory z = ob::allocate(dense({rows, 1}));
    net.steps.push_back(ob::matmul(c, w1t, hidden));
    net.steps.push_back(ob::binary(algorithm::binary_add, hidden, b1_, hidden));
    net.steps.push_back(ob::eltwise(algorithm::eltwise_gelu_erf, hidden, hidden));
    net.steps.push_back(ob::matmul(hidden, w2_, z));
    net.steps.push_back(ob::binary(algorithm::binary_add, z, b2_, z));
    net.steps.push_back(ob::eltwise(algorithm::eltwise_soft_relu, z, z, 1.f));
    net.steps.push_back(ob::eltwise(algorithm::eltwise_clip, z, z, ref::kResilienceMin, ref::kResilienceMax));
    net.steps.push_back(ob::eltwise(algorithm::eltwise_clip, z, net.R, ref::kResilienceMin, ref::kResilienceMax));
    return net;
  }

  /// out = g * scale + p over `count` tensors of n values from `offset`, scale [count, 1].
  ob::Execution update(int64_t offset, int64_t count, int64_t n, const memory& scale) const {
    const memory::desc values = dense({count, n});
    return ob::binary(algorithm::binary_mul, ob::view(grads_, values, offset), ob::view(scale, dense({count, 1})),
                      ob::view(out_, values, offset),
                      ob::PostOps().binary(algorithm::binary_add, ob::view(params_, values, offset)));
  }

  /// batched_step: one update per run of consecutive tensors with the same number of values.
  void setup_grouped_updates() {
    const int64_t tensors = static_cast<int64_t>(shapes_.size());
    for (int64_t first = 0; first < tensors;) {
      const int64_t n = offsets_[first + 1] - offsets_[first];
      int64_t last = first + 1;
      while (last < tensors && offsets_[last + 1] - offsets_[last] == n) ++last;
      updates_.push_back(update(offsets_[first], last - first, n, ob::view(scales_, dense({last - first, 1}), first)));
      first = last;
    }
  }

  std::string device_;
  bool device_resilience_, batched_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_;
  memory params_, grads_, out_, w1_, b1_, w2_, b2_;
  memory leading_, scales_;               // batched_step: [P, 8] and [P, 1]
  std::vector<memory> per_tensor_scales_;  // otherwise: one [1] scale per tensor
  std::vector<ob::Execution> gathers_, scale_steps_, updates_;
  std::vector<Network> network_;
};

const pb::VariantRegistration registration{
    geo::kLiorOptimizerStep, "onednn", {geo::kPerTensorSync, geo::kDeviceResilience, geo::kBatchedStep},
    [](const pb::VariantContext& context) { return std::make_unique<LiorOptimizerStepOnednn>(context); }};

}  // namespace
