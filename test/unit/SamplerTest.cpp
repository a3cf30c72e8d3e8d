//===- SamplerTest.cpp - Greedy and seeded sampling -----------------------===//
#include "lockstep/Runtime/Serving/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace lockstep::rt;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

SamplingParams seeded(uint64_t seed, float temperature = 1) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}
} // namespace

// Random123's known-answer vectors for Philox-4x32-10 (kat_vectors).
TEST(Sampler, PhiloxKnownAnswers) {
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Sampler, UniformIsKeyedBySeedAndPosition) {
  double u = sampleUniform(42, 7);
  EXPECT_GE(u, 0.0);
  EXPECT_LT(u, 1.0);
  EXPECT_EQ(u, sampleUniform(42, 7));
  EXPECT_NE(u, sampleUniform(43, 7));
  EXPECT_NE(u, sampleUniform(42, 8));
  // Positions beyond 32 bits are distinct counters.
  EXPECT_NE(sampleUniform(42, 1), sampleUniform(42, (int64_t(1) << 32) + 1));
  // The mean of many draws is near 1/2: the standard error of 1e5 uniforms
  // is sqrt(1/12 / 1e5) = 9.1e-4; 5 of them is 4.6e-3.
  double sum = 0;
  for (int64_t p = 0; p < 100000; ++p)
    sum += sampleUniform(1234, p);
  EXPECT_NEAR(sum / 100000, 0.5, 4.6e-3);
}

// argmax reads in lanes: against the plain scan of the order (greatest
// non-NaN, lowest index of a tie, -0 == +0, 0 when all are NaN) on rows of
// every length around the lane count, drawn from few values so that ties,
// signed zeros, infinities and NaN land in every lane and in the tail.
TEST(Sampler, GreedyLanesMatchThePlainScan) {
  const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, kInf, -kInf, kNaN, kNaN};
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  };
  for (int trial = 0; trial < 4000; ++trial) {
    int64_t n = 1 + next() % 70;
    std::vector<float> row(static_cast<size_t>(n));
    int kinds = 1 + next() % 9; // some rows from few values: many ties
    for (float &x : row)
      x = pool[next() % kinds];
    int32_t want = 0;
    for (int64_t i = 1; i < n; ++i) {
      float x = row[size_t(i)], y = row[size_t(want)];
      if (!std::isnan(x) && (std::isnan(y) || x > y))
        want = int32_t(i);
    }
    ASSERT_EQ(argmax(row.data(), n), want) << "trial " << trial << " n " << n;
  }
}

TEST(Sampler, GreedyTiesAndNaN) {
  std::vector<float> l = {1, 3, 2, 3, 3};
  EXPECT_EQ(argmax(l.data(), 5), 1); // lowest index of the tied maxima
  SamplingParams greedy;
  EXPECT_EQ(sample(l.data(), 5, greedy, 0), 1);
  // NaN never wins, not even against -inf.
  std::vector<float> n = {kNaN, -kInf, kNaN, -5, kNaN};
  EXPECT_EQ(argmax(n.data(), 5), 3);
  std::vector<float> m = {kNaN, -kInf, kNaN};
  EXPECT_EQ(argmax(m.data(), 3), 1);
  std::vector<float> allNaN = {kNaN, kNaN};
  EXPECT_EQ(argmax(allNaN.data(), 2), 0);
  EXPECT_EQ(argmax(l.data(), 0), -1);
  EXPECT_EQ(sample(nullptr, 5, greedy, 0), -1);
  // A negative temperature is greedy too.
  EXPECT_EQ(sample(l.data(), 5, seeded(9, -1), 0), 1);
}

TEST(Sampler, SeededIsDeterministicAndVariesWithPosition) {
  std::vector<float> l(64);
  for (size_t i = 0; i < l.size(); ++i)
    l[i] = float(std::sin(double(i) * 0.7)); // fairly flat
  SamplingParams p = seeded(2024);
  std::vector<int32_t> a, b;
  for (int64_t pos = 0; pos < 200; ++pos) {
    a.push_back(sample(l.data(), 64, p, pos));
    b.push_back(sample(l.data(), 64, p, pos));
  }
  EXPECT_EQ(a, b);
  // Different positions give different tokens (not always, but over 200
  // draws from a flat distribution over 64 tokens, many distinct ones).
  std::vector<bool> seen(64);
  int distinct = 0;
  for (int32_t t : a)
    if (!seen[size_t(t)]) {
      seen[size_t(t)] = true;
      ++distinct;
    }
  EXPECT_GT(distinct, 30);
  // Other seeds at the same position differ somewhere.
  int differ = 0;
  for (uint64_t s = 0; s < 50; ++s)
    differ += sample(l.data(), 64, seeded(s), 5) != a[5];
  EXPECT_GT(differ, 25);
}

TEST(Sampler, TopKOneIsGreedy) {
  std::vector<float> l = {0.5f, 2, 1, 2, -1, kNaN};
  SamplingParams p = seeded(0, 5.0f);
  p.topK = 1;
  for (int64_t pos = 0; pos < 100; ++pos) {
    p.seed = uint64_t(pos) * 7919;
    EXPECT_EQ(sample(l.data(), 6, p, pos), 1);
  }
}

TEST(Sampler, TinyTopPIsGreedyAndNaNNeverSampled) {
  std::vector<float> l = {kNaN, 1, 3, 3, kNaN, -kInf};
  SamplingParams p = seeded(0, 1.0f);
  p.topP = 1e-6f;
  for (int64_t pos = 0; pos < 100; ++pos)
    EXPECT_EQ(sample(l.data(), 6, p, pos), 2);
  p.topP = 1;
  for (int64_t pos = 0; pos < 1000; ++pos) {
    int32_t t = sample(l.data(), 6, p, pos);
    EXPECT_TRUE(t == 1 || t == 2 || t == 3) << t;
  }
  // +inf takes all the mass.
  std::vector<float> inf = {1, kInf, 2};
  for (int64_t pos = 0; pos < 100; ++pos)
    EXPECT_EQ(sample(inf.data(), 3, p, pos), 1);
}

TEST(Sampler, ValidatesParams) {
  std::string error;
  SamplingParams p;
  EXPECT_TRUE(validateSamplingParams(p, error));
  p.topP = 0;
  EXPECT_FALSE(validateSamplingParams(p, error));
  p.topP = 1.5f;
  EXPECT_FALSE(validateSamplingParams(p, error));
  p = SamplingParams();
  p.temperature = kNaN;
  EXPECT_FALSE(validateSamplingParams(p, error));
  p = SamplingParams();
  p.topK = -1;
  EXPECT_FALSE(validateSamplingParams(p, error));
}

namespace {

std::vector<double> softmax(const std::vector<float> &l, double t) {
  std::vector<double> p(l.size());
  double m = -1e300, s = 0;
  for (float x : l)
    m = std::max(m, double(x));
  for (size_t i = 0; i < l.size(); ++i)
    s += p[i] = std::exp((double(l[i]) - m) / t);
  for (double &x : p)
    x /= s;
  return p;
}

// Draws N tokens over seeds (one position) and checks each token's count
// against the expected probability. A count is Binomial(N, p): its standard
// deviation is sqrt(N p (1 - p)); the tolerance is 5 of them (a correct
// sampler fails a bucket with probability 6e-7), and zero-probability tokens
// must never appear. The draws are deterministic, so this either always
// passes or always fails; what it rules out is a sampler whose distribution is
// off by more than ~5 sigma (at N = 40000, under 1.2 percentage points).
void expectDistribution(const std::vector<float> &l, SamplingParams p,
                        const std::vector<double> &expected) {
  const int N = 40000;
  std::vector<int> count(l.size());
  for (int i = 0; i < N; ++i) {
    p.seed = uint64_t(i) * 0x9e3779b97f4a7c15ULL + 1;
    int32_t t = sample(l.data(), int64_t(l.size()), p, 17);
    ASSERT_GE(t, 0);
    ++count[size_t(t)];
  }
  for (size_t k = 0; k < l.size(); ++k) {
    double e = expected[k];
    if (e == 0) {
      EXPECT_EQ(count[k], 0) << "token " << k;
      continue;
    }
    double sd = std::sqrt(N * e * (1 - e));
    EXPECT_NEAR(count[k], N * e, 5 * sd) << "token " << k;
  }
}

} // namespace

TEST(Sampler, MatchesSoftmax) {
  std::vector<float> l = {1.0f, 0.5f, 2.0f, -1.0f, 0.0f, 0.5f};
  expectDistribution(l, seeded(0, 1.0f), softmax(l, 1.0));
  expectDistribution(l, seeded(0, 0.5f), softmax(l, 0.5));
  expectDistribution(l, seeded(0, 3.0f), softmax(l, 3.0));
}

TEST(Sampler, TopKAndTopPRenormalize) {
  std::vector<float> l = {1.0f, 0.5f, 2.0f, -1.0f, 0.0f, 0.5f};
  std::vector<double> full = softmax(l, 1.0);
  // top-3: tokens 2, 0, then 1 (0.5 tie with token 5: lower index wins).
  SamplingParams p = seeded(0, 1.0f);
  p.topK = 3;
  std::vector<double> e(6, 0.0);
  double s = full[2] + full[0] + full[1];
  e[2] = full[2] / s;
  e[0] = full[0] / s;
  e[1] = full[1] / s;
  expectDistribution(l, p, e);
  // top-p 0.65: token 2 has 0.50 of the mass, with token 0 0.68: keep both.
  ASSERT_LT(full[2], 0.65);
  ASSERT_GE(full[2] + full[0], 0.65);
  p.topK = 0;
  p.topP = 0.65f;
  std::fill(e.begin(), e.end(), 0.0);
  e[2] = full[2] / (full[2] + full[0]);
  e[0] = full[0] / (full[2] + full[0]);
  expectDistribution(l, p, e);
}
