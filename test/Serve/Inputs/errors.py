"""Bad requests get clean OpenAI-style JSON errors and the server stays up:
bad JSON, wrong types, text without a tokenizer, a request longer than the
model's context, a huge body (413), an unknown route (404), a full queue
(429). Each line printed is one case: its status, error code and param.

usage: errors.py MODEL.lsa
"""
import sys
import threading

import httpx

from serve_util import Server, watchdog


def check_error(r, status, code=None, param=None):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.headers
    e = r.json()["error"]
    assert set(e) == {"message", "type", "param", "code"}, e
    assert e["message"] and e["type"], e
    if code is not None:
        assert e["code"] == code, e
    if param is not None:
        assert e["param"] == param, e
    return e


def main():
    artifact = sys.argv[1]
    watchdog(120)
    with Server(artifact, "--max-body-bytes", "65536") as srv:
        c = httpx.Client(base_url=srv.base, timeout=30)
        post = lambda body: c.post("/v1/completions", content=body,
                                   headers={"content-type": "application/json"})

        e = check_error(post(b"{bad"), 400, "invalid_json")
        print("bad json:", e["code"], e["param"])
        check_error(post(b"[1, 2]"), 400, "invalid_json")
        check_error(post(b'{"prompt": "\xff\xfe"}'), 400, "invalid_json")
        print("not an object, invalid UTF-8: 400 invalid_json")
        check_error(c.post("/v1/completions", json={"max_tokens": 3}), 400,
                    "missing_required_parameter", "prompt")
        print("no prompt: 400 prompt")

        # A known field with a wrong type or value names itself in param.
        base = {"prompt": [1, 2, 3], "max_tokens": 4}
        wrong = [("max_tokens", "16"), ("max_tokens", 0), ("max_tokens", 2.5),
                 ("temperature", "hot"), ("temperature", 3), ("top_p", 0), ("top_k", "5"),
                 ("seed", "x"), ("logprobs", 99), ("logprobs", "3"), ("stream", "yes"),
                 ("stop", [1.5]), ("stop", {"a": 1}), ("prompt", {"a": 1}), ("prompt", [-1]),
                 ("prompt", []), ("prompt", [[1, 2], [3, "x"]]), ("n", 2), ("echo", True),
                 ("stream_options", {"include_usage": 1}), ("model", 7)]
        for field, value in wrong:
            e = check_error(c.post("/v1/completions", json={**base, field: value}), 400)
            want = "stream_options.include_usage" if field == "stream_options" else field
            assert e["param"] == want, (field, value, e)
        print("wrong types and values: %d fields, each 400 naming its param" % len(wrong))

        r = c.post("/v1/completions", json={**base, "temperature": 0,
                                            "frobnicate": {"x": [1]}, "logit_bias": {}})
        assert r.status_code == 200 and len(r.json()["choices"][0]["token_ids"]) == 4, r.text
        print("unknown fields: ignored, 200")

        for field, value in [("prompt", "Hello"), ("prompt", ["Hello"]), ("stop", "END")]:
            e = check_error(c.post("/v1/completions", json={**base, field: value}), 400,
                            "no_tokenizer", field)
            assert "no tokenizer" in e["message"], e
        print("text without a tokenizer: 400 no_tokenizer")

        e = check_error(c.post("/v1/completions", json={"prompt": [10 ** 6], "max_tokens": 2}),
                        400)
        assert "outside the vocabulary" in e["message"], e
        print("token id outside the vocabulary: 400")

        e = check_error(c.post("/v1/completions", json={"prompt": [1] * 120, "max_tokens": 20}),
                        400, "context_length_exceeded", "max_tokens")
        assert "maximum context is 128 tokens" in e["message"], e
        print("too long:", e["code"], "-", e["message"])

        # A body over --max-body-bytes (64 KiB): read, refused.
        e = check_error(post(b'{"prompt": [' + b"1, " * 30000 + b"1]}"), 413, "payload_too_large")
        print("huge body: 413", e["code"])

        for method, path in [("GET", "/v1/chat/completions"), ("GET", "/v1/completions"),
                             ("POST", "/v1/models"), ("GET", "/")]:
            check_error(c.request(method, path), 404, "not_found")
        print("unknown routes: 404 not_found")

        h = c.get("/health")
        assert h.status_code == 200 and h.json()["status"] == "ok" and h.json()["in_flight"] == 0
        print("alive after:", h.json()["status"])
        c.close()
        print("exit status:", srv.stop())

    # A queue of one: of 16 requests sent at once, the first runs and the
    # others that arrive while it runs get 429.
    with Server(artifact, "--max-queue", "1") as srv:
        c = httpx.Client(base_url=srv.base, timeout=60)
        barrier = threading.Barrier(16)
        answers = [None] * 16

        def send(i):
            barrier.wait()
            answers[i] = c.post("/v1/completions",
                                json={"prompt": [1, 2, 3, 4], "max_tokens": 120, "temperature": 0})

        threads = [threading.Thread(target=send, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = [r for r in answers if r.status_code == 200]
        full = [r for r in answers if r.status_code == 429]
        assert len(ok) + len(full) == 16, [r.status_code for r in answers]
        assert ok and full, [r.status_code for r in answers]
        for r in full:
            check_error(r, 429, "queue_full")
        ids = {tuple(r.json()["choices"][0]["token_ids"]) for r in ok}
        assert len(ids) == 1 and len(next(iter(ids))) == 120, ids
        print("queue of 1: 16 at once, some 200 (all equal), the rest 429 queue_full")
        h = c.get("/health").json()
        assert h["status"] == "ok" and h["refused_queue_full"] == len(full), h
        print("alive after:", h["status"])
        c.close()
        print("exit status:", srv.stop())


if __name__ == "__main__":
    main()
