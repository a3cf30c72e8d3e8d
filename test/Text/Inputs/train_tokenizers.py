#!/usr/bin/env python3
"""Trains small tokenizers with the `tokenizers` package (no network) and saves
each tokenizer.json into OUTDIR, for the tests of Lockstep's C++ tokenizer
(test/Text). Kinds written:

  gpt2.json       byte-level BPE: ByteLevel(add_prefix_space=False) with its own
                  regex, ByteLevel decoder and post-processor, <|endoftext|>
  gpt2-prefix.json  the same with add_prefix_space=True and string merges ("a b")
  llama3.json     Sequence[Split(Llama 3 regex, Isolated), ByteLevel(use_regex=False)],
                  TemplateProcessing adding <|begin_of_text|>, added special tokens
  qwen2.json      Sequence[Split(Qwen2 regex, Isolated), ByteLevel(use_regex=False)],
                  a non-special added token, no BOS
  llama2.json     SentencePiece-style BPE: normalizer Sequence[Prepend("▁"),
                  Replace(" ", "▁")], BPE with byte_fallback and <unk>, decoder
                  Sequence[Replace, ByteFallback, Fuse, Strip], BOS <s> by template
  metaspace.json  Metaspace(prepend_scheme=first, split=False) pre-tokenizer,
                  byte_fallback, decoder Sequence[Replace, ByteFallback, Fuse, Strip]
  metaspace-split.json  Metaspace(always, split=True), Metaspace decoder
  gpt2-big.json   byte-level BPE with 3000 tokens trained on more varied text
                  (CJK, emoji, accents), so that long merge chains run
  suffix.json     BPE with continuing_subword_prefix "##" and end_of_word_suffix
                  "</w>", Split(whitespace, Removed) + Split(punctuation),
                  unknowns as [UNK] (no byte fallback), a Replace(Regex)
                  normalizer, RobertaProcessing, no decoder
  behaviors.json  byte-level BPE after Splits with every other behavior
                  (MergedWithNext, Contiguous, MergedWithPrevious with invert,
                  Removed), ByteLevel(add_prefix_space), post-processor
                  Sequence[ByteLevel, TemplateProcessing "$A <|endoftext|>"]
  metaspace-never.json  Metaspace(never, split) with a normalized added token
  qwen2-nfc.json, gpt2-nfkc.json, llama2-nfd.json, gpt2-nfkd.json: as qwen2,
                  gpt2, llama2 and gpt2 with an NFC (as Qwen2 has), NFKC, NFD or
                  NFKD normalizer
  lower.json      as gpt2 with normalizer Sequence[NFC, Replace(\s+ -> " "), Lowercase]
                  (as CLIP has) and a normalized added token
  digits.json     Sequence[Digits(individual), ByteLevel] as StarCoder
  punct.json      Sequence[Punctuation, ByteLevel, Digits] as Falcon
  words.json      Whitespace pre-tokenizer, end_of_word_suffix "</w>", BPEDecoder
  bert-pre.json   Sequence[BertPreTokenizer, WhitespaceSplit, CharDelimiterSplit("-")]
  tiny.json       200 tokens (Metaspace, <unk>, BOS by template), small enough for
                  the 256-token test models (artifact-tokenizer.test)
  wordpiece.json, unigram.json: kinds the C++ tokenizer refuses

Usage: train_tokenizers.py OUTDIR
"""
import json
import os
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,
                        normalizers, pre_tokenizers, processors, trainers)

LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
            r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def training_text():
    """A small deterministic training corpus: English, code, a little CJK."""
    words = ("the quick brown fox jumps over the lazy dog while a tokenizer "
             "learns merges from text and numbers like 1234 and 2026 appear "
             "in logs def main return if else for while print value index "
             "hello world batch invariant logits request schedule token").split()
    lines = []
    for i in range(400):
        n = 5 + (i * 7) % 11
        sent = " ".join(words[(i * 13 + k * 5) % len(words)] for k in range(n))
        if i % 3 == 0:
            sent = sent.capitalize() + "."
        if i % 7 == 0:
            sent += f" {i * 37} items, {i % 10}.{i % 7}%"
        if i % 11 == 0:
            sent = "    " + sent.replace(" ", "_", 2) + "()"
        if i % 17 == 0:
            sent += " 日本語のテキスト 中文 한국어"
        if i % 19 == 0:
            sent += "\tcafé naïve"
        lines.append(sent)
    lines.append("def f(x):\n    return x * 2  # double\n")
    return lines


def varied_text():
    """More varied text for a larger vocabulary."""
    words = ("model serving batch logits token request cache block kernel shape "
             "東京 大阪 日本語 中文 数据 模型 한국어 서울 café résumé naïve Zürich "
             "😀 🎉 👍🏽 👩‍💻 ∑ ≤ √ α β γ 0 1 2 3 42 2026 3.14 "
             "def return class import lambda print self value index").split()
    lines = []
    for i in range(3000):
        n = 4 + (i * 7) % 13
        lines.append(" ".join(words[(i * 31 + k * k * 7 + k) % len(words)] for k in range(n)))
    return training_text() + lines


def byte_level(specials, prefix=False, text=None, vocab_size=600):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text or training_text(), trainer)
    return tok


def split_byte_level(regex, specials, bos):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
            special_tokens=[(bos, tok.token_to_id(bos))])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def sentencepiece_like(kind):
    """Trains on Metaspace pieces, then rebuilds the model with <0xNN> byte
    tokens in its vocab and byte_fallback, as Llama 2's tokenizer.json has."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False, limit_alphabet=120)
    tok.train_from_iterator(training_text(), trainer)
    model = json.loads(tok.to_str())["model"]
    vocab = dict(model["vocab"])
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    tok2 = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>",
                                byte_fallback=True, fuse_unk=True))
    tok2.add_special_tokens([AddedToken("<unk>", special=True, normalized=False),
                             AddedToken("<s>", special=True, normalized=False),
                             AddedToken("</s>", special=True, normalized=False)])
    sp_decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                    decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    if kind == "llama2":
        tok2.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                                normalizers.Replace(" ", "▁")])
        tok2.decoder = sp_decoder
    elif kind == "metaspace":
        tok2.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                      split=False)
        tok2.decoder = sp_decoder
    elif kind == "metaspace-never":
        tok2.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never",
                                                      split=True)
        tok2.decoder = decoders.Sequence([decoders.ByteFallback(),
                                          decoders.Metaspace(replacement="▁",
                                                             prepend_scheme="never")])
        tok2.add_tokens([AddedToken("▁tool", normalized=True, special=False)])
    else:
        tok2.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always",
                                                      split=True)
        tok2.decoder = decoders.Sequence([decoders.ByteFallback(),
                                          decoders.Metaspace(replacement="▁",
                                                             prepend_scheme="always")])
    tok2.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A </s> <s> $B",
        special_tokens=[("<s>", tok2.token_to_id("<s>")), ("</s>", tok2.token_to_id("</s>"))])
    return tok2


def suffix_bpe():
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##",
                               end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.Replace(Regex(r"[0-9]+"), "0")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),
        pre_tokenizers.Split(Regex(r"[\p{P}\p{S}]"), behavior="isolated"),
    ])
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["[UNK]", "<s>", "</s>"],
                                  continuing_subword_prefix="##", end_of_word_suffix="</w>",
                                  show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    return tok


def behaviors():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{N}"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[\p{L}\p{M}]"), behavior="merged_with_previous",
                             invert=True),
        pre_tokenizers.Split(Regex(r"\t"), behavior="removed"),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="$A <|endoftext|>",
                                      special_tokens=[("<|endoftext|>", 0)])])
    return tok


def pre_tokenized(kind):
    if kind == "words":
        tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.decoder = decoders.BPEDecoder(suffix="</w>")
        trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"],
                                      end_of_word_suffix="</w>", show_progress=False)
        tok.train_from_iterator(training_text(), trainer)
        return tok
    if kind == "bert-pre":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.BertPreTokenizer(), pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.CharDelimiterSplit("-")])
        trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"],
                                      show_progress=False)
        tok.train_from_iterator(training_text(), trainer)
        return tok
    parts = {"digits": [pre_tokenizers.Digits(individual_digits=True),
                        pre_tokenizers.ByteLevel(add_prefix_space=False)],
             "punct": [pre_tokenizers.Punctuation(), pre_tokenizers.ByteLevel(),
                       pre_tokenizers.Digits(individual_digits=False)]}[kind]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(parts)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    return tok


def tiny():
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False, limit_alphabet=60)
    tok.train_from_iterator(training_text(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def save(tok, path, string_merges=False):
    data = json.loads(tok.to_str())
    if string_merges:
        data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m
                                   for m in data["model"]["merges"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    gpt2 = byte_level(["<|endoftext|>"])
    save(gpt2, os.path.join(out, "gpt2.json"))
    gpt2p = byte_level(["<|endoftext|>"], prefix=True)
    gpt2p.add_tokens([AddedToken("<tool>", single_word=True, lstrip=True, rstrip=True)])
    save(gpt2p, os.path.join(out, "gpt2-prefix.json"), string_merges=True)

    llama3 = split_byte_level(LLAMA3_RE, ["<|begin_of_text|>", "<|end_of_text|>",
                                          "<|eot_id|>"], "<|begin_of_text|>")
    save(llama3, os.path.join(out, "llama3.json"))
    qwen2 = split_byte_level(QWEN2_RE, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None)
    qwen2.add_tokens([AddedToken("<think>", normalized=False, special=False)])
    save(qwen2, os.path.join(out, "qwen2.json"))

    save(byte_level(["<|endoftext|>"], text=varied_text(), vocab_size=3000),
         os.path.join(out, "gpt2-big.json"))
    save(suffix_bpe(), os.path.join(out, "suffix.json"))
    save(behaviors(), os.path.join(out, "behaviors.json"))

    for kind in ("llama2", "metaspace", "metaspace-split", "metaspace-never"):
        save(sentencepiece_like(kind), os.path.join(out, kind + ".json"))

    qwen2.normalizer = normalizers.NFC()
    save(qwen2, os.path.join(out, "qwen2-nfc.json"))
    gpt2.normalizer = normalizers.NFKC()
    save(gpt2, os.path.join(out, "gpt2-nfkc.json"))
    gpt2.normalizer = normalizers.NFKD()
    save(gpt2, os.path.join(out, "gpt2-nfkd.json"))
    gpt2.normalizer = normalizers.Sequence([normalizers.NFC(),
                                            normalizers.Replace(Regex(r"\s+"), " "),
                                            normalizers.Lowercase()])
    gpt2.add_tokens([AddedToken("<Tool>", normalized=True)])
    save(gpt2, os.path.join(out, "lower.json"))
    llama2 = sentencepiece_like("llama2")
    llama2.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Prepend("▁"),
                                              normalizers.Replace(" ", "▁")])
    save(llama2, os.path.join(out, "llama2-nfd.json"))

    for kind in ("digits", "punct", "words", "bert-pre"):
        save(pre_tokenized(kind), os.path.join(out, kind + ".json"))
    save(tiny(), os.path.join(out, "tiny.json"))

    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    wp.train_from_iterator(training_text(), trainers.WordPieceTrainer(
        vocab_size=300, special_tokens=["[UNK]"], show_progress=False))
    save(wp, os.path.join(out, "wordpiece.json"))
    ug = Tokenizer(models.Unigram())
    ug.train_from_iterator(training_text(), trainers.UnigramTrainer(
        vocab_size=200, show_progress=False, unk_token="<unk>", special_tokens=["<unk>"]))
    save(ug, os.path.join(out, "unigram.json"))


if __name__ == "__main__":
    main()
