//===- CudaKernelTest.cpp - Every CUDA kernel against the CPU backend -----===//
//
// f32: relative 1e-4 / absolute 1e-5 unless noted (reductions in a different
// order). bf16 (the GPU computes on bf16 tensors in fp32 and rounds each
// result once; the CPU runs f32 on the same bf16-rounded inputs): relative
// and absolute 2e-2, i.e. a few bf16 ulps (2^-8 relative each).
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include "autoshard/runtime/Init.h"

#include <new>

using namespace autoshard::runtime;
using namespace autoshard::runtime::cuda::test;

namespace {

constexpr double kBf16Tol = 2e-2;

/// Runs `c` in f32 and (when `withBf16`) in bf16.
void both(OpCase c, bool withBf16 = true) {
  checkOp(c, false);
  if (!withBf16)
    return;
  c.rtol = std::max(c.rtol, kBf16Tol);
  c.atol = std::max(c.atol, kBf16Tol);
  checkOp(c, true);
}

OpCase unary(const std::string &op, std::vector<int64_t> shape, int inputs,
             int outputs) {
  OpCase c;
  c.op = op;
  for (int i = 0; i < inputs; ++i)
    c.args.push_back(f32(shape));
  for (int i = 0; i < outputs; ++i)
    c.results.push_back(f32(shape));
  return c;
}

class CudaKernels : public ::testing::Test {
protected:
  void SetUp() override { AUTOSHARD_REQUIRE_GPU(); }
};

TEST_F(CudaKernels, Activations) {
  for (bool approx : {false, true}) {
    OpCase g = unary("gelu", {3, 100}, 1, 1);
    g.attrs.set("tanh_approx", approx);
    both(g);
    OpCase gg = unary("gelu_grad", {3, 100}, 2, 1);
    gg.attrs.set("tanh_approx", approx);
    both(gg);
  }
  both(unary("silu", {1000}, 1, 1));
  both(unary("silu_grad", {1000}, 2, 1));
  both(unary("swiglu", {7, 33}, 2, 1));
  both(unary("swiglu_grad", {7, 33}, 3, 2));
}

TEST_F(CudaKernels, Elementwise) {
  for (const char *op : {"add", "sub", "mul"}) {
    OpCase c;
    c.op = op;
    c.args = {f32({4, 5, 6}), f32({5, 6})};
    c.results = {f32({4, 5, 6})};
    both(c);
    c.args[1] = f32({});
    c.keepF32 = {1};
    checkOp(c);
  }
  OpCase s = unary("scale", {10, 10}, 1, 1);
  s.attrs.set("factor", 0.37);
  both(s);
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{0, 1}, {2}, {1}, {0, 2}, {0, 1, 2}}) {
    OpCase r;
    r.op = "reduce_sum";
    r.attrs.set("dims", dims);
    r.args = {f32({6, 5, 7})};
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < 3; ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        kept.push_back(std::vector<int64_t>{6, 5, 7}[d]);
    r.results = {f32(kept)};
    // A full reduction's scalar has x's type (bf16 in bf16 mode).
    r.bf16Scalars = kept.empty() ? std::set<size_t>{1} : std::set<size_t>{};
    both(r);
    OpCase b;
    b.op = "broadcast";
    b.attrs.set("dims", dims);
    b.args = {f32(kept)};
    b.results = {f32({6, 5, 7})};
    b.bf16Scalars = kept.empty() ? std::set<size_t>{0} : std::set<size_t>{};
    both(b);
  }
  OpCase mb;
  mb.op = "microbatch";
  mb.attrs.set("index", int64_t(1));
  mb.attrs.set("count", int64_t(3));
  mb.args = {i32({6, 5})};
  mb.results = {i32({2, 5})};
  mb.gen[0] = ids<int32_t>(100);
  checkOp(mb);
  OpCase rs;
  rs.op = "reshape";
  rs.args = {f32({4, 6})};
  rs.results = {f32({2, 12})};
  both(rs);
  // cast (tfm-mixed-precision): f32 -> f32 and bf16 -> bf16 copies, then
  // f32 -> bf16 and bf16 -> f32 against the CPU's f32 copy of the same
  // (bf16-rounded where the GPU takes bf16) values.
  OpCase cs = unary("cast", {37, 5}, 1, 1);
  both(cs);
  cs.rtol = cs.atol = kBf16Tol;
  cs.keepF32 = {0};
  checkOp(cs, true);
  cs.keepF32 = {1};
  checkOp(cs, true);
}

TEST_F(CudaKernels, Matmul) {
  struct M {
    std::vector<int64_t> lhs, rhs, out;
    bool tl, tr;
  };
  for (const M &m :
       std::vector<M>{{{2, 3, 17, 33}, {33, 9}, {2, 3, 17, 9}, false, false},
                      {{5, 33}, {9, 33}, {5, 9}, false, true},
                      {{2, 33, 5}, {33, 9}, {2, 5, 9}, true, false},
                      {{2, 5, 33}, {2, 9, 33}, {2, 5, 9}, false, true},
                      {{3, 33, 5}, {3, 33, 9}, {3, 5, 9}, true, false}}) {
    OpCase c;
    c.op = "matmul";
    c.attrs.set("transpose_lhs", m.tl);
    c.attrs.set("transpose_rhs", m.tr);
    c.args = {f32(m.lhs), f32(m.rhs)};
    c.results = {f32(m.out)};
    both(c);
    // Fused epilogues (rt-fuse-epilogues): + a full addend, into a separate
    // result and in place; + a bias [n] on every row (beta = 1 GEMMs).
    OpCase add = c;
    add.args.push_back(f32(m.out));
    both(add);
    add.inPlace = {{0, 2}};
    both(add);
    OpCase bias = c;
    bias.attrs.set("epilogue", std::string("bias"));
    bias.args.push_back(f32({m.out.back()}));
    both(bias);
  }
  OpCase w;
  w.op = "matmul_wgrad";
  w.args = {f32({3, 7, 20}), f32({3, 7, 12})};
  w.results = {f32({20, 12})};
  both(w);
}

TEST_F(CudaKernels, Norms) {
  for (bool beta : {true, false}) {
    OpCase c;
    c.op = "layer_norm";
    c.attrs.set("epsilon", 1e-5);
    c.args = {f32({2, 9, 300}), f32({300})};
    if (beta)
      c.args.push_back(f32({300}));
    c.results = {f32({2, 9, 300})};
    both(c);
    OpCase g;
    g.op = "layer_norm_grad";
    g.attrs.set("epsilon", 1e-5);
    g.args = {f32({18, 300}), f32({18, 300}), f32({300})};
    g.results = {f32({18, 300}), f32({300}), f32({300})};
    g.atol = 1e-4;
    both(g);
  }
  OpCase r = unary("rms_norm", {18, 130}, 1, 1);
  r.attrs.set("epsilon", 1e-6);
  r.args.push_back(f32({130}));
  both(r);
  OpCase rg;
  rg.op = "rms_norm_grad";
  rg.attrs.set("epsilon", 1e-6);
  rg.args = {f32({18, 130}), f32({18, 130}), f32({130})};
  rg.results = {f32({18, 130}), f32({130})};
  rg.atol = 1e-4;
  both(rg);
}

TEST_F(CudaKernels, Embeddings) {
  for (DType idType : {DType::I32, DType::I64}) {
    OpCase e;
    e.op = "embedding";
    e.args = {tt(idType, {3, 8}), f32({50, 24})};
    e.results = {f32({3, 8, 24})};
    e.gen[0] = idType == DType::I32 ? ids<int32_t>(50) : ids<int64_t>(50);
    both(e);
    OpCase g;
    g.op = "embedding_grad";
    g.attrs.set("num_embeddings", int64_t(50));
    g.args = {tt(idType, {3, 8}), f32({3, 8, 24})};
    g.results = {f32({50, 24})};
    g.gen[0] = idType == DType::I32 ? ids<int32_t>(10) : ids<int64_t>(10);
    both(g);
  }
  OpCase p;
  p.op = "position_embedding";
  p.attrs.set("seq_len", int64_t(8));
  p.args = {f32({16, 24})};
  p.results = {f32({8, 24})};
  both(p);
  OpCase pg;
  pg.op = "position_embedding_grad";
  pg.attrs.set("num_positions", int64_t(16));
  pg.args = {f32({3, 8, 24})};
  pg.results = {f32({16, 24})};
  both(pg);
  for (int64_t shard : {0, 1, 3}) {
    OpCase v;
    v.op = "vocab_embedding";
    v.args = {i32({3, 8}), f32({16, 24}), i64({})};
    v.results = {f32({3, 8, 24})};
    v.gen[0] = ids<int32_t>(64);
    v.gen[2] = values<int64_t>({shard});
    both(v);
    OpCase vg;
    vg.op = "vocab_embedding_grad";
    vg.attrs.set("num_embeddings", int64_t(16));
    vg.args = {i32({3, 8}), f32({3, 8, 24}), i64({})};
    vg.results = {f32({16, 24})};
    vg.gen[0] = ids<int32_t>(64);
    vg.gen[2] = values<int64_t>({shard});
    both(vg);
  }
}

TEST_F(CudaKernels, RopeAndDropout) {
  for (const char *op : {"rope", "rope_grad"}) {
    OpCase c = unary(op, {2, 9, 3, 16}, 1, 1);
    c.attrs.set("theta", 10000.0);
    both(c);
  }
  for (const char *op : {"dropout", "dropout_grad"}) {
    OpCase c;
    c.op = op;
    c.attrs.set("rate", 0.3);
    c.attrs.set("site", int64_t(2));
    c.args = {f32({7, 33}), i64({}), i64({})};
    c.results = {f32({7, 33})};
    c.gen[1] = values<int64_t>({5});
    c.gen[2] = values<int64_t>({3});
    both(c);
  }
  OpCase l;
  l.op = "dropout_local";
  l.attrs.set("rate", 0.25);
  l.attrs.set("site", int64_t(1));
  l.attrs.set("global_shape", std::vector<int64_t>{4, 6, 10});
  l.attrs.set("shard_dims", std::vector<int64_t>{0, 2});
  l.args = {f32({2, 6, 5}), i64({}), i64({}), i64({}), i64({})};
  l.results = {f32({2, 6, 5})};
  l.gen[1] = values<int64_t>({9});
  l.gen[2] = values<int64_t>({1});
  l.gen[3] = values<int64_t>({1});
  l.gen[4] = values<int64_t>({1});
  both(l);
}

TEST_F(CudaKernels, Attention) {
  struct A {
    int64_t b, sq, sk, h, kv, d;
    bool causal;
  };
  for (const A &a : std::vector<A>{{2, 37, 37, 4, 4, 16, true},
                                   {1, 70, 70, 4, 2, 64, true},
                                   {2, 20, 45, 2, 1, 32, false},
                                   {1, 33, 33, 2, 2, 128, true}}) {
    double scale = 1.0 / std::sqrt(double(a.d));
    OpCase f;
    f.op = "attention";
    f.attrs.set("causal", a.causal);
    f.attrs.set("scale", scale);
    f.args = {f32({a.b, a.sq, a.h, a.d}), f32({a.b, a.sk, a.kv, a.d}),
              f32({a.b, a.sk, a.kv, a.d})};
    f.results = {f32({a.b, a.sq, a.h, a.d}), f32({a.b, a.h, a.sq})};
    f.keepF32 = {4};
    f.atol = 1e-5;
    both(f);
    // The backward takes a consistent (out, lse): compute them on the CPU.
    OpCase g;
    g.op = "attention_grad";
    g.attrs = f.attrs;
    g.args = {f32({a.b, a.sq, a.h, a.d}),
              f.args[0],
              f.args[1],
              f.args[2],
              f32({a.b, a.sq, a.h, a.d}),
              f32({a.b, a.h, a.sq})};
    g.results = {f.args[0], f.args[1], f.args[2]};
    g.keepF32 = {5};
    g.atol = 1e-4;
    g.rtol = 1e-3;
    // out and lse from the CPU forward on the same inputs.
    auto fwd = std::make_shared<std::vector<std::vector<unsigned char>>>();
    {
      CpuBackend cpu;
      KernelSignature sig;
      sig.op = "attention";
      sig.attrs = &f.attrs;
      sig.args = f.args;
      sig.results = f.results;
      BoundKernel k = cpu.bind(sig);
      std::vector<std::vector<unsigned char>> buf(5);
      std::mt19937 rng(1234);
      std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
      // Same generator order as checkOp's: args 0..3 of g are random.
      std::vector<std::vector<float>> in(4);
      for (size_t i = 0; i < 4; ++i) {
        in[i].resize(g.args[i].numel());
        for (float &x : in[i])
          x = uni(rng);
      }
      for (size_t i = 0; i < 3; ++i)
        buf[i].assign(reinterpret_cast<unsigned char *>(in[i + 1].data()),
                      reinterpret_cast<unsigned char *>(in[i + 1].data()) +
                          in[i + 1].size() * 4);
      buf[3].assign(f.results[0].bytes(), 0);
      buf[4].assign(f.results[1].bytes(), 0);
      std::vector<void *> ptrs;
      for (auto &b : buf)
        ptrs.push_back(b.data());
      k(ptrs.data());
      fwd->push_back(buf[3]);
      fwd->push_back(buf[4]);
    }
    g.gen[4] = [fwd](std::vector<unsigned char> &o) { o = (*fwd)[0]; };
    g.gen[5] = [fwd](std::vector<unsigned char> &o) { o = (*fwd)[1]; };
    checkOp(g); // f32 only: bf16 inputs would not match the f32 (out, lse)
  }
}

// Context parallelism (ring attention, TfmRingAttention.cpp): the blocks of
// a ring of 2 and 3 chunks that see keys (a block above the diagonal has lse
// -inf, which no tolerance compares; the CPU tests cover it), their merge,
// and rope on a sequence chunk.
TEST_F(CudaKernels, RingAttention) {
  struct B {
    int64_t b, len, h, kv, d, chunk, step, chunks;
    bool causal;
  };
  for (const B &a : std::vector<B>{{2, 37, 4, 2, 16, 1, 0, 2, true},
                                   {1, 40, 4, 4, 64, 1, 1, 2, true},
                                   {2, 20, 2, 1, 32, 2, 1, 3, true},
                                   {1, 33, 2, 2, 32, 0, 2, 3, false}}) {
    AttrMap attrs;
    attrs.set("causal", a.causal);
    attrs.set("scale", 1.0 / std::sqrt(double(a.d)));
    attrs.set("kv_step", a.step);
    attrs.set("num_chunks", a.chunks);
    OpCase f;
    f.op = "attention_block";
    f.attrs = attrs;
    f.args = {f32({a.b, a.len, a.h, a.d}), f32({a.b, a.len, a.kv, a.d}),
              f32({a.b, a.len, a.kv, a.d}), i64({})};
    f.results = {f32({a.b, a.len, a.h, a.d}), f32({a.b, a.h, a.len})};
    f.gen[3] = values<int64_t>({a.chunk});
    f.keepF32 = {5};
    f.atol = 1e-5;
    both(f);
    OpCase g;
    g.op = "attention_block_grad";
    g.attrs = attrs;
    g.args = {f32({a.b, a.len, a.h, a.d}),
              f.args[0],
              f.args[1],
              f.args[2],
              f32({a.b, a.len, a.h, a.d}),
              f32({a.b, a.h, a.len}),
              i64({})};
    g.results = {f.args[0], f.args[1], f.args[2]};
    g.gen[5] = uniform(1, 3); // an lse above the block's scores
    g.gen[6] = values<int64_t>({a.chunk});
    g.keepF32 = {5};
    g.atol = 1e-4;
    g.rtol = 1e-3;
    checkOp(g);
  }
  OpCase m;
  m.op = "attention_merge";
  m.args = {f32({2, 9, 4, 16}), f32({2, 4, 9}), f32({2, 9, 4, 16}),
            f32({2, 4, 9})};
  m.results = {m.args[0], m.args[1]};
  m.keepF32 = {1, 3, 5};
  both(m);
  for (const char *op : {"rope_local", "rope_local_grad"})
    for (int64_t shard : {0, 3}) {
      OpCase c;
      c.op = op;
      c.attrs.set("theta", 10000.0);
      c.attrs.set("seq_len", int64_t(36));
      c.args = {f32({2, 9, 3, 16}), i64({})};
      c.results = {f32({2, 9, 3, 16})};
      c.gen[1] = values<int64_t>({shard});
      both(c);
    }
}

TEST_F(CudaKernels, CrossEntropy) {
  for (int64_t vocab : {int64_t(100), int64_t(77)}) {
    OpCase c;
    c.op = "cross_entropy";
    c.attrs.set("vocab_size", vocab);
    c.args = {f32({3, 7, 100}), i32({3, 7})};
    c.results = {f32({})};
    c.gen[0] = uniform(-4, 4);
    c.gen[1] = ids<int32_t>(vocab);
    both(c);
    OpCase g;
    g.op = "cross_entropy_grad";
    g.attrs.set("vocab_size", vocab);
    g.args = {f32({}), f32({3, 7, 100}), i64({3, 7})};
    g.results = {f32({3, 7, 100})};
    g.gen[0] = values<float>({1.5f});
    g.gen[1] = uniform(-4, 4);
    g.gen[2] = ids<int64_t>(vocab);
    both(g);
  }
}

TEST_F(CudaKernels, VocabParallelLoss) {
  // A global vocabulary of 90 split in shards of 32: shard 2 is part padding.
  for (int64_t shard : {0, 2}) {
    OpCase m;
    m.op = "vocab_ce_max";
    m.attrs.set("vocab_size", int64_t(90));
    m.args = {f32({4, 32}), i64({})};
    m.results = {f32({4})};
    m.gen[1] = values<int64_t>({shard});
    m.keepF32 = {2};
    both(m);
    OpCase s;
    s.op = "vocab_ce_stats";
    s.attrs.set("vocab_size", int64_t(90));
    s.args = {f32({4, 32}), i32({4}), f32({4}), i64({})};
    s.results = {f32({4, 2})};
    s.gen[1] = values<int32_t>({3, 70, 88, 40});
    s.gen[2] = values<float>({1, 1, 1, 1});
    s.gen[3] = values<int64_t>({shard});
    s.keepF32 = {2, 4};
    both(s);
    OpCase g;
    g.op = "vocab_ce_grad";
    g.attrs.set("vocab_size", int64_t(90));
    g.attrs.set("num_tokens", int64_t(8));
    g.args = {f32({}), f32({4, 32}), i32({4}), f32({4}), f32({4, 2}), i64({})};
    g.results = {f32({4, 32})};
    g.gen[0] = values<float>({1});
    g.gen[2] = values<int32_t>({3, 70, 88, 40});
    g.gen[3] = values<float>({1, 1, 1, 1});
    g.gen[4] = values<float>({20, 0.5f, 25, -0.5f, 30, 0.1f, 28, 0});
    g.gen[5] = values<int64_t>({shard});
    g.keepF32 = {3, 4};
    both(g);
  }
  OpCase l;
  l.op = "vocab_ce_loss";
  l.attrs.set("num_tokens", int64_t(8));
  l.args = {f32({4, 2}), f32({4})};
  l.results = {f32({})};
  l.gen[0] = values<float>({20, 0.5f, 25, -0.5f, 30, 0.1f, 28, 0});
  checkOp(l);
}

TEST_F(CudaKernels, Optimizer) {
  OpCase s;
  s.op = "sum_squares";
  s.args = {f32({100}), f32({7, 9}), f32({})};
  s.results = {f32({})};
  s.rtol = 1e-5;
  checkOp(s);
  OpCase c;
  c.op = "clip_coef";
  c.attrs.set("max_norm", 1.0);
  c.args = {f32({})};
  c.results = {f32({}), f32({})};
  c.gen[0] = values<float>({6.25f});
  checkOp(c);
  for (int64_t step : {1, 10}) {
    OpCase a;
    a.op = "adamw";
    a.attrs.set("beta1", 0.9);
    a.attrs.set("beta2", 0.99);
    a.attrs.set("epsilon", 1e-8);
    a.attrs.set("weight_decay", 0.1);
    a.args = {f32({33, 7}), f32({33, 7}), f32({33, 7}), f32({33, 7}),
              f32({}),      i64({}),      f32({})};
    a.results = {f32({33, 7}), f32({33, 7}), f32({33, 7})};
    a.gen[3] = uniform(0, 0.01f);
    a.gen[4] = values<float>({1e-3f});
    a.gen[5] = values<int64_t>({step});
    a.gen[6] = values<float>({0.5f});
    both(a);
  }
}

TEST_F(CudaKernels, Moe) {
  const int64_t B = 2, S = 9, E = 4, K = 2, C = 4, H = 12;
  for (bool renorm : {false, true}) {
    OpCase r;
    r.op = "moe_router";
    r.attrs.set("top_k", K);
    r.attrs.set("renormalize", renorm);
    r.args = {f32({B, S, E})};
    r.results = {f32({B, S, K}), i64({B, S, K})};
    both(r);
    OpCase rg;
    rg.op = "moe_router_grad";
    rg.attrs.set("renormalize", renorm);
    rg.args = {f32({B, S, K}), f32({B, S, E}), i64({B, S, K})};
    rg.results = {f32({B, S, E})};
    rg.gen[2] = ids<int64_t>(E);
    both(rg);
  }
  OpCase a;
  a.op = "moe_aux_loss";
  a.args = {f32({B, S, E}), i32({B, S, K})};
  a.results = {f32({})};
  a.gen[1] = ids<int32_t>(E);
  both(a);
  OpCase ag;
  ag.op = "moe_aux_loss_grad";
  ag.args = {f32({}), f32({B, S, E}), i32({B, S, K})};
  ag.results = {f32({B, S, E})};
  ag.gen[0] = values<float>({0.7f});
  ag.gen[2] = ids<int32_t>(E);
  both(ag);
  OpCase d;
  d.op = "moe_dispatch";
  d.attrs.set("num_experts", E);
  d.attrs.set("capacity", C);
  d.args = {f32({B, S, H}), i64({B, S, K})};
  d.results = {f32({E, B, C, H})};
  d.gen[1] = ids<int64_t>(E);
  both(d);
  OpCase dg;
  dg.op = "moe_dispatch_grad";
  dg.attrs.set("capacity", C);
  dg.args = {f32({E, B, C, H}), i64({B, S, K})};
  dg.results = {f32({B, S, H})};
  dg.gen[1] = ids<int64_t>(E);
  both(dg);
  OpCase c;
  c.op = "moe_combine";
  c.args = {f32({E, B, C, H}), f32({B, S, K}), i64({B, S, K})};
  c.results = {f32({B, S, H})};
  c.gen[2] = ids<int64_t>(E);
  both(c);
  OpCase cg;
  cg.op = "moe_combine_grad";
  cg.args = {f32({B, S, H}), f32({E, B, C, H}), f32({B, S, K}), i64({B, S, K})};
  cg.results = {f32({E, B, C, H}), f32({B, S, K})};
  cg.gen[3] = ids<int64_t>(E);
  both(cg);
}

TEST_F(CudaKernels, PackUnpack) {
  OpCase p;
  p.op = "dist.pack";
  p.attrs.set("num_groups", int64_t(2));
  p.attrs.set("scatter_dims", std::vector<int64_t>{0, 1});
  p.args = {f32({4, 3}), f32({5, 6})};
  p.results = {f32({42})};
  both(p);
  OpCase u;
  u.op = "dist.unpack";
  u.args = {f32({42})};
  u.results = {f32({4, 3}), f32({5, 6})};
  both(u);
}

/// Binds `op` on `gpu` (its own signature; no CPU oracle).
BoundKernel bindOn(Backend &gpu, const std::string &op, const AttrMap &attrs,
                   std::vector<TensorType> args,
                   std::vector<TensorType> results) {
  static const Mesh mesh;
  KernelSignature sig;
  sig.op = op;
  sig.attrs = &attrs;
  sig.place = "test '" + op + "'";
  sig.mesh = &mesh;
  sig.args = std::move(args);
  sig.results = std::move(results);
  return gpu.bind(sig);
}

/// Past 2^31 elements (the benchmark's f32 logits, 8 x 2048 x 50304, are
/// 824M elements and 3.3 GB): the bf16 -> f32 cast of the logits, the loss
/// and its gradient (in place, as the kernel allows) on tokens x classes >
/// 2^31 with closed-form answers (all-zero logits: loss = log(vocab), p =
/// 1/vocab), so a 32-bit index anywhere shows. ~13 GB of device memory.
void checkLargeCrossEntropy(Backend &gpu, int64_t tokens, int64_t classes,
                            int64_t vocab) {
  const int64_t n = tokens * classes;
  const TensorType logits16 = tt(DType::BF16, {tokens, classes}),
                   logits = f32({tokens, classes}), labelsT = i32({tokens});
  AttrMap none, ce;
  ce.set("vocab_size", vocab);
  void *x16 = gpu.allocate(logits16.bytes());
  void *x = gpu.allocate(logits.bytes());
  void *labels = gpu.allocate(labelsT.bytes());
  void *loss = gpu.allocate(4);
  void *dloss = gpu.allocate(4);
  std::vector<int32_t> hostLabels(tokens);
  for (int64_t t = 0; t < tokens; ++t)
    hostLabels[t] = static_cast<int32_t>((t * 7919) % vocab);
  gpu.copyToDevice(labels, hostLabels.data(), labelsT.bytes());
  const float one = 1.0f;
  gpu.copyToDevice(dloss, &one, 4);
  gpu.fill(x16, 0, logits16.bytes());
  gpu.fill(x, 0xFF, logits.bytes()); // NaN unless the cast writes it all
  void *castOps[] = {x16, x};
  bindOn(gpu, "cast", none, {logits16}, {logits})(castOps);
  EXPECT_FALSE(gpu.hasNaN(x, DType::F32, n)) << "cast left elements unwritten";
  void *ceOps[] = {x, labels, loss};
  bindOn(gpu, "cross_entropy", ce, {logits, labelsT}, {f32({})})(ceOps);
  float got = 0;
  gpu.copyToHost(&got, loss, 4);
  EXPECT_NEAR(got, std::log(double(vocab)), 1e-5 * std::log(double(vocab)));
  void *gradOps[] = {dloss, x, labels, x}; // dlogits in place
  bindOn(gpu, "cross_entropy_grad", ce, {f32({}), logits, labelsT},
         {logits})(gradOps);
  EXPECT_FALSE(gpu.hasNaN(x, DType::F32, n));
  // The first row, the rows holding element 2^29 (byte 2^31), 2^30 (byte
  // 2^32) and 2^31, and the last row.
  std::vector<float> row(classes);
  for (int64_t e : {int64_t(0), int64_t(1) << 29, int64_t(1) << 30,
                    int64_t(1) << 31, n - 1}) {
    const int64_t t = std::min(e / classes, tokens - 1);
    gpu.copyToHost(row.data(), static_cast<char *>(x) + t * classes * 4,
                   classes * 4);
    const double perToken = 1.0 / double(tokens), p = 1.0 / double(vocab);
    for (int64_t c = 0; c < classes; ++c) {
      double want =
          c >= vocab ? 0.0 : perToken * (c == hostLabels[t] ? p - 1.0 : p);
      if (!(std::fabs(row[c] - want) <= 1e-4 * std::fabs(want) + 1e-12)) {
        ADD_FAILURE() << "cross_entropy_grad row " << t << " class " << c
                      << ": gpu " << row[c] << ", want " << want;
        break;
      }
    }
  }
  gpu.deallocate(x16, logits16.bytes());
  gpu.deallocate(x, logits.bytes());
  gpu.deallocate(labels, labelsT.bytes());
  gpu.deallocate(loss, 4);
  gpu.deallocate(dloss, 4);
}

TEST_F(CudaKernels, CrossEntropyPast32BitIndices) {
  cuda::CudaBackend gpu;
  // 42800 x 50304 = 2.153e9 elements (> 2^31), 8.6 GB in f32.
  const int64_t bytes = int64_t(42800) * 50304 * 6 + (int64_t(1) << 30);
  try {
    gpu.deallocate(gpu.allocate(bytes), bytes);
  } catch (const std::bad_alloc &) {
    GTEST_SKIP() << "needs " << (bytes >> 30) << " GiB of device memory";
  }
  checkLargeCrossEntropy(gpu, 42800, 50304, 50257);
}

TEST_F(CudaKernels, InitStateMatchesCpu) {
  StateSpec spec;
  spec.name = "wte";
  spec.type = f32({3, 40});
  spec.globalShape = {6, 80};
  spec.logicalShape = {5, 70};
  spec.init = InitKind::Normal;
  spec.initStd = 0.02;
  for (InitKind kind : {InitKind::Normal, InitKind::Ones, InitKind::Zeros}) {
    spec.init = kind;
    std::vector<int64_t> offset = {3, 40};
    std::vector<float> want(spec.type.numel());
    CpuBackend().initState(want.data(), spec, 1337, offset);
    cuda::CudaBackend gpu;
    void *d = gpu.allocate(spec.type.bytes());
    gpu.initState(d, spec, 1337, offset);
    std::vector<float> got(want.size());
    gpu.copyToHost(got.data(), d, spec.type.bytes());
    gpu.deallocate(d, spec.type.bytes());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_FLOAT_EQ(got[i], want[i]) << "element " << i;
  }
}

TEST(CudaBackendTable, BindsEveryOpTheCpuBackendBinds) {
  // Needs no GPU: only the kernel table.
  std::vector<std::string> missing =
      cuda::CudaBackend::kernelTable().missingOps();
  std::vector<std::string> cpuMissing = CpuBackend::kernelTable().missingOps();
  for (const std::string &op : missing)
    EXPECT_NE(std::find(cpuMissing.begin(), cpuMissing.end(), op),
              cpuMissing.end())
        << "the cuda backend has no kernel for '" << op << "'";
}

} // namespace
