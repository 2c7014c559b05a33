"""Loads a `phasebench dump` of spinlock/cnn_rollout_<policy> with numpy and recomputes its
trajectories independently, the way Spinlock's PyTorch operator computes them (eval mode):

    ConvBlock = conv2d(padding=k//2, bias=False) -> InstanceNorm2d(affine, eps=1e-5) -> GELU
    O(x)      = head_1x1(ConvBlock_n(... ConvBlock_0(x)))        (+ bias)
    x_{t+1}   = O(x_t) | x_t + dt O(x_t) | alpha x_t + (1 - alpha) O(x_t)

Vectorized numpy in fp64 (whole batch at once, convolution as a sum of shifted einsums), unlike
the C++ reference's per-sample loops. Also recomputes the approximate model of phase 3
(GroupNorm(8), tanh-GELU). Exits 0 and prints "agree" when both match to fp64 round-off.
Usage: check_cnn_rollout_dump.py DUMP_DIR"""

import math

import numpy as np

from dump_check import compare_with_reference, load_dump, run

EPS = 1e-5
DT = 0.01
ALPHA = 0.5


def conv2d(x, w, bias=None):
    """x [M,C,H,W], w [O,C,k,k], zero padding k//2 (PyTorch's 'same' for odd k)."""
    m, c, h, wd = x.shape
    k = w.shape[-1]
    p = k // 2
    padded = np.zeros((m, c, h + 2 * p, wd + 2 * p))
    padded[:, :, p:p + h, p:p + wd] = x
    out = np.zeros((m, w.shape[0], h, wd))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("oc,mchw->mohw", w[:, :, dy, dx], padded[:, :, dy:dy + h, dx:dx + wd])
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def norm(x, gamma, beta, groups):
    """GroupNorm; groups == channels is InstanceNorm2d. Biased variance, as PyTorch."""
    m, c, h, w = x.shape
    g = x.reshape(m, groups, -1)
    y = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + EPS)
    return y.reshape(m, c, h, w) * gamma[None, :, None, None] + beta[None, :, None, None]


def gelu(x, tanh_form):
    if tanh_form:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def operator(x, arrays, approximate):
    block = 0
    while ("inputs", f"block{block}.weight") in arrays:
        w = arrays[("inputs", f"block{block}.weight")]
        c = w.shape[0]
        groups = math.gcd(8, c) if approximate else c
        x = conv2d(x, w)
        x = norm(x, arrays[("inputs", f"block{block}.gamma")], arrays[("inputs", f"block{block}.beta")], groups)
        x = gelu(x, approximate)
        block += 1
    head = arrays[("inputs", "head.weight")]
    return conv2d(x, head[:, :, None, None], arrays[("inputs", "head.bias")])


def rollout(arrays, policy, steps, realizations, approximate):
    x = np.repeat(arrays[("inputs", "x0")][None], realizations, axis=0)
    trajectory = [x]
    for _ in range(1, steps):
        o = operator(x, arrays, approximate)
        if policy == "autoregressive":
            x = o
        elif policy == "residual":
            x = x + DT * o
        else:
            x = ALPHA * x + (1 - ALPHA) * o
        trajectory.append(x)
    return np.stack(trajectory)


def main(dump_dir: str) -> int:
    manifest, raw = load_dump(dump_dir)
    arrays = {key: value.astype(np.float64) for key, value in raw.items()}
    policy = manifest["workload"].rsplit("_", 1)[-1]
    steps, realizations = arrays[("reference", "trajectory")].shape[:2]
    expected = {"trajectory": rollout(arrays, policy, steps, realizations, False),
                "trajectory.approximate_model": rollout(arrays, policy, steps, realizations, True)}
    return compare_with_reference(arrays, expected, 1e-10, manifest["workload"])


if __name__ == "__main__":
    run(main)
