"""Batch invariance over HTTP: N prompts sent alone, one at a time, then the
same N from N concurrent clients that arrive at random times, greedy and
seeded-sampled. Every completion (ids) and every logits fingerprint must be
identical; /health must show that the concurrent clients shared steps.
Prints one summary line.

With --control (an artifact compiled with --reduction-policy=adaptive, the
negative control, whose reductions split by batch size) the comparison must
find differences instead: a comparison that cannot fail proves nothing.

With --kv-blocks K the server's KV cache is too small for the concurrent
clients: the scheduler preempts and resumes requests (/health counts them),
and nothing may change either.

usage: invariance.py MODEL.lsa [N] [--control] [--kv-blocks K]
"""
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from serve_util import Server, watchdog


def main():
    args = [a for a in sys.argv[1:] if a != "--control"]
    control = "--control" in sys.argv
    server_args = []
    if "--kv-blocks" in args:
        k = args.index("--kv-blocks")
        server_args = args[k:k + 2]
        del args[k:k + 2]
    artifact = args[0]
    n = int(args[1]) if len(args) > 1 else 16
    watchdog(150)
    rng = random.Random(19)
    prompts = [[rng.randrange(1, 200) for _ in range(rng.randrange(3, 40))] for _ in range(n)]
    bodies = []
    for i, p in enumerate(prompts):
        max_tokens = rng.randrange(8, 33)
        bodies.append({"prompt": p, "max_tokens": max_tokens, "temperature": 0})
        bodies.append({"prompt": p, "max_tokens": max_tokens, "temperature": 0.8, "top_p": 0.9,
                       "seed": 1000 + i})
    with Server(artifact, *server_args) as srv:
        client = httpx.Client(base_url=srv.base, timeout=60)

        def complete(body):
            r = client.post("/v1/completions", json=body)
            assert r.status_code == 200, (r.status_code, r.text)
            c = r.json()["choices"][0]
            return c["token_ids"], c["lockstep_fingerprint"]

        alone = [complete(b) for b in bodies]
        batch_alone = client.get("/health").json()["largest_batch"]
        assert batch_alone == 1, batch_alone

        # n clients; random arrival: each request waits 0-100 ms before it is
        # sent.
        # With a small cache (--kv-blocks) they arrive within 10 ms, so that
        # they overlap and the cache must preempt even on a busy machine.
        spread = 0.01 if server_args else 0.1
        delays = [rng.uniform(0, spread) for _ in bodies]

        def late(i):
            time.sleep(delays[i])
            return complete(bodies[i])

        t0 = time.time()
        with ThreadPoolExecutor(max_workers=n) as pool:
            together = list(pool.map(late, range(len(bodies))))
        secs = time.time() - t0
        health = client.get("/health").json()
        same_ids = sum(a[0] == b[0] for a, b in zip(alone, together))
        same_fp = sum(a[1] == b[1] for a, b in zip(alone, together))
        if control:
            print("negative control (adaptive reductions), %d concurrent clients (largest batch "
                  "%d): %d/%d fingerprints differ from alone" %
                  (n, health["largest_batch"], len(bodies) - same_fp, len(bodies)))
            assert same_fp < len(bodies), "the comparison did not catch the negative control"
        else:
            for i, (a, b) in enumerate(zip(alone, together)):
                if a != b:
                    print("MISMATCH request %d (%s): alone %s, concurrent %s" %
                          (i, "greedy" if i % 2 == 0 else "seeded", a, b))
            print("invariance over HTTP: %d prompts x (greedy, seeded) = %d requests, alone vs "
                  "%d concurrent clients with random arrivals (largest batch %d, %.1f s%s): "
                  "%d/%d completions and %d/%d fingerprints identical" %
                  (n, len(bodies), n, health["largest_batch"], secs,
                   ", %s KV blocks, %d preemptions" % (server_args[1], health["preemptions"])
                   if server_args else "", same_ids, len(bodies), same_fp, len(bodies)))
            assert same_ids == same_fp == len(bodies)
            if server_args:
                assert health["preemptions"] > 0, "the small cache never preempted"
        assert health["largest_batch"] > 1, "the concurrent clients never shared a step"
        assert health["in_flight"] == 0 and health["free_kv_blocks"] == health["kv_blocks"]
        client.close()
        print("exit status:", srv.stop())


if __name__ == "__main__":
    main()
