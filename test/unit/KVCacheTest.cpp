//===- KVCacheTest.cpp - The paged KV cache -------------------------------===//
#include "lockstep/Runtime/Serving/KVCache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace lockstep::rt;

namespace {

KVCacheConfig smallConfig(int64_t numBlocks, int64_t hostBlocks) {
  KVCacheConfig c;
  c.layers = 2;
  c.kvHeads = 2;
  c.headDim = 3;
  c.blockSize = 4;
  c.numBlocks = numBlocks;
  c.hostBlocks = hostBlocks;
  return c;
}

std::unique_ptr<KVCache> make(int64_t numBlocks, int64_t hostBlocks) {
  std::string error;
  auto kv = KVCache::create(smallConfig(numBlocks, hostBlocks), error);
  EXPECT_TRUE(kv) << error;
  return kv;
}

// A value that names (seq, layer, pool, position, element).
float tag(uint64_t seq, int64_t layer, int pool, int64_t pos, int64_t i) {
  return float(seq * 100000 + layer * 10000 + pool * 1000 + pos * 10 + i);
}

void writeRows(KVCache &kv, uint64_t seq, int64_t from, int64_t to) {
  const std::vector<int32_t> &t = kv.blockTable(seq);
  for (int64_t l = 0; l < kv.config().layers; ++l)
    for (int64_t p = from; p < to; ++p) {
      int64_t off = kv.rowOffset(t, p);
      ASSERT_GE(off, 0);
      for (int64_t i = 0; i < kv.rowStride(); ++i) {
        kv.kPool(l)[off + i] = tag(seq, l, 0, p, i);
        kv.vPool(l)[off + i] = tag(seq, l, 1, p, i);
      }
    }
}

// Reads every row of `seq` back through its block table.
void expectRows(const KVCache &kv, uint64_t seq, int64_t length) {
  const std::vector<int32_t> &t = kv.blockTable(seq);
  for (int64_t l = 0; l < kv.config().layers; ++l)
    for (int64_t p = 0; p < length; ++p) {
      int64_t off = kv.rowOffset(t, p);
      ASSERT_GE(off, 0);
      for (int64_t i = 0; i < kv.rowStride(); ++i) {
        ASSERT_EQ(kv.kPool(l)[off + i], tag(seq, l, 0, p, i));
        ASSERT_EQ(kv.vPool(l)[off + i], tag(seq, l, 1, p, i));
      }
    }
}

} // namespace

TEST(KVCache, RejectsBadConfigs) {
  std::string error;
  KVCacheConfig c = smallConfig(4, 0);
  c.numBlocks = 0;
  EXPECT_FALSE(KVCache::create(c, error));
  EXPECT_NE(error.find("positive"), std::string::npos);
  c = smallConfig(4, -1);
  EXPECT_FALSE(KVCache::create(c, error));
  c = smallConfig(4, 0);
  c.headDim = int64_t(1) << 40;
  c.kvHeads = int64_t(1) << 40;
  error.clear();
  EXPECT_FALSE(KVCache::create(c, error));
  EXPECT_NE(error.find("overflows"), std::string::npos);
}

TEST(KVCache, Layout) {
  auto kv = make(5, 0);
  EXPECT_EQ(kv->rowStride(), 6);
  EXPECT_EQ(kv->blockStride(), 24);
  std::vector<int32_t> table = {3, 1};
  // Position 5 is in table[1] = block 1, slot 1.
  EXPECT_EQ(kv->rowOffset(table, 5), (1 * 4 + 1) * 6);
  EXPECT_EQ(kv->rowOffset(table, 2), (3 * 4 + 2) * 6);
  EXPECT_EQ(kv->rowOffset(table, 8), -1);
  EXPECT_EQ(kv->rowOffset(table, -1), -1);
  EXPECT_NE(kv->kPool(0), kv->vPool(0));
  EXPECT_NE(kv->kPool(0), kv->kPool(1));
}

// Compiled code gets the pools as tensors, as they are: each starts at a
// 64-byte boundary, zeroed, whatever the pool size.
TEST(KVCache, PoolsAreAlignedAndZeroed) {
  for (int64_t blocks : {1, 3, 7, 1000}) {
    auto kv = make(blocks, 2);
    for (int64_t l = 0; l < kv->config().layers; ++l)
      for (const float *p : {kv->kPool(l), kv->vPool(l)}) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kPoolAlignment, 0u);
        for (int64_t i = 0; i < blocks * kv->blockStride(); ++i)
          ASSERT_EQ(p[i], 0.0f);
      }
  }
}

TEST(KVCache, ReserveTakesLowestIdsAllOrNothing) {
  auto kv = make(5, 0);
  EXPECT_TRUE(kv->reserve(7, 5)); // 2 blocks
  EXPECT_EQ(kv->blockTable(7), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(kv->length(7), 5);
  EXPECT_TRUE(kv->reserve(7, 8)); // still 2 blocks
  EXPECT_EQ(kv->blockTable(7).size(), 2u);
  EXPECT_EQ(kv->freeBlocks(), 3);
  EXPECT_TRUE(kv->reserve(9, 4));
  EXPECT_EQ(kv->blockTable(9), (std::vector<int32_t>{2}));
  // 9 needs 3 more blocks for 16 tokens; only 2 are free: nothing changes.
  EXPECT_EQ(kv->blocksNeeded(9, 16), 3);
  EXPECT_FALSE(kv->canReserve(9, 16));
  EXPECT_FALSE(kv->reserve(9, 16));
  EXPECT_EQ(kv->blockTable(9), (std::vector<int32_t>{2}));
  EXPECT_EQ(kv->length(9), 4);
  EXPECT_EQ(kv->freeBlocks(), 2);
  // A length cannot shrink.
  EXPECT_FALSE(kv->reserve(7, 3));
  EXPECT_EQ(kv->length(7), 8);
  // Released blocks are reused lowest first.
  kv->release(7);
  EXPECT_FALSE(kv->contains(7));
  EXPECT_EQ(kv->freeBlocks(), 4);
  EXPECT_TRUE(kv->reserve(11, 9));
  EXPECT_EQ(kv->blockTable(11), (std::vector<int32_t>{0, 1, 3}));
}

TEST(KVCache, SwapRoundTripMovesBlocksAndKeepsData) {
  auto kv = make(4, 4);
  ASSERT_TRUE(kv->reserve(1, 7)); // blocks 0, 1
  writeRows(*kv, 1, 0, 7);
  ASSERT_TRUE(kv->reserve(2, 4)); // block 2
  writeRows(*kv, 2, 0, 4);
  ASSERT_TRUE(kv->swapOut(1));
  EXPECT_TRUE(kv->isSwappedOut(1));
  EXPECT_TRUE(kv->blockTable(1).empty());
  EXPECT_EQ(kv->length(1), 7);
  EXPECT_EQ(kv->freeBlocks(), 3);
  EXPECT_EQ(kv->freeHostBlocks(), 2);
  EXPECT_FALSE(kv->reserve(1, 8)); // not while swapped out
  // Someone else takes block 0 and overwrites it.
  ASSERT_TRUE(kv->reserve(3, 4));
  EXPECT_EQ(kv->blockTable(3), (std::vector<int32_t>{0}));
  writeRows(*kv, 3, 0, 4);
  ASSERT_TRUE(kv->swapIn(1));
  EXPECT_FALSE(kv->isSwappedOut(1));
  EXPECT_EQ(kv->blockTable(1), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(kv->freeHostBlocks(), 4);
  expectRows(*kv, 1, 7);
  expectRows(*kv, 2, 4);
  expectRows(*kv, 3, 4);
  // And it can grow again.
  EXPECT_FALSE(kv->reserve(1, 9)); // no block left
  kv->release(2);
  EXPECT_TRUE(kv->reserve(1, 9));
  EXPECT_EQ(kv->blockTable(1), (std::vector<int32_t>{1, 3, 2}));
}

TEST(KVCache, SwapFailsWithoutSpaceAndChangesNothing) {
  auto kv = make(4, 1);
  ASSERT_TRUE(kv->reserve(1, 5)); // 2 blocks, host has 1
  EXPECT_FALSE(kv->swapOut(1));
  EXPECT_FALSE(kv->isSwappedOut(1));
  EXPECT_EQ(kv->blockTable(1).size(), 2u);
  EXPECT_EQ(kv->freeBlocks(), 2);
  EXPECT_EQ(kv->freeHostBlocks(), 1);
  EXPECT_FALSE(kv->swapOut(99)); // unknown
  EXPECT_FALSE(kv->swapIn(1));   // not swapped out

  ASSERT_TRUE(kv->reserve(2, 3)); // 1 block
  writeRows(*kv, 2, 0, 3);
  ASSERT_TRUE(kv->swapOut(2));
  ASSERT_TRUE(kv->reserve(3, 8)); // takes the 2 free blocks
  EXPECT_EQ(kv->freeBlocks(), 0);
  EXPECT_FALSE(kv->swapIn(2));
  EXPECT_TRUE(kv->isSwappedOut(2));
  kv->release(3);
  ASSERT_TRUE(kv->swapIn(2));
  expectRows(*kv, 2, 3);
  // Releasing a swapped-out sequence frees its host blocks.
  ASSERT_TRUE(kv->swapOut(2));
  EXPECT_EQ(kv->freeHostBlocks(), 0);
  kv->release(2);
  EXPECT_EQ(kv->freeHostBlocks(), 1);
  EXPECT_EQ(kv->numSequences(), 1);
}

TEST(BlockAllocator, LowestFirstAndIgnoresForeignIds) {
  BlockAllocator a(4);
  std::vector<int32_t> got;
  EXPECT_TRUE(a.allocate(2, got));
  EXPECT_FALSE(a.allocate(3, got));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1}));
  a.free({0, 17, -3});
  EXPECT_EQ(a.freeCount(), 3);
  got.clear();
  EXPECT_TRUE(a.allocate(3, got));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 2, 3}));
}
