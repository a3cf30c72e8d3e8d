//===- TextInternal.h - The parts of the tokenizer, inside the library ---===//
//
// The pipeline of lockstep::text::Tokenizer, as `tokenizers` runs it:
//   added tokens split out of the raw text (AddedVocabulary)
//   -> normalizer on each remaining piece -> normalized added tokens split out
//   -> pre-tokenizer (splits pieces, maps them) -> BPE model per piece
//   -> post-processor (special tokens)
// and for decoding: ids -> token strings -> decoder chain -> joined text.
// Each part is an interface here with its loader from JSON in its own file.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_TEXT_TEXTINTERNAL_H
#define LOCKSTEP_RUNTIME_TEXT_TEXTINTERNAL_H

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep::text::detail {

using Json = nlohmann::json;
using Range = std::pair<size_t, size_t>;

//===--- Utf8.cpp ---------------------------------------------------------===//

/// Bytes of the character starting at s[i] of valid UTF-8 (1 at the end).
size_t utf8CharLen(std::string_view s, size_t i);
/// Decodes the code point at s[i] of valid UTF-8.
uint32_t utf8Decode(std::string_view s, size_t i);
void utf8Append(std::string &out, uint32_t cp);
bool utf8Valid(std::string_view s);
/// Rust's String::from_utf8_lossy / Python's decode(errors="replace"): each
/// maximal invalid subsequence becomes one U+FFFD.
std::string utf8Lossy(std::string_view bytes);

//===--- Regex.cpp --------------------------------------------------------===//

/// A PCRE2 pattern compiled with UTF and UCP, matched the way the `onig`
/// crate's find_iter walks a text (as `tokenizers` does).
class Regex {
public:
  static std::unique_ptr<Regex> compile(const std::string &pattern, std::string &error);
  /// An Oniguruma pattern (as tokenizer.json holds) in PCRE2's syntax.
  static std::string fromOniguruma(const std::string &pattern);
  /// A pattern matching `literal` itself.
  static std::string escape(std::string_view literal);
  ~Regex();
  /// Every non-overlapping match, left to right; an empty match right after
  /// the previous match is skipped.
  std::vector<Range> findAll(std::string_view text) const;
  /// Whether the pattern matches somewhere in `text`.
  bool search(std::string_view text) const;

private:
  Regex() = default;
  void *code = nullptr; // pcre2_code_8
};

/// A regex or a string, as "pattern": {"Regex": ...} | {"String": ...}.
std::unique_ptr<Regex> loadPattern(const Json &j, const std::string &where, std::string &error);

//===--- Split.cpp --------------------------------------------------------===//

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
bool parseSplitBehavior(const std::string &name, SplitBehavior &out);
/// NormalizedString::split: the pieces of a text of `len` bytes whose pattern
/// matches are `matches`, by `behavior`; empty pieces included.
std::vector<Range> splitRanges(size_t len, const std::vector<Range> &matches,
                               SplitBehavior behavior, bool invert);
/// Non-overlapping occurrences of `needle` in `text`, left to right.
std::vector<Range> findLiteral(std::string_view text, std::string_view needle);

//===--- Pieces -----------------------------------------------------------===//

/// A piece of text between pre-tokenization steps. `atStart` is whether it
/// begins at offset 0 of the original text (Metaspace's prepend_scheme first).
struct Piece {
  std::string text;
  bool atStart = false;
};

//===--- Normalizers.cpp --------------------------------------------------===//

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string &s) const = 0;
};
enum class UnicodeForm { NFC, NFD, NFKC, NFKD };
/// Normalizes valid UTF-8 in place (UnicodeForms.cpp, through ICU); false,
/// leaving `s` as it was, if ICU fails.
bool unicodeNormalize(UnicodeForm form, std::string &s);
/// Lowercases each character on its own, as Rust's char::to_lowercase.
void unicodeLowercase(std::string &s);

/// CharClasses.cpp: the character tests of the splitter pre-tokenizers.
/// These and the two above call ICU, which their parts' loaders check is
/// there (requireIcu).
bool isWhiteSpaceChar(uint32_t c);
bool isNumericChar(uint32_t c);
bool isPunctuationChar(uint32_t c);
bool isWordChar(uint32_t c);

/// True when ICU is usable (IcuLibrary.cpp); else false with `error` set to
/// the tokenizer error for `part`, "tokenizer.json: normalizer NFC needs ICU
/// (libicuuc.so.N), which is not installed (tried ...)".
bool requireIcu(const std::string &part, std::string &error);

/// Null `out` for a JSON null.
bool loadNormalizer(const Json &j, std::unique_ptr<Normalizer> &out, std::string &error);

//===--- PreTokenizers.cpp ------------------------------------------------===//

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  virtual void apply(std::vector<Piece> &pieces) const = 0;
};
bool loadPreTokenizer(const Json &j, std::unique_ptr<PreTokenizer> &out, std::string &error);

//===--- ByteLevel.cpp ----------------------------------------------------===//

/// GPT-2's bytes_to_unicode: the code point that stands for each byte.
uint32_t byteToChar(uint8_t b);
/// The byte a code point stands for; -1 when it stands for none.
int charToByte(uint32_t cp);
/// Each byte of `s` as its byte-level character.
std::string byteLevelMap(std::string_view s);

//===--- Bpe.cpp ----------------------------------------------------------===//

class BpeModel {
public:
  static std::unique_ptr<BpeModel> load(const Json &j, std::string &error);
  /// Appends the ids of one pre-tokenized piece.
  void tokenize(const std::string &piece, std::vector<int32_t> &out) const;
  std::optional<int32_t> tokenId(std::string_view token) const;
  const std::string *idToken(int32_t id) const;
  size_t size() const;
  int32_t maxId() const;
  struct Data;
  ~BpeModel();

private:
  BpeModel();
  std::unique_ptr<Data> d;
};

//===--- Decoders.cpp -----------------------------------------------------===//

class Decoder {
public:
  virtual ~Decoder() = default;
  virtual void decodeChain(std::vector<std::string> &tokens) const = 0;
};
bool loadDecoder(const Json &j, std::unique_ptr<Decoder> &out, std::string &error);

//===--- PostProcessors.cpp -----------------------------------------------===//

class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  /// Adds the special tokens around a single sequence's ids.
  virtual void process(std::vector<int32_t> &ids) const = 0;
  virtual std::optional<int32_t> before() const { return std::nullopt; }
  virtual std::optional<int32_t> after() const { return std::nullopt; }
};
bool loadPostProcessor(const Json &j, std::unique_ptr<PostProcessor> &out, std::string &error);

//===--- AddedVocabulary.cpp ----------------------------------------------===//

struct AddedToken {
  std::string content;
  bool singleWord = false, lstrip = false, rstrip = false, normalized = true,
       special = false;
};

/// A span of text, or an added token found in it (id >= 0).
struct Segment {
  std::string text;
  bool atStart = false;
  int32_t id = -1;
};

class AddedVocabulary {
public:
  /// Adds tokens in file order, giving each the id `tokenizers` would.
  bool load(const Json &tokens, const BpeModel &model, const Normalizer *normalizer,
            std::string &error);
  /// Splits the raw text at non-normalized added tokens, normalizes the rest
  /// and splits it at normalized ones.
  std::vector<Segment> extract(const std::string &text, const Normalizer *normalizer) const;
  std::optional<int32_t> tokenId(std::string_view content) const;
  const AddedToken *token(int32_t id) const;
  bool isSpecial(std::string_view content) const;
  int32_t maxId() const;
  ~AddedVocabulary();
  AddedVocabulary();
  struct Data;

private:
  std::unique_ptr<Data> d;
};

/// How deep Sequence parts may nest (a hostile file cannot exhaust the stack).
inline constexpr int kMaxNesting = 64;

/// "tokenizer.json: " + what, the prefix of every load error.
std::string jsonError(const std::string &what);
/// The "type" of a part, or "" when absent.
std::string typeOf(const Json &j);

/// What every part loader (`decoder`, `pre_tokenizer`) does first: refuses
/// nesting deeper than kMaxNesting, takes null as no part, refuses what is
/// not an object, and loads a "Sequence" (its parts under `listKey`, each
/// with `loadAt(part, out, error, depth + 1)`, nulls left out) into a `Seq`.
/// Returns whether it settled the part; `ok` is then the result.
/// (A template on the JSON type too: Json is only declared here.)
template <typename Seq, typename Part, typename LoadAt, typename JsonT>
bool loadCommon(const JsonT &j, const char *what, const char *listKey,
                std::unique_ptr<Part> &out, std::string &error, int depth, LoadAt loadAt,
                bool &ok) {
  ok = false;
  out.reset();
  if (depth > kMaxNesting) {
    error = jsonError(std::string(what) + ": Sequences nested more than " +
                      std::to_string(kMaxNesting) + " deep");
    return true;
  }
  if (j.is_null())
    return ok = true;
  if (!j.is_object()) {
    error = jsonError("'" + std::string(what) + "' must be an object or null");
    return true;
  }
  if (typeOf(j) != "Sequence")
    return false;
  auto seq = std::make_unique<Seq>();
  if (!j.contains(listKey) || !j[listKey].is_array()) {
    error = jsonError(std::string(what) + " Sequence: '" + listKey + "' must be an array");
    return true;
  }
  for (const JsonT &part : j[listKey]) {
    std::unique_ptr<Part> p;
    if (!loadAt(part, p, error, depth + 1))
      return true;
    if (p)
      seq->parts.push_back(std::move(p));
  }
  out = std::move(seq);
  return ok = true;
}
/// Reads optional fields with a type check; false with `error` when the
/// field is there with another type.
bool getBool(const Json &j, const char *key, bool &out, const std::string &where,
             std::string &error);
bool getString(const Json &j, const char *key, std::string &out, const std::string &where,
               std::string &error, bool required);

} // namespace lockstep::text::detail

#include "lockstep/Text/Tokenizer.h"

/// The loaded parts (TokenizerJson.cpp builds them, Tokenizer.cpp runs them).
struct lockstep::text::Tokenizer::Impl {
  std::unique_ptr<detail::Normalizer> normalizer;
  std::unique_ptr<detail::PreTokenizer> preTokenizer;
  std::unique_ptr<detail::BpeModel> model;
  std::unique_ptr<detail::Decoder> decoder;
  std::unique_ptr<detail::PostProcessor> postProcessor;
  detail::AddedVocabulary added;
};

#endif
