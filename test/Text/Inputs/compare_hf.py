#!/usr/bin/env python3
"""Compares `lockstep-run tokenize` with the `tokenizers` package, exactly.

For each tokenizer KIND (DIR/KIND.json, written by train_tokenizers.py) it
encodes every sample text with both, with and without special tokens, and
compares the ids and the decoded text (skip_special_tokens False and True)
byte for byte; then it decodes random id lists (valid and out-of-range ids,
byte tokens cut mid-character) with both and compares the text. The first
difference is printed and the exit status is 1.

Samples: each line of CORPUS (one text per line, with \\n, \\r, \\t and \\\\
escapes), each pair of neighbouring lines joined by a newline, the whole
corpus as one text, and a few edge cases.

With --unicode-probes, the texts are instead probes of Unicode
normalization and case: each code point with a combining class or a
decomposition, alone and between marks of other classes, and each other one
with a lowercase mapping.

Usage: compare_hf.py [--unicode-probes] DIR CORPUS KIND...
"""
import json
import os
import random
import subprocess
import sys

from tokenizers import Tokenizer


def unescape(line):
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            out.append({"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}.get(line[i + 1], "\\" + line[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def samples(corpus):
    with open(corpus, encoding="utf-8", newline="") as f:
        lines = [unescape(l.rstrip("\n")) for l in f]
    texts = list(lines)
    texts += [a + "\n" + b for a, b in zip(lines, lines[1:])]
    texts.append("\n".join(lines))
    texts += ["", " ", "  ", "\n", "\n\n", " \n ", "\t", "a", " a", "  a", "a ", "a  ",
              "<s>", " <s>", "<s> ", "<|endoftext|>", " <|endoftext|> ", "▁", "▁▁a ▁b",
              "<0x41>", "<tool>", " <tool> ", "x<tool>y", "\u00e9", "e\u0301"]
    # Random texts from pieces that stress the regexes and the added tokens.
    pieces = [" ", "  ", "\t", "\n", "\r", "\r\n", "a", "Z", "word", "'s", "'LL", "'", "7",
              "1234", "½", "Ⅻ", "٣", ".", ",", "!?", "_", "-", "é", "e\u0301", "\u0308",
              "日本", "한", "😀", "👩\u200d💻", "\u200d", "🏽", "\u00a0", "\u3000", "\u0085",
              "\u2028", "\u2029", "\u180e", "\u200b", "\u2003", "\u000b", "\u000c",
              "\u001c", "\ufeff", "▁", "ſ", "K", "İ", "ß", "<s>", "</s>", "<|endoftext|>",
              "<|im_start|>", "<think>", "<tool>", "<unk>", "<0x41>", "𝔘", "\U0001F9D1",
              "\u0600", "\u0e01\u0e34", "Ω", "ǅ", "ﬁ", "\u0000", "\u007f", "\ud7ff",
              "\u212b", "\u1e9b\u0323", "\u1100\u1161\u11a8", "①", "ｶ", "\u0344",
              "\u0f73", "\u0323\u0301", "\u0301\u0323", "\uac00\u11a8", "Ａ", "㍿", "\u2126",
              "Σ", "ΑΣ", "\u0130", "\u212a", "ẞ", "ǈ", "Ⓐ", "𐐀", "<Tool>", "<TOOL>"]
    rng = random.Random(7)
    for _ in range(int(os.environ.get("TOKENIZER_RANDOM_TEXTS", "400"))):
        texts.append("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 16))))
    # Random code points of every plane (no surrogates), with spaces and
    # ASCII between them: Unicode properties must agree with Oniguruma's and
    # Rust's. Characters assigned after Unicode 14.0 (Python's unicodedata
    # here) are left out: the tables disagree on them (PCRE2 10.42 has 14.0,
    # ICU 72 15.0, Rust's regex crate 16.0; see lockstep/Text/Tokenizer.h).
    import unicodedata
    def any_char():
        while True:
            cp = rng.choice([rng.randrange(0x20, 0x3000), rng.randrange(0, 0x110000)])
            if 0xD800 <= cp < 0xE000:
                continue
            if unicodedata.category(chr(cp)) != "Cn":
                return chr(cp)
    for _ in range(int(os.environ.get("TOKENIZER_RANDOM_TEXTS", "400")) // 4):
        texts.append("".join(rng.choice([any_char(), any_char(), " ", "a", "1"])
                             for _ in range(rng.randrange(1, 12))))
    return texts


def unicode_probes():
    import unicodedata
    texts = []
    for cp in range(0xA0, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        if unicodedata.combining(c):
            texts += ["a" + c + "\u0323", "a\u0301" + c, c + "\u0301"]
        elif unicodedata.decomposition(c) or 0x1100 <= cp < 0x1200 or 0xAC00 <= cp < 0xD7A4:
            texts += [c, "e" + c + "\u0301"]
        elif c.lower() != c:
            texts.append("A" + c + "\u03a3")
    return texts


def run_tool(args, lines):
    p = subprocess.run(["lockstep-run", "tokenize"] + args, input="".join(lines).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"lockstep-run tokenize {' '.join(args)} failed ({p.returncode}): "
                 f"{p.stderr.decode(errors='replace')}")
    return [json.loads(l) for l in p.stdout.decode("utf-8").split("\n") if l]


def fail(kind, what, text, want, got):
    print(f"{kind}: MISMATCH in {what}\n  input: {text!r}\n  tokenizers: {want!r}\n"
          f"  lockstep:   {got!r}")
    sys.exit(1)


def check(directory, texts, kind):
    path = f"{directory}/{kind}.json"
    hf = Tokenizer.from_file(path)
    lines = [json.dumps(t, ensure_ascii=False) + "\n" for t in texts]
    for special in (True, False):
        args = ["--tokenizer", path, "--json-lines"] + ([] if special else ["--no-special"])
        got = run_tool(args, lines)
        if len(got) != len(texts):
            sys.exit(f"{kind}: {len(got)} outputs for {len(texts)} texts")
        for text, g in zip(texts, got):
            ids = hf.encode(text, add_special_tokens=special).ids
            if g["ids"] != ids:
                fail(kind, f"encode(add_special_tokens={special})", text, ids, g["ids"])
            for skip, key in ((False, "decoded"), (True, "decoded_skip")):
                want = hf.decode(ids, skip_special_tokens=skip)
                if g[key] != want:
                    fail(kind, f"decode(skip_special_tokens={skip})", ids, want, g[key])
    # Random id lists: in range, past the end, and runs of byte tokens.
    rng = random.Random(19)
    size = hf.get_vocab_size(with_added_tokens=True)
    byte_ids = [i for i in (hf.token_to_id(f"<0x{b:02X}>") for b in range(256)) if i is not None]
    lists = []
    for n in range(300):
        k = rng.randrange(0, 12)
        ids = [rng.randrange(0, size + 3) for _ in range(k)]
        if byte_ids and n % 3 == 0:
            ids += [rng.choice(byte_ids) for _ in range(rng.randrange(1, 5))]
            rng.shuffle(ids)
        lists.append(ids)
    got = run_tool(["--tokenizer", path, "--decode"], [json.dumps(l) + "\n" for l in lists])
    for ids, g in zip(lists, got):
        for skip, key in ((False, "text"), (True, "text_skip")):
            want = hf.decode(ids, skip_special_tokens=skip)
            if g[key] != want:
                fail(kind, f"decode(skip_special_tokens={skip}) of random ids", ids, want, g[key])
    info = run_tool(["--tokenizer", path, "--info"], [])[0]
    if info["vocab_size"] != size:
        fail(kind, "vocab size", "", size, info["vocab_size"])
    print(f"{kind}: {len(texts)} texts x 2 (with and without special tokens): ids and "
          f"decoded text equal; {len(lists)} random id lists decode equal")


def main():
    args = sys.argv[1:]
    probes = args[0] == "--unicode-probes"
    if probes:
        args = args[1:]
    directory, corpus, kinds = args[0], args[1], args[2:]
    texts = unicode_probes() if probes else samples(corpus)
    for kind in kinds:
        check(directory, texts, kind)
    print(f"all equal: {len(kinds)} tokenizers")


if __name__ == "__main__":
    main()
