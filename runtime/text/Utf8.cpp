//===- Utf8.cpp - UTF-8 decoding, validation and lossy repair -------------===//
//
// Byte-level only: no Unicode property tables (those come from PCRE2).
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

namespace lockstep::text::detail {

size_t utf8CharLen(std::string_view s, size_t i) {
  if (i >= s.size())
    return 1;
  unsigned char c = s[i];
  size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return i + n <= s.size() ? n : s.size() - i;
}

uint32_t utf8Decode(std::string_view s, size_t i) {
  unsigned char c = s[i];
  size_t n = utf8CharLen(s, i);
  if (n == 1)
    return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

void utf8Append(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

/// The length of the valid character at s[i], or 0 with `bad` set to the
/// length of the maximal invalid prefix there (at least 1).
size_t validAt(std::string_view s, size_t i, size_t &bad) {
  auto at = [&](size_t k) -> int {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1;
  };
  int c = at(0);
  bad = 1;
  if (c < 0x80)
    return 1;
  size_t width;
  int lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    width = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    width = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    width = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  int c1 = at(1);
  if (c1 < lo || c1 > hi)
    return 0;
  for (size_t k = 2; k < width; ++k) {
    int ck = at(k);
    if (ck < 0x80 || ck > 0xBF) {
      bad = k;
      return 0;
    }
  }
  return width;
}

} // namespace

bool utf8Valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t bad, n = validAt(s, i, bad);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

std::string utf8Lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t bad, n = validAt(s, i, bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

} // namespace lockstep::text::detail
