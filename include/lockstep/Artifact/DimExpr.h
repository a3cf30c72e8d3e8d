//===- DimExpr.h - Symbolic dimension expressions ---------------*- C++ -*-===//
//
// A DimExpr is a polynomial with integer coefficients over named symbols
// (batch, seq, past, ...). It is the value domain of symbolic shape inference:
// tensor dims and the values of shape tensors are DimExprs. The canonical
// printed form is unique, so two expressions are equal iff their text is.
//
// Symbols denote non-negative sizes. Where ONNX semantics depend on a
// comparison (Slice clamping, Expand of 1), inference assumes a symbol is
// larger than any constant it is compared with; the assumptions are listed in
// docs/shapes.md.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_DIMEXPR_H
#define LOCKSTEP_ARTIFACT_DIMEXPR_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

class DimExpr {
public:
  /// A monomial: the sorted multiset of symbol names (empty = constant term).
  using Monomial = std::vector<std::string>;

  DimExpr() = default;
  DimExpr(int64_t c) { if (c) terms[{}] = c; }
  static DimExpr symbol(const std::string &name);

  /// Parses the printed form ("batch*seq + 2", "2*(s + p)"); nullopt on error.
  static std::optional<DimExpr> parse(const std::string &text);

  bool isConstant() const;
  std::optional<int64_t> getConstant() const;
  /// True when no term has a negative coefficient (hence the value is >= 0).
  bool isNonNegative() const;

  DimExpr operator+(const DimExpr &o) const;
  DimExpr operator-(const DimExpr &o) const;
  DimExpr operator*(const DimExpr &o) const;
  DimExpr operator-() const { return DimExpr(0) - *this; }
  /// Exact division: defined when every term of this is divisible by `o`
  /// (a constant or a single monomial with coefficient); nullopt otherwise.
  std::optional<DimExpr> divExact(const DimExpr &o) const;
  /// floor(this / o) for constant operands, or an exact division.
  std::optional<DimExpr> floorDiv(const DimExpr &o) const;
  /// ceil(this / o) for constant operands, or an exact division.
  std::optional<DimExpr> ceilDiv(const DimExpr &o) const;

  /// True when some coefficient overflowed int64 on the way to this
  /// expression (in +, -, * or a division): its terms are then meaningless,
  /// and shape inference refuses it. Propagates through arithmetic.
  bool overflowed() const { return overflow; }

  bool operator==(const DimExpr &o) const {
    return terms == o.terms && overflow == o.overflow;
  }
  bool operator!=(const DimExpr &o) const { return !(*this == o); }

  /// The value with every symbol bound in `values`; nullopt when a symbol is
  /// unbound or the arithmetic overflows.
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t> &values) const;
  /// When this is exactly one symbol (coefficient 1), its name.
  std::optional<std::string> asSymbol() const;
  /// Whether the symbol `name` appears in any term.
  bool mentions(const std::string &name) const;

  std::string str() const;
  const std::map<Monomial, int64_t> &getTerms() const { return terms; }

private:
  void normalize();
  std::map<Monomial, int64_t> terms; // monomial -> non-zero coefficient
  bool overflow = false;
};

/// True when `name` is a valid symbol (letter or '_' first, then letters,
/// digits, '_' or '.').
bool isDimSymbolName(const std::string &name);
/// Maps any string (for example an exporter's dim_param) to a symbol name.
std::string sanitizeDimSymbolName(const std::string &name);

} // namespace lockstep

#endif
