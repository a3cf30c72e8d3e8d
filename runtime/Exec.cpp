//===- Exec.cpp - Running an artifact's graph once on given arrays --------===//
#include "lockstep/Runtime/Exec.h"

#include "lockstep/Runtime/MemRef.h"
#include "lockstep/Runtime/SymbolBinding.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

using namespace lockstep::rt;

namespace lockstep::rt {
/// Sets the buffers of OutputBuffer.
struct ExecAccess {
  /// Makes `b` hold `bytes` zeroed bytes, 64-byte aligned and never null
  /// (also for zero bytes), so that compiled code may assume alignment and a
  /// valid pointer; reuses its buffer when it is large enough. Not zeroed
  /// when `zero` is false: a download from the device writes every byte.
  /// With `pinned`, a new buffer is its page-locked host memory where it has
  /// some (downloads into it run at the link's full speed).
  static bool allocate(OutputBuffer &b, uint64_t bytes, std::vector<int64_t> shape,
                       bool zero = true, DeviceMemory *pinned = nullptr) {
    uint64_t n = bytes > 64 ? bytes : 64;
    if (!b.ptr_ || b.capacity_ < n) {
      b.ptr_.reset(); // the old buffer first: the new one may take its place
      b.capacity_ = 0;
      DeviceMemory::HostBlock block;
      if (pinned && bytes > 0)
        block = pinned->hostBlock(n);
      if (!block.data) {
        if (n > SIZE_MAX - 64 || posix_memalign(&block.data, 64, size_t(n)) != 0)
          return false;
        block.release = nullptr;
      }
      b.ptr_ = std::unique_ptr<void, OutputBuffer::Free>(block.data,
                                                         OutputBuffer::Free{block.release});
      b.capacity_ = n;
    }
    if (zero)
      std::memset(b.ptr_.get(), 0, size_t(n));
    b.bytes_ = bytes;
    b.shape_ = std::move(shape);
    return true;
  }
  static void *data(OutputBuffer &b) { return b.ptr_.get(); }
};
} // namespace lockstep::rt

namespace {

/// Rewrites every NaN of `n` elements of `bits` (a float type of `width`
/// bits) to the canonical quiet NaN: sign clear, quiet bit set, payload 0.
template <typename U>
void canonicalizeNaNs(U *bits, uint64_t n, int exponentBits, int mantissaBits) {
  const U exponent = U(((U(1) << exponentBits) - 1) << mantissaBits);
  const U mantissa = U((U(1) << mantissaBits) - 1);
  const U canonical = U(exponent | (U(1) << (mantissaBits - 1)));
  for (uint64_t i = 0; i < n; ++i)
    if ((bits[i] & exponent) == exponent && (bits[i] & mantissa))
      bits[i] = canonical;
}

/// The NaN policy of docs/numerics.md: what the runtime hands back has one
/// NaN, whatever the device (a GPU writes 0x7fffffff, x86 keeps payloads).
void canonicalizeOutput(const std::string &dtype, void *data, uint64_t bytes) {
  if (dtype == "f32")
    canonicalizeNaNs(static_cast<uint32_t *>(data), bytes / 4, 8, 23);
  else if (dtype == "f64")
    canonicalizeNaNs(static_cast<uint64_t *>(data), bytes / 8, 11, 52);
  else if (dtype == "f16")
    canonicalizeNaNs(static_cast<uint16_t *>(data), bytes / 2, 5, 10);
  else if (dtype == "bf16")
    canonicalizeNaNs(static_cast<uint16_t *>(data), bytes / 2, 8, 7);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
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

bool runGraphViewsImpl(const LoadedArtifact &artifact, const CpuModule &module,
                       const std::vector<TensorView> &inputs,
                       std::vector<OutputBuffer> &outputs, std::string &error,
                       DeviceMemory *device, KeptOutputs *kept) {
  const ArtifactMeta &meta = artifact.meta();
  if (!module.entry()) {
    error = "the artifact's code is not loaded";
    return false;
  }
  if (kept && (!device || kept->keep.size() != meta.outputs.size())) {
    error = "outputs can stay on a device only with one, and one flag per output";
    return false;
  }
  if (inputs.size() != meta.inputs.size()) {
    error = "expected " + std::to_string(meta.inputs.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  std::vector<std::vector<int64_t>> inShapes;
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    const TensorSpec &t = meta.inputs[i];
    const TensorView &v = inputs[i];
    if (v.dtype != t.dtype) {
      error = "input " + quoted(t.name) + " is " + v.dtype + ", but the model expects " +
              t.dtype;
      return false;
    }
    if (v.shape.size() != t.dims.size()) {
      error = "input " + quoted(t.name) + " has rank " + std::to_string(v.shape.size()) +
              " " + shapeText(v.shape) + ", but the model expects rank " +
              std::to_string(t.dims.size()) + " " + dimsText(t.dims);
      return false;
    }
    bool empty = false;
    for (int64_t d : v.shape) {
      if (d < 0) {
        error = "input " + quoted(t.name) + " has a negative dim " + shapeText(v.shape);
        return false;
      }
      empty |= d == 0;
    }
    if (!v.data && !empty) {
      error = "input " + quoted(t.name) + " has no data";
      return false;
    }
    if (v.onDevice && !device) {
      error = "input " + quoted(t.name) + " is device memory, but the call runs on the host";
      return false;
    }
    if (reinterpret_cast<uintptr_t>(v.data) % kMinTensorAlignment) {
      error = "input " + quoted(t.name) + " is not " +
              std::to_string(kMinTensorAlignment) + "-byte aligned";
      return false;
    }
    inShapes.push_back(v.shape);
  }
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

  // An empty input or an empty external weight file has no memory: give the
  // entry a valid, aligned pointer all the same.
  alignas(64) static const uint8_t kNothing[64] = {};
  std::vector<MemRefDescriptor> descs;
  descs.reserve(meta.inputs.size() + meta.weights.size() + meta.outputs.size());
  // With a device, every pointer the entry gets is device memory.
  struct EndCall {
    DeviceMemory *d;
    ~EndCall() {
      if (d)
        d->endCall();
    }
  } endCall{kept ? nullptr : device};
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    const void *data = inputs[i].data ? inputs[i].data : kNothing;
    if (device && !inputs[i].onDevice) {
      uint64_t bytes = dtypeSize(meta.inputs[i].dtype);
      for (int64_t d : inputs[i].shape)
        bytes *= uint64_t(d);
      void *dev = nullptr;
      if (!device->upload(data, bytes, dev, error))
        return false;
      data = dev;
    }
    descs.emplace_back(data, inputs[i].shape);
  }
  for (size_t i = 0; i < meta.weights.size(); ++i) {
    const void *data = artifact.weight(i).data;
    data = data ? data : kNothing;
    if (device) {
      void *dev = nullptr;
      if (!device->weight(i, data, artifact.weight(i).data ? meta.weights[i].length : 0, dev,
                          error))
        return false;
      data = dev;
    }
    descs.emplace_back(data, meta.weights[i].shape);
  }
  outputs.resize(meta.outputs.size());
  std::vector<void *> deviceOut(meta.outputs.size());
  if (kept)
    kept->at.assign(meta.outputs.size(), nullptr);
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    bool stays = kept && kept->keep[i];
    // A device's output is downloaded whole (or stays there): no zeroing.
    if (!ExecAccess::allocate(outputs[i], stays ? 0 : outBytes[i], outShapes[i], !device,
                              kept && kept->pinned ? device : nullptr)) {
      error = "out of memory for output " + quoted(meta.outputs[i].name) + " (" +
              std::to_string(outBytes[i]) + " bytes)";
      return false;
    }
    if (device && !device->allocate(outBytes[i], deviceOut[i], error))
      return false;
    if (stays)
      kept->at[i] = deviceOut[i];
    descs.emplace_back(device ? deviceOut[i] : outputs[i].data(), outShapes[i]);
  }
  std::vector<void *> args;
  for (MemRefDescriptor &d : descs)
    args.push_back(d.get());

  module.entry()(args.data());
  if (device) {
    if (!device->finish(error))
      return false;
    for (size_t i = 0; i < meta.outputs.size(); ++i)
      if (!(kept && kept->keep[i]) &&
          !device->download(ExecAccess::data(outputs[i]), deviceOut[i], outBytes[i], error))
        return false;
  }
  for (size_t i = 0; i < meta.outputs.size(); ++i)
    if (!(kept && kept->keep[i]))
      canonicalizeOutput(meta.outputs[i].dtype, ExecAccess::data(outputs[i]), outBytes[i]);
  return true;
}

bool runGraphImpl(const LoadedArtifact &artifact, const CpuModule &module,
                  const std::map<std::string, NpyArray> &inputs,
                  NamedArrays &outputs, std::string &error, DeviceMemory *device) {
  const ArtifactMeta &meta = artifact.meta();
  if (!module.entry()) {
    error = "the artifact's code is not loaded";
    return false;
  }
  if (!checkInputs(meta, inputs, error))
    return false;
  // Inputs are copied to aligned buffers: .npy data is not 64-byte aligned.
  std::vector<OutputBuffer> inBufs(meta.inputs.size());
  std::vector<TensorView> views(meta.inputs.size());
  for (size_t i = 0; i < meta.inputs.size(); ++i) {
    const NpyArray &a = inputs.at(meta.inputs[i].name);
    if (!ExecAccess::allocate(inBufs[i], a.data.size(), a.shape)) {
      error = "out of memory for input " + quoted(meta.inputs[i].name);
      return false;
    }
    if (!a.data.empty())
      std::memcpy(ExecAccess::data(inBufs[i]), a.data.data(), a.data.size());
    views[i] = {inBufs[i].data(), meta.inputs[i].dtype, a.shape};
  }
  std::vector<OutputBuffer> outBufs;
  if (!runGraphViewsImpl(artifact, module, views, outBufs, error, device, nullptr))
    return false;
  outputs.clear();
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    NpyArray a;
    a.dtype = dtypeToNpy(meta.outputs[i].dtype);
    a.shape = outBufs[i].shape();
    const uint8_t *p = outBufs[i].as<uint8_t>();
    a.data.assign(p, p + outBufs[i].bytes());
    outputs.emplace_back(meta.outputs[i].name, std::move(a));
  }
  return true;
}

} // namespace

bool lockstep::rt::runGraph(const LoadedArtifact &artifact,
                            const CpuModule &module,
                            const std::map<std::string, NpyArray> &inputs,
                            NamedArrays &outputs, std::string &error,
                            DeviceMemory *device) {
  try {
    return runGraphImpl(artifact, module, inputs, outputs, error, device);
  } catch (const std::bad_alloc &) {
    error = "out of memory";
    return false;
  }
}

bool lockstep::rt::runGraphViews(const LoadedArtifact &artifact,
                                 const CpuModule &module,
                                 const std::vector<TensorView> &inputs,
                                 std::vector<OutputBuffer> &outputs,
                                 std::string &error, DeviceMemory *device,
                                 KeptOutputs *kept) {
  try {
    return runGraphViewsImpl(artifact, module, inputs, outputs, error, device, kept);
  } catch (const std::bad_alloc &) {
    error = "out of memory";
    return false;
  }
}
