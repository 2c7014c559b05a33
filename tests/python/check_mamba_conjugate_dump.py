"""Loads a `phasebench dump` of geometry/mamba_conjugate with numpy and recomputes the conjugate
independently, the way Liorhybrid's geometric-Mamba state computes it (clone, then the slice of
components 1..7 negated), in fp64. Exits 0 and prints "agree" when both outputs match the dump's
fp64 reference exactly. Usage: check_mamba_conjugate_dump.py DUMP_DIR"""

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def conjugate(x):
    c = x.copy()
    c[..., 1:] = -c[..., 1:]
    return c


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    expected = {f"{name}_conj": conjugate(arrays[("inputs", name)].astype(np.float64)) for name in ("r", "i")}
    return compare_with_reference(arrays, expected, 0.0, "the original conjugate", show_each=True)


if __name__ == "__main__":
    run(main)
