"""Prints N prompts as JSON lines: token ids in [0, 256) from a seeded
generator, of lengths 1 to 14, for lit tests of lockstep-run generate."""
import json
import sys

import numpy as np

n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(seed)
for i in range(n):
    print(json.dumps({"ids": rng.integers(0, 256, int(rng.integers(1, 15))).tolist()}))
