"""Loads a `phasebench dump` of energy_flow/aggregate with numpy and recomputes it independently
(vectorized numpy, fp64), the way seed 004's tensorized PyTorch version of energy_lattice.py does:
    completed_mask = ~is_active & projected;  completed_indices = where(completed_mask)
    idx_x = (((positions[:, 0] + 1) * 0.5) * (width - 1)).round().clamp(0, width - 1)   (idx_y alike)
      (torch.round and np.round both send a tie to the even integer; odd seeds have one at the small size)
    surface_idx = idx_y * width + idx_x, keyed with the batch index
    unique_indices, inverse_indices = unique(key, return_inverse=True)
    weights = softmax per group of |E| * 1 / (1 + distance_to_surface) * (1 + steps * 0.1)
    aggregated_energy = sum per group of E * weights
Exits 0 and prints "agree" when the dumped reference matches to round-off."""

import re

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def lattice(shape_text: str):
    """(W, H, D, B) from the manifest's shape, "5x4x3 B=2 F=37"."""
    match = re.fullmatch(r"(\d+)x(\d+)x(\d+) B=(\d+) F=(\d+)", shape_text)
    assert match, shape_text
    width, height, depth, batch, _ = (int(v) for v in match.groups())
    return width, height, depth, batch


def aggregate(arrays, width, height, depth, batch):
    position = arrays[("inputs", "flow.position")].astype(np.float64)
    energy = arrays[("inputs", "flow.energy")].astype(np.float64)
    steps = arrays[("inputs", "flow.steps")].astype(np.float64)
    flow_batch = arrays[("inputs", "flow.batch")]
    completed = (arrays[("inputs", "flow.active")] == 0) & (arrays[("inputs", "flow.projected")] != 0)
    index = np.where(completed)[0]
    pos = position[index]
    idx_x = np.clip(np.round((pos[:, 0] + 1) * 0.5 * (width - 1)), 0, width - 1).astype(np.int64)
    idx_y = np.clip(np.round((pos[:, 1] + 1) * 0.5 * (height - 1)), 0, height - 1).astype(np.int64)
    key = flow_batch[index] * (width * height) + idx_y * width + idx_x
    unique_keys, inverse = np.unique(key, return_inverse=True)
    z = pos[:, 2]
    z_first, z_last = -1.0, 2.0 * depth / depth - 1  # the normalised z of layers 0 and D
    distance = np.minimum(np.abs(z - z_first), np.abs(z - z_last))
    e = energy[index]
    omega = np.abs(e) * (1.0 / (1.0 + distance)) * (1.0 + steps[index] * 0.1)
    group_max = np.full(len(unique_keys), -np.inf)
    np.maximum.at(group_max, inverse, omega)
    exp = np.exp(omega - group_max[inverse])
    group_sum = np.zeros(len(unique_keys))
    np.add.at(group_sum, inverse, exp)
    weighted = np.zeros(len(unique_keys))
    np.add.at(weighted, inverse, exp / group_sum[inverse] * e)
    out = np.zeros(batch * width * height)
    out[unique_keys] = weighted
    return out.reshape(batch, width * height)


def main(dump_dir: str) -> int:
    manifest, arrays = load_dump(dump_dir)
    width, height, depth, batch = lattice(manifest["shape"])
    expected = {"aggregated_energy": aggregate(arrays, width, height, depth, batch)}
    return compare_with_reference(arrays, expected, 1e-12, "energy_flow/aggregate")


if __name__ == "__main__":
    run(main)
