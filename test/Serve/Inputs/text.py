"""Text through `serve --tokenizer`: a tokenizer.json trained here with the
`tokenizers` package (a BPE of 180 ids, inside llama_tiny's 256) encodes
text prompts and string stops, and decodes choices.

- A text prompt gives what its ids give (the ids `tokenizers` encodes it
  to): the same token_ids and fingerprint; the text is `tokenizers`' decode
  of the token ids.
- Streamed, the text deltas add up to the same text; with a stop string
  too (the part of a stop string that may be starting is held back).
- A stop string cuts the text before it, finish_reason stop, and stops the
  ids at the token that completed it.
- The openai client with a string prompt and a list of strings.
- An artifact that carries the tokenizer (lockstep-opt --tokenizer) serves
  text without --tokenizer, the same.

usage: text.py train TMPDIR                  (writes TMPDIR/tokenizer.json)
       text.py MODEL.lsa TMPDIR [WITH_TOKENIZER.lsa]
"""
import os
import sys

import httpx
import openai
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from serve_util import Server, sse_events, watchdog


def train(path):
    words = ("the quick brown fox jumps over the lazy dog while lockstep serves "
             "requests in one batch and every request gets the same logits").split()
    lines = [" ".join(words[(i * 7 + k * 3) % len(words)] for k in range(6 + i % 5))
             for i in range(200)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=180, special_tokens=["<unk>"],
                                                       show_progress=False))
    tok.save(path)
    return tok


def stream_text(client, body):
    text, ids, finish = "", [], None
    with client.stream("POST", "/v1/completions", json={**body, "stream": True}) as r:
        assert r.status_code == 200, r.read()
        for ev in sse_events(r.iter_lines()):
            if ev is True:
                break
            c = ev["choices"][0]
            text += c["text"]
            ids += c["token_ids"]
            finish = c["finish_reason"] or finish
    return text, ids, finish


def main():
    artifact, tmp = sys.argv[1], sys.argv[2]
    watchdog(120)
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "tokenizer.json")
    tok = train(path)
    if artifact == "train":
        return
    prompt = "the quick brown fox"
    with Server(artifact, "--tokenizer", path) as srv:
        assert "tokenizer " + path in srv.banner, srv.banner
        c = httpx.Client(base_url=srv.base, timeout=60)
        body = {"prompt": prompt, "max_tokens": 24, "temperature": 0}
        by_text = c.post("/v1/completions", json=body).json()
        ids = tok.encode(prompt).ids
        by_ids = c.post("/v1/completions", json={**body, "prompt": ids}).json()
        a, b = by_text["choices"][0], by_ids["choices"][0]
        assert a["token_ids"] == b["token_ids"] and len(a["token_ids"]) == 24, (a, b)
        assert a["lockstep_fingerprint"] == b["lockstep_fingerprint"]
        assert by_text["usage"]["prompt_tokens"] == len(ids)
        text = a["text"]
        assert text == b["text"] == tok.decode(a["token_ids"]), (text, tok.decode(a["token_ids"]))
        print("text prompt: the ids of tokenizers' encoding, the same fingerprint; text is "
              "tokenizers' decode: %r" % text)

        s_text, s_ids, finish = stream_text(c, body)
        assert s_text == text and s_ids == a["token_ids"] and finish == "length", (s_text, text)
        print("stream: the deltas add up to the same text")

        # A stop string that spans a token boundary in the middle of the text.
        gen = a["token_ids"]
        at = len(tok.decode(gen[:len(gen) // 2]))
        stop = text[at - 2:at + 2]
        assert len(stop) == 4, (text, at)
        want = text[:text.find(stop)]
        r = c.post("/v1/completions", json={**body, "stop": [stop]}).json()["choices"][0]
        assert r["text"] == want and r["finish_reason"] == "stop", (r["text"], want)
        assert r["token_ids"] == a["token_ids"][:len(r["token_ids"])]
        assert stop in tok.decode(r["token_ids"]) and stop not in tok.decode(r["token_ids"][:-1])
        s_text, _, finish = stream_text(c, {**body, "stop": stop})
        assert s_text == want and finish == "stop", (s_text, want)
        print("stop string: text cut before it (%d of %d characters), streamed the same, "
              "finish_reason stop" % (len(want), len(text)))

        client = openai.OpenAI(base_url=srv.base + "/v1", api_key="unused", max_retries=0)
        r = client.completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0)
        assert r.choices[0].text == text
        r = client.completions.create(model="m", prompt=[prompt, "lazy dog"], max_tokens=8,
                                      temperature=0)
        assert len(r.choices) == 2 and r.choices[0].text == tok.decode(a["token_ids"][:8])
        print("openai client: a string prompt and a list of two")
        client.close()
        c.close()
        print("exit status:", srv.stop())

    if len(sys.argv) > 3:
        with Server(sys.argv[3]) as srv:
            assert "the artifact's tokenizer" in srv.banner, srv.banner
            c = httpx.Client(base_url=srv.base, timeout=60)
            r = c.post("/v1/completions", json=body).json()["choices"][0]
            assert r["token_ids"] == a["token_ids"] and r["text"] == text, (r, a)
            assert r["lockstep_fingerprint"] == a["lockstep_fingerprint"]
            print("the artifact's own tokenizer: the same ids, fingerprint and text")
            c.close()
            print("exit status:", srv.stop())


if __name__ == "__main__":
    main()
