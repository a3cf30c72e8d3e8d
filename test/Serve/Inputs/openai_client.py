"""The official openai client against `lockstep-run serve`: a completion of a
token-id prompt, the same streamed, logprobs, a seeded sampled completion, a
list of prompts and a token-id stop; each checked against `lockstep-run
generate` on the same artifact (ids and logits fingerprint, exactly).

usage: openai_client.py MODEL.lsa
"""
import json
import subprocess
import sys

import httpx
import openai

from serve_util import Server, watchdog

PROMPT = [5, 17, 3, 42, 8, 23, 11]


def generate(artifact, ids, max_new, *flags):
    """`lockstep-run generate` of one prompt: (generated ids, fingerprint)."""
    line = json.dumps({"ids": ids, "max_new_tokens": max_new})
    out = subprocess.run(["lockstep-run", "generate", artifact, "--prompts", "/dev/stdin", *flags],
                         input=line + "\n", capture_output=True, text=True, check=True, timeout=60)
    r = json.loads(out.stdout.splitlines()[0])
    assert r["status"] == "ok", r
    return r["generated"], r["fingerprint"]


def main():
    artifact = sys.argv[1]
    watchdog(120)
    with Server(artifact, "--model-name", "tiny") as srv:
        client = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0,
                               timeout=60)
        models = client.models.list()
        assert [m.id for m in models.data] == ["tiny"], models
        print("models:", [m.id for m in models.data])

        # A greedy completion of a token-id prompt.
        r = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8, temperature=0)
        c = r.choices[0]
        want_ids, want_fp = generate(artifact, PROMPT, 8)
        assert c.token_ids == want_ids, (c.token_ids, want_ids)
        assert c.lockstep_fingerprint == want_fp, (c.lockstep_fingerprint, want_fp)
        assert c.finish_reason == "length" and c.text == "" and c.index == 0
        assert r.system_fingerprint.startswith("lsa-") and r.system_fingerprint.endswith("-portable")
        assert r.usage.prompt_tokens == len(PROMPT) and r.usage.completion_tokens == 8
        assert r.object == "text_completion" and r.model == "tiny"
        print("completion: 8 ids and fingerprint equal to generate's:", c.lockstep_fingerprint)

        # The same, streamed: one chunk per token, then the finish.
        ids, finish, fp, chunks = [], None, None, 0
        for chunk in client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8,
                                               temperature=0, stream=True):
            chunks += 1
            ch = chunk.choices[0]
            ids += ch.token_ids
            if ch.finish_reason:
                finish, fp = ch.finish_reason, ch.lockstep_fingerprint
        assert ids == want_ids and fp == want_fp and finish == "length", (ids, fp, finish)
        assert chunks == 9, chunks
        print("stream: %d chunks, ids and fingerprint equal" % chunks)

        # logprobs: the top 3 of each position; greedy picks the first; the
        # numbers are the same bits on a second request.
        r1 = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8, temperature=0,
                                       logprobs=3)
        r2 = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8, temperature=0,
                                       logprobs=3)
        lp = r1.choices[0].logprobs
        assert lp.tokens == ["token_id:%d" % t for t in want_ids], lp.tokens
        assert len(lp.token_logprobs) == 8 and all(v <= 0 for v in lp.token_logprobs)
        for k, top in enumerate(lp.top_logprobs):
            assert len(top) == 3
            best = list(top.items())[0]
            assert best == (lp.tokens[k], lp.token_logprobs[k]), (top, lp.tokens[k])
            assert list(top.values()) == sorted(top.values(), reverse=True)
        assert r1.choices[0].logprobs == r2.choices[0].logprobs
        print("logprobs: top-3 of 8 tokens, greedy is the top, identical twice")

        # Seeded sampling: the same as generate's, the same twice, another
        # seed another completion.
        def sampled(seed):
            return client.completions.create(model="tiny", prompt=PROMPT, max_tokens=12,
                                             temperature=0.9, top_p=0.95, seed=seed).choices[0]
        a, b, other = sampled(7), sampled(7), sampled(8)
        g_ids, g_fp = generate(artifact, PROMPT, 12, "--temperature", "0.9", "--top-p", "0.95",
                               "--seed", "7")
        assert a.token_ids == b.token_ids == g_ids, (a.token_ids, b.token_ids, g_ids)
        assert a.lockstep_fingerprint == b.lockstep_fingerprint == g_fp
        assert other.token_ids != a.token_ids
        print("seeded: seed 7 equal to generate's twice, seed 8 differs")

        # A list of prompts: one choice each, in order.
        r = client.completions.create(model="tiny", prompt=[PROMPT, [9, 9, 9]], max_tokens=8,
                                      temperature=0)
        assert [c.index for c in r.choices] == [0, 1]
        assert r.choices[0].token_ids == want_ids
        assert r.choices[0].lockstep_fingerprint == want_fp
        print("two prompts: two choices, the first equal to the single one")

        # Two prompts streamed, with logprobs and a usage chunk: the choices'
        # chunks interleave, each its own ids; the usage comes last.
        ids, lps, usage = {0: [], 1: []}, {0: [], 1: []}, None
        for chunk in client.completions.create(model="tiny", prompt=[PROMPT, [9, 9, 9]],
                                               max_tokens=8, temperature=0, logprobs=3,
                                               stream=True,
                                               stream_options={"include_usage": True}):
            if chunk.usage:
                usage = chunk.usage
            for ch in chunk.choices:
                ids[ch.index] += ch.token_ids
                if ch.logprobs:
                    lps[ch.index] += ch.logprobs.token_logprobs
        assert ids[0] == want_ids and len(ids[1]) == 8, ids
        assert lps[0] == lp.token_logprobs, (lps[0], lp.token_logprobs)
        assert usage.completion_tokens == 16 and usage.prompt_tokens == len(PROMPT) + 3, usage
        print("two prompts streamed: ids and logprobs per choice equal, usage last")

        # A token-id stop: generation ends before it, finish_reason stop.
        stop = want_ids[3]
        r = client.completions.create(model="tiny", prompt=PROMPT, max_tokens=8, temperature=0,
                                      extra_body={"stop": [stop]})
        c = r.choices[0]
        assert c.token_ids == want_ids[:want_ids.index(stop)], (c.token_ids, stop)
        assert c.finish_reason == "stop"
        print("stop id: ends before it with finish_reason stop")

        h = httpx.get(srv.base + "/health", timeout=10).json()
        assert h["status"] == "ok" and h["in_flight"] == 0, h
        assert h["free_kv_blocks"] == h["kv_blocks"], h
        print("health:", h["status"], "in flight", h["in_flight"], "free blocks",
              h["free_kv_blocks"] == h["kv_blocks"])
        client.close()
        status = srv.stop()
        print("exit status:", status)


if __name__ == "__main__":
    main()
