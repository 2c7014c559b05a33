"""Loads a `phasebench dump` of adaptive/dynamics_step with numpy and recomputes the S steps
independently (vectorized numpy, fp64), the way the original PyTorch code (core/dynamics.py after
its Phase 2) computes them on whole tensors:
    anxiety = clamp(5 - e, min=0) + 2 a + h.var(-1, unbiased)
    mask    = (p != 1)
    h       = tanh(h + mask (Linear(h) * (1 + s[p]) + 0.1 u)),  u = x or x @ W[:, :I].T
    e       = clamp(0.99 e + (h @ w_e + b_e)(1 - 0.1 clamp(anxiety / 10, 0, 1)) mask, 0, 50)
    a       = clamp(sigmoid(Linear_2->1([h.mean(-1), x.mean(-1)])), 0, 1)
Exits 0 and prints "agree" when the dumped reference matches to fp64 round-off."""

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def step(p, x, phase, h, e, a):
    anxiety = np.clip(5.0 - e, 0.0, None) + 2.0 * a + h.var(axis=-1, ddof=1)
    mask = (phase != 1).astype(np.float64)[..., None]
    drive = (h @ p["W"].T + p["b"]) * (1.0 + p["s"][phase])[..., None]
    hidden, inputs = p["W"].shape[0], x.shape[-1]
    u = x if inputs == hidden else x @ p["W"][:, :inputs].T
    h = np.tanh(h + mask * (drive + 0.1 * u))
    damping = 1.0 - 0.1 * np.clip(anxiety / 10.0, 0.0, 1.0)
    e = np.clip(0.99 * e + (h @ p["w_e"] + p["b_e"]) * damping * mask[..., 0], 0.0, 50.0)
    logit = np.stack([h.mean(axis=-1), x.mean(axis=-1)], axis=-1) @ p["w_a"] + p["b_a"]
    a = np.clip(1.0 / (1.0 + np.exp(-logit)), 0.0, 1.0)
    return h, e, a


def main(dump_dir: str) -> int:
    manifest, arrays = load_dump(dump_dir)
    p = {name: value for (role, name), value in arrays.items() if role == "inputs"}
    phase = p.pop("phase").astype(np.int64)
    p = {name: value.astype(np.float64) for name, value in p.items()}
    h, e, a = p["h0"], p["e0"], p["a0"]
    steps = 8  # S, the same at every size (docs/adaptive.md)
    for _ in range(steps):
        h, e, a = step(p, p["x"], phase, h, e, a)
    return compare_with_reference(arrays, {"h": h, "e": e, "a": a}, 1e-12, "adaptive/dynamics_step")


if __name__ == "__main__":
    run(main)
