"""Loads a `phasebench dump` of geometry/lior_optimizer_step with numpy and recomputes the step
independently (vectorized numpy, fp64), the way the original LIoRManifoldOptimizer.step does:
per tensor c = p.flatten()[:8] zero-padded, R = clamp(R_net(c), 0.1, 10), p - lr kappa R^-2 grad.
Exits 0 and prints "agree" when every updated tensor matches the dumped reference to round-off."""

import math

import numpy as np

from dump_check import compare_with_reference, load_dump, run

LR, KAPPA = 1e-3, 1.0
erf = np.frompyfunc(math.erf, 1, 1)


def resilience(p, c):
    pre = c @ p["R.w1"].T + p["R.b1"]
    hidden = 0.5 * pre * (1.0 + erf(pre / math.sqrt(2.0)).astype(np.float64))
    z = (hidden @ p["R.w2"].T + p["R.b2"])[..., 0]
    return np.clip(np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0)))), 0.1, 10.0)


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    p = {name: value.astype(np.float64) for (role, name), value in arrays.items() if role == "inputs"}
    names = sorted(name for name in p if name.startswith("param."))
    leading = np.zeros((len(names), 8))
    for j, name in enumerate(names):
        flat = p[name].reshape(-1)[:8]
        leading[j, : flat.size] = flat
    R = np.clip(resilience(p, leading), 0.1, 10.0)
    expected = {name: p[name] - LR * KAPPA / R[j] ** 2 * p["grad." + name.split(".")[1]]
                for j, name in enumerate(names)}
    return compare_with_reference(arrays, expected, 1e-12, "geometry/lior_optimizer_step")


if __name__ == "__main__":
    run(main)
