//===- PreTokenizers.cpp - tokenizer.json "pre_tokenizer" -----------------===//
//
// Sequence, ByteLevel (GPT-2's own regex or none, add_prefix_space), Split
// (a regex or string with a SplitDelimiterBehavior, invert), Metaspace
// (replacement, prepend_scheme first/always/never, split), and the character
// class splitters Digits, Punctuation, Whitespace, WhitespaceSplit,
// CharDelimiterSplit and BertPreTokenizer. Each works on every piece on its
// own, as `tokenizers` does; empty pieces are dropped.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

namespace lockstep::text::detail {

namespace {

/// Replaces each piece by the sub-pieces at `rangesOf(piece)`.
template <typename F>
void splitPieces(std::vector<Piece> &pieces, F rangesOf) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece &p : pieces) {
    for (const Range &r : rangesOf(p)) {
      if (r.second <= r.first)
        continue;
      out.push_back({p.text.substr(r.first, r.second - r.first), p.atStart && r.first == 0});
    }
  }
  pieces = std::move(out);
}

class SequencePreTokenizer : public PreTokenizer {
public:
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  void apply(std::vector<Piece> &pieces) const override {
    for (const auto &p : parts)
      p->apply(pieces);
  }
};

const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

class ByteLevelPreTokenizer : public PreTokenizer {
public:
  bool addPrefixSpace = true;
  std::unique_ptr<Regex> regex; // null: use_regex false
  void apply(std::vector<Piece> &pieces) const override {
    if (addPrefixSpace)
      for (Piece &p : pieces)
        if (p.text.empty() || p.text[0] != ' ')
          p.text.insert(0, " ");
    if (regex)
      splitPieces(pieces, [&](const Piece &p) {
        return splitRanges(p.text.size(), regex->findAll(p.text), SplitBehavior::Isolated,
                           false);
      });
    for (Piece &p : pieces)
      p.text = byteLevelMap(p.text);
  }
};

class SplitPreTokenizer : public PreTokenizer {
public:
  std::unique_ptr<Regex> regex;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  void apply(std::vector<Piece> &pieces) const override {
    splitPieces(pieces, [&](const Piece &p) {
      return splitRanges(p.text.size(), regex->findAll(p.text), behavior, invert);
    });
  }
};

class MetaspacePreTokenizer : public PreTokenizer {
public:
  std::string replacement;
  enum Scheme { Always, First, Never } scheme = Always;
  bool split = true;
  void apply(std::vector<Piece> &pieces) const override {
    for (Piece &p : pieces) {
      std::string t;
      t.reserve(p.text.size() + replacement.size());
      for (char c : p.text) {
        if (c == ' ')
          t += replacement;
        else
          t += c;
      }
      bool starts = t.compare(0, replacement.size(), replacement) == 0;
      if (!starts && (scheme == Always || (scheme == First && p.atStart)))
        t.insert(0, replacement);
      p.text = std::move(t);
    }
    if (split)
      splitPieces(pieces, [&](const Piece &p) {
        return splitRanges(p.text.size(), findLiteral(p.text, replacement),
                           SplitBehavior::MergedWithNext, false);
      });
  }
};

/// Splits at the matches of a regex, by a behavior.
class RegexSplitter : public PreTokenizer {
public:
  std::unique_ptr<Regex> regex;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  void apply(std::vector<Piece> &pieces) const override {
    splitPieces(pieces, [&](const Piece &p) {
      return splitRanges(p.text.size(), regex->findAll(p.text), behavior, invert);
    });
  }
};

/// Splits at each character of a class (CharClasses.cpp), by a behavior.
class CharSplitter : public PreTokenizer {
public:
  bool (*inClass)(uint32_t) = nullptr;
  SplitBehavior behavior = SplitBehavior::Isolated;
  void apply(std::vector<Piece> &pieces) const override {
    splitPieces(pieces, [&](const Piece &p) {
      std::vector<Range> matches;
      for (size_t i = 0; i < p.text.size(); i += utf8CharLen(p.text, i))
        if (inClass(utf8Decode(p.text, i)))
          matches.push_back({i, i + utf8CharLen(p.text, i)});
      return splitRanges(p.text.size(), matches, behavior, false);
    });
  }
};

/// The Whitespace pre-tokenizer: runs of word characters, and runs of
/// characters that are neither words nor spaces.
class WordsSplitter : public PreTokenizer {
public:
  void apply(std::vector<Piece> &pieces) const override {
    splitPieces(pieces, [&](const Piece &p) {
      std::vector<Range> runs;
      const std::string &t = p.text;
      for (size_t i = 0; i < t.size();) {
        uint32_t c = utf8Decode(t, i);
        if (isWhiteSpaceChar(c) && !isWordChar(c)) {
          i += utf8CharLen(t, i);
          continue;
        }
        bool word = isWordChar(c);
        size_t b = i;
        while (i < t.size()) {
          uint32_t d = utf8Decode(t, i);
          bool same = word ? isWordChar(d) : !isWordChar(d) && !isWhiteSpaceChar(d);
          if (!same)
            break;
          i += utf8CharLen(t, i);
        }
        runs.push_back({b, i});
      }
      return runs;
    });
  }
};

std::unique_ptr<PreTokenizer> charSplitter(bool (*inClass)(uint32_t), SplitBehavior behavior) {
  auto s = std::make_unique<CharSplitter>();
  s->inClass = inClass;
  s->behavior = behavior;
  return s;
}

std::unique_ptr<RegexSplitter> regexSplitter(const std::string &pattern, SplitBehavior behavior,
                                             bool invert, const std::string &where,
                                             std::string &error) {
  auto s = std::make_unique<RegexSplitter>();
  std::string why;
  s->regex = Regex::compile(pattern, why);
  if (!s->regex) {
    error = jsonError(where + ": " + why);
    return nullptr;
  }
  s->behavior = behavior;
  s->invert = invert;
  return s;
}

} // namespace

static bool loadPreTokenizerAt(const Json &j, std::unique_ptr<PreTokenizer> &out, std::string &error,
                               int depth) {
  bool ok = false;
  if (loadCommon<SequencePreTokenizer>(j, "pre_tokenizer", "pretokenizers", out, error, depth,
                                       loadPreTokenizerAt, ok))
    return ok;
  std::string type = typeOf(j);
  if (type == "ByteLevel") {
    auto b = std::make_unique<ByteLevelPreTokenizer>();
    bool useRegex = true;
    if (!getBool(j, "add_prefix_space", b->addPrefixSpace, "pre_tokenizer ByteLevel", error) ||
        !getBool(j, "use_regex", useRegex, "pre_tokenizer ByteLevel", error))
      return false;
    if (useRegex) {
      std::string why;
      b->regex = Regex::compile(Regex::fromOniguruma(kGpt2Pattern), why);
      if (!b->regex) {
        error = jsonError("pre_tokenizer ByteLevel: " + why);
        return false;
      }
    }
    out = std::move(b);
    return true;
  }
  if (type == "Split") {
    auto s = std::make_unique<SplitPreTokenizer>();
    if (!j.contains("pattern")) {
      error = jsonError("pre_tokenizer Split: missing 'pattern'");
      return false;
    }
    s->regex = loadPattern(j["pattern"], "pre_tokenizer Split", error);
    if (!s->regex)
      return false;
    std::string behavior;
    if (!getString(j, "behavior", behavior, "pre_tokenizer Split", error, true) ||
        !getBool(j, "invert", s->invert, "pre_tokenizer Split", error))
      return false;
    if (!parseSplitBehavior(behavior, s->behavior)) {
      error = jsonError("pre_tokenizer Split: behavior '" + behavior +
                        "' is not one of Removed, Isolated, MergedWithPrevious, "
                        "MergedWithNext, Contiguous");
      return false;
    }
    out = std::move(s);
    return true;
  }
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspacePreTokenizer>();
    const std::string where = "pre_tokenizer Metaspace";
    if (!getString(j, "replacement", m->replacement, where, error, true))
      return false;
    if (m->replacement.empty() || utf8CharLen(m->replacement, 0) != m->replacement.size()) {
      error = jsonError(where + ": 'replacement' must be one character");
      return false;
    }
    std::string scheme;
    if (!getString(j, "prepend_scheme", scheme, where, error, false))
      return false;
    if (scheme.empty()) {
      bool add = true;
      if (!getBool(j, "add_prefix_space", add, where, error))
        return false;
      scheme = add ? "always" : "never";
    }
    if (scheme == "always")
      m->scheme = MetaspacePreTokenizer::Always;
    else if (scheme == "first")
      m->scheme = MetaspacePreTokenizer::First;
    else if (scheme == "never")
      m->scheme = MetaspacePreTokenizer::Never;
    else {
      error = jsonError(where + ": prepend_scheme '" + scheme +
                        "' is not one of first, always, never");
      return false;
    }
    if (!getBool(j, "split", m->split, where, error))
      return false;
    out = std::move(m);
    return true;
  }
  const std::string where = "pre_tokenizer " + type;
  // The character classes (CharClasses.cpp) come from ICU.
  for (const char *usesIcu :
       {"Digits", "Punctuation", "Whitespace", "WhitespaceSplit", "BertPreTokenizer"})
    if (type == usesIcu && !requireIcu(where, error))
      return false;
  if (type == "Digits") {
    bool individual = false;
    if (!getBool(j, "individual_digits", individual, where, error))
      return false;
    out = charSplitter(isNumericChar,
                       individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
    return true;
  }
  if (type == "Punctuation") {
    std::string behavior = "Isolated";
    SplitBehavior b;
    if (!getString(j, "behavior", behavior, where, error, false))
      return false;
    if (!parseSplitBehavior(behavior, b)) {
      error = jsonError(where + ": behavior '" + behavior +
                        "' is not one of Removed, Isolated, MergedWithPrevious, "
                        "MergedWithNext, Contiguous");
      return false;
    }
    out = charSplitter(isPunctuationChar, b);
    return true;
  }
  if (type == "Whitespace") {
    // \w+|[^\w\s]+ (matched with Rust's regex crate there): runs of word
    // characters and runs of other non-space characters; spaces removed.
    out = std::make_unique<WordsSplitter>();
    return true;
  }
  if (type == "WhitespaceSplit") {
    out = charSplitter(isWhiteSpaceChar, SplitBehavior::Removed);
    return true;
  }
  if (type == "CharDelimiterSplit") {
    std::string delimiter;
    if (!getString(j, "delimiter", delimiter, where, error, true))
      return false;
    if (delimiter.empty() || utf8CharLen(delimiter, 0) != delimiter.size()) {
      error = jsonError(where + ": 'delimiter' must be one character");
      return false;
    }
    out = regexSplitter(Regex::escape(delimiter), SplitBehavior::Removed, false, where, error);
    return out != nullptr;
  }
  if (type == "BertPreTokenizer") {
    auto seq = std::make_unique<SequencePreTokenizer>();
    seq->parts.push_back(charSplitter(isWhiteSpaceChar, SplitBehavior::Removed));
    seq->parts.push_back(charSplitter(isPunctuationChar, SplitBehavior::Isolated));
    out = std::move(seq);
    return true;
  }
  error = jsonError("pre_tokenizer type '" + type +
                    "' is not supported (supported: Sequence, ByteLevel, Split, Metaspace, "
                    "Digits, Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, "
                    "BertPreTokenizer)");
  return false;
}

bool loadPreTokenizer(const Json &j, std::unique_ptr<PreTokenizer> &out, std::string &error) {
  return loadPreTokenizerAt(j, out, error, 0);
}

} // namespace lockstep::text::detail
