"""Checks compiled sums bit for bit against the numerics contract.

Runs Inputs/sums.onnxtxt (compiled to ARTIFACT) through lockstep-run exec
and recomputes every output in NumPy by the contract (DESIGN.md): chunks
of width C from index 0, each folded left to right from +0.0 with
p = fma(a, b, p) (dot products) or p = p + x (sums), then the partials
folded left to right. The widths are the ones lockstep-canonical-reductions
documents: 64 for a dynamic length, and for a static length its largest
divisor in [64, 256] (1000: 250).

fma(a, b, p) is computed as float32(float64(a)·float64(b) + float64(p)): the
product of two floats is exact in float64, so only the sum is rounded twice
(to float64, then float32), which differs from one rounding only when the
float64 sum lies exactly halfway between two floats: the script checks that
this never happens on its data, so a mismatch is the compiler's.
"""
import os
import subprocess
import sys

import numpy as np

f32, f64 = np.float32, np.float64


def fma_col(a, b, p):
    """fma over vectors, and whether any float64 sum was a float32 tie."""
    s = a.astype(f64) * b.astype(f64) + p.astype(f64)
    r = s.astype(f32)
    # A tie: s is exactly halfway between r and its neighbour.
    other = np.nextafter(r, np.where(s > r.astype(f64), np.inf, -np.inf).astype(f32))
    tie = np.any((s - r.astype(f64)) == (other.astype(f64) - s))
    return r, tie


def contract_matmul(x, w, C):
    rows, L = x.shape
    acc = np.zeros((rows, w.shape[1]), f32)
    ties = False
    for j0 in range(0, L, C):
        p = np.zeros_like(acc)
        for k in range(j0, min(j0 + C, L)):
            p, t = fma_col(np.repeat(x[:, k:k + 1], w.shape[1], 1), np.tile(w[k], (rows, 1)), p)
            ties |= t
        acc = (acc + p).astype(f32)
    return acc, ties


def contract_sum(x, C):
    rows, L = x.shape
    acc = np.zeros(rows, f32)
    for j0 in range(0, L, C):
        p = np.zeros(rows, f32)
        for k in range(j0, min(j0 + C, L)):
            p = (p + x[:, k]).astype(f32)
        acc = (acc + p).astype(f32)
    return acc.reshape(rows, 1)


def main():
    artifact, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    rows, k, n = 5, 700, 300
    ins = {
        "X": rng.uniform(-1, 1, (rows, k)).astype(f32),
        "W": rng.uniform(-1, 1, (k, 24)).astype(f32),
        "X2": rng.uniform(-1, 1, (rows, 1000)).astype(f32),
        "W2": rng.uniform(-1, 1, (1000, 8)).astype(f32),
        "S": rng.uniform(-1, 1, (rows, n)).astype(f32),
        "X3": rng.uniform(-1, 1, (rows, 1000)).astype(f32),
        "X4": rng.uniform(-1, 1, (2, 1000)).astype(f32),
        "W3": rng.uniform(-1, 1, (45, 1000)).astype(f32),
        "W5": rng.uniform(-1, 1, (1000, 13)).astype(f32),
        "W6": rng.uniform(-1, 1, (1000, 200)).astype(f32),
        "X5": rng.uniform(-1, 1, (12, 1000)).astype(f32),
    }
    cmd = ["lockstep-run", "exec", artifact, "--output-dir", work]
    for name, v in ins.items():
        np.save(os.path.join(work, name + ".npy"), v)
        cmd += ["--input", f"{name}={os.path.join(work, name + '.npy')}"]
    subprocess.run(cmd, check=True)
    y, t1 = contract_matmul(ins["X"], ins["W"], 64)
    y2, t2 = contract_matmul(ins["X2"], ins["W2"], 250)
    y3, t3 = contract_matmul(ins["X3"], ins["W3"].T, 250)
    y4, t4 = contract_matmul(ins["X4"], ins["W3"].T, 250)
    y5, t5 = contract_matmul(ins["X4"], ins["W5"], 250)
    y6, t6 = contract_matmul(ins["X2"], ins["W6"], 250)
    y7, t7 = contract_matmul(ins["X5"], ins["W6"], 250)
    y8, t8 = contract_matmul(ins["X5"], ins["W3"].T, 250)
    if t1 or t2 or t3 or t4 or t5 or t6 or t7 or t8:
        print("the float64 emulation of fma met a tie: change the seed")
        return 1
    want = {"Y": y, "Y2": y2, "T": contract_sum(ins["S"], 64), "Y3": y3, "Y4": y4,
            "Y5": y5, "Y6": y6, "Y7": y7, "Y8": y8}
    bad = 0
    for name, ref in want.items():
        got = np.load(os.path.join(work, name + ".npy"))
        same = np.array_equal(got.view(np.uint32), ref.view(np.uint32))
        # The plain left-to-right fold differs from the chunked one: the
        # check could tell a compiler that ignored the chunks.
        print(f"{name}: {'identical' if same else 'DIFFERENT'} to the contract "
              f"({ref.size} values)")
        bad += not same
    seq = np.zeros(rows, f32)
    for kk in range(n):
        seq = (seq + ins["S"][:, kk]).astype(f32)
    print("unchunked sum differs from the contract:",
          not np.array_equal(seq.reshape(rows, 1), want["T"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
