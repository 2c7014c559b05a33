#pragma once
// adaptive/dynamics_step: S consecutive steps of the adaptive network's node dynamics (seed 002).
// State per (batch b, node n): hidden h[H], energy e, activity a. Inputs x[I] and phase p in
// {0 active, 1 sleep, 2 interactive, 3 inspired}; parameters W[H,H], b[H], s[4], w_e[H], b_e,
// w_a[2], b_a. One step, every (b, n) on its own:
//
//   A  = max(0, 5 - e) + 2 a + var_H(h)                      anxiety (unbiased variance over H)
//   m  = [p != 1]                                            sleeping nodes do not move
//   d  = (W h + b) * (1 + s[p])                              phase-scaled drive
//   u  = x if I == H else W[:, :I] x                         input projection (no bias)
//   h' = tanh(h + m (d + 0.1 u))
//   e' = clamp(0.99 e + (w_e . h' + b_e) (1 - 0.1 clamp(A / 10, 0, 1)) m, 0, 50)
//   a' = clamp(sigmoid(w_a[0] mean_H(h') + w_a[1] mean_I(x) + b_a), 0, 1)
//
// Anxiety uses the state before the step; the energy update uses the new h. Written as nested
// loops to be obviously right; Scalar = double is the oracle, float the serial baseline.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pb::reference::adaptive {

inline constexpr int kPhases = 4;      // active, sleep, interactive, inspired
inline constexpr int64_t kSleepPhase = 1;

struct Dimensions {
  int64_t batch = 0, nodes = 0, hidden = 0, input = 0, steps = 0;
  int64_t cells() const { return batch * nodes; }
};

/// Parameters, row-major: weight[j * hidden + k] is W[j, k].
template <typename Scalar>
struct Parameters {
  std::vector<Scalar> weight, bias, phase_scale, energy_weight, activity_weight;  // [H,H] [H] [4] [H] [2]
  Scalar energy_bias = 0, activity_bias = 0;
};

/// The state of every cell: hidden [B*N*H], energy [B*N], activity [B*N].
template <typename Scalar>
struct State {
  std::vector<Scalar> hidden, energy, activity;
};

template <typename Scalar>
Scalar anxiety(const Scalar* h, Scalar e, Scalar a, int64_t hidden) {
  Scalar mean = 0, squares = 0;
  for (int64_t k = 0; k < hidden; ++k) mean += h[k];
  mean /= Scalar(hidden);
  for (int64_t k = 0; k < hidden; ++k) squares += (h[k] - mean) * (h[k] - mean);
  return std::max(Scalar(0), Scalar(5) - e) + Scalar(2) * a + squares / Scalar(hidden - 1);
}

/// One step of one cell: h (in place), e and a from x and the phase; `next` holds H scratch values.
template <typename Scalar>
void step_cell(const Parameters<Scalar>& w, const Dimensions& d, const Scalar* x, int64_t phase, Scalar* h,
               Scalar& e, Scalar& a, Scalar* next) {
  const Scalar anxious = anxiety(h, e, a, d.hidden);
  const Scalar moving = phase == kSleepPhase ? Scalar(0) : Scalar(1);
  for (int64_t j = 0; j < d.hidden; ++j) {
    Scalar drive = w.bias[j], input = 0;
    for (int64_t k = 0; k < d.hidden; ++k) drive += w.weight[j * d.hidden + k] * h[k];
    drive *= Scalar(1) + w.phase_scale[phase];
    if (d.input == d.hidden) {
      input = x[j];
    } else {
      for (int64_t k = 0; k < d.input; ++k) input += w.weight[j * d.hidden + k] * x[k];
    }
    next[j] = std::tanh(h[j] + moving * (drive + Scalar(0.1) * input));
  }
  Scalar projection = w.energy_bias, hidden_mean = 0, input_mean = 0;
  for (int64_t j = 0; j < d.hidden; ++j) {
    h[j] = next[j];
    projection += w.energy_weight[j] * h[j];
    hidden_mean += h[j];
  }
  for (int64_t k = 0; k < d.input; ++k) input_mean += x[k];
  const Scalar damping = Scalar(1) - Scalar(0.1) * std::clamp(anxious / Scalar(10), Scalar(0), Scalar(1));
  e = std::clamp(Scalar(0.99) * e + projection * damping * moving, Scalar(0), Scalar(50));
  const Scalar logit = w.activity_weight[0] * hidden_mean / Scalar(d.hidden) +
                       w.activity_weight[1] * input_mean / Scalar(d.input) + w.activity_bias;
  a = std::clamp(Scalar(1) / (Scalar(1) + std::exp(-logit)), Scalar(0), Scalar(1));
}

/// One step of every cell.
template <typename Scalar>
void step(const Parameters<Scalar>& w, const Dimensions& d, const std::vector<Scalar>& x,
          const std::vector<int64_t>& phases, State<Scalar>& state) {
  std::vector<Scalar> next(static_cast<size_t>(d.hidden));
  for (int64_t c = 0; c < d.cells(); ++c)
    step_cell(w, d, &x[c * d.input], phases[c], &state.hidden[c * d.hidden], state.energy[c], state.activity[c],
              next.data());
}

/// S steps from `state` (in place).
template <typename Scalar>
void dynamics(const Parameters<Scalar>& w, const Dimensions& d, const std::vector<Scalar>& x,
              const std::vector<int64_t>& phases, State<Scalar>& state) {
  for (int64_t t = 0; t < d.steps; ++t) step(w, d, x, phases, state);
}

}  // namespace pb::reference::adaptive
