//===- MemRef.h - Memref descriptors for the entry ABI ---------*- C++ -*-===//
//
// MLIR's ranked memref descriptor, as compiled code reads it:
//
//   struct { void *allocated; void *aligned; int64_t offset;
//            int64_t sizes[rank]; int64_t strides[rank]; }
//
// The rank varies per argument, so the descriptor is built in a buffer of
// 8-byte words. The runtime passes contiguous row-major tensors: offset 0,
// strides[i] = product of sizes[i+1:].
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_MEMREF_H
#define LOCKSTEP_RUNTIME_MEMREF_H

#include <cstdint>
#include <vector>

namespace lockstep::rt {

class MemRefDescriptor {
public:
  MemRefDescriptor(const void *data, const std::vector<int64_t> &shape);
  /// The address to put in the entry's args array.
  void *get() { return words.data(); }

private:
  std::vector<int64_t> words;
};

/// Row-major contiguous strides of `shape`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape);

} // namespace lockstep::rt

#endif
