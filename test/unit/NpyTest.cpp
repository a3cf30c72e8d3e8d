//===- NpyTest.cpp - Unit tests of the .npy reader and writer -------------===//
#include "lockstep/Runtime/Npy.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace lockstep::rt;

TEST(Npy, RoundTrip) {
  NpyArray a;
  a.dtype = "f4";
  a.shape = {2, 3};
  float vals[6] = {1, 2, 3, -0.0f, 1e-30f, 5};
  a.data.resize(sizeof(vals));
  std::memcpy(a.data.data(), vals, sizeof(vals));
  std::vector<uint8_t> bytes = serializeNpy(a);
  EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u); // header is aligned
  NpyArray b;
  std::string err;
  ASSERT_TRUE(parseNpy(bytes, b, err)) << err;
  EXPECT_EQ(b.dtype, "f4");
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data); // bit for bit
}

TEST(Npy, ScalarAndEmpty) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {2, 0, 3}}) {
    NpyArray a;
    a.dtype = "i8";
    a.shape = shape;
    a.data.resize(a.numElements() * 8, 7);
    NpyArray b;
    std::string err;
    ASSERT_TRUE(parseNpy(serializeNpy(a), b, err)) << err;
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(Npy, RejectsBadInput) {
  NpyArray b;
  std::string err;
  EXPECT_FALSE(parseNpy({1, 2, 3}, b, err));
  NpyArray a;
  a.dtype = "f4";
  a.shape = {4};
  a.data.resize(16);
  auto bytes = serializeNpy(a);
  bytes.resize(bytes.size() - 1); // truncated data
  EXPECT_FALSE(parseNpy(bytes, b, err));
  EXPECT_NE(err.find("truncated"), std::string::npos);
  EXPECT_FALSE(NpyArray::elementSize("c8"));
  EXPECT_FALSE(NpyArray::elementSize("f1"));
}
