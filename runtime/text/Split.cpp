//===- Split.cpp - Splitting a text at pattern matches, by behavior -------===//
//
// The five SplitDelimiterBehavior of `tokenizers` (NormalizedString::split):
// Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous, each
// optionally on the inverted matches.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <algorithm>

namespace lockstep::text::detail {

bool parseSplitBehavior(const std::string &name, SplitBehavior &out) {
  if (name == "Removed")
    out = SplitBehavior::Removed;
  else if (name == "Isolated")
    out = SplitBehavior::Isolated;
  else if (name == "MergedWithPrevious")
    out = SplitBehavior::MergedWithPrevious;
  else if (name == "MergedWithNext")
    out = SplitBehavior::MergedWithNext;
  else if (name == "Contiguous")
    out = SplitBehavior::Contiguous;
  else
    return false;
  return true;
}

std::vector<Range> findLiteral(std::string_view text, std::string_view needle) {
  std::vector<Range> out;
  if (needle.empty())
    return out;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size()))
    out.push_back({pos, pos + needle.size()});
  return out;
}

std::vector<Range> splitRanges(size_t len, const std::vector<Range> &matches,
                               SplitBehavior behavior, bool invert) {
  struct Span {
    Range r;
    bool match;
  };
  // The matches and the text between them, covering [0, len).
  std::vector<Span> spans;
  if (len == 0) {
    spans.push_back({{0, 0}, false});
  } else {
    size_t prev = 0;
    for (const Range &m : matches) {
      if (prev != m.first)
        spans.push_back({{prev, m.first}, false});
      spans.push_back({m, true});
      prev = m.second;
    }
    if (prev != len)
      spans.push_back({{prev, len}, false});
  }
  if (invert)
    for (Span &s : spans)
      s.match = !s.match;

  std::vector<Range> out;
  switch (behavior) {
  case SplitBehavior::Isolated:
    for (const Span &s : spans)
      out.push_back(s.r);
    break;
  case SplitBehavior::Removed:
    for (const Span &s : spans)
      if (!s.match)
        out.push_back(s.r);
    break;
  case SplitBehavior::Contiguous: {
    bool previous = false;
    for (const Span &s : spans) {
      if (s.match == previous && !out.empty())
        out.back().second = s.r.second;
      else
        out.push_back(s.r);
      previous = s.match;
    }
    break;
  }
  case SplitBehavior::MergedWithPrevious: {
    bool previous = false;
    for (const Span &s : spans) {
      if (s.match && !previous && !out.empty())
        out.back().second = s.r.second;
      else
        out.push_back(s.r);
      previous = s.match;
    }
    break;
  }
  case SplitBehavior::MergedWithNext: {
    bool previous = false;
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
      if (it->match && !previous && !out.empty())
        out.back().first = it->r.first;
      else
        out.push_back(it->r);
      previous = it->match;
    }
    std::reverse(out.begin(), out.end());
    break;
  }
  }
  return out;
}

} // namespace lockstep::text::detail
