//===- MatmulTest.cpp - GEMM kernel tests ---------------------------------===//

#include "autoshard/runtime/cpu/Matmul.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

/// Naive reference of matmul() for every flag combination.
std::vector<double> naiveMatmul(const std::vector<double> &lhs,
                                const std::vector<double> &rhs,
                                const MatmulShape &s) {
  std::vector<double> out(s.batch * s.m * s.n, 0.0);
  for (int64_t b = 0; b < s.batch; ++b) {
    const double *l = lhs.data() + b * s.m * s.k;
    const double *r = rhs.data() + (s.batchedRhs ? b * s.k * s.n : 0);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < s.k; ++p)
          sum += (s.transposeLhs ? l[p * s.m + i] : l[i * s.k + p]) *
                 (s.transposeRhs ? r[j * s.k + p] : r[p * s.n + j]);
        out[(b * s.m + i) * s.n + j] = sum;
      }
  }
  return out;
}

TEST(MatmulTest, MatchesNaiveForEveryLayout) {
  for (int flags = 0; flags < 8; ++flags) {
    MatmulShape s;
    s.batch = 3;
    s.m = 5;
    s.n = 4;
    s.k = 6;
    s.transposeLhs = flags & 1;
    s.transposeRhs = flags & 2;
    s.batchedRhs = flags & 4;
    std::vector<double> lhs = randomVector(s.batch * s.m * s.k, 1);
    std::vector<double> rhs =
        randomVector((s.batchedRhs ? s.batch : 1) * s.k * s.n, 2);
    std::vector<double> out(s.batch * s.m * s.n);
    matmul(lhs.data(), rhs.data(), out.data(), s);
    expectAllNear(out, naiveMatmul(lhs, rhs, s), 1e-12, 1e-12,
                  "matmul flags " + std::to_string(flags));
  }
}

TEST(MatmulTest, WgradMatchesNaive) {
  const int64_t rows = 7, k = 3, n = 5;
  std::vector<double> x = randomVector(rows * k, 3),
                      dy = randomVector(rows * n, 4);
  std::vector<double> dw(k * n), want(k * n, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        want[i * n + j] += x[r * k + i] * dy[r * n + j];
  matmulWgrad(x.data(), dy.data(), dw.data(), rows, k, n);
  expectAllNear(dw, want, 1e-12, 1e-12, "wgrad");
}

// Linear layer y = x W: dx = dy W^T (matmul with transposeRhs) and
// dW = matmul_wgrad(x, dy), checked against finite differences.
TEST(MatmulTest, LinearLayerGradients) {
  MatmulShape s;
  s.batch = 2;
  s.m = 3;
  s.k = 4;
  s.n = 5;
  std::vector<double> x = randomVector(s.batch * s.m * s.k, 5);
  std::vector<double> w = randomVector(s.k * s.n, 6);
  std::vector<double> u = randomVector(s.batch * s.m * s.n, 7);
  std::vector<double> y(u.size()), dx(x.size()), dw(w.size());
  MatmulShape back = s;
  back.n = s.k;
  back.k = s.n;
  back.transposeRhs = true;
  matmul(u.data(), w.data(), dx.data(), back);
  matmulWgrad(x.data(), u.data(), dw.data(), s.batch * s.m, s.k, s.n);
  auto loss = [&] {
    matmul(x.data(), w.data(), y.data(), s);
    return dot(u, y);
  };
  checkGradient("linear dx", x, dx, loss);
  checkGradient("linear dw", w, dw, loss);
}

TEST(MatmulTest, FloatUsesSgemm) {
  MatmulShape s;
  s.m = 2;
  s.n = 2;
  s.k = 2;
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, out(4);
  matmul(a.data(), b.data(), out.data(), s);
  EXPECT_EQ(out, (std::vector<float>{19, 22, 43, 50}));
}

TEST(MatmulTest, RejectsNegativeSizes) {
  MatmulShape s;
  s.m = -1;
  std::vector<float> a(1);
  EXPECT_THROW(matmul(a.data(), a.data(), a.data(), s), std::invalid_argument);
}

} // namespace
