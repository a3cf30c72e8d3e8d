//===- ModelReader.cpp - Reading ONNX files without their weights ---------===//
//
// A .onnx file is a serialized ModelProto. Its initializers' raw_data can be
// most of the file, so instead of parsing it whole, this walks the protobuf
// wire format of ModelProto.graph.initializer and copies every field but
// raw_data into a smaller buffer, recording where each raw_data lies in the
// file. Memory is then proportional to the graph, not to the weights.
//
//===----------------------------------------------------------------------===//
#include "ModelReader.h"

#include "onnx/defs/parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace lockstep;

namespace {

constexpr int kModelGraph = 7;        // ModelProto.graph
constexpr int kGraphInitializer = 5;  // GraphProto.initializer
constexpr int kTensorRawData = 9;     // TensorProto.raw_data

struct WireError {
  std::string msg;
};

class WireReader {
public:
  WireReader(const uint8_t *base, size_t begin, size_t end)
      : base(base), pos(begin), end(end) {}
  bool done() const { return pos >= end; }
  size_t offset() const { return pos; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= end)
        throw WireError{"truncated varint"};
      uint8_t b = base[pos++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    throw WireError{"malformed varint"};
  }

  /// Reads one field header and skips its payload; returns the payload span.
  void field(int &number, int &wireType, size_t &payloadBegin,
             size_t &payloadEnd, size_t &fieldBegin) {
    fieldBegin = pos;
    uint64_t tag = varint();
    number = int(tag >> 3);
    wireType = int(tag & 7);
    if (number == 0)
      throw WireError{"invalid field number 0"};
    switch (wireType) {
    case 0:
      payloadBegin = pos;
      varint();
      break;
    case 1:
      payloadBegin = pos;
      pos += 8;
      break;
    case 5:
      payloadBegin = pos;
      pos += 4;
      break;
    case 2: {
      uint64_t len = varint();
      payloadBegin = pos;
      if (len > end - pos)
        throw WireError{"length-delimited field runs past the end"};
      pos += len;
      break;
    }
    default:
      throw WireError{"unsupported wire type " + std::to_string(wireType)};
    }
    if (pos > end)
      throw WireError{"field runs past the end"};
    payloadEnd = pos;
  }

private:
  const uint8_t *base;
  size_t pos, end;
};

void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

void putLenField(std::string &out, int number, const std::string &payload) {
  putVarint(out, (uint64_t(number) << 3) | 2);
  putVarint(out, payload.size());
  out += payload;
}

struct Stripper {
  const uint8_t *base;
  std::vector<std::optional<std::pair<uint64_t, uint64_t>>> rawSpans;

  std::string tensor(size_t begin, size_t end) {
    std::string out;
    std::optional<std::pair<uint64_t, uint64_t>> raw;
    WireReader r(base, begin, end);
    while (!r.done()) {
      int num, wt;
      size_t pb, pe, fb;
      r.field(num, wt, pb, pe, fb);
      if (num == kTensorRawData && wt == 2)
        raw = std::make_pair(uint64_t(pb), uint64_t(pe - pb));
      else
        out.append(reinterpret_cast<const char *>(base + fb), pe - fb);
    }
    rawSpans.push_back(raw);
    return out;
  }

  std::string graph(size_t begin, size_t end) {
    std::string out;
    WireReader r(base, begin, end);
    while (!r.done()) {
      int num, wt;
      size_t pb, pe, fb;
      r.field(num, wt, pb, pe, fb);
      if (num == kGraphInitializer && wt == 2)
        putLenField(out, num, tensor(pb, pe));
      else
        out.append(reinterpret_cast<const char *>(base + fb), pe - fb);
    }
    return out;
  }

  std::string model(size_t size) {
    std::string out;
    WireReader r(base, 0, size);
    while (!r.done()) {
      int num, wt;
      size_t pb, pe, fb;
      r.field(num, wt, pb, pe, fb);
      if (num == kModelGraph && wt == 2)
        putLenField(out, num, graph(pb, pe));
      else
        out.append(reinterpret_cast<const char *>(base + fb), pe - fb);
    }
    return out;
  }
};

/// `path` made absolute, so that weight references do not depend on the
/// directory the compiler ran in.
std::string absolutePath(const std::string &path) {
  llvm::SmallString<256> abs(path);
  llvm::sys::fs::make_absolute(abs);
  llvm::sys::path::remove_dots(abs, /*remove_dot_dot=*/true);
  return std::string(abs);
}

std::optional<std::string> resolveExternalData(const std::string &modelPath,
                                               LoadedModel &out) {
  llvm::SmallString<256> dir(absolutePath(modelPath));
  llvm::sys::path::remove_filename(dir);
  const auto &graph = out.model.graph();
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto &t = graph.initializer(i);
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    WeightLocation loc;
    bool haveLength = false;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        loc.file = kv.value();
      else if (kv.key() == "offset")
        loc.offset = std::stoull(kv.value());
      else if (kv.key() == "length") {
        loc.length = std::stoull(kv.value());
        haveLength = true;
      }
    }
    if (loc.file.empty())
      return "initializer '" + t.name() + "' has external data without a location";
    llvm::SmallString<256> full(dir);
    llvm::sys::path::append(full, loc.file);
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(full, size))
      return "external data file '" + std::string(full) + "' of initializer '" +
             t.name() + "' is missing";
    if (!haveLength)
      loc.length = size - std::min(size, loc.offset);
    // Checked without computing offset + length, which can wrap around
    // (stoull takes "-1" as 2^64 - 1).
    if (loc.offset > size || loc.length > size - loc.offset) {
      std::string needs =
          loc.length > UINT64_MAX - loc.offset
              ? "offset " + std::to_string(loc.offset) + " + length " +
                    std::to_string(loc.length)
              : std::to_string(loc.offset + loc.length) + " bytes";
      return "external data file '" + std::string(full) + "' is too short for initializer '" +
             t.name() + "' (needs " + needs + ", has " + std::to_string(size) + ")";
    }
    loc.file = std::string(full);
    out.initializerData[i] = loc;
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> lockstep::readBinaryModel(const std::string &path,
                                                     LoadedModel &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return "cannot open '" + path + "': " + buf.getError().message();
  const auto *base = reinterpret_cast<const uint8_t *>((*buf)->getBufferStart());
  Stripper s{base, {}};
  std::string stripped;
  try {
    stripped = s.model((*buf)->getBufferSize());
  } catch (const WireError &e) {
    return "'" + path + "' is not a valid ONNX model (malformed or truncated: " +
           e.msg + ")";
  }
  if (!out.model.ParseFromString(stripped))
    return "'" + path + "' is not a valid ONNX model (protobuf parse failed)";
  if (!out.model.has_graph())
    return "'" + path + "' holds no graph";
  int n = out.model.graph().initializer_size();
  if ((size_t)n != s.rawSpans.size())
    return "'" + path + "': initializer count mismatch while reading";
  out.initializerData.assign(n, std::nullopt);
  std::string abs = absolutePath(path);
  for (int i = 0; i < n; ++i)
    if (s.rawSpans[i])
      out.initializerData[i] =
          WeightLocation{abs, s.rawSpans[i]->first, s.rawSpans[i]->second};
  try {
    return resolveExternalData(path, out);
  } catch (const std::exception &) {
    return "'" + path + "': malformed external data offset or length";
  }
}

std::optional<std::string> lockstep::readTextModel(const std::string &path,
                                                   LoadedModel &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return "cannot open '" + path + "': " + buf.getError().message();
  std::string text = (*buf)->getBuffer().str();
  onnx::Common::Status status;
  try {
    status = onnx::OnnxParser::Parse(out.model, text.c_str());
  } catch (const std::exception &e) {
    // ONNX's parser throws on malformed numbers (std::stoll).
    return "'" + path + "': ONNX text syntax error: malformed literal (" +
           e.what() + ")";
  }
  if (!status.IsOK())
    return "'" + path + "': ONNX text syntax error: " + status.ErrorMessage();
  out.initializerData.assign(out.model.graph().initializer_size(), std::nullopt);
  try {
    return resolveExternalData(path, out);
  } catch (const std::exception &) {
    return "'" + path + "': malformed external data offset or length";
  }
}
