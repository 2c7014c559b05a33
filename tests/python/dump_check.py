"""What the independent checks of `phasebench dump` share: loading a dump through its manifest and
comparing recomputed outputs with the dumped fp64 reference."""

import json
import pathlib

import numpy as np


def load_dump(dump_dir: str):
    """(manifest, {(role, name): array}) with every array checked against its manifest entry."""
    root = pathlib.Path(dump_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    arrays = {}
    for entry in manifest["arrays"]:
        data = np.load(root / entry["file"])
        assert list(data.shape) == entry["shape"], (entry["name"], data.shape, entry["shape"])
        assert str(data.dtype) == entry["dtype"], (entry["name"], data.dtype, entry["dtype"])
        arrays[(entry["role"], entry["name"])] = data
    return manifest, arrays


def compare_with_reference(arrays, expected: dict, tolerance: float, what: str) -> int:
    """0 and "agree" when every expected output matches the dumped reference within `tolerance`
    (relative L2); else 1 naming the first output that does not."""
    worst = 0.0
    for name, value in expected.items():
        got = arrays[("reference", name)]
        error = np.linalg.norm(got - value) / np.linalg.norm(value)
        worst = max(worst, error)
        if error > tolerance:
            print(f"{name}: relative error {error:.3e} against numpy ({what})")
            return 1
    print(f"all {len(expected)} outputs of {what} agree with numpy (worst relative error {worst:.2e})")
    return 0
