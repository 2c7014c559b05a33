"""Loads a `phasebench dump` of trainer2/lior_step with numpy and recomputes its outputs
independently (vectorized numpy, fp64), the way the original PyTorch code computes them:
    s = sqrt(clamp(sum(g * v**2, -1), min=0) + eps);  dlior = R * s;  and the three means.
Exits 0 and prints "agree" when every reference output matches to fp64 round-off."""

import json
import pathlib
import sys

import numpy as np

EPS = 1e-8


def main(dump_dir: str) -> int:
    root = pathlib.Path(dump_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    arrays = {}
    for entry in manifest["arrays"]:
        data = np.load(root / entry["file"])
        assert list(data.shape) == entry["shape"], (entry["name"], data.shape, entry["shape"])
        assert str(data.dtype) == entry["dtype"], (entry["name"], data.dtype, entry["dtype"])
        arrays[(entry["role"], entry["name"])] = data

    v = arrays[("inputs", "v")].astype(np.float64)
    R = arrays[("inputs", "R")].astype(np.float64)
    g = arrays[("inputs", "g")].astype(np.float64)
    s = np.sqrt(np.maximum((g * v * v).sum(axis=-1), 0.0) + EPS)
    dlior = R * s
    expected = {"s": s, "dlior": dlior, "mean_dlior": dlior.mean(), "mean_R": R.mean(),
                "mean_s": s.mean()}

    worst = 0.0
    for name, value in expected.items():
        got = arrays[("reference", name)]
        error = np.linalg.norm(got - value) / np.linalg.norm(value)
        worst = max(worst, error)
        if error > 1e-12:
            print(f"{name}: relative error {error:.3e} against numpy")
            return 1
    print(f"all {len(expected)} outputs agree with numpy (worst relative error {worst:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
