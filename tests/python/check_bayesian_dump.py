"""Loads a `phasebench dump` of geometry/bayesian with numpy and recomputes it independently
(vectorized numpy, fp64, complex), the way Liorhybrid's kernels/bayesian.py computes it:
    weights = exp(-abs(T - E)**2 / tau);  Z = sum(weights * abs(T)**2)
    B = where(Z > eps, weights * T / (Z + eps), T);  Lambda = lambda * (B - T)
Exits 0 and prints "agree" when every dumped reference output matches to round-off."""

import numpy as np

from dump_check import compare_with_reference, load_dump, run

TAU, LAMBDA, EPS = 0.5, 0.3, 1e-12


def as_complex(pair):
    pair = pair.astype(np.float64)
    return pair[..., 0] + 1j * pair[..., 1]


def as_pair(z):
    return np.stack([z.real, z.imag], axis=-1)


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    T = as_complex(arrays[("inputs", "F")])
    E = as_complex(arrays[("inputs", "E")])
    weights = np.exp(-np.abs(T - E) ** 2 / TAU)
    Z = np.sum(weights * np.abs(T) ** 2)
    B = np.where(Z > EPS, weights * T / (Z + EPS), T)
    Lam = LAMBDA * (B - T)
    expected = {"posterior": as_pair(B), "update": as_pair(Lam), "field_plus_update": as_pair(T + Lam)}
    status = compare_with_reference(arrays, expected, 1e-12, "geometry/bayesian")
    # Z itself: relative to the dumped value (in the fallback branch it is ~1e-110, still exact).
    z_ref = float(arrays[("reference", "Z")])
    if not abs(Z - z_ref) <= 1e-12 * abs(z_ref):
        print(f"Z: {Z!r} against the dumped {z_ref!r}")
        return 1
    branch = "w F / (Z + eps)" if Z > EPS else "F (Z <= 1e-12)"
    print(f"posterior branch: {branch}")
    return status


if __name__ == "__main__":
    run(main)
