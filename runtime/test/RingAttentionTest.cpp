//===- RingAttentionTest.cpp - Ring attention kernels vs attention --------===//
//
// The kernels of context parallelism (attention with block offsets, i.e.
// attention_block(_grad), and attentionMerge) run the ring exactly as the
// compiler lowers tfm.attention / tfm.attention_grad under cp (contiguous
// chunks; TfmRingAttention.cpp), and must reproduce the plain kernels on the
// whole sequence: fp32, random data, forward and backward, GQA, causal and
// not.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/Attention.h"

#include "AttentionTestUtil.h"
#include "TestUtil.h"

#include <limits>

using namespace autoshard::runtime;
using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

using Vec = std::vector<float>;

struct Problem {
  int64_t batch, seq, heads, kvHeads, headDim, chunks;
  bool causal;
  /// The ring holds the sequence in zig-zag order of 2 chunks chunks
  /// (SequencePositions.h): rank r the original chunks r and 2 chunks-1-r.
  bool zigzag = false;

  int64_t chunk() const { return seq / chunks; }
  AttentionShape whole() const {
    return makeAttentionShape(batch, seq, seq, heads, kvHeads, headDim, causal);
  }
  /// The shape of the block (q chunk r, kv chunk c).
  AttentionShape block(int64_t r, int64_t c) const {
    AttentionShape s = whole();
    s.seqQ = s.seqK = chunk();
    int64_t order = zigzag ? 2 * chunks : 0;
    s.qPos = {r * chunk(), seq, order};
    s.kPos = {c * chunk(), seq, order};
    return s;
  }
  /// x [rows, seq, width] in the ring's order: row p holds original row
  /// zigzagPosition(p) (the identity without zigzag).
  Vec ordered(const Vec &x, int64_t rows, int64_t width) const {
    Vec out(x.size());
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t i = 0; i < seq; ++i) {
        int64_t from = zigzagPosition(i, seq, zigzag ? 2 * chunks : 0);
        for (int64_t w = 0; w < width; ++w)
          out[(b * seq + i) * width + w] = x[(b * seq + from) * width + w];
      }
    return out;
  }
  /// The inputs in the ring's order.
  template <typename In> In ordered(In in) const {
    int64_t qw = heads * headDim, kw = kvHeads * headDim;
    return {ordered(in.q, batch, qw), ordered(in.k, batch, kw),
            ordered(in.v, batch, kw), ordered(in.dout, batch, qw)};
  }
};

/// Rows [c * len, (c + 1) * len) of dim 1 of a [B, S, W] tensor.
Vec sliceSeq(const Vec &x, int64_t batch, int64_t seq, int64_t width, int64_t c,
             int64_t len) {
  Vec out(batch * len * width);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < len; ++i)
      for (int64_t w = 0; w < width; ++w)
        out[(b * len + i) * width + w] = x[(b * seq + c * len + i) * width + w];
  return out;
}

/// Writes a chunk back (inverse of sliceSeq).
void placeSeq(Vec &x, const Vec &part, int64_t batch, int64_t seq,
              int64_t width, int64_t c, int64_t len) {
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < len; ++i)
      for (int64_t w = 0; w < width; ++w)
        x[(b * seq + c * len + i) * width + w] =
            part[(b * len + i) * width + w];
}

Vec randomFloats(int64_t n, uint64_t seed, double lo = -2, double hi = 2) {
  return convert<float>(randomVector(n, seed, lo, hi));
}

struct Inputs {
  Vec q, k, v, dout;
};

Inputs randomInputs(const Problem &p, uint64_t seed) {
  int64_t qn = p.batch * p.seq * p.heads * p.headDim;
  int64_t kn = p.batch * p.seq * p.kvHeads * p.headDim;
  return {randomFloats(qn, seed), randomFloats(kn, seed + 1),
          randomFloats(kn, seed + 2), randomFloats(qn, seed + 3, -1, 1)};
}

/// The ring's forward on rank r: blocks against chunks r, r-1, ... (mod c),
/// merged; returns the rank's out and lse.
void ringForward(const Problem &p, const Inputs &in, int64_t r, Vec &out,
                 Vec &lse) {
  const int64_t len = p.chunk(), qw = p.heads * p.headDim,
                kw = p.kvHeads * p.headDim;
  Vec q = sliceSeq(in.q, p.batch, p.seq, qw, r, len);
  out.assign(p.batch * len * qw, 0.0f);
  lse.assign(p.batch * p.heads * len, -std::numeric_limits<float>::infinity());
  Vec blockOut(out.size()), blockLse(lse.size());
  for (int64_t t = 0; t < p.chunks; ++t) {
    int64_t c = ((r - t) % p.chunks + p.chunks) % p.chunks;
    Vec k = sliceSeq(in.k, p.batch, p.seq, kw, c, len);
    Vec v = sliceSeq(in.v, p.batch, p.seq, kw, c, len);
    attention<float, float>(q.data(), k.data(), v.data(), blockOut.data(),
                            blockLse.data(), p.block(r, c));
    attentionMerge<float, float>(out.data(), lse.data(), blockOut.data(),
                                 blockLse.data(), out.data(), lse.data(),
                                 p.batch, len, p.heads, p.headDim);
  }
}

/// lse [B, N, S] restricted to chunk c.
Vec sliceLse(const Vec &lse, const Problem &p, int64_t c) {
  return sliceSeq(lse, p.batch * p.heads, p.seq, 1, c, p.chunk());
}

void checkForward(const Problem &p, const std::string &what) {
  Inputs in = randomInputs(p, 7);
  AttentionShape s = p.whole();
  Vec out(in.q.size()), lse(p.batch * p.heads * p.seq);
  attention<float, float>(in.q.data(), in.k.data(), in.v.data(), out.data(),
                          lse.data(), s);
  const int64_t qw = p.heads * p.headDim;
  out = p.ordered(out, p.batch, qw);
  lse = p.ordered(lse, p.batch * p.heads, 1);
  Inputs ring = p.ordered(in);
  for (int64_t r = 0; r < p.chunks; ++r) {
    Vec ringOut, ringLse;
    ringForward(p, ring, r, ringOut, ringLse);
    std::string at = what + " rank " + std::to_string(r);
    expectAllNear(ringOut, sliceSeq(out, p.batch, p.seq, qw, r, p.chunk()),
                  2e-5, 1e-6, at + " out");
    expectAllNear(ringLse, sliceLse(lse, p, r), 2e-6, 1e-6, at + " lse");
  }
}

/// The ring's backward: every rank's dq, and the dk/dv accumulators that
/// travel with the kv chunks (summed in ring order), against attentionGrad
/// on the whole sequence.
void checkBackward(const Problem &p, const std::string &what) {
  Inputs in = randomInputs(p, 21);
  AttentionShape s = p.whole();
  Vec out(in.q.size()), lse(p.batch * p.heads * p.seq);
  attention<float, float>(in.q.data(), in.k.data(), in.v.data(), out.data(),
                          lse.data(), s);
  Vec dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
  attentionGrad<float, float>(in.dout.data(), in.q.data(), in.k.data(),
                              in.v.data(), out.data(), lse.data(), dq.data(),
                              dk.data(), dv.data(), s);

  const int64_t len = p.chunk(), qw = p.heads * p.headDim,
                kw = p.kvHeads * p.headDim;
  out = p.ordered(out, p.batch, qw);
  lse = p.ordered(lse, p.batch * p.heads, 1);
  dq = p.ordered(dq, p.batch, qw);
  dk = p.ordered(dk, p.batch, kw);
  dv = p.ordered(dv, p.batch, kw);
  in = p.ordered(in);
  Vec ringDq(dq.size()), ringDk(dk.size(), 0.0f), ringDv(dv.size(), 0.0f);
  std::vector<Vec> accK(p.chunks, Vec(p.batch * len * kw, 0.0f));
  std::vector<Vec> accV = accK;
  for (int64_t r = 0; r < p.chunks; ++r) {
    Vec q = sliceSeq(in.q, p.batch, p.seq, qw, r, len);
    Vec o = sliceSeq(out, p.batch, p.seq, qw, r, len);
    Vec d = sliceSeq(in.dout, p.batch, p.seq, qw, r, len);
    Vec l = sliceLse(lse, p, r);
    Vec rankDq(q.size(), 0.0f), bq(q.size()), bk(accK[0].size()),
        bv(accK[0].size());
    for (int64_t t = 0; t < p.chunks; ++t) {
      int64_t c = ((r - t) % p.chunks + p.chunks) % p.chunks;
      Vec k = sliceSeq(in.k, p.batch, p.seq, kw, c, len);
      Vec v = sliceSeq(in.v, p.batch, p.seq, kw, c, len);
      attentionGrad<float, float>(d.data(), q.data(), k.data(), v.data(),
                                  o.data(), l.data(), bq.data(), bk.data(),
                                  bv.data(), p.block(r, c));
      for (size_t i = 0; i < rankDq.size(); ++i)
        rankDq[i] += bq[i];
      for (size_t i = 0; i < bk.size(); ++i) {
        accK[c][i] += bk[i];
        accV[c][i] += bv[i];
      }
    }
    placeSeq(ringDq, rankDq, p.batch, p.seq, qw, r, len);
  }
  for (int64_t c = 0; c < p.chunks; ++c) {
    placeSeq(ringDk, accK[c], p.batch, p.seq, kw, c, len);
    placeSeq(ringDv, accV[c], p.batch, p.seq, kw, c, len);
  }
  expectAllNear(ringDq, dq, 1e-4, 1e-5, what + " dq");
  expectAllNear(ringDk, dk, 1e-4, 1e-5, what + " dk");
  expectAllNear(ringDv, dv, 1e-4, 1e-5, what + " dv");
}

TEST(RingAttentionTest, CausalRingOfTwoMatchesAttention) {
  checkForward({2, 16, 4, 2, 8, 2, true}, "causal cp=2");
}

TEST(RingAttentionTest, CausalRingOfFourMatchesAttention) {
  checkForward({2, 32, 4, 4, 8, 4, true}, "causal cp=4");
}

TEST(RingAttentionTest, LongChunksOverSeveralQueryBlocks) {
  // Chunks of 80 rows: the kernel's 64-row query blocks straddle the mask.
  checkForward({1, 160, 2, 1, 4, 2, true}, "causal cp=2, 80-row chunks");
}

TEST(RingAttentionTest, NonCausalRingMatchesAttention) {
  checkForward({2, 24, 4, 2, 8, 3, false}, "non-causal cp=3");
}

TEST(RingAttentionTest, CausalRingGradientMatchesAttentionGrad) {
  checkBackward({2, 16, 4, 2, 8, 2, true}, "causal cp=2");
  checkBackward({1, 32, 2, 1, 8, 4, true}, "causal cp=4");
}

TEST(RingAttentionTest, NonCausalRingGradientMatchesAttentionGrad) {
  checkBackward({2, 24, 4, 2, 8, 3, false}, "non-causal cp=3");
}

TEST(RingAttentionTest, ChunksOverSeveralKeyBlocks) {
  // 600-row chunks: the blocks' query blocks see two key blocks (512 + 88)
  // and the whole sequence's up to three, forward and backward.
  const Problem p{1, 1200, 2, 1, 4, 2, true};
  ASSERT_GT(p.chunk(), kAttentionKeyBlock);
  checkForward(p, "causal cp=2, 600-row chunks");
  checkBackward(p, "causal cp=2, 600-row chunks");
}

TEST(RingAttentionTest, BlockAboveTheDiagonalIsSkipped) {
  // q chunk 0 against kv chunk 1: no query sees any key.
  Problem p{1, 8, 2, 1, 4, 2, true};
  Inputs in = randomInputs(p, 3);
  Vec out(p.batch * 4 * p.heads * p.headDim, 5.0f), lse(p.heads * 4, 5.0f);
  attention<float, float>(in.q.data(), in.k.data(), in.v.data(), out.data(),
                          lse.data(), p.block(0, 1));
  for (float x : out)
    EXPECT_EQ(x, 0.0f);
  for (float x : lse)
    EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
  Vec dq(out.size(), 5.0f), dk(p.batch * 4 * p.kvHeads * p.headDim, 5.0f),
      dv(dk.size(), 5.0f), zeroLse(lse.size(), 0.0f);
  attentionGrad<float, float>(in.dout.data(), in.q.data(), in.k.data(),
                              in.v.data(), out.data(), zeroLse.data(),
                              dq.data(), dk.data(), dv.data(), p.block(0, 1));
  for (const Vec *g : {&dq, &dk, &dv})
    for (float x : *g)
      EXPECT_EQ(x, 0.0f);
}

TEST(RingAttentionTest, MergeWithEmptySides) {
  const float inf = std::numeric_limits<float>::infinity();
  // One row of 2 elements per case: (lseA, lseB) = (-inf, -inf), (-inf, 1),
  // (0, -inf), (log 1, log 3).
  Vec outA = {1, 2, 1, 2, 1, 2, 4, 8}, outB = {3, 4, 3, 4, 3, 4, 0, 4};
  Vec lseA = {-inf, -inf, 0, 0}, lseB = {-inf, 1, -inf, std::log(3.0f)};
  Vec out(8), lse(4);
  attentionMerge<float, float>(outA.data(), lseA.data(), outB.data(),
                               lseB.data(), out.data(), lse.data(), 1, 4, 1, 2);
  EXPECT_EQ(lse[0], -inf);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_FLOAT_EQ(lse[1], 1.0f);
  EXPECT_FLOAT_EQ(out[2], 3.0f);
  EXPECT_FLOAT_EQ(out[3], 4.0f);
  EXPECT_FLOAT_EQ(lse[2], 0.0f);
  EXPECT_FLOAT_EQ(out[4], 1.0f);
  EXPECT_FLOAT_EQ(out[5], 2.0f);
  EXPECT_NEAR(lse[3], std::log(4.0f), 1e-6);
  EXPECT_NEAR(out[6], 0.25f * 4 + 0.75f * 0, 1e-6);
  EXPECT_NEAR(out[7], 0.25f * 8 + 0.75f * 4, 1e-6);
}

} // namespace

// Zig-zag order (algorithms.md §2.3): each rank holds the original chunks r
// and 2c-1-r; the blocks' causal masks follow the original positions, so the
// ring reproduces the whole attention in the permuted order.
TEST(RingAttentionTest, ZigzagRingMatchesAttention) {
  checkForward({2, 16, 4, 2, 8, 2, true, true}, "zig-zag cp=2");
  checkForward({1, 48, 2, 1, 8, 3, true, true}, "zig-zag cp=3");
  checkForward({2, 32, 4, 4, 8, 4, true, true}, "zig-zag cp=4");
  // Chunk pairs of 160 rows: 64-row query blocks straddle the half boundary.
  checkForward({1, 320, 2, 1, 4, 2, true, true}, "zig-zag cp=2, 160-row pairs");
}

TEST(RingAttentionTest, ZigzagRingGradientMatchesAttentionGrad) {
  checkBackward({2, 16, 4, 2, 8, 2, true, true}, "zig-zag cp=2");
  checkBackward({1, 32, 2, 1, 8, 4, true, true}, "zig-zag cp=4");
  // 64-row query blocks straddle the half boundary of 160-row pairs.
  checkBackward({1, 320, 2, 1, 4, 2, true, true},
                "zig-zag cp=2, 160-row pairs");
}

TEST(RingAttentionTest, ZigzagPositionsInvertAndBalance) {
  for (int64_t n : {2, 4, 6, 8}) {
    const int64_t seq = 3 * n;
    std::vector<int> seen(seq, 0);
    for (int64_t p = 0; p < seq; ++p) {
      int64_t pos = zigzagPosition(p, seq, n);
      ASSERT_GE(pos, 0);
      ASSERT_LT(pos, seq);
      ++seen[pos];
      EXPECT_EQ(zigzagIndex(pos, seq, n), p) << "n " << n << " p " << p;
    }
    for (int64_t pos = 0; pos < seq; ++pos)
      EXPECT_EQ(seen[pos], 1) << "n " << n << " position " << pos;
    // Rank r of the ring (n / 2 ranks) holds original chunks r, n-1-r: the
    // causal work (the sum of positions + 1) is the same on every rank.
    const int64_t pair = 2 * (seq / n);
    int64_t work0 = -1;
    for (int64_t r = 0; r < n / 2; ++r) {
      SequencePositions rows{r * pair, seq, n};
      EXPECT_TRUE(rows.increasingOver(pair));
      int64_t work = 0;
      for (int64_t i = 0; i < pair; ++i)
        work += rows.at(i) + 1;
      if (r == 0)
        work0 = work;
      EXPECT_EQ(work, work0) << "n " << n << " rank " << r;
    }
    SequencePositions across{pair / 2, seq, n};
    if (n > 2) {
      EXPECT_FALSE(across.increasingOver(2 * pair));
    }
  }
}
