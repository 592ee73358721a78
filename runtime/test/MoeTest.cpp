//===- MoeTest.cpp - MoE router, aux-loss, dispatch and combine tests -----===//

#include "autoshard/runtime/cpu/Moe.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

// B = 2 sequences of S = 5 tokens, E = 4 experts, top-2, capacity 2: with 10
// choices per sequence over 4 experts * 2 slots, some are always dropped.
MoeShape makeShape() {
  MoeShape s;
  s.batch = 2;
  s.seq = 5;
  s.numExperts = 4;
  s.topK = 2;
  s.capacity = 2;
  s.hidden = 3;
  return s;
}

int64_t numChoices(const MoeShape &s) { return s.batch * s.seq * s.topK; }
int64_t numTokens(const MoeShape &s) { return s.batch * s.seq; }
int64_t bufNumel(const MoeShape &s) {
  return s.numExperts * s.batch * s.capacity * s.hidden;
}

std::vector<double> softmaxRow(const double *x, int64_t n) {
  std::vector<double> p(n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += p[i] = std::exp(x[i]);
  for (double &v : p)
    v /= sum;
  return p;
}

TEST(MoeTest, RouterTopKWithTiesAndRenormalize) {
  MoeShape s = makeShape();
  s.batch = 1;
  s.seq = 2;
  s.topK = 2;
  // Token 0: experts 1 and 3 tie for first, expert 0 and 2 tie below.
  std::vector<double> logits = {0.0, 1.0, 0.0, 1.0, 0.3, -1.0, 2.0, 0.1};
  std::vector<double> gates(4), gatesNorm(4);
  std::vector<int32_t> ids(4);
  moeRouter(logits.data(), gates.data(), ids.data(), s, false);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 2, 0}));
  for (int64_t t = 0; t < 2; ++t) {
    std::vector<double> p = softmaxRow(logits.data() + 4 * t, 4);
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_NEAR(gates[t * 2 + j], p[ids[t * 2 + j]], 1e-15);
  }
  moeRouter(logits.data(), gatesNorm.data(), ids.data(), s, true);
  EXPECT_NEAR(gatesNorm[0], 0.5, 1e-15);
  EXPECT_NEAR(gatesNorm[2] + gatesNorm[3], 1.0, 1e-15);
  EXPECT_NEAR(gatesNorm[2] / gatesNorm[3], gates[2] / gates[3], 1e-12);
}

void checkRouterGradient(bool renormalize) {
  MoeShape s = makeShape();
  std::vector<double> logits =
      randomVector(numTokens(s) * s.numExperts, 1, -2, 2);
  std::vector<double> gates(numChoices(s)), u = randomVector(numChoices(s), 2);
  std::vector<int32_t> ids(numChoices(s)), idsNow(numChoices(s));
  std::vector<double> dlogits(logits.size());
  moeRouter(logits.data(), gates.data(), ids.data(), s, renormalize);
  moeRouterGrad(u.data(), logits.data(), ids.data(), dlogits.data(), s,
                renormalize);
  checkGradient(renormalize ? "router renorm dlogits" : "router dlogits",
                logits, dlogits, [&] {
                  moeRouter(logits.data(), gates.data(), idsNow.data(), s,
                            renormalize);
                  EXPECT_EQ(idsNow, ids) << "selection changed under FD";
                  return dot(u, gates);
                });
}

TEST(MoeTest, RouterGradient) { checkRouterGradient(false); }

TEST(MoeTest, RouterGradientRenormalized) { checkRouterGradient(true); }

TEST(MoeTest, AuxLossMatchesSwitchFormulaAndGradient) {
  MoeShape s = makeShape();
  std::vector<double> logits =
      randomVector(numTokens(s) * s.numExperts, 3, -2, 2);
  std::vector<double> gates(numChoices(s));
  std::vector<int32_t> ids(numChoices(s));
  moeRouter(logits.data(), gates.data(), ids.data(), s, false);
  double want = 0;
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<double> f(s.numExperts, 0.0), p(s.numExperts, 0.0);
    for (int64_t t = 0; t < s.seq; ++t) {
      std::vector<double> row = softmaxRow(
          logits.data() + (b * s.seq + t) * s.numExperts, s.numExperts);
      for (int64_t e = 0; e < s.numExperts; ++e)
        p[e] += row[e] / s.seq;
      for (int64_t j = 0; j < s.topK; ++j)
        f[ids[(b * s.seq + t) * s.topK + j]] += 1.0 / (s.seq * s.topK);
    }
    for (int64_t e = 0; e < s.numExperts; ++e)
      want += s.numExperts * f[e] * p[e] / s.batch;
  }
  EXPECT_NEAR(moeAuxLoss(logits.data(), ids.data(), s), want, 1e-14);

  const double dloss = 0.7;
  std::vector<double> dlogits(logits.size());
  moeAuxLossGrad(dloss, logits.data(), ids.data(), dlogits.data(), s);
  checkGradient("aux loss dlogits", logits, dlogits, [&] {
    return dloss * moeAuxLoss(logits.data(), ids.data(), s);
  });
}

TEST(MoeTest, DispatchSlotOrderAndDrops) {
  MoeShape s = makeShape();
  s.batch = 1;
  s.seq = 3;
  s.hidden = 1;
  // (token, choice) order: (0: e2, e0) (1: e2, e1) (2: e2, e0); capacity 2
  // drops token 2's expert-2 choice only.
  std::vector<int64_t> ids = {2, 0, 2, 1, 2, 0};
  std::vector<double> x = {10, 20, 30};
  std::vector<double> buf(s.numExperts * s.capacity, -1.0);
  moeDispatch(x.data(), ids.data(), buf.data(), s);
  // buf [E=4, B=1, C=2, H=1].
  EXPECT_EQ(buf, (std::vector<double>{10, 30, 20, 0, 10, 20, 0, 0}));
  std::vector<double> gates = {0.5, 0.25, 1, 2, 3, 4}, y(3);
  moeCombine(buf.data(), gates.data(), ids.data(), y.data(), s);
  // token 2: its e2 choice is dropped, e0 slot 1 holds 30.
  EXPECT_EQ(
      y, (std::vector<double>{0.5 * 10 + 0.25 * 10, 1 * 20 + 2 * 20, 4 * 30}));
}

TEST(MoeTest, DispatchAndCombineGradients) {
  MoeShape s = makeShape();
  std::vector<int32_t> ids = randomIds<int32_t>(numChoices(s), s.numExperts, 4);
  std::vector<double> x = randomVector(numTokens(s) * s.hidden, 5);
  std::vector<double> ubuf = randomVector(bufNumel(s), 6), buf(bufNumel(s));
  std::vector<double> dx(x.size());
  moeDispatchGrad(ubuf.data(), ids.data(), dx.data(), s);
  checkGradient("dispatch dx", x, dx, [&] {
    moeDispatch(x.data(), ids.data(), buf.data(), s);
    return dot(ubuf, buf);
  });

  std::vector<double> gates = randomVector(numChoices(s), 7);
  std::vector<double> uy = randomVector(numTokens(s) * s.hidden, 8);
  std::vector<double> y(uy.size()), dbuf(buf.size()), dgates(gates.size());
  buf = randomVector(bufNumel(s), 9);
  moeCombineGrad(uy.data(), buf.data(), gates.data(), ids.data(), dbuf.data(),
                 dgates.data(), s);
  auto loss = [&] {
    moeCombine(buf.data(), gates.data(), ids.data(), y.data(), s);
    return dot(uy, y);
  };
  checkGradient("combine dbuf", buf, dbuf, loss);
  checkGradient("combine dgates", gates, dgates, loss);
  int64_t dropped = 0;
  for (double g : dgates)
    dropped += g == 0.0;
  EXPECT_GT(dropped, 0) << "the test must exercise dropped choices";
}

// Router -> dispatch -> (identity experts) -> combine, end to end: the
// composition of the backward kernels is the gradient of the whole layer.
TEST(MoeTest, RoutedLayerGradientWithDrops) {
  MoeShape s = makeShape();
  std::vector<double> logits =
      randomVector(numTokens(s) * s.numExperts, 10, -2, 2);
  std::vector<double> x = randomVector(numTokens(s) * s.hidden, 11);
  std::vector<double> u = randomVector(x.size(), 12);
  std::vector<double> gates(numChoices(s)), buf(bufNumel(s)), y(x.size());
  std::vector<int32_t> ids(numChoices(s));
  auto loss = [&] {
    moeRouter(logits.data(), gates.data(), ids.data(), s, true);
    moeDispatch(x.data(), ids.data(), buf.data(), s);
    moeCombine(buf.data(), gates.data(), ids.data(), y.data(), s);
    return dot(u, y);
  };
  loss();
  std::vector<double> dbuf(buf.size()), dgates(gates.size());
  std::vector<double> dx(x.size()), dlogits(logits.size());
  moeCombineGrad(u.data(), buf.data(), gates.data(), ids.data(), dbuf.data(),
                 dgates.data(), s);
  moeDispatchGrad(dbuf.data(), ids.data(), dx.data(), s);
  moeRouterGrad(dgates.data(), logits.data(), ids.data(), dlogits.data(), s,
                true);
  checkGradient("moe layer dx", x, dx, loss);
  checkGradient("moe layer dlogits", logits, dlogits, loss);
}

TEST(MoeTest, DroplessBoundOverflowIsAnError) {
  MoeShape s = makeShape();
  s.batch = 2;
  s.seq = 3;
  s.hidden = 1;
  s.dropless = true;
  // Sequence 0 fits capacity 2 (expert 2 gets tokens 0 and 1); sequence 1
  // routes all three tokens to expert 2.
  std::vector<int64_t> ids = {2, 0, 2, 1, 0, 1, 2, 0, 2, 1, 2, 3};
  std::vector<double> x = {10, 20, 30, 40, 50, 60};
  std::vector<double> buf(bufNumel(s), -1.0);
  try {
    moeDispatch(x.data(), ids.data(), buf.data(), s);
    ADD_FAILURE() << "an overflow of the dropless bound was not reported";
  } catch (const MoeOverflowError &e) {
    EXPECT_STREQ(e.what(),
                 "moe_dispatch: sequence 1 (of this rank's batch) routes 3 "
                 "tokens to expert 2, over the dropless bound of 2 tokens per "
                 "expert and sequence (rebuild the model with a larger "
                 "--max-tokens-per-expert, at most the sequence length 3, "
                 "which never overflows)");
  }
  // Within the bound it is the ordinary dispatch (nothing dropped).
  ids = {2, 0, 2, 1, 0, 1, 2, 0, 1, 3, 2, 3};
  moeDispatch(x.data(), ids.data(), buf.data(), s);
  s.dropless = false;
  std::vector<double> plain(bufNumel(s), -1.0);
  moeDispatch(x.data(), ids.data(), plain.data(), s);
  EXPECT_EQ(buf, plain);
}

TEST(MoeTest, RejectsBadExpertIds) {
  MoeShape s = makeShape();
  s.batch = 1;
  s.seq = 1;
  std::vector<int32_t> ids = {1, 4};
  std::vector<double> x(3), buf(bufNumel(s));
  EXPECT_THROW(moeDispatch(x.data(), ids.data(), buf.data(), s),
               std::out_of_range);
  s.topK = 5;
  std::vector<double> logits(4), gates(5);
  std::vector<int32_t> out(5);
  EXPECT_THROW(moeRouter(logits.data(), gates.data(), out.data(), s, false),
               std::invalid_argument);
}

} // namespace
