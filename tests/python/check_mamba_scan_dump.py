"""Loads a `phasebench dump` of geometry/mamba_scan with numpy and recomputes the layer
independently, the way Liorhybrid's geometric Mamba runs it: a Python loop over t with the
projections of step t inside (batched over B), the trinor and halved product on (r, i), the gate
and up projection, then out_proj and the final LayerNorm, in fp64. Exits 0 and prints "agree"
when every output matches the dump's fp64 reference to round-off. Usage:
check_mamba_scan_dump.py DUMP_DIR"""

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def layer_norm(v, weight, bias):
    mean = v.mean(-1, keepdims=True)
    var = ((v - mean) ** 2).mean(-1, keepdims=True)
    return (v - mean) / np.sqrt(var + 1e-5) * weight + bias


def conj(v):
    c = v.copy()
    c[..., 1:] = -c[..., 1:]
    return c


def layer(p, x):
    batch, length, _ = x.shape
    r = np.zeros((batch, 8))
    r[:, 0] = 1
    i = np.zeros((batch, 8))
    scale = np.clip(p["sigma"], 0.5, 2) * (1 + 0.1 * p["omega"])
    cos, sin = np.cos(p["theta"]), np.sin(p["theta"])
    ys = []
    for t in range(length):
        u = x[:, t] @ p["in_proj.weight"] + p["in_proj.bias"]
        w = layer_norm(np.concatenate([u @ p["Br"], u @ p["Bi"]], -1), p["ln16.weight"], p["ln16.bias"])
        wr, wi = w[:, :8], w[:, 8:]
        r2 = (r * cos - i * sin) * scale
        i2 = (r * sin + i * cos) * scale
        a, b, a_, b_ = r2[:, :4], r2[:, 4:], i2[:, :4], i2[:, 4:]
        c, d, c_, d_ = wr[:, :4], wr[:, 4:], wi[:, :4], wi[:, 4:]
        r = np.concatenate([a * c - d * b, a_ * c_ - d_ * b_], -1)
        i = np.concatenate([d * a + b * c, d_ * a_ + b_ * c_], -1)
        gate = 1 / (1 + np.exp(-(u @ p["gate.weight"] + p["gate.bias"])))
        ys.append(gate * ((r * conj(r) + i * conj(i)) @ p["up.weight"] + p["up.bias"]))
    y = np.stack(ys, 1)
    out = layer_norm(x + y @ p["out_proj.weight"] + p["out_proj.bias"], p["ln_out.weight"], p["ln_out.bias"])
    zero = np.abs(np.concatenate([np.delete(r, [0, 4], 1), np.delete(i, [0, 4], 1)], 1)).max()
    assert zero == 0, f"state components other than r0, r4, i0, i4 reached {zero}"
    return {"out": out, "final_state": np.stack([r[:, 0], r[:, 4], i[:, 0], i[:, 4]], 1)}


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    inputs = {name: value.astype(np.float64) for (role, name), value in arrays.items() if role == "inputs"}
    expected = layer(inputs, inputs["x"])
    return compare_with_reference(arrays, expected, 1e-12, "the original loop", show_each=True)


if __name__ == "__main__":
    run(main)
