//===- KVCache.h - The paged key/value cache --------------------*- C++ -*-===//
//
// The KV cache of the serving form: fixed-size blocks of a pool, and per
// sequence a block table that maps positions to blocks (vLLM's paged cache).
//
// Layout. Per layer there is a K pool and a V pool of float32, each laid out
// [numBlocks][blockSize][kvHeads][headDim], contiguous and row-major. The row
// of position `p` of a sequence with block table `bt` is
//
//   pool + (bt[p / blockSize] * blockSize + p % blockSize) * kvHeads * headDim
//
// (`rowOffset` computes the offset). Compiled code gets the raw pool pointers
// and this layout, and reads and writes rows through the block table. Every
// pool (device and host) starts at a kPoolAlignment (64-byte) boundary, so a
// pool can be handed to compiled code as a tensor as it is (compiled code
// assumes at least 16-byte aligned pointers); pools start zeroed.
//
// Placement, never results. Blocks come from a free list that always hands out
// the lowest free id, so that a schedule places blocks the same way every time
// it is replayed; but which block a position lands in must never change what
// is computed from it: the compiled step reads a request's rows through its
// block table in position order.
//
// Memory pressure. `reserve` is all-or-nothing and returns false when the
// free blocks do not suffice; the scheduler then preempts someone. A sequence
// can be swapped out to host memory (`hostBlocks` blocks of swap space, each
// holding one device block of every layer's K and V) and swapped back in,
// possibly to other device blocks.
//
// Nothing here throws or aborts: misuse (an unknown sequence, a swapped-out
// sequence asked to grow) returns false.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_KVCACHE_H
#define LOCKSTEP_RUNTIME_SERVING_KVCACHE_H

#include "lockstep/Runtime/Backend/Backend.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace lockstep::rt {

struct KVCacheConfig {
  int64_t layers = 1;
  int64_t kvHeads = 1;
  int64_t headDim = 1;
  int64_t blockSize = 16; ///< Tokens per block.
  int64_t numBlocks = 0;  ///< Device blocks: the memory budget.
  int64_t hostBlocks = 0; ///< Host blocks: swap space (0: no swapping).
};

/// A set of block ids [0, count) that hands out the lowest free id first.
class BlockAllocator {
public:
  explicit BlockAllocator(int64_t count = 0);
  int64_t capacity() const { return count; }
  int64_t freeCount() const { return int64_t(freeIds.size()); }
  /// Takes `n` blocks (lowest ids first) and appends them to `out`; takes
  /// nothing and returns false when fewer than `n` are free.
  bool allocate(int64_t n, std::vector<int32_t> &out);
  /// Returns blocks to the free list. Ids not currently allocated are ignored.
  void free(const std::vector<int32_t> &ids);

private:
  int64_t count;
  std::set<int32_t> freeIds;
};

class KVCache {
public:
  /// Checks the config (every field positive, hostBlocks >= 0, sizes that fit
  /// in memory arithmetic) and allocates zeroed device pools (in `memory`,
  /// host memory when null) and host space. Returns null and sets `error` on
  /// failure.
  static std::unique_ptr<KVCache> create(const KVCacheConfig &config,
                                         std::string &error,
                                         PoolMemory *memory = nullptr);
  ~KVCache();
  KVCache(const KVCache &) = delete;
  KVCache &operator=(const KVCache &) = delete;

  const KVCacheConfig &config() const { return cfg; }

  // --- Layout -------------------------------------------------------------
  /// Floats per token row: kvHeads * headDim.
  int64_t rowStride() const { return cfg.kvHeads * cfg.headDim; }
  /// Floats per block of one pool: blockSize * rowStride().
  int64_t blockStride() const { return cfg.blockSize * rowStride(); }
  /// The K and V pools of `layer`: numBlocks * blockStride() floats each, in
  /// poolMemory() (host memory when that is null).
  float *kPool(int64_t layer) { return pools[2 * layer]; }
  float *vPool(int64_t layer) { return pools[2 * layer + 1]; }
  const float *kPool(int64_t layer) const { return pools[2 * layer]; }
  const float *vPool(int64_t layer) const { return pools[2 * layer + 1]; }
  /// Pool `stream` of the serving ABI: stream 2l is kPool(l), 2l + 1 vPool(l).
  float *streamPool(size_t stream) { return pools[stream]; }
  /// The float offset, within a pool, of the row of `position` of a sequence
  /// with this block table; -1 when the table does not cover the position.
  int64_t rowOffset(const std::vector<int32_t> &table, int64_t position) const;
  /// Blocks needed to hold `tokens` tokens.
  int64_t blocksFor(int64_t tokens) const {
    return (tokens + cfg.blockSize - 1) / cfg.blockSize;
  }

  // --- Sequences ------------------------------------------------------------
  /// Makes room for `newLength` tokens of `seq` (a new sequence starts at
  /// length 0 with no blocks) and sets its length to `newLength`. Allocates
  /// only the blocks that are missing, all or nothing. Returns false, changing
  /// nothing, when not enough blocks are free, when `seq` is swapped out, or
  /// when `newLength` is negative or shorter than the current length.
  bool reserve(uint64_t seq, int64_t newLength);
  /// Whether `reserve(seq, newLength)` would succeed without preempting.
  bool canReserve(uint64_t seq, int64_t newLength) const;
  /// Device blocks that `reserve(seq, newLength)` would take.
  int64_t blocksNeeded(uint64_t seq, int64_t newLength) const;
  /// The block table of a resident sequence (empty for an unknown or
  /// swapped-out one).
  const std::vector<int32_t> &blockTable(uint64_t seq) const;
  /// Tokens held for `seq` (resident or swapped out); 0 when unknown.
  int64_t length(uint64_t seq) const;
  bool contains(uint64_t seq) const { return seqs.count(seq) != 0; }
  bool isSwappedOut(uint64_t seq) const;
  /// Frees every block of `seq` (device and host) and forgets it.
  void release(uint64_t seq);
  /// Copies the blocks of a resident `seq` to host space and frees its device
  /// blocks. False (nothing changes) if it is unknown, already swapped out,
  /// the host space is short, or a copy out of pool memory fails.
  bool swapOut(uint64_t seq);
  /// Allocates device blocks for a swapped-out `seq`, copies its data back and
  /// frees its host blocks. False (nothing changes) if it is not swapped out
  /// or not enough device blocks are free.
  bool swapIn(uint64_t seq);

  PoolMemory *poolMemory() const { return memory; }
  int64_t freeBlocks() const { return device.freeCount(); }
  int64_t freeHostBlocks() const { return host.freeCount(); }
  int64_t numSequences() const { return int64_t(seqs.size()); }

private:
  struct Seq {
    std::vector<int32_t> table; // device blocks, or host blocks when swapped
    int64_t length = 0;
    bool swapped = false;
  };
  explicit KVCache(const KVCacheConfig &config);
  /// Copies `seq`'s blocks to newly taken host blocks (`out`) or device
  /// blocks, frees the old ones and switches its table; all or nothing.
  bool moveBlocks(uint64_t seq, bool out);
  /// A zeroed pool of `floats` at a kPoolAlignment boundary, freed with the
  /// cache; null when out of memory.
  float *allocatePool(int64_t floats);

  KVCacheConfig cfg;
  PoolMemory *memory = nullptr;   // null: the pools are host memory
  std::vector<float *> pools;     // 2 * layers device pools (K, V, K, V...)
  std::vector<float *> hostPools; // 2 * layers host pools of hostBlocks
  std::vector<void *> allocations; // what allocatePool got from calloc
  std::vector<float *> memoryPools; // what `memory` allocated
  BlockAllocator device, host;
  std::map<uint64_t, Seq> seqs;
};

} // namespace lockstep::rt

#endif
