//===- TestUtil.h - Shared helpers of the runtime kernel tests --*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TEST_TESTUTIL_H
#define AUTOSHARD_RUNTIME_TEST_TESTUTIL_H

#include "autoshard/runtime/Backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace autoshard::runtime::test {

/// The signature of one `op` instruction (place "OP test") with `attrs`
/// (kept by pointer), operand and result types, for binding it directly.
inline KernelSignature signatureOf(const char *op, const AttrMap &attrs,
                                   std::vector<TensorType> args,
                                   std::vector<TensorType> results) {
  KernelSignature sig;
  sig.op = op;
  sig.attrs = &attrs;
  sig.place = std::string(op) + " test";
  sig.args = std::move(args);
  sig.results = std::move(results);
  return sig;
}

/// n values uniform in [lo, hi), deterministic in `seed`.
inline std::vector<double> randomVector(int64_t n, uint64_t seed,
                                        double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(n);
  for (double &x : out)
    x = dist(gen);
  return out;
}

/// n integers uniform in [0, bound), deterministic in `seed`.
template <typename I>
std::vector<I> randomIds(int64_t n, int64_t bound, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<I> out(n);
  for (I &x : out)
    x = static_cast<I>(dist(gen));
  return out;
}

/// Converts between element types (float <-> double).
template <typename To, typename From>
std::vector<To> convert(const std::vector<From> &values) {
  return std::vector<To>(values.begin(), values.end());
}

/// <a, b>.
template <typename T>
double dot(const std::vector<T> &a, const std::vector<T> &b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

/// Expects |got - want| <= atol + rtol * |want| elementwise, naming the
/// first few failing indices.
template <typename A, typename B>
void expectAllNear(const std::vector<A> &got, const std::vector<B> &want,
                   double rtol, double atol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w))) {
      ADD_FAILURE() << what << "[" << i << "]: got " << g << ", want " << w;
      if (++failures == 5)
        return;
    }
  }
}

/// Central finite-difference check of an analytic gradient: for each checked
/// i, (loss(x + h e_i) - loss(x - h e_i)) / 2h must match analytic[i].
/// `loss` reads x by reference. At most maxChecks indices are checked
/// (spread over the whole tensor).
inline void checkGradient(const std::string &what, std::vector<double> &x,
                          const std::vector<double> &analytic,
                          const std::function<double()> &loss,
                          int64_t maxChecks = 400, double h = 1e-6,
                          double rtol = 1e-6, double atol = 1e-8) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t stride = std::max<int64_t>(1, n / maxChecks);
  int failures = 0;
  double maxAbs = 0.0;
  for (int64_t i = 0; i < n; i += stride) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = loss();
    x[i] = saved - h;
    const double minus = loss();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * h);
    maxAbs = std::max(maxAbs, std::abs(numeric));
    const double scale = std::max(std::abs(numeric), std::abs(analytic[i]));
    if (!(std::abs(numeric - analytic[i]) <= atol + rtol * scale)) {
      ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i]
                    << ", finite difference " << numeric;
      if (++failures == 5)
        return;
    }
  }
  // A gradient check on an all-zero gradient proves little.
  EXPECT_GT(maxAbs, 1e-6) << what << ": gradient is identically ~0";
}

} // namespace autoshard::runtime::test

#endif // AUTOSHARD_RUNTIME_TEST_TESTUTIL_H
