//===- lockstep-test-pack.cpp - Writes an artifact for runtime tests ------===//
//
// Stands in for the compiler in tests: wraps a shared object and .npy weights
// into an artifact with writeArtifact, so that lit tests can build the
// artifacts they run.
//
//   lockstep-test-pack -o OUT.lsa [--code FILE.so] [--target T]
//       [--input NAME:DTYPE:DIM,DIM...] [--output NAME:DTYPE:DIM,...]
//       [--weight NAME=FILE.npy] [--external-weight NAME=FILE.npy]
//       [--property KEY=VALUE]
//
// An external weight references the data bytes of its .npy file in place.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/Checksum.h"
#include "lockstep/Runtime/Npy.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

using namespace lockstep::rt;

namespace {

int fail(const std::string &msg) {
  std::fprintf(stderr, "lockstep-test-pack: %s\n", msg.c_str());
  return 1;
}

std::string artifactDtype(const std::string &npy) {
  static const std::map<std::string, std::string> m = {
      {"f4", "f32"}, {"f2", "f16"}, {"f8", "f64"}, {"i8", "i64"}, {"i4", "i32"},
      {"i2", "i16"}, {"i1", "i8"},  {"u1", "u8"},  {"b1", "bool"}};
  auto it = m.find(npy);
  return it == m.end() ? "" : it->second;
}

bool parseTensor(const std::string &s, TensorSpec &t) {
  size_t a = s.find(':'), b = s.find(':', a + 1);
  if (a == std::string::npos || b == std::string::npos)
    return false;
  t.name = s.substr(0, a);
  t.dtype = s.substr(a + 1, b - a - 1);
  std::string dims = s.substr(b + 1);
  for (size_t p = 0; !dims.empty();) {
    size_t c = dims.find(',', p);
    t.dims.push_back(dims.substr(p, c - p));
    if (c == std::string::npos)
      break;
    p = c + 1;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string out, codePath, target = kCpuTarget;
  ArtifactMeta meta;
  meta.producer = "lockstep-test-pack";
  std::vector<NpyArray> arrays; // embedded weight data, one per weight
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return fail("missing value after " + flag);
    std::string v = argv[++i];
    if (flag == "-o") {
      out = v;
    } else if (flag == "--code") {
      codePath = v;
    } else if (flag == "--target") {
      target = v;
    } else if (flag == "--input" || flag == "--output") {
      TensorSpec t;
      if (!parseTensor(v, t))
        return fail("bad tensor '" + v + "'");
      (flag == "--input" ? meta.inputs : meta.outputs).push_back(t);
    } else if (flag == "--weight" || flag == "--external-weight") {
      size_t eq = v.find('=');
      if (eq == std::string::npos)
        return fail("bad weight '" + v + "'");
      NpyArray a;
      std::string error, file = v.substr(eq + 1);
      if (!readNpy(file, a, error))
        return fail(error);
      WeightSpec w;
      w.name = v.substr(0, eq);
      w.dtype = artifactDtype(a.dtype);
      w.shape = a.shape;
      w.length = a.data.size();
      if (flag == "--external-weight") {
        char abs[PATH_MAX];
        if (!realpath(file.c_str(), abs))
          return fail("cannot resolve '" + file + "'");
        std::ifstream f(abs, std::ios::binary | std::ios::ate);
        w.embedded = false;
        w.path = abs;
        w.offset = uint64_t(f.tellg()) - w.length; // the data ends the file
        if (!checksumFileRange(w.path, w.offset, w.length, w.checksum, error))
          return fail(error);
      }
      meta.weights.push_back(w);
      arrays.push_back(std::move(a));
    } else if (flag == "--property") {
      size_t eq = v.find('=');
      meta.properties.emplace_back(v.substr(0, eq),
                                   eq == std::string::npos ? "" : v.substr(eq + 1));
    } else {
      return fail("unknown flag " + flag);
    }
  }
  meta.target = target;
  if (out.empty())
    return fail("no -o");
  std::vector<uint8_t> code;
  if (!codePath.empty()) {
    std::ifstream f(codePath, std::ios::binary);
    if (!f)
      return fail("cannot read '" + codePath + "'");
    code.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::vector<EmbeddedWeight> embedded;
  for (size_t i = 0; i < meta.weights.size(); ++i)
    if (meta.weights[i].embedded)
      embedded.push_back({i, arrays[i].data.data(), arrays[i].data.size()});
  std::string error;
  if (!writeArtifact(out, meta, {code.data(), code.size()}, embedded, error))
    return fail(error);
  return 0;
}
