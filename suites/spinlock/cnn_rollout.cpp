// spinlock/cnn_rollout_{autoregressive,residual,convex}: definition (sizes, inputs, outputs, error
// budgets, phases and seed 003's claims). One workload per rollout policy, so that each policy's
// error growth has its own budget and row. Reference: reference/spinlock/cnn_rollout.hpp.
// Variants: optimized/spinlock/cnn_rollout-<backend>.*
//
// Error budgets. A rollout feeds every step's error into the next, so errors grow with t and one
// tolerance for the whole trajectory is either too loose early or too tight late. Each step t gets
//     budget(t) = local * (1 + g + g^2 + ... + g^t)
// `local` is the error one operator application may add (fp32: phasebench's default 1e-5 for
// exact phases; bf16: its default 1e-2) and g how much the policy's map amplifies an existing
// error per step, measured on the fp64 reference (tests/spinlock_test.cpp checks the declared g
// against that measurement). Once a budget passes 1 the rollout has lost track of the reference
// by construction (autoregressive in bf16 does from about step 6): later steps are reported, and
// checked only for blowing up.

#include "suites/spinlock/cnn_rollout.hpp"

#include <cmath>

#include "phasebench/rng.hpp"

namespace pb::suites::spinlock {
namespace {

constexpr double kFp32LocalError = 1e-5;  // phasebench's default for fp32 exact phases
constexpr double kBf16LocalError = 1e-2;  // phasebench's default for bf16
// Phases 3-5 change the model: a flat bound of the deviation from the exact operator.
constexpr double kModelChangeBound = 2.0;

std::vector<double> step_budgets(double local, double growth, int steps) {
  std::vector<double> budgets;
  double power = 1, sum = 0;
  for (int t = 0; t < steps; ++t) {
    sum += power;
    power *= growth;
    budgets.push_back(local * sum);
  }
  return budgets;
}

std::string fmt(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

class CnnRollout final : public Workload {
 public:
  explicit CnnRollout(ref::Policy policy) : policy_(policy) {}

  std::string suite() const override { return "spinlock"; }
  std::string name() const override { return "cnn_rollout_" + policy_name(policy_); }
  std::string description() const override {
    return "Spinlock's CNN operator (conv -> InstanceNorm -> GELU blocks, 1x1 head) rolled out T-1 "
           "steps over M realizations with the " + policy_name(policy_) + " policy";
  }

  std::string shape(SizeClass size) const override {
    const ref::Architecture a = architecture(size, policy_);
    return std::to_string(a.height) + "x" + std::to_string(a.width) + " M=" + std::to_string(a.realizations) +
           " T=" + std::to_string(a.steps) + " layers=" + std::to_string(a.num_layers) +
           " c0=" + std::to_string(a.c0) + " k=" + std::to_string(a.kernel);
  }

  // x0 ~ U(-1, 1); convolution weights and the head ~ U(+-1/sqrt(fan_in)) as PyTorch initializes
  // them; gamma ~ U(0.5, 1.5) and beta ~ U(-0.5, 0.5) rather than 1 and 0, so that a variant that
  // drops the affine map fails. Streams are named by input, the same for every policy.
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const ref::Architecture a = architecture(size, policy_);
    ArrayMap inputs;
    inputs[kInitialField] = uniform_array(seed, "spinlock/x0", {ref::kFieldChannels, a.height, a.width}, -1, 1);
    int in = ref::kFieldChannels;
    const std::vector<int> channels = a.block_channels();
    for (size_t b = 0; b < channels.size(); ++b) {
      const int i = static_cast<int>(b), out = channels[b];
      const double bound = 1 / std::sqrt(double(in) * a.kernel * a.kernel);
      inputs[block_input(i, "weight")] = uniform_array(seed, "spinlock/" + block_input(i, "weight"), {out, in, a.kernel, a.kernel}, -bound, bound);
      inputs[block_input(i, "gamma")] = uniform_array(seed, "spinlock/" + block_input(i, "gamma"), {out}, 0.5, 1.5);
      inputs[block_input(i, "beta")] = uniform_array(seed, "spinlock/" + block_input(i, "beta"), {out}, -0.5, 0.5);
      in = out;
    }
    const double head_bound = 1 / std::sqrt(double(in));
    inputs[kHeadWeight] = uniform_array(seed, "spinlock/head.weight", {ref::kFieldChannels, in}, -head_bound, head_bound);
    inputs[kHeadBias] = uniform_array(seed, "spinlock/head.bias", {ref::kFieldChannels}, -head_bound, head_bound);
    inputs[kRolloutDims] = HostArray::zeros({2}, ElementType::Int64);
    inputs[kRolloutDims].values = {double(a.realizations), double(a.steps)};
    return inputs;
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const HostArray& x0 = require(inputs, kInitialField);
    const ref::Architecture a = architecture_of(inputs);
    const auto weights = load_weights<double>(inputs, a);
    const std::vector<int64_t> shape{a.steps, a.realizations, ref::kFieldChannels, a.height, a.width};
    ArrayMap out;
    for (const auto& [name, model] : {std::pair{kTrajectory, ref::ModelOptions{}},
                                      std::pair{kApproximateModelTrajectory, ref::ModelOptions{true, true}}}) {
      HostArray trajectory = HostArray::zeros(shape, ElementType::Float64);
      trajectory.values = ref::rollout<double>(weights, x0.values.data(), a, policy_, model);
      out[name] = std::move(trajectory);
    }
    return out;
  }

  std::vector<OutputSpec> outputs() const override {
    return {exact_check(architecture(SizeClass::Default, policy_).steps)};
  }

  std::vector<OutputSpec> outputs_for(int phase, SizeClass size) const override {
    const int steps = architecture(size, policy_).steps;
    // The checks follow the optimizations in effect at `phase` on a backend that has them all.
    const PhasePlan plan = derive_phase_plan(phases(), phase, {Capability::Bf16});
    if (!computes_in_bf16(plan)) return {exact_check(steps)};
    if (!model_of(plan).group_norm) return {bf16_check(steps, kTrajectory)};
    return {bf16_check(steps, kApproximateModelTrajectory), model_change_check(steps)};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kEager,
         "the unoptimized port: conv, InstanceNorm and GELU op by op into fresh buffers, each "
         "realization in its own call (the original's micro-batch loop)"},
        PhaseInfo(1, kCompileFusion, "conv -> norm -> GELU fused per block, and the policy update fused in")
            .claims(1.5, 2.0),
        PhaseInfo(2, kMixedPrecision, "bf16 operands with fp32 accumulation (approximate)")
            .approximate()
            .claims(1.8, 2.0)
            .needing({Capability::Bf16}),
        PhaseInfo(3, kOperatorOpts,
                  "GroupNorm(8) for InstanceNorm and tanh-GELU (a model change: approximate), ping-pong buffers")
            .approximate()
            .claims(1.2, 1.3),
        PhaseInfo(4, kBatching, "all M realizations in one call").approximate().claims(1.5, 2.0),
        PhaseInfo(5, kProfileGuided, "what profiling this backend showed: layouts, primitive reuse, threads")
            .approximate()
            .claims(1.3, 1.3),
        PhaseInfo(6, kExactFast,
                  "beyond the seed: every exact optimization (fusion, ping-pong buffers, batching, tuned "
                  "layouts) in fp32, with the exact model")
            .turning_off({kMixedPrecision, kOperatorOpts}),
    };
  }

  PhaseInfo cumulative_claim() const override {
    PhaseInfo claim;
    claim.index = 5;  // profile_guided
    claim.name = "seed 003's total for phases 1-5 (conservative estimate)";
    claim.claimed_min = 8;
    claim.claimed_max = 12;
    return claim;
  }

  // Compulsory work of one iteration (docs/roofline.md, "Declared work"). A flop is one add, multiply,
  // divide, sqrt or erf. The M realizations count M times: they start from the same x0 and are
  // identical here only because the stochastic block of the original (which makes them differ) is
  // off. Per realization and step (T - 1 steps), plane = H W, p = k / 2:
  //   convolution a -> b: a multiply and an add per weight and output pixel the kernel reaches
  //     inside the image (zero padding contributes nothing): 2 a b taps, with
  //     taps = (k H - p (p + 1)) (k W - p (p + 1))
  //   InstanceNorm + exact GELU of each of the b channels, per value: sum for the mean, v - mean,
  //     square, sum of squares, * inv_std, * gamma, + beta (7); GELU 0.5 v (1 + erf(v / sqrt 2))
  //     (5); per channel: mean, variance, + eps, sqrt, 1 / (5):  b (12 plane + 5)
  //   1x1 head c -> 3 with bias: 2 c multiply-adds per output value:  6 c plane
  //   policy per field value: autoregressive 0, residual x + dt o (2), convex a x + (1 - a) o (3)
  // Bytes, fp32: read x0 [3,H,W] and every weight (conv weights, gamma, beta, head weight and bias)
  // once; write the trajectory [T,M,3,H,W] once.
  // Default (64x64, M = 3, T = 16, channels 16, 16, 32, 64): 9.66 GFLOP (convex) and 2,513,356
  // bytes. (What the baseline does, the declaration before the compulsory one: 9.86 GFLOP, every
  // zero-padded tap counted, and 290 MB, every activation written and read back.)
  WorkEstimate work(SizeClass size) const override {
    const ref::Architecture a = architecture(size, policy_);
    const double plane = double(a.height) * a.width, calls = double(a.steps - 1) * a.realizations;
    const double p = a.kernel / 2, edge = p * (p + 1);
    const double taps = (a.kernel * a.height - edge) * (a.kernel * a.width - edge);
    const double policy = policy_ == ref::Policy::Autoregressive ? 0 : policy_ == ref::Policy::Residual ? 2 : 3;
    double flops = 0, weights = 0;
    int in = ref::kFieldChannels;
    for (int out : a.block_channels()) {
      flops += 2.0 * in * out * taps + out * (12.0 * plane + 5);
      weights += double(out) * in * a.kernel * a.kernel + 2.0 * out;
      in = out;
    }
    flops += 6.0 * in * plane + policy * ref::kFieldChannels * plane;
    weights += 3.0 * in + 3;
    const double trajectory = double(a.steps) * a.realizations * a.field_size();
    return {calls * flops, 4.0 * (a.field_size() + weights) + 4.0 * trajectory};
  }

  double memory_bytes(SizeClass size) const override {
    const ref::Architecture a = architecture(size, policy_);
    return 3.0 * a.steps * a.realizations * a.field_size() * 8 + 64.0 * a.c0 * a.height * a.width * 8;
  }

 private:
  // The grid from x0, c0 and k from the first block's weight, the layers from the count of
  // blocks, M and T from kRolloutDims.
  ref::Architecture architecture_of(const ArrayMap& inputs) const {
    const HostArray& x0 = require(inputs, kInitialField);
    const HostArray& first_weight = require(inputs, block_input(0, "weight"));
    const HostArray& rollout = require(inputs, kRolloutDims);
    int blocks = 1;
    while (inputs.count(block_input(blocks, "weight"))) ++blocks;
    const bool valid = x0.shape.size() == 3 && x0.shape[0] == ref::kFieldChannels && first_weight.shape.size() == 4 &&
                       first_weight.shape[1] == ref::kFieldChannels && first_weight.shape[2] == first_weight.shape[3] &&
                       x0.shape[1] >= first_weight.shape[2] && x0.shape[2] >= first_weight.shape[2] &&
                       rollout.numel() == 2 && rollout.values[0] >= 1 && rollout.values[1] >= 1;
    if (!valid)
      throw std::invalid_argument("x0 " + x0.shape_string() + ", " + block_input(0, "weight") + " " +
                                  first_weight.shape_string() + " and " + kRolloutDims + " " + rollout.shape_string() +
                                  " are no spinlock shapes");
    return {static_cast<int>(x0.shape[1]),
            static_cast<int>(x0.shape[2]),
            static_cast<int>(rollout.values[0]),
            static_cast<int>(rollout.values[1]),
            blocks - 1,
            static_cast<int>(first_weight.shape[0]),
            static_cast<int>(first_weight.shape[2])};
  }

  OutputSpec budgeted(const std::string& against, double local, int steps, std::string reason) const {
    OutputSpec spec{kTrajectory, 0, std::move(reason)};
    if (against != kTrajectory) spec.reference = against;
    spec.per_step = true;
    spec.step_budget = step_budgets(local, error_growth(policy_), steps);
    spec.tolerance = spec.step_budget.back();
    return spec;
  }

  OutputSpec exact_check(int steps) const {
    return budgeted(kTrajectory, kFp32LocalError, steps,
                    "fp32: 1e-5 per operator application (5 convolutions of up to 288 terms, "
                    "norms over H*W), amplified " + fmt(error_growth(policy_)) + "x per step by the " +
                        policy_name(policy_) + " map");
  }

  OutputSpec bf16_check(int steps, const std::string& against) const {
    return budgeted(against, kBf16LocalError, steps,
                    "bf16 keeps 8 significant bits (unit roundoff 2^-9 = 2e-3) in the operands of "
                    "5 convolutions: the bf16 default of 1e-2 per operator application, amplified " +
                        fmt(error_growth(policy_)) + "x per step by the " + policy_name(policy_) + " map");
  }

  OutputSpec model_change_check(int steps) const {
    OutputSpec spec{kTrajectory, kModelChangeBound,
                    "GroupNorm(8) is another operator, O(1) away from InstanceNorm: only its scale is bounded "
                    "here; its math is checked against its own fp64 model"};
    spec.per_step = true;
    spec.step_budget.assign(steps, kModelChangeBound);
    return spec;
  }

  ref::Policy policy_;
};

const WorkloadRegistration autoregressive{std::make_shared<CnnRollout>(ref::Policy::Autoregressive)};
const WorkloadRegistration residual{std::make_shared<CnnRollout>(ref::Policy::Residual)};
const WorkloadRegistration convex{std::make_shared<CnnRollout>(ref::Policy::Convex)};

}  // namespace
}  // namespace pb::suites::spinlock
