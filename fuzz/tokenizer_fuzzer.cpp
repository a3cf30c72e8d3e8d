//===- tokenizer_fuzzer.cpp - libFuzzer target for lockstep_text ----------===//
//
// The input's first byte picks what the rest is:
//   even: a tokenizer.json, loaded; when it loads, a few texts are encoded
//         and their ids (and ids made of the input's bytes) decoded
//   odd:  a text, encoded and decoded with small built-in tokenizers
//         (byte-level BPE with added tokens, SentencePiece-style BPE with
//         byte fallback and normalizers)
// Loading must fail with an error or succeed; nothing may crash, hang or
// trip a sanitizer, and decoding must give valid UTF-8.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Text/Tokenizer.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using lockstep::text::Tokenizer;

namespace {

const char *kBuiltIn[] = {
    R"({"added_tokens": [
      {"id": 5, "content": "<x>", "lstrip": true, "rstrip": true, "normalized": false, "special": true},
      {"id": 6, "content": "ya", "single_word": true, "normalized": true, "special": false}],
     "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "ab": 4},
               "merges": [["Ġ", "a"], "a b"], "ignore_merges": true},
     "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
     "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
       {"type": "Split", "pattern": {"Regex": "\\s+(?!\\S)|\\p{N}{1,3}|[^\\s\\p{L}]+"}, "behavior": "Isolated"},
       {"type": "Digits", "individual_digits": true},
       {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}]},
     "post_processor": {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<x>"}}, {"Sequence": {"id": "A"}}],
       "special_tokens": {"<x>": {"id": "<x>", "ids": [5], "tokens": ["<x>"]}}},
     "decoder": {"type": "ByteLevel"}})",
    R"({"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
       "vocab": {"<unk>": 0, "▁": 1, "a": 2, "▁a": 3, "<0xC3>": 4, "<0xA9>": 5, "<0x0A>": 6},
       "merges": ["▁ a"]},
     "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Prepend", "prepend": "▁"},
       {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
     "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true},
     "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
       {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 1}]}})",
};

void exercise(const Tokenizer &t, const std::string &text, const uint8_t *data, size_t size) {
  for (bool special : {true, false}) {
    std::vector<int32_t> ids = t.encode(text, special);
    for (bool skip : {true, false})
      if (!Tokenizer::isValidUtf8(t.decode(ids, skip)))
        std::abort();
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size && ids.size() < 64; i += 2)
    ids.push_back(static_cast<int32_t>(data[i] | (data[i + 1] << 8)) % 300 - 2);
  if (!Tokenizer::isValidUtf8(t.decode(ids, false)))
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string rest(reinterpret_cast<const char *>(data + 1), size - 1);
  std::string error;
  if (data[0] % 2 == 0) {
    auto t = Tokenizer::fromJson(rest, error);
    if (!t) {
      if (error.rfind("tokenizer.json: ", 0) != 0)
        std::abort();
      return 0;
    }
    for (const char *text : {"Hello world, 123 <x> ya!", "", " \t\n  a", "\xC3\xA9\xFF"})
      exercise(*t, text, data, size);
    return 0;
  }
  static std::vector<std::unique_ptr<Tokenizer>> builtIn = [] {
    std::vector<std::unique_ptr<Tokenizer>> v;
    for (const char *json : kBuiltIn) {
      std::string err;
      v.push_back(Tokenizer::fromJson(json, err));
      if (!v.back())
        std::abort();
    }
    return v;
  }();
  for (const auto &t : builtIn)
    exercise(*t, rest, data, size);
  return 0;
}
