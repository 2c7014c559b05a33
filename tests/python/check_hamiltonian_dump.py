"""Loads a `phasebench dump` of geometry/hamiltonian with numpy and recomputes H independently
(vectorized numpy, fp64), the way Liorhybrid's kernels/hamiltonian.py computes it: the field
permuted to channels-first (D, D, Nx, Ny), a 3x3 Laplacian kernel applied to every channel, here
with a periodic wrap (np.roll, as phasebench defines it), then H = -(hbar^2 / 2m) lap + V T.
Exits 0 and prints "agree" when H matches the dumped fp64 reference to round-off."""

import numpy as np

from dump_check import compare_with_reference, load_dump, run

HBAR, MASS = 0.1, 1.0


def spatial_laplacian(T):
    """Channels-first (D, D, Nx, Ny), the kernel [[0,1,0],[1,-4,1],[0,1,0]] by shifted copies."""
    x = T.transpose(2, 3, 0, 1)
    kernel = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], dtype=np.float64)
    lap = np.zeros_like(x)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            if kernel[dx + 1, dy + 1]:
                lap = lap + kernel[dx + 1, dy + 1] * np.roll(x, (-dx, -dy), axis=(2, 3))
    return lap.transpose(2, 3, 0, 1)


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    F = arrays[("inputs", "F")].astype(np.float64)
    T = F[..., 0] + 1j * F[..., 1]
    V = arrays[("inputs", "V")].astype(np.float64)
    H = -(HBAR ** 2 / (2 * MASS)) * spatial_laplacian(T) + V * T
    return compare_with_reference(arrays, {"H": np.stack([H.real, H.imag], axis=-1)}, 1e-12, "geometry/hamiltonian")


if __name__ == "__main__":
    run(main)
