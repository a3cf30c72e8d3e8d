"""Inputs and the numpy reference for test/Runtime/exec.test.

The graph is that of Inputs/test_entry.c:
  y = (x + w) + b;  present = concat(past, y) on dim 1;  count = mask.sum(1)

  exec_data.py weights DIR            writes w.npy, b.npy
  exec_data.py inputs DIR BATCH PAST  writes x.npy, past.npy, mask.npy
  exec_data.py check IN WEIGHTS OUT   compares OUT/*.npy with numpy, bit for bit
"""
import sys

import numpy as np


def weights(d):
    # -0.0, a denormal, a huge value: an add that is not IEEE-exact shows.
    np.save(f"{d}/w.npy", np.array([0.5, -1.25, 1e-40, 1e30], np.float32))
    np.save(f"{d}/b.npy", np.array([1.0, 0.1, -0.0, 7.0], np.float32))


def inputs(d, batch, past):
    rng = np.random.default_rng(batch * 100 + past)
    np.save(f"{d}/x.npy", rng.standard_normal((batch, 4)).astype(np.float32))
    np.save(f"{d}/past.npy", rng.standard_normal((batch, past, 4)).astype(np.float32))
    np.save(f"{d}/mask.npy", rng.integers(-1000, 1000, (batch, past + 1), dtype=np.int64))


def check(ind, wd, outd):
    x, past, mask = (np.load(f"{ind}/{n}.npy") for n in ("x", "past", "mask"))
    w, b = np.load(f"{wd}/w.npy"), np.load(f"{wd}/b.npy")
    y = (x + w) + b  # float32 throughout: one IEEE add at a time, as in C
    want = {
        "y": y,
        "present": np.concatenate([past, y[:, None, :]], axis=1),
        "count": mask.sum(axis=1, dtype=np.int64),
    }
    for name, e in want.items():
        a = np.load(f"{outd}/{name}.npy")
        same = a.dtype == e.dtype and a.shape == e.shape and a.tobytes() == e.tobytes()
        print(f"{name} {'bit-exact' if same else 'DIFFERS'} {a.dtype} {list(a.shape)}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "weights":
        weights(*args)
    elif cmd == "inputs":
        inputs(args[0], int(args[1]), int(args[2]))
    else:
        check(*args)
