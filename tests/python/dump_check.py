"""What the independent checks of `phasebench dump` share: loading a dump through its manifest,
comparing recomputed outputs with the dumped fp64 reference, and (with --write-outputs DIR) saving
those outputs as DIR/<output>.npy, the way a user's own code does for `phasebench check`."""

import argparse
import json
import pathlib
import sys

import numpy as np

# Every output a check computed (name -> array), for --write-outputs.
_computed = {}


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
    _computed.update(expected)
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


def write_outputs(dump_dir: str, outputs_dir: str) -> int:
    """Saves every output the dump's manifest names ("tolerances") as outputs_dir/<output>.npy in
    float64; 2 when the check did not compute one of them."""
    manifest = json.loads((pathlib.Path(dump_dir) / "manifest.json").read_text())
    missing = [name for name in manifest["tolerances"] if name not in _computed]
    if missing:
        print(f"--write-outputs: this check does not compute {', '.join(missing)}")
        return 2
    target = pathlib.Path(outputs_dir)
    target.mkdir(parents=True, exist_ok=True)
    for name in manifest["tolerances"]:
        np.save(target / f"{name}.npy", np.asarray(_computed[name], dtype=np.float64))
    print(f"wrote {len(manifest['tolerances'])} outputs to {outputs_dir}")
    return 0


def run(main) -> None:
    """Every check's entry point: `check_<workload>_dump.py DUMP_DIR [--write-outputs DIR]`; exits
    with main's status (0 agree, 1 disagree, 2 bad input)."""
    parser = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump_dir", help="a directory written by `phasebench dump`")
    parser.add_argument("--write-outputs", metavar="DIR",
                        help="also save the computed outputs as DIR/<output>.npy, for `phasebench check DUMP_DIR DIR`")
    arguments = parser.parse_args()
    status = main(arguments.dump_dir)
    if status == 0 and arguments.write_outputs:
        status = write_outputs(arguments.dump_dir, arguments.write_outputs)
    sys.exit(status)
