// geometry/mamba_scan on LibTorch, devices cpu and cuda. Math: reference/geometry/mamba_scan.hpp;
// catalog: suites/geometry/mamba_scan.cpp.
//
//   baseline:             for t: u = in_proj(x[:, t]); w = LN16(cat(u Br, u Bi)); step; z; gate,
//                         sigmoid, up, y_t = g * up(z); then stack, out_proj, + x, LN512
//   hoisted_projections:  U, w, sigmoid(gate(U)) for all B L rows as matrix products; the loop
//                         keeps only the step and z on [B, 8]; up and out_proj for all rows after
//   parallel_scan:        the step maps M(w_t) [B, L, 16, 16] (the step run on the 16 unit
//                         vectors), prefix products within chunks of C ~ sqrt(L) steps (C - 1
//                         batched matmuls over all chunks), a carry across the L / C chunks, then
//                         every state as P_t s_chunk in one batched matmul
// No host reads in any phase (the original loop has none either).

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "backends/torch/torch_backend.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace tb = pb::torch_backend;
namespace geo = pb::suites::geometry::mamba_scan;
using torch::Tensor;
constexpr int64_t S = geo::ref::kState, H = geo::ref::kHalf, W = geo::ref::kWide;


class MambaScanTorch final : public pb::Variant {
 public:
  explicit MambaScanTorch(const pb::VariantContext& context)
      : device_(context.device), hoisted_(context.has(geo::kHoisted)), scan_(context.has(geo::kParallelScan)) {}

  std::optional<pb::CannotRun> support() const override { return tb::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    const torch::Device device = tb::device_for(device_);
    dims_ = geo::dims_of(in);
    auto t = [&](const std::string& name) { return tb::to_tensor(pb::require(in, name), device); };
    x_ = t(geo::kInput);
    w_in_ = t(geo::kInProjW), b_in_ = t(geo::kInProjB), br_ = t(geo::kBr), bi_ = t(geo::kBi);
    ln_w_ = t(geo::kLn16W), ln_b_ = t(geo::kLn16B), w_gate_ = t(geo::kGateW), b_gate_ = t(geo::kGateB);
    w_up_ = t(geo::kUpW), b_up_ = t(geo::kUpB), w_out_ = t(geo::kOutProjW), b_out_ = t(geo::kOutProjB);
    lnf_w_ = t(geo::kLnOutW), lnf_b_ = t(geo::kLnOutB);
    const Tensor theta = t(geo::kTheta);
    cos_ = theta.cos(), sin_ = theta.sin();
    scale_ = t(geo::kSigma).clamp(0.5, 2) * (1 + 0.1 * t(geo::kOmega));
    sign_ = -torch::ones({S}, device);
    sign_[0] = 1;
    s0_ = torch::zeros({dims_.batch, W}, device);
    s0_.select(1, 0).fill_(1);
  }

  void poison_outputs() override {
    for (Tensor* out : {&out_, &r_, &i_})
      if (out->defined()) out->fill_(std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    const Tensor y = hoisted_ ? hoisted() : sequential();
    out_ = torch::layer_norm(x_ + torch::matmul(y, w_out_) + b_out_, {dims_.model}, lnf_w_, lnf_b_);
  }

  pb::ArrayMap outputs() override {
    const std::vector<float> r = tb::to_host_array(r_).to_floats(), i = tb::to_host_array(i_).to_floats();
    return {{geo::kOutput, tb::to_host_array(out_)}, {geo::kFinalState, geo::final_state_array(dims_.batch, r.data(), i.data())}};
  }

 private:
  /// The original's loop: every projection of step t inside it. Returns y [B, L, E].
  Tensor sequential() {
    Tensor r = s0_.narrow(1, 0, S), i = s0_.narrow(1, S, S);
    std::vector<Tensor> ys;
    for (int64_t t = 0; t < dims_.length; ++t) {
      const Tensor u = torch::addmm(b_in_, x_.select(1, t), w_in_);
      const Tensor w = torch::layer_norm(torch::cat({u.mm(br_), u.mm(bi_)}, -1), {W}, ln_w_, ln_b_);
      std::tie(r, i) = step(r, i, w);
      const Tensor gate = torch::sigmoid(torch::addmm(b_gate_, u, w_gate_));
      ys.push_back(gate * torch::addmm(b_up_, mix(r, i), w_up_));
    }
    r_ = r, i_ = i;
    return torch::stack(ys, 1);
  }

  /// Projections for all rows as matrix products; the recurrence (sequential or scan) between.
  Tensor hoisted() {
    const Tensor u = torch::matmul(x_, w_in_) + b_in_;                 // [B, L, E]
    const Tensor w = torch::layer_norm(torch::matmul(u, torch::cat({br_, bi_}, -1)), {W}, ln_w_, ln_b_);
    const Tensor gate = torch::sigmoid(torch::matmul(u, w_gate_) + b_gate_);
    const Tensor states = scan_ ? scanned_states(w) : sequential_states(w);  // [B, L, 16]
    r_ = states.select(1, dims_.length - 1).narrow(1, 0, S);
    i_ = states.select(1, dims_.length - 1).narrow(1, S, S);
    return gate * (torch::matmul(mix(states.narrow(2, 0, S), states.narrow(2, S, S)), w_up_) + b_up_);
  }

  Tensor sequential_states(const Tensor& w) const {
    Tensor r = s0_.narrow(1, 0, S), i = s0_.narrow(1, S, S);
    std::vector<Tensor> states;
    for (int64_t t = 0; t < dims_.length; ++t) {
      std::tie(r, i) = step(r, i, w.select(1, t));
      states.push_back(torch::cat({r, i}, -1));
    }
    return torch::stack(states, 1);
  }

  /// The associative scan: s_t = M_t ... M_0 s0, chunked.
  Tensor scanned_states(const Tensor& w) const {
    const int64_t B = dims_.batch, L = dims_.length, C = geo::scan_chunk(L), chunks = L / C;
    // M[b, t, k, j]: the step applied to unit vector j (the maps are linear in the state).
    const Tensor unit = torch::eye(W, w.options()).view({1, 1, W, W});  // [.., j, component]
    const auto [mr, mi] = step(unit.narrow(3, 0, S), unit.narrow(3, S, S), w.unsqueeze(2));
    const Tensor maps = torch::cat({mr, mi}, -1).transpose(2, 3).reshape({B, chunks, C, W, W});
    std::vector<Tensor> prefix{maps.select(2, 0)};  // P_j = M_j ... M_0 within each chunk
    for (int64_t j = 1; j < C; ++j) prefix.push_back(torch::matmul(maps.select(2, j), prefix.back()));
    const Tensor within = torch::stack(prefix, 2);  // [B, chunks, C, 16, 16]
    std::vector<Tensor> starts{s0_};                 // the state entering each chunk
    for (int64_t c = 0; c + 1 < chunks; ++c)
      starts.push_back(torch::matmul(within.select(1, c).select(1, C - 1), starts.back().unsqueeze(-1)).squeeze(-1));
    const Tensor entering = torch::stack(starts, 1).view({B, chunks, 1, W, 1});
    return torch::matmul(within, entering).reshape({B, L, W});
  }

  /// One step of every state in r, i [..., 8] with w [..., 16] (broadcast).
  std::pair<Tensor, Tensor> step(const Tensor& r, const Tensor& i, const Tensor& w) const {
    const Tensor rp = (r * cos_ - i * sin_) * scale_, ip = (r * sin_ + i * cos_) * scale_;
    auto half = [](const Tensor& v, int64_t k) { return v.narrow(-1, k * H, H); };
    const Tensor wr = w.narrow(-1, 0, S), wi = w.narrow(-1, S, S);
    const Tensor a = half(rp, 0), b = half(rp, 1), a2 = half(ip, 0), b2 = half(ip, 1);
    const Tensor c = half(wr, 0), d = half(wr, 1), c2 = half(wi, 0), d2 = half(wi, 1);
    return {torch::cat({a * c - d * b, a2 * c2 - d2 * b2}, -1), torch::cat({d * a + b * c, d2 * a2 + b2 * c2}, -1)};
  }

  /// z = r conj(r) + i conj(i).
  Tensor mix(const Tensor& r, const Tensor& i) const { return (r * r + i * i) * sign_; }

  std::string device_;
  bool hoisted_, scan_;
  geo::Dims dims_;
  Tensor x_, w_in_, b_in_, br_, bi_, ln_w_, ln_b_, w_gate_, b_gate_, w_up_, b_up_, w_out_, b_out_, lnf_w_, lnf_b_;
  Tensor cos_, sin_, scale_, sign_, s0_, out_, r_, i_;
};

const pb::VariantRegistration registration{
    geo::kMambaScan, "torch", {geo::kSequential, geo::kHoisted, geo::kParallelScan},
    [](const pb::VariantContext& context) { return std::make_unique<MambaScanTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
