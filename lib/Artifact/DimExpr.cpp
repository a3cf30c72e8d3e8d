//===- DimExpr.cpp - Symbolic dimension expressions -----------------------===//
#include "lockstep/Artifact/DimExpr.h"

#include <algorithm>
#include <cctype>

using namespace lockstep;

DimExpr DimExpr::symbol(const std::string &name) {
  DimExpr e;
  e.terms[{name}] = 1;
  return e;
}

void DimExpr::normalize() {
  for (auto it = terms.begin(); it != terms.end();)
    it = it->second == 0 ? terms.erase(it) : std::next(it);
}

bool DimExpr::isConstant() const {
  return terms.empty() || (terms.size() == 1 && terms.begin()->first.empty());
}

std::optional<int64_t> DimExpr::getConstant() const {
  if (!isConstant())
    return std::nullopt;
  return terms.empty() ? 0 : terms.begin()->second;
}

bool DimExpr::isNonNegative() const {
  return std::all_of(terms.begin(), terms.end(),
                     [](auto &t) { return t.second > 0; });
}

DimExpr DimExpr::operator+(const DimExpr &o) const {
  DimExpr r = *this;
  r.overflow |= o.overflow;
  for (auto &[m, c] : o.terms)
    r.overflow |= __builtin_add_overflow(r.terms[m], c, &r.terms[m]);
  r.normalize();
  return r;
}

DimExpr DimExpr::operator-(const DimExpr &o) const {
  DimExpr r = *this;
  r.overflow |= o.overflow;
  for (auto &[m, c] : o.terms)
    r.overflow |= __builtin_sub_overflow(r.terms[m], c, &r.terms[m]);
  r.normalize();
  return r;
}

DimExpr DimExpr::operator*(const DimExpr &o) const {
  DimExpr r;
  r.overflow = overflow || o.overflow;
  for (auto &[m1, c1] : terms)
    for (auto &[m2, c2] : o.terms) {
      Monomial m = m1;
      m.insert(m.end(), m2.begin(), m2.end());
      std::sort(m.begin(), m.end());
      int64_t p;
      r.overflow |= __builtin_mul_overflow(c1, c2, &p);
      r.overflow |= __builtin_add_overflow(r.terms[m], p, &r.terms[m]);
    }
  r.normalize();
  return r;
}

// Removes the symbols of `d` from `m` (as a multiset); false if not a divisor.
static bool divideMonomial(const DimExpr::Monomial &m,
                           const DimExpr::Monomial &d,
                           DimExpr::Monomial &out) {
  out = m;
  for (auto &s : d) {
    auto it = std::find(out.begin(), out.end(), s);
    if (it == out.end())
      return false;
    out.erase(it);
  }
  return true;
}

// Graded lexicographic order of monomials: the leading term of a polynomial
// is its largest monomial.
static bool gradedLess(const DimExpr::Monomial &a, const DimExpr::Monomial &b) {
  if (a.size() != b.size())
    return a.size() < b.size();
  return a > b; // lexicographically smaller names rank higher
}

static std::pair<DimExpr::Monomial, int64_t>
leadingTerm(const std::map<DimExpr::Monomial, int64_t> &terms) {
  auto best = terms.begin();
  for (auto it = terms.begin(); it != terms.end(); ++it)
    if (gradedLess(best->first, it->first))
      best = it;
  return *best;
}

// Multivariate long division; exact when the remainder ends at zero.
std::optional<DimExpr> DimExpr::divExact(const DimExpr &o) const {
  if (o.terms.empty() || overflow || o.overflow)
    return std::nullopt;
  auto [dm, dc] = leadingTerm(o.terms);
  DimExpr rem = *this, quot;
  for (int guard = 0; !rem.terms.empty(); ++guard) {
    if (guard > 1000)
      return std::nullopt;
    auto [rm, rc] = leadingTerm(rem.terms);
    Monomial q;
    if ((rc == INT64_MIN && dc == -1) || rc % dc != 0 ||
        !divideMonomial(rm, dm, q) || rem.overflow)
      return std::nullopt;
    DimExpr step;
    step.terms[q] = rc / dc;
    quot = quot + step;
    rem = rem - step * o;
  }
  return quot;
}

// floor(a / b) for b != 0; nullopt for INT64_MIN / -1, which overflows.
static std::optional<int64_t> floorDivInt(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1)
    return std::nullopt;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::optional<DimExpr> DimExpr::floorDiv(const DimExpr &o) const {
  if (overflow || o.overflow)
    return std::nullopt;
  auto a = getConstant(), b = o.getConstant();
  if (a && b) {
    auto q = *b == 0 ? std::nullopt : floorDivInt(*a, *b);
    return q ? std::optional<DimExpr>(*q) : std::nullopt;
  }
  return divExact(o);
}

std::optional<DimExpr> DimExpr::ceilDiv(const DimExpr &o) const {
  if (overflow || o.overflow)
    return std::nullopt;
  auto a = getConstant(), b = o.getConstant();
  if (a && b) {
    // ceil(a / b) = -floor(-a / b); -a overflows for INT64_MIN.
    auto q = *b == 0 || *a == INT64_MIN ? std::nullopt : floorDivInt(-*a, *b);
    return q && *q != INT64_MIN ? std::optional<DimExpr>(-*q) : std::nullopt;
  }
  return divExact(o);
}

std::optional<int64_t>
DimExpr::evaluate(const std::map<std::string, int64_t> &values) const {
  int64_t sum = 0;
  for (auto &[m, c] : terms) {
    int64_t p = c;
    for (auto &s : m) {
      auto it = values.find(s);
      if (it == values.end() || __builtin_mul_overflow(p, it->second, &p))
        return std::nullopt;
    }
    if (__builtin_add_overflow(sum, p, &sum))
      return std::nullopt;
  }
  return sum;
}

bool DimExpr::mentions(const std::string &name) const {
  for (const auto &[mono, coef] : terms)
    for (const std::string &s : mono)
      if (s == name)
        return true;
  return false;
}

std::optional<std::string> DimExpr::asSymbol() const {
  if (terms.size() != 1 || terms.begin()->second != 1 ||
      terms.begin()->first.size() != 1)
    return std::nullopt;
  return terms.begin()->first[0];
}

std::string DimExpr::str() const {
  if (terms.empty())
    return "0";
  std::string out;
  auto emit = [&](const Monomial &m, int64_t c) {
    bool first = out.empty();
    uint64_t mag = c < 0 ? 0 - uint64_t(c) : uint64_t(c); // INT64_MIN too
    out += first ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + ");
    std::string body;
    if (m.empty() || mag != 1)
      body = std::to_string(mag);
    for (auto &s : m)
      body += (body.empty() ? "" : "*") + s;
    out += body;
  };
  for (auto &[m, c] : terms)
    if (!m.empty())
      emit(m, c);
  auto it = terms.find({});
  if (it != terms.end())
    emit({}, it->second);
  return out;
}

bool lockstep::isDimSymbolName(const std::string &name) {
  if (name.empty() || !(std::isalpha((unsigned char)name[0]) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum((unsigned char)ch) || ch == '_' || ch == '.';
  });
}

std::string lockstep::sanitizeDimSymbolName(const std::string &name) {
  std::string out;
  for (char ch : name)
    out += (std::isalnum((unsigned char)ch) || ch == '_' || ch == '.') ? ch : '_';
  if (out.empty() || !(std::isalpha((unsigned char)out[0]) || out[0] == '_'))
    out = "d_" + out;
  return out;
}

namespace {
// Recursive-descent parser: expr := term (('+'|'-') term)*;
// term := factor ('*' factor)*; factor := '-' factor | int | name | '(' expr ')'.
struct Parser {
  const std::string &s;
  size_t i = 0;
  void skip() {
    while (i < s.size() && std::isspace((unsigned char)s[i]))
      ++i;
  }
  bool eat(char ch) {
    skip();
    if (i < s.size() && s[i] == ch) {
      ++i;
      return true;
    }
    return false;
  }
  std::optional<DimExpr> factor() {
    skip();
    if (eat('-')) {
      auto f = factor();
      return f ? std::optional<DimExpr>(-*f) : std::nullopt;
    }
    if (eat('(')) {
      auto e = expr();
      if (!e || !eat(')'))
        return std::nullopt;
      return e;
    }
    if (i < s.size() && std::isdigit((unsigned char)s[i])) {
      int64_t v = 0;
      while (i < s.size() && std::isdigit((unsigned char)s[i])) {
        if (v > (INT64_MAX - 9) / 10)
          return std::nullopt;
        v = v * 10 + (s[i++] - '0');
      }
      return DimExpr(v);
    }
    size_t start = i;
    while (i < s.size() && (std::isalnum((unsigned char)s[i]) || s[i] == '_' ||
                            s[i] == '.'))
      ++i;
    std::string name = s.substr(start, i - start);
    if (!isDimSymbolName(name))
      return std::nullopt;
    return DimExpr::symbol(name);
  }
  std::optional<DimExpr> term() {
    auto t = factor();
    while (t && eat('*')) {
      auto f = factor();
      if (!f)
        return std::nullopt;
      t = *t * *f;
    }
    return t;
  }
  std::optional<DimExpr> expr() {
    auto e = term();
    while (e) {
      if (eat('+')) {
        auto t = term();
        if (!t)
          return std::nullopt;
        e = *e + *t;
      } else if (eat('-')) {
        auto t = term();
        if (!t)
          return std::nullopt;
        e = *e - *t;
      } else {
        break;
      }
    }
    return e;
  }
};
} // namespace

std::optional<DimExpr> DimExpr::parse(const std::string &text) {
  Parser p{text};
  auto e = p.expr();
  p.skip();
  if (!e || p.i != text.size())
    return std::nullopt;
  return e;
}
