#pragma once
// geometry/mamba_scan: one geometric-Mamba layer (Liorhybrid inference/geometric_mamba.py, the
// sequential loop the seed says "cannot be optimized away"), written as the obviously right
// loops. Templated on the scalar: Scalar = double is the oracle; Scalar = float is timed as the
// serial baseline. Definition: suites/geometry/mamba_scan.cpp; suite page: docs/geometry.md.
//
//   input x[B, L, D]; Linear(v) = v W + b with W stored [in, out]; LN = LayerNorm (eps 1e-5,
//   biased variance, affine); state (r, i) in R^8 x R^8, r = (1, 0, ..., 0), i = 0 at t = 0
//   for each t:  u = in_proj(x_t) [E];  w = LN16([u Br, u Bi]) = (wr, wi)
//     trinor:    s = clamp(sigma, 0.5, 2) (1 + 0.1 omega)
//                r' = (r cos(theta) - i sin(theta)) s,   i' = (r sin(theta) + i cos(theta)) s
//     product:   (a, b) halves of r', (a', b') of i', (c, d) of wr, (c', d') of wi
//                r = [a c - d b, a' c' - d' b'],   i = [d a + b c, d' a' + b' c']
//     mix:       z_t = r conj(r) + i conj(i),  conj negates components 1..7
//     y_t = sigmoid(gate(u)) up(z_t)   [E]
//   out = LN512(x + out_proj(y)) [B, L, D];  outputs out and the final (r, i), each [B, 8]
//
// For fixed w the step (r, i) -> (r, i) is linear: a 16 x 16 map M(w) (step_map), which the
// parallel-scan phase composes. The projections here run over all B L rows at once (they do not
// depend on the state: the same numbers as the per-step loop), blocked so that a weight row is
// read once per block of rows and the inner loop is a contiguous axpy that vectorizes.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "phasebench/host_device.hpp"

namespace pb::reference::geometry::mamba_scan {

constexpr int kHalf = 4, kState = 8, kWide = 16;  // half state, state (r or i), [r, i] and w
constexpr double kLayerNormEps = 1e-5;

/// The recurrence's fixed parameters (theta, omega, sigma, each [8]).
template <typename Scalar>
struct Trinor {
  Scalar cos_t[kState], sin_t[kState], scale[kState];
};

template <typename Scalar>
Trinor<Scalar> make_trinor(const Scalar* theta, const Scalar* omega, const Scalar* sigma) {
  Trinor<Scalar> tr{};
  for (int k = 0; k < kState; ++k) {
    tr.cos_t[k] = std::cos(theta[k]);
    tr.sin_t[k] = std::sin(theta[k]);
    tr.scale[k] = std::clamp(sigma[k], Scalar(0.5), Scalar(2)) * (1 + Scalar(0.1) * omega[k]);
  }
  return tr;
}

/// One step: s = [r, i] (16) updated in place with w = [wr, wi] (16).
template <typename Scalar>
PB_HOST_DEVICE inline void step(const Trinor<Scalar>& tr, const Scalar* w, Scalar* s) {
  Scalar rp[kState], ip[kState];
  for (int k = 0; k < kState; ++k) {
    rp[k] = (s[k] * tr.cos_t[k] - s[kState + k] * tr.sin_t[k]) * tr.scale[k];
    ip[k] = (s[k] * tr.sin_t[k] + s[kState + k] * tr.cos_t[k]) * tr.scale[k];
  }
  for (int k = 0; k < kHalf; ++k) {
    const Scalar a = rp[k], b = rp[kHalf + k], c = w[k], d = w[kHalf + k];
    const Scalar a2 = ip[k], b2 = ip[kHalf + k], c2 = w[kState + k], d2 = w[kState + kHalf + k];
    s[k] = a * c - d * b;
    s[kHalf + k] = a2 * c2 - d2 * b2;
    s[kState + k] = d * a + b * c;
    s[kState + kHalf + k] = d2 * a2 + b2 * c2;
  }
}

/// z = r conj(r) + i conj(i): component 0 squared, components 1..7 negated squares.
template <typename Scalar>
PB_HOST_DEVICE inline void mix(const Scalar* s, Scalar* z) {
  for (int k = 0; k < kState; ++k) {
    const Scalar sq = s[k] * s[k] + s[kState + k] * s[kState + k];
    z[k] = k == 0 ? sq : -sq;
  }
}

/// M(w) row-major [16, 16] with step(w, s) = M s: column j is the step applied to unit vector j.
template <typename Scalar>
PB_HOST_DEVICE inline void step_map(const Trinor<Scalar>& tr, const Scalar* w, Scalar* m) {
  for (int j = 0; j < kWide; ++j) {
    Scalar e[kWide] = {};
    e[j] = 1;
    step(tr, w, e);
    for (int k = 0; k < kWide; ++k) m[k * kWide + j] = e[k];
  }
}

/// Rows [r0, r1) of y = x W + b (b may be null), W [in, out]; row r of x at x + r x_ld, of y at
/// y + r y_ld. Weight row k is read once for the block; the inner loop is a contiguous axpy.
template <typename Scalar>
PB_HOST_DEVICE inline void linear_block(int64_t r0, int64_t r1, int64_t in, int64_t out, const Scalar* x, int64_t x_ld,
                                        const Scalar* w, const Scalar* b, Scalar* y, int64_t y_ld) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t o = 0; o < out; ++o) y[r * y_ld + o] = b ? b[o] : Scalar(0);
  for (int64_t k = 0; k < in; ++k)
    for (int64_t r = r0; r < r1; ++r) {
      const Scalar xv = x[r * x_ld + k];
      Scalar* yr = y + r * y_ld;
      const Scalar* wk = w + k * out;
      for (int64_t o = 0; o < out; ++o) yr[o] += xv * wk[o];
    }
}

constexpr int64_t kRowBlock = 16;  // rows per block of linear(): a [16, E] block of y stays in L2

/// y[rows, out] = x[rows, in] W[in, out] + b, dense rows, in blocks of kRowBlock rows.
template <typename Scalar>
void linear(int64_t rows, int64_t in, int64_t out, const Scalar* x, const Scalar* w, const Scalar* b, Scalar* y) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock)
    linear_block(r0, std::min(rows, r0 + kRowBlock), in, out, x, in, w, b, y, out);
}

/// LayerNorm of the row v[n] in place (biased variance, eps 1e-5, affine g, b).
template <typename Scalar>
PB_HOST_DEVICE inline void layer_norm_row(int64_t n, Scalar* v, const Scalar* g, const Scalar* b) {
  Scalar mean = 0, var = 0;
  for (int64_t k = 0; k < n; ++k) mean += v[k];
  mean /= Scalar(n);
  for (int64_t k = 0; k < n; ++k) var += (v[k] - mean) * (v[k] - mean);
  const Scalar inv = Scalar(1) / std::sqrt(var / Scalar(n) + Scalar(kLayerNormEps));
  for (int64_t k = 0; k < n; ++k) v[k] = (v[k] - mean) * inv * g[k] + b[k];
}

template <typename Scalar>
void layer_norm(int64_t rows, int64_t n, Scalar* x, const Scalar* g, const Scalar* b) {
  for (int64_t r = 0; r < rows; ++r) layer_norm_row(n, x + r * n, g, b);
}

template <typename Scalar>
PB_HOST_DEVICE inline Scalar sigmoid(Scalar v) { return Scalar(1) / (Scalar(1) + std::exp(-v)); }

/// The parameters, W stored [in, out]: in_proj [D, E], br/bi [E, 8], gate [E, E], up [8, E],
/// out_proj [E, D], LN16 and LN512 weights and biases.
template <typename Scalar>
struct Params {
  const Scalar *w_in, *b_in, *br, *bi, *ln_w, *ln_b, *theta, *omega, *sigma;
  const Scalar *w_gate, *b_gate, *w_up, *b_up, *w_out, *b_out, *lnf_w, *lnf_b;
};

/// The recurrence as the original runs it, for batch row b: states[b, t] (16) after step t,
/// from w[B, L, 16].
template <typename Scalar>
PB_HOST_DEVICE inline void sequential_states_of(const Trinor<Scalar>& tr, int64_t b, int64_t length, const Scalar* w,
                                                Scalar* states) {
  Scalar s[kWide] = {1};
  for (int64_t t = 0; t < length; ++t) {
    step(tr, w + (b * length + t) * kWide, s);
    for (int k = 0; k < kWide; ++k) states[(b * length + t) * kWide + k] = s[k];
  }
}

template <typename Scalar>
void sequential_states(const Trinor<Scalar>& tr, int64_t batch, int64_t length, const Scalar* w, Scalar* states) {
  for (int64_t b = 0; b < batch; ++b) sequential_states_of(tr, b, length, w, states);
}

/// c = a b for row-major 16 x 16 maps (a applied after b).
template <typename Scalar>
PB_HOST_DEVICE inline void compose(const Scalar* a, const Scalar* b, Scalar* c) {
  for (int i = 0; i < kWide; ++i)
    for (int j = 0; j < kWide; ++j) {
      Scalar sum = 0;
      for (int k = 0; k < kWide; ++k) sum += a[i * kWide + k] * b[k * kWide + j];
      c[i * kWide + j] = sum;
    }
}

/// The same states by the chunked associative scan (the parallel_scan phase on the host): prefix
/// maps P_j = M_j P_(j-1) within chunks of `chunk` steps (`compose(a, b, c)`: c = a b), the state
/// entering each chunk carried across chunks, s_t = P_t s_entering. Exact in real arithmetic;
/// reordered in floating point.
template <typename Scalar, typename Compose>
void scanned_states(const Trinor<Scalar>& tr, int64_t batch, int64_t length, int64_t chunk, const Scalar* w,
                    Scalar* states, const Compose& compose_maps) {
  std::vector<Scalar> map(kWide * kWide), prefix(kWide * kWide), next(kWide * kWide);
  for (int64_t b = 0; b < batch; ++b) {
    Scalar entering[kWide] = {1};
    for (int64_t t0 = 0; t0 < length; t0 += chunk) {
      for (int64_t j = 0; j < chunk; ++j) {
        const int64_t row = b * length + t0 + j;
        step_map(tr, w + row * kWide, j == 0 ? prefix.data() : map.data());
        if (j > 0) {
          compose_maps(map.data(), prefix.data(), next.data());
          prefix.swap(next);
        }
        for (int k = 0; k < kWide; ++k) {
          Scalar sum = 0;
          for (int i = 0; i < kWide; ++i) sum += prefix[k * kWide + i] * entering[i];
          states[row * kWide + k] = sum;
        }
      }
      const Scalar* last = states + (b * length + t0 + chunk - 1) * kWide;
      std::copy(last, last + kWide, entering);
    }
  }
}

template <typename Scalar>
void scanned_states(const Trinor<Scalar>& tr, int64_t batch, int64_t length, int64_t chunk, const Scalar* w,
                    Scalar* states) {
  scanned_states(tr, batch, length, chunk, w, states,
                 [](const Scalar* a, const Scalar* b, Scalar* c) { compose(a, b, c); });
}

/// The whole layer: x[B, L, D] -> out[B, L, D], final state r, i [B, 8]. `states_of(tr, w,
/// states)` runs the recurrence (sequential_states for the oracle).
template <typename Scalar, typename StatesOf>
void forward(int64_t batch, int64_t length, int64_t model, int64_t inner, const Params<Scalar>& p, const Scalar* x,
             Scalar* out, Scalar* r_final, Scalar* i_final, const StatesOf& states_of) {
  const int64_t rows = batch * length;
  std::vector<Scalar> u(rows * inner), br_bi(inner * kWide), w(rows * kWide), gate(rows * inner), z(rows * kState);
  for (int64_t e = 0; e < inner; ++e)  // [Br | Bi] as one [E, 16] weight
    for (int k = 0; k < kState; ++k) {
      br_bi[e * kWide + k] = p.br[e * kState + k];
      br_bi[e * kWide + kState + k] = p.bi[e * kState + k];
    }
  linear(rows, model, inner, x, p.w_in, p.b_in, u.data());
  linear(rows, inner, kWide, u.data(), br_bi.data(), static_cast<const Scalar*>(nullptr), w.data());
  layer_norm(rows, kWide, w.data(), p.ln_w, p.ln_b);
  linear(rows, inner, inner, u.data(), p.w_gate, p.b_gate, gate.data());
  const Trinor<Scalar> tr = make_trinor(p.theta, p.omega, p.sigma);
  std::vector<Scalar> states(rows * kWide);
  states_of(tr, w.data(), states.data());
  for (int64_t row = 0; row < rows; ++row) mix(states.data() + row * kWide, z.data() + row * kState);
  for (int64_t b = 0; b < batch; ++b) {
    const Scalar* last = states.data() + ((b + 1) * length - 1) * kWide;
    std::copy(last, last + kState, r_final + b * kState);
    std::copy(last + kState, last + kWide, i_final + b * kState);
  }
  std::vector<Scalar>& y = u;  // u is dead: reuse it for up(z), then y
  linear(rows, kState, inner, z.data(), p.w_up, p.b_up, y.data());
  for (int64_t k = 0; k < rows * inner; ++k) y[k] *= sigmoid(gate[k]);
  linear(rows, inner, model, y.data(), p.w_out, p.b_out, out);
  for (int64_t k = 0; k < rows * model; ++k) out[k] += x[k];
  layer_norm(rows, model, out, p.lnf_w, p.lnf_b);
}

/// The oracle: the layer with the sequential recurrence.
template <typename Scalar>
void forward(int64_t batch, int64_t length, int64_t model, int64_t inner, const Params<Scalar>& p, const Scalar* x,
             Scalar* out, Scalar* r_final, Scalar* i_final) {
  forward(batch, length, model, inner, p, x, out, r_final, i_final,
          [&](const Trinor<Scalar>& tr, const Scalar* w, Scalar* states) {
            sequential_states(tr, batch, length, w, states);
          });
}

}  // namespace pb::reference::geometry::mamba_scan
