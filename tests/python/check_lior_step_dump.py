"""Loads a `phasebench dump` of trainer2/lior_step with numpy and recomputes its outputs
independently (vectorized numpy, fp64), the way the original PyTorch code computes them:
    s = sqrt(clamp(sum(g * v**2, -1), min=0) + eps);  dlior = R * s;  and the three means.
Exits 0 and prints "agree" when every reference output matches to fp64 round-off."""

import numpy as np

from dump_check import compare_with_reference, load_dump, run

EPS = 1e-8


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    v = arrays[("inputs", "v")].astype(np.float64)
    R = arrays[("inputs", "R")].astype(np.float64)
    g = arrays[("inputs", "g")].astype(np.float64)
    s = np.sqrt(np.maximum((g * v * v).sum(axis=-1), 0.0) + EPS)
    dlior = R * s
    expected = {"s": s, "dlior": dlior, "mean_dlior": dlior.mean(), "mean_R": R.mean(),
                "mean_s": s.mean()}
    return compare_with_reference(arrays, expected, 1e-12, "trainer2/lior_step")


if __name__ == "__main__":
    run(main)
