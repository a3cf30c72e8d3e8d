//===- Logprobs.cpp - Log-probabilities of a logits row -------------------===//
#include "lockstep/Runtime/Serving/Logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace lockstep::rt;

TokenLogprobs lockstep::rt::tokenLogprobs(const float *row, int64_t V, int32_t token,
                                          int64_t top) {
  TokenLogprobs out;
  if (!row || V <= 0)
    return out;
  double m = -std::numeric_limits<double>::infinity();
  bool nan = false;
  for (int64_t i = 0; i < V; ++i) {
    if (std::isnan(row[i]))
      nan = true;
    else
      m = std::max(m, double(row[i]));
  }
  double lse;
  if (nan) {
    lse = std::numeric_limits<double>::quiet_NaN();
  } else if (std::isinf(m)) {
    // All -inf (nothing is possible) or some +inf (log-softmax undefined).
    lse = m > 0 ? std::numeric_limits<double>::quiet_NaN() : m;
  } else {
    double s = 0;
    for (int64_t i = 0; i < V; ++i)
      s += std::exp(double(row[i]) - m);
    lse = m + std::log(s);
  }
  auto lp = [&](int64_t i) { return double(row[i]) - lse; };
  out.token = token;
  out.logprob = token >= 0 && token < V ? lp(token)
                                        : std::numeric_limits<double>::quiet_NaN();
  top = std::clamp<int64_t>(top, 0, V);
  if (top == 0)
    return out;
  std::vector<int32_t> ids;
  ids.reserve(size_t(V));
  for (int64_t i = 0; i < V; ++i)
    if (!std::isnan(row[i]))
      ids.push_back(int32_t(i));
  auto before = [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  size_t n = std::min(size_t(top), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), before);
  for (size_t i = 0; i < n; ++i)
    out.top.push_back({ids[i], lp(ids[i])});
  return out;
}
