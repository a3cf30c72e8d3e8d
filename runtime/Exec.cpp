//===- Exec.cpp - Running an artifact's graph once on given arrays --------===//
#include "Exec.h"

#include "MemRef.h"
#include "SymbolBinding.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

using namespace lockstep::rt;

namespace {

// A zeroed, 64-byte aligned buffer, never null (also for zero bytes), so
// that compiled code may assume alignment and a valid pointer.
struct AlignedBuffer {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr;

  bool allocate(uint64_t bytes) {
    void *p = nullptr;
    size_t n = bytes ? size_t(bytes) : 64;
    if (bytes > SIZE_MAX - 64 || posix_memalign(&p, 64, n) != 0)
      return false;
    std::memset(p, 0, n);
    ptr.reset(p);
    return true;
  }
};

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string dimsText(const std::vector<std::string> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i];
  return s + "]";
}

// Every input given, no unknown one, each of the right dtype and rank.
bool checkInputs(const ArtifactMeta &meta,
                 const std::map<std::string, NpyArray> &inputs,
                 std::string &error) {
  for (const auto &[name, array] : inputs) {
    bool known = false;
    for (const TensorSpec &t : meta.inputs)
      known |= t.name == name;
    if (known)
      continue;
    std::string names;
    for (const TensorSpec &t : meta.inputs)
      names += (names.empty() ? "" : ", ") + quoted(t.name);
    error = "unknown input " + quoted(name) + " (the model's inputs: " +
            (names.empty() ? "none" : names) + ")";
    return false;
  }
  for (const TensorSpec &t : meta.inputs) {
    auto it = inputs.find(t.name);
    std::string want = t.dtype + " " + dimsText(t.dims);
    if (it == inputs.end()) {
      error = "missing input " + quoted(t.name) + " (" + want + ")";
      return false;
    }
    const NpyArray &a = it->second;
    if (a.dtype != dtypeToNpy(t.dtype)) {
      error = "input " + quoted(t.name) + " has .npy dtype '" + a.dtype +
              "', but the model expects " + t.dtype + " (.npy '" +
              dtypeToNpy(t.dtype) + "')";
      return false;
    }
    if (a.shape.size() != t.dims.size()) {
      error = "input " + quoted(t.name) + " has rank " +
              std::to_string(a.shape.size()) + " " + shapeText(a.shape) +
              ", but the model expects rank " + std::to_string(t.dims.size()) +
              " " + dimsText(t.dims);
      return false;
    }
    if (a.data.size() != uint64_t(a.numElements()) * dtypeSize(t.dtype)) {
      error = "input " + quoted(t.name) + " has " +
              std::to_string(a.data.size()) + " bytes of data for shape " +
              shapeText(a.shape);
      return false;
    }
  }
  return true;
}

bool runGraphImpl(const LoadedArtifact &artifact, const CpuModule &module,
                  const std::map<std::string, NpyArray> &inputs,
                  NamedArrays &outputs, std::string &error) {
  const ArtifactMeta &meta = artifact.meta();
  if (!module.entry()) {
    error = "the artifact's code is not loaded";
    return false;
  }
  if (!checkInputs(meta, inputs, error))
    return false;
  std::vector<std::vector<int64_t>> inShapes;
  for (const TensorSpec &t : meta.inputs)
    inShapes.push_back(inputs.at(t.name).shape);
  SymbolValues values;
  if (!bindSymbols(meta.inputs, inShapes, values, error))
    return false;

  std::vector<std::vector<int64_t>> outShapes(meta.outputs.size());
  std::vector<uint64_t> outBytes(meta.outputs.size());
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    const TensorSpec &t = meta.outputs[i];
    if (!evaluateShape(t, values, outShapes[i], error)) {
      error = "output " + error;
      return false;
    }
    int64_t n = 1;
    for (int64_t d : outShapes[i])
      n *= d; // cannot overflow: evaluateShape checked
    uint64_t size = dtypeSize(t.dtype);
    if (n && size > UINT64_MAX / uint64_t(n)) {
      error = "output " + quoted(t.name) + " is too large";
      return false;
    }
    outBytes[i] = uint64_t(n) * size;
  }

  // Inputs are copied to aligned buffers: .npy data is not 64-byte aligned.
  std::vector<AlignedBuffer> inBufs(meta.inputs.size());
  std::vector<AlignedBuffer> outBufs(meta.outputs.size());
  std::vector<MemRefDescriptor> descs;
  descs.reserve(meta.inputs.size() + meta.weights.size() + meta.outputs.size());
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    const NpyArray &a = inputs.at(meta.inputs[i].name);
    if (!inBufs[i].allocate(a.data.size())) {
      error = "out of memory for input " + quoted(meta.inputs[i].name);
      return false;
    }
    if (!a.data.empty())
      std::memcpy(inBufs[i].ptr.get(), a.data.data(), a.data.size());
    descs.emplace_back(inBufs[i].ptr.get(), a.shape);
  }
  // An empty external weight file maps to no memory: give the entry a valid,
  // aligned pointer all the same.
  alignas(64) static const uint8_t kNothing[64] = {};
  for (size_t i = 0; i < meta.weights.size(); ++i) {
    const uint8_t *data = artifact.weight(i).data;
    descs.emplace_back(data ? data : kNothing, meta.weights[i].shape);
  }
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    if (!outBufs[i].allocate(outBytes[i])) {
      error = "out of memory for output " + quoted(meta.outputs[i].name) +
              " (" + std::to_string(outBytes[i]) + " bytes)";
      return false;
    }
    descs.emplace_back(outBufs[i].ptr.get(), outShapes[i]);
  }
  std::vector<void *> args;
  for (MemRefDescriptor &d : descs)
    args.push_back(d.get());

  module.entry()(args.data());

  outputs.clear();
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    NpyArray a;
    a.dtype = dtypeToNpy(meta.outputs[i].dtype);
    a.shape = outShapes[i];
    const uint8_t *p = static_cast<const uint8_t *>(outBufs[i].ptr.get());
    a.data.assign(p, p + outBytes[i]);
    outputs.emplace_back(meta.outputs[i].name, std::move(a));
  }
  return true;
}

} // namespace

bool lockstep::rt::runGraph(const LoadedArtifact &artifact,
                            const CpuModule &module,
                            const std::map<std::string, NpyArray> &inputs,
                            NamedArrays &outputs, std::string &error) {
  try {
    return runGraphImpl(artifact, module, inputs, outputs, error);
  } catch (const std::bad_alloc &) {
    error = "out of memory";
    return false;
  }
}
