"""SIGTERM and SIGINT drain the server.

usage: drain.py term MODEL.lsa
  4 streams are running when SIGTERM comes: each still gets its whole
  stream, equal to the same request run before alone, and the server exits 0.
usage: drain.py timeout UNBOUNDED.lsa
  A stream that would run for ever (a model without a context limit) is
  running when SIGINT comes: while the server drains, a new request gets 503
  and /health says draining; after --drain-timeout the request is cancelled
  (its stream ends with an error event) and the server exits 1, saying why.
"""
import signal
import sys
import threading
import time

import httpx

from serve_util import Server, sse_events, watchdog


def stream(client, body, first, out):
    ids, done = [], False
    with client.stream("POST", "/v1/completions", json={**body, "stream": True}) as r:
        try:
            for ev in sse_events(r.iter_lines()):
                if ev is True:
                    done = True
                    break
                if "error" in ev:
                    out["error"] = ev["error"]
                    continue
                ids += ev["choices"][0]["token_ids"]
                first.set()
        except httpx.HTTPError as e:
            out["cut"] = type(e).__name__
    out["ids"], out["done"] = ids, done


def term(artifact):
    with Server(artifact) as srv:
        client = httpx.Client(base_url=srv.base, timeout=60)
        bodies = [{"prompt": [3 + i, 1, 4, 1, 5], "max_tokens": 100, "temperature": 0}
                  for i in range(4)]
        alone = [client.post("/v1/completions", json=b).json()["choices"][0]["token_ids"]
                 for b in bodies]
        firsts = [threading.Event() for _ in bodies]
        outs = [{} for _ in bodies]
        threads = [threading.Thread(target=stream, args=(client, b, f, o))
                   for b, f, o in zip(bodies, firsts, outs)]
        for t in threads:
            t.start()
        for f in firsts:
            assert f.wait(30)
        srv.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join()
        status = srv.proc.wait(timeout=60)
        for o, want in zip(outs, alone):
            assert o["done"] and o["ids"] == want and "error" not in o, (o, want)
        print("SIGTERM with 4 streams running: all 4 complete and equal to alone")
        assert "SIGTERM: draining" in srv.stderr(), srv.stderr()
        print("exit status:", status)


def timeout(artifact):
    with Server(artifact, "--max-context", "200000", "--kv-blocks", "10000",
                "--drain-timeout", "2") as srv:
        client = httpx.Client(base_url=srv.base, timeout=60)
        first, out = threading.Event(), {}
        t = threading.Thread(target=stream, args=(
            client, {"prompt": [1, 2, 3], "max_tokens": 150000, "temperature": 0}, first, out))
        t.start()
        assert first.wait(30)
        srv.proc.send_signal(signal.SIGINT)
        other = httpx.Client(base_url=srv.base, timeout=30)
        # The signal is handled asynchronously: wait until the server says so
        # (a busy machine can take a while), then send the late request.
        deadline = time.time() + 30
        while other.get("/health").json()["status"] != "draining":
            assert time.time() < deadline, "the server never started draining"
            time.sleep(0.02)
        r = other.post("/v1/completions", json={"prompt": [1, 2], "max_tokens": 2})
        e = r.json()["error"]
        assert r.status_code == 503 and e["code"] == "draining", (r.status_code, r.text)
        print("while draining: new request 503", e["code"])
        h = other.get("/health").json()
        assert h["status"] == "draining" and h["in_flight"] == 1, h
        print("while draining: health", h["status"], "in flight", h["in_flight"])
        other.close()
        status = srv.proc.wait(timeout=60)
        t.join(30)
        assert not t.is_alive() and out["ids"], out.get("error")
        print("after the drain timeout: the stream ended with an error event:",
              out["error"]["code"], "-", out["error"]["message"])
        assert "--drain-timeout passed" in srv.stderr(), srv.stderr()
        print("exit status:", status)


if __name__ == "__main__":
    watchdog(120)
    {"term": term, "timeout": timeout}[sys.argv[1]](sys.argv[2])
