// spinlock/cnn_rollout_<policy> on oneDNN: Spinlock's CNN operator rolled out on the CPU engine.
// Math: reference/spinlock/cnn_rollout.hpp; definition, phase catalog and error budgets:
// suites/spinlock/cnn_rollout.cpp; the suite and its measurements: docs/spinlock.md.
//
// One run() is a whole rollout from x0: the trajectory's row 0 from x0 (reorders), then for each
// step t and each operator call (one realization, or all M with batching) the ConvBlocks, the 1x1
// head and the policy update, and the new row of the trajectory. Every primitive is built in
// setup(); run() rebinds the memory handles of the call's input and output (no allocation). The
// optimizations in effect are read once into a RolloutPlan; the comments at the code that each
// one changes say what oneDNN does with it and why it is done so. Measured notes: oneDNN 2.6.3,
// default size, one thread, best of 20; the implementations named are what
// primitive_desc::impl_info_str() reported here, and machine.json's onednn.max_cpu_isa records
// the effective ISA.

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/onednn_backend.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "phasebench/variant.hpp"
#include "suites/spinlock/cnn_rollout.hpp"

namespace pb::onednn_backend {
namespace {

namespace sp = pb::suites::spinlock;
namespace ref = pb::reference::spinlock;
using dnnl::algorithm;
using dnnl::memory;
using DataType = memory::data_type;
using Tag = memory::format_tag;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kEps = static_cast<float>(ref::kNormEps);

/// The optimizations in effect, as the switches the operator call is built from.
struct RolloutPlan {
  explicit RolloutPlan(const VariantContext& context)
      : fresh_buffers(!sp::preallocates(context.plan)),
        fused(context.has(sp::kCompileFusion)),
        bf16(sp::computes_in_bf16(context.plan)),
        batched(sp::batches_realizations(context.plan)),
        channels_last(context.has(sp::kProfileGuided)),
        model(sp::model_of(context.plan)) {}

  // Until buffers are preallocated (operator_opts, exact_fast) every op writes new storage, as
  // an eager framework's ops return new tensors.
  bool fresh_buffers;
  bool fused;  // compile_fusion: affine + GELU in one binary, the policy update in the head
  // mixed_precision: bf16 convolution sources, weights and destinations (fp32 accumulation
  // inside oneDNN), bf16 norms (their statistics are fp32 inside oneDNN) with fp32 gamma and
  // beta, a bf16 head source with an fp32 destination: the state and the trajectory stay fp32.
  // On plain NCHW the bf16 convolutions are gemm:jit at about the fp32 rate, so bf16 gains little
  // by itself: it pays off with profile_guided's brgconv.
  bool bf16;
  bool batched;  // batching: one call for all M realizations (N = M everywhere)
  // profile_guided: the convolutions dominate, and on plain NCHW oneDNN runs them as gemm:jit
  // (im2col + sgemm); asked with format_tag::any it picks channels-last (NHWC) brgconv, faster in
  // fp32 and more so in bf16 (avx512_core_bf16 dot products). So activations are NHWC between
  // all layers (named explicitly, as the norms take per-sample views of them) and the weights in
  // the layout the primitive chose from format_tag::any (reordered once in setup); reorders only
  // at the ends (state to bf16, state to the trajectory).
  bool channels_last;
  ref::ModelOptions model;  // operator_opts: GroupNorm(gcd(8, C)) and tanh-GELU (a model change)

  DataType activations() const { return bf16 ? DataType::bf16 : DataType::f32; }
  Tag layout() const { return channels_last ? Tag::nhwc : Tag::nchw; }
  algorithm gelu() const {
    return model.tanh_gelu ? algorithm::eltwise_gelu_tanh : algorithm::eltwise_gelu_erf;
  }
};

/// The operator's weights on the engine, fp32 in the reference's layouts (setup).
struct EngineWeights {
  std::vector<int> in_channels, out_channels;
  std::vector<memory> conv, gamma, beta;  // [out,in,k,k], [out], [out]
  memory head_weight, head_bias;           // [3,c,1,1], [3]
  memory scaled_head_weight, scaled_head_bias;  // both times `head_scale` (see OperatorCall::head)
  int kernel = 0;

  EngineWeights(const ref::OperatorWeights<float>& w, float head_scale) : kernel(w.kernel) {
    const auto vector = [](const std::vector<float>& v) {
      return upload({{static_cast<int64_t>(v.size())}, DataType::f32, Tag::a}, v);
    };
    for (const auto& block : w.blocks) {
      in_channels.push_back(block.in_channels);
      out_channels.push_back(block.out_channels);
      conv.push_back(upload({{block.out_channels, block.in_channels, kernel, kernel}, DataType::f32, Tag::oihw},
                            block.weight));
      gamma.push_back(vector(block.gamma));
      beta.push_back(vector(block.beta));
    }
    head_weight = upload({{ref::kFieldChannels, out_channels.back(), 1, 1}, DataType::f32, Tag::oihw}, w.head_weight);
    head_bias = vector(w.head_bias);
    const auto times_scale = [head_scale](std::vector<float> v) {
      for (float& x : v) x *= head_scale;
      return v;
    };
    scaled_head_weight = upload(head_weight.get_desc(), times_scale(w.head_weight));
    scaled_head_bias = vector(times_scale(w.head_bias));
  }
};

/// `channels` fp32 values as the [1, C, 1, 1] operand of a per-channel binary op.
memory per_channel(const memory& values, int channels) {
  return view(values, {{1, channels, 1, 1}, DataType::f32, Tag::nchw});
}

/// The policy as x <- of_state x + of_output O.
struct PolicyMix {
  float of_state = 0, of_output = 1;
};

/// Whether the fused head uses weights pre-scaled by of_output (see OperatorCall::head): when the
/// state is mixed in with a weight other than of_output's.
bool head_is_prescaled(const PolicyMix& mix) { return mix.of_state != 0 && mix.of_state != mix.of_output; }

PolicyMix policy_mix(ref::Policy policy) {
  switch (policy) {
    case ref::Policy::Autoregressive: return {0.0f, 1.0f};
    case ref::Policy::Residual: return {1.0f, static_cast<float>(ref::kResidualDt)};
    case ref::Policy::Convex:
      return {static_cast<float>(ref::kConvexAlpha), static_cast<float>(1 - ref::kConvexAlpha)};
  }
  throw std::invalid_argument("unknown policy");
}

// ---- GroupNorm statistics on channels-last data (profile_guided's host kernel) -----------------

float to_float(uint16_t bf16) {
  const uint32_t bits = uint32_t{bf16} << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
float to_float(float value) { return value; }

/// Each group's mean and biased variance of `samples` NHWC samples [H W][C], written to every
/// channel of the group (mean and variance [samples][C]: batch norm's global statistics). One
/// read pass: each OpenMP thread sums x and x^2 per sample and channel in double over its share
/// of the pixels, into its own `partial` slice (2 C doubles per sample and thread, allocated in
/// setup); the slices are combined serially. Variance = E[x^2] - mean^2 (in double).
template <typename Element>
void group_statistics(const Element* data, int64_t samples, int64_t pixels, int channels, int groups,
                      std::vector<double>& partial, float* mean, float* variance) {
  const int64_t slice = 2 * channels * samples;
  int threads = 1;
#pragma omp parallel
  {
#pragma omp single
    threads = omp_get_num_threads();
    double* sums = partial.data() + slice * omp_get_thread_num();
    std::fill(sums, sums + slice, 0.0);
#pragma omp for schedule(static)
    for (int64_t q = 0; q < samples * pixels; ++q) {  // q = n * pixels + p: one pixel of sample n
      double* sample_sums = sums + 2 * channels * (q / pixels);
      for (int c = 0; c < channels; ++c) {
        const double v = to_float(data[q * channels + c]);
        sample_sums[c] += v;
        sample_sums[channels + c] += v * v;
      }
    }
  }
  const int per_group = channels / groups;
  const double count = double(pixels) * per_group;
  for (int64_t n = 0; n < samples; ++n)
    for (int g = 0; g < groups; ++g) {
      double sum = 0, squares = 0;
      for (int t = 0; t < threads; ++t)
        for (int c = g * per_group; c < (g + 1) * per_group; ++c) {
          sum += partial[slice * t + 2 * channels * n + c];
          squares += partial[slice * t + 2 * channels * n + channels + c];
        }
      const double group_mean = sum / count;
      const double group_variance = std::max(0.0, squares / count - group_mean * group_mean);
      for (int c = g * per_group; c < (g + 1) * per_group; ++c) {
        mean[n * channels + c] = static_cast<float>(group_mean);
        variance[n * channels + c] = static_cast<float>(group_variance);
      }
    }
}

// ---- one operator call --------------------------------------------------------------------------

/// O_theta and the policy update for `batch` realizations, built in setup: operator()(in, out)
/// reads the fp32 states [batch,3,H,W] at `in` and writes the updated ones at `out` (the same
/// address with compile_fusion, where the head updates the state in place).
class OperatorCall {
 public:
  OperatorCall(const RolloutPlan& plan, const EngineWeights& weights, const ref::Architecture& arch,
               ref::Policy policy, int batch)
      : plan_(plan), weights_(weights), batch_(batch), height_(arch.height), width_(arch.width),
        policy_(policy_mix(policy)) {
    const memory::desc state = activation_desc(ref::kFieldChannels, DataType::f32);
    state_in_ = memory(state, engine(), nullptr);  // bound to a state by operator()
    state_out_ = memory(state, engine(), nullptr);
    allocate_ping_pong();
    memory source = input();
    for (size_t i = 0; i < weights.out_channels.size(); ++i) source = block(static_cast<int>(i), source);
    head(source);
  }

  void operator()(float* in, float* out) {
    state_in_.set_data_handle(in);
    state_out_.set_data_handle(out);
    program_();
  }

 private:
  memory::desc activation_desc(int channels, DataType type) const {
    return {{batch_, channels, height_, width_}, type, plan_.layout()};
  }

  // Preallocated buffers (operator_opts, exact_fast): each block writes one of two buffers sized
  // for the widest block, the one its source is not in. The variant then allocates nothing in
  // run(); bytes_alloc_per_iter still shows a few hundred bytes per primitive execution, which
  // oneDNN 2.6 allocates inside execute itself (a counting operator new sees it).
  void allocate_ping_pong() {
    if (plan_.fresh_buffers) return;
    const int widest = *std::max_element(weights_.out_channels.begin(), weights_.out_channels.end());
    for (memory& buffer : ping_pong_) buffer = allocate(activation_desc(widest, plan_.activations()));
  }

  RenewableMemory& new_buffer(const memory::desc& desc) { return buffers_.emplace_back(desc); }

  void renew_before_write(RenewableMemory& buffer) {
    if (plan_.fresh_buffers) program_.host_step([&buffer] { buffer.renew(); });
  }

  // The state as the first convolution's source: itself in fp32; with bf16, a bf16 copy (one
  // reorder per call).
  memory input() {
    if (!plan_.bf16) return state_in_;
    RenewableMemory& copy = new_buffer(activation_desc(ref::kFieldChannels, DataType::bf16));
    renew_before_write(copy);
    program_.add(onednn_backend::copy(state_in_, copy.get()));
    return copy.get();
  }

  // ConvBlock i: convolution, then the norm and GELU as the plan does them. Returns the output.
  memory block(int i, const memory& source) {
    const int channels = weights_.out_channels[i], in = weights_.in_channels[i], k = weights_.kernel;
    const memory::desc out_desc = activation_desc(channels, plan_.activations());
    RenewableMemory& out =
        plan_.fresh_buffers ? new_buffer(out_desc) : buffers_.emplace_back(out_desc, ping_pong_[i % 2]);
    const memory::desc weights_desc({channels, in, k, k}, plan_.activations(),
                                    plan_.channels_last ? Tag::any : Tag::oihw);
    const auto pd = convolution_pd(source.get_desc(), weights_desc, out_desc, k / 2);
    const memory conv_weights = converted(weights_.conv[i], pd.weights_desc());
    renew_before_write(out);
    program_.add(Execution(pd, {{DNNL_ARG_SRC, source}, {DNNL_ARG_WEIGHTS, conv_weights}, {DNNL_ARG_DST, out.get()}}));
    if (!plan_.fused) return eager_norm_gelu(i, out);
    if (!plan_.channels_last) return row_norm_affine_gelu(i, out);
    return sample_norms_then_gelu(i, out);
  }

  // The unoptimized port: InstanceNorm as batch normalization of the one sample with scale and
  // shift (how PyTorch computes it), then GELU, each into a fresh buffer.
  memory eager_norm_gelu(int i, RenewableMemory& conv_out) {
    const memory::desc desc = conv_out.get().get_desc();
    RenewableMemory& normed = new_buffer(desc);
    RenewableMemory& activated = new_buffer(desc);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    renew_before_write(normed);
    program_.add(Execution(batch_norm_pd(desc, kEps, flags), {{DNNL_ARG_SRC, conv_out.get()},
                                                              {DNNL_ARG_DST, normed.get()},
                                                              {DNNL_ARG_SCALE, weights_.gamma[i]},
                                                              {DNNL_ARG_SHIFT, weights_.beta[i]}}));
    renew_before_write(activated);
    program_.add(eltwise(plan_.gelu(), normed.get(), activated.get()));
    return activated.get();
  }

  // compile_fusion on plain NCHW: what oneDNN lets fuse. Batch and layer normalization take no
  // post-ops in 2.6 (primitive creation fails), and a convolution's post-ops run before the
  // statistics exist, so the norm cannot join the convolution. Instead the statistics and
  // normalization are one layer normalization over the rows [N G, (C/G) H W] of the
  // convolution's output (in place, no affine), and the affine map and GELU are ONE binary
  // primitive with post-ops, in place. Part of the gain is the layer-norm kernel itself: on three
  // samples it is faster than ncsp batch norm on one.
  memory row_norm_affine_gelu(int i, RenewableMemory& out) {
    const int channels = weights_.out_channels[i];
    const int groups = ref::norm_groups(channels, plan_.model);
    const memory::desc rows_desc({int64_t{batch_} * groups, int64_t{channels / groups} * height_ * width_},
                                 plan_.activations(), Tag::ab);
    const memory rows = out.view(rows_desc);
    program_.add(Execution(row_norm_pd(rows_desc, kEps), {{DNNL_ARG_SRC, rows}, {DNNL_ARG_DST, rows}}));
    add_affine_gelu(i, out.get());
    return out.get();
  }

  // x * gamma, + beta and GELU as one binary primitive, in place.
  void add_affine_gelu(int i, const memory& data) {
    const int channels = weights_.out_channels[i];
    const memory gamma = per_channel(weights_.gamma[i], channels), beta = per_channel(weights_.beta[i], channels);
    program_.add(binary(algorithm::binary_mul, data, gamma, data,
                        PostOps().binary(algorithm::binary_add, beta).eltwise(plan_.gelu())));
  }

  // profile_guided (NHWC): layer norm needs plain rows, and channels-last GroupNorm has no
  // primitive: batch norm over an NCHW view [H W, G, C/G, 1] of a sample runs in the slow
  // ncsp_bnorm. So a host kernel (OpenMP, one read pass) computes every group's mean and variance
  // (InstanceNorm: a group per channel, statistics summed in double), and the NHWC batch norm jit
  // (bnorm_jit:avx512_core_bf16) applies them per sample as global statistics with scale and
  // shift, in place; then GELU over the batch, in place. Batch norm computing its own statistics
  // (its jit joins its threads between passes) stalls on a loaded machine, many times slower than
  // on the host kernel's statistics, so exact_fast takes them from the host kernel too.
  memory sample_norms_then_gelu(int i, RenewableMemory& out) {
    const int channels = weights_.out_channels[i];
    add_group_statistics(out.get(), channels, ref::norm_groups(channels, plan_.model));
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift |
                       dnnl::normalization_flags::use_global_stats;
    const memory::desc sample({1, channels, height_, width_}, plan_.activations(), Tag::nhwc);
    const memory::desc stats({channels}, DataType::f32, Tag::a);
    const auto pd = batch_norm_pd(sample, kEps, flags);
    const int64_t sample_size = int64_t{channels} * height_ * width_;
    for (int n = 0; n < batch_; ++n) {
      const memory data = out.view(sample, n * sample_size);
      program_.add(Execution(pd, {{DNNL_ARG_SRC, data},
                                  {DNNL_ARG_DST, data},
                                  {DNNL_ARG_SCALE, weights_.gamma[i]},
                                  {DNNL_ARG_SHIFT, weights_.beta[i]},
                                  {DNNL_ARG_MEAN, view(group_mean_.back(), stats, int64_t{n} * channels)},
                                  {DNNL_ARG_VARIANCE, view(group_variance_.back(), stats, int64_t{n} * channels)}}));
    }
    program_.add(eltwise(plan_.gelu(), out.get(), out.get()));
    return out.get();
  }

  void add_group_statistics(const memory& data, int channels, int groups) {
    const memory::desc stats({int64_t{batch_} * channels}, DataType::f32, Tag::a);
    group_mean_.push_back(allocate(stats));
    group_variance_.push_back(allocate(stats));
    partial_sums_.emplace_back(size_t(2) * channels * batch_ * std::max(1, omp_get_max_threads()));
    float* mean = host_floats(group_mean_.back());
    float* variance = host_floats(group_variance_.back());
    std::vector<double>* partial = &partial_sums_.back();
    const int64_t pixels = int64_t{height_} * width_, samples = batch_;
    const bool bf16 = plan_.bf16;
    program_.kernel([=] {
      if (bf16)
        group_statistics(static_cast<const uint16_t*>(data.get_data_handle()), samples, pixels, channels, groups,
                         *partial, mean, variance);
      else
        group_statistics(static_cast<const float*>(data.get_data_handle()), samples, pixels, channels, groups,
                         *partial, mean, variance);
    });
  }

  // The 1x1 head with bias and the policy update. With compile_fusion the update is fused into
  // the head, which writes x <- a_x x + a_o O in place on a destination that holds the state x.
  // gemm:jit runs a sum post-op only first and only with scale 1 ([linear, sum] and sum:100,
  // the residual policy's a_x / a_o, fall to ref:any, many times slower):
  // so sum(1) then linear(a_o) when a_x = a_o (convex), and otherwise the head's weights and
  // bias pre-scaled by a_o (setup) with sum(a_x) (residual: sum(1)). The state is copied into
  // the trajectory once per step.
  void head(const memory& source) {
    const int channels = weights_.out_channels.back();
    const memory::desc weights_desc({ref::kFieldChannels, channels, 1, 1}, plan_.activations(),
                                    plan_.channels_last ? Tag::any : Tag::oihw);
    if (!plan_.fused) return eager_head_and_policy(source, weights_desc);
    const bool prescaled = head_is_prescaled(policy_);
    const memory& weight = prescaled ? weights_.scaled_head_weight : weights_.head_weight;
    const memory& bias = prescaled ? weights_.scaled_head_bias : weights_.head_bias;
    PostOps post;
    if (prescaled) {
      post.sum(policy_.of_state);
    } else {
      if (policy_.of_state != 0) post.sum(policy_.of_state / policy_.of_output);
      if (policy_.of_output != 1) post.eltwise(algorithm::eltwise_linear, policy_.of_output, 0.0f);
    }
    const auto pd = convolution_pd(source.get_desc(), weights_desc, bias.get_desc(), state_out_.get_desc(), 0,
                                   post.attr());
    program_.add(Execution(pd, {{DNNL_ARG_SRC, source},
                                {DNNL_ARG_WEIGHTS, converted(weight, pd.weights_desc())},
                                {DNNL_ARG_BIAS, bias},
                                {DNNL_ARG_DST, state_out_}}));
  }

  // The unoptimized port: O into a fresh buffer, the policy's scalings and sum as separate ops
  // into fresh buffers, the new state copied into the trajectory.
  void eager_head_and_policy(const memory& source, const memory::desc& weights_desc) {
    const memory::desc field = state_out_.get_desc();
    RenewableMemory& output = new_buffer(field);
    const auto pd = convolution_pd(source.get_desc(), weights_desc, weights_.head_bias.get_desc(), field, 0);
    renew_before_write(output);
    program_.add(Execution(pd, {{DNNL_ARG_SRC, source},
                                {DNNL_ARG_WEIGHTS, converted(weights_.head_weight, pd.weights_desc())},
                                {DNNL_ARG_BIAS, weights_.head_bias},
                                {DNNL_ARG_DST, output.get()}}));
    const memory scaled_output = scaled(output.get(), policy_.of_output);
    memory next = scaled_output;
    if (policy_.of_state != 0) {
      RenewableMemory& sum = new_buffer(field);
      const memory scaled_state = scaled(state_in_, policy_.of_state);
      renew_before_write(sum);
      program_.add(binary(algorithm::binary_add, scaled_state, scaled_output, sum.get()));
      next = sum.get();
    }
    program_.add(copy(next, state_out_));
  }

  /// factor * x into a fresh buffer, or x itself when factor is 1.
  memory scaled(const memory& x, float factor) {
    if (factor == 1) return x;
    RenewableMemory& result = new_buffer(x.get_desc());
    renew_before_write(result);
    program_.add(eltwise(algorithm::eltwise_linear, x, result.get(), factor, 0.0f));
    return result.get();
  }

  RolloutPlan plan_;
  const EngineWeights& weights_;
  int batch_, height_, width_;
  PolicyMix policy_;
  memory state_in_, state_out_;
  memory ping_pong_[2];
  std::deque<RenewableMemory> buffers_;  // stable addresses: the program holds references
  std::vector<memory> group_mean_, group_variance_;
  std::deque<std::vector<double>> partial_sums_;
  Program program_;
};

// ---- the variant --------------------------------------------------------------------------------

bool cpu_has_bf16_dot_products() {
  const auto needed = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & needed) == needed;
}

class CnnRolloutOnednn final : public Variant {
 public:
  explicit CnnRolloutOnednn(const VariantContext& context)
      : arch_(sp::architecture(context)),
        policy_(sp::policy_of(*context.workload)),
        plan_(context),
        device_(context.device) {}

  std::optional<CannotRun> support() const override {
    if (auto reason = cannot_run_on(device_)) return reason;
    if (plan_.bf16 && !cpu_has_bf16_dot_products()) {
      std::ostringstream reason;
      reason << "bf16 convolutions need avx512_core_bf16; oneDNN reports ISA 0x" << std::hex
             << static_cast<unsigned>(dnnl::get_effective_cpu_isa());
      return CannotRun{CannotRun::Kind::Skipped, reason.str()};
    }
    return std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    const int64_t T = arch_.steps, M = arch_.realizations, H = arch_.height, W = arch_.width;
    const memory::desc x0_desc({1, ref::kFieldChannels, H, W}, DataType::f32, Tag::nchw);
    x0_ = upload(x0_desc, require(inputs, sp::kInitialField).to_floats());
    trajectory_ = allocate({{T * M, ref::kFieldChannels, H, W}, DataType::f32, Tag::nchw});
    weights_ = std::make_unique<EngineWeights>(sp::load_weights<float>(inputs, arch_), policy_mix(policy_).of_output);
    call_ = std::make_unique<OperatorCall>(plan_, *weights_, arch_, policy_, plan_.batched ? arch_.realizations : 1);
    if (plan_.fused) {
      state_ = allocate({{M, ref::kFieldChannels, H, W}, DataType::f32, plan_.layout()});
      build_publish();
    }
    build_start();
  }

  void poison_outputs() override { fill_floats(trajectory_, kNaN); }

  void run() override {
    start_();
    if (plan_.fused) publish(0);
    const int batch = plan_.batched ? arch_.realizations : 1;
    for (int t = 1; t < arch_.steps; ++t) {
      for (int m = 0; m < arch_.realizations; m += batch) {
        if (plan_.fused) {
          (*call_)(state_at(m, batch), state_at(m, batch));
        } else {
          (*call_)(trajectory_at(t - 1, m, batch), trajectory_at(t, m, batch));
        }
      }
      if (plan_.fused) publish(t);
    }
  }

  ArrayMap outputs() override {
    ArrayMap out;
    out[sp::kTrajectory] =
        download(trajectory_, {arch_.steps, arch_.realizations, ref::kFieldChannels, arch_.height, arch_.width});
    return out;
  }

 private:
  // Where `count` realizations from m on start, in the trajectory at step t or in the states.
  // Checked: oneDNN reads and writes through these addresses, and a write past the end from
  // inside the library (not instrumented) is seen by no sanitizer; here it is an exception.
  float* trajectory_at(int t, int m, int count) const {
    checked_first(t, 1, arch_.steps, "cnn_rollout: steps");
    checked_first(m, count, arch_.realizations, "cnn_rollout: realizations");
    return host_floats(trajectory_) + (int64_t{t} * arch_.realizations + m) * arch_.field_size();
  }
  float* state_at(int m, int count) const {
    checked_first(m, count, arch_.realizations, "cnn_rollout: realizations");
    return host_floats(state_) + m * arch_.field_size();
  }

  // x0 into every realization's state (with compile_fusion) or row 0 of the trajectory.
  void build_start() {
    const memory::desc sample({1, ref::kFieldChannels, arch_.height, arch_.width}, DataType::f32,
                              plan_.fused ? plan_.layout() : Tag::nchw);
    for (int m = 0; m < arch_.realizations; ++m)
      start_.add(copy(x0_, memory(sample, engine(), plan_.fused ? state_at(m, 1) : trajectory_at(0, m, 1))));
  }

  // The states, in their layout, into one row of the trajectory.
  void build_publish() {
    const memory::desc row({arch_.realizations, ref::kFieldChannels, arch_.height, arch_.width}, DataType::f32,
                           Tag::nchw);
    trajectory_row_ = memory(row, engine(), trajectory_at(0, 0, arch_.realizations));
    publish_.emplace(copy(state_, trajectory_row_));
  }

  void publish(int t) {
    trajectory_row_.set_data_handle(trajectory_at(t, 0, arch_.realizations));
    (*publish_)();
  }

  ref::Architecture arch_;
  ref::Policy policy_;
  RolloutPlan plan_;
  std::string device_;
  memory x0_, trajectory_, state_, trajectory_row_;
  std::unique_ptr<EngineWeights> weights_;
  std::unique_ptr<OperatorCall> call_;
  Program start_;
  std::optional<Execution> publish_;
};

VariantFactory factory() {
  return [](const VariantContext& context) { return std::make_unique<CnnRolloutOnednn>(context); };
}

const sp::RolloutRegistration registration{"onednn", sp::kAllPhases, factory()};

}  // namespace
}  // namespace pb::onednn_backend
