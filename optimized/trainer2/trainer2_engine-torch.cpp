// trainer2's building blocks on LibTorch and the window engine (declared, with what each
// optimization changes, in trainer2_engine-torch.hpp). Every phase of every variant runs the same
// blocks: the optimizations choose between their forms, never between copies of the math.

#include "optimized/trainer2/trainer2_engine-torch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <stdexcept>

#include <torch/jit.h>  // torch::jit::compile: only this translation unit pays for the JIT headers

#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::torch_backend::trainer2 {
namespace {

namespace t2 = pb::suites::trainer2;

constexpr int64_t kN = ref::kCoordinateDim;
constexpr int64_t kPpl = ref::kPairsPerLayer;
constexpr double kDiffusion = ref::kHbar * ref::kHbar / (2 * ref::kMass);  // ħ²/2m
constexpr double kHalfDt = ref::kDt / 2;
// The oracle's rotor threshold, compared in double as the oracle compares it: 1e-6f is just below
// 1e-6, so `r >= 1e-6f` would update a pair at r == 1e-6f that the fp64 reference leaves alone.
constexpr double kMinRotorRadius = 1e-6;
constexpr double kDtOverM = ref::kDt / ref::kMass;
constexpr int kGraphWarmups = 3;  // eager runs before a capture: JIT profiling, allocator growth

// ---- speed: the one quadratic form of the LIoR step and the retrieval ---------------------------

/// s = sqrt(max(0, Σ_i g_i x_i²) + eps) over the last axis of x: the LIoR speed of a velocity
/// and the distance of a retrieval candidate.
torch::Tensor speed(const torch::Tensor& x, const torch::Tensor& g) {
  return (g * x * x).sum(-1).clamp_min(0.0).add(ref::kLiorEps).sqrt();
}

/// speed() of every row of v [B,n] into s [B], in place (the same ops; `scratch` [B,n] holds g v v).
void speed_into(torch::Tensor& s, torch::Tensor& scratch, const torch::Tensor& v, const torch::Tensor& g) {
  at::mul_out(scratch, g, v);
  scratch.mul_(v);
  at::sum_out(s, scratch, at::IntArrayRef{1});
  s.clamp_min_(0.0).add_(ref::kLiorEps).sqrt_();
}

// ---- retrieval ------------------------------------------------------------------------------------

/// A double as a TorchScript float literal (17 significant digits, always with a point or exponent).
std::string script_float(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  std::string literal = text;
  if (literal.find_first_of(".e") == std::string::npos) literal += ".0";
  return literal;
}

/// The retrieval function as TorchScript: the same ops, in the same order, as retrieval_eager.
std::string retrieval_source() {
  return "def retrieval(q: Tensor, cand_coord: Tensor, cand_state: Tensor, g: Tensor, R: Tensor):\n"
         "    u = cand_coord - q.unsqueeze(1)\n"
         "    spd = (g * u * u).sum(-1).clamp_min(0.0).add(" + script_float(ref::kLiorEps) + ").sqrt()\n"
         "    cost = R.unsqueeze(1) * spd\n"
         "    w = torch.softmax(cost * " + script_float(-ref::kRetrievalBeta) + ", -1)\n"
         "    act = (w.unsqueeze(-1) * cand_state).sum(1)\n"
         "    return act, w\n";
}

RetrievalResult retrieval_eager(const torch::Tensor& q, const torch::Tensor& cand_coord,
                                const torch::Tensor& cand_state, const torch::Tensor& g,
                                const torch::Tensor& R) {
  const torch::Tensor spd = speed(cand_coord - q.unsqueeze(1), g);
  const torch::Tensor cost = R.unsqueeze(1) * spd;
  torch::Tensor w = torch::softmax(cost * (-ref::kRetrievalBeta), -1);
  torch::Tensor act = (w.unsqueeze(-1) * cand_state).sum(1);
  return {act, w};
}

// ---- rotor ------------------------------------------------------------------------------------------

torch::Tensor wrap_angle(const torch::Tensor& theta) {  // to [−π, π) as the reference: fmod, + 2π where negative
  const torch::Tensor wrapped = torch::fmod(theta + ref::kPi, 2 * ref::kPi);
  return torch::where(wrapped < 0, wrapped + 2 * ref::kPi, wrapped) - ref::kPi;
}

torch::Tensor rotor_update_per_pair(const torch::Tensor& u, const torch::Tensor& lior_diff,
                                    const torch::Tensor& theta, const RotorIndex& index) {
  torch::Tensor updated = theta.clone();
  for (int k = 0; k < ref::kRotorAngles; ++k) {
    // Each .item() is a host read: the original's int(i.item()), int(j.item()), v[i].item(), v[j].item().
    const int64_t i = index.pair_i[k].item<int64_t>();
    const int64_t j = index.pair_j[k].item<int64_t>();
    const float u_i = u[i].item<float>();
    const float u_j = u[j].item<float>();
    const float r = std::hypot(u_i, u_j);
    if (r < kMinRotorRadius) continue;
    const float angle = std::atan2(u_j, u_i);
    updated.narrow(0, k, 1).add_(lior_diff.neg().mul(0.01 * ref::kEta).mul(angle).mul(r));
  }
  return wrap_angle(updated);
}

torch::Tensor rotor_update_vectorized(const torch::Tensor& u, const torch::Tensor& lior_diff,
                                      const torch::Tensor& theta, const RotorIndex& index) {
  const torch::Tensor u_i = u.index_select(0, index.pair_i), u_j = u.index_select(0, index.pair_j);
  const torch::Tensor r = torch::hypot(u_i, u_j);
  const torch::Tensor delta = lior_diff.neg().mul(0.01 * ref::kEta) * torch::atan2(u_j, u_i) * r;
  // where() instead of selecting the valid pairs: a boolean selection would read its size back.
  const torch::Tensor masked = torch::where(r >= 1e-6, delta, torch::zeros_like(delta));
  return wrap_angle(theta.index_add(0, index.learnt, masked));
}

// ---- field ------------------------------------------------------------------------------------------

/// Force(F) = (ħ²/2m) Lap(F) − k (F − F_eq) on [Nx,Ny,channels], Lap with zero padding.
torch::Tensor force_out_of_place(const torch::Tensor& F, const torch::Tensor& F_eq) {
  const int64_t nx = F.size(0), ny = F.size(1);
  const torch::Tensor padded = torch::constant_pad_nd(F, {0, 0, 1, 1, 1, 1});
  auto window = [&](int64_t x0, int64_t y0) { return padded.slice(0, x0, x0 + nx).slice(1, y0, y0 + ny); };
  const torch::Tensor laplacian = window(2, 1) + window(0, 1) + window(1, 2) + window(1, 0) - 4 * F;
  return kDiffusion * laplacian - ref::kSpring * (F - F_eq);
}

/// The [Nx,Ny,channels] view of a field tensor [Nx,Ny,D,D,2].
torch::Tensor grid(const torch::Tensor& field) { return field.view({field.size(0), field.size(1), -1}); }

// ---- window inputs and outputs ----------------------------------------------------------------------

WindowInputs upload_window_inputs(const ArrayMap& in, const torch::Device& device) {
  return {to_tensor(require(in, "O"), device),
          to_tensor(require(in, "bank_coord"), device),
          to_tensor(require(in, "bank_state"), device),
          to_tensor(require(in, "g"), device),
          to_tensor(require(in, "theta"), device),
          to_tensor(require(in, "F0"), device)};
}

std::vector<float> host_floats(const torch::Tensor& tensor) {
  const torch::Tensor host = tensor.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
}

void fill_nan(torch::Tensor& tensor) {
  if (tensor.defined()) tensor.fill_(std::numeric_limits<float>::quiet_NaN());
}

}  // namespace

// ---- LIoR step, retrieval, rotor ----------------------------------------------------------------------

LiorStep lior_step(const torch::Tensor& R, const torch::Tensor& v, const torch::Tensor& g, bool fused_lior_spd) {
  if (fused_lior_spd) {
    torch::Tensor s = speed(v, g);
    return {R * s, s};
  }
  return {R * speed(v, g), speed(v, g)};  // s again: the original lior_step does not return it
}

void Retrieval::prepare(bool compiled, int64_t B, int64_t K, int64_t d, const torch::TensorOptions& options) {
  if (!compiled) return;
  compiled_ = torch::jit::compile(retrieval_source());
  const torch::Tensor q = torch::zeros({B, kN}, options), cand_coord = torch::zeros({B, K, kN}, options);
  const torch::Tensor cand_state = torch::zeros({B, K, d}, options), g = torch::ones({kN}, options);
  const torch::Tensor R = torch::ones({B}, options);
  for (int call = 0; call < 3; ++call) (*this)(q, cand_coord, cand_state, g, R);
}

RetrievalResult Retrieval::operator()(const torch::Tensor& q, const torch::Tensor& cand_coord,
                                      const torch::Tensor& cand_state, const torch::Tensor& g,
                                      const torch::Tensor& R) const {
  if (!compiled_) return retrieval_eager(q, cand_coord, cand_state, g, R);
  const c10::IValue result = compiled_->run_method("retrieval", q, cand_coord, cand_state, g, R);
  const auto tuple = result.toTuple();
  return {tuple->elements()[0].toTensor(), tuple->elements()[1].toTensor()};
}

RotorIndex make_rotor_index(const torch::Device& device) {
  auto on_device = [&](const std::vector<int64_t>& values) {
    return torch::tensor(values, torch::kInt64).to(device);
  };
  RotorIndex index;
  for (int layer = 0; layer < ref::kRotorLayers; ++layer) {
    std::vector<int64_t> a, b;
    for (int p = 0; p < kPpl; ++p) {
      int ia, ib;
      ref::rotor_pair(layer * kPpl + p, ia, ib);
      a.push_back(ia);
      b.push_back(ib);
    }
    index.a.push_back(on_device(a));
    index.b.push_back(on_device(b));
  }
  std::vector<int64_t> i, j, k;
  for (int pair = 0; pair < ref::kRotorAngles; ++pair) {
    int ia, ib;
    ref::rotor_pair(pair, ia, ib);
    i.push_back(ia);
    j.push_back(ib);
    k.push_back(pair);
  }
  index.pair_i = on_device(i);
  index.pair_j = on_device(j);
  index.learnt = on_device(k);
  return index;
}

torch::Tensor rotor_apply(const torch::Tensor& x, const torch::Tensor& theta, const RotorIndex& index) {
  torch::Tensor out = x;
  for (size_t layer = 0; layer < index.a.size(); ++layer) {
    const torch::Tensor angles = theta.narrow(0, static_cast<int64_t>(layer) * kPpl, kPpl);
    const torch::Tensor c = angles.cos(), s = angles.sin();
    const torch::Tensor xa = out.index_select(-1, index.a[layer]);
    const torch::Tensor xb = out.index_select(-1, index.b[layer]);
    out = out.index_copy(-1, index.a[layer], c * xa - s * xb).index_copy(-1, index.b[layer], s * xa + c * xb);
  }
  return out;
}

torch::Tensor rotor_update(const torch::Tensor& u, const torch::Tensor& lior_diff, const torch::Tensor& theta,
                           const RotorIndex& index, bool vectorized_rotor) {
  return vectorized_rotor ? rotor_update_vectorized(u, lior_diff, theta, index)
                          : rotor_update_per_pair(u, lior_diff, theta, index);
}

torch::Tensor metric_update(const torch::Tensor& u, const torch::Tensor& theta,
                            const torch::Tensor& lior_diff, const torch::Tensor& g,
                            const RotorIndex& index) {
  const torch::Tensor u_r = rotor_apply(u, theta, index);
  const torch::Tensor norm_sq = (u_r * u_r).sum();
  return (g + lior_diff * ref::kEta * u_r * u_r / (norm_sq + 1e-8)).clamp(0.01, 100.0);
}

// ---- window outputs ---------------------------------------------------------------------------------

void add_window_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                        const WindowOutputs& window, const FieldState& field) {
  ref::WindowResult<float> result;
  const std::vector<float> totals = host_floats(window.totals);
  result.lior = totals.at(0);
  result.R = totals.at(1);
  result.spd = totals.at(2);
  result.act = host_floats(window.act);
  result.vbar = host_floats(window.vbar);
  result.path = host_floats(window.path);
  result.progress = window.host_progress;
  t2::add_window_outputs(out, prefix, dims, result, host_floats(field.F), host_floats(field.P),
                         ElementType::Float32);
}

void poison(WindowOutputs& window, FieldState& field) {
  for (torch::Tensor* tensor : {&window.totals, &window.act, &window.vbar, &window.path, &window.q,
                                &window.q_state, &window.progress, &field.F, &field.P}) {
    fill_nan(*tensor);
  }
  window.host_progress.assign(window.host_progress.size(), std::numeric_limits<float>::quiet_NaN());
}

std::vector<std::string> registered_phases(std::vector<std::string> phases) {
  if (!captures_cuda_graphs()) phases.erase(std::remove(phases.begin(), phases.end(), t2::kGraphCapture), phases.end());
  return phases;
}

// ---- the engine: setup --------------------------------------------------------------------------------

WindowOptimizations::WindowOptimizations(const VariantContext& context)
    : batched_metrics(context.has(t2::kBatchedMetrics)),
      fused_lior_spd(context.has(t2::kFusedLiorSpd)),
      jit_fusion(context.has(t2::kJitFusion)),
      adaptive_cleanup(context.has(t2::kAdaptiveCleanup)),
      in_place(context.has(t2::kInPlace)),
      graph_capture(context.has(t2::kGraphCapture)),
      hoisted_batch(context.has(t2::kHoistedRetrievalBatch)),
      last_step_act(context.has(t2::kLastStepAct)),
      deferred_metrics(context.has(t2::kDeferredMetrics)) {}

WindowEngine::WindowEngine(const WindowOptimizations& optimizations, const ref::WindowDims& dims,
                           const torch::Device& device)
    : optimizations_(optimizations), dims_(dims), device_(device) {
  if (dims.state_dim < kN) throw std::invalid_argument("trainer2: needs d >= n = 8");
}

void WindowEngine::setup(const WindowInputs& inputs) {
  in_ = inputs;
  rotor_index_ = make_rotor_index(device_);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  retrieval_.prepare(optimizations_.jit_fusion, dims_.batch, dims_.candidates(), dims_.state_dim, options);
  if (optimizations_.in_place) allocate_buffers();
}

void WindowEngine::allocate_buffers() {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  const int64_t B = dims_.batch, K = dims_.candidates(), d = dims_.state_dim;
  batch_ = {torch::empty({B, kN}, options), torch::empty({B, d}, options),
            torch::empty({B, K, kN}, options), torch::empty({B, K, d}, options),
            torch::empty({B, kN}, options)};
  shifted_ = torch::empty({B, kN}, options);
  rotor_cos_ = torch::empty({ref::kRotorSlots}, options);
  rotor_sin_ = torch::empty({ref::kRotorSlots}, options);
  for (torch::Tensor* t : {&rotor_xa_, &rotor_xb_, &rotor_t1_, &rotor_t2_}) *t = torch::empty({B, kPpl}, options);
  // |F| into a complex buffer: abs_out with a real output would allocate a complex temporary
  // and copy its real part out every step; the mean then reads the real parts in place.
  modulus_ = torch::empty(in_.F0.sizes().slice(0, 4), options.dtype(torch::kComplexFloat));
  modulus_real_ = at::real(modulus_);
  // A 0-dim tensor, not a Scalar: LibTorch 1.13's mul_out(Tensor, Scalar) allocates a temporary.
  spring_ = torch::full({}, ref::kSpring, options);
  R_mean_ = torch::empty({}, options);
  R_mean_as_batch_ = R_mean_.expand({B});
  R_ = torch::empty({B}, options);
  vv_ = torch::empty({B, kN}, options);
  s_ = torch::empty({B}, options);
  dlior_ = torch::empty({B}, options);
  s_mean_ = torch::empty({}, options);
  metrics_ = torch::empty({3}, options);
  accumulators_ = torch::empty({3}, options);
  lior_acc_ = accumulators_.select(0, 0);
  R_acc_ = accumulators_.select(0, 1);
  spd_acc_ = accumulators_.select(0, 2);
  row_ = torch::empty({ref::kPathColumns}, options);
  mean_v_ = row_.narrow(0, 0, kN);
  mean_R_ = row_.select(0, kN);
  mean_dlior_ = row_.select(0, kN + 1);
  norm_mean_v_ = row_.select(0, kN + 2);
  const int64_t nx = dims_.nx, ny = dims_.ny;
  force_ = torch::empty({nx, ny, dims_.channels}, options);
  force_neighbour_terms_ = {force_.narrow(0, 0, nx - 1), force_.narrow(0, 1, nx - 1),
                            force_.narrow(1, 0, ny - 1), force_.narrow(1, 1, ny - 1)};
}

WindowOutputs WindowEngine::make_outputs() const {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  const int64_t B = dims_.batch, W = dims_.steps;
  return {torch::empty({3}, options),
          torch::empty({B, dims_.state_dim}, options),
          torch::empty({B, kN}, options),
          torch::empty({W, ref::kPathColumns}, options),
          torch::empty({B, kN}, options),
          torch::empty({B, dims_.state_dim}, options),
          torch::empty({W, 3}, options),
          std::vector<float>(W * 3, std::numeric_limits<float>::quiet_NaN())};
}

FieldState WindowEngine::make_field() const {
  FieldState field;
  field.F = torch::empty_like(in_.F0);
  field.P = torch::empty_like(in_.F0);
  field.F_eq = torch::empty_like(in_.F0);
  if (!optimizations_.in_place) return field;  // rebound every step: no view would stay valid
  field.F_complex = torch::view_as_complex(field.F);
  field.F_grid = grid(field.F);
  field.P_grid = grid(field.P);
  field.F_eq_grid = grid(field.F_eq);
  const int64_t nx = dims_.nx, ny = dims_.ny;
  // The neighbour each slice of force_neighbour_terms_ receives: F(x+1), F(x−1), F(y+1), F(y−1).
  field.F_neighbours = {field.F_grid.narrow(0, 1, nx - 1), field.F_grid.narrow(0, 0, nx - 1),
                        field.F_grid.narrow(1, 1, ny - 1), field.F_grid.narrow(1, 0, ny - 1)};
  return field;
}

void WindowEngine::reset_field(FieldState& field) const {
  if (!optimizations_.in_place) {
    field.F = in_.F0.clone();
    field.P = torch::zeros_like(in_.F0);
    field.F_eq = in_.F0.clone();
    return;
  }
  field.F.copy_(in_.F0);
  field.P.zero_();
  at::mul_out(field.F_eq, in_.F0, spring_);  // k·F_eq (see FieldState)
}

// ---- the engine: one window ----------------------------------------------------------------------------

void WindowEngine::run(FieldState& field, const torch::Tensor& nudge, WindowOutputs& out) {
  const int64_t W = dims_.steps;
  begin_window(out);
  if (optimizations_.hoisted_batch) build_batch(nudge);  // depends only on the window's fixed inputs
  for (int64_t t = 0; t < W; ++t) {
    curvature(field);                                                    // 1
    if (!optimizations_.hoisted_batch) build_batch(nudge);               // 2, 3
    if (!optimizations_.last_step_act || t == W - 1) retrieve_act(out);  // 4: only the last act is returned
    lior_step_and_path(t, out);                                          // 5, 6, 7
    report_progress(t, out);                                             // 8
    field_step(field);                                                   // 9
  }
  end_window(out);
}

void WindowEngine::begin_window(WindowOutputs& out) {
  if (optimizations_.in_place) {
    accumulators_.zero_();
    out.vbar.zero_();  // vbar is vel_acc until the window ends
    return;
  }
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  lior_acc_ = torch::zeros({}, options);
  R_acc_ = torch::zeros({}, options);
  spd_acc_ = torch::zeros({}, options);
  vel_acc_ = torch::zeros({dims_.batch, kN}, options);
  out.path = torch::zeros({dims_.steps, ref::kPathColumns}, options);
}

void WindowEngine::curvature(const FieldState& field) {
  if (!optimizations_.in_place) {
    R_ = torch::view_as_complex(field.F).abs().mean().expand({dims_.batch}).contiguous();
    return;
  }
  at::abs_out(modulus_, field.F_complex);
  at::mean_out(R_mean_, modulus_real_, at::IntArrayRef{0, 1, 2, 3});
  R_.copy_(R_mean_as_batch_);
}

void WindowEngine::build_batch(const torch::Tensor& nudge) {
  const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim;
  const torch::Tensor coords = in_.O.narrow(2, 0, kN);
  if (!optimizations_.in_place) {
    torch::Tensor q = coords.mean(1), q_state = in_.O.mean(1);
    torch::Tensor cand_coord = torch::cat({coords, in_.bank_coord.unsqueeze(0).expand({B, C, kN})}, 1);
    torch::Tensor cand_state = torch::cat({in_.O, in_.bank_state.unsqueeze(0).expand({B, C, d})}, 1);
    torch::Tensor q_rot = rotor_apply(nudge.defined() ? q + nudge : q, in_.theta, rotor_index_);
    batch_ = {q, q_state, cand_coord, cand_state, q_rot};
    return;
  }
  at::mean_out(batch_.q, coords, at::IntArrayRef{1});
  at::mean_out(batch_.q_state, in_.O, at::IntArrayRef{1});
  const std::array<torch::Tensor, 2> coord_parts{coords, in_.bank_coord.unsqueeze(0).expand({B, C, kN})};
  const std::array<torch::Tensor, 2> state_parts{in_.O, in_.bank_state.unsqueeze(0).expand({B, C, d})};
  at::cat_out(batch_.cand_coord, at::TensorList(coord_parts), 1);
  at::cat_out(batch_.cand_state, at::TensorList(state_parts), 1);
  if (nudge.defined()) {
    at::add_out(shifted_, batch_.q, nudge);
  } else {
    shifted_.copy_(batch_.q);
  }
  rotor_apply_in_place(shifted_);
}

void WindowEngine::rotor_apply_in_place(const torch::Tensor& x) {
  torch::Tensor& out = batch_.q_rot;
  out.copy_(x);
  at::cos_out(rotor_cos_, in_.theta);
  at::sin_out(rotor_sin_, in_.theta);
  for (size_t layer = 0; layer < rotor_index_.a.size(); ++layer) {
    const int64_t first = static_cast<int64_t>(layer) * kPpl;
    const torch::Tensor c = rotor_cos_.narrow(0, first, kPpl), s = rotor_sin_.narrow(0, first, kPpl);
    at::index_select_out(rotor_xa_, out, 1, rotor_index_.a[layer]);
    at::index_select_out(rotor_xb_, out, 1, rotor_index_.b[layer]);
    at::mul_out(rotor_t1_, rotor_xa_, c);  // x_a' = c x_a − s x_b
    at::mul_out(rotor_t2_, rotor_xb_, s);
    out.index_copy_(1, rotor_index_.a[layer], rotor_t1_.sub_(rotor_t2_));
    at::mul_out(rotor_t1_, rotor_xa_, s);  // x_b' = s x_a + c x_b
    at::mul_out(rotor_t2_, rotor_xb_, c);
    out.index_copy_(1, rotor_index_.b[layer], rotor_t1_.add_(rotor_t2_));
  }
}

void WindowEngine::retrieve_act(WindowOutputs& out) {
  const RetrievalResult result = retrieval_(batch_.q_rot, batch_.cand_coord, batch_.cand_state, in_.g, R_);
  if (optimizations_.in_place) {
    out.act.copy_(result.act);
  } else {
    out.act = result.act;
  }
}

void WindowEngine::lior_step_and_path(int64_t step, WindowOutputs& out) {
  const torch::Tensor& v = batch_.q;
  if (!optimizations_.in_place) {
    const LiorStep lior = lior_step(R_, v, in_.g, optimizations_.fused_lior_spd);
    const torch::Tensor mean_dlior = lior.dlior.mean(), mean_R = R_.mean();
    lior_acc_ = lior_acc_ + mean_dlior;
    R_acc_ = R_acc_ + mean_R;
    spd_acc_ = spd_acc_ + lior.s.mean();
    vel_acc_ = vel_acc_ + v;
    const torch::Tensor mean_v = v.mean(0);
    out.path[step].copy_(torch::cat({mean_v, mean_R.view({1}), mean_dlior.view({1}), mean_v.norm().view({1})}));
    return;
  }
  speed_into(s_, vv_, v, in_.g);  // s once
  at::mul_out(dlior_, R_, s_);
  // The path row holds mean_b v, mean_b R, mean_b dlior, |mean_b v|; the accumulators reuse them.
  at::mean_out(mean_v_, v, at::IntArrayRef{0});
  at::mean_out(mean_R_, R_, at::IntArrayRef{0});
  at::mean_out(mean_dlior_, dlior_, at::IntArrayRef{0});
  at::linalg_vector_norm_out(norm_mean_v_, mean_v_, 2);
  out.path[step].copy_(row_);
  at::mean_out(s_mean_, s_, at::IntArrayRef{0});
  lior_acc_.add_(mean_dlior_);
  R_acc_.add_(mean_R_);
  spd_acc_.add_(s_mean_);
  out.vbar.add_(v);
}

void WindowEngine::report_progress(int64_t step, WindowOutputs& out) {
  const double count = static_cast<double>(step + 1);
  if (optimizations_.in_place) {
    const bool deferred = optimizations_.deferred_metrics || capturing_;
    torch::Tensor metrics = deferred ? out.progress[step] : metrics_;
    metrics.copy_(accumulators_).div_(count);
    if (!deferred) read_metrics(metrics, step, out);
    return;
  }
  if (!optimizations_.batched_metrics) {  // three reads, three syncs: the original's logging
    float* row = &out.host_progress.at(step * 3);
    row[0] = (lior_acc_ / count).item<float>();
    row[1] = (R_acc_ / count).item<float>();
    row[2] = (spd_acc_ / count).item<float>();
    return;
  }
  log_or_read(step, torch::stack({lior_acc_, R_acc_, spd_acc_}) / count, out);
}

void WindowEngine::force_in_place(const FieldState& field) {
  // Force = k F_eq − (4 ħ²/2m + k) F + ħ²/2m Σ neighbours: the spring and the stencil's centre
  // in one op (F_eq is held as k F_eq), then one op per neighbour; a half kick is 5 passes over
  // the field instead of ~10.
  at::add_out(force_, field.F_eq_grid, field.F_grid, -(4 * kDiffusion + ref::kSpring));
  for (size_t i = 0; i < force_neighbour_terms_.size(); ++i) {
    force_neighbour_terms_[i].add_(field.F_neighbours[i], kDiffusion);
  }
}

void WindowEngine::field_step(FieldState& field) {
  if (!optimizations_.in_place) {
    auto force = [&](const torch::Tensor& F) {
      return force_out_of_place(grid(F), grid(field.F_eq)).view(F.sizes());
    };
    torch::Tensor P = field.P + kHalfDt * force(field.F);
    torch::Tensor F = field.F + kDtOverM * P;
    P = P + kHalfDt * force(F);
    field.F = F;
    field.P = P;
    return;
  }
  force_in_place(field);
  field.P_grid.add_(force_, kHalfDt);
  field.F_grid.add_(field.P_grid, kDtOverM);
  force_in_place(field);
  field.P_grid.add_(force_, kHalfDt);
}

void WindowEngine::end_window(WindowOutputs& out) {
  const double W = static_cast<double>(dims_.steps);
  if (!optimizations_.in_place) {
    out.totals = torch::stack({lior_acc_, R_acc_, spd_acc_}) / W;
    out.vbar = vel_acc_ / W;
    out.q = batch_.q;
    out.q_state = batch_.q_state;
    return;
  }
  out.totals.copy_(accumulators_).div_(W);
  out.vbar.div_(W);
  out.q.copy_(batch_.q);
  out.q_state.copy_(batch_.q_state);
  if (optimizations_.deferred_metrics && !capturing_) read_logged_metrics(out);
}

// ---- the engine: metrics read now, or logged and read later ----------------------------------------------

void WindowEngine::read_metrics(const torch::Tensor& metrics, int64_t first_step, WindowOutputs& out) {
  const torch::Tensor host = read_to_host(metrics);
  if ((first_step * 3 + host.numel()) > static_cast<int64_t>(out.host_progress.size()))
    throw std::logic_error("trainer2 torch: more progress metrics read than the window has steps");
  std::copy(host.data_ptr<float>(), host.data_ptr<float>() + host.numel(), out.host_progress.begin() + first_step * 3);
}

void WindowEngine::log_or_read(int64_t step, const torch::Tensor& metrics, WindowOutputs& out) {
  if (optimizations_.deferred_metrics || capturing_) {
    out.progress[step].copy_(metrics);
  } else {
    read_metrics(metrics, step, out);
  }
}

void WindowEngine::read_logged_metrics(WindowOutputs& out) {
  if (optimizations_.deferred_metrics) {
    read_metrics(out.progress, 0, out);
    return;
  }
  for (int64_t step = 0; step < dims_.steps; ++step) read_metrics(out.progress[step], step, out);
}

// ---- the driver -------------------------------------------------------------------------------------------

WindowDriver::WindowDriver(const VariantContext& context) : optimizations_(context), device_(context.device) {}

void WindowDriver::setup(const ArrayMap& in) {
  dims_ = t2::window_dims_of(in);
  const torch::Device device = device_for(device_);
  const WindowInputs inputs = upload_window_inputs(in, device);
  graph_inputs_ = {graph_input(inputs.O),     graph_input(inputs.bank_coord), graph_input(inputs.bank_state),
                   graph_input(inputs.g),     graph_input(inputs.theta),      graph_input(inputs.F0)};
  engine_ = std::make_unique<WindowEngine>(optimizations_, dims_, device);
  engine_->setup(graph_inputs_);
  cleanup_ = AllocatorCleanup(device_, optimizations_.adaptive_cleanup);
}

torch::Tensor WindowDriver::graph_input(const torch::Tensor& input) {
  if (!optimizations_.graph_capture) return input;
  torch::Tensor copy = input.clone();
  refreshed_.emplace_back(copy, input);
  return copy;
}

void WindowDriver::capture(const std::function<void()>& body) {
  if (!optimizations_.graph_capture) return;
  for (int i = 0; i < kGraphWarmups; ++i) body();
  engine_->set_capturing(true);
  const std::string failure = graph_.capture(body);
  engine_->set_capturing(false);
  if (!failure.empty()) std::cerr << "phasebench torch graph_capture: " << failure << "; running eagerly\n";
}

void WindowDriver::run(const std::function<void()>& body, std::initializer_list<WindowOutputs*> windows) {
  if (graph_.captured()) {
    for (auto& [copy, input] : refreshed_) copy.copy_(input);
    graph_.replay();
    for (WindowOutputs* window : windows) engine_->read_logged_metrics(*window);
  } else {
    body();
  }
  for (size_t i = 0; i < windows.size(); ++i) cleanup_.after_window();
}

}  // namespace pb::torch_backend::trainer2
