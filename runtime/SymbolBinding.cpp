//===- SymbolBinding.cpp - Symbol values from actual input shapes ---------===//
#include "lockstep/Runtime/SymbolBinding.h"

#include "lockstep/Artifact/DimExpr.h"

#include <optional>
#include <set>

using namespace lockstep::rt;
using lockstep::DimExpr;

namespace {

std::string dimName(const TensorSpec &t, size_t d) {
  return quoted(t.name) + " dim " + std::to_string(d);
}

// "past=3, seq=4": the values of the symbols of `e`, for messages.
std::string valuesOf(const DimExpr &e, const SymbolValues &values) {
  std::set<std::string> syms;
  for (const auto &[monomial, coeff] : e.getTerms())
    syms.insert(monomial.begin(), monomial.end());
  std::string out;
  for (const std::string &s : syms) {
    auto it = values.find(s);
    out += (out.empty() ? "" : ", ") + s + "=" +
           (it == values.end() ? "?" : std::to_string(it->second));
  }
  return out;
}

} // namespace

bool lockstep::rt::bindSymbols(const std::vector<TensorSpec> &inputs,
                               const std::vector<std::vector<int64_t>> &shapes,
                               SymbolValues &values, std::string &error) {
  values.clear();
  std::map<std::string, std::string> boundBy; // symbol -> "input 'x' dim 0"
  if (shapes.size() != inputs.size()) {
    error = "expected " + std::to_string(inputs.size()) + " input shapes";
    return false;
  }
  std::vector<std::vector<DimExpr>> exprs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (shapes[i].size() != inputs[i].dims.size()) {
      error = "input " + quoted(inputs[i].name) + " has rank " +
              std::to_string(shapes[i].size()) + ", but the model expects " +
              std::to_string(inputs[i].dims.size());
      return false;
    }
    for (size_t d = 0; d < inputs[i].dims.size(); ++d) {
      std::optional<DimExpr> e = parseDim(inputs[i].dims[d]);
      if (!e) {
        error = "input " + dimName(inputs[i], d) + ": " +
                quoted(inputs[i].dims[d]) + " is not a dim expression";
        return false;
      }
      exprs[i].push_back(*e);
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].dims.size(); ++d) {
      std::optional<std::string> sym = exprs[i][d].asSymbol();
      if (!sym)
        continue;
      int64_t size = shapes[i][d];
      auto [it, inserted] = values.emplace(*sym, size);
      if (inserted) {
        boundBy[*sym] = "input " + dimName(inputs[i], d);
      } else if (it->second != size) {
        error = "inconsistent value of '" + *sym + "': " + boundBy[*sym] +
                " is " + std::to_string(it->second) + ", but input " +
                dimName(inputs[i], d) + " is " + std::to_string(size);
        return false;
      }
    }
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].dims.size(); ++d) {
      const DimExpr &e = exprs[i][d];
      std::optional<int64_t> v = e.evaluate(values);
      if (v && *v == shapes[i][d])
        continue;
      error = "input " + dimName(inputs[i], d) + " is " +
              std::to_string(shapes[i][d]) + ", but the model expects '" +
              inputs[i].dims[d] + "'";
      if (!e.isConstant())
        error += v ? " = " + std::to_string(*v) + " (" + valuesOf(e, values) + ")"
                   : " (" + valuesOf(e, values) + ": overflows)";
      return false;
    }
  return true;
}

bool lockstep::rt::evaluateShape(const TensorSpec &spec,
                                 const SymbolValues &values,
                                 std::vector<int64_t> &shape,
                                 std::string &error) {
  shape.clear();
  int64_t elements = 1;
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    std::optional<DimExpr> e = parseDim(spec.dims[d]);
    std::optional<int64_t> v = e ? e->evaluate(values) : std::nullopt;
    if (!v || *v < 0) {
      error = dimName(spec, d) + " ('" + spec.dims[d] + "') is " +
              (v ? std::to_string(*v) : std::string("not computable")) +
              (e ? " with " + valuesOf(*e, values) : std::string());
      return false;
    }
    if (*v && elements > INT64_MAX / *v) {
      error = quoted(spec.name) + " has too many elements";
      return false;
    }
    elements *= *v;
    shape.push_back(*v);
  }
  return true;
}
