// spinlock/cnn_rollout_<policy> on LibTorch, devices cpu and cuda: Spinlock's CNN operator rolled
// out T-1 steps over M realizations, every run from x0. Math: reference/spinlock/cnn_rollout.hpp;
// catalog and error budgets: suites/spinlock/cnn_rollout.cpp; docs/spinlock.md.
//
//   ConvBlock = conv k x k (no bias) -> InstanceNorm (affine) -> GELU;  O = head 1x1 (blocks(x))
//   x_{t+1} = policy(x_t, O(x_t)), trajectory [T, M, 3, H, W] with row 0 = x0 repeated
//
// How each optimization is done in LibTorch 1.13, and what counting and profiling showed, is
// written where the code does it (RolloutPlan and the functions it steers).

#include <c10/core/InferenceMode.h>

#include <limits>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::torch_backend {
namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;

/// The plan's optimizations as this file does them, read once.
struct RolloutPlan {
  // Without compile_fusion: the original module, conv2d, instance_norm, gelu, head conv2d and the
  // policy's arithmetic op by op, every op into a fresh tensor.
  bool eager = false;
  // mixed_precision: convolution weights and inputs in bf16 (CPU: oneDNN bf16 convolutions with
  // fp32 accumulation on AVX512_BF16); the state x, the policy update and the trajectory stay fp32.
  bool bf16 = false;
  // operator_opts: GroupNorm(gcd(8, C)) and tanh-GELU, the approximate model (in 1.13 the tanh form
  // is the SLOWER one, against erf on [1,64,64,64]).
  ref::ModelOptions model;
  // operator_opts, kept by exact_fast: the trajectory and the operator's input kept from setup(),
  // GELU in place, the head + policy written straight into the trajectory row. conv2d and
  // group_norm have no real out= on the CPU in 1.13 (their .out overloads are generated wrappers
  // that allocate the result and copy it), so each block still allocates its conv output and its
  // norm output (and oneDNN's NCHW reorders allocate through ATen too): it saves little of a
  // rollout's allocations.
  bool preallocated = false;
  // batching: all M realizations in one operator call instead of a loop.
  bool batched = false;
  // profile_guided (kept by exact_fast): channels_last (NHWC) activations and weights. The profile
  // (perf and CPU time of the default rollout, batch 3, one thread): in NCHW every oneDNN
  // convolution reorders its input to a blocked layout and its output back, which costs bf16 most;
  // in NHWC oneDNN convolves the tensors as they are. The state x stays NCHW (it is the trajectory
  // row) and is copied once per step into the NHWC input buffer. Not a variant's to fix: with 2
  // threads on an oversubscribed machine libgomp's spin-wait takes most of the cycles
  // (OMP_WAIT_POLICY=passive avoids it; it is read when the process starts).
  bool channels_last = false;
  // With bf16: the convolutions in bf16, norm + GELU in fp32 between them (see fused_blocks).
  bool norm_in_fp32 = false;

  explicit RolloutPlan(const PhasePlan& plan)
      : eager(!plan.has(sp::kCompileFusion)),
        bf16(sp::computes_in_bf16(plan)),
        model(sp::model_of(plan)),
        preallocated(sp::preallocates(plan)),
        batched(sp::batches_realizations(plan)),
        channels_last(plan.has(sp::kProfileGuided)),
        norm_in_fp32(bf16) {}

  torch::ScalarType dtype() const { return bf16 ? torch::kBFloat16 : torch::kFloat32; }
  torch::ScalarType norm_dtype() const { return norm_in_fp32 ? torch::kFloat32 : dtype(); }
  torch::MemoryFormat memory_format() const {
    return channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
  }
  const char* gelu_form() const { return model.tanh_gelu ? "tanh" : "none"; }
};

/// The policy as x_next = x_weight * x + o_weight * O.
struct PolicyWeights {
  double x_weight = 0, o_weight = 1;
};

PolicyWeights weights_of(ref::Policy policy) {
  switch (policy) {
    case ref::Policy::Autoregressive: return {0, 1};
    case ref::Policy::Residual: return {1, ref::kResidualDt};
    case ref::Policy::Convex: return {ref::kConvexAlpha, 1 - ref::kConvexAlpha};
  }
  return {};
}

struct ConvBlock {
  torch::Tensor weight, gamma, beta;  // [out, in, k, k], [out], [out]
  int64_t groups = 0;                 // of the normalization: out channels is InstanceNorm
};

class CnnRolloutTorch final : public Variant {
 public:
  explicit CnnRolloutTorch(const VariantContext& context)
      : plan_(context.plan),
        device_name_(context.device),
        arch_(sp::architecture(context)),
        policy_(sp::policy_of(*context.workload)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_name_); }

  void setup(const ArrayMap& inputs) override {
    const torch::Device device = device_for(device_name_);
    load_operator(inputs, device);
    x0_ = to_tensor(require(inputs, sp::kInitialField), device);
    trajectory_ = torch::empty(trajectory_shape(), torch::TensorOptions(device).dtype(torch::kFloat32));
    if (plan_.preallocated) {
      const int64_t batch = plan_.batched ? arch_.realizations : 1;
      input_ = torch::empty({batch, ref::kFieldChannels, arch_.height, arch_.width},
                            torch::TensorOptions(device).dtype(plan_.dtype()))
                   .contiguous(plan_.memory_format());
    }
  }

  void poison_outputs() override {
    c10::InferenceMode inference;  // trajectory_ may be an inference tensor made by run()
    trajectory_.fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    c10::InferenceMode inference;
    // The original allocates its trajectory per rollout; operator_opts keeps it from setup().
    if (!plan_.preallocated) trajectory_ = torch::empty(trajectory_shape(), trajectory_.options());
    trajectory_.select(0, 0).copy_(x0_);  // broadcast over the M realizations
    for (int64_t t = 1; t < arch_.steps; ++t) {
      const torch::Tensor previous = trajectory_.select(0, t - 1), next = trajectory_.select(0, t);
      if (plan_.batched) {
        step(previous, next);
        continue;
      }
      for (int64_t m = 0; m < arch_.realizations; ++m) step(previous.narrow(0, m, 1), next.narrow(0, m, 1));
    }
  }

  ArrayMap outputs() override { return {{sp::kTrajectory, to_host_array(trajectory_)}}; }

 private:
  std::vector<int64_t> trajectory_shape() const {
    return {arch_.steps, arch_.realizations, ref::kFieldChannels, arch_.height, arch_.width};
  }

  void load_operator(const ArrayMap& inputs, const torch::Device& device) {
    const auto tensor = [&](const std::string& name, torch::ScalarType dtype) {
      return to_tensor(require(inputs, name), device).to(dtype);
    };
    const std::vector<int> channels = arch_.block_channels();
    for (size_t b = 0; b < channels.size(); ++b) {
      const int i = static_cast<int>(b);
      blocks_.push_back({tensor(sp::block_input(i, "weight"), plan_.dtype()).contiguous(plan_.memory_format()),
                         tensor(sp::block_input(i, "gamma"), plan_.norm_dtype()),
                         tensor(sp::block_input(i, "beta"), plan_.norm_dtype()),
                         ref::norm_groups(channels[b], plan_.model)});
    }
    head_weight_ = tensor(sp::kHeadWeight, plan_.dtype()).view({ref::kFieldChannels, channels.back(), 1, 1});
    head_bias_ = tensor(sp::kHeadBias, plan_.dtype());
    if (plan_.eager) return;
    // compile_fusion folds the policy into the head: it computes o_weight * O directly.
    const PolicyWeights policy = weights_of(policy_);
    head_weight_ = (head_weight_ * policy.o_weight).contiguous(plan_.memory_format());
    head_bias_ = head_bias_ * policy.o_weight;
  }

  /// One operator application and policy update: x [B,3,H,W] -> next (a trajectory row view).
  void step(const torch::Tensor& x, torch::Tensor next) {
    if (plan_.eager) {
      next.copy_(eager_policy(x, eager_operator(x)));
      return;
    }
    const torch::Tensor head = torch::conv2d(fused_blocks(x), head_weight_, head_bias_);
    const PolicyWeights policy = weights_of(policy_);
    if (policy.x_weight == 0) {
      next.copy_(head);
      return;
    }
    torch::add_out(next, head, x, policy.x_weight);  // head already carries o_weight
  }

  // ---- without compile_fusion: the original module --------------------------------------------

  torch::Tensor eager_operator(const torch::Tensor& x) const {
    torch::Tensor h = x;
    for (const ConvBlock& block : blocks_) {
      h = torch::conv2d(h, block.weight, {}, 1, arch_.kernel / 2);
      h = torch::instance_norm(h, block.gamma, block.beta, {}, {}, /*use_input_stats=*/true, /*momentum=*/0.1,
                               ref::kNormEps, /*cudnn_enabled=*/false);
      h = torch::gelu(h);
    }
    return torch::conv2d(h, head_weight_, head_bias_);
  }

  torch::Tensor eager_policy(const torch::Tensor& x, const torch::Tensor& o) const {
    switch (policy_) {
      case ref::Policy::Autoregressive: return o;
      case ref::Policy::Residual: return x + ref::kResidualDt * o;
      case ref::Policy::Convex: return ref::kConvexAlpha * x + (1 - ref::kConvexAlpha) * o;
    }
    return o;
  }

  // ---- compile_fusion and after ---------------------------------------------------------------
  // As fused as eager ATen allows (no torch.compile in C++, and Debian's CPU LibTorch 1.13 has no
  // NNC/LLVM fuser for TorchScript to use): the norm and its affine map are ONE kernel (group_norm
  // with C groups is InstanceNorm; the instance_norm composite dispatches repeat + batch_norm +
  // views), GELU runs in place on the norm's output, and the policy is folded into the head (its
  // weight and bias pre-scaled by the policy's coefficient of O), so the update is one add_out
  // (x * coefficient + head) that writes the trajectory row. Conv -> norm cannot be fused in ATen
  // (no conv+norm kernel). Counted at the default size (convex, 1 thread): 888 -> 753 top-level ops
  // and 452 -> 350 MB allocated per rollout (instance_norm is one top-level op, but it repeats
  // gamma/beta and normalizes a reshaped copy through batch_norm).

  /// The operator's input in the compute dtype and layout: a fresh cast, or (preallocated) a copy
  /// into the buffer kept from setup().
  torch::Tensor operator_input(const torch::Tensor& x) {
    if (plan_.preallocated) return input_.copy_(x);
    return plan_.bf16 ? x.to(torch::kBFloat16) : x;
  }

  /// The conv blocks. Under mixed_precision they convolve in bf16 but normalize in fp32: fp32
  /// statistics, and 1.13's CPU group_norm on bf16 would need bf16 gamma/beta (fp32 ones throw),
  /// runs many times slower than fp32 on NCHW, adds error, and
  /// is wrong on channels_last (rel. L2 error 0.4; fp32 channels_last is right).
  torch::Tensor fused_blocks(const torch::Tensor& x) {
    torch::Tensor h = operator_input(x);
    for (const ConvBlock& block : blocks_) {
      h = torch::conv2d(h, block.weight, {}, 1, arch_.kernel / 2);
      if (plan_.norm_in_fp32) h = h.to(torch::kFloat32);
      h = torch::group_norm(h, block.groups, block.gamma, block.beta, ref::kNormEps);  // norm + affine, one kernel
      gelu_in_place(h);
      if (plan_.norm_in_fp32) h = h.to(torch::kBFloat16);
    }
    return h;
  }

  /// GELU in place. On a channels_last tensor 1.13's gelu_ leaves its vectorized path (in a
  /// profile, Sleef erf takes a large share of the rollout); the same memory seen as the contiguous
  /// NHWC tensor it is runs at NCHW speed.
  void gelu_in_place(const torch::Tensor& h) const {
    torch::Tensor elements = plan_.channels_last ? h.permute({0, 2, 3, 1}) : h;
    torch::gelu_(elements, plan_.gelu_form());
  }

  RolloutPlan plan_;
  std::string device_name_;
  ref::Architecture arch_;
  ref::Policy policy_;
  std::vector<ConvBlock> blocks_;
  torch::Tensor head_weight_, head_bias_;  // [3, c, 1, 1], [3]; scaled by o_weight unless eager
  torch::Tensor x0_;                       // [3, H, W] fp32
  torch::Tensor trajectory_;               // [T, M, 3, H, W] fp32
  torch::Tensor input_;                    // preallocated: [B, 3, H, W] in the compute dtype and layout
};

VariantFactory factory() {
  return [](const VariantContext& context) { return std::make_unique<CnnRolloutTorch>(context); };
}

const sp::RolloutRegistration registration{"torch", sp::kAllPhases, factory()};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
}  // namespace pb::torch_backend
