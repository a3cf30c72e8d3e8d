//===- Tokenizer.h - Hugging Face tokenizer.json in C++ ---------*- C++ -*-===//
//
// A tokenizer loaded from a Hugging Face `tokenizer.json`, equal id for id and
// byte for byte to the `tokenizers` Python package (0.20.3) on the kinds it
// supports. No Python, no MLIR: part of the runtime (lockstep_text).
//
// Supported (anything else is refused when loading, with an error naming the
// part, e.g. "tokenizer.json: model type 'WordPiece' is not supported
// (supported: BPE)"):
//   model          BPE (merges as "a b" strings or [a, b] pairs; unk_token,
//                  fuse_unk, byte_fallback, ignore_merges,
//                  continuing_subword_prefix, end_of_word_suffix; no dropout)
//   normalizer     Sequence, Prepend, Replace, Lowercase, NFC, NFD, NFKC, NFKD
//                  (through ICU; the forms limited to Unicode 9.0 as
//                  `tokenizers` is)
//   pre_tokenizer  Sequence, ByteLevel, Split, Metaspace, Digits, Punctuation,
//                  Whitespace, WhitespaceSplit, CharDelimiterSplit,
//                  BertPreTokenizer
//   decoder        Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip,
//                  Metaspace, BPEDecoder
//   post_processor TemplateProcessing, ByteLevel, RobertaProcessing,
//                  BertProcessing, Sequence
//   added_tokens   special or not, single_word, lstrip, rstrip, normalized
//   truncation and padding must be null.
// ICU is opened at run time (IcuLibrary.h): without it, a tokenizer with the
// Lowercase or NFC/NFD/NFKC/NFKD normalizers or with the Digits,
// Punctuation, Whitespace, WhitespaceSplit or BertPreTokenizer
// pre-tokenizers is refused when loading, with an error naming ICU's library.
//
// Unicode versions: regexes (ByteLevel, Split) run on PCRE2 10.42 (Unicode
// 14.0; linked statically), the character classes of the splitters and the
// normalization forms on the machine's ICU (Debian 12's 72: Unicode 15.0;
// normalization limited to 9.0 as in `tokenizers`). The
// tests (test/Text) find them equal to `tokenizers` on characters assigned
// by Unicode 14.0 (random samples; every such character for the
// normalization forms and Lowercase). On newer ones the Whitespace
// pre-tokenizer differs: Rust's regex crate knows Unicode 16.0 letters, and
// here letters after 15.0 are not word characters. With another ICU the
// classes follow its Unicode version (ICU 74, Ubuntu 24.04's: 15.1).
//
// Known differences, by choice: an unk_token missing from the vocabulary is
// refused when loading (`tokenizers` fails each encode that needs it);
// dropout, truncation and padding are refused; a regex that exceeds PCRE2's
// match limit on some text leaves the rest of that text unmatched.
//
// A Tokenizer is immutable once loaded: encode and decode may run on many
// threads at once.
//
// Behaviour on bad input:
//   - malformed JSON, missing or mistyped fields: fromJson returns null and
//     sets `error`; nothing throws or aborts.
//   - text that is not valid UTF-8: encode first repairs it the way Python's
//     bytes.decode("utf-8", errors="replace") does (each maximal invalid
//     subsequence becomes U+FFFD), then encodes that text. Python's API cannot
//     receive such text at all; callers that must refuse it check
//     isValidUtf8 first.
//   - decode: ids that name no token (including negative ids) are skipped, as
//     `tokenizers` skips unknown ids; the result is always valid UTF-8.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TEXT_TOKENIZER_H
#define LOCKSTEP_TEXT_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::text {

class Tokenizer {
public:
  /// Loads a tokenizer.json's text; null with `error` set when it is not
  /// valid JSON, misses a field, or uses a part that is not supported.
  static std::unique_ptr<Tokenizer> fromJson(std::string_view json, std::string &error);
  /// Reads and loads a tokenizer.json file.
  static std::unique_ptr<Tokenizer> fromFile(const std::string &path, std::string &error);
  ~Tokenizer();

  /// Like `Tokenizer.encode(text, add_special_tokens=addSpecial).ids`.
  std::vector<int32_t> encode(std::string_view text, bool addSpecial) const;
  /// Like `Tokenizer.decode(ids, skip_special_tokens=skipSpecial)`.
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecial) const;

  /// The id of a token (added tokens first, then the model's vocabulary).
  std::optional<int32_t> tokenId(std::string_view token) const;
  /// The text of a token id, as `id_to_token`.
  std::optional<std::string> idToken(int32_t id) const;
  /// One more than the largest id of the model's vocabulary and the added
  /// tokens: the size a logits row must have.
  size_t vocabSize() const;
  /// The token the post-processor puts before the text (TemplateProcessing's
  /// first special token before $A, or RobertaProcessing/BertProcessing's cls).
  std::optional<int32_t> bosId() const;
  /// The token that ends a sequence: the post-processor's token after $A if
  /// there is one, else the first special added token among </s>,
  /// <|endoftext|>, <|end_of_text|>, <|eot_id|>, <|im_end|>, <eos>.
  std::optional<int32_t> eosId() const;
  /// Whether `id` is an added token marked special.
  bool isSpecial(int32_t id) const;

  static bool isValidUtf8(std::string_view bytes);

  struct Impl;

private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace lockstep::text

#endif
