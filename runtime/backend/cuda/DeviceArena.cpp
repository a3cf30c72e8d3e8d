//===- DeviceArena.cpp - The offsets of a call's arena ---------------------===//
#include "lockstep/Runtime/Backend/Cuda/DeviceArena.h"

#include <iterator>

using namespace lockstep::rt;

void ArenaLayout::reset(uint64_t capacity) {
  capacity_ = capacity / kAlignment * kAlignment;
  live_ = peak_ = 0;
  free_.clear();
  used_.clear();
  if (capacity_)
    free_[0] = capacity_;
}

std::optional<uint64_t> ArenaLayout::allocate(uint64_t bytes) {
  uint64_t size = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (size < bytes) // overflowed
    return std::nullopt;
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->second >= size && (best == free_.end() || it->second < best->second))
      best = it;
  if (best == free_.end())
    return std::nullopt;
  uint64_t offset = best->first, rest = best->second - size;
  free_.erase(best);
  if (rest)
    free_[offset + size] = rest;
  used_[offset] = size;
  live_ += size;
  if (live_ > peak_)
    peak_ = live_;
  return offset;
}

bool ArenaLayout::release(uint64_t offset) {
  auto u = used_.find(offset);
  if (u == used_.end())
    return false;
  uint64_t size = u->second;
  used_.erase(u);
  live_ -= size;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return true;
    }
  }
  free_[offset] = size;
  return true;
}
