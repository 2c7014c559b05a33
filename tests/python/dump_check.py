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


def relative_error(got, value) -> float:
    """Relative L2 error of `got` against `value`; the absolute L2 error when `value` is all zeros
    (an output such as a ring pointer can legitimately be 0)."""
    difference = np.linalg.norm(np.asarray(got, dtype=np.float64) - value)
    scale = np.linalg.norm(value)
    return float(difference / scale) if scale > 0 else float(difference)


def compare_with_reference(arrays, expected: dict, tolerance: float, what: str, *,
                           looser: dict = None, show_each: bool = False) -> int:
    """0 and "agree" when every expected output matches the dumped reference within `tolerance`
    (relative L2); else 1 naming the first output that does not. `looser` maps an output name to
    (tolerance, reason) where a reason holds for a looser bound; `show_each` prints every error.
    A NaN error fails."""
    looser = looser or {}
    worst = 0.0
    for name, value in expected.items():
        bound, reason = looser.get(name, (tolerance, None))
        error = relative_error(arrays[("reference", name)], value)
        if show_each:
            note = f" (bound {bound:.0e}: {reason})" if reason else ""
            print(f"  {name:14s} relative error {error:.3e}{note}")
        if not error <= bound:
            print(f"{name}: relative error {error:.3e} against numpy ({what})")
            return 1
        worst = max(worst, error)
    print(f"all {len(expected)} outputs of {what} agree with numpy (worst relative error {worst:.2e})")
    return 0
