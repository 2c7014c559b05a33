"""Loads a `phasebench dump` of geometry/lior_memory_conv with numpy and recomputes it
independently (vectorized numpy, fp64), the way the original LIoR memory kernel does: the kernel
K(tau) on tau = 1..N from the weights, the taps normalized by |sum K| + 1e-8, the causal convolution
along the sequence as one product with the Toeplitz matrix T[t, s] = k[t - s] (s <= t), then
out = w0 x + (1 - w0) conv with w0 the original's softmax(weight_logits)[0], here the dumped p[12],
itself checked against the softmax of the dumped logits. Exits 0 and prints "agree" when out matches the dumped reference to
round-off."""

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def kernel(p, tau):
    wl0, wl1, wl2, alpha, beta, gamma, delta, xi, eta, omega, phi, zeta = p[:12]
    tau = np.maximum(tau, 0.1)
    w = np.exp(np.array([wl0, wl1, wl2]) - max(wl0, wl1, wl2))
    w /= w.sum()
    cexp = lambda a: np.exp(np.clip(a, -20.0, 20.0))
    terms = np.stack([alpha * cexp(-beta * tau),
                      gamma * tau ** (-delta) * cexp(-xi * tau),
                      eta * np.cos(omega * tau + phi) * cexp(-zeta * tau)])
    return np.clip(w @ terms, -100.0, 100.0)


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    x = arrays[("inputs", "x")].astype(np.float64)
    p = arrays[("inputs", "kernel_params")].astype(np.float64)
    n = x.shape[1]
    K = kernel(p, np.arange(1, n + 1, dtype=np.float64))
    k = K / (abs(K.sum()) + 1e-8)
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    T = np.where(lag >= 0, k[np.clip(lag, 0, None)], 0.0)
    conv = np.einsum("ts,bsc->btc", T, x)
    w0 = p[12]
    logits = p[:3]
    softmax_first = np.exp(logits[0]) / np.exp(logits).sum()
    if abs(w0 - softmax_first) > 1e-7:  # p is stored as fp32
        print(f"geometry/lior_memory_conv: w0 = {w0} is not softmax(wl)[0] = {softmax_first}")
        return 1
    return compare_with_reference(arrays, {"out": w0 * x + (1 - w0) * conv}, 1e-12, "geometry/lior_memory_conv")


if __name__ == "__main__":
    run(main)
