//===- DeviceArena.h - A step's device memory in one block ------*- C++ -*-===//
//
// Each call of a CUDA artifact (an exec, a serving step) takes its
// intermediates, inputs and outputs from one device block, the call's arena:
// allocation and free are host bookkeeping on offsets (no driver call, no
// synchronization), and the end of the call frees everything at once. A call
// that needs more than the arena holds takes the rest from the device
// allocator, and the arena grows to the call's peak before the next one
// (between calls, never inside one). In a steady state no call allocates
// device memory.
//
// ArenaLayout is the bookkeeping alone (offsets within a capacity), so that
// it is tested without a GPU; CudaMemory (CudaBackend.h) holds the block.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CUDA_DEVICEARENA_H
#define LOCKSTEP_RUNTIME_BACKEND_CUDA_DEVICEARENA_H

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace lockstep::rt {

class ArenaLayout {
public:
  /// Every offset is a multiple of this (cuMemAlloc's own alignment).
  static constexpr uint64_t kAlignment = 256;

  /// Frees everything; the arena now holds `capacity` bytes.
  void reset(uint64_t capacity);
  /// The offset of `bytes` (rounded up to kAlignment, at least one unit) of
  /// free space, the smallest free range that fits; nullopt when none does.
  std::optional<uint64_t> allocate(uint64_t bytes);
  /// Frees the range allocated at `offset`, merging it with free neighbours;
  /// false when no range starts there.
  bool release(uint64_t offset);

  uint64_t capacity() const { return capacity_; }
  /// Bytes allocated now, and the most at once since reset().
  uint64_t live() const { return live_; }
  uint64_t peak() const { return peak_; }
  /// Free ranges (for tests: a fully freed arena is one range).
  size_t freeRanges() const { return free_.size(); }

private:
  uint64_t capacity_ = 0, live_ = 0, peak_ = 0;
  std::map<uint64_t, uint64_t> free_;           // offset -> size
  std::unordered_map<uint64_t, uint64_t> used_; // offset -> size
};

} // namespace lockstep::rt

#endif
