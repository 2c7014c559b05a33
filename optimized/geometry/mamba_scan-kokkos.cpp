// geometry/mamba_scan on Kokkos (default execution space). Math: reference/geometry/mamba_scan.hpp
// (its PB_HOST_DEVICE row functions run in these kernels); catalog: suites/geometry/mamba_scan.cpp.
//
//   baseline:             per t, kernels over the B rows (b, t): in_proj; u Br and u Bi (two, into
//                         the halves of w); LN16; gate; sigmoid; the step and z; up; times the
//                         gate. After the loop: out_proj + x and LN512 over every row
//   hoisted_projections:  the same kernels once over all B L rows (blocks of 16 rows); the
//                         recurrence one kernel over b, each running its L steps
//   parallel_scan:        one kernel over the B L / C chunks builds each chunk's prefix maps
//                         P_j = M_j P_(j-1); one over b carries the state across chunks; one over
//                         every row gives s_t = P_t s_entering
// Arrays are allocated in setup; nothing is read back in run().

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/kokkos/kokkos_backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace pb::kokkos_backend {
namespace {

namespace geo = pb::suites::geometry::mamba_scan;
namespace ref = geo::ref;
using Vec = DeviceView<float*>;
constexpr int64_t S = ref::kState, W = ref::kWide;

/// A [rows, in] -> [rows, out] operand set for linear kernels: pointers and leading dimensions.
struct Rows {
  const float* x;
  int64_t x_ld;
  float* y;
  int64_t y_ld;
};

class MambaScanKokkos final : public Variant {
 public:
  explicit MambaScanKokkos(const VariantContext& context)
      : hoisted_(context.has(geo::kHoisted)), scan_(context.has(geo::kParallelScan)) {}

  void setup(const ArrayMap& in) override {
    d_ = geo::dims_of(in);
    const geo::ParamStore<float> store(in);
    tr_ = ref::make_trinor(store.params.theta, store.params.omega, store.params.sigma);
    for (const std::string& name : geo::kParameters) {
      const std::vector<float>& v = store.values.at(name);
      params_[name] = filled_on_device<Vec>(name, [&](int64_t i) { return v[i]; }, int64_t(v.size()));
    }
    const int64_t rows = d_.rows(), step_rows = hoisted_ ? rows : d_.batch;
    x_ = to_device<Vec>("x", require(in, geo::kInput), rows * d_.model);
    u_ = Vec("u", step_rows * d_.inner), gate_ = Vec("gate", step_rows * d_.inner), w_ = Vec("w", step_rows * W);
    z_ = Vec("z", step_rows * S), states_ = Vec("states", (hoisted_ ? rows : d_.batch) * W);
    y_ = Vec("y", rows * d_.inner), out_ = Vec("out", rows * d_.model);
    if (scan_) prefix_ = Vec("prefix", rows * W * W), entering_ = Vec("entering", rows / geo::scan_chunk(d_.length) * W);
  }

  void poison_outputs() override {
    fill_nan(out_);
    fill_nan(states_);
    Kokkos::fence();
  }

  void run() override {
    const int64_t B = d_.batch, L = d_.length, D = d_.model, E = d_.inner;
    if (hoisted_) {
      project_in(d_.rows(), {x_.data(), D, u_.data(), E});
      scan_ ? scan() : recurrence();
      mix(d_.rows());
      project_up(d_.rows(), {z_.data(), S, y_.data(), E}, gate_.data());
    } else {
      reset_states();
      for (int64_t t = 0; t < L; ++t) {  // the original loop: rows (b, t) for every b
        project_in(B, {x_.data() + t * D, L * D, u_.data(), E});
        step_rows();
        project_up(B, {z_.data(), S, y_.data() + t * E, L * E}, gate_.data());
      }
    }
    linear("ms.out_proj", d_.rows(), E, D, {y_.data(), E, out_.data(), D}, p(geo::kOutProjW), p(geo::kOutProjB));
    const Vec x = x_, out = out_;
    const float *g = p(geo::kLnOutW), *b = p(geo::kLnOutB);
    Kokkos::parallel_for("ms.ln_out", RangePolicy(0, d_.rows()), KOKKOS_LAMBDA(int64_t r) {
      for (int64_t k = 0; k < D; ++k) out(r * D + k) += x(r * D + k);
      ref::layer_norm_row(D, out.data() + r * D, g, b);
    });
  }

  ArrayMap outputs() override {
    const std::vector<float> s = to_host_vector(states_);
    const int64_t per_batch = hoisted_ ? d_.length : 1, last = per_batch - 1;
    std::vector<float> r(d_.batch * S), i(d_.batch * S);
    for (int64_t b = 0; b < d_.batch; ++b)
      for (int64_t k = 0; k < S; ++k) {
        r[b * S + k] = s[(b * per_batch + last) * W + k];
        i[b * S + k] = s[(b * per_batch + last) * W + S + k];
      }
    return {{geo::kOutput, HostArray::from_floats({d_.batch, d_.length, d_.model}, to_host_vector(out_).data(), d_.rows() * d_.model)},
            {geo::kFinalState, geo::final_state_array(d_.batch, r.data(), i.data())}};
  }

 private:
  const float* p(const std::string& name) const { return params_.at(name).data(); }

  /// y = x W + bias for `rows` rows, one kernel over blocks of ref::kRowBlock rows.
  void linear(const char* label, int64_t rows, int64_t in, int64_t out, Rows io, const float* w, const float* bias) const {
    Kokkos::parallel_for(label, RangePolicy(0, (rows + ref::kRowBlock - 1) / ref::kRowBlock), KOKKOS_LAMBDA(int64_t blk) {
      const int64_t r0 = blk * ref::kRowBlock, r1 = r0 + ref::kRowBlock < rows ? r0 + ref::kRowBlock : rows;
      ref::linear_block(r0, r1, in, out, io.x, io.x_ld, w, bias, io.y, io.y_ld);
    });
  }

  /// u = in_proj(x rows); w = LN16([u Br, u Bi]) (two products into w's halves); gate = sigmoid(gate(u)).
  void project_in(int64_t rows, Rows x_to_u) const {
    const int64_t D = d_.model, E = d_.inner;
    linear("ms.in_proj", rows, D, E, x_to_u, p(geo::kInProjW), p(geo::kInProjB));
    linear("ms.u_Br", rows, E, S, {u_.data(), E, w_.data(), W}, p(geo::kBr), nullptr);
    linear("ms.u_Bi", rows, E, S, {u_.data(), E, w_.data() + S, W}, p(geo::kBi), nullptr);
    const Vec w = w_, gate = gate_;
    const float *g = p(geo::kLn16W), *b = p(geo::kLn16B);
    Kokkos::parallel_for("ms.ln16", RangePolicy(0, rows), KOKKOS_LAMBDA(int64_t r) { ref::layer_norm_row(W, w.data() + r * W, g, b); });
    linear("ms.gate", rows, E, E, {u_.data(), E, gate_.data(), E}, p(geo::kGateW), p(geo::kGateB));
    Kokkos::parallel_for("ms.sigmoid", RangePolicy(0, rows * E), KOKKOS_LAMBDA(int64_t k) { gate(k) = ref::sigmoid(gate(k)); });
  }

  /// y rows = up(z) * gate.
  void project_up(int64_t rows, Rows z_to_y, const float* gate) const {
    const int64_t E = d_.inner;
    linear("ms.up", rows, S, E, z_to_y, p(geo::kUpW), p(geo::kUpB));
    Kokkos::parallel_for("ms.gate_mul", RangePolicy(0, rows * E), KOKKOS_LAMBDA(int64_t k) {
      z_to_y.y[k / E * z_to_y.y_ld + k % E] *= gate[k];
    });
  }

  void reset_states() const {
    const Vec s = states_;
    Kokkos::parallel_for("ms.s0", RangePolicy(0, s.extent(0)), KOKKOS_LAMBDA(int64_t k) { s(k) = k % W == 0 ? 1.0f : 0.0f; });
  }

  /// Phase baseline: one step of each batch row's state, and its z.
  void step_rows() const {
    const ref::Trinor<float> tr = tr_;
    const Vec w = w_, s = states_, z = z_;
    Kokkos::parallel_for("ms.step", RangePolicy(0, d_.batch), KOKKOS_LAMBDA(int64_t b) {
      ref::step(tr, w.data() + b * W, s.data() + b * W);
      ref::mix(s.data() + b * W, z.data() + b * S);
    });
  }

  /// Phase hoisted_projections: each batch row's L steps in one kernel over b.
  void recurrence() const {
    const ref::Trinor<float> tr = tr_;
    const Vec w = w_, s = states_;
    const int64_t L = d_.length;
    Kokkos::parallel_for("ms.recurrence", RangePolicy(0, d_.batch), KOKKOS_LAMBDA(int64_t b) {
      ref::sequential_states_of(tr, b, L, w.data(), s.data());
    });
  }

  /// Phase parallel_scan: prefix maps per chunk, the carry over chunks, then every state.
  void scan() const {
    const ref::Trinor<float> tr = tr_;
    const Vec w = w_, s = states_, prefix = prefix_, entering = entering_;
    const int64_t C = geo::scan_chunk(d_.length), per_batch = d_.length / C;
    Kokkos::parallel_for("ms.prefix", RangePolicy(0, d_.rows() / C), KOKKOS_LAMBDA(int64_t chunk) {
      float map[W * W];
      for (int64_t j = 0; j < C; ++j) {
        float* pj = prefix.data() + (chunk * C + j) * W * W;
        ref::step_map(tr, w.data() + (chunk * C + j) * W, j == 0 ? pj : map);
        if (j > 0) ref::compose(map, pj - W * W, pj);
      }
    });
    Kokkos::parallel_for("ms.carry", RangePolicy(0, d_.batch), KOKKOS_LAMBDA(int64_t b) {
      float v[W] = {1};
      for (int64_t c = 0; c < per_batch; ++c) {
        const int64_t chunk = b * per_batch + c;
        const float* total = prefix.data() + (chunk * C + C - 1) * W * W;
        float next[W] = {};
        for (int64_t k = 0; k < W; ++k) {
          entering(chunk * W + k) = v[k];
          for (int64_t j = 0; j < W; ++j) next[k] += total[k * W + j] * v[j];
        }
        for (int64_t k = 0; k < W; ++k) v[k] = next[k];
      }
    });
    Kokkos::parallel_for("ms.states", RangePolicy(0, d_.rows()), KOKKOS_LAMBDA(int64_t row) {
      const float* pt = prefix.data() + row * W * W;
      const float* e = entering.data() + row / C * W;
      for (int64_t k = 0; k < W; ++k) {
        float sum = 0;
        for (int64_t j = 0; j < W; ++j) sum += pt[k * W + j] * e[j];
        s(row * W + k) = sum;
      }
    });
  }

  void mix(int64_t rows) const {
    const Vec s = states_, z = z_;
    Kokkos::parallel_for("ms.mix", RangePolicy(0, rows), KOKKOS_LAMBDA(int64_t r) { ref::mix(s.data() + r * W, z.data() + r * S); });
  }

  bool hoisted_, scan_;
  geo::Dims d_;
  ref::Trinor<float> tr_{};
  std::map<std::string, Vec> params_;
  Vec x_, u_, gate_, w_, z_, states_, y_, out_, prefix_, entering_;
};

const VariantRegistration registration{
    geo::kMambaScan, "kokkos", {geo::kSequential, geo::kHoisted, geo::kParallelScan},
    [](const VariantContext& context) { return std::make_unique<MambaScanKokkos>(context); }};

}  // namespace
}  // namespace pb::kokkos_backend
