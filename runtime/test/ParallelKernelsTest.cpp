//===- ParallelKernelsTest.cpp - Vectorised and threaded CPU kernels ------===//
//
// The float kernels take SLEEF's vector loops (AVX2 + FMA) and split their
// work over the OpenMP pool. Checked here: they agree with the fp64
// instantiation (the oracle) at every tail length and past one parallel
// chunk, and their results are bitwise the same on 1, 2 and 3 threads.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/Kernels.h"
#include "autoshard/runtime/cpu/Threads.h"

#include "TestUtil.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

constexpr double kRtol = 4e-6, kAtol = 1e-7;
// The exact GELU on oneDNN: its polynomial erf is good to ~1e-7 absolute,
// i.e. x Phi(x) to ~|x| 1e-7 where Phi is small (|x| <= 6 here).
constexpr double kGeluErfAtol = 6e-7;

/// Restores the pool size a test changed.
class ThreadCount {
public:
  explicit ThreadCount(int n) : saved(kernelThreads()) { setKernelThreads(n); }
  ~ThreadCount() { setKernelThreads(saved); }

private:
  int saved;
};

/// Runs fn() on 1, 2 and 3 threads and expects bitwise equal results (with
/// `rtol` > 0: equal within rtol, relative and absolute).
template <typename Fn>
void expectSameOnAnyThreadCount(const char *what, Fn fn, double rtol = 0) {
  std::vector<std::vector<float>> first;
  for (int threads : {1, 2, 3}) {
    ThreadCount scope(threads);
    std::vector<std::vector<float>> out = fn();
    if (first.empty()) {
      first = out;
      continue;
    }
    ASSERT_EQ(out.size(), first.size());
    for (size_t i = 0; i < out.size(); ++i) {
      std::string where = std::string(what) + ": output " + std::to_string(i) +
                          " on " + std::to_string(threads) +
                          " threads against 1 thread";
      if (rtol > 0)
        expectAllNear(out[i], first[i], rtol, rtol, where);
      else
        EXPECT_EQ(0, std::memcmp(out[i].data(), first[i].data(),
                                 out[i].size() * sizeof(float)))
            << where << ": not bitwise equal";
    }
  }
}

// Lengths with every tail modulo 8 and 16, and past one parallel chunk.
const std::vector<int64_t> kLengths = {1, 7, 8, 9, 15, 17, 33, 40000};

TEST(ParallelKernelsTest, ActivationsMatchTheFp64Oracle) {
  for (int64_t n : kLengths) {
    std::vector<float> x = convert<float>(randomVector(n, 11, -6, 6));
    std::vector<float> dy = convert<float>(randomVector(n, 12, -2, 2));
    std::vector<double> xd = convert<double>(x), dyd = convert<double>(dy);
    for (bool tanhApprox : {false, true}) {
      std::vector<float> y(n), dx(n);
      std::vector<double> yd(n), dxd(n);
      gelu(x.data(), y.data(), n, tanhApprox);
      gelu(xd.data(), yd.data(), n, tanhApprox);
      geluGrad(dy.data(), x.data(), dx.data(), n, tanhApprox);
      geluGrad(dyd.data(), xd.data(), dxd.data(), n, tanhApprox);
      const std::string tag =
          (tanhApprox ? " tanh n=" : " n=") + std::to_string(n);
      const double atol = tanhApprox ? kAtol : kGeluErfAtol;
      expectAllNear(y, yd, kRtol, atol, "gelu" + tag);
      expectAllNear(dx, dxd, kRtol, atol, "gelu_grad" + tag);
    }
    std::vector<float> y(n), dx(n), dup(n);
    std::vector<double> yd(n), dxd(n), dupd(n);
    silu(x.data(), y.data(), n);
    silu(xd.data(), yd.data(), n);
    expectAllNear(y, yd, kRtol, kAtol, "silu n=" + std::to_string(n));
    siluGrad(dy.data(), x.data(), dx.data(), n);
    siluGrad(dyd.data(), xd.data(), dxd.data(), n);
    expectAllNear(dx, dxd, kRtol, kAtol, "silu_grad n=" + std::to_string(n));
    swiglu(x.data(), dy.data(), y.data(), n);
    swiglu(xd.data(), dyd.data(), yd.data(), n);
    expectAllNear(y, yd, kRtol, kAtol, "swiglu n=" + std::to_string(n));
    swigluGrad(dy.data(), x.data(), dy.data(), dx.data(), dup.data(), n);
    swigluGrad(dyd.data(), xd.data(), dyd.data(), dxd.data(), dupd.data(), n);
    expectAllNear(dx, dxd, kRtol, kAtol, "swiglu dgate n=" + std::to_string(n));
    expectAllNear(dup, dupd, kRtol, kAtol, "swiglu dup n=" + std::to_string(n));
  }
}

// The float norms, cross entropy and AdamW (AVX2 rows where the CPU has
// them) against the double templates, for row lengths with every tail
// modulo 8.
TEST(ParallelKernelsTest, NormsLossAndAdamWMatchTheFp64Oracle) {
  for (int64_t hidden : {1, 7, 8, 9, 15, 17, 33, 128}) {
    const int64_t rows = 5, n = rows * hidden;
    const std::string tag = " hidden=" + std::to_string(hidden);
    std::vector<float> x = convert<float>(randomVector(n, 41, -2, 3));
    std::vector<float> dy = convert<float>(randomVector(n, 42));
    std::vector<float> gamma =
        convert<float>(randomVector(hidden, 43, 0.5, 1.5));
    std::vector<float> beta = convert<float>(randomVector(hidden, 44));
    std::vector<double> xd = convert<double>(x), dyd = convert<double>(dy),
                        gd = convert<double>(gamma), bd = convert<double>(beta);
    std::vector<float> y(n), dx(n), dg(hidden), db(hidden);
    std::vector<double> yd(n), dxd(n), dgd(hidden), dbd(hidden);
    layerNorm(x.data(), gamma.data(), beta.data(), y.data(), rows, hidden,
              1e-5);
    layerNorm(xd.data(), gd.data(), bd.data(), yd.data(), rows, hidden, 1e-5);
    expectAllNear(y, yd, 1e-5, 1e-5, "layer_norm" + tag);
    layerNormGrad(dy.data(), x.data(), gamma.data(), dx.data(), dg.data(),
                  db.data(), rows, hidden, 1e-5);
    layerNormGrad(dyd.data(), xd.data(), gd.data(), dxd.data(), dgd.data(),
                  dbd.data(), rows, hidden, 1e-5);
    expectAllNear(dx, dxd, 1e-4, 1e-4, "layer_norm_grad dx" + tag);
    expectAllNear(dg, dgd, 1e-5, 1e-5, "layer_norm_grad dgamma" + tag);
    expectAllNear(db, dbd, 1e-5, 1e-5, "layer_norm_grad dbeta" + tag);
    rmsNorm(x.data(), gamma.data(), y.data(), rows, hidden, 1e-6);
    rmsNorm(xd.data(), gd.data(), yd.data(), rows, hidden, 1e-6);
    expectAllNear(y, yd, 1e-5, 1e-5, "rms_norm" + tag);
    rmsNormGrad(dy.data(), x.data(), gamma.data(), dx.data(), dg.data(), rows,
                hidden, 1e-6);
    rmsNormGrad(dyd.data(), xd.data(), gd.data(), dxd.data(), dgd.data(), rows,
                hidden, 1e-6);
    expectAllNear(dx, dxd, 1e-4, 1e-4, "rms_norm_grad dx" + tag);
    expectAllNear(dg, dgd, 1e-5, 1e-5, "rms_norm_grad dgamma" + tag);
    EXPECT_NEAR(sumSquares(x.data(), n), sumSquares(xd.data(), n),
                1e-6 * sumSquares(xd.data(), n))
        << "sum_squares" << tag;

    // Rows of magnitude 1e20: x^2 overflows in float, not in the double
    // sums the kernels keep.
    {
      std::vector<float> big(n);
      for (int64_t i = 0; i < n; ++i)
        big[i] = x[i] * 1e20f;
      std::vector<double> bigd = convert<double>(big);
      rmsNorm(big.data(), gamma.data(), y.data(), rows, hidden, 1e-6);
      rmsNorm(bigd.data(), gd.data(), yd.data(), rows, hidden, 1e-6);
      expectAllNear(y, yd, 1e-5, 1e-5, "rms_norm of 1e20" + tag);
      rmsNormGrad(dy.data(), big.data(), gamma.data(), dx.data(), dg.data(),
                  rows, hidden, 1e-6);
      rmsNormGrad(dyd.data(), bigd.data(), gd.data(), dxd.data(), dgd.data(),
                  rows, hidden, 1e-6);
      expectAllNear(dg, dgd, 1e-5, 1e-5, "rms_norm_grad dgamma of 1e20" + tag);
      layerNorm(big.data(), gamma.data(), beta.data(), y.data(), rows, hidden,
                1e-5);
      layerNorm(bigd.data(), gd.data(), bd.data(), yd.data(), rows, hidden,
                1e-5);
      expectAllNear(y, yd, 1e-4, 1e-4, "layer_norm of 1e20" + tag);
    }

    // Cross entropy over `hidden` classes, the last one padding.
    std::vector<int32_t> labels =
        randomIds<int32_t>(rows, std::max<int64_t>(1, hidden - 1), 46);
    CrossEntropyShape ce{rows, hidden, std::max<int64_t>(1, hidden - 1)};
    EXPECT_NEAR(crossEntropy(x.data(), labels.data(), ce),
                crossEntropy(xd.data(), labels.data(), ce), 1e-6)
        << "cross_entropy" << tag;
    crossEntropyGrad(0.7, x.data(), labels.data(), dx.data(), ce);
    crossEntropyGrad(0.7, xd.data(), labels.data(), dxd.data(), ce);
    expectAllNear(dx, dxd, kRtol, kAtol, "cross_entropy_grad" + tag);

    AdamWParams hp;
    hp.lr = 1e-2;
    hp.step = 3;
    hp.weightDecay = 0.1;
    hp.gradScale = 0.5;
    std::vector<float> v0 = convert<float>(randomVector(n, 45, 0.0, 1e-3));
    std::vector<double> v0d = convert<double>(v0);
    std::vector<float> p(n), m(n), v(n);
    std::vector<double> pd(n), md(n), vd(n);
    adamw(x.data(), dy.data(), y.data(), v0.data(), p.data(), m.data(),
          v.data(), n, hp);
    std::vector<double> yf = convert<double>(y);
    adamw(xd.data(), dyd.data(), yf.data(), v0d.data(), pd.data(), md.data(),
          vd.data(), n, hp);
    expectAllNear(p, pd, kRtol, kAtol, "adamw param" + tag);
    expectAllNear(m, md, kRtol, kAtol, "adamw m" + tag);
    expectAllNear(v, vd, kRtol, kAtol, "adamw v" + tag);
    // An element's update does not depend on where it sits: a ZeRO shard
    // starting 3 elements in updates its elements bitwise as the whole does.
    if (n > 3) {
      std::vector<float> ps(n - 3), ms(n - 3), vs(n - 3);
      adamw(x.data() + 3, dy.data() + 3, y.data() + 3, v0.data() + 3, ps.data(),
            ms.data(), vs.data(), n - 3, hp);
      EXPECT_EQ(0, std::memcmp(ps.data(), p.data() + 3, ps.size() * 4))
          << "adamw of a shard" << tag;
    }
  }
}

TEST(ParallelKernelsTest, GeluExtremesStayFinite) {
  std::vector<float> x = {-100.f, -20.f, -9.f,  0.f,   9.f,
                          20.f,   100.f, 3e38f, -3e38f};
  std::vector<float> y(x.size()), dx(x.size()), dy(x.size(), 1.f);
  gelu(x.data(), y.data(), x.size(), false);
  geluGrad(dy.data(), x.data(), dx.data(), x.size(), false);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << "gelu(" << x[i] << ") = " << y[i];
    EXPECT_TRUE(std::isfinite(dx[i])) << "gelu'(" << x[i] << ") = " << dx[i];
  }
  EXPECT_EQ(y[0], 0.f);
  EXPECT_EQ(y[6], 100.f);
}

/// The attention shapes: two query blocks (the second a partial one) in one
/// key block, and three key blocks (512, 512, 76 keys) for the last query
/// blocks, both causal GQA with several (batch, kv head) pairs.
std::vector<AttentionShape> attentionShapes() {
  AttentionShape s;
  s.batch = 3;
  s.seqQ = s.seqK = 70;
  s.heads = 4;
  s.kvHeads = 2;
  s.headDim = 16;
  s.causal = true;
  s.scale = 0.25;
  AttentionShape longer = s;
  longer.batch = 1; // two (batch, kv head) pairs
  longer.seqQ = longer.seqK = 2 * kAttentionKeyBlock + 76;
  longer.headDim = 8;
  return {s, longer};
}

/// out, lse, dq, dk, dv of attention and attention_grad in T on fixed random
/// inputs.
template <typename T>
std::vector<std::vector<T>> runAttention(const AttentionShape &s) {
  const int64_t qn = s.batch * s.seqQ * s.heads * s.headDim;
  const int64_t kn = s.batch * s.seqK * s.kvHeads * s.headDim;
  // The f64 run reads the f32 inputs, so both compute the same function.
  std::vector<T> q = convert<T>(convert<float>(randomVector(qn, 21)));
  std::vector<T> k = convert<T>(convert<float>(randomVector(kn, 22)));
  std::vector<T> v = convert<T>(convert<float>(randomVector(kn, 23)));
  std::vector<T> dout = convert<T>(convert<float>(randomVector(qn, 24)));
  std::vector<T> out(qn), lse(s.batch * s.heads * s.seqQ), dq(qn), dk(kn),
      dv(kn);
  attention(q.data(), k.data(), v.data(), out.data(), lse.data(), s);
  attentionGrad(dout.data(), q.data(), k.data(), v.data(), out.data(),
                lse.data(), dq.data(), dk.data(), dv.data(), s);
  return {out, lse, dq, dk, dv};
}

TEST(ParallelKernelsTest, AttentionMatchesTheFp64Oracle) {
  for (const AttentionShape &s : attentionShapes()) {
    std::vector<std::vector<float>> f = runAttention<float>(s);
    std::vector<std::vector<double>> d = runAttention<double>(s);
    const std::string at = " seq " + std::to_string(s.seqQ);
    expectAllNear(f[0], d[0], 2e-5, 2e-6, "attention out" + at);
    expectAllNear(f[1], d[1], 2e-5, 2e-6, "attention lse" + at);
    expectAllNear(f[2], d[2], 2e-5, 2e-6, "attention dq" + at);
    expectAllNear(f[3], d[3], 2e-5, 2e-6, "attention dk" + at);
    expectAllNear(f[4], d[4], 2e-5, 2e-6, "attention dv" + at);
  }
}

TEST(ParallelKernelsTest, AttentionIsBitwiseTheSameOnAnyThreadCount) {
  for (const AttentionShape &s : attentionShapes())
    expectSameOnAnyThreadCount(s.seqQ > kAttentionKeyBlock
                                   ? "attention, three key blocks"
                                   : "attention, one key block",
                               [&] { return runAttention<float>(s); });
}

TEST(ParallelKernelsTest, ActivationsAreBitwiseTheSameOnAnyThreadCount) {
  const int64_t n = 3 * 40000 + 5; // several chunks and a ragged tail
  std::vector<float> x = convert<float>(randomVector(n, 21, -6, 6));
  std::vector<float> up = convert<float>(randomVector(n, 22, -3, 3));
  std::vector<float> dy = convert<float>(randomVector(n, 23, -2, 2));
  expectSameOnAnyThreadCount("gelu, silu, swiglu and their gradients", [&] {
    std::vector<std::vector<float>> out(9, std::vector<float>(n));
    gelu(x.data(), out[0].data(), n, /*tanhApprox=*/false);
    gelu(x.data(), out[1].data(), n, /*tanhApprox=*/true);
    geluGrad(dy.data(), x.data(), out[2].data(), n, false);
    geluGrad(dy.data(), x.data(), out[3].data(), n, true);
    silu(x.data(), out[4].data(), n);
    siluGrad(dy.data(), x.data(), out[5].data(), n);
    swiglu(x.data(), up.data(), out[6].data(), n);
    swigluGrad(dy.data(), x.data(), up.data(), out[7].data(), out[8].data(), n);
    return out;
  });
}

// The main job's GEMM shapes (768 rows of 128 / 512 features, transposed
// operands of the backward, and the weight gradients, whose k = 768 rows
// is where a BLAS could split the reduction by thread).
TEST(ParallelKernelsTest, MatmulsAreBitwiseTheSameOnAnyThreadCount) {
  const int64_t rows = 768, h = 128, f = 512;
  std::vector<float> x = convert<float>(randomVector(rows * f, 41));
  std::vector<float> w =
      convert<float>(randomVector(rows * f, 42)); // [768, 512] at most
  std::vector<float> dy = convert<float>(randomVector(rows * f, 43));
  // oneDNN's sgemm is bitwise the same on any thread count. OpenBLAS's is on
  // its SkylakeX kernels but not on others (Haswell, or a CPU it reads as
  // Prescott): its thread partition changes which rows take its tail kernels,
  // which round differently (docs/cpu-backend.md).
  const char *gemmLib = std::getenv("AUTOSHARD_CPU_GEMM");
  const double rtol =
      gemmLib && std::string_view(gemmLib) == "openblas" ? 1e-5 : 0.0;
  expectSameOnAnyThreadCount(
      "matmul, matmul_wgrad",
      [&] {
        std::vector<std::vector<float>> out;
        for (auto [k, n, tl, tr] : {std::tuple{h, h, false, false},
                                    {h, f, false, false},
                                    {f, h, false, true},
                                    {h, f, true, false}}) {
          MatmulShape s;
          s.m = rows, s.k = k, s.n = n, s.transposeLhs = tl,
          s.transposeRhs = tr;
          if (tl) // lhs [k, m]: a [128, 768] operand, as attention's dK
            s.m = h, s.k = rows, s.n = n;
          out.emplace_back(s.m * s.n);
          matmul(tl ? dy.data() : x.data(), w.data(), out.back().data(), s);
        }
        for (auto [k, n] : {std::pair{h, h}, {h, f}, {f, h}}) {
          out.emplace_back(k * n);
          matmulWgrad(x.data(), dy.data(), out.back().data(), rows, k, n);
        }
        // The fused gelu epilogues: 768 x 512 in 12 panels of 64 rows.
        MatmulShape up;
        up.m = rows, up.k = h, up.n = f;
        out.emplace_back(rows * f);
        out.emplace_back(rows * f);
        matmulGelu(x.data(), w.data(), out[out.size() - 2].data(),
                   out.back().data(), up, false);
        MatmulShape back = up;
        back.transposeRhs = true;
        out.emplace_back(rows * f);
        matmulGeluGrad(dy.data(), w.data(), x.data(), out.back().data(), back,
                       false);
        return out;
      },
      rtol);
}

TEST(ParallelKernelsTest, ReductionsAreBitwiseTheSameOnAnyThreadCount) {
  const int64_t rows = 600, hidden = 96, n = rows * hidden;
  std::vector<float> x = convert<float>(randomVector(n, 31));
  std::vector<float> dy = convert<float>(randomVector(n, 32));
  std::vector<float> gamma = convert<float>(randomVector(hidden, 33, 0.5, 1.5));
  std::vector<float> beta = convert<float>(randomVector(hidden, 34));
  std::vector<int32_t> labels = randomIds<int32_t>(rows, 90, 35);
  std::vector<float> v0 = convert<float>(randomVector(n, 36, 0.0, 1e-3));
  expectSameOnAnyThreadCount("norms, loss, sum_squares, adamw", [&] {
    std::vector<float> y(n), dx(n), dg(hidden), db(hidden), ry(n), rdx(n),
        rdg(hidden), dl(n), p(n), m(n), v(n);
    layerNorm(x.data(), gamma.data(), beta.data(), y.data(), rows, hidden,
              1e-5);
    layerNormGrad(dy.data(), x.data(), gamma.data(), dx.data(), dg.data(),
                  db.data(), rows, hidden, 1e-5);
    rmsNorm(x.data(), gamma.data(), ry.data(), rows, hidden, 1e-6);
    rmsNormGrad(dy.data(), x.data(), gamma.data(), rdx.data(), rdg.data(), rows,
                hidden, 1e-6);
    CrossEntropyShape ce{rows, hidden, 90};
    const float loss =
        static_cast<float>(crossEntropy(x.data(), labels.data(), ce));
    crossEntropyGrad(1.0, x.data(), labels.data(), dl.data(), ce);
    const float sq = static_cast<float>(sumSquares(x.data(), n));
    AdamWParams hp;
    hp.lr = 1e-3;
    hp.step = 3;
    adamw(x.data(), dy.data(), y.data(), v0.data(), p.data(), m.data(),
          v.data(), n, hp);
    return std::vector<std::vector<float>>{y,   dx, dg,         db, ry, rdx,
                                           rdg, dl, {loss, sq}, p,  m,  v};
  });
}

TEST(ParallelKernelsTest, ThreadPolicyDividesTheCores) {
  const int cores = usableCores();
  EXPECT_GE(cores, 1);
  ThreadPolicy one = chooseThreadPolicy(0, 1);
  EXPECT_EQ(one.threads, cores);
  EXPECT_FALSE(one.requested);
  ThreadPolicy many = chooseThreadPolicy(0, 4 * cores);
  EXPECT_EQ(many.threads, 1); // never 0
  EXPECT_NE(describe(many).find("on this node"), std::string::npos);
  const std::string over = "oversubscribed: " + std::to_string(4 * cores) +
                           " threads on " + std::to_string(cores);
  EXPECT_NE(describe(many).find(over), std::string::npos) << describe(many);
  EXPECT_EQ(describe(one).find("oversubscribed"), std::string::npos);
  ThreadPolicy forced = chooseThreadPolicy(3, 2);
  EXPECT_EQ(forced.threads, 3);
  EXPECT_TRUE(forced.requested);
  EXPECT_NE(describe(forced).find("--threads 3"), std::string::npos);
  EXPECT_THROW(chooseThreadPolicy(-1, 1), std::invalid_argument);
  EXPECT_THROW(chooseThreadPolicy(0, 0), std::invalid_argument);
  EXPECT_THROW(setKernelThreads(0), std::invalid_argument);
  ThreadCount scope(2);
  EXPECT_EQ(kernelThreads(), 2);
}

} // namespace
