//===- Regex.cpp - PCRE2 patterns, matched as the onig crate walks them ---===//
//
// Patterns are compiled with PCRE2_UTF | PCRE2_UCP so that \p{L}, \p{N} and
// lookahead follow Unicode, as Oniguruma does in `tokenizers`. Where the two
// disagree on an escape, tokenizer.json's patterns (written for Oniguruma) are
// rewritten to say what Oniguruma means: \s is White_Space (PCRE2 adds
// U+180E), \w is letters, marks, numbers and connector punctuation (PCRE2:
// letters, numbers, '_'), \h is a hex digit (PCRE2: horizontal space). Texts
// are valid UTF-8 by the time they get here (the tokenizer repairs its input).
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

namespace lockstep::text::detail {

std::unique_ptr<Regex> Regex::compile(const std::string &pattern, std::string &error) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (!re) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    error = "regex '" + pattern + "' does not compile at offset " + std::to_string(offset) +
            ": " + reinterpret_cast<char *>(buf);
    return nullptr;
  }
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); // falls back to the interpreter
  std::unique_ptr<Regex> r(new Regex());
  r->code = re;
  return r;
}

std::string Regex::fromOniguruma(const std::string &p) {
  std::string out;
  bool inClass = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      switch (e) {
      case 's':
        out += "\\p{White_Space}";
        break;
      case 'S':
        out += "\\P{White_Space}";
        break;
      case 'w':
        out += inClass ? "\\p{L}\\p{M}\\p{N}\\p{Pc}" : "[\\p{L}\\p{M}\\p{N}\\p{Pc}]";
        break;
      case 'W':
        out += inClass ? "\\W" : "[^\\p{L}\\p{M}\\p{N}\\p{Pc}]";
        break;
      case 'h':
        out += inClass ? "0-9a-fA-F" : "[0-9a-fA-F]";
        break;
      case 'H':
        out += inClass ? "\\H" : "[^0-9a-fA-F]";
        break;
      case 'Q': { // quoted up to \E, copied as is
        size_t end = p.find("\\E", i + 1);
        end = end == std::string::npos ? p.size() : end + 2;
        out += '\\';
        out.append(p, i, end - i);
        i = end - 1;
        break;
      }
      default:
        out += '\\';
        out += e;
      }
      continue;
    }
    if (!inClass && c == '[') {
      inClass = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^')
        out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') // a leading ']' is literal
        out += p[++i];
      continue;
    }
    if (inClass && c == '[' && i + 1 < p.size() && p[i + 1] == ':') { // [:alpha:]
      size_t end = p.find(":]", i + 2);
      if (end != std::string::npos) {
        out.append(p, i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (inClass && c == ']')
      inClass = false;
    out += c;
  }
  return out;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code *>(code)); }

std::string Regex::escape(std::string_view literal) {
  // \Q...\E quotes everything but a literal "\E", which is split across two
  // quoted runs.
  std::string out = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal[i] == '\\' && i + 1 < literal.size() && literal[i + 1] == 'E') {
      out += "\\E\\\\\\QE";
      ++i;
    } else {
      out += literal[i];
    }
  }
  return out + "\\E";
}

std::vector<Range> Regex::findAll(std::string_view text) const {
  std::vector<Range> out;
  auto *re = static_cast<pcre2_code *>(code);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, nullptr);
  if (!md)
    return out;
  size_t pos = 0;
  bool haveLast = false;
  size_t lastEnd = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                         PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0)
      break; // no match, or a match limit: the rest is unmatched text
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    if (e < s) // \K tricks; not in tokenizer patterns
      break;
    if (s == e && haveLast && lastEnd == e) {
      pos += utf8CharLen(text, pos);
      continue;
    }
    pos = e;
    haveLast = true;
    lastEnd = e;
    out.push_back({s, e});
  }
  pcre2_match_data_free(md);
  return out;
}

bool Regex::search(std::string_view text) const {
  auto *re = static_cast<pcre2_code *>(code);
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, nullptr);
  if (!md)
    return false;
  int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                       PCRE2_NO_UTF_CHECK, md, nullptr);
  pcre2_match_data_free(md);
  return rc >= 0;
}

std::unique_ptr<Regex> loadPattern(const Json &j, const std::string &where, std::string &error) {
  if (!j.is_object() || j.size() != 1 ||
      !(j.contains("Regex") || j.contains("String")) || !j.begin()->is_string()) {
    error = jsonError(where + ": 'pattern' must be {\"Regex\": ...} or {\"String\": ...}");
    return nullptr;
  }
  std::string text = j.begin()->get<std::string>();
  std::string pattern = j.contains("Regex") ? Regex::fromOniguruma(text) : Regex::escape(text);
  std::string why;
  auto re = Regex::compile(pattern, why);
  if (!re)
    error = jsonError(where + ": " + why);
  return re;
}

} // namespace lockstep::text::detail
