#pragma once
// geometry/hamiltonian: Liorhybrid's kernels/hamiltonian.py, hamiltonian_evolution(T, V), written
// as the obviously right loops. Templated on the scalar: double is the oracle, float is timed as
// the serial baseline.
//
//   F complex [Nx,Ny,D,D], V real [Nx,Ny,D,D]; hbar = 0.1, m = 1, c = hbar^2 / (2 m) = 0.005
//   Lap(F)[x,y,i,j] = F[x+1,y] + F[x-1,y] + F[x,y+1] + F[x,y-1] - 4 F[x,y]   (indices mod Nx, Ny)
//   H[x,y,i,j]      = -c Lap(F)[x,y,i,j] + V[x,y,i,j] F[x,y,i,j]
//
// The stencil is periodic, as the suite defines it (docs/geometry.md). The Liorhybrid code calls
// F.conv2d with padding='same', i.e. zeros beyond the edge, under a comment that says "circular
// padding (periodic boundary)"; phasebench follows the definition. Real and imaginary parts are
// stencilled independently: on the real view [Nx,Ny,2 D^2] every real channel is a 2-D periodic
// field.

#include <cstdint>

#include "phasebench/host_device.hpp"  // the per-element math also runs in CUDA kernels
#include "reference/geometry/field.hpp"

namespace pb::reference::geometry {

constexpr double kHbar = 0.1;
constexpr double kMass = 1.0;
constexpr double kKinetic = kHbar * kHbar / (2 * kMass);  // c

/// (i + step) mod n for step in {-1, +1}, 0 <= i < n.
PB_HOST_DEVICE inline int64_t wrap(int64_t i, int64_t step, int64_t n) {
  const int64_t j = i + step;
  return j < 0 ? j + n : (j >= n ? j - n : j);
}

/// The 5-point Laplacian from the four neighbours' values and the centre's: x neighbours, then y
/// neighbours, then the centre (the order every variant sums in).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar five_point_laplacian(Scalar x_next, Scalar x_prev, Scalar y_next, Scalar y_prev,
                                                  Scalar centre) {
  return x_next + x_prev + y_next + y_prev - Scalar(4) * centre;
}

/// The periodic 5-point Laplacian of real channel `c` at site (x, y) of the real view f
/// [nx, ny, channels].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar periodic_laplacian(const Scalar* f, int64_t nx, int64_t ny, int64_t channels,
                                                int64_t x, int64_t y, int64_t c) {
  const auto at = [&](int64_t i, int64_t j) { return f[(i * ny + j) * channels + c]; };
  return five_point_laplacian(at(wrap(x, 1, nx), y), at(wrap(x, -1, nx), y), at(x, wrap(y, 1, ny)),
                              at(x, wrap(y, -1, ny)), at(x, y));
}

/// One value of H from the Laplacian, the potential and the field at that value.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar hamiltonian_value(Scalar laplacian, Scalar potential, Scalar field) {
  return Scalar(-kKinetic) * laplacian + potential * field;
}

/// H for the whole field: f and h are real views [Nx,Ny,D,D,2], v is [Nx,Ny,D,D].
template <typename Scalar>
void hamiltonian(const Scalar* f, const Scalar* v, const FieldShape& s, Scalar* h) {
  const int64_t channels = s.channels();
  for (int64_t x = 0; x < s.nx; ++x)
    for (int64_t y = 0; y < s.ny; ++y)
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t i = (x * s.ny + y) * channels + c;
        h[i] = hamiltonian_value(periodic_laplacian(f, s.nx, s.ny, channels, x, y, c), v[i / 2], f[i]);
      }
}

}  // namespace pb::reference::geometry
