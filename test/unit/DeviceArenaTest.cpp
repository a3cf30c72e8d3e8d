//===- DeviceArenaTest.cpp - The offsets of a call's arena -----------------===//
#include "lockstep/Runtime/Backend/Cuda/DeviceArena.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace lockstep::rt;

TEST(DeviceArena, AlignsFitsAndRefusesWhatDoesNotFit) {
  ArenaLayout a;
  a.reset(4096 + 100); // rounded down to the alignment
  EXPECT_EQ(a.capacity(), 4096u);
  auto x = a.allocate(1), y = a.allocate(257), z = a.allocate(0);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(*x, 0u);
  EXPECT_EQ(*y, 256u);
  EXPECT_EQ(*z, 768u);
  EXPECT_EQ(a.live(), 1024u);
  EXPECT_FALSE(a.allocate(4096 - 1024 + 1));
  EXPECT_FALSE(a.allocate(~uint64_t(0))); // no overflow of the rounding
  EXPECT_TRUE(a.allocate(4096 - 1024));
  EXPECT_FALSE(a.allocate(1));
  EXPECT_FALSE(a.release(100)); // not an allocation's offset
}

TEST(DeviceArena, ReusesFreedRangesAndMergesThem) {
  ArenaLayout a;
  a.reset(1 << 20);
  auto p = a.allocate(1000), q = a.allocate(3000), r = a.allocate(500);
  ASSERT_TRUE(p && q && r);
  ASSERT_TRUE(a.release(*q));
  // The smallest free range that fits: q's, not the tail.
  auto s = a.allocate(2000);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, *q);
  ASSERT_TRUE(a.release(*p));
  ASSERT_TRUE(a.release(*s));
  ASSERT_TRUE(a.release(*r));
  EXPECT_EQ(a.live(), 0u);
  EXPECT_EQ(a.freeRanges(), 1u); // merged back into one range
  EXPECT_EQ(a.peak(), 1024u + 3072u + 512u);
  auto all = a.allocate(1 << 20);
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, 0u);
}

TEST(DeviceArena, RandomTrafficNeverOverlapsAndFreesToOneRange) {
  std::mt19937_64 rng(7);
  ArenaLayout a;
  a.reset(1 << 22);
  struct Block {
    uint64_t at, size;
  };
  std::vector<Block> live;
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && rng() % 2) {
      size_t k = rng() % live.size();
      ASSERT_TRUE(a.release(live[k].at));
      live.erase(live.begin() + k);
      continue;
    }
    uint64_t size = 1 + rng() % 70000;
    auto at = a.allocate(size);
    if (!at)
      continue;
    ASSERT_EQ(*at % ArenaLayout::kAlignment, 0u);
    ASSERT_LE(*at + size, a.capacity());
    for (const Block &b : live)
      ASSERT_TRUE(*at + size <= b.at || b.at + b.size <= *at) << "overlap at step " << i;
    live.push_back({*at, size});
  }
  for (const Block &b : live)
    ASSERT_TRUE(a.release(b.at));
  EXPECT_EQ(a.live(), 0u);
  EXPECT_EQ(a.freeRanges(), 1u);
}
