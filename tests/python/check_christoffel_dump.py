"""Loads a `phasebench dump` of geometry/christoffel with numpy and recomputes Gamma independently
(vectorized numpy, fp64), the way the original PyTorch code (models/manifold.py) computes it:
    G(x) = R(x)^2 (L L^T + 0.1 tanh((H + H^T)/2) + 1e-4 I), R and H small MLPs with exact GELU;
    dg[..., a, b, rho] = (G(x + e e_rho) - G(x - e e_rho)) / 2e from cloned inputs;
    Gamma = 0.5 einsum('...lr,...mnr->...lmn', inv(G), dg_nrm + dg_mrn - dg_mnr).
Exits 0 and prints "agree" when the dumped reference matches to fp64 round-off (the finite
differences amplify round-off by ~1/e = 1e4, hence 1e-9)."""

import math

import numpy as np

from dump_check import compare_with_reference, load_dump, run

E = 1e-4
erf = np.frompyfunc(math.erf, 1, 1)


def gelu(v):
    return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)).astype(np.float64))


def softplus(z):
    return np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0))))


def resilience(p, x):
    hidden = gelu(x @ p["R.w1"].T + p["R.b1"])
    z = (hidden @ p["R.w2"].T + p["R.b2"])[..., 0]
    return np.clip(softplus(z), 0.1, 10.0)


def metric(p, x):
    d = x.shape[-1]
    H = (gelu(x @ p["H.w1"].T + p["H.b1"]) @ p["H.w2"].T + p["H.b2"]).reshape(x.shape[:-1] + (d, d))
    h = 0.1 * np.tanh(0.5 * (H + np.swapaxes(H, -1, -2)))
    L = p["L"]
    R = resilience(p, x)
    return (R ** 2)[..., None, None] * (L @ L.T + h + 1e-4 * np.eye(d))


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    p = {name: value.astype(np.float64) for (role, name), value in arrays.items() if role == "inputs"}
    x = p["x"]
    d = x.shape[-1]
    columns = []
    for rho in range(d):
        plus, minus = x.copy(), x.copy()
        plus[..., rho] += E
        minus[..., rho] -= E
        columns.append((metric(p, plus) - metric(p, minus)) / (2 * E))
    dg = np.stack(columns, axis=-1)  # [..., a, b, rho]
    S = np.einsum("...nrm->...mnr", dg) + np.einsum("...mrn->...mnr", dg) - dg
    gamma = 0.5 * np.einsum("...lr,...mnr->...lmn", np.linalg.inv(metric(p, x)), S)
    return compare_with_reference(arrays, {"gamma": gamma}, 1e-9, "geometry/christoffel")


if __name__ == "__main__":
    run(main)
