//===- Prompts.cpp - Reading prompts from JSON lines ----------------------===//
#include "lockstep/Harness/Prompts.h"

#include <cmath>
#include <cstdlib>
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
          return fail("\"ids\" given twice");
        }
        haveIds = true;
        if (!ids(out.ids))
          return false;
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
