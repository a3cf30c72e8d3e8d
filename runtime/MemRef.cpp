//===- MemRef.cpp - Memref descriptors for the entry ABI ------------------===//
#include "lockstep/Runtime/MemRef.h"

#include <cstring>

using namespace lockstep::rt;

static_assert(sizeof(void *) == sizeof(int64_t),
              "the entry ABI is defined for 64-bit targets");

std::vector<int64_t>
lockstep::rt::rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

MemRefDescriptor::MemRefDescriptor(const void *data,
                                   const std::vector<int64_t> &shape)
    : words(3 + 2 * shape.size(), 0) {
  // Both pointers are the data: the runtime owns the allocation, and the
  // compiled code never frees it.
  std::memcpy(&words[0], &data, sizeof data);
  std::memcpy(&words[1], &data, sizeof data);
  words[2] = 0;
  std::vector<int64_t> strides = rowMajorStrides(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    words[3 + i] = shape[i];
    words[3 + shape.size() + i] = strides[i];
  }
}
