#pragma once
// energy_flow/aggregate: the end-of-batch aggregation of completed energy flows onto the output
// surface (energy_flow's energy_lattice.py), written as the obviously right loops. Templated on
// the scalar type: Scalar = double is the oracle every variant is checked against; Scalar = float
// is timed as the serial baseline. Suite page: docs/energy_flow.md.
//
//   lattice W x H x D, batch B; flow f: batch b, normalised position (x, y, z), energy E, steps,
//   active and projected flags; completed = !active && projected
//   ix = clamp(round((x + 1) / 2 (W - 1)), 0, W - 1), iy likewise with H;  s = iy W + ix
//     round: half to even, as the original's torch.round (x = -0.75, W = 5: 0.5 -> cell 0, not 1)
//   dist = min(|z - z0|, |z - zD|), z0 = -1 and zD = +1 the normalised z of layers 0 and D
//   omega = |E| / (1 + dist) (1 + 0.1 steps)
//   for each group g of completed flows with the same key (b, s):
//     w = softmax(omega over g);  out[b, s] = sum_{f in g} w_f E_f   (a one-flow group gives E)
//   out[B, H W], 0 where no completed flow landed
//
// legacy_xy_aggregate is the original loop version's bug, kept as a variant that must be caught:
// it keys the groups by s alone, so flows of different batch elements in the same (x, y) cell are
// softmaxed together and the result is written to the batch of the group's first flow.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "phasebench/host_device.hpp"  // the per-flow bodies also run in CUDA and Kokkos kernels

namespace pb::reference::energy_flow {

constexpr double kStepsWeight = 0.1;          // omega's (1 + 0.1 steps)
constexpr double kSoftmaxSumEpsilon = 1e-12;  // the optimized segment softmax's sum + 1e-12

/// One size of the workload.
struct Lattice {
  int width = 0, height = 0, depth = 0;  // W, H, D
  int batch = 0;                         // B
  int64_t flows = 0;                     // F
  int64_t plane() const { return int64_t{width} * height; }
  int64_t cells() const { return int64_t{batch} * plane(); }  // the output's B * H * W values
};

/// The flows, one entry per flow in every array (structure of arrays, as tensorized storage).
template <typename Scalar>
struct Flows {
  std::vector<int64_t> batch, steps;
  std::vector<Scalar> x, y, z, energy;  // normalised position in [-1, 1]; energy
  std::vector<uint8_t> active, projected;
  int64_t count() const { return static_cast<int64_t>(energy.size()); }
};

PB_HOST_DEVICE inline bool is_completed(bool active, bool projected) { return !active && projected; }

// The per-flow bodies below also run in CUDA kernels: no std::min/max (host-only constexpr there),
// and rounding and abs go through double, where both are exact, so every Scalar gets the same bits.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar smaller(Scalar a, Scalar b) { return b < a ? b : a; }
template <typename Scalar>
PB_HOST_DEVICE inline Scalar absolute(Scalar v) { return static_cast<Scalar>(::fabs(static_cast<double>(v))); }

/// v rounded to the nearest integer, a tie to the even one: torch.round's rule, with which the
/// original quantizes positions (::round sends ties away from zero). Written out rather than
/// ::nearbyint so that it holds whatever the floating-point environment's rounding mode; v - floor(v)
/// is exact.
PB_HOST_DEVICE inline double round_half_to_even(double v) {
  const double below = ::floor(v), fraction = v - below;
  if (fraction != 0.5) return fraction < 0.5 ? below : below + 1;
  return ::fmod(below, 2.0) == 0 ? below : below + 1;
}

/// The lattice index of a normalised coordinate along an axis of `extent` points.
template <typename Scalar>
PB_HOST_DEVICE inline int64_t lattice_index(Scalar normalised, int extent) {
  const Scalar last = Scalar(extent - 1);
  const Scalar scaled = static_cast<Scalar>(round_half_to_even(static_cast<double>((normalised + Scalar(1)) * Scalar(0.5) * last)));
  return static_cast<int64_t>(smaller(scaled < Scalar(0) ? Scalar(0) : scaled, last));
}

/// s = iy W + ix: the (x, y) cell a flow lands in.
template <typename Scalar>
PB_HOST_DEVICE inline int64_t surface_cell(Scalar x, Scalar y, int width, int height) {
  return lattice_index(y, height) * width + lattice_index(x, width);
}

/// omega = |E| / (1 + dist) (1 + 0.1 steps), dist the distance to the nearer output surface.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar flow_weight(Scalar energy, Scalar z, Scalar steps) {
  const Scalar dist = smaller(absolute(z + Scalar(1)), absolute(z - Scalar(1)));
  return absolute(energy) * (Scalar(1) / (Scalar(1) + dist)) * (Scalar(1) + Scalar(kStepsWeight) * steps);
}

/// The output cell of flow f: b H W + s.
template <typename Scalar>
int64_t output_cell(const Flows<Scalar>& flows, int64_t f, const Lattice& lattice) {
  return flows.batch[f] * lattice.plane() + surface_cell(flows.x[f], flows.y[f], lattice.width, lattice.height);
}

/// sum_g softmax(omega)_f E_f over one group of flows (indices into `flows`), in their order.
template <typename Scalar>
Scalar softmax_weighted_energy(const Flows<Scalar>& flows, const std::vector<int64_t>& group) {
  std::vector<Scalar> omega;
  for (int64_t f : group) omega.push_back(flow_weight(flows.energy[f], flows.z[f], Scalar(flows.steps[f])));
  const Scalar largest = *std::max_element(omega.begin(), omega.end());
  Scalar total = 0, weighted = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const Scalar e = std::exp(omega[i] - largest);
    total += e;
    weighted += e * flows.energy[group[i]];
  }
  return weighted / total;
}

/// out[B, H W] (row-major), keyed by (b, s).
template <typename Scalar>
std::vector<Scalar> aggregate(const Flows<Scalar>& flows, const Lattice& lattice) {
  std::map<int64_t, std::vector<int64_t>> groups;  // output cell -> its completed flows, in order
  for (int64_t f = 0; f < flows.count(); ++f)
    if (is_completed(flows.active[f], flows.projected[f])) groups[output_cell(flows, f, lattice)].push_back(f);
  std::vector<Scalar> out(lattice.cells(), Scalar(0));
  for (const auto& [cell, group] : groups) out[cell] = softmax_weighted_energy(flows, group);
  return out;
}

/// The original's bug: groups keyed by s alone, written to the batch of each group's first flow.
template <typename Scalar>
std::vector<Scalar> legacy_xy_aggregate(const Flows<Scalar>& flows, const Lattice& lattice) {
  std::map<int64_t, std::vector<int64_t>> groups;  // s -> its completed flows of every batch element
  for (int64_t f = 0; f < flows.count(); ++f)
    if (is_completed(flows.active[f], flows.projected[f]))
      groups[surface_cell(flows.x[f], flows.y[f], lattice.width, lattice.height)].push_back(f);
  std::vector<Scalar> out(lattice.cells(), Scalar(0));
  for (const auto& [s, group] : groups)
    out[flows.batch[group.front()] * lattice.plane() + s] = softmax_weighted_energy(flows, group);
  return out;
}

}  // namespace pb::reference::energy_flow
