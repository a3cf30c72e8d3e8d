//===- TensorData.cpp - Initializer values as MLIR attributes -------------===//
#include "TensorData.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace mlir;
using namespace lockstep;

namespace {
template <typename Dst, typename Field>
void appendAs(std::string &bytes, const Field &field) {
  for (auto v : field) {
    Dst d = static_cast<Dst>(v);
    bytes.append(reinterpret_cast<const char *>(&d), sizeof(Dst));
  }
}
} // namespace

bool lockstep::isImportableShape(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxTensorElements)
      return false;
    // n * d <= max, checked without overflow (n and d are at most 2^40).
    if (d != 0 && n > kMaxTensorElements / d)
      return false;
    n *= d;
  }
  return true;
}

std::optional<std::string>
lockstep::readTensorValues(const onnx::TensorProto &t,
                           const std::optional<WeightLocation> &loc,
                           RankedTensorType type, DenseElementsAttr &out) {
  Type elt = type.getElementType();
  int64_t n = type.getNumElements();
  size_t width = elt.isInteger(1) ? 1 : (elt.getIntOrFloatBitWidth() + 7) / 8;
  std::string bytes;
  if (loc) {
    auto buf = llvm::MemoryBuffer::getFileSlice(loc->file, loc->length,
                                                loc->offset, false);
    if (!buf)
      return "cannot read the data of initializer '" + t.name() + "' from '" +
             loc->file + "'";
    bytes = (*buf)->getBuffer().str();
  } else if (t.has_raw_data()) {
    bytes = t.raw_data();
  } else {
    using TP = onnx::TensorProto;
    switch (t.data_type()) {
    case TP::FLOAT: appendAs<float>(bytes, t.float_data()); break;
    case TP::DOUBLE: appendAs<double>(bytes, t.double_data()); break;
    case TP::INT64: appendAs<int64_t>(bytes, t.int64_data()); break;
    case TP::INT32: appendAs<int32_t>(bytes, t.int32_data()); break;
    case TP::INT16: appendAs<int16_t>(bytes, t.int32_data()); break;
    case TP::UINT16: case TP::FLOAT16: case TP::BFLOAT16:
      appendAs<uint16_t>(bytes, t.int32_data()); break;
    case TP::INT8: appendAs<int8_t>(bytes, t.int32_data()); break;
    case TP::UINT8: case TP::BOOL: appendAs<uint8_t>(bytes, t.int32_data()); break;
    case TP::UINT32: appendAs<uint32_t>(bytes, t.uint64_data()); break;
    case TP::UINT64: appendAs<uint64_t>(bytes, t.uint64_data()); break;
    default: return "initializer '" + t.name() + "' has an unsupported data type";
    }
  }
  if (bytes.size() != size_t(n) * width)
    return "initializer '" + t.name() + "' holds " + std::to_string(bytes.size()) +
           " bytes of data, expected " + std::to_string(size_t(n) * width);
  if (elt.isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : bytes)
      bits.push_back(c != 0);
    out = DenseElementsAttr::get(type, bits);
    return std::nullopt;
  }
  out = DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(bytes.data(), bytes.size()));
  return std::nullopt;
}
