//===- ArtifactMeta.cpp - Dtypes and validation of artifact metadata ------===//
#include "lockstep/Artifact/ArtifactMeta.h"

#include "lockstep/Artifact/DimExpr.h"

#include <optional>
#include <set>

using namespace lockstep::rt;

namespace {

constexpr size_t kMaxDimTextSize = 1024;

struct DtypeInfo {
  const char *name;
  size_t size;
  const char *npy;
};

const DtypeInfo kDtypes[] = {
    {"f32", 4, "f4"}, {"f16", 2, "f2"}, {"bf16", 2, "u2"}, {"f64", 8, "f8"},
    {"i64", 8, "i8"}, {"i32", 4, "i4"}, {"i16", 2, "i2"},  {"i8", 1, "i1"},
    {"u8", 1, "u1"},  {"u16", 2, "u2"}, {"u32", 4, "u4"}, {"u64", 8, "u8"},
    {"bool", 1, "b1"},
};

const DtypeInfo *findDtype(const std::string &name) {
  for (const DtypeInfo &d : kDtypes)
    if (name == d.name)
      return &d;
  return nullptr;
}

// The symbols that the runtime can bind: those that are some input dim alone.
std::set<std::string> derivableSymbols(const ArtifactMeta &meta) {
  std::set<std::string> out;
  for (const TensorSpec &t : meta.inputs)
    for (const std::string &d : t.dims)
      if (auto e = parseDim(d))
        if (auto s = e->asSymbol())
          out.insert(*s);
  return out;
}

bool checkTensors(const std::vector<TensorSpec> &tensors, const char *kind,
                  const std::set<std::string> &derivable, std::string &error) {
  std::set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec &t = tensors[i];
    if (t.name.empty()) {
      error = std::string(kind) + " " + std::to_string(i) + " has an empty name";
      return false;
    }
    std::string what = std::string(kind) + " " + quoted(t.name);
    if (!names.insert(t.name).second) {
      error = "duplicate " + what;
      return false;
    }
    if (!findDtype(t.dtype)) {
      error = what + " has unknown dtype " + quoted(t.dtype);
      return false;
    }
    for (size_t d = 0; d < t.dims.size(); ++d) {
      std::optional<lockstep::DimExpr> e = parseDim(t.dims[d]);
      if (!e) {
        error = what + " dim " + std::to_string(d) + ": " + quoted(t.dims[d]) +
                " is not a dim expression (a sum of products, as "
                "DimExpr::str() prints it)";
        return false;
      }
      for (const auto &[monomial, coeff] : e->getTerms())
        for (const std::string &sym : monomial)
          if (!derivable.count(sym)) {
            error = what + " dim " + std::to_string(d) + " (" + quoted(t.dims[d]) +
                    ") uses symbol '" + sym +
                    "', which is no input dim alone, so its value is unknown";
            return false;
          }
    }
  }
  return true;
}

bool checkWeights(const std::vector<WeightSpec> &weights, std::string &error) {
  std::set<std::string> names;
  for (size_t i = 0; i < weights.size(); ++i) {
    const WeightSpec &w = weights[i];
    if (w.name.empty()) {
      error = "weight " + std::to_string(i) + " has an empty name";
      return false;
    }
    std::string what = "weight " + quoted(w.name);
    if (!names.insert(w.name).second) {
      error = "duplicate " + what;
      return false;
    }
    const DtypeInfo *d = findDtype(w.dtype);
    if (!d) {
      error = what + " has unknown dtype " + quoted(w.dtype);
      return false;
    }
    uint64_t bytes = d->size;
    for (int64_t s : w.shape) {
      if (s < 0) {
        error = what + " has a negative dim " + std::to_string(s);
        return false;
      }
      if (s && bytes > UINT64_MAX / uint64_t(s)) {
        error = what + " is too large";
        return false;
      }
      bytes *= uint64_t(s);
    }
    if (bytes != w.length) {
      error = what + " has length " + std::to_string(w.length) + ", but its " +
              w.dtype + " shape needs " + std::to_string(bytes) + " bytes";
      return false;
    }
    if (!w.embedded && (w.path.empty() || w.path[0] != '/')) {
      error = what + ": external path " + quoted(w.path) + " is not absolute";
      return false;
    }
    if (!w.embedded && w.offset > UINT64_MAX - w.length) {
      error = what + ": external byte range overflows";
      return false;
    }
  }
  return true;
}

} // namespace

std::optional<lockstep::DimExpr>
lockstep::rt::parseDim(const std::string &text) {
  if (text.size() > kMaxDimTextSize ||
      text.find_first_of("()") != std::string::npos)
    return std::nullopt;
  return lockstep::DimExpr::parse(text);
}

size_t lockstep::rt::dtypeSize(const std::string &dtype) {
  const DtypeInfo *d = findDtype(dtype);
  return d ? d->size : 0;
}

std::string lockstep::rt::dtypeToNpy(const std::string &dtype) {
  const DtypeInfo *d = findDtype(dtype);
  return d ? d->npy : "";
}

std::vector<std::string> lockstep::rt::targetsOf(const ArtifactMeta &meta) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= meta.target.size()) {
    size_t comma = meta.target.find(',', at);
    if (comma == std::string::npos)
      comma = meta.target.size();
    out.push_back(meta.target.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

bool lockstep::rt::hasTarget(const ArtifactMeta &meta, const std::string &target) {
  for (const std::string &t : targetsOf(meta))
    if (t == target)
      return true;
  return false;
}

bool lockstep::rt::validateMeta(const ArtifactMeta &meta, std::string &error) {
  if (meta.target.empty()) {
    error = "the artifact names no target";
    return false;
  }
  {
    std::set<std::string> seen;
    for (const std::string &t : targetsOf(meta))
      if (t.empty() || !seen.insert(t).second) {
        error = "the artifact's targets " + quoted(meta.target) +
                (t.empty() ? " have an empty one" : " repeat " + quoted(t));
        return false;
      }
  }
  std::set<std::string> derivable = derivableSymbols(meta);
  if (!checkTensors(meta.inputs, "input", derivable, error) ||
      !checkTensors(meta.outputs, "output", derivable, error) ||
      !checkWeights(meta.weights, error))
    return false;
  std::set<std::string> keys;
  for (const auto &[key, value] : meta.properties)
    if (key.empty() || !keys.insert(key).second) {
      error = key.empty() ? "a property has an empty key"
                          : "duplicate property " + quoted(key);
      return false;
    }
  return true;
}
