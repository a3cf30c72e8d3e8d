//===- KVCache.cpp - The paged key/value cache ----------------------------===//
#include "lockstep/Runtime/Serving/KVCache.h"

#include <cstdlib>
#include <cstring>
#include <limits>

using namespace lockstep::rt;

BlockAllocator::BlockAllocator(int64_t count) : count(count) {
  for (int64_t i = 0; i < count; ++i)
    freeIds.insert(freeIds.end(), int32_t(i));
}

bool BlockAllocator::allocate(int64_t n, std::vector<int32_t> &out) {
  if (n < 0 || n > freeCount())
    return false;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(*freeIds.begin());
    freeIds.erase(freeIds.begin());
  }
  return true;
}

void BlockAllocator::free(const std::vector<int32_t> &ids) {
  for (int32_t id : ids)
    if (id >= 0 && id < count)
      freeIds.insert(id);
}

namespace {

bool mul(int64_t a, int64_t b, int64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

const std::vector<int32_t> kNoBlocks;

} // namespace

KVCache::KVCache(const KVCacheConfig &config)
    : cfg(config), device(config.numBlocks), host(config.hostBlocks) {}

KVCache::~KVCache() {
  for (void *p : allocations)
    std::free(p);
  for (float *p : memoryPools)
    memory->release(p);
}

float *KVCache::allocatePool(int64_t floats) {
  // calloc keeps large pools lazily zeroed (fresh pages); the pointer is
  // rounded up to the alignment within 64 spare bytes.
  void *raw = std::calloc(size_t(floats) * 4 + kPoolAlignment, 1);
  if (!raw)
    return nullptr;
  allocations.push_back(raw);
  uintptr_t p = reinterpret_cast<uintptr_t>(raw);
  p = (p + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
  return reinterpret_cast<float *>(p);
}

std::unique_ptr<KVCache> KVCache::create(const KVCacheConfig &c,
                                         std::string &error, PoolMemory *memory) {
  if (c.layers <= 0 || c.kvHeads <= 0 || c.headDim <= 0 || c.blockSize <= 0 ||
      c.numBlocks <= 0 || c.hostBlocks < 0) {
    error = "KV cache: layers, kvHeads, headDim, blockSize and numBlocks must "
            "be positive and hostBlocks non-negative";
    return nullptr;
  }
  if (c.numBlocks > std::numeric_limits<int32_t>::max() ||
      c.hostBlocks > std::numeric_limits<int32_t>::max()) {
    error = "KV cache: block ids are int32; too many blocks";
    return nullptr;
  }
  int64_t row, block, devFloats, hostFloats, bytes, poolCount;
  if (!mul(c.kvHeads, c.headDim, row) || !mul(row, c.blockSize, block) ||
      !mul(block, c.numBlocks, devFloats) ||
      !mul(block, c.hostBlocks, hostFloats) ||
      !mul(devFloats > hostFloats ? devFloats : hostFloats, 4, bytes) ||
      bytes > std::numeric_limits<int64_t>::max() - kPoolAlignment ||
      !mul(c.layers, 2, poolCount)) {
    error = "KV cache: pool size overflows";
    return nullptr;
  }
  std::unique_ptr<KVCache> kv(new KVCache(c));
  kv->memory = memory;
  for (int64_t i = 0; i < 2 * c.layers; ++i) {
    float *p = nullptr;
    std::string why;
    if (memory) {
      p = memory->allocateZeroed(uint64_t(devFloats) * 4, why);
      if (p)
        kv->memoryPools.push_back(p);
    } else {
      p = kv->allocatePool(devFloats);
    }
    if (!p) {
      error = "KV cache: cannot allocate " + std::to_string(devFloats * 4) +
              " bytes for a device pool" + (why.empty() ? "" : ": " + why);
      return nullptr;
    }
    kv->pools.push_back(p);
    if (c.hostBlocks > 0) {
      float *h = kv->allocatePool(hostFloats);
      if (!h) {
        error = "KV cache: cannot allocate " + std::to_string(hostFloats * 4) +
                " bytes of swap space";
        return nullptr;
      }
      kv->hostPools.push_back(h);
    }
  }
  return kv;
}

int64_t KVCache::rowOffset(const std::vector<int32_t> &table,
                           int64_t position) const {
  if (position < 0)
    return -1;
  int64_t b = position / cfg.blockSize;
  if (b >= int64_t(table.size()) || table[b] < 0 || table[b] >= cfg.numBlocks)
    return -1;
  return (int64_t(table[b]) * cfg.blockSize + position % cfg.blockSize) *
         rowStride();
}

int64_t KVCache::blocksNeeded(uint64_t seq, int64_t newLength) const {
  auto it = seqs.find(seq);
  int64_t have = it == seqs.end() ? 0 : int64_t(it->second.table.size());
  int64_t need = blocksFor(newLength) - have;
  return need > 0 ? need : 0;
}

bool KVCache::canReserve(uint64_t seq, int64_t newLength) const {
  auto it = seqs.find(seq);
  if (newLength < 0)
    return false;
  if (it != seqs.end() &&
      (it->second.swapped || newLength < it->second.length))
    return false;
  return blocksNeeded(seq, newLength) <= device.freeCount();
}

bool KVCache::reserve(uint64_t seq, int64_t newLength) {
  if (!canReserve(seq, newLength))
    return false;
  int64_t need = blocksNeeded(seq, newLength);
  Seq &s = seqs[seq];
  if (!device.allocate(need, s.table))
    return false; // unreachable: canReserve checked the count
  s.length = newLength;
  return true;
}

const std::vector<int32_t> &KVCache::blockTable(uint64_t seq) const {
  auto it = seqs.find(seq);
  if (it == seqs.end() || it->second.swapped)
    return kNoBlocks;
  return it->second.table;
}

int64_t KVCache::length(uint64_t seq) const {
  auto it = seqs.find(seq);
  return it == seqs.end() ? 0 : it->second.length;
}

bool KVCache::isSwappedOut(uint64_t seq) const {
  auto it = seqs.find(seq);
  return it != seqs.end() && it->second.swapped;
}

void KVCache::release(uint64_t seq) {
  auto it = seqs.find(seq);
  if (it == seqs.end())
    return;
  if (it->second.swapped)
    host.free(it->second.table);
  else
    device.free(it->second.table);
  seqs.erase(it);
}

bool KVCache::moveBlocks(uint64_t seq, bool out) {
  auto it = seqs.find(seq);
  if (it == seqs.end() || it->second.swapped == out)
    return false;
  Seq &s = it->second;
  BlockAllocator &to = out ? host : device, &from = out ? device : host;
  std::vector<float *> &toPools = out ? hostPools : pools;
  std::vector<float *> &fromPools = out ? pools : hostPools;
  std::vector<int32_t> table;
  if (!to.allocate(int64_t(s.table.size()), table))
    return false;
  size_t bytes = size_t(blockStride()) * sizeof(float);
  for (size_t p = 0; p < pools.size(); ++p)
    for (size_t i = 0; i < s.table.size(); ++i) {
      float *dst = toPools[p] + table[i] * blockStride();
      const float *src = fromPools[p] + s.table[i] * blockStride();
      bool ok = true;
      if (!memory)
        std::memcpy(dst, src, bytes);
      else
        ok = out ? memory->toHost(dst, src, bytes) : memory->fromHost(dst, src, bytes);
      if (!ok) {
        to.free(table);
        return false;
      }
    }
  from.free(s.table);
  s.table = std::move(table);
  s.swapped = out;
  return true;
}

bool KVCache::swapOut(uint64_t seq) { return moveBlocks(seq, /*out=*/true); }

bool KVCache::swapIn(uint64_t seq) { return moveBlocks(seq, /*out=*/false); }
