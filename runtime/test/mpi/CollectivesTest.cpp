//===- CollectivesTest.cpp - dist.* kernels over MPI against naive values -===//
//
// Run under mpiexec with 2, 4 or 8 ranks (CTest does). For every mesh with
// that many devices (1-D, 2-D 2x2 / 2x4, 3-D 2x2x2) and every ordered,
// non-empty subset of its axes, each collective kernel of the CPU backend
// runs through its binder on the CommContext's communicator, and each rank
// compares its result with values it computes itself from every rank's
// (deterministic) input: gathers, scatters and all-to-alls on every dim
// (leading and non-leading), reductions sum and max, broadcast roots,
// ppermute rings, send/recv, the async start/wait forms, shard_slice and
// axis_index. Also the expert-parallel token path (moe_dispatch on each
// rank's sequences, all-to-all to the experts' ranks and back, moe_combine)
// against the 1-rank kernels on the whole batch.
//
//===----------------------------------------------------------------------===//

#include "MpiTestMain.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/mpi/MpiWorld.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

using namespace autoshard::runtime;

namespace {

CommWorld *gWorld = nullptr;

using Axes = std::vector<std::string>;

/// Every ordered, non-empty subset of `axes`.
std::vector<Axes> orderedSubsets(const Axes &axes) {
  std::vector<Axes> out;
  size_t n = axes.size();
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    Axes pick;
    for (size_t i = 0; i < n; ++i)
      if (mask & (1u << i))
        pick.push_back(axes[i]);
    std::sort(pick.begin(), pick.end());
    do
      out.push_back(pick);
    while (std::next_permutation(pick.begin(), pick.end()));
  }
  return out;
}

/// Naive group arithmetic, independent of Mesh's: coordinates by repeated
/// division, members by scanning every rank.
struct NaiveMesh {
  Axes names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> coords(int64_t r) const {
    std::vector<int64_t> c(sizes.size());
    for (size_t i = sizes.size(); i-- > 0; r /= sizes[i])
      c[i] = r % sizes[i];
    return c;
  }
  size_t axis(const std::string &a) const {
    return std::find(names.begin(), names.end(), a) - names.begin();
  }
  /// World ranks of my group over `axes`, in group order.
  std::vector<int64_t> members(int64_t me, const Axes &axes) const {
    int64_t world = 1;
    for (int64_t s : sizes)
      world *= s;
    std::vector<std::pair<int64_t, int64_t>> idx; // (group index, rank)
    std::vector<int64_t> mine = coords(me);
    for (int64_t r = 0; r < world; ++r) {
      std::vector<int64_t> c = coords(r);
      bool same = true;
      for (size_t i = 0; i < sizes.size(); ++i)
        if (std::find(axes.begin(), axes.end(), names[i]) == axes.end())
          same &= c[i] == mine[i];
      if (!same)
        continue;
      int64_t g = 0;
      for (const std::string &a : axes)
        g = g * sizes[axis(a)] + c[axis(a)];
      idx.push_back({g, r});
    }
    std::sort(idx.begin(), idx.end());
    std::vector<int64_t> out;
    for (auto &p : idx)
      out.push_back(p.second);
    return out;
  }
};

/// Input of rank `r`: element i = r * 1000 + i (exact in float).
std::vector<float> input(int64_t r, int64_t n) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(r * 1000 + i);
  return x;
}

int64_t numel(const std::vector<int64_t> &s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

/// Row-major strides.
std::vector<int64_t> strides(const std::vector<int64_t> &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

/// Calls fn(index vector, linear index) for every element of shape `s`.
void forEach(const std::vector<int64_t> &s,
             const std::function<void(std::vector<int64_t> &, int64_t)> &fn) {
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t lin = 0; lin < numel(s); ++lin) {
    fn(idx, lin);
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d])
        break;
      idx[d] = 0;
    }
  }
}

int64_t linear(const std::vector<int64_t> &idx, const std::vector<int64_t> &s) {
  std::vector<int64_t> st = strides(s);
  int64_t l = 0;
  for (size_t d = 0; d < s.size(); ++d)
    l += idx[d] * st[d];
  return l;
}

class Fixture {
public:
  Fixture(const Axes &names, const std::vector<int64_t> &sizes)
      : naive{names, sizes} {
    artifact.source = "collectives-test";
    artifact.mesh.axes = names;
    artifact.mesh.sizes = sizes;
    artifact.worldSize = artifact.mesh.numDevices();
    Function &fn = artifact.functions.emplace_back();
    fn.name = "f";
    for (const Axes &axes : orderedSubsets(names)) {
      Instruction &inst = fn.code.emplace_back();
      inst.op = "dist.all_reduce";
      inst.attrs.set("axes", axes);
    }
    comm = std::make_unique<CommContext>(artifact, *gWorld);
    me = gWorld->rank();
  }

  /// Binds `op` with `attrs` on f32 operands and runs it.
  void run(const std::string &op, AttrMap attrs,
           const std::vector<std::vector<int64_t>> &argShapes,
           const std::vector<std::vector<int64_t>> &resultShapes,
           const std::vector<void *> &ptrs, DType dtype = DType::F32) {
    using Typed = std::vector<std::pair<DType, std::vector<int64_t>>>;
    Typed args, results;
    for (auto &s : argShapes)
      args.push_back({dtype, s});
    for (auto &s : resultShapes)
      results.push_back({dtype, s});
    runTyped(op, std::move(attrs), args, results, ptrs);
  }
  /// The same with an element type per operand and result.
  void
  runTyped(const std::string &op, AttrMap attrs,
           const std::vector<std::pair<DType, std::vector<int64_t>>> &args,
           const std::vector<std::pair<DType, std::vector<int64_t>>> &results,
           const std::vector<void *> &ptrs) {
    KernelSignature sig;
    sig.op = op;
    attrs.context = op;
    sig.attrs = &attrs;
    for (auto &[dtype, s] : args)
      sig.args.push_back({dtype, s});
    for (auto &[dtype, s] : results)
      sig.results.push_back({dtype, s});
    sig.place = op;
    sig.comm = comm.get();
    sig.mesh = &artifact.mesh;
    sig.rank = me;
    sig.function = "f";
    BoundKernel k = backend.bind(sig);
    k(ptrs.data());
  }

  Artifact artifact;
  NaiveMesh naive;
  std::unique_ptr<CommContext> comm;
  CpuBackend backend;
  int64_t me = 0;
};

AttrMap attrsOf(const Axes &axes,
                std::initializer_list<std::pair<std::string, AttrValue>> kv) {
  AttrMap m;
  m.set("axes", axes);
  for (auto &[k, v] : kv)
    m.set(k, v);
  return m;
}

std::string name(const Axes &axes) {
  std::string s;
  for (auto &a : axes)
    s += (s.empty() ? "" : ",") + a;
  return "[" + s + "]";
}

/// Every mesh with as many devices as the job.
std::vector<std::pair<Axes, std::vector<int64_t>>> meshes() {
  int64_t n = gWorld->size();
  std::vector<std::pair<Axes, std::vector<int64_t>>> all = {{{"a"}, {n}}};
  if (n == 4)
    all.push_back({{"a", "b"}, {2, 2}});
  if (n == 8) {
    all.push_back({{"a", "b"}, {2, 4}});
    all.push_back({{"a", "b", "c"}, {2, 2, 2}});
  }
  return all;
}

const std::vector<int64_t> kShape = {2, 3, 2};

TEST(Collectives, AllReduceSumMaxSyncAsync) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (const char *red : {"sum", "max"})
        for (bool async : {false, true}) {
          int64_t n = numel(kShape);
          std::vector<float> x = input(f.me, n), y(n, -1);
          auto attrs = attrsOf(axes, {{"reduction", std::string(red)}});
          if (async) {
            attrs.set("handle", int64_t(7));
            f.run("dist.all_reduce_start", attrs, {kShape}, {kShape},
                  {x.data(), y.data()});
            AttrMap w;
            w.set("handle", int64_t(7));
            f.run("dist.wait", w, {kShape, kShape}, {kShape},
                  {x.data(), y.data(), y.data()});
          } else {
            f.run("dist.all_reduce", attrs, {kShape}, {kShape},
                  {x.data(), y.data()});
          }
          std::vector<float> want(n, std::string(red) == "sum" ? 0 : -1e30f);
          for (int64_t r : f.naive.members(f.me, axes)) {
            std::vector<float> xr = input(r, n);
            for (int64_t i = 0; i < n; ++i)
              want[i] = std::string(red) == "sum" ? want[i] + xr[i]
                                                  : std::max(want[i], xr[i]);
          }
          EXPECT_EQ(y, want) << name(axes) << " " << red << " async " << async;
        }
  }
}

TEST(Collectives, AllReduceInPlaceI64) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    Axes axes = names;
    std::vector<int64_t> x = {f.me, 2 * f.me + 1};
    f.run("dist.all_reduce", attrsOf(axes, {{"reduction", std::string("sum")}}),
          {{2}}, {{2}}, {x.data(), x.data()}, DType::I64);
    int64_t w = gWorld->size();
    EXPECT_EQ(x, (std::vector<int64_t>{w * (w - 1) / 2, w * w}));
  }
}

TEST(Collectives, AllGatherEveryDim) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (int64_t d = 0; d < 3; ++d)
        for (bool async : {false, true}) {
          std::vector<int64_t> members = f.naive.members(f.me, axes);
          int64_t g = members.size();
          std::vector<int64_t> ys = kShape;
          ys[d] *= g;
          std::vector<float> x = input(f.me, numel(kShape)), y(numel(ys), -1);
          auto attrs = attrsOf(axes, {{"gather_dim", d}});
          if (async) {
            attrs.set("handle", int64_t(1));
            f.run("dist.all_gather_start", attrs, {kShape}, {ys},
                  {x.data(), y.data()});
            AttrMap w;
            w.set("handle", int64_t(1));
            f.run("dist.wait", w, {kShape, ys}, {ys},
                  {x.data(), y.data(), y.data()});
          } else {
            f.run("dist.all_gather", attrs, {kShape}, {ys},
                  {x.data(), y.data()});
          }
          std::vector<float> want(numel(ys));
          forEach(ys, [&](std::vector<int64_t> &idx, int64_t lin) {
            int64_t j = idx[d] / kShape[d];
            std::vector<int64_t> src = idx;
            src[d] %= kShape[d];
            want[lin] = input(members[j], numel(kShape))[linear(src, kShape)];
          });
          EXPECT_EQ(y, want) << name(axes) << " dim " << d;
        }
  }
}

TEST(Collectives, ReduceScatterEveryDim) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (int64_t d = 0; d < 3; ++d) {
        std::vector<int64_t> members = f.naive.members(f.me, axes);
        int64_t g = members.size(), mine = 0;
        while (members[mine] != f.me)
          ++mine;
        std::vector<int64_t> xs = kShape;
        xs[d] *= g;
        std::vector<float> x = input(f.me, numel(xs)), y(numel(kShape), -1);
        f.run("dist.reduce_scatter",
              attrsOf(axes,
                      {{"scatter_dim", d}, {"reduction", std::string("sum")}}),
              {xs}, {kShape}, {x.data(), y.data()});
        std::vector<float> want(numel(kShape), 0);
        forEach(kShape, [&](std::vector<int64_t> &idx, int64_t lin) {
          std::vector<int64_t> src = idx;
          src[d] += mine * kShape[d];
          for (int64_t r : members)
            want[lin] += input(r, numel(xs))[linear(src, xs)];
        });
        EXPECT_EQ(y, want) << name(axes) << " dim " << d;
      }
  }
}

TEST(Collectives, AllToAllEveryDimPair) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t c = 0; c < 3; ++c) {
          std::vector<int64_t> members = f.naive.members(f.me, axes);
          int64_t g = members.size(), mine = 0;
          while (members[mine] != f.me)
            ++mine;
          std::vector<int64_t> xs = kShape;
          xs[s] *= g; // so that it splits
          std::vector<int64_t> piece = xs;
          piece[s] /= g;
          std::vector<int64_t> ys = piece;
          ys[c] *= g;
          std::vector<float> x = input(f.me, numel(xs)), y(numel(ys), -1);
          bool async = (s + c) % 2 == 1;
          auto attrs = attrsOf(axes, {{"split_dim", s}, {"concat_dim", c}});
          if (async) {
            attrs.set("handle", int64_t(3));
            f.run("dist.all_to_all_start", attrs, {xs}, {ys},
                  {x.data(), y.data()});
            AttrMap w;
            w.set("handle", int64_t(3));
            f.run("dist.wait", w, {xs, ys}, {ys},
                  {x.data(), y.data(), y.data()});
          } else {
            f.run("dist.all_to_all", attrs, {xs}, {ys}, {x.data(), y.data()});
          }
          // y block j along c = member j's slice `mine` along s.
          std::vector<float> want(numel(ys));
          forEach(ys, [&](std::vector<int64_t> &idx, int64_t lin) {
            int64_t j = idx[c] / piece[c];
            std::vector<int64_t> src = idx;
            src[c] %= piece[c];
            src[s] += mine * piece[s];
            want[lin] = input(members[j], numel(xs))[linear(src, xs)];
          });
          EXPECT_EQ(y, want) << name(axes) << " split " << s << " concat " << c
                             << " async " << async;
        }
  }
}

/// Ragged slots of shape `s` (4-D, ragged along dim 2): slot i keeps its
/// first n_i rows (n_i from the rank and slot, 0..s[2]), zero after; some
/// kept rows are zero themselves (inside, or the last one) and some
/// values are -0.0, so that the rows sent are "up to the last nonzero
/// byte", never a count of what the producer wrote.
std::vector<float> raggedInput(int64_t r, const std::vector<int64_t> &s) {
  std::vector<float> x(numel(s), 0.0f);
  int64_t rows = s[2], h = s[3], slots = s[0] * s[1];
  for (int64_t i = 0; i < slots; ++i) {
    int64_t n = (r * 7 + i * 5) % (rows + 1);
    for (int64_t row = 0; row < n; ++row)
      for (int64_t k = 0; k < h; ++k) {
        float v = static_cast<float>(r * 1000 + i * 10 + row) + 0.5f * k;
        if ((i + row) % 4 == 3)
          v = 0.0f; // a zero row among the kept ones
        else if ((i + row + k) % 5 == 4)
          v = -0.0f;
        x[(i * rows + row) * h + k] = v;
      }
  }
  return x;
}

TEST(Collectives, RaggedAllToAllEqualsDense) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (int64_t s = 0; s < 2; ++s)
        for (int64_t c = 0; c < 2; ++c) {
          int64_t g = f.naive.members(f.me, axes).size();
          std::vector<int64_t> xs = {2, 3, 4, 3};
          xs[s] *= g;
          std::vector<int64_t> ys = xs;
          ys[s] /= g;
          ys[c] *= g;
          std::vector<float> x = raggedInput(f.me, xs), dense(numel(ys), -1),
                             ragged(numel(ys), -1);
          auto attrs = attrsOf(axes, {{"split_dim", s}, {"concat_dim", c}});
          f.run("dist.all_to_all", attrs, {xs}, {ys}, {x.data(), dense.data()});
          attrs.set("ragged_dim", int64_t(2));
          bool async = (s + c) % 2 == 1;
          if (async) {
            attrs.set("handle", int64_t(5));
            f.run("dist.all_to_all_start", attrs, {xs}, {ys},
                  {x.data(), ragged.data()});
            AttrMap w;
            w.set("handle", int64_t(5));
            f.run("dist.wait", w, {xs, ys}, {ys},
                  {x.data(), ragged.data(), ragged.data()});
          } else {
            f.run("dist.all_to_all", attrs, {xs}, {ys},
                  {x.data(), ragged.data()});
          }
          // Bit for bit (-0.0 included), every slot's zero tail written.
          EXPECT_EQ(0, std::memcmp(dense.data(), ragged.data(),
                                   dense.size() * sizeof(float)))
              << name(axes) << " split " << s << " concat " << c << " async "
              << async;
          if (s == c) { // in place (synchronous): operand = result
            std::vector<float> inPlace = x;
            f.run("dist.all_to_all", attrs, {xs}, {ys},
                  {inPlace.data(), inPlace.data()});
            EXPECT_EQ(0, std::memcmp(dense.data(), inPlace.data(),
                                     dense.size() * sizeof(float)))
                << name(axes) << " in place, dim " << s;
          }
        }
  }
}

TEST(Collectives, RaggedAllToAllRejectsBadRaggedDim) {
  Fixture f({"a"}, {gWorld->size()});
  int64_t g = gWorld->size();
  std::vector<int64_t> xs = {2 * g, 3, 4}, ys = {2, 3 * g, 4};
  std::vector<float> x(numel(xs)), y(numel(ys));
  auto attrs = attrsOf(
      {"a"}, {{"split_dim", 0}, {"concat_dim", 1}, {"ragged_dim", int64_t(1)}});
  try {
    f.run("dist.all_to_all", attrs, {xs}, {ys}, {x.data(), y.data()});
    ADD_FAILURE() << "ragged_dim 1 (the concat dim) was accepted";
  } catch (const std::exception &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "attribute 'ragged_dim' is 1, not after split_dim 0 and "
                  "concat_dim 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Collectives, BroadcastRoots) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names)) {
      std::vector<int64_t> members = f.naive.members(f.me, axes);
      for (int64_t root : {int64_t(0), int64_t(members.size() - 1)}) {
        std::vector<float> x = input(f.me, 6), y(6, -1);
        f.run("dist.broadcast", attrsOf(axes, {{"root", root}}), {{6}}, {{6}},
              {x.data(), y.data()});
        EXPECT_EQ(y, input(members[root], 6)) << name(axes) << " root " << root;
      }
    }
  }
}

TEST(Collectives, PpermuteRingAndSendRecv) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names)) {
      std::vector<int64_t> members = f.naive.members(f.me, axes);
      int64_t g = members.size(), mine = 0;
      while (members[mine] != f.me)
        ++mine;
      // Ring shift i -> i+1, except that the last member sends nowhere:
      // member 0 then receives nothing and gets zeros.
      std::vector<int64_t> pairs;
      for (int64_t i = 0; i + 1 < g; ++i) {
        pairs.push_back(i);
        pairs.push_back(i + 1);
      }
      std::vector<float> x = input(f.me, 4), y(4, -1);
      f.run("dist.ppermute", attrsOf(axes, {{"pairs", pairs}}), {{4}}, {{4}},
            {x.data(), y.data()});
      EXPECT_EQ(y, mine == 0 ? std::vector<float>(4, 0)
                             : input(members[mine - 1], 4))
          << name(axes);
      // Send/recv: even group indices send to the next odd one (async
      // receive, blocking send).
      if (mine % 2 == 0 && mine + 1 < g) {
        f.run("dist.send", attrsOf(axes, {{"peer", mine + 1}}), {{4}}, {},
              {x.data()});
      } else if (mine % 2 == 1) {
        std::vector<float> r(4, -1);
        f.run("dist.recv_start",
              attrsOf(axes, {{"peer", mine - 1}, {"handle", int64_t(9)}}), {},
              {{4}}, {r.data()});
        AttrMap w;
        w.set("handle", int64_t(9));
        f.run("dist.wait", w, {{4}}, {{4}}, {r.data(), r.data()});
        EXPECT_EQ(r, input(members[mine - 1], 4)) << name(axes);
      }
    }
  }
}

TEST(Collectives, ShardSliceAndAxisIndex) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    for (const Axes &axes : orderedSubsets(names))
      for (int64_t d = 0; d < 3; ++d) {
        std::vector<int64_t> members = f.naive.members(f.me, axes);
        int64_t g = members.size(), mine = 0;
        while (members[mine] != f.me)
          ++mine;
        std::vector<int64_t> xs = kShape;
        xs[d] *= g;
        std::vector<float> x = input(7, numel(xs)), y(numel(kShape), -1);
        f.run("dist.shard_slice", attrsOf(axes, {{"dim", d}}), {xs}, {kShape},
              {x.data(), y.data()});
        std::vector<float> want(numel(kShape));
        forEach(kShape, [&](std::vector<int64_t> &idx, int64_t lin) {
          std::vector<int64_t> src = idx;
          src[d] += mine * kShape[d];
          want[lin] = x[linear(src, xs)];
        });
        EXPECT_EQ(y, want) << name(axes) << " dim " << d;
        int64_t index = -1;
        f.run("dist.axis_index", attrsOf(axes, {}), {}, {{}}, {&index},
              DType::I64);
        EXPECT_EQ(index, mine) << name(axes);
      }
  }
}

/// Expert parallelism's token path (docs/expert-parallelism.md) on every
/// mesh, with the last axis as `ep` and the batch split over all axes (one
/// sequence per rank, rank r holds sequence r): each rank dispatches its
/// sequence into [E, 1, C, H] capacity buffers (C below the most choices of
/// one expert, so choices are dropped), an all-to-all over ep (split 0,
/// concat 1) gives it its E/g experts' slots of its ep group's sequences,
/// the "experts" scale expert e's rows by e + 1, the inverse all-to-all
/// (split 1, concat 0) returns them and moe_combine weights them by the
/// gates. The received expert buffers must be the rank's slice of the
/// 1-rank dispatch of the whole batch, and the output the 1-rank result,
/// bit for bit.
TEST(Collectives, ExpertParallelDispatchCombine) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    const std::string ep = names.back();
    std::vector<int64_t> group = f.naive.members(f.me, {ep});
    int64_t g = group.size(), mine = 0;
    while (group[mine] != f.me)
      ++mine;
    const int64_t n = gWorld->size(), experts = 2 * g, seq = 6, k = 2,
                  hidden = 3, capacity = 2, local = experts / g;
    // Global routing: two distinct experts per token, skewed to expert 0.
    std::vector<int32_t> ids(n * seq * k);
    std::vector<float> x(n * seq * hidden), gates(n * seq * k);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t t = 0; t < seq; ++t) {
        int64_t e0 = (b + t) % 2 == 0 ? 0 : (b * 5 + t * 3) % experts;
        int64_t e1 = (e0 + 1 + (b + 2 * t) % (experts - 1)) % experts;
        ids[(b * seq + t) * k] = static_cast<int32_t>(e0);
        ids[(b * seq + t) * k + 1] = static_cast<int32_t>(e1);
        gates[(b * seq + t) * k] = 0.625f;
        gates[(b * seq + t) * k + 1] = 0.375f;
        for (int64_t h = 0; h < hidden; ++h)
          x[(b * seq + t) * hidden + h] =
              static_cast<float>(b * 100 + t * 10 + h);
      }
    AttrMap dispatchAttrs, none;
    dispatchAttrs.set("num_experts", experts);
    dispatchAttrs.set("capacity", capacity);
    auto expertsScale = [&](std::vector<float> &buf, int64_t e0, int64_t ne,
                            int64_t rows) {
      for (int64_t e = 0; e < ne; ++e)
        for (int64_t i = 0; i < rows; ++i)
          buf[e * rows + i] *= static_cast<float>(e0 + e + 1);
    };
    // The 1-rank reference on the whole batch.
    std::vector<int64_t> bufAll = {experts, n, capacity, hidden};
    std::vector<float> refBuf(numel(bufAll)), ref(x.size());
    f.runTyped("moe_dispatch", dispatchAttrs,
               {{DType::F32, {n, seq, hidden}}, {DType::I32, {n, seq, k}}},
               {{DType::F32, bufAll}}, {x.data(), ids.data(), refBuf.data()});
    std::vector<float> scaled = refBuf;
    expertsScale(scaled, 0, experts, n * capacity * hidden);
    f.runTyped("moe_combine", none,
               {{DType::F32, bufAll},
                {DType::F32, {n, seq, k}},
                {DType::I32, {n, seq, k}}},
               {{DType::F32, {n, seq, hidden}}},
               {scaled.data(), gates.data(), ids.data(), ref.data()});
    // Each rank: its sequence f.me.
    const float *myX = x.data() + f.me * seq * hidden;
    int32_t *myIds = ids.data() + f.me * seq * k;
    float *myGates = gates.data() + f.me * seq * k;
    std::vector<int64_t> tokBuf = {experts, 1, capacity, hidden},
                         expBuf = {local, g, capacity, hidden};
    std::vector<float> buf(numel(tokBuf)), recv(numel(expBuf), -1),
        back(numel(tokBuf), -1), y(seq * hidden, -1);
    f.runTyped("moe_dispatch", dispatchAttrs,
               {{DType::F32, {1, seq, hidden}}, {DType::I32, {1, seq, k}}},
               {{DType::F32, tokBuf}},
               {const_cast<float *>(myX), myIds, buf.data()});
    f.run("dist.all_to_all",
          attrsOf({ep}, {{"split_dim", 0}, {"concat_dim", 1}}), {tokBuf},
          {expBuf}, {buf.data(), recv.data()});
    std::vector<float> want(recv.size());
    forEach(expBuf, [&](std::vector<int64_t> &idx, int64_t lin) {
      want[lin] = refBuf[linear(
          {mine * local + idx[0], group[idx[1]], idx[2], idx[3]}, bufAll)];
    });
    EXPECT_EQ(recv, want) << "expert buffers on mesh " << name(names);
    expertsScale(recv, mine * local, local, g * capacity * hidden);
    f.run("dist.all_to_all",
          attrsOf({ep}, {{"split_dim", 1}, {"concat_dim", 0}}), {expBuf},
          {tokBuf}, {recv.data(), back.data()});
    f.runTyped("moe_combine", none,
               {{DType::F32, tokBuf},
                {DType::F32, {1, seq, k}},
                {DType::I32, {1, seq, k}}},
               {{DType::F32, {1, seq, hidden}}},
               {back.data(), myGates, myIds, y.data()});
    std::vector<float> refMine(ref.begin() + f.me * seq * hidden,
                               ref.begin() + (f.me + 1) * seq * hidden);
    EXPECT_EQ(y, refMine) << "combined output on mesh " << name(names);
    // Some choices were dropped (capacity 2 of up to `seq` per expert).
    int64_t filled = 0;
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t c = 0; c < capacity; ++c)
        filled += refBuf[linear({e, f.me, c, 0}, bufAll)] != 0.0f ||
                  refBuf[linear({e, f.me, c, 1}, bufAll)] != 0.0f;
    EXPECT_LT(filled, seq * k) << "the test should drop choices";
  }
}

TEST(Collectives, OneCommunicatorPerAxesList) {
  for (auto &[names, sizes] : meshes()) {
    Fixture f(names, sizes);
    // Every ordered subset, and the full mesh (already one of them).
    EXPECT_EQ(f.comm->numGroups(), orderedSubsets(names).size());
    EXPECT_EQ(f.comm->all().size(), gWorld->size());
  }
}

} // namespace

int main(int argc, char **argv) {
  return autoshard::runtime::test::runMpiTests(argc, argv, gWorld);
}
