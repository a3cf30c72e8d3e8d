"""A load test that stops by itself: 64 concurrent streaming clients on one
server, a quarter of them disconnecting after three tokens of a long
request. No request is lost or wrong: every client that stays gets its whole
stream (data: [DONE]) with the ids and fingerprint that the same request got
alone; the disconnected requests are cancelled and their KV blocks freed;
the server stays up (/health) and stops cleanly.

usage: load.py MODEL.lsa
"""
import json
import random
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from serve_util import Server, sse_events, watchdog

CLIENTS = 64


def main():
    artifact = sys.argv[1]
    watchdog(150)
    rng = random.Random(64)
    prompts = [[rng.randrange(1, 200) for _ in range(rng.randrange(2, 24))] for _ in range(8)]
    kinds = [{"max_tokens": 24, "temperature": 0},
             {"max_tokens": 24, "temperature": 0.7, "top_p": 0.95, "seed": 5}]
    with Server(artifact) as srv:
        client = httpx.Client(base_url=srv.base, timeout=60,
                              limits=httpx.Limits(max_connections=CLIENTS + 8))
        baseline = {}
        for p in range(len(prompts)):
            for k in range(len(kinds)):
                r = client.post("/v1/completions", json={"prompt": prompts[p], **kinds[k]})
                c = r.json()["choices"][0]
                baseline[p, k] = (c["token_ids"], c["lockstep_fingerprint"])

        def run(i):
            p, k = i % len(prompts), (i // len(prompts)) % len(kinds)
            leaves = i % 4 == 3
            body = {"prompt": prompts[p], **kinds[k], "stream": True}
            if leaves:
                body["max_tokens"] = 100
            time.sleep(rng.uniform(0, 0.05))
            ids, fp, finish, done = [], None, None, False
            with client.stream("POST", "/v1/completions", json=body) as r:
                if r.status_code != 200:
                    return ("status", r.status_code, r.read())
                for ev in sse_events(r.iter_lines()):
                    if ev is True:
                        done = True
                        break
                    c = ev["choices"][0]
                    ids += c["token_ids"]
                    if c["finish_reason"]:
                        finish, fp = c["finish_reason"], c["lockstep_fingerprint"]
                    if leaves and len(ids) == 3:
                        return ("left",)  # closes the connection mid-stream
            if (ids, fp) != baseline[p, k] or finish != "length" or not done:
                return ("wrong", i, ids, fp, finish, done, baseline[p, k])
            return ("ok",)

        t0 = time.time()
        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            results = list(pool.map(run, range(CLIENTS)))
        secs = time.time() - t0
        ok = sum(r[0] == "ok" for r in results)
        left = sum(r[0] == "left" for r in results)
        for r in results:
            if r[0] not in ("ok", "left"):
                print("FAILED:", r)
        # The cancellations land once the server's next writes fail.
        deadline = time.time() + 30
        while True:
            h = client.get("/health").json()
            if h["in_flight"] == 0 or time.time() > deadline:
                break
            time.sleep(0.05)
        print("load: %d streaming clients in %.1f s: %d complete and equal to alone, %d "
              "disconnected midway (%d requests cancelled); largest batch %d" %
              (CLIENTS, secs, ok, left, h["requests_cancelled"], h["largest_batch"]))
        assert ok == CLIENTS - CLIENTS // 4 and left == CLIENTS // 4, results
        assert h["status"] == "ok" and h["in_flight"] == 0, h
        assert h["free_kv_blocks"] == h["kv_blocks"], h
        assert h["requests_cancelled"] >= 1, h
        assert h["largest_batch"] > 1, h
        print("health after: %s, in flight %d, all KV blocks free" % (h["status"], h["in_flight"]))

        # A client that reads nothing: its request still finishes in the
        # engine (the tokens wait in the request's queue and the socket's
        # buffers), other requests are served meanwhile, and the client gets
        # its whole stream when it reads.
        slow = socket.create_connection((srv.host, srv.port), timeout=30)
        body = json.dumps({"prompt": prompts[0], "max_tokens": 100, "temperature": 0,
                           "stream": True}).encode()
        slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        finished = h["requests_finished"]
        deadline = time.time() + 30
        while client.get("/health").json()["requests_finished"] < finished + 1:
            assert time.time() < deadline, "the unread request did not finish"
            time.sleep(0.02)
        others = [client.post("/v1/completions", json={"prompt": prompts[p], **kinds[0]}).json()
                  for p in range(len(prompts))]
        assert [o["choices"][0]["token_ids"] for o in others] == \
            [baseline[p, 0][0] for p in range(len(prompts))]
        data = b""
        while b"data: [DONE]" not in data:
            chunk = slow.recv(65536)
            assert chunk, data[-200:]
            data += chunk
        slow.close()
        n = data.count(b'"finish_reason":null')
        print("a client that reads nothing: its request finished in the engine, 8 others "
              "served meanwhile, then it read all %d tokens" % n)
        assert n == 100
        client.close()
        print("exit status:", srv.stop())


if __name__ == "__main__":
    main()
