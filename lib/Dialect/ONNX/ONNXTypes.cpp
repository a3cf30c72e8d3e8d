//===- ONNXTypes.cpp - ONNX data types and MLIR element types -------------===//
#include "lockstep/Dialect/ONNX/ONNXTypes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace {
// TensorProto.DataType values.
enum : int64_t {
  FLOAT = 1, UINT8 = 2, INT8 = 3, UINT16 = 4, INT16 = 5, INT32 = 6, INT64 = 7,
  STRING = 8, BOOL = 9, FLOAT16 = 10, DOUBLE = 11, UINT32 = 12, UINT64 = 13,
  BFLOAT16 = 16
};
} // namespace

Type lockstep::onnxir::getElementType(int64_t t, MLIRContext *ctx) {
  switch (t) {
  case FLOAT: return Float32Type::get(ctx);
  case DOUBLE: return Float64Type::get(ctx);
  case FLOAT16: return Float16Type::get(ctx);
  case BFLOAT16: return BFloat16Type::get(ctx);
  case INT64: return IntegerType::get(ctx, 64);
  case INT32: return IntegerType::get(ctx, 32);
  case INT16: return IntegerType::get(ctx, 16);
  case INT8: return IntegerType::get(ctx, 8);
  case UINT8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case UINT16: return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case UINT32: return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case UINT64: return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case BOOL: return IntegerType::get(ctx, 1);
  default: return {};
  }
}

int64_t lockstep::onnxir::getOnnxDataType(Type type) {
  if (type.isF32()) return FLOAT;
  if (type.isF64()) return DOUBLE;
  if (type.isF16()) return FLOAT16;
  if (type.isBF16()) return BFLOAT16;
  if (auto it = dyn_cast<IntegerType>(type)) {
    bool u = it.isUnsigned();
    switch (it.getWidth()) {
    case 1: return BOOL;
    case 8: return u ? UINT8 : INT8;
    case 16: return u ? UINT16 : INT16;
    case 32: return u ? UINT32 : INT32;
    case 64: return u ? UINT64 : INT64;
    }
  }
  return 0;
}

const char *lockstep::onnxir::getOnnxDataTypeName(int64_t t) {
  switch (t) {
  case FLOAT: return "float";
  case UINT8: return "uint8";
  case INT8: return "int8";
  case UINT16: return "uint16";
  case INT16: return "int16";
  case INT32: return "int32";
  case INT64: return "int64";
  case STRING: return "string";
  case BOOL: return "bool";
  case FLOAT16: return "float16";
  case DOUBLE: return "double";
  case UINT32: return "uint32";
  case UINT64: return "uint64";
  case BFLOAT16: return "bfloat16";
  default: return "unsupported data type";
  }
}
