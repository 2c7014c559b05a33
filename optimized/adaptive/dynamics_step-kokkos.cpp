// adaptive/dynamics_step on Kokkos (default execution space). Math:
// reference/adaptive/dynamics_step.hpp; catalog: suites/adaptive/dynamics_step.cpp; docs/adaptive.md.
//
// Each function of the original is a named region (pb::counters::Region), its kernels counted
// apart. The baseline launches one kernel per operation of the original's loop version, into
// buffers made in setup(): anxiety's three terms and their sum, one masked scaling per phase, the
// hidden update's chain and the energy update's chain. Each later phase fuses one function into
// one kernel (energy: its projection too). There is no autograd graph here, so detached_state is
// UNSUPPORTED (the harness writes that row from the catalog), and the memory held per step is
// flat: run() allocates nothing.
//
// vectorized_cells (host cores only): one kernel per iteration, one block of 16 cells per
// work item running all S steps, its body optimized/adaptive/dynamics_step_simd_bodies.hpp (one cell
// per SIMD lane, the state in stack scratch) compiled for AVX-512, AVX2 and the baseline
// (host_vectorization.hpp). Its steps are inside the kernel: it marks no step and no region.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/kokkos/host_vectorization.hpp"
#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/adaptive/dynamics_step_bodies.hpp"
#include "optimized/adaptive/dynamics_step_simd_bodies.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/variant.hpp"
#include "suites/adaptive/dynamics_step.hpp"

namespace pb::kokkos_backend {
namespace {

namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;
using counters::Region;
using Floats = DeviceView<float*>;
using Phases = DeviceView<int64_t*>;

// Labels kept as strings, so no launch builds one (a label past 15 characters would allocate).
const std::string kMaskLabel = "adaptive/mask", kAnxietyLabel = "adaptive/anxiety", kScaleLabel = "adaptive/scale";
const std::string kLinearLabel = "adaptive/linear", kHiddenLabel = "adaptive/hidden", kEnergyLabel = "adaptive/energy";
const std::string kActivityLabel = "adaptive/activity", kBlocksLabel = "adaptive/blocks";

// The per-element helpers shared with the CUDA ladder (dynamics_step_bodies.hpp).
using cuda_backend::adaptive::clamp_body;
using cuda_backend::adaptive::variance_body;

#ifdef PB_KOKKOS_KERNELS_ON_HOST
namespace simd = pb::adaptive_kernels::dynamics_simd;

/// One block, its scratch on this thread's stack (compiled once per ISA: the loader picks the clone).
PB_HOST_ISA_CLONES void dynamics_block_cloned(const simd::Model& model, const simd::BlockInputs& in, float* h,
                                              float* e, float* a, int64_t block) {
  simd::BlockScratch scratch;
  simd::dynamics_block_of(model, in, h, e, a, block, scratch);
}

/// vectorized_cells' kernel: block b (cells [16 b, 16 b + 16)) per work item, through the Views'
/// pointers (the host's LayoutRight: a cell's H units are contiguous).
struct DynamicsBlocks {
  simd::Model model;
  simd::BlockInputs in;
  float *h, *e, *a;
  void operator()(int64_t block) const { dynamics_block_cloned(model, in, h, e, a, block); }
};
#endif  // PB_KOKKOS_KERNELS_ON_HOST

/// One elementwise kernel over n elements.
template <class Body>
void each(const std::string& label, int64_t n, const Body& body) {
  Kokkos::parallel_for(label, RangePolicy(0, n), body);
}

class DynamicsStepKokkos final : public Variant {
 public:
  explicit DynamicsStepKokkos(const VariantContext& context)
      : d_(ad::dimensions(context.size)),
        fused_anxiety_(context.has(ad::kFusedAnxiety)),
        gathered_scale_(context.has(ad::kGatheredPhaseScale)),
        fused_hidden_(context.has(ad::kFusedHidden)),
        fused_energy_(context.has(ad::kFusedEnergy)),
        vectorized_(context.has(ad::kVectorizedCells)) {}

  std::optional<CannotRun> support() const override {
    return vectorized_ ? host_cores_only(ad::kVectorizedCells) : std::nullopt;
  }

  void setup(const ArrayMap& inputs) override {
    const int64_t C = d_.cells(), H = d_.hidden;
    const auto floats = [&](const std::string& name, int64_t n) { return to_device<Floats>(name, require(inputs, name), n); };
    x_ = floats(ad::kInput, C * d_.input);
    phase_ = to_device<Phases>(ad::kPhase, require(inputs, ad::kPhase), C);
    h0_ = floats(ad::kHidden0, C * H), e0_ = floats(ad::kEnergy0, C), a0_ = floats(ad::kActivity0, C);
    h_ = uninitialized<Floats>("h", C * H), e_ = uninitialized<Floats>("e", C), a_ = uninitialized<Floats>("a", C);
    if (vectorized_) return setup_blocks(inputs);  // its parameters on the host, no intermediate Views
    // W^T, so the drive kernel's innermost loop runs over contiguous output units (vectorizable)
    // while each unit still sums its terms in the reference's order: b_j, then k = 0, 1, ...
    const HostArray& weight = require(inputs, ad::kWeight);
    W_t_ = filled_on_device<Floats>(
        ad::kWeight, [&](int64_t i) { return static_cast<float>(weight.values.at((i % H) * H + i / H)); }, H * H);
    b_ = floats(ad::kBias, H), s_ = floats(ad::kPhaseScale, ref::kPhases);
    w_e_ = floats(ad::kEnergyWeight, H), w_a_ = floats(ad::kActivityWeight, 2);
    b_e_ = static_cast<float>(require(inputs, ad::kEnergyBias).values.at(0));
    b_a_ = static_cast<float>(require(inputs, ad::kActivityBias).values.at(0));
    for (Floats* cell : {&mask_, &anxiety_, &term1_, &term2_, &term3_, &term4_}) *cell = uninitialized<Floats>("cell", C);
    for (Floats* wide : {&drive_, &input_, &wide1_, &wide2_}) *wide = uninitialized<Floats>("wide", C * H);
  }

  void poison_outputs() override {
    fill_nan(h_), fill_nan(e_), fill_nan(a_);
    Kokkos::fence();
  }

  void run() override {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    if (vectorized_) {  // reads h0, e0, a0 and writes h, e, a: no copies first
      const simd::BlockInputs in{x_.data(), h0_.data(), e0_.data(), a0_.data(), phase_.data()};
      Kokkos::parallel_for(kBlocksLabel, RangePolicy(0, simd::lanes::blocks(d_.cells())),
                           DynamicsBlocks{{&parameters_, packed_weight_.data(), d_}, in, h_.data(), e_.data(),
                                          a_.data()});
      return;
    }
#endif
    Kokkos::deep_copy(h_, h0_), Kokkos::deep_copy(e_, e0_), Kokkos::deep_copy(a_, a0_);
    counters::begin_steps();
    for (int64_t t = 0; t < d_.steps; ++t) {
      step();
      counters::end_step();
    }
  }

  ArrayMap outputs() override {
    const auto h = to_host_vector(h_), e = to_host_vector(e_), a = to_host_vector(a_);
    return {{ad::kHidden, HostArray::from_floats({d_.batch, d_.nodes, d_.hidden}, h.data(), d_.cells() * d_.hidden)},
            {ad::kEnergy, HostArray::from_floats({d_.batch, d_.nodes}, e.data(), d_.cells())},
            {ad::kActivity, HostArray::from_floats({d_.batch, d_.nodes}, a.data(), d_.cells())}};
  }

 private:
  // vectorized_cells' parameters on the host: the reference's fp32 ones and W packed for the
  // block's product (its layout: simd::pack_weight). A block holds at most kMaxHidden units.
  void setup_blocks([[maybe_unused]] const ArrayMap& inputs) {
#ifdef PB_KOKKOS_KERNELS_ON_HOST
    simd::require_block_fits(d_.hidden, d_.input);
    parameters_ = ad::load_parameters<float>(inputs);
    packed_weight_ = simd::pack_weight(parameters_.weight, d_.hidden);
#endif
  }

  void step() const {
    const Phases phase = phase_;
    const Floats mask = mask_;
    each(kMaskLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { mask(c) = phase(c) != ref::kSleepPhase ? 1.f : 0.f; });
    anxiety();
    hidden_update();
    energy_update();
    activity();
  }

  // A = max(0, 5 - e) + 2a + var_H(h), from the state before the step.
  void anxiety() const {
    Region region(ad::kAnxietyRegion);
    const Floats h = h_, e = e_, a = a_, A = anxiety_, t1 = term1_, t2 = term2_, t3 = term3_;
    const int64_t H = d_.hidden;
    if (fused_anxiety_) {
      each(kAnxietyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {
        A(c) = (5.f - e(c) > 0.f ? 5.f - e(c) : 0.f) + 2.f * a(c) + variance_body(&h(c * H), H);
      });
      return;
    }
    each(kAnxietyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { t1(c) = 5.f - e(c) > 0.f ? 5.f - e(c) : 0.f; });
    each(kAnxietyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { t2(c) = 2.f * a(c); });
    each(kAnxietyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { t3(c) = variance_body(&h(c * H), H); });
    each(kAnxietyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { A(c) = t1(c) + t2(c) + t3(c); });
  }

  // drive *= 1 + s[p], in place.
  void phase_scale() const {
    Region region(ad::kPhaseScaleRegion);
    const Floats drive = drive_, s = s_;
    const Phases phase = phase_;
    const int64_t H = d_.hidden;
    if (gathered_scale_) {
      each(kScaleLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { drive(i) *= 1.f + s(phase(i / H)); });
      return;
    }
    for (int64_t q = 0; q < ref::kPhases; ++q)  // the loop version: one masked scaling per phase
      each(kScaleLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) {
        drive(i) *= 1.f + s(q) * (phase(i / H) == q ? 1.f : 0.f);
      });
  }

  // h = tanh(h + m ((W h + b)(1 + s[p]) + 0.1 u)), the phase scaling nested.
  void hidden_update() const {
    Region region(ad::kHiddenRegion);
    const Floats h = h_, x = x_, W_t = W_t_, b = b_, drive = drive_, input = input_, mask = mask_;
    const Floats t1 = wide1_, t2 = wide2_;
    const int64_t H = d_.hidden, I = d_.input;
    each(kLinearLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {  // drive = W h + b, one cell per thread
      float* out = &drive(c * H);
      for (int64_t j = 0; j < H; ++j) out[j] = b(j);
      for (int64_t k = 0; k < H; ++k) {
        const float hk = h(c * H + k);
        for (int64_t j = 0; j < H; ++j) out[j] += W_t(k * H + j) * hk;
      }
    });
    phase_scale();
    const bool same_width = I == H;
    if (!same_width)  // u = x W[:, :I]^T
      each(kLinearLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {
        float* out = &input(c * H);
        for (int64_t j = 0; j < H; ++j) out[j] = 0;
        for (int64_t k = 0; k < I; ++k) {
          const float xk = x(c * I + k);
          for (int64_t j = 0; j < H; ++j) out[j] += W_t(k * H + j) * xk;
        }
      });
    const Floats u = same_width ? x : input;
    if (fused_hidden_) {
      each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) {
        h(i) = device_math::tanh(h(i) + mask(i / H) * (drive(i) + 0.1f * u(i)));
      });
      return;
    }
    each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { t1(i) = 0.1f * u(i); });
    each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { t2(i) = drive(i) + t1(i); });
    each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { t1(i) = t2(i) * mask(i / H); });
    each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { t2(i) = h(i) + t1(i); });
    each(kHiddenLabel, d_.cells() * H, KOKKOS_LAMBDA(int64_t i) { h(i) = device_math::tanh(t2(i)); });
  }

  // e = clamp(0.99 e + (w_e . h + b_e)(1 - 0.1 clamp(A/10, 0, 1)) m, 0, 50), with the new h.
  void energy_update() const {
    Region region(ad::kEnergyRegion);
    const Floats h = h_, e = e_, A = anxiety_, w_e = w_e_, mask = mask_;
    const Floats projection = term1_, gate = term2_, damping = term3_, change = term4_;
    const int64_t H = d_.hidden;
    const float b_e = b_e_;
    if (fused_energy_) {
      each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {
        float p = b_e;
        for (int64_t k = 0; k < H; ++k) p += w_e(k) * h(c * H + k);
        e(c) = clamp_body(0.99f * e(c) + p * (1.f - 0.1f * clamp_body(A(c) / 10.f, 0.f, 1.f)) * mask(c), 0.f, 50.f);
      });
      return;
    }
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {
      float p = b_e;
      for (int64_t k = 0; k < H; ++k) p += w_e(k) * h(c * H + k);
      projection(c) = p;
    });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { gate(c) = clamp_body(A(c) / 10.f, 0.f, 1.f); });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { damping(c) = 1.f - 0.1f * gate(c); });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { change(c) = projection(c) * damping(c); });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { change(c) *= mask(c); });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { e(c) *= 0.99f; });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { e(c) += change(c); });
    each(kEnergyLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) { e(c) = clamp_body(e(c), 0.f, 50.f); });
  }

  // a = clamp(sigmoid(w_a[0] mean_H h + w_a[1] mean_I x + b_a), 0, 1); no claim, no region.
  void activity() const {
    const Floats h = h_, x = x_, a = a_, w_a = w_a_;
    const int64_t H = d_.hidden, I = d_.input;
    const float b_a = b_a_;
    each(kActivityLabel, d_.cells(), KOKKOS_LAMBDA(int64_t c) {
      float hidden_mean = 0, input_mean = 0;
      for (int64_t k = 0; k < H; ++k) hidden_mean += h(c * H + k);
      for (int64_t k = 0; k < I; ++k) input_mean += x(c * I + k);
      const float logit = w_a(0) * hidden_mean / float(H) + w_a(1) * input_mean / float(I) + b_a;
      a(c) = clamp_body(1.f / (1.f + device_math::exp(-logit)), 0.f, 1.f);
    });
  }

  ref::Dimensions d_;
  bool fused_anxiety_, gathered_scale_, fused_hidden_, fused_energy_, vectorized_;
  ref::Parameters<float> parameters_;  // vectorized_cells: on the host
  std::vector<float> packed_weight_;
  Floats x_, h0_, e0_, a0_, W_t_, b_, s_, w_e_, w_a_;
  Phases phase_;
  float b_e_ = 0, b_a_ = 0;
  Floats h_, e_, a_;
  Floats mask_, anxiety_, term1_, term2_, term3_, term4_;  // per cell
  Floats drive_, input_, wide1_, wide2_;                    // per cell and hidden unit
};

/// The graph-free ladder and vectorized_cells.
std::vector<std::string> kokkos_phases() {
  std::vector<std::string> phases = ad::kGraphFreePhases;
  phases.push_back(ad::kVectorizedCells);
  return phases;
}

const VariantRegistration registration{
    ad::kDynamicsStep, "kokkos", kokkos_phases(),
    [](const VariantContext& context) { return std::make_unique<DynamicsStepKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
