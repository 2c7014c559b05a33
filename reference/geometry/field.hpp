#pragma once
// The complex field of geometry/hamiltonian and geometry/bayesian: its shape, and how a complex
// field [Nx,Ny,D,D] is laid out as reals. Math: hamiltonian.hpp, bayesian.hpp next to this file.

#include <cstdint>

namespace pb::reference::geometry {

/// A field of D x D complex values on an Nx x Ny lattice, stored as its real view
/// [Nx,Ny,D,D,2] (re, im interleaved): per site, channels() = 2 D^2 real channels.
struct FieldShape {
  int64_t nx = 0, ny = 0, d = 0;

  int64_t sites() const { return nx * ny; }
  int64_t channels() const { return 2 * d * d; }    // real channels per site
  int64_t complex_count() const { return sites() * d * d; }
  int64_t real_count() const { return sites() * channels(); }
};

}  // namespace pb::reference::geometry
