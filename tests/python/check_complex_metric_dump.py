"""Loads a `phasebench dump` of geometry/complex_metric with numpy and recomputes Phi and Theta
independently, the way Liorhybrid's k1_wedge and k2_tensor compute them (vectorized numpy in
fp64, one einsum per (mu, nu) over all items, as the original loop):

    gamma_mn = 1/2 (gamma[mu] @ gamma[nu] -+ gamma[nu] @ gamma[mu])
    Phi[..., mu, nu] / Theta[..., mu, nu] = einsum('...i,ij,...j->...', psi, gamma_mn, psi)

and once more with the seed's batched contraction 'bki,mnij,bkj->bkmn' over G[mu,nu,S,S] (the
seed writes 'bni,mnij,bnj->bnmn', which numpy rejects: n is used twice). Exits 0 and prints
"agree" when both match the dump's fp64 reference to round-off.
Usage: check_complex_metric_dump.py DUMP_DIR"""

import numpy as np

from dump_check import compare_with_reference, load_dump, run


def per_pair(gamma, psi, sign):
    d = gamma.shape[0]
    out = np.zeros(psi.shape[:-1] + (d, d))
    for mu in range(d):
        for nu in range(d):
            gamma_mn = 0.5 * (gamma[mu] @ gamma[nu] + sign * gamma[nu] @ gamma[mu])
            out[..., mu, nu] = np.einsum("...i,ij,...j->...", psi, gamma_mn, psi)
    return out


def batched(gamma, psi, sign):
    products = np.einsum("mij,njk->mnik", gamma, gamma)
    g = 0.5 * (products + sign * products.transpose(1, 0, 2, 3))
    return np.einsum("bki,mnij,bkj->bkmn", psi, g, psi)


def main(dump_dir: str) -> int:
    _, arrays = load_dump(dump_dir)
    gamma = arrays[("inputs", "gamma")].astype(np.float64)
    psi = arrays[("inputs", "psi")].astype(np.float64)
    loop = {"phi": per_pair(gamma, psi, -1.0), "theta": per_pair(gamma, psi, +1.0)}
    seed = {"phi": batched(gamma, psi, -1.0), "theta": batched(gamma, psi, +1.0)}
    failed = compare_with_reference(arrays, loop, 1e-12, "the original loop", show_each=True)
    return failed or compare_with_reference(arrays, seed, 1e-12, "the seed's batched einsum", show_each=True)


if __name__ == "__main__":
    run(main)
