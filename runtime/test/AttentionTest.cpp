//===- AttentionTest.cpp - Attention kernel tests -------------------------===//

#include "autoshard/runtime/cpu/Attention.h"

#include "AttentionTestUtil.h"
#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

struct Tensors {
  std::vector<double> q, k, v;
};

Tensors randomInputs(const AttentionShape &s, uint64_t seed) {
  return {
      randomVector(s.batch * s.seqQ * s.heads * s.headDim, seed, -2, 2),
      randomVector(s.batch * s.seqK * s.kvHeads * s.headDim, seed + 1, -2, 2),
      randomVector(s.batch * s.seqK * s.kvHeads * s.headDim, seed + 2)};
}

/// Whether query i may see key j (global positions with the offsets).
bool sees(const AttentionShape &s, int64_t i, int64_t j) {
  return !s.causal || s.kPos.at(j) <= s.qPos.at(i);
}

/// Explicit softmax(scale * Q K^T + mask) V per (batch, head), and the lse;
/// a row that sees no key gets out 0 and lse -inf.
void naiveAttention(const Tensors &t, const AttentionShape &s,
                    std::vector<double> &out, std::vector<double> &lse) {
  out.assign(t.q.size(), 0.0);
  lse.assign(s.batch * s.heads * s.seqQ, 0.0);
  const int64_t group = s.heads / s.kvHeads, d = s.headDim;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t n = 0; n < s.heads; ++n)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        std::vector<double> scores(s.seqK, -INFINITY);
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!sees(s, i, j))
            continue;
          double dotProduct = 0;
          for (int64_t c = 0; c < d; ++c)
            dotProduct +=
                t.q[((b * s.seqQ + i) * s.heads + n) * d + c] *
                t.k[((b * s.seqK + j) * s.kvHeads + n / group) * d + c];
          scores[j] = s.scale * dotProduct;
        }
        double sum = 0;
        for (double x : scores)
          sum += std::exp(x);
        lse[(b * s.heads + n) * s.seqQ + i] = std::log(sum);
        if (sum == 0)
          continue;
        for (int64_t j = 0; j < s.seqK; ++j) {
          const double p = std::exp(scores[j]) / sum;
          for (int64_t c = 0; c < d; ++c)
            out[((b * s.seqQ + i) * s.heads + n) * d + c] +=
                p * t.v[((b * s.seqK + j) * s.kvHeads + n / group) * d + c];
        }
      }
}

/// The gradients of sum(dout * out) by the softmax's Jacobian, row by row:
/// P = softmax(S), dV += P^T dO, dP = dO V^T, dS = P (dP - sum_j P dP),
/// dQ = scale dS K, dK += scale dS^T Q.
void naiveAttentionGrad(const Tensors &t, const AttentionShape &s,
                        const std::vector<double> &dout,
                        std::vector<double> &dq, std::vector<double> &dk,
                        std::vector<double> &dv) {
  dq.assign(t.q.size(), 0.0);
  dk.assign(t.k.size(), 0.0);
  dv.assign(t.v.size(), 0.0);
  const int64_t group = s.heads / s.kvHeads, d = s.headDim;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t n = 0; n < s.heads; ++n)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        const int64_t qi = ((b * s.seqQ + i) * s.heads + n) * d;
        auto kv = [&](int64_t j) {
          return ((b * s.seqK + j) * s.kvHeads + n / group) * d;
        };
        std::vector<double> p(s.seqK, 0.0), dp(s.seqK, 0.0);
        double maxScore = -INFINITY;
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!sees(s, i, j))
            continue;
          double dotProduct = 0;
          for (int64_t c = 0; c < d; ++c)
            dotProduct += t.q[qi + c] * t.k[kv(j) + c];
          p[j] = s.scale * dotProduct;
          maxScore = std::max(maxScore, p[j]);
        }
        if (maxScore == -INFINITY)
          continue; // sees no key: out is 0 whatever q, k, v
        double sum = 0;
        for (int64_t j = 0; j < s.seqK; ++j)
          if (sees(s, i, j))
            sum += p[j] = std::exp(p[j] - maxScore);
        double pdp = 0;
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!sees(s, i, j))
            continue;
          p[j] /= sum;
          for (int64_t c = 0; c < d; ++c) {
            dv[kv(j) + c] += p[j] * dout[qi + c];
            dp[j] += dout[qi + c] * t.v[kv(j) + c];
          }
          pdp += p[j] * dp[j];
        }
        for (int64_t j = 0; j < s.seqK; ++j) {
          if (!sees(s, i, j))
            continue;
          const double ds = s.scale * p[j] * (dp[j] - pdp);
          for (int64_t c = 0; c < d; ++c) {
            dq[qi + c] += ds * t.k[kv(j) + c];
            dk[kv(j) + c] += ds * t.q[qi + c];
          }
        }
      }
}

void checkForward(const AttentionShape &s, const std::string &what) {
  Tensors t = randomInputs(s, 11);
  std::vector<double> out(t.q.size()), lse(s.batch * s.heads * s.seqQ);
  std::vector<double> wantOut, wantLse;
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
  naiveAttention(t, s, wantOut, wantLse);
  expectAllNear(out, wantOut, 1e-12, 1e-12, what + " out");
  // Rows that see no key: lse -inf on both sides (compared as 0).
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isinf(wantLse[i]) && lse[i] == wantLse[i])
      lse[i] = wantLse[i] = 0;
  expectAllNear(lse, wantLse, 1e-12, 1e-12, what + " lse");
}

TEST(AttentionTest, CausalGqaMatchesExplicitSoftmax) {
  checkForward(makeAttentionShape(2, 6, 6, 4, 2, 5, true), "causal gqa");
}

TEST(AttentionTest, NonCausalCrossLengthsMatchExplicitSoftmax) {
  checkForward(makeAttentionShape(2, 3, 7, 3, 1, 4, false), "non-causal mqa");
}

TEST(AttentionTest, SeveralQueryBlocksMatchExplicitSoftmax) {
  checkForward(makeAttentionShape(1, 150, 150, 2, 1, 8, true), "causal 150");
  checkForward(makeAttentionShape(1, 70, 90, 2, 2, 4, false),
               "non-causal 70x90");
}

/// A shape with block offsets (a block of a longer causal attention).
AttentionShape withOffsets(AttentionShape s, int64_t qOffset, int64_t kOffset) {
  s.qPos.start = qOffset;
  s.kPos.start = kOffset;
  return s;
}

constexpr int64_t kKeys = kAttentionKeyBlock;

// Query blocks that see more than one key block: the online softmax
// (running max and sum, rescaled output) against the explicit softmax. The
// scores span [-8, 8] (|q|, |k| <= 2, d = 4, scale 1/2), so a missed
// rescale by exp(m_old - m_new) is far outside the tolerance.
TEST(AttentionTest, SeveralKeyBlocksMatchExplicitSoftmax) {
  // 512 + 512 + 76 keys; causal: the diagonal in the third key block.
  checkForward(
      makeAttentionShape(1, 2 * kKeys + 76, 2 * kKeys + 76, 2, 1, 4, true),
      "causal gqa 1100");
  checkForward(makeAttentionShape(2, 70, kKeys + 88, 3, 3, 4, false),
               "non-causal 70x600");
  checkForward(
      makeAttentionShape(1, kKeys + 88, 2 * kKeys + 76, 2, 2, 4, false),
      "non-causal 600x1100");
}

// The running max must follow the scores up: the second key block's scores
// (~50..100) are far above the first's (|S| < 2), so exp(S - m) with the
// first block's max would overflow f32 (exp(88) is its largest). f32 kernel
// against the explicit f64 softmax and backward on the same inputs.
TEST(AttentionTest, RunningMaxGrowsAcrossKeyBlocksInFloat) {
  const AttentionShape s = makeAttentionShape(1, 8, kKeys + 40, 1, 1, 4, false);
  Tensors t = randomInputs(s, 71);
  for (int64_t i = 0; i < s.seqQ; ++i) { // q = (1..2, small, small, small)
    t.q[i * 4] = 1.5 + 0.5 * t.q[i * 4] / 2;
    for (int64_t c = 1; c < 4; ++c)
      t.q[i * 4 + c] *= 0.1;
  }
  for (int64_t j = kKeys; j < s.seqK; ++j)
    t.k[j * 4] = 100 + t.k[j * 4];
  std::vector<double> u = randomVector(t.q.size(), 72);
  auto toFloat = [](std::vector<double> &x) {
    std::vector<float> f = convert<float>(x);
    x = convert<double>(f); // the oracle sees the float inputs
    return f;
  };
  std::vector<float> q = toFloat(t.q), k = toFloat(t.k), v = toFloat(t.v),
                     dout = toFloat(u);
  std::vector<float> out(q.size()), lse(s.seqQ), dq(q.size()), dk(k.size()),
      dv(v.size());
  attention(q.data(), k.data(), v.data(), out.data(), lse.data(), s);
  attentionGrad(dout.data(), q.data(), k.data(), v.data(), out.data(),
                lse.data(), dq.data(), dk.data(), dv.data(), s);
  std::vector<double> wantOut, wantLse, wantDq, wantDk, wantDv;
  naiveAttention(t, s, wantOut, wantLse);
  naiveAttentionGrad(t, s, u, wantDq, wantDk, wantDv);
  ASSERT_GT(wantLse[0], 50.0); // the second key block dominates
  expectAllNear(out, wantOut, 1e-5, 1e-5, "f32 out");
  expectAllNear(lse, wantLse, 1e-6, 1e-6, "f32 lse");
  expectAllNear(dq, wantDq, 1e-4, 1e-4, "f32 dq");
  expectAllNear(dk, wantDk, 1e-4, 1e-4, "f32 dk");
  expectAllNear(dv, wantDv, 1e-4, 1e-4, "f32 dv");
}

// Ring attention blocks (qOffset, kOffset): a query block whose rows'
// visible keys end on both sides of a key-block boundary (offset
// difference 30), keys wholly in the past (no mask, two key blocks), and
// keys mostly in the future (rows that see none).
TEST(AttentionTest, SeveralKeyBlocksWithOffsetsMatchExplicitSoftmax) {
  const AttentionShape s = makeAttentionShape(1, 700, 700, 2, 1, 4, true);
  checkForward(withOffsets(s, 730, 700), "causal 700 at q 730, k 700");
  checkForward(withOffsets(s, 1400, 0), "causal 700 at q 1400, k 0");
  checkForward(withOffsets(s, 0, 650), "causal 700 at q 0, k 650");
}

void checkGradients(const AttentionShape &s, const std::string &what,
                    int64_t maxChecks) {
  Tensors t = randomInputs(s, 21);
  std::vector<double> out(t.q.size()), lse(s.batch * s.heads * s.seqQ);
  std::vector<double> u = randomVector(t.q.size(), 31);
  std::vector<double> dq(t.q.size()), dk(t.k.size()), dv(t.v.size());
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
  attentionGrad(u.data(), t.q.data(), t.k.data(), t.v.data(), out.data(),
                lse.data(), dq.data(), dk.data(), dv.data(), s);
  auto loss = [&] {
    attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
    return dot(u, out);
  };
  checkGradient(what + " dq", t.q, dq, loss, maxChecks);
  checkGradient(what + " dk", t.k, dk, loss, maxChecks);
  checkGradient(what + " dv", t.v, dv, loss, maxChecks);
}

TEST(AttentionTest, CausalGqaGradient) {
  checkGradients(makeAttentionShape(2, 5, 5, 4, 2, 3, true), "causal gqa", 400);
}

TEST(AttentionTest, NonCausalGradient) {
  checkGradients(makeAttentionShape(1, 4, 6, 2, 1, 3, false), "non-causal",
                 400);
}

TEST(AttentionTest, MultiBlockCausalGradient) {
  checkGradients(makeAttentionShape(1, 70, 70, 2, 1, 2, true), "causal 70", 60);
}

/// attentionGrad against the explicit backward (naiveAttentionGrad).
void checkExplicitGradients(const AttentionShape &s, const std::string &what) {
  Tensors t = randomInputs(s, 51);
  std::vector<double> u = randomVector(t.q.size(), 52);
  std::vector<double> out(t.q.size()), lse(s.batch * s.heads * s.seqQ);
  std::vector<double> dq(t.q.size()), dk(t.k.size()), dv(t.v.size());
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
  attentionGrad(u.data(), t.q.data(), t.k.data(), t.v.data(), out.data(),
                lse.data(), dq.data(), dk.data(), dv.data(), s);
  std::vector<double> wantDq, wantDk, wantDv;
  naiveAttentionGrad(t, s, u, wantDq, wantDk, wantDv);
  expectAllNear(dq, wantDq, 1e-10, 1e-12, what + " dq");
  expectAllNear(dk, wantDk, 1e-10, 1e-12, what + " dk");
  expectAllNear(dv, wantDv, 1e-10, 1e-12, what + " dv");
}

TEST(AttentionTest, ExplicitBackwardAgreesWithFiniteDifferences) {
  // The oracle of the key-block gradient tests, checked on its own.
  AttentionShape s =
      withOffsets(makeAttentionShape(1, 9, 9, 2, 1, 3, true), 4, 2);
  Tensors t = randomInputs(s, 61);
  std::vector<double> u = randomVector(t.q.size(), 62);
  std::vector<double> dq, dk, dv, out, lse;
  naiveAttentionGrad(t, s, u, dq, dk, dv);
  auto loss = [&] {
    naiveAttention(t, s, out, lse);
    return dot(u, out);
  };
  checkGradient("explicit dq", t.q, dq, loss);
  checkGradient("explicit dk", t.k, dk, loss);
  checkGradient("explicit dv", t.v, dv, loss);
}

TEST(AttentionTest, SeveralKeyBlocksGradient) {
  checkExplicitGradients(
      makeAttentionShape(1, 2 * kKeys + 76, 2 * kKeys + 76, 2, 1, 4, true),
      "causal gqa 1100");
  checkExplicitGradients(makeAttentionShape(2, 70, kKeys + 88, 3, 1, 4, false),
                         "non-causal mqa 70x600");
  const AttentionShape s = makeAttentionShape(1, 700, 700, 2, 1, 4, true);
  checkExplicitGradients(withOffsets(s, 730, 700),
                         "causal 700 at q 730, k 700");
  checkExplicitGradients(withOffsets(s, 1400, 0), "causal 700 at q 1400, k 0");
  checkExplicitGradients(withOffsets(s, 0, 650), "causal 700 at q 0, k 650");
}

TEST(AttentionTest, SeveralKeyBlocksFiniteDifferences) {
  // dq of rows that see two key blocks, dk and dv of keys in both.
  checkGradients(makeAttentionShape(1, 66, kKeys + 40, 2, 1, 2, false),
                 "non-causal 66x552", 24);
}

TEST(AttentionTest, Float32LseBackwardAgrees) {
  // The op's lse is f32; a double kernel reading a float lse must agree with
  // the all-double path to float precision.
  AttentionShape s = makeAttentionShape(1, 9, 9, 2, 1, 4, true);
  Tensors t = randomInputs(s, 41);
  std::vector<double> u = randomVector(t.q.size(), 42);
  std::vector<double> out(t.q.size()), lse(s.heads * s.seqQ);
  std::vector<float> lse32(s.heads * s.seqQ);
  std::vector<double> dq(t.q.size()), dk(t.k.size()), dv(t.v.size());
  std::vector<double> dq32(t.q.size()), dk32(t.k.size()), dv32(t.v.size());
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse32.data(), s);
  expectAllNear(lse32, lse, 1e-6, 1e-6, "f32 lse");
  attentionGrad(u.data(), t.q.data(), t.k.data(), t.v.data(), out.data(),
                lse.data(), dq.data(), dk.data(), dv.data(), s);
  attentionGrad(u.data(), t.q.data(), t.k.data(), t.v.data(), out.data(),
                lse32.data(), dq32.data(), dk32.data(), dv32.data(), s);
  expectAllNear(dq32, dq, 1e-5, 1e-6, "dq with f32 lse");
  expectAllNear(dk32, dk, 1e-5, 1e-6, "dk with f32 lse");
  expectAllNear(dv32, dv, 1e-5, 1e-6, "dv with f32 lse");
}

TEST(AttentionTest, RejectsBadShapes) {
  std::vector<double> x(64);
  std::vector<float> lse(64);
  AttentionShape notGrouped = makeAttentionShape(1, 2, 2, 3, 2, 2, false);
  EXPECT_THROW(
      attention(x.data(), x.data(), x.data(), x.data(), lse.data(), notGrouped),
      std::invalid_argument);
  AttentionShape causalCross = makeAttentionShape(1, 2, 3, 2, 2, 2, true);
  EXPECT_THROW(attention(x.data(), x.data(), x.data(), x.data(), lse.data(),
                         causalCross),
               std::invalid_argument);
}

} // namespace
