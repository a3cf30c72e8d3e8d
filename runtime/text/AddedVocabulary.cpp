//===- AddedVocabulary.cpp - Added and special tokens ---------------------===//
//
// tokenizer.json's "added_tokens", given ids as `tokenizers` gives them (the
// token's id in the model's vocabulary, else the next free id), and found in
// text before anything else runs: leftmost match first, the longest token at
// that place, non-overlapping. A single_word token must not touch word
// characters on either side (or it is skipped); lstrip and rstrip take the
// whitespace before or after it into the token. Tokens with normalized=false
// are matched on the raw text; the rest of the text is normalized and tokens
// with normalized=true (their content normalized too) are matched on it.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

namespace lockstep::text::detail {

namespace {

/// Patterns for the rules that `tokenizers` writes with Rust's Unicode \w and
/// \s (regex crate): word = Alphabetic, marks, decimal digits, connector
/// punctuation, joiners; space = White_Space.
const char *kWordChar = "\\A[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]\\z";
const char *kSpaceChar = "\\A\\p{White_Space}\\z";

struct Matcher {
  struct Pattern {
    std::string text;
    int32_t id;
  };
  /// By first byte, longest first (earlier patterns first on equal length).
  std::array<std::vector<Pattern>, 256> byFirst;
  bool empty = true;

  void add(const std::string &text, int32_t id) {
    if (text.empty())
      return;
    byFirst[static_cast<unsigned char>(text[0])].push_back({text, id});
    empty = false;
  }
  void finish() {
    for (auto &v : byFirst)
      std::stable_sort(v.begin(), v.end(), [](const Pattern &a, const Pattern &b) {
        return a.text.size() > b.text.size();
      });
  }
  /// The leftmost-longest match at or after `pos`.
  bool find(const std::string &s, size_t pos, size_t &b, size_t &e, int32_t &id) const {
    if (empty)
      return false;
    for (size_t i = pos; i < s.size(); ++i) {
      for (const Pattern &p : byFirst[static_cast<unsigned char>(s[i])]) {
        if (s.compare(i, p.text.size(), p.text) == 0) {
          b = i;
          e = i + p.text.size();
          id = p.id;
          return true;
        }
      }
    }
    return false;
  }
};

} // namespace

struct AddedVocabulary::Data {
  std::unordered_map<std::string, int32_t> map;
  std::unordered_map<int32_t, AddedToken> mapR;
  std::vector<AddedToken> added, special;
  std::unordered_set<std::string> specialSet;
  Matcher raw, normalized;
  std::unique_ptr<Regex> wordChar, spaceChar;
  int32_t maxId = -1;

  bool isWord(std::string_view s, size_t i) const {
    return wordChar->search(s.substr(i, utf8CharLen(s, i)));
  }
  bool isSpace(std::string_view s, size_t i) const {
    return spaceChar->search(s.substr(i, utf8CharLen(s, i)));
  }
  /// find_matches: the pieces of `s` and the added tokens among them.
  void split(const Segment &seg, const Matcher &m, std::vector<Segment> &out) const;
};

AddedVocabulary::AddedVocabulary() : d(std::make_unique<Data>()) {}
AddedVocabulary::~AddedVocabulary() = default;

static bool operator==(const AddedToken &a, const AddedToken &b) {
  return a.content == b.content && a.singleWord == b.singleWord && a.lstrip == b.lstrip &&
         a.rstrip == b.rstrip && a.normalized == b.normalized && a.special == b.special;
}

bool AddedVocabulary::load(const Json &tokens, const BpeModel &model,
                           const Normalizer *normalizer, std::string &error) {
  std::string why;
  d->wordChar = Regex::compile(kWordChar, why);
  d->spaceChar = Regex::compile(kSpaceChar, why);
  if (!d->wordChar || !d->spaceChar) {
    error = jsonError("added_tokens: " + why);
    return false;
  }
  if (tokens.is_null())
    return true;
  if (!tokens.is_array()) {
    error = jsonError("'added_tokens' must be an array");
    return false;
  }
  std::vector<AddedToken> list;
  for (const Json &t : tokens) {
    AddedToken a;
    const std::string where = "added_tokens[" + std::to_string(list.size()) + "]";
    if (!t.is_object()) {
      error = jsonError(where + " must be an object");
      return false;
    }
    if (!getString(t, "content", a.content, where, error, true) ||
        !getBool(t, "single_word", a.singleWord, where, error) ||
        !getBool(t, "lstrip", a.lstrip, where, error) ||
        !getBool(t, "rstrip", a.rstrip, where, error) ||
        !getBool(t, "normalized", a.normalized, where, error) ||
        !getBool(t, "special", a.special, where, error))
      return false;
    list.push_back(std::move(a));
  }
  // AddedVocabulary::add_tokens of `tokenizers`: special ones first in their
  // own list, then ids in order.
  for (const AddedToken &t : list)
    if (t.special && !t.content.empty() && d->specialSet.insert(t.content).second)
      d->special.push_back(t);
  for (const AddedToken &t : list) {
    if (t.content.empty())
      continue;
    bool same = false;
    for (const auto &kv : d->mapR)
      same |= kv.second == t;
    if (same)
      continue;
    int32_t id;
    if (auto known = tokenId(t.content)) {
      id = *known;
    } else if (auto inModel = model.tokenId(t.content)) {
      id = *inModel;
    } else {
      int32_t vocab = static_cast<int32_t>(model.size());
      if (d->map.empty()) {
        id = vocab;
      } else {
        int32_t mx = -1;
        for (const auto &kv : d->map)
          mx = std::max(mx, kv.second);
        id = (mx >= vocab || vocab == 0) ? mx + 1 : vocab;
      }
    }
    d->map[t.content] = id;
    d->mapR[id] = t;
    d->maxId = std::max(d->maxId, id);
    if (!d->specialSet.count(t.content))
      d->added.push_back(t);
  }
  // The matchers, special tokens first, then the others.
  std::vector<const AddedToken *> all;
  for (const AddedToken &t : d->special)
    all.push_back(&t);
  for (const AddedToken &t : d->added)
    all.push_back(&t);
  for (const AddedToken *t : all) {
    int32_t id = *tokenId(t->content);
    if (t->normalized) {
      std::string content = t->content;
      if (normalizer)
        normalizer->normalize(content);
      d->normalized.add(content, id);
    } else {
      d->raw.add(t->content, id);
    }
  }
  d->raw.finish();
  d->normalized.finish();
  return true;
}

void AddedVocabulary::Data::split(const Segment &seg, const Matcher &m,
                                  std::vector<Segment> &out) const {
  const std::string &s = seg.text;
  auto push = [&](size_t b, size_t e, int32_t id) {
    if (e <= b)
      return; // empty pieces are dropped
    out.push_back({s.substr(b, e - b), seg.atStart && b == 0, id});
  };
  size_t startOffset = 0, pos = 0, mb, me;
  int32_t id;
  while (pos < s.size() && m.find(s, pos, mb, me, id)) {
    pos = me;
    size_t start = mb, stop = me;
    const AddedToken &tok = mapR.at(id);
    if (tok.singleWord) {
      bool startSpace = start == 0;
      if (!startSpace) {
        size_t last = start - 1;
        while (last > 0 && (static_cast<unsigned char>(s[last]) & 0xC0) == 0x80)
          --last;
        startSpace = !isWord(s, last);
      }
      bool stopSpace = stop == s.size() || !isWord(s, stop);
      if (!startSpace || !stopSpace)
        continue;
    }
    if (tok.lstrip) {
      size_t b = start;
      while (b > 0) {
        size_t last = b - 1;
        while (last > 0 && (static_cast<unsigned char>(s[last]) & 0xC0) == 0x80)
          --last;
        if (!isSpace(s, last))
          break;
        b = last;
      }
      start = std::max(b, startOffset);
    }
    if (tok.rstrip)
      while (stop < s.size() && isSpace(s, stop))
        stop += utf8CharLen(s, stop);
    if (startOffset < start)
      push(startOffset, start, -1);
    push(start, stop, id);
    startOffset = stop;
  }
  if (startOffset < s.size())
    push(startOffset, s.size(), -1);
}

std::vector<Segment> AddedVocabulary::extract(const std::string &text,
                                              const Normalizer *normalizer) const {
  std::vector<Segment> first;
  d->split(Segment{text, true, -1}, d->raw, first);
  std::vector<Segment> out;
  for (Segment &seg : first) {
    if (seg.id >= 0) {
      out.push_back(std::move(seg));
      continue;
    }
    if (normalizer)
      normalizer->normalize(seg.text);
    d->split(seg, d->normalized, out);
  }
  return out;
}

std::optional<int32_t> AddedVocabulary::tokenId(std::string_view content) const {
  auto it = d->map.find(std::string(content));
  if (it == d->map.end())
    return std::nullopt;
  return it->second;
}

const AddedToken *AddedVocabulary::token(int32_t id) const {
  auto it = d->mapR.find(id);
  return it == d->mapR.end() ? nullptr : &it->second;
}

bool AddedVocabulary::isSpecial(std::string_view content) const {
  return d->specialSet.count(std::string(content)) != 0;
}

int32_t AddedVocabulary::maxId() const { return d->maxId; }

} // namespace lockstep::text::detail
