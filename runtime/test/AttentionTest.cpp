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

/// Explicit softmax(scale * Q K^T + mask) V per (batch, head), and the lse.
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
          if (s.causal && j > i)
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
        for (int64_t j = 0; j < s.seqK; ++j)
          for (int64_t c = 0; c < d; ++c)
            out[((b * s.seqQ + i) * s.heads + n) * d + c] +=
                std::exp(scores[j]) / sum *
                t.v[((b * s.seqK + j) * s.kvHeads + n / group) * d + c];
      }
}

void checkForward(const AttentionShape &s, const std::string &what) {
  Tensors t = randomInputs(s, 11);
  std::vector<double> out(t.q.size()), lse(s.batch * s.heads * s.seqQ);
  std::vector<double> wantOut, wantLse;
  attention(t.q.data(), t.k.data(), t.v.data(), out.data(), lse.data(), s);
  naiveAttention(t, s, wantOut, wantLse);
  expectAllNear(out, wantOut, 1e-12, 1e-12, what + " out");
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
