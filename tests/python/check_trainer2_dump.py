"""Loads a `phasebench dump` of trainer2/window or trainer2/train_step with numpy and recomputes its
outputs independently, from the math of reference/trainer2/trainer2.hpp written the way Liorhybrid's
PyTorch code computes it: whole-batch tensor expressions in fp64 (broadcasting, einsum, softmax
with the max subtracted, np.roll-free padded stencil, index_add), not the C++ reference's loops.

    window:     W steps of  R = mean|F|;  q' = rotor(q + nu);  act = softmax(-beta R spd) @ states;
                dlior = R s;  accumulators and path buffer;  Stormer-Verlet field step
    train_step: free window, nudge, restored nudged window, metric / rotor / memory update

Exits 0 and prints "agree" when every reference output matches to fp64 round-off (1e-10 relative
L2). Usage: check_trainer2_dump.py DUMP_DIR"""

import numpy as np

from dump_check import compare_with_reference, load_dump, run

# ---- constants: reference/trainer2/trainer2.hpp (n = 8, eps = 1e-8, beta = 5.0, dt = 0.005, ...) ---
N = 8                 # n, coordinate dim
EPS = 1e-8            # eps
BETA = 5.0            # retrieval beta
DT = 0.005            # dt
MASS = 1.0            # m
HBAR = 0.1            # hbar
SPRING = 0.01         # k
ROTOR_K = 6           # rotor_k learnt angles
BETA_NUDGE = 1e-3
ETA_UPDATE = 1e-2
NUDGE_SCALE = 0.1
ETA = ETA_UPDATE / BETA_NUDGE  # training step 4: eta = eta_update / beta_nudge = 10
TOLERANCE = 1e-10

# ---- geometry state: "Layer l, pair p acts on a = (2p + l) mod n, b = (a+1) mod n" ---------------
PPL = N // 2                     # "ppl = n/2 = 4 pairs per layer"
LAYERS = -(-ROTOR_K // PPL)      # "L = ceil(rotor_k/ppl) = 2 layers"
PAIR_A = np.array([[(2 * p + layer) % N for p in range(PPL)] for layer in range(LAYERS)])
PAIR_B = (PAIR_A + 1) % N        # PAIR_A[l, p], PAIR_B[l, p]; flattened pair k = l*ppl + p


def rotor_apply(x, theta):
    """`rotor_apply(x, theta)`: for each layer in order, every pair of the layer at once,
    x_a' = cos x_a - sin x_b, x_b' = sin x_a + cos x_b. x [..., n]; returns a new array."""
    x = np.array(x, dtype=np.float64, copy=True)
    angles = theta.reshape(LAYERS, PPL)
    for layer in range(LAYERS):
        a, b = PAIR_A[layer], PAIR_B[layer]
        c, s = np.cos(angles[layer]), np.sin(angles[layer])
        xa, xb = x[..., a], x[..., b]
        x[..., a], x[..., b] = c * xa - s * xb, s * xa + c * xb
    return x


def curvature(F, batch):
    """Step 1: R = mean(|F|) over every complex element of the field, broadcast to [B].
    F is stored [Nx, Ny, D, D, 2] as (re, im)."""
    return np.full(batch, np.abs(F[..., 0] + 1j * F[..., 1]).mean())


def retrieval_batch(O, bank_coord, bank_state):
    """Step 2: coords = O[..., :n]; q = mean_T coords; q_state = mean_T O; candidates
    concat_K(coords, bank_coord) [B,K,n] and concat_K(O, bank_state) [B,K,d], K = T + C."""
    B = O.shape[0]
    coords = O[..., :N]
    q, q_state = coords.mean(axis=1), O.mean(axis=1)
    cand_coord = np.concatenate([coords, np.broadcast_to(bank_coord, (B,) + bank_coord.shape)], axis=1)
    cand_state = np.concatenate([O, np.broadcast_to(bank_state, (B,) + bank_state.shape)], axis=1)
    return q, q_state, cand_coord, cand_state


def metric_speed(g, x):
    """sqrt(max(0, sum_i g_i x_i^2) + eps) over the last axis (steps 4 and 5)."""
    return np.sqrt(np.maximum(0.0, (g * x * x).sum(axis=-1)) + EPS)


def retrieval(q_rot, cand_coord, cand_state, g, R):
    """Step 4: u_bk = cand_coord_bk - q'_b; spd_bk = sqrt(max(0, sum g u^2) + eps);
    cost = R_b spd_bk; w_b = softmax_k(-beta cost_b); act_b = sum_k w_bk cand_state_bk."""
    spd = metric_speed(g, cand_coord - q_rot[:, None, :])           # [B,K]
    logits = -BETA * (R[:, None] * spd)
    w = np.exp(logits - logits.max(axis=1, keepdims=True))           # torch.softmax, stable form
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("bk,bkd->bd", w, cand_state)


def lior_step(v, R, g):
    """Step 5: s_b = sqrt(max(0, sum_i g_i v_bi^2) + eps); dlior_b = R_b s_b."""
    s = metric_speed(g, v)
    return s, R * s


def field_force(F, F_eq):
    """Step 9: Force(F) = (hbar^2/2m) Lap(F) - k (F - F_eq), Lap the 5-point Laplacian over the
    spatial axes (Nx, Ny) with zero padding, each real component of each D*D channel separately."""
    padded = np.pad(F, [(1, 1), (1, 1)] + [(0, 0)] * (F.ndim - 2))
    lap = (padded[2:, 1:-1] + padded[:-2, 1:-1] + padded[1:-1, 2:] + padded[1:-1, :-2] - 4 * F)
    return (HBAR ** 2 / (2 * MASS)) * lap - SPRING * (F - F_eq)


def field_step(F, P, F_eq):
    """Step 9, Stormer-Verlet: P += dt/2 Force(F); F += dt/m P; P += dt/2 Force(F)."""
    P = P + (DT / 2) * field_force(F, F_eq)
    F = F + (DT / MASS) * P
    P = P + (DT / 2) * field_force(F, F_eq)
    return F, P


def run_window(O, bank_coord, bank_state, g, theta, F, P, F_eq, steps, nu=None):
    """"One step t of run_window", W times; returns the window outputs ("Outputs of a window"),
    the final F and P, and the retrieval query (q, q_state) the memory update reads."""
    B = O.shape[0]
    lior_acc = R_acc = spd_acc = 0.0
    vel_acc = np.zeros((B, N))
    path = np.zeros((steps, N + 3))
    progress = np.zeros((steps, 3))
    for t in range(steps):
        R = curvature(F, B)                                                           # 1
        q, q_state, cand_coord, cand_state = retrieval_batch(O, bank_coord, bank_state)  # 2 (rebuilt each step, as the original)
        v = q.copy()                                                                  # 3: v = q before the nudge
        q_rot = rotor_apply(q if nu is None else q + nu, theta)                       # 3: q' = rotor(q + nu)
        act = retrieval(q_rot, cand_coord, cand_state, g, R)                          # 4
        s, dlior = lior_step(v, R, g)                                                 # 5
        lior_acc += dlior.mean()                                                      # 6
        R_acc += R.mean()
        spd_acc += s.mean()
        vel_acc += v
        mean_v = v.mean(axis=0)                                                       # 7: path row
        path[t] = np.concatenate([mean_v, [R.mean(), dlior.mean(), np.linalg.norm(mean_v)]])
        progress[t] = np.array([lior_acc, R_acc, spd_acc]) / (t + 1)                 # 8: the host's reads
        F, P = field_step(F, P, F_eq)                                                 # 9
    out = {"lior": lior_acc / steps, "R": R_acc / steps, "spd": spd_acc / steps, "act": act,
           "vbar": vel_acc / steps, "path": path, "progress": progress, "F": F, "P": P}
    return out, q, q_state


def metric_update(g, u, theta, delta):
    """Training step 5-6: u_r = rotor_apply(u, theta);
    g <- clamp(g + eta Delta u_r^2 / (sum u_r^2 + 1e-8), 0.01, 100)."""
    u_r = rotor_apply(u, theta)
    return np.clip(g + ETA * delta * u_r ** 2 / ((u_r ** 2).sum() + 1e-8), 0.01, 100.0)


def rotor_update(theta, u, delta):
    """Training step 7, the vectorized form (gathered pairs, one index_add): for each flattened
    pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6, theta_k += 0.01 eta (-Delta)
    atan2(u_j, u_i) r; then theta wrapped to [-pi, pi) as (theta + pi) mod 2pi - pi."""
    k = np.arange(ROTOR_K)
    i, j = PAIR_A.reshape(-1)[k], PAIR_B.reshape(-1)[k]
    r = np.hypot(u[i], u[j])
    step = np.where(r >= 1e-6, 0.01 * ETA * (-delta) * np.arctan2(u[j], u[i]) * r, 0.0)
    theta = theta.copy()
    np.add.at(theta, k, step)
    return np.mod(theta + np.pi, 2 * np.pi) - np.pi


def memory_update(bank_coord, bank_state, pointer, q, q_state):
    """Training step 8: the last min(C, B) rows of the free phase's (q, q_state) written into the
    ring at its write pointer, which advances modulo C."""
    C, B = bank_coord.shape[0], q.shape[0]
    count = min(C, B)
    rows = (pointer + np.arange(count)) % C
    bank_coord, bank_state = bank_coord.copy(), bank_state.copy()
    bank_coord[rows], bank_state[rows] = q[B - count:], q_state[B - count:]
    return bank_coord, bank_state, (pointer + count) % C


def train_step(inputs, steps):
    """"Training step (two-phase contrastive update)" 1-8."""
    O, target = inputs["O"], inputs["target"]
    g, theta = inputs["g"], inputs["theta"]
    bank_coord, bank_state = inputs["bank_coord"], inputs["bank_state"]
    F0 = inputs["F0"]
    P0 = np.zeros_like(F0)
    # 1: snapshot (every array here is immutable input) and the free window, F_eq = F0, P0 = 0.
    free, q, q_state = run_window(O, bank_coord, bank_state, g, theta, F0, P0, F0, steps)
    nu = NUDGE_SCALE * (target - q)                                                   # 2
    nudged, _, _ = run_window(O, bank_coord, bank_state, g, theta, F0, P0, F0, steps, nu)  # 3: restored
    delta = nudged["lior"] - free["lior"]                                             # 4
    u = free["vbar"].mean(axis=0)                                                     # 5
    new_g = metric_update(g, u, theta, delta)                                         # 6 (theta before 7)
    new_theta = rotor_update(theta, u, delta)                                         # 7
    new_coord, new_state, pointer = memory_update(bank_coord, bank_state,             # 8
                                                  int(inputs["bank_pointer"]), q, q_state)
    expected = {f"free_{k}": v for k, v in free.items()}
    expected.update({f"nudged_{k}": v for k, v in nudged.items()})
    expected.update({"g": new_g, "theta": new_theta, "bank_coord": new_coord,
                     "bank_state": new_state, "bank_pointer": np.float64(pointer)})
    return expected, delta


def main(dump_dir: str) -> int:
    manifest, raw = load_dump(dump_dir)
    workload = manifest["workload"]
    inputs = {name: value.astype(np.float64) for (role, name), value in raw.items() if role == "inputs"}
    steps = int(raw[("inputs", "steps")])
    print(f"{workload} ({manifest['shape']}, seed {manifest['seed']})")
    if workload == "trainer2/window":
        F0 = inputs["F0"]
        expected, _, _ = run_window(inputs["O"], inputs["bank_coord"], inputs["bank_state"], inputs["g"],
                                    inputs["theta"], F0, np.zeros_like(F0), F0, steps)
    elif workload == "trainer2/train_step":
        expected, delta = train_step(inputs, steps)
        # The nudge moves only the retrieval query, so lior (from v and R) is the same in both
        # windows: Delta = 0 and g, theta change only by the clamp and the wrap.
        print(f"  Delta = lior_nudged - lior_free = {delta:.3e}")
    else:
        print(f"check_trainer2_dump.py: not a trainer2 window workload: {workload}")
        return 2
    return compare_with_reference(raw, expected, TOLERANCE, workload, show_each=True)


if __name__ == "__main__":
    run(main)
