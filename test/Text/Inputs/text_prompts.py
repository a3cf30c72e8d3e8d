#!/usr/bin/env python3
"""Text prompts for `lockstep-run generate` on an artifact with a tokenizer,
checked against the `tokenizers` package.

  text_prompts.py make TOKENIZER.json OUT.jsonl
      writes pairs of prompts: {"text": T} and {"ids": encode(T)} (the ids
      from `tokenizers`, special tokens added), greedy, 4 new tokens each
  text_prompts.py check TOKENIZER.json GENERATE_OUTPUT
      each pair generated the same ids and fingerprint (so the text was
      encoded id for id as `tokenizers` does), and each line's "text" is
      `tokenizers`' decode of its generated ids; prints a count
"""
import json
import sys

from tokenizers import Tokenizer

TEXTS = ["the quick brown fox", "Hello world, this is a test.", "  spaces  and\ttabs",
         "unseen ü 日本 😀 text", "<s> special </s> inside", ""]


def main():
    mode, tok = sys.argv[1], Tokenizer.from_file(sys.argv[2])
    if mode == "make":
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            for t in TEXTS:
                f.write(json.dumps({"text": t, "max_new_tokens": 4}, ensure_ascii=True) + "\n")
                f.write(json.dumps({"ids": tok.encode(t).ids, "max_new_tokens": 4}) + "\n")
        return
    with open(sys.argv[3], encoding="utf-8") as f:
        lines = [json.loads(l) for l in f if l.strip()]
    assert len(lines) == 2 * len(TEXTS), len(lines)
    for i in range(0, len(lines), 2):
        a, b = lines[i], lines[i + 1]
        for k in ("status", "generated", "fingerprint", "text"):
            if a[k] != b[k]:
                sys.exit(f"text prompt {TEXTS[i // 2]!r}: {k} {a[k]!r} != {b[k]!r} of its ids")
        for line in (a, b):
            want = tok.decode(line["generated"], skip_special_tokens=False)
            if line["text"] != want:
                sys.exit(f"decoded {line['generated']}: {line['text']!r} != {want!r}")
    print(f"{len(TEXTS)} text prompts: same ids, generated tokens and fingerprints as their "
          f"tokenizers ids; generated text equal to tokenizers' decode")


if __name__ == "__main__":
    main()
