#pragma once
// spinlock/cnn_rollout_<policy>: what every variant of the suite shares: the size table, the
// policy of each workload, the input names, and the meaning of each phase of seed 003's ladder.
// Math: reference/spinlock/cnn_rollout.hpp. Definition: suites/spinlock/cnn_rollout.cpp.

#include <stdexcept>
#include <string>

#include "phasebench/variant.hpp"
#include "phasebench/workload.hpp"
#include "reference/spinlock/cnn_rollout.hpp"

namespace pb::suites::spinlock {

namespace ref = pb::reference::spinlock;

// Input names: the initial field, then per ConvBlock i its weights, and the 1x1 head.
inline const std::string kInitialField = "x0";  // [3, H, W]
inline std::string block_input(int block, const std::string& what) {  // weight | gamma | beta
  return "block" + std::to_string(block) + "." + what;
}
inline const std::string kHeadWeight = "head.weight";  // [3, channels of the last block]
inline const std::string kHeadBias = "head.bias";      // [3]
// What the weights and x0 do not say: the realizations and the trajectory's steps.
inline const std::string kRolloutDims = "rollout";  // int64 [2]: M, T

// Output: the trajectory [T, M, 3, H, W]. The reference also holds the fp64 trajectory of the
// approximate model of phases 3-5 (GroupNorm, tanh-GELU), which those phases are checked against.
inline const std::string kTrajectory = "trajectory";
inline const std::string kApproximateModelTrajectory = "trajectory.approximate_model";

// The optimization each phase adds, by the name variants ask `context.has(...)` for (catalog with
// descriptions and claims: cnn_rollout.cpp).
inline constexpr const char* kEager = "eager";                    // the unoptimized port
inline constexpr const char* kCompileFusion = "compile_fusion";   // conv -> norm -> GELU fused (exact)
inline constexpr const char* kMixedPrecision = "mixed_precision"; // bf16 operands (approximate)
inline constexpr const char* kOperatorOpts = "operator_opts";     // GroupNorm, tanh-GELU, ping-pong buffers
inline constexpr const char* kBatching = "batching";              // all M realizations in one call
inline constexpr const char* kProfileGuided = "profile_guided";   // what this backend's profile showed
inline constexpr const char* kExactFast = "exact_fast";           // every exact optimization, fp32

inline bool computes_in_bf16(const PhasePlan& plan) { return plan.has(kMixedPrecision); }
inline bool batches_realizations(const PhasePlan& plan) { return plan.has(kBatching); }
/// Buffers allocated once in setup: the ping-pong buffers of operator_opts, kept by exact_fast.
inline bool preallocates(const PhasePlan& plan) { return plan.has(kOperatorOpts) || plan.has(kExactFast); }
inline ref::ModelOptions model_of(const PhasePlan& plan) {
  const bool changed = plan.has(kOperatorOpts);
  return {changed, changed};
}

/// The sizes. The seed's operator has 3x3 kernels, and so do the default and large sizes of every
/// policy and the small size of two. The convex policy's small size has 5x5 kernels: the small
/// size is where verify and CI check most, and at k = 3 code that takes the padding as k / 3, or
/// any other expression that is 1 at 3, agrees with k / 2 (a mutant that survived on every CPU
/// backend, docs/reliability-mutation.md); a 5x5 rollout also takes the general convolution path
/// of the variants that have a 3x3 fast path, beside the two policies that take the fast one.
inline ref::Architecture architecture(SizeClass size, ref::Policy policy) {
  switch (size.name()) {  // H, W, M, T, num_layers, c0, k
    case SizeName::Small:
      return {9, 7, 2, 3, 2, 4, policy == ref::Policy::Convex ? 5 : 3};
    case SizeName::Default:
      return {64, 64, 3, 16, 3, 16, 3};
    case SizeName::Large:
      return {128, 128, 3, 64, 3, 32, 3};
    case SizeName::Scaled: {
      // A scale grows the grid, each side by its square root, to at least the kernel's width; the
      // realizations, steps, layers, channels and kernel are the default's.
      ref::Architecture scaled = architecture(SizeClass::Default, policy);
      const double side = std::sqrt(size.scale());
      scaled.height = static_cast<int>(scaling::count(scaled.height, side, scaled.kernel));
      scaled.width = static_cast<int>(scaling::count(scaled.width, side, scaled.kernel));
      return scaled;
    }
    case SizeName::Random: {
      // k odd (3 or 5), so "same" padding is k / 2 on each side; the grid at least k on each side;
      // T >= 2, a trajectory with at least one update; at most 3 layers (block_channels).
      const int kernel = 1 + 2 * static_cast<int>(random_shape::count(size, 6, 1, 2));
      const auto draw = [size](int dimension, int minimum, int maximum) {
        return static_cast<int>(random_shape::count(size, dimension, minimum, maximum));
      };
      return {draw(0, kernel, 17), draw(1, kernel, 17), draw(2, 1, 2), draw(3, 2, 4),
              draw(4, 1, 3),       draw(5, 1, 6),       kernel};
    }
  }
  throw std::invalid_argument("unknown spinlock size");
}

inline std::string policy_name(ref::Policy policy) {
  switch (policy) {
    case ref::Policy::Autoregressive: return "autoregressive";
    case ref::Policy::Residual: return "residual";
    case ref::Policy::Convex: return "convex";
  }
  return "?";
}

/// How much the policy's map amplifies an existing error per step, as the error budgets assume
/// it (cnn_rollout.cpp). Declared with margin over the growth of a perturbation of x0 through the
/// fp64 reference at the default size, steps 4-7 (autoregressive 1.65, convex 1.37, residual 1.00
/// at seed 3); tests/spinlock_test.cpp measures it again.
inline double error_growth(ref::Policy policy) {
  switch (policy) {
    case ref::Policy::Autoregressive: return 1.8;
    case ref::Policy::Convex: return 1.45;
    case ref::Policy::Residual: return 1.02;
  }
  return 2.0;
}

/// The policy of a workload named "cnn_rollout_<policy>".
inline ref::Policy policy_of(const Workload& workload) {
  for (ref::Policy policy : {ref::Policy::Autoregressive, ref::Policy::Residual, ref::Policy::Convex})
    if (workload.name() == "cnn_rollout_" + policy_name(policy)) return policy;
  throw std::invalid_argument("not a spinlock rollout workload: " + workload.full_name());
}

/// The architecture a variant runs: its size, for its workload's policy.
inline ref::Architecture architecture(const VariantContext& context) {
  return architecture(context.size, policy_of(*context.workload));
}

/// Every phase of the ladder, for backends that implement all of them.
inline const std::vector<std::string> kAllPhases{kEager, kCompileFusion, kMixedPrecision, kOperatorOpts,
                                                 kBatching, kProfileGuided, kExactFast};

/// Registers one backend's ladder for the three rollout workloads: the policy is read from the
/// workload at construction (policy_of), so one factory serves all three.
struct RolloutRegistration {
  RolloutRegistration(const std::string& backend, const std::vector<std::string>& phases, const VariantFactory& make,
                      const char* source_file = __builtin_FILE()) {
    for (ref::Policy policy : {ref::Policy::Autoregressive, ref::Policy::Residual, ref::Policy::Convex})
      VariantRegistration{"spinlock/cnn_rollout_" + policy_name(policy), backend, phases, make, source_file};
  }
};

/// The operator's weights from the inputs, as Scalar.
template <typename Scalar>
ref::OperatorWeights<Scalar> load_weights(const ArrayMap& inputs, const ref::Architecture& arch) {
  const auto as = [](const HostArray& array) { return std::vector<Scalar>(array.values.begin(), array.values.end()); };
  ref::OperatorWeights<Scalar> weights;
  weights.kernel = arch.kernel;
  int in_channels = ref::kFieldChannels;
  const std::vector<int> channels = arch.block_channels();
  for (size_t b = 0; b < channels.size(); ++b) {
    const int i = static_cast<int>(b);
    weights.blocks.push_back({in_channels, channels[b], as(require(inputs, block_input(i, "weight"))),
                              as(require(inputs, block_input(i, "gamma"))), as(require(inputs, block_input(i, "beta")))});
    in_channels = channels[b];
  }
  weights.head_weight = as(require(inputs, kHeadWeight));
  weights.head_bias = as(require(inputs, kHeadBias));
  return weights;
}

}  // namespace pb::suites::spinlock
