//===- Prompts.cpp - Reading prompts from JSON lines ----------------------===//
#include "lockstep/Harness/Prompts.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace lockstep::rt;

namespace {

class LineParser {
public:
  LineParser(const std::string &s, size_t line) : s(s), line(line) {}

  bool parse(PromptSpec &out, std::string &error) {
    skip();
    bool ok = peek() == '[' ? ids(out.ids) : object(out);
    if (ok) {
      skip();
      if (i != s.size())
        ok = fail("unexpected text after the prompt");
    }
    if (!ok)
      error = "line " + std::to_string(line) + ", column " + std::to_string(errCol) +
              ": " + err;
    return ok;
  }

private:
  const std::string &s;
  size_t line, i = 0, errCol = 0;
  std::string err;

  char peek() const { return i < s.size() ? s[i] : '\0'; }
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
      ++i;
  }
  bool fail(const std::string &what) {
    if (err.empty()) {
      err = what;
      errCol = i + 1;
    }
    return false;
  }
  bool expect(char c) {
    skip();
    if (peek() != c)
      return fail(std::string("expected '") + c + "'");
    ++i;
    return true;
  }
  bool number(double &v, bool &integral) {
    skip();
    size_t start = i;
    if (peek() == '-')
      ++i;
    bool digits = false;
    while (i < s.size() && std::isdigit((unsigned char)s[i]))
      ++i, digits = true;
    integral = true;
    if (peek() == '.') {
      integral = false;
      ++i;
      while (i < s.size() && std::isdigit((unsigned char)s[i]))
        ++i, digits = true;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++i;
      if (peek() == '+' || peek() == '-')
        ++i;
      while (i < s.size() && std::isdigit((unsigned char)s[i]))
        ++i;
    }
    if (!digits || i - start > 40) {
      i = start;
      return fail("expected a number");
    }
    v = std::strtod(s.substr(start, i - start).c_str(), nullptr);
    if (!std::isfinite(v)) {
      i = start;
      return fail("number out of range");
    }
    return true;
  }
  bool integer(int64_t &v) {
    double d;
    bool integral;
    size_t at = i;
    if (!number(d, integral))
      return false;
    if (!integral || std::fabs(d) > 9.0e15) {
      i = at;
      skip();
      return fail("expected an integer");
    }
    v = (int64_t)d;
    return true;
  }
  bool ids(std::vector<int64_t> &out) {
    if (!expect('['))
      return false;
    skip();
    if (peek() == ']') {
      ++i;
      return true;
    }
    while (true) {
      int64_t v;
      if (!integer(v))
        return false;
      out.push_back(v);
      skip();
      if (peek() == ',') {
        ++i;
        continue;
      }
      return expect(']');
    }
  }
  bool key(std::string &k) {
    if (!expect('"'))
      return false;
    size_t start = i;
    while (i < s.size() && s[i] != '"' && s[i] != '\\')
      ++i;
    if (peek() != '"')
      return fail("unterminated or escaped key");
    k = s.substr(start, i - start);
    ++i;
    return true;
  }
  /// A JSON string with its escapes (\uXXXX with surrogate pairs); its
  /// bytes are kept as written otherwise.
  bool string(std::string &out) {
    if (!expect('"'))
      return false;
    auto hex4 = [&](uint32_t &v) {
      if (i + 4 > s.size())
        return false;
      v = 0;
      for (int k = 0; k < 4; ++k) {
        char c = s[i + k];
        int d = std::isdigit((unsigned char)c) ? c - '0'
                : (c >= 'a' && c <= 'f')       ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')       ? c - 'A' + 10
                                               : -1;
        if (d < 0)
          return false;
        v = v * 16 + d;
      }
      i += 4;
      return true;
    };
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if ((unsigned char)c < 0x20)
        return fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++i;
      const char *simple = "\"\\/bfnrt", *meaning = "\"\\/\b\f\n\r\t";
      if (const char *at = e ? std::strchr(simple, e) : nullptr) {
        out += meaning[at - simple];
        continue;
      }
      uint32_t cp, lo;
      if (e != 'u' || !hex4(cp))
        return fail("a bad escape in a string");
      if (cp >= 0xD800 && cp < 0xDC00 && s.compare(i, 2, "\\u") == 0) {
        size_t save = i;
        i += 2;
        if (hex4(lo) && lo >= 0xDC00 && lo < 0xE000)
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        else
          i = save;
      }
      if (cp >= 0xD800 && cp < 0xE000)
        cp = 0xFFFD; // a lone surrogate
      if (cp < 0x80) {
        out += (char)cp;
      } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
      } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
      }
    }
    if (!expect('"'))
      return fail("unterminated string");
    return true;
  }
  bool object(PromptSpec &out) {
    if (!expect('{'))
      return false;
    bool haveIds = false;
    skip();
    if (peek() == '}')
      return fail("a prompt object needs \"ids\"");
    while (true) {
      std::string k;
      skip();
      size_t at = i;
      if (!key(k) || !expect(':'))
        return false;
      int64_t n;
      double d;
      bool integral;
      if (k == "ids") {
        if (haveIds) {
          i = at;
          return fail(out.text ? "\"text\" and \"ids\" given together" : "\"ids\" given twice");
        }
        haveIds = true;
        if (!ids(out.ids))
          return false;
      } else if (k == "text") {
        if (haveIds) {
          i = at;
          return fail("\"text\" and \"ids\" given together");
        }
        haveIds = true;
        std::string t;
        if (!string(t))
          return false;
        out.text = std::move(t);
      } else if (k == "max_new_tokens") {
        if (!integer(n))
          return false;
        out.maxNewTokens = n;
      } else if (k == "top_k") {
        if (!integer(n))
          return false;
        out.topK = n;
      } else if (k == "seed") {
        if (!integer(n))
          return false;
        out.seed = (uint64_t)n;
      } else if (k == "temperature" || k == "top_p") {
        if (!number(d, integral))
          return false;
        (k == "temperature" ? out.temperature : out.topP) = d;
      } else {
        i = at;
        return fail("unknown key \"" + k + "\"");
      }
      skip();
      if (peek() == ',') {
        ++i;
        continue;
      }
      if (!expect('}'))
        return false;
      if (!haveIds)
        return fail("a prompt object needs \"ids\"");
      return true;
    }
  }
};

} // namespace

bool lockstep::rt::parsePrompts(const std::string &text, std::vector<PromptSpec> &out,
                                std::string &error) {
  std::istringstream in(text);
  std::string lineText;
  size_t line = 0;
  while (std::getline(in, lineText)) {
    ++line;
    if (lineText.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    PromptSpec p;
    if (!LineParser(lineText, line).parse(p, error))
      return false;
    out.push_back(std::move(p));
  }
  return true;
}

bool lockstep::rt::readPrompts(const std::string &path, std::vector<PromptSpec> &out,
                               std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot read '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  if (!parsePrompts(ss.str(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}
