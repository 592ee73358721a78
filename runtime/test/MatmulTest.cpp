//===- MatmulTest.cpp - GEMM kernel tests ---------------------------------===//

#include "autoshard/runtime/cpu/Matmul.h"

#include "autoshard/runtime/cpu/Activation.h"

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

/// [3, 5, k] x [k, 4] in layout `flags` (0 to 7): bit 0 transposeLhs, bit 1
/// transposeRhs, bit 2 batchedRhs.
MatmulShape layoutShape(int flags, int64_t k) {
  MatmulShape s;
  s.batch = 3;
  s.m = 5;
  s.n = 4;
  s.k = k;
  s.transposeLhs = flags & 1;
  s.transposeRhs = flags & 2;
  s.batchedRhs = flags & 4;
  return s;
}

TEST(MatmulTest, MatchesNaiveForEveryLayout) {
  for (int flags = 0; flags < 8; ++flags) {
    MatmulShape s = layoutShape(flags, 6);
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

/// The unfused reference of matmulAdd(): matmul() into a temporary, then
/// the add (a bias repeated over the rows).
template <typename T>
std::vector<T> matmulThenAdd(const std::vector<T> &lhs,
                             const std::vector<T> &rhs,
                             const std::vector<T> &addend, const MatmulShape &s,
                             MatmulAddend kind) {
  std::vector<T> out(s.batch * s.m * s.n);
  matmul(lhs.data(), rhs.data(), out.data(), s);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] += addend[kind == MatmulAddend::Bias ? i % s.n : i];
  return out;
}

/// matmulAdd() against matmulThenAdd() for every layout, both addends, into
/// a separate result and (full addend) in place. Only the rounding order
/// differs: the GEMM accumulates onto the addend.
template <typename T> void checkMatmulAdd(double tol) {
  for (int flags = 0; flags < 8; ++flags)
    for (MatmulAddend kind : {MatmulAddend::Full, MatmulAddend::Bias}) {
      MatmulShape s = layoutShape(flags, 70);
      std::string what = "matmulAdd flags " + std::to_string(flags) +
                         (kind == MatmulAddend::Bias ? " bias" : " full");
      auto lhs = convert<T>(randomVector(s.batch * s.m * s.k, 11));
      auto rhs = convert<T>(
          randomVector((s.batchedRhs ? s.batch : 1) * s.k * s.n, 12));
      int64_t numOut = s.batch * s.m * s.n;
      auto addend = convert<T>(
          randomVector(kind == MatmulAddend::Bias ? s.n : numOut, 13, -4, 4));
      std::vector<T> want = matmulThenAdd(lhs, rhs, addend, s, kind);
      std::vector<T> out(numOut, T(-99));
      matmulAdd(lhs.data(), rhs.data(), addend.data(), out.data(), s, kind);
      expectAllNear(out, want, tol, tol, what);
      if (kind == MatmulAddend::Bias)
        continue;
      std::vector<T> inPlace = addend;
      matmulAdd(lhs.data(), rhs.data(), inPlace.data(), inPlace.data(), s,
                kind);
      expectAllNear(inPlace, want, tol, tol, what + " in place");
    }
}

TEST(MatmulTest, AddendMatchesMatmulThenAdd) {
  checkMatmulAdd<float>(1e-6);
  checkMatmulAdd<double>(1e-14);
}

TEST(MatmulTest, AddendRejectsAResultThatOverlapsAnOperand) {
  MatmulShape s;
  s.m = 2;
  s.n = 2;
  s.k = 2;
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c = {1, 1, 1, 1};
  std::vector<float> big(8, 0.0f);
  for (MatmulAddend kind : {MatmulAddend::Full, MatmulAddend::Bias}) {
    // The result is lhs, or rhs.
    EXPECT_THROW(matmulAdd(a.data(), b.data(), c.data(), a.data(), s, kind),
                 std::invalid_argument);
    EXPECT_THROW(matmulAdd(a.data(), b.data(), c.data(), b.data(), s, kind),
                 std::invalid_argument);
  }
  // A bias inside the result; a full addend overlapping it in part.
  EXPECT_THROW(matmulAdd(a.data(), b.data(), big.data() + 1, big.data(), s,
                         MatmulAddend::Bias),
               std::invalid_argument);
  EXPECT_THROW(matmulAdd(a.data(), b.data(), big.data() + 2, big.data(), s,
                         MatmulAddend::Full),
               std::invalid_argument);
  // The result as the full addend is the in-place form.
  std::vector<float> out = c;
  matmulAdd(a.data(), b.data(), out.data(), out.data(), s, MatmulAddend::Full);
  EXPECT_EQ(out, (std::vector<float>{20, 23, 44, 51}));
  matmulAdd(a.data(), b.data(), std::vector<float>{10, 20}.data(), out.data(),
            s, MatmulAddend::Bias);
  EXPECT_EQ(out, (std::vector<float>{29, 42, 53, 70}));
}

/// matmulGelu / matmulGeluGrad against matmul() then gelu() / geluGrad():
/// element for element the same (the activation is elementwise, and the
/// panels' GEMMs give the rows the whole GEMM gives them), in every layout,
/// for both gelu forms, with and without the kept pre-activation. 1200 rows
/// of 96 make several panels (epiloguePanelRows) and a short last one.
template <typename T> void checkMatmulGelu() {
  std::vector<MatmulShape> shapes;
  for (int flags = 0; flags < 8; ++flags)
    shapes.push_back(layoutShape(flags, 33));
  MatmulShape panels;
  panels.batch = 12, panels.m = 100, panels.n = 96, panels.k = 40;
  ASSERT_GT(panels.batch * panels.m, 3 * epiloguePanelRows(96, sizeof(T)));
  shapes.push_back(panels);
  panels.transposeRhs = true;
  shapes.push_back(panels);
  for (const MatmulShape &s : shapes)
    for (bool tanh : {false, true}) {
      std::string what = std::string(sizeof(T) == 4 ? "f32" : "f64") + " m " +
                         std::to_string(s.batch * s.m) + " flags " +
                         std::to_string(s.transposeLhs) +
                         std::to_string(s.transposeRhs) +
                         std::to_string(s.batchedRhs) + (tanh ? " tanh" : "");
      auto lhs = convert<T>(randomVector(s.batch * s.m * s.k, 21));
      auto rhs = convert<T>(
          randomVector((s.batchedRhs ? s.batch : 1) * s.k * s.n, 22));
      auto x = convert<T>(randomVector(s.batch * s.m * s.n, 23, -3, 3));
      const int64_t numOut = s.batch * s.m * s.n;
      std::vector<T> product(numOut), want(numOut), wantGrad(numOut);
      matmul(lhs.data(), rhs.data(), product.data(), s);
      gelu(product.data(), want.data(), numOut, tanh);
      geluGrad(product.data(), x.data(), wantGrad.data(), numOut, tanh);

      std::vector<T> out(numOut, T(-99)), pre(numOut, T(-99));
      matmulGelu(lhs.data(), rhs.data(), pre.data(), out.data(), s, tanh);
      EXPECT_EQ(pre, product) << what << " pre-activation";
      EXPECT_EQ(out, want) << what << " gelu";
      std::fill(out.begin(), out.end(), T(-99));
      matmulGelu(lhs.data(), rhs.data(), static_cast<T *>(nullptr), out.data(),
                 s, tanh);
      EXPECT_EQ(out, want) << what << " gelu without pre-activation";
      std::vector<T> dx(numOut, T(-99));
      matmulGeluGrad(lhs.data(), rhs.data(), x.data(), dx.data(), s, tanh);
      EXPECT_EQ(dx, wantGrad) << what << " gelu_grad";
    }
}

TEST(MatmulTest, GeluEpiloguesMatchMatmulThenActivation) {
  checkMatmulGelu<float>();
  checkMatmulGelu<double>();
}

TEST(MatmulTest, GeluEpiloguesRejectOverlaps) {
  MatmulShape s;
  s.m = 2, s.n = 2, s.k = 2;
  std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, x = {1, 1, 1, 1};
  std::vector<float> out(4), pre(4), big(8);
  EXPECT_THROW(matmulGelu(a.data(), b.data(), pre.data(), a.data(), s, false),
               std::invalid_argument);
  EXPECT_THROW(matmulGelu(a.data(), b.data(), b.data(), out.data(), s, false),
               std::invalid_argument);
  EXPECT_THROW(
      matmulGelu(a.data(), b.data(), big.data() + 2, big.data(), s, false),
      std::invalid_argument);
  EXPECT_THROW(matmulGeluGrad(a.data(), b.data(), x.data(), b.data(), s, false),
               std::invalid_argument);
  EXPECT_THROW(matmulGeluGrad(a.data(), b.data(), x.data(), x.data(), s, false),
               std::invalid_argument);
}

TEST(MatmulTest, EpiloguePanelsDependOnlyOnTheRowSize) {
  // 128 KiB panels: 64 rows of 512 floats, clamped to [8, 1024] rows.
  EXPECT_EQ(epiloguePanelRows(512, 4), 64);
  EXPECT_EQ(epiloguePanelRows(512, 8), 32);
  EXPECT_EQ(epiloguePanelRows(1 << 20, 4), 8);
  EXPECT_EQ(epiloguePanelRows(1, 4), 1024);
}

TEST(MatmulTest, RejectsNegativeSizes) {
  MatmulShape s;
  s.m = -1;
  std::vector<float> a(1);
  EXPECT_THROW(matmul(a.data(), a.data(), a.data(), s), std::invalid_argument);
}

} // namespace
