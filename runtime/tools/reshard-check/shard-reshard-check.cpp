//===- shard-reshard-check.cpp - Check every entry of a reshard artifact --===//
//
// shard-reshard-check [-n N] [-v] ARTIFACT: runs every entry of an artifact
// whose entries each take one f32 input slot and return one f32 output slot
// holding the same global tensor in another layout (the resharding tests,
// test/E2E/Inputs/gen_reshard.py), and checks the result numerically.
//
// Each rank fills its local input from the global tensor whose element i
// (row-major) is i, per the input slot's `global_shape`, `sharding` and
// `partial` (docs/artifact-format.md). For a partial slot the members of
// the partial group hold integer-valued parts whose reduction is exactly the
// global value: for `sum`, member k > 0 holds a small integer t(k, i) and
// member 0 the rest; for `max`, member 0 holds the value and member k > 0 a
// smaller one. Every value is an integer below 2^24, so every sum is exact
// in f32 whatever the order. After the entry, rank 0 gathers every rank's
// local output and checks it against the block of the global tensor that
// the output slot's sharding gives it (reducing over the partial group
// first for a partial output), element by element and exactly.
//
// Prints one line per failing entry (every entry with -v) and
// "N passed, M failed"; the exit status is 1 if any entry failed. With
// -n N > 1 and no launcher around it, it re-executes itself under mpirun as
// shard-run does (docs/running.md).
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"

#include "ToolMain.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace autoshard::runtime;

namespace {

struct Options {
  std::string artifact;
  int64_t ranks = 1;
  bool verbose = false;
  bool time = false;
};

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-n" && i + 1 < argc)
      o.ranks = std::stoll(argv[++i]);
    else if (a == "-v")
      o.verbose = true;
    else if (a == "--time")
      o.time = true;
    else if (!a.empty() && a[0] != '-' && o.artifact.empty())
      o.artifact = a;
    else
      throw std::invalid_argument("unknown argument '" + a +
                                  "' (usage: shard-reshard-check [-n N] [-v] "
                                  "[--time] ARTIFACT)");
  }
  if (o.artifact.empty())
    throw std::invalid_argument(
        "usage: shard-reshard-check [-n N] [-v] ARTIFACT");
  return o;
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

/// Global row-major index of local element `l` of a block of `local` shape
/// starting at `offset` in a tensor of `global` shape.
int64_t globalIndex(int64_t l, const std::vector<int64_t> &local,
                    const std::vector<int64_t> &offset,
                    const std::vector<int64_t> &global) {
  int64_t g = 0, stride = 1;
  for (size_t d = local.size(); d-- > 0;) {
    int64_t c = l % local[d];
    l /= local[d];
    g += (offset[d] + c) * stride;
    stride *= global[d];
  }
  return g;
}

std::vector<int64_t> blockOffset(const Mesh &mesh, const Slot &s,
                                 int64_t rank) {
  std::vector<int64_t> b =
      mesh.blockIndex(s.sharding, rank, s.type.shape.size());
  for (size_t d = 0; d < b.size(); ++d)
    b[d] *= s.type.shape[d];
  return b;
}

std::vector<std::string> partialAxes(const Slot &s) {
  std::vector<std::string> axes;
  for (const auto &[axis, kind] : s.partial)
    axes.push_back(axis);
  return axes;
}

/// The reduction of a partial slot ("" if not partial); one kind per slot.
std::string partialKind(const Slot &s) {
  std::string kind;
  for (const auto &[axis, k] : s.partial) {
    if (!kind.empty() && k != kind)
      throw std::runtime_error("slot '" + s.role +
                               "' mixes sum and max partial axes");
    kind = k;
  }
  return kind;
}

/// Small integer part t(k, i) of member k > 0 of a partial-sum group.
float sumPart(int64_t k, int64_t i) {
  return static_cast<float>((k * 7 + i) % 13 - 6);
}

/// This rank's local value of element `g` of the global tensor of a slot
/// that is partial over a group of `size` members, of which it is `k`.
float inputValue(int64_t g, const std::string &kind, int64_t k, int64_t size) {
  if (kind.empty())
    return static_cast<float>(g);
  if (kind == "max")
    return k == 0 ? static_cast<float>(g)
                  : static_cast<float>(g - 1 - (k + g) % 5);
  if (k > 0)
    return sumPart(k, g);
  float rest = static_cast<float>(g);
  for (int64_t j = 1; j < size; ++j)
    rest -= sumPart(j, g);
  return rest;
}

std::string describe(const Slot &s) {
  std::string str = s.sharding.str();
  if (!s.partial.empty()) {
    str += " partial {";
    for (size_t i = 0; i < s.partial.size(); ++i)
      str += (i ? ", " : "") + s.partial[i].first + ": " + s.partial[i].second;
    str += "}";
  }
  return str;
}

/// Checks the outputs of `entry`: `all` holds each rank's batch of
/// `stride` floats one after the other, the entry's output at `offset` in
/// each (advanced past it).
void check(const EntrySpec &entry, const std::vector<float> &all, size_t stride,
           size_t &offset, int64_t worldSize, const Mesh &mesh, bool verbose,
           int64_t &passed, int64_t &failed) {
  const Slot &in = entry.inputs[0], &out = entry.outputs[0];
  int64_t outCount = product(out.type.shape);
  std::string outKind = partialKind(out);
  std::vector<std::string> outAxes = partialAxes(out);
  int64_t outG = mesh.groupSize(outAxes);
  std::string error;
  int64_t bad = 0;
  for (int64_t r = 0; r < worldSize; ++r) {
    std::vector<int64_t> block = blockOffset(mesh, out, r);
    std::vector<size_t> members;
    for (int64_t k = 0; k < outG; ++k)
      members.push_back(mesh.rankInGroup(r, outAxes, k) * stride + offset);
    for (int64_t l = 0; l < outCount; ++l) {
      double got = 0;
      for (int64_t k = 0; k < outG; ++k) {
        double v = all[members[k] + l];
        got = k == 0 ? v : outKind == "max" ? std::max(got, v) : got + v;
      }
      double want = static_cast<double>(
          globalIndex(l, out.type.shape, block, out.globalShape));
      if (got == want)
        continue;
      if (bad++ == 0)
        error = "rank " + std::to_string(r) + " local element " +
                std::to_string(l) + ": got " + std::to_string(got) +
                ", expected " + std::to_string(want);
    }
  }
  offset += outCount;
  if (bad == 0)
    ++passed;
  else
    ++failed;
  if (bad || verbose)
    std::printf(
        "%s %s: %s -> %s%s%s\n", bad ? "FAIL" : "ok", entry.name.c_str(),
        describe(in).c_str(), describe(out).c_str(), bad ? ": " : "",
        bad ? (std::to_string(bad) + " wrong elements, first " + error).c_str()
            : "");
}

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int run(const Options &opts, CommWorld &world) {
  double t0 = seconds();
  Artifact artifact = loadArtifact(opts.artifact);
  if (artifact.worldSize != world.size())
    throw std::runtime_error(
        "artifact '" + opts.artifact + "' was compiled for " +
        std::to_string(artifact.worldSize) + " ranks, but the job has " +
        std::to_string(world.size()));
  const Mesh &mesh = artifact.mesh;
  int64_t rank = world.rank(), worldSize = world.size();
  CommContext comm(artifact, world);
  CpuBackend backend;
  ExecutorOptions eo;
  eo.comm = &comm;
  Executor ex(artifact, backend, eo);
  ex.initState();
  Communicator &everyone = comm.all();
  double t1 = seconds();

  int64_t passed = 0, failed = 0;
  constexpr size_t kBatch = 64;
  std::vector<size_t> pending; // entries run since the last gather
  std::vector<float> batch;    // their local outputs, one after the other
  for (size_t e = 0; e < artifact.entries.size(); ++e) {
    const EntrySpec &entry = artifact.entries[e];
    if (entry.inputs.size() != 1 || entry.outputs.size() != 1 ||
        entry.inputs[0].type.dtype != DType::F32 ||
        entry.outputs[0].type.dtype != DType::F32 ||
        entry.inputs[0].globalShape != entry.outputs[0].globalShape)
      throw std::runtime_error("entry '" + entry.name +
                               "' does not take one f32 input and return "
                               "one f32 output of its global shape");
    const Slot &in = entry.inputs[0], &out = entry.outputs[0];
    const std::vector<int64_t> &global = in.globalShape;

    // This rank's local input.
    std::string inKind = partialKind(in);
    std::vector<std::string> inAxes = partialAxes(in);
    int64_t inK = mesh.indexInGroup(rank, inAxes);
    int64_t inG = mesh.groupSize(inAxes);
    std::vector<int64_t> inOffset = blockOffset(mesh, in, rank);
    std::vector<float> x(product(in.type.shape));
    for (size_t l = 0; l < x.size(); ++l)
      x[l] = inputValue(globalIndex(l, in.type.shape, inOffset, global), inKind,
                        inK, inG);
    int64_t outCount = product(out.type.shape);
    std::vector<float> y(outCount, -12345.f);
    const void *inputs[] = {x.data()};
    void *outputs[] = {y.data()};
    ex.run(static_cast<int>(e), inputs, outputs);

    // Rank 0 checks every rank's outputs, a batch of entries at a time
    // (one gather per batch rather than one per entry).
    pending.push_back(e);
    batch.insert(batch.end(), y.begin(), y.end());
    if (pending.size() < kBatch && e + 1 < artifact.entries.size())
      continue;
    std::vector<float> all(batch.size() * worldSize);
    everyone.allGather(batch.data(), all.data(), batch.size() * sizeof(float))
        ->wait();
    if (rank == 0) {
      size_t offset = 0;
      for (size_t p : pending)
        check(artifact.entries[p], all, batch.size(), offset, worldSize, mesh,
              opts.verbose, passed, failed);
    }
    pending.clear();
    batch.clear();
  }
  if (rank == 0) {
    std::printf("%lld passed, %lld failed\n", static_cast<long long>(passed),
                static_cast<long long>(failed));
    if (opts.time)
      std::fprintf(stderr, "load and bind %.2f s, run and check %.2f s\n",
                   t1 - t0, seconds() - t1);
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  return tools::runOnWorld(
      "shard-reshard-check", argc, argv,
      [&] {
        opts = parseOptions(argc, argv);
        return opts.ranks;
      },
      [&](CommWorld &world) { return run(opts, world); });
}
