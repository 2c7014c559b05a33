// geometry/mamba_scan on oneDNN (CPU engine). Math: reference/geometry/mamba_scan.hpp; catalog:
// suites/geometry/mamba_scan.cpp. Projections are matmul primitives (bias, sigmoid and the gate
// product as post-ops), the LayerNorms layer_normalization primitives (no affine) followed by one
// binary primitive (x * weight, + bias as a post-op). The recurrence is no oneDNN primitive:
//
//   baseline:             per t, on [B, .] rows: matmul x_t -> u (+ b_in); matmul u -> u Br and
//                         u Bi (two, into the halves of w); LN16 + affine; matmul u -> gate
//                         (+ bias, logistic); the step as a host kernel (run_host_kernel: plain
//                         C++ on the engine's memory, one op); matmul z -> y_t (+ b_up, * gate).
//                         After the loop: matmul y -> out_proj (+ b_out, + x) and LN512 + affine
//   hoisted_projections:  the same primitives once over all B L rows; the 16-wide recurrence over
//                         L a sequential host kernel
//   parallel_scan:        the step maps M(w_t) built by a host kernel; the prefix products within
//                         chunks are C - 1 batched (3-D) matmul primitives over all chunks; the
//                         carry across chunks a host kernel; every state P_t s_chunk one batched
//                         matmul primitive
// No host read in run() (no output is read back to decide anything); arrays are allocated in
// setup, so no bytes are allocated per iteration.

#include <cmath>
#include <limits>
#include <vector>

#include "backends/onednn/memory.hpp"
#include "backends/onednn/primitives.hpp"
#include "backends/onednn/program.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace {

namespace ob = pb::onednn_backend;
namespace geo = pb::suites::geometry::mamba_scan;
namespace ref = geo::ref;
using dnnl::algorithm;
using dnnl::memory;
constexpr int64_t S = ref::kState, W = ref::kWide;
constexpr float kEps = float(ref::kLayerNormEps);


class MambaScanOnednn final : public pb::Variant {
 public:
  explicit MambaScanOnednn(const pb::VariantContext& context)
      : device_(context.device), hoisted_(context.has(geo::kHoisted)), scan_(context.has(geo::kParallelScan)) {}

  std::optional<pb::CannotRun> support() const override { return ob::cannot_run_on(device_); }

  void setup(const pb::ArrayMap& in) override {
    d_ = geo::dims_of(in);
    const int64_t rows = d_.rows(), D = d_.model, E = d_.inner;
    const geo::ParamStore<float> store(in);
    tr_ = ref::make_trinor(store.params.theta, store.params.omega, store.params.sigma);
    auto weight = [&](const std::string& name, int64_t k, int64_t n) { return ob::upload(pb::require(in, name), {k, n}); };
    x_ = ob::upload(pb::require(in, geo::kInput), {rows, D});
    w_in_ = weight(geo::kInProjW, D, E), b_in_ = weight(geo::kInProjB, 1, E);
    br_ = weight(geo::kBr, E, S), bi_ = weight(geo::kBi, E, S);
    std::vector<float> br_bi(E * W);  // [Br | Bi] as one [E, 16] weight for the batched phases
    for (int64_t e = 0; e < E; ++e)
      for (int64_t k = 0; k < S; ++k) {
        br_bi[e * W + k] = store.params.br[e * S + k];
        br_bi[e * W + S + k] = store.params.bi[e * S + k];
      }
    br_bi_ = ob::upload(ob::dense({E, W}), br_bi);
    ln_w_ = weight(geo::kLn16W, 1, W), ln_b_ = weight(geo::kLn16B, 1, W);
    w_gate_ = weight(geo::kGateW, E, E), b_gate_ = weight(geo::kGateB, 1, E);
    w_up_ = weight(geo::kUpW, S, E), b_up_ = weight(geo::kUpB, 1, E);
    w_out_ = weight(geo::kOutProjW, E, D), b_out_ = weight(geo::kOutProjB, 1, D);
    lnf_w_ = weight(geo::kLnOutW, 1, D), lnf_b_ = weight(geo::kLnOutB, 1, D);
    y_ = ob::filled({rows, E}, 0), out_ = ob::filled({rows, D}, 0);
    r_.assign(d_.batch * S, 0), i_.assign(d_.batch * S, 0);
    if (hoisted_) {
      u_ = ob::filled({rows, E}, 0), w_ = ob::filled({rows, W}, 0), gate_ = ob::filled({rows, E}, 0);
      z_ = ob::filled({rows, S}, 0), states_ = ob::filled({rows, W}, 0);
      project_in(x_, u_, w_, gate_, /*split=*/false);
      scan_ ? bind_scan() : bind_sequential_recurrence();
      program_.kernel([this] { mix_all(); });
      project_up(z_, gate_, y_);
    } else {
      bind_per_step();
    }
    program_.add(ob::matmul(y_, w_out_, out_, ob::PostOps().binary(algorithm::binary_add, b_out_).binary(algorithm::binary_add, x_)));
    layer_norm(out_, lnf_w_, lnf_b_);
  }

  void poison_outputs() override {
    ob::fill_floats(out_, std::numeric_limits<float>::quiet_NaN());
    r_.assign(r_.size(), std::numeric_limits<float>::quiet_NaN());
    i_.assign(i_.size(), std::numeric_limits<float>::quiet_NaN());
  }

  void run() override { program_(); }

  pb::ArrayMap outputs() override {
    return {{geo::kOutput, ob::download(out_, {d_.batch, d_.length, d_.model})},
            {geo::kFinalState, geo::final_state_array(d_.batch, r_.data(), i_.data())}};
  }

 private:
  /// u = x W_in + b; w = LN16(u [Br | Bi]) (two matmuls into w's halves when `split`, as the
  /// original's cat); gate = sigmoid(u W_gate + b). Rows as the arrays' descriptors say.
  void project_in(const memory& x, const memory& u, const memory& w, const memory& gate, bool split) {
    program_.add(ob::matmul(x, w_in_, u, ob::PostOps().binary(algorithm::binary_add, b_in_)));
    if (split) {
      const int64_t rows = ob::dims_of(w.get_desc())[0];
      program_.add(ob::matmul(u, br_, ob::view(w, ob::strided({rows, S}, {W, 1}), 0)));
      program_.add(ob::matmul(u, bi_, ob::view(w, ob::strided({rows, S}, {W, 1}), S)));
    } else {
      program_.add(ob::matmul(u, br_bi_, w));
    }
    layer_norm(w, ln_w_, ln_b_);
    program_.add(ob::matmul(u, w_gate_, gate, ob::PostOps().binary(algorithm::binary_add, b_gate_).eltwise(algorithm::eltwise_logistic)));
  }

  /// y = (z W_up + b_up) * gate.
  void project_up(const memory& z, const memory& gate, const memory& y) {
    program_.add(ob::matmul(z, w_up_, y, ob::PostOps().binary(algorithm::binary_add, b_up_).binary(algorithm::binary_mul, gate)));
  }

  /// LayerNorm of each row in place, then the affine map as one binary primitive with a post-op.
  void layer_norm(const memory& rows, const memory& weight, const memory& bias) {
    program_.add(ob::Execution(ob::row_norm_pd(rows.get_desc(), kEps), {{DNNL_ARG_SRC, rows}, {DNNL_ARG_DST, rows}}));
    program_.add(ob::binary(algorithm::binary_mul, rows, weight, rows, ob::PostOps().binary(algorithm::binary_add, bias)));
  }

  /// The original loop: per t, the projections of rows (b, t) for every b, then the step.
  void bind_per_step() {
    const int64_t B = d_.batch, L = d_.length, D = d_.model, E = d_.inner;
    u_ = ob::filled({B, E}, 0), w_ = ob::filled({B, W}, 0), gate_ = ob::filled({B, E}, 0);
    z_ = ob::filled({B, S}, 0), states_ = ob::filled({B, W}, 0);
    program_.kernel([this] { reset_states(); });
    for (int64_t t = 0; t < L; ++t) {
      project_in(ob::view(x_, ob::strided({B, D}, {L * D, 1}), t * D), u_, w_, gate_, /*split=*/true);
      program_.kernel([this] {
        const float* w = ob::host_floats(w_);
        float *s = ob::host_floats(states_), *z = ob::host_floats(z_);
        for (int64_t b = 0; b < d_.batch; ++b) {
          ref::step(tr_, w + b * W, s + b * W);
          ref::mix(s + b * W, z + b * S);
        }
      });
      project_up(z_, gate_, ob::view(y_, ob::strided({B, E}, {L * E, 1}), t * E));
    }
    program_.kernel([this] { keep_final(1, 0); });
  }

  /// Phase hoisted: the recurrence over L for every b, one host kernel.
  void bind_sequential_recurrence() {
    program_.kernel([this] { ref::sequential_states(tr_, d_.batch, d_.length, ob::host_floats(w_), ob::host_floats(states_)); });
    program_.kernel([this] { keep_final(d_.length, d_.length - 1); });
  }

  /// Phase parallel_scan: maps, chunked prefix products (matmul), carry, states (matmul).
  void bind_scan() {
    const int64_t B = d_.batch, L = d_.length, C = geo::scan_chunk(L), chunks = B * (L / C);
    maps_ = ob::filled({chunks, C * W, W}, 0), prefix_ = ob::filled({chunks, C * W, W}, 0);
    entering_ = ob::filled({chunks, W, 1}, 0);
    program_.kernel([this] {
      const float* w = ob::host_floats(w_);
      float* maps = ob::host_floats(maps_);
      for (int64_t row = 0; row < d_.rows(); ++row) ref::step_map(tr_, w + row * W, maps + row * W * W);
    });
    // prefix_j = M_j prefix_{j-1}, batched over every chunk: [chunks, 16, 16] slices, stride C 256.
    const memory::desc slice = ob::strided({chunks, W, W}, {C * W * W, W, 1});
    program_.add(ob::copy(ob::view(maps_, slice, 0), ob::view(prefix_, slice, 0)));
    for (int64_t j = 1; j < C; ++j)
      program_.add(ob::matmul(ob::view(maps_, slice, j * W * W), ob::view(prefix_, slice, (j - 1) * W * W),
                              ob::view(prefix_, slice, j * W * W)));
    program_.kernel([this, C] {  // the state entering each chunk: s0, then the chunk's total map
      const float* prefix = ob::host_floats(prefix_);
      float* entering = ob::host_floats(entering_);
      const int64_t per_batch = d_.length / C;
      for (int64_t b = 0; b < d_.batch; ++b) {
        float s[W] = {1};
        for (int64_t c = 0; c < per_batch; ++c) {
          const int64_t chunk = b * per_batch + c;
          std::copy(s, s + W, entering + chunk * W);
          const float* total = prefix + (chunk * C + C - 1) * W * W;
          float next[W] = {};
          for (int64_t k = 0; k < W; ++k)
            for (int64_t j = 0; j < W; ++j) next[k] += total[k * W + j] * s[j];
          std::copy(next, next + W, s);
        }
      }
    });
    // Every state: [C 16, 16] prefix of its chunk times the entering state.
    program_.add(ob::matmul(prefix_, entering_, ob::view(states_, ob::dense({chunks, C * W, 1}), 0)));
    program_.kernel([this] { keep_final(d_.length, d_.length - 1); });
  }

  void mix_all() {
    const float* s = ob::host_floats(states_);
    float* z = ob::host_floats(z_);
    for (int64_t row = 0; row < d_.rows(); ++row) ref::mix(s + row * W, z + row * S);
  }

  void reset_states() {
    float* s = ob::host_floats(states_);
    for (int64_t b = 0; b < d_.batch; ++b)
      for (int64_t k = 0; k < W; ++k) s[b * W + k] = k == 0 ? 1.0f : 0.0f;
  }

  /// Copies state row (b, t) of states_ [B, per_batch, 16] into the final r, i (a host kernel).
  void keep_final(int64_t per_batch, int64_t t) {
    const float* s = ob::host_floats(states_);
    for (int64_t b = 0; b < d_.batch; ++b) {
      const float* row = s + (b * per_batch + t) * W;
      std::copy(row, row + S, r_.data() + b * S);
      std::copy(row + S, row + W, i_.data() + b * S);
    }
  }

  std::string device_;
  bool hoisted_, scan_;
  geo::Dims d_;
  ref::Trinor<float> tr_{};
  memory x_, w_in_, b_in_, br_, bi_, br_bi_, ln_w_, ln_b_, w_gate_, b_gate_, w_up_, b_up_, w_out_, b_out_, lnf_w_, lnf_b_;
  memory u_, w_, gate_, z_, states_, y_, out_, maps_, prefix_, entering_;
  std::vector<float> r_, i_;
  ob::Program program_;
};

const pb::VariantRegistration registration{
    geo::kMambaScan, "onednn", {geo::kSequential, geo::kHoisted, geo::kParallelScan},
    [](const pb::VariantContext& context) { return std::make_unique<MambaScanOnednn>(context); }};

}  // namespace
