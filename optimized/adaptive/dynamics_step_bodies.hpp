#pragma once
// adaptive/dynamics_step on CUDA: the kernel bodies (PB_HOST_DEVICE) and the ladder, written once
// against an executor, so the same code queues the kernels on the GPU (DeviceExecutor,
// backends/cuda/device_executor.cuh, in dynamics_step-cuda.cu) and runs them on the host in the
// tests (tests/cuda/host_executor.hpp, tests/cuda/adaptive_cuda_test.cpp). Math:
// reference/adaptive/dynamics_step.hpp; phases: suites/adaptive/dynamics_step.cpp; the Kokkos
// ladder (dynamics_step-kokkos.cpp) has the same kernels.
//
// Every kernel is one Body with its operation named by Op: one instantiation of the kernel
// template for the whole ladder (a uniform switch per thread costs nothing next to the loads),
// and the baseline's separate kernels stay separate launches.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/host_device.hpp"
#include "phasebench/arrays.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/phases.hpp"
#include "suites/adaptive/dynamics_step.hpp"

namespace pb::cuda_backend::adaptive {

namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;

/// What one kernel does; "cell" ops run one thread per (b, n), "unit" ops one per (b, n, j).
enum class Op : int {
  // per cell
  Mask, AnxietyRelu, AnxietyTwice, AnxietyVariance, AnxietySum, FusedAnxiety,
  Projection, Gate, Damping, Change, MaskChange, DecayEnergy, AddChange, ClampEnergy, FusedEnergy, Activity,
  // per hidden unit
  MaskedScale, GatheredScale, Drive, InputProjection, ScaledInput, AddDrive, MaskUnits, AddHidden, Squash,
  FusedHidden,
};

/// The device pointers and sizes every body reads (parameters, state, scratch).
struct Pointers {
  const float* x;
  const int64_t* phase;
  const float *W, *b, *s, *w_e, *w_a;  // W row-major [H, H]
  float b_e, b_a;
  int64_t H, I;
  float *h, *e, *a;
  float *mask, *anxiety, *cell0, *cell1, *cell2, *cell3;  // per cell
  float *drive, *input, *unit0, *unit1;                   // per hidden unit
};

PB_HOST_DEVICE inline float clamp_body(float v, float low, float high) { return v < low ? low : (v > high ? high : v); }

/// Unbiased variance of n values.
PB_HOST_DEVICE inline float variance_body(const float* v, int64_t n) {
  float mean = 0, squares = 0;
  for (int64_t k = 0; k < n; ++k) mean += v[k];
  mean /= float(n);
  for (int64_t k = 0; k < n; ++k) squares += (v[k] - mean) * (v[k] - mean);
  return squares / float(n - 1);
}

PB_HOST_DEVICE inline float relu_body(float v) { return v > 0.f ? v : 0.f; }

/// (W[:, :count] v)_j + start, summed over k in order (the reference's order).
PB_HOST_DEVICE inline float row_dot_body(const float* W, int64_t H, int64_t j, const float* v, int64_t count,
                                         float start) {
  for (int64_t k = 0; k < count; ++k) start += W[j * H + k] * v[k];
  return start;
}

PB_HOST_DEVICE inline float projection_body(const Pointers& p, int64_t c) {
  float sum = p.b_e;
  for (int64_t k = 0; k < p.H; ++k) sum += p.w_e[k] * p.h[c * p.H + k];
  return sum;
}

/// u: x itself when I == H, else W[:, :I] x.
PB_HOST_DEVICE inline float input_of(const Pointers& p, int64_t i) {
  return p.I == p.H ? p.x[i] : p.input[i];
}

/// The per-cell operations.
PB_HOST_DEVICE inline void cell_body(Op op, const Pointers& p, int64_t c) {
  const int64_t H = p.H;
  switch (op) {
    case Op::Mask: p.mask[c] = p.phase[c] != ref::kSleepPhase ? 1.f : 0.f; break;
    case Op::AnxietyRelu: p.cell0[c] = relu_body(5.f - p.e[c]); break;
    case Op::AnxietyTwice: p.cell1[c] = 2.f * p.a[c]; break;
    case Op::AnxietyVariance: p.cell2[c] = variance_body(p.h + c * H, H); break;
    case Op::AnxietySum: p.anxiety[c] = p.cell0[c] + p.cell1[c] + p.cell2[c]; break;
    case Op::FusedAnxiety: p.anxiety[c] = relu_body(5.f - p.e[c]) + 2.f * p.a[c] + variance_body(p.h + c * H, H); break;
    case Op::Projection: p.cell0[c] = projection_body(p, c); break;
    case Op::Gate: p.cell1[c] = clamp_body(p.anxiety[c] / 10.f, 0.f, 1.f); break;
    case Op::Damping: p.cell2[c] = 1.f - 0.1f * p.cell1[c]; break;
    case Op::Change: p.cell3[c] = p.cell0[c] * p.cell2[c]; break;
    case Op::MaskChange: p.cell3[c] *= p.mask[c]; break;
    case Op::DecayEnergy: p.e[c] *= 0.99f; break;
    case Op::AddChange: p.e[c] += p.cell3[c]; break;
    case Op::ClampEnergy: p.e[c] = clamp_body(p.e[c], 0.f, 50.f); break;
    case Op::FusedEnergy: {
      const float damping = 1.f - 0.1f * clamp_body(p.anxiety[c] / 10.f, 0.f, 1.f);
      p.e[c] = clamp_body(0.99f * p.e[c] + projection_body(p, c) * damping * p.mask[c], 0.f, 50.f);
      break;
    }
    case Op::Activity: {
      float hidden_mean = 0, input_mean = 0;
      for (int64_t k = 0; k < H; ++k) hidden_mean += p.h[c * H + k];
      for (int64_t k = 0; k < p.I; ++k) input_mean += p.x[c * p.I + k];
      const float logit = p.w_a[0] * hidden_mean / float(H) + p.w_a[1] * input_mean / float(p.I) + p.b_a;
      p.a[c] = clamp_body(1.f / (1.f + expf(-logit)), 0.f, 1.f);
      break;
    }
    default: break;
  }
}

/// The per-hidden-unit operations, i = c H + j; `q` is the phase a MaskedScale scales.
PB_HOST_DEVICE inline void unit_body(Op op, const Pointers& p, int64_t q, int64_t i) {
  const int64_t H = p.H, c = i / H, j = i % H;
  switch (op) {
    case Op::MaskedScale: p.drive[i] *= 1.f + p.s[q] * (p.phase[c] == q ? 1.f : 0.f); break;
    case Op::GatheredScale: p.drive[i] *= 1.f + p.s[p.phase[c]]; break;
    case Op::Drive: p.drive[i] = row_dot_body(p.W, H, j, p.h + c * H, H, p.b[j]); break;
    case Op::InputProjection: p.input[i] = row_dot_body(p.W, H, j, p.x + c * p.I, p.I, 0.f); break;
    case Op::ScaledInput: p.unit0[i] = 0.1f * input_of(p, i); break;
    case Op::AddDrive: p.unit1[i] = p.drive[i] + p.unit0[i]; break;
    case Op::MaskUnits: p.unit0[i] = p.unit1[i] * p.mask[c]; break;
    case Op::AddHidden: p.unit1[i] = p.h[i] + p.unit0[i]; break;
    case Op::Squash: p.h[i] = tanhf(p.unit1[i]); break;
    case Op::FusedHidden: p.h[i] = tanhf(p.h[i] + p.mask[c] * (p.drive[i] + 0.1f * input_of(p, i))); break;
    default: break;
  }
}

/// One kernel's body: an elementwise op of the executors (one thread per index).
struct Body {
  Op op;
  Pointers p;
  int64_t q = 0;
  bool per_unit = false;
  PB_HOST_DEVICE void operator()(int64_t i) const {
    if (per_unit) unit_body(op, p, q, i);
    else cell_body(op, p, i);
  }
};

/// The ladder on executor Exec (DeviceExecutor or testing::HostExecutor). The baseline launches one
/// kernel per operation of the original's loop version: anxiety's three terms and their sum, one
/// masked scaling per phase, the hidden update's chain and the energy update's chain; each later
/// phase fuses one function into one kernel (energy: its projection too). run() allocates nothing.
template <typename Exec>
class DynamicsLadder {
  using Floats = typename Exec::template Buffer<float>;

 public:
  /// setup(): the inputs on the device, every buffer of the steps made.
  DynamicsLadder(Exec& exec, const ArrayMap& inputs, const PhasePlan& plan)
      : exec_(exec),
        d_(ad::dimensions_of(inputs)),
        fused_anxiety_(plan.has(ad::kFusedAnxiety)),
        gathered_scale_(plan.has(ad::kGatheredPhaseScale)),
        fused_hidden_(plan.has(ad::kFusedHidden)),
        fused_energy_(plan.has(ad::kFusedEnergy)) {
    const int64_t C = d_.cells(), H = d_.hidden;
    x_ = floats(inputs, ad::kInput), h0_ = floats(inputs, ad::kHidden0);
    e0_ = floats(inputs, ad::kEnergy0), a0_ = floats(inputs, ad::kActivity0);
    W_ = floats(inputs, ad::kWeight), b_ = floats(inputs, ad::kBias), s_ = floats(inputs, ad::kPhaseScale);
    w_e_ = floats(inputs, ad::kEnergyWeight), w_a_ = floats(inputs, ad::kActivityWeight);
    const std::vector<int64_t> phases = ad::values_of<int64_t>(inputs, ad::kPhase);
    phase_ = exec_.template allocate<int64_t>(C);
    exec_.upload(phase_.data(), phases.data(), C);
    for (Floats* cell : {&e_, &a_, &mask_, &anxiety_, &cell0_, &cell1_, &cell2_, &cell3_})
      *cell = exec_.template allocate<float>(C);
    for (Floats* unit : {&h_, &drive_, &input_, &unit0_, &unit1_}) *unit = exec_.template allocate<float>(C * H);
    p_ = {x_.data(), phase_.data(), W_.data(), b_.data(), s_.data(), w_e_.data(), w_a_.data(),
          static_cast<float>(require(inputs, ad::kEnergyBias).values.at(0)),
          static_cast<float>(require(inputs, ad::kActivityBias).values.at(0)), H, d_.input, h_.data(), e_.data(),
          a_.data(), mask_.data(), anxiety_.data(), cell0_.data(), cell1_.data(), cell2_.data(), cell3_.data(),
          drive_.data(), input_.data(), unit0_.data(), unit1_.data()};
  }

  void run() {
    exec_.copy(h_.data(), h0_.data(), d_.cells() * d_.hidden);
    exec_.copy(e_.data(), e0_.data(), d_.cells());
    exec_.copy(a_.data(), a0_.data(), d_.cells());
    counters::begin_steps();
    for (int64_t t = 0; t < d_.steps; ++t) {
      step();
      counters::end_step();
    }
  }

  /// h, e, a after the steps, on the host.
  ArrayMap outputs() {
    const int64_t C = d_.cells(), H = d_.hidden;
    std::vector<float> h(C * H), e(C), a(C);
    exec_.download(h.data(), h_.data(), C * H), exec_.download(e.data(), e_.data(), C);
    exec_.download(a.data(), a_.data(), C);
    return {{ad::kHidden, HostArray::from_floats({d_.batch, d_.nodes, H}, h.data(), C * H)},
            {ad::kEnergy, HostArray::from_floats({d_.batch, d_.nodes}, e.data(), C)},
            {ad::kActivity, HostArray::from_floats({d_.batch, d_.nodes}, a.data(), C)}};
  }

  /// poison_outputs(): h, e and a filled with NaN, on the executor's stream.
  void poison_outputs() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    exec_.for_each("adaptive_poison", d_.cells() * d_.hidden, Fill{h_.data(), nan});
    exec_.for_each("adaptive_poison", d_.cells(), Fill{e_.data(), nan});
    exec_.for_each("adaptive_poison", d_.cells(), Fill{a_.data(), nan});
  }

 private:

  Floats floats(const ArrayMap& inputs, const std::string& name) {
    const std::vector<float> values = require(inputs, name).to_floats();
    Floats buffer = exec_.template allocate<float>(static_cast<int64_t>(values.size()));
    exec_.upload(buffer.data(), values.data(), static_cast<int64_t>(values.size()));
    return buffer;
  }

  void cells(const char* name, Op op) { exec_.for_each(name, d_.cells(), Body{op, p_, 0, false}); }
  void units(const char* name, Op op, int64_t q = 0) {
    exec_.for_each(name, d_.cells() * d_.hidden, Body{op, p_, q, true});
  }

  void step() {
    cells("adaptive_mask", Op::Mask);
    anxiety();
    hidden_update();
    energy_update();
    cells("adaptive_activity", Op::Activity);  // no claim, no region
  }

  // A = max(0, 5 - e) + 2a + var_H(h), from the state before the step.
  void anxiety() {
    counters::Region region(ad::kAnxietyRegion);
    if (fused_anxiety_) return cells("adaptive_anxiety", Op::FusedAnxiety);
    for (Op op : {Op::AnxietyRelu, Op::AnxietyTwice, Op::AnxietyVariance, Op::AnxietySum}) cells("adaptive_anxiety", op);
  }

  // drive *= 1 + s[p], in place.
  void phase_scale() {
    counters::Region region(ad::kPhaseScaleRegion);
    if (gathered_scale_) return units("adaptive_scale", Op::GatheredScale);
    for (int64_t q = 0; q < ref::kPhases; ++q) units("adaptive_scale", Op::MaskedScale, q);  // the loop version
  }

  // h = tanh(h + m ((W h + b)(1 + s[p]) + 0.1 u)), the phase scaling nested.
  void hidden_update() {
    counters::Region region(ad::kHiddenRegion);
    units("adaptive_linear", Op::Drive);
    phase_scale();
    if (d_.input != d_.hidden) units("adaptive_linear", Op::InputProjection);
    if (fused_hidden_) return units("adaptive_hidden", Op::FusedHidden);
    for (Op op : {Op::ScaledInput, Op::AddDrive, Op::MaskUnits, Op::AddHidden, Op::Squash}) units("adaptive_hidden", op);
  }

  // e = clamp(0.99 e + (w_e . h + b_e)(1 - 0.1 clamp(A/10, 0, 1)) m, 0, 50), with the new h.
  void energy_update() {
    counters::Region region(ad::kEnergyRegion);
    if (fused_energy_) return cells("adaptive_energy", Op::FusedEnergy);
    for (Op op : {Op::Projection, Op::Gate, Op::Damping, Op::Change, Op::MaskChange, Op::DecayEnergy, Op::AddChange,
                  Op::ClampEnergy})
      cells("adaptive_energy", op);
  }

  Exec& exec_;
  ref::Dimensions d_;
  bool fused_anxiety_, gathered_scale_, fused_hidden_, fused_energy_;
  Floats x_, h0_, e0_, a0_, W_, b_, s_, w_e_, w_a_;
  typename Exec::template Buffer<int64_t> phase_;
  Floats h_, e_, a_, mask_, anxiety_, cell0_, cell1_, cell2_, cell3_, drive_, input_, unit0_, unit1_;
  Pointers p_{};
};

}  // namespace pb::cuda_backend::adaptive
