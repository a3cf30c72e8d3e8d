//===- DimExprTest.cpp - Unit tests of symbolic dim expressions -----------===//
#include "lockstep/Artifact/DimExpr.h"

#include <gtest/gtest.h>

using lockstep::DimExpr;

static DimExpr P(const std::string &s) {
  auto e = DimExpr::parse(s);
  EXPECT_TRUE(e.has_value()) << s;
  return e.value_or(DimExpr(0));
}

TEST(DimExpr, CanonicalPrinting) {
  EXPECT_EQ(P("seq + past").str(), "past + seq");
  EXPECT_EQ(P("2*(s + p) - s").str(), "2*p + s");
  EXPECT_EQ(P("b*s*8 + 1").str(), "8*b*s + 1");
  EXPECT_EQ(P("s - 1").str(), "s - 1");
  EXPECT_EQ(P("-p + 3").str(), "-p + 3");
  EXPECT_EQ(P("0").str(), "0");
  EXPECT_EQ(P("x - x").str(), "0");
}

TEST(DimExpr, Arithmetic) {
  DimExpr b = DimExpr::symbol("b"), s = DimExpr::symbol("s");
  EXPECT_EQ((b * s * DimExpr(64)).str(), "64*b*s");
  EXPECT_EQ(*(b * s * DimExpr(64)).divExact(b * DimExpr(8)), s * DimExpr(8));
  EXPECT_FALSE((b + DimExpr(1)).divExact(DimExpr(2)).has_value());
  EXPECT_FALSE(s.divExact(b).has_value());
  EXPECT_EQ(*(s + b).divExact(s + b), DimExpr(1));
  EXPECT_EQ(*DimExpr(7).ceilDiv(DimExpr(2)), DimExpr(4));
  EXPECT_EQ(*DimExpr(-7).floorDiv(DimExpr(2)), DimExpr(-4));
  EXPECT_FALSE(DimExpr(7).floorDiv(DimExpr(0)).has_value());
}

TEST(DimExpr, Constants) {
  EXPECT_TRUE(DimExpr(0).isConstant());
  EXPECT_EQ(*DimExpr(0).getConstant(), 0);
  EXPECT_FALSE(DimExpr::symbol("s").getConstant().has_value());
  EXPECT_TRUE(P("s + 2").isNonNegative());
  EXPECT_FALSE(P("s - 2").isNonNegative());
}

TEST(DimExpr, ParseErrors) {
  EXPECT_FALSE(DimExpr::parse("").has_value());
  EXPECT_FALSE(DimExpr::parse("s +").has_value());
  EXPECT_FALSE(DimExpr::parse("(s").has_value());
  EXPECT_FALSE(DimExpr::parse("s $ 2").has_value());
  EXPECT_FALSE(DimExpr::parse("99999999999999999999").has_value());
}

TEST(DimExpr, SymbolNames) {
  EXPECT_TRUE(lockstep::isDimSymbolName("past_sequence_length"));
  EXPECT_FALSE(lockstep::isDimSymbolName("2x"));
  EXPECT_EQ(lockstep::sanitizeDimSymbolName("batch size"), "batch_size");
  EXPECT_EQ(lockstep::sanitizeDimSymbolName("3"), "d_3");
}

TEST(DimExpr, PolynomialDivision) {
  // 64*b*(p + s) / (16*(p + s)) = 4*b, as in Reshape(-1) after a KV concat.
  EXPECT_EQ(P("64*b*p + 64*b*s").divExact(P("16*p + 16*s"))->str(), "4*b");
  EXPECT_EQ(P("s*s - 1").divExact(P("s - 1"))->str(), "s + 1");
  EXPECT_FALSE(P("s*s + 1").divExact(P("s - 1")).has_value());
  EXPECT_FALSE(P("b*p + s").divExact(P("p + s")).has_value());
  EXPECT_FALSE(P("3").divExact(P("0")).has_value());
}

TEST(DimExpr, Evaluate) {
  std::map<std::string, int64_t> v = {{"b", 2}, {"s", 5}, {"p", 0}};
  EXPECT_EQ(*P("64*b*s + p + 1").evaluate(v), 641);
  EXPECT_EQ(*P("s - 1").evaluate(v), 4);
  EXPECT_FALSE(P("q + 1").evaluate(v).has_value());
  EXPECT_FALSE(P("b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b*b")
                   .evaluate(v)
                   .has_value());
  EXPECT_EQ(*P("seq").asSymbol(), "seq");
  EXPECT_FALSE(P("2*seq").asSymbol().has_value());
  EXPECT_FALSE(P("seq + 1").asSymbol().has_value());
}

// Coefficient arithmetic that overflows int64 marks the expression instead of
// wrapping (undefined behaviour), and the mark propagates; divisions that
// overflow (INT64_MIN by -1) give nullopt.
TEST(DimExpr, OverflowIsMarked) {
  const int64_t big = int64_t(1) << 62;
  EXPECT_TRUE((DimExpr(big) * DimExpr(2)).overflowed());
  EXPECT_TRUE((DimExpr(INT64_MAX) + DimExpr(1)).overflowed());
  EXPECT_TRUE((DimExpr(INT64_MIN) - DimExpr(1)).overflowed());
  EXPECT_TRUE((-DimExpr(INT64_MIN)).overflowed());
  EXPECT_TRUE((P("b") * DimExpr(big) * DimExpr(4)).overflowed());
  DimExpr bad = DimExpr(big) * DimExpr(4);
  EXPECT_TRUE((bad + P("s") - P("s")).overflowed());
  EXPECT_TRUE((bad * DimExpr(0)).overflowed());
  EXPECT_NE(bad, DimExpr(0));
  EXPECT_FALSE(bad.floorDiv(DimExpr(1)).has_value());
  EXPECT_FALSE((DimExpr(big) * DimExpr(2)).divExact(DimExpr(2)).has_value());
  EXPECT_FALSE((DimExpr(big) + (DimExpr(big) - DimExpr(1))).overflowed());
  EXPECT_FALSE(DimExpr(INT64_MIN).floorDiv(DimExpr(-1)).has_value());
  EXPECT_FALSE(DimExpr(INT64_MIN).ceilDiv(DimExpr(-1)).has_value());
  EXPECT_FALSE(DimExpr(INT64_MIN).divExact(DimExpr(-1)).has_value());
  EXPECT_EQ(*DimExpr(INT64_MIN).floorDiv(DimExpr(2)), DimExpr(INT64_MIN / 2));
  EXPECT_EQ(DimExpr(INT64_MIN).str(), "-9223372036854775808");
}
