//===- Calibrate.cpp - shard-calibrate's shared timing, fits and output ---===//

#include "Calibrate.h"

#include "autoshard/runtime/train/AtomicFile.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace autoshard::runtime::calibrate {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double round2(double x) {
  if (x <= 0)
    return 0;
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", x);
  return std::strtod(text, nullptr);
}

//===----------------------------------------------------------------------===//
// ProbeOp
//===----------------------------------------------------------------------===//

ProbeOp::ProbeOp(Backend &backend, const char *op, AttrMap attributes,
                 std::vector<TensorType> args, std::vector<TensorType> results)
    : backend(backend), attrs(std::move(attributes)) {
  KernelSignature sig;
  sig.op = op;
  sig.attrs = &attrs;
  sig.place = std::string("shard-calibrate ") + op;
  sig.args = std::move(args);
  sig.results = std::move(results);
  for (const std::vector<TensorType> *list : {&sig.args, &sig.results})
    for (const TensorType &t : *list) {
      int64_t bytes = std::max<int64_t>(1, t.bytes());
      void *p = backend.allocate(bytes);
      buffers.push_back({p, bytes});
      pointers.push_back(p);
      sizes.push_back(t.bytes());
      backend.fill(p, 0x3C, bytes);
    }
  kernel = backend.bind(sig);
}

ProbeOp::~ProbeOp() {
  for (auto [p, bytes] : buffers)
    backend.deallocate(p, bytes);
}

void ProbeOp::write(size_t index, const void *data, int64_t bytes) {
  if (index >= buffers.size() || bytes > buffers[index].second)
    throw std::invalid_argument(
        "shard-calibrate: " + std::to_string(bytes) + " bytes for operand " +
        std::to_string(index) + " of a kernel with " +
        std::to_string(buffers.size()) + " operands and results");
  backend.copyToDevice(buffers[index].first, data, bytes);
}

double ProbeOp::ioBytes() const {
  double total = 0;
  for (int64_t bytes : sizes)
    total += double(bytes);
  return total;
}

//===----------------------------------------------------------------------===//
// Timer
//===----------------------------------------------------------------------===//

Timer::Timer(Communicator &all, int64_t repeats, std::function<void()> sync)
    : all(all), count(repeats), sync(std::move(sync)) {}

int64_t Timer::batchCalls(const std::function<void()> &body) {
  constexpr double batchSeconds = 0.02;
  body();
  wait();
  double t0 = now();
  body();
  wait();
  double one = std::max(1e-9, now() - t0);
  return int64_t(
      max(std::min(1e5, std::max(1.0, std::ceil(batchSeconds / one)))));
}

double Timer::timeBatch(const std::function<void()> &body, int64_t calls) {
  barrier();
  double start = now();
  for (int64_t c = 0; c < calls; ++c)
    body();
  wait();
  return span(start, now()) / double(calls);
}

double Timer::median(const std::function<void()> &body) {
  int64_t calls = batchCalls(body);
  std::vector<double> times;
  for (int64_t r = 0; r < count; ++r)
    times.push_back(timeBatch(body, calls));
  return medianOf(std::move(times));
}

void Timer::barrier() {
  double x = 0;
  all.allReduce(&x, &x, 1, DType::F64, ReduceOp::Sum)->wait();
}

double Timer::max(double x) {
  all.allReduce(&x, &x, 1, DType::F64, ReduceOp::Max)->wait();
  return x;
}

double Timer::span(double start, double end) {
  double x[2] = {end, -start};
  all.allReduce(x, x, 2, DType::F64, ReduceOp::Max)->wait();
  return x[0] + x[1];
}

//===----------------------------------------------------------------------===//
// Interleaved repeats
//===----------------------------------------------------------------------===//

double medianOf(std::vector<double> values) {
  if (values.empty())
    throw std::invalid_argument("shard-calibrate: the median of no timings");
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double spreadOf(const std::vector<double> &values) {
  if (values.empty())
    return 1;
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *hi / std::max(1e-300, *lo);
}

std::vector<std::vector<double>>
timeInterleaved(size_t probes, int64_t repeats,
                const std::function<double(size_t)> &time) {
  std::vector<std::vector<double>> times(probes);
  for (int64_t r = 0; r < repeats; ++r)
    for (size_t p = 0; p < probes; ++p)
      times[p].push_back(time(p));
  return times;
}

size_t Schedule::add(std::function<void()> body) {
  bodies.push_back(std::move(body));
  return bodies.size() - 1;
}

void Schedule::run() {
  std::vector<int64_t> calls;
  for (const std::function<void()> &body : bodies)
    calls.push_back(timer.batchCalls(body));
  results = timeInterleaved(bodies.size(), timer.repeats(), [&](size_t p) {
    return timer.timeBatch(bodies[p], calls[p]);
  });
}

const std::vector<double> &Schedule::times(size_t index) const {
  if (index >= results.size())
    throw std::logic_error("shard-calibrate: probe " + std::to_string(index) +
                           " of " + std::to_string(bodies.size()) +
                           " has no timings (Schedule::run not called)");
  return results[index];
}

double Schedule::median(size_t index) const { return medianOf(times(index)); }

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

double GemmModel::time(const GemmPoint &g, double efficiency, double k0,
                       double overhead) const {
  double flops = 2.0 * g.m * g.n * g.k;
  double bytes = elementBytes * (g.m * g.k + g.k * g.n + g.m * g.n);
  double quantised = 1;
  if (sms > 0) {
    quantised = 0;
    for (auto [tm, tn] : tiles) {
      double count = std::ceil(g.m / double(tm)) * std::ceil(g.n / double(tn));
      double waves = std::ceil(count / double(sms));
      quantised = std::max(quantised, double(g.m) * double(g.n) /
                                          (waves * double(sms) * tm * tn));
    }
  }
  double compute = flops / (peak * efficiency * quantised * (g.k / (g.k + k0)));
  return std::max(compute, bytes / bandwidth) + fixed + overhead;
}

GemmFit fitGemm(const std::vector<GemmPoint> &points, const GemmModel &model) {
  GemmFit best;
  double bestErr = 1e300;
  // Integer steps: the same candidates on every machine and compiler.
  for (int e = 15; e <= 50; ++e)
    for (int k = 0; k <= 64; ++k)
      for (int o = 0; o <= 200; ++o) {
        double eff = 0.02 * e, k0 = 8.0 * k, overhead = 0.25e-6 * o;
        double err = 0;
        for (const GemmPoint &g : points) {
          err +=
              std::fabs(std::log(model.time(g, eff, k0, overhead) / g.seconds));
          if (err >= bestErr)
            break;
        }
        if (err < bestErr)
          bestErr = err, best.efficiency = eff, best.k0 = k0,
          best.overhead = overhead;
      }
  best.meanAbsLogError = bestErr / double(std::max<size_t>(1, points.size()));
  // Efficiency 1 is the ceiling of the rate the peak was taken from, not a
  // limit of the search; k0 and the overhead at 0 are the model's own
  // floors.
  auto limit = [&](const char *name, double value, double at,
                   const char *unit) {
    if (std::fabs(value - at) > 1e-9)
      return;
    char text[96];
    std::snprintf(text, sizeof text, "%s %g%s (the search's limit)", name,
                  value, unit);
    best.atLimit.push_back(text);
  };
  limit("efficiency", best.efficiency, 0.30, "");
  limit("k0", best.k0, 512, "");
  limit("overhead", best.overhead * 1e6, 50, " us");
  return best;
}

void warnAtLimit(const GemmFit &fit, nlohmann::json &measured) {
  if (fit.atLimit.empty())
    return;
  std::string list;
  for (const std::string &item : fit.atLimit)
    list += (list.empty() ? "" : ", ") + item;
  std::fprintf(stderr,
               "shard-calibrate: warning: the GEMM fit's %s: its mean "
               "|log error| is %.3f; rerun on an idle machine\n",
               list.c_str(), fit.meanAbsLogError);
  measured["gemm_fit_at_limit"] = fit.atLimit;
}

namespace {

/// Least squares of x . row ~ rhs over `rows` in the active columns;
/// inactive ones stay 0. Returns false when the system is singular.
template <size_t N>
bool solveNormal(const std::vector<std::array<double, N>> &rows,
                 const std::vector<double> &rhs,
                 const std::array<bool, N> &active, std::array<double, N> &x) {
  double a[N][N + 1] = {};
  for (size_t k = 0; k < rows.size(); ++k)
    for (size_t i = 0; i < N; ++i) {
      if (!active[i])
        continue;
      for (size_t j = 0; j < N; ++j)
        if (active[j])
          a[i][j] += rows[k][i] * rows[k][j];
      a[i][N] += rows[k][i] * rhs[k];
    }
  for (size_t i = 0; i < N; ++i)
    if (!active[i])
      a[i][i] = 1, a[i][N] = 0;
  for (size_t col = 0; col < N; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < N; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col]))
        pivot = r;
    if (std::fabs(a[pivot][col]) < 1e-300)
      return false;
    std::swap(a[col], a[pivot]);
    for (size_t r = 0; r < N; ++r) {
      if (r == col)
        continue;
      double f = a[r][col] / a[col][col];
      for (size_t c = col; c <= N; ++c)
        a[r][c] -= f * a[col][c];
    }
  }
  for (size_t i = 0; i < N; ++i)
    x[i] = a[i][N] / a[i][i];
  return true;
}

} // namespace

AttentionFit fitAttention(const std::vector<AttentionPoint> &points,
                          double peak, double fixed) {
  bool forward = false, backward = false;
  for (const AttentionPoint &p : points)
    (p.backward ? backward : forward) = true;
  if (!forward || !backward || !(peak > 0))
    throw std::invalid_argument("fitAttention needs a forward and a backward "
                                "point and a positive peak");
  // Unknowns: 1 / efficiency, the forward and backward seconds per score
  // and per tile; each row divided by the measured time (relative error).
  constexpr size_t kUnknowns = 5;
  std::vector<std::array<double, kUnknowns>> rows;
  for (const AttentionPoint &p : points) {
    double t = std::max(1e-12, p.seconds - fixed);
    rows.push_back({p.flops / peak / t, p.backward ? 0 : p.scores / t,
                    p.backward ? p.scores / t : 0, p.backward ? 0 : p.tiles / t,
                    p.backward ? p.tiles / t : 0});
  }
  std::vector<double> ones(rows.size(), 1.0), rhs = ones;
  std::array<bool, kUnknowns> active;
  active.fill(true);
  // A tile term the points cannot tell from the score term (every point
  // with the same tiles per score) stays out.
  for (bool back : {false, true}) {
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const AttentionPoint &p : points)
      if (p.backward == back && p.scores > 0) {
        lo = std::min(lo, p.tiles / p.scores);
        hi = std::max(hi, p.tiles / p.scores);
      }
    if (!(hi > lo * (1 + 1e-9)))
      active[back ? 4 : 3] = false;
  }
  std::array<double, kUnknowns> x = {1, 0, 0, 0, 0};
  for (int round = 0; round < 6; ++round) {
    if (!solveNormal(rows, rhs, active, x))
      return AttentionFit{};
    bool changed = false;
    for (size_t i = 1; i < kUnknowns; ++i)
      if (active[i] && x[i] < 0)
        active[i] = false, changed = true;
    if (active[0] && x[0] < 1) {
      // Faster than peak: efficiency 1, the other terms fit the rest.
      active[0] = false, changed = true;
      for (size_t k = 0; k < rows.size(); ++k)
        rhs[k] = 1 - rows[k][0];
    }
    if (!changed)
      break;
  }
  AttentionFit fit;
  fit.efficiency = active[0] ? std::min(1.0, 1.0 / x[0]) : 1.0;
  fit.scoreTime = active[1] ? std::max(0.0, x[1]) : 0.0;
  fit.gradScoreTime = active[2] ? std::max(0.0, x[2]) : 0.0;
  fit.tileTime = active[3] ? std::max(0.0, x[3]) : 0.0;
  fit.gradTileTime = active[4] ? std::max(0.0, x[4]) : 0.0;
  return fit;
}

double bestGemmRate(const std::vector<GemmPoint> &points) {
  double peak = 0;
  for (const GemmPoint &g : points)
    peak = std::max(peak, 2.0 * g.m * g.n * g.k / g.seconds);
  return peak;
}

nlohmann::json gemmJson(const std::vector<GemmPoint> &points) {
  nlohmann::json grid = nlohmann::json::array();
  for (const GemmPoint &g : points)
    grid.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"s", g.seconds}});
  return grid;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

std::pair<double, double> ringTerms(const std::string &kind, int64_t n) {
  double steps = double(n - 1), frac = double(n - 1) / double(n);
  if (kind == "all_reduce")
    return {2 * steps, 2 * frac};
  if (kind == "p2p")
    return {1, 1};
  return {steps, frac};
}

std::vector<double> fitCollectives(const std::vector<CommPoint> &points) {
  // Columns: c, alpha, invB; each row divided by the measured time
  // (relative error); a term that comes out negative is dropped.
  std::vector<std::array<double, 3>> rows;
  for (const CommPoint &p : points) {
    auto [steps, frac] = ringTerms(p.kind, p.group);
    rows.push_back(
        {1 / p.seconds, steps / p.seconds, frac * p.bytes / p.seconds});
  }
  const std::vector<double> ones(rows.size(), 1.0);
  std::array<bool, 3> active = {true, true, true};
  std::array<double, 3> coef = {0, 0, 0};
  for (int round = 0; round < 3; ++round) {
    if (!solveNormal(rows, ones, active, coef))
      throw std::runtime_error("collective fit: singular system");
    bool clamped = false;
    for (int i = 0; i < 3; ++i)
      if (active[i] && coef[i] < 0)
        active[i] = false, coef[i] = 0, clamped = true;
    if (!clamped)
      break;
  }
  if (coef[2] <= 0)
    throw std::runtime_error("collective fit: no positive bandwidth term");
  return {coef.begin(), coef.end()};
}

CollectiveProbes::CollectiveProbes(CommWorld &world, Schedule &schedule,
                                   const std::vector<double> &sizes,
                                   const std::function<void *(int64_t)> &alloc)
    : schedule(schedule) {
  const int64_t ranks = world.size();
  for (int64_t g = 2; g <= ranks; g *= 2) {
    groups.push_back(world.split(world.rank() / g, world.rank() % g));
    Communicator *group = groups.back().get();
    for (double bytes : sizes) {
      int64_t count = int64_t(bytes / 4);
      void *send = alloc(int64_t(bytes) * g), *recv = alloc(int64_t(bytes) * g);
      auto time = [&](const std::string &kind, std::function<void()> op) {
        probes.push_back({{kind, g, bytes, 0}, schedule.add(std::move(op))});
      };
      time("all_reduce", [=] {
        group->allReduce(send, recv, count, DType::F32, ReduceOp::Sum)->wait();
      });
      time("all_gather",
           [=] { group->allGather(send, recv, int64_t(bytes) / g)->wait(); });
      time("reduce_scatter", [=] {
        group->reduceScatter(send, recv, count / g, DType::F32, ReduceOp::Sum)
            ->wait();
      });
      time("all_to_all",
           [=] { group->allToAll(send, recv, int64_t(bytes) / g)->wait(); });
      if (g == 2)
        time("p2p", [=] {
          // One direction: rank 0 of each pair sends, rank 1 receives.
          Transfer t{1 - group->rank(), send, int64_t(bytes)};
          Transfer r{1 - group->rank(), recv, int64_t(bytes)};
          if (group->rank() == 0)
            group->exchange({t}, {})->wait();
          else
            group->exchange({}, {r})->wait();
        });
    }
  }
}

std::vector<CommPoint> CollectiveProbes::points() const {
  std::vector<CommPoint> comms;
  for (const auto &[point, index] : probes) {
    comms.push_back(point);
    comms.back().seconds = schedule.median(index);
  }
  return comms;
}

std::vector<CommPoint>
measureCollectives(CommWorld &world, Timer &timer,
                   const std::vector<double> &sizes,
                   const std::function<void *(int64_t)> &alloc) {
  Schedule schedule(timer);
  CollectiveProbes probes(world, schedule, sizes, alloc);
  schedule.run();
  return probes.points();
}

void writeLinkFit(nlohmann::json &cluster, nlohmann::json &measured,
                  const std::vector<CommPoint> &comms,
                  const std::string &link) {
  std::vector<double> coef = fitCollectives(comms);
  cluster["collective_latency_us"] = round2(coef[0] * 1e6);
  nlohmann::json scales = nlohmann::json::object();
  for (const auto &[kind, scale] : fitBandwidthScales(comms, coef))
    scales[kind] = round2(scale);
  cluster["collective_bandwidth_scale"] = scales;
  cluster["intra_node"] = {
      {"link", link},
      {"gb_per_s_per_direction_per_gpu", round2(1.0 / coef[2] / 1e9)},
      {"latency_us", round2(coef[1] * 1e6)},
      {"efficiency", 1.0}};
  nlohmann::json list = nlohmann::json::array();
  for (const CommPoint &p : comms)
    list.push_back({{"kind", p.kind},
                    {"group", p.group},
                    {"bytes", p.bytes},
                    {"s", p.seconds}});
  measured["collectives"] = list;
}

std::map<std::string, double>
fitBandwidthScales(const std::vector<CommPoint> &points,
                   const std::vector<double> &coef) {
  std::map<std::string, std::pair<double, double>> sums; // kind: Σu², Σuv
  for (const CommPoint &p : points) {
    auto [steps, frac] = ringTerms(p.kind, p.group);
    double u = frac * p.bytes * coef[2] / p.seconds;
    double v = 1 - (coef[0] + steps * coef[1]) / p.seconds;
    auto &[uu, uv] = sums[p.kind];
    uu += u * u;
    uv += u * v;
  }
  std::map<std::string, double> scales;
  for (const auto &[kind, s] : sums)
    scales[kind] = s.second > 0 && s.first > 0 ? s.first / s.second : 1.0;
  return scales;
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

nlohmann::json readBase(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    throw std::runtime_error("--base: cannot read '" + path + "'");
  nlohmann::json base = nlohmann::json::parse(file, nullptr, false);
  if (base.is_discarded() || !base.is_object())
    throw std::runtime_error("--base: '" + path +
                             "' is not a JSON object (a cluster description, "
                             "docs/cluster-format.md)");
  return base;
}

void checkWritable(const std::string &path) {
  auto fail = [&](int error) {
    throw std::runtime_error("cannot write '" + path +
                             "': " + std::strerror(error));
  };
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode))
      fail(EISDIR);
    if (::access(path.c_str(), W_OK) != 0)
      fail(errno);
    return;
  }
  if (errno != ENOENT)
    fail(errno);
  // A new file: its directory must exist and take new entries.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  if (::stat(dir.c_str(), &info) != 0)
    fail(errno);
  if (!S_ISDIR(info.st_mode))
    fail(ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(errno);
  // access() grants root everything; a probe file in the directory tells
  // (e.g. /proc, a read-only mount). Removed at once.
  std::string probe = dir + "/.shard-calibrate-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0)
    fail(errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

nlohmann::json readRankProfiles(const std::vector<std::string> &paths,
                                int64_t ranks) {
  nlohmann::json profiles = nlohmann::json::object();
  std::map<std::string, std::string> fileOf; // rank count: its --profile
  std::vector<std::pair<std::string, nlohmann::json>> carried;
  for (const std::string &path : paths) {
    auto fail = [&](const std::string &why) {
      throw std::invalid_argument("--profile '" + path + "': " + why);
    };
    if (ranks < 2)
      fail("a profile has fewer ranks than this run, and -n " +
           std::to_string(ranks) + " has none fewer (run the profile's " +
           "ranks first, then -n N > 1 with --profile)");
    struct stat info;
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      fail("is a directory (expected a shard-calibrate output file)");
    std::ifstream in(path);
    if (!in)
      fail(std::string("cannot read it: ") + std::strerror(errno));
    nlohmann::json file;
    try {
      file = nlohmann::json::parse(in, nullptr, false);
    } catch (const std::exception &e) {
      // The stream's own read errors (EIO, a special file) throw.
      fail(std::string("cannot read it: ") + e.what());
    }
    if (file.is_discarded() || !file.is_object())
      fail("not a JSON object (expected a shard-calibrate output)");
    const nlohmann::json *gpu = file.contains("gpu") ? &file["gpu"] : nullptr;
    if (!gpu || !gpu->is_object() || !gpu->contains("shares_node") ||
        (*gpu)["shares_node"] != true)
      fail("gpu.shares_node is not true: not a CPU shard-calibrate output "
           "(ranks sharing one node)");
    const nlohmann::json &gpn = file.contains("gpus_per_node")
                                    ? file["gpus_per_node"]
                                    : nlohmann::json();
    if (!gpn.is_number_integer() || gpn.get<int64_t>() < 1 ||
        gpn.get<int64_t>() >= ranks)
      fail("gpus_per_node must be a rank count from 1 to " +
           std::to_string(ranks - 1) + " (fewer than this run's -n " +
           std::to_string(ranks) + "), got " + gpn.dump());
    std::string key = std::to_string(gpn.get<int64_t>());
    if (profiles.contains(key))
      fail("a second profile of " + key + (key == "1" ? " rank" : " ranks") +
           " (gpus_per_node " + key + "), after '" + fileOf[key] + "'");
    fileOf[key] = path;
    nlohmann::json fields = nlohmann::json::object();
    for (const char *field :
         {"gpu", "efficiency", "intra_node", "collective_latency_us",
          "collective_bandwidth_scale", "host", "overlap", "measured"})
      if (file.contains(field))
        fields[field] = file[field];
    profiles[key] = std::move(fields);
    // A profile's own profiles (an -n 2 output made with --profile of -n 1)
    // are outputs of still fewer ranks: carried, unless given themselves.
    if (file.contains("by_ranks_per_node")) {
      const nlohmann::json &nested = file["by_ranks_per_node"];
      if (!nested.is_object())
        fail("by_ranks_per_node must be an object, got " + nested.dump());
      for (const auto &[rank, profile] : nested.items()) {
        int64_t r = 0;
        try {
          size_t used = 0;
          r = std::stoll(rank, &used);
          if (used != rank.size())
            r = 0;
        } catch (const std::exception &) {
          r = 0;
        }
        if (r < 1 || r >= gpn.get<int64_t>() || std::to_string(r) != rank ||
            !profile.is_object())
          fail("by_ranks_per_node." + rank +
               " is not a profile of fewer ranks than its gpus_per_node " +
               key + " (an object under a rank count from 1 to " +
               std::to_string(gpn.get<int64_t>() - 1) + ")");
        carried.emplace_back(rank, profile);
      }
    }
  }
  for (auto &[rank, profile] : carried)
    if (!profiles.contains(rank))
      profiles[rank] = std::move(profile);
  return profiles;
}

int writeCluster(const nlohmann::json &cluster, const Options &opts) {
  std::string text = cluster.dump(2) + "\n";
  if (opts.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  // Often the description this run replaces (scripts/calibrate_cpu.sh
  // rewrites configs/clusters/cpu-2core.json): a full disk or a kill
  // mid-write must leave the old one whole.
  writeFileAtomically(opts.out, text);
  return 0;
}

//===----------------------------------------------------------------------===//
// Synchronisation sweeps
//===----------------------------------------------------------------------===//

double syncSlowdownOf(const std::vector<double> &base,
                      const std::vector<double> &synced, int64_t syncs,
                      double collective) {
  if (base.empty() || base.size() != synced.size())
    throw std::invalid_argument(
        "shard-calibrate: synchronisation sweeps need paired timings, got " +
        std::to_string(base.size()) + " and " + std::to_string(synced.size()));
  if (syncs < 1)
    throw std::invalid_argument(
        "shard-calibrate: a synchronised sweep needs at least one "
        "collective, got " +
        std::to_string(syncs));
  std::vector<double> loss;
  for (size_t r = 0; r < base.size(); ++r)
    loss.push_back((synced[r] - base[r] - double(syncs) * collective) /
                   std::max(1e-12, base[r]));
  return std::max(0.0, medianOf(loss));
}

std::vector<SyncSweep> measureSyncSweeps(CommWorld &world, Timer &timer,
                                         const Schedule &schedule,
                                         size_t kernels,
                                         const std::vector<CommPoint> &comms) {
  const int64_t ranks = world.size();
  constexpr int64_t kSyncs = 20, kCount = 1024; // 4 KiB of f32
  constexpr int kSweepPasses = 4;
  std::vector<SyncSweep> sweeps;
  if (ranks < 2 || kernels == 0)
    return sweeps;
  std::vector<std::unique_ptr<Communicator>> groups;
  for (int64_t g = 2; g <= ranks; g *= 2) {
    groups.push_back(world.split(world.rank() / g, world.rank() % g));
    SyncSweep w;
    w.group = g;
    w.syncs = std::min<int64_t>(kSyncs, int64_t(kernels));
    for (const CommPoint &c : comms)
      if (c.kind == "all_reduce" && c.group == g && c.bytes == 4.0 * kCount)
        w.collectiveS = c.seconds;
    sweeps.push_back(w);
  }
  std::vector<float> buffer(kCount);
  // Every kernel probe once and, with `group`, a blocking all-reduce after
  // every kernels / syncs of them.
  auto sweep = [&](Communicator *group, int64_t syncs) {
    size_t every = kernels / size_t(std::max<int64_t>(1, syncs));
    int64_t done = 0;
    for (size_t i = 0; i < kernels; ++i) {
      schedule.body(i)();
      if (group && (i + 1) % every == 0 && done < syncs) {
        group
            ->allReduce(buffer.data(), buffer.data(), kCount, DType::F32,
                        ReduceOp::Sum)
            ->wait();
        ++done;
      }
    }
  };
  sweep(nullptr, 0); // warm-up
  std::vector<double> base;
  std::vector<std::vector<double>> synced(sweeps.size());
  for (int64_t r = 0; r < timer.repeats(); ++r)
    for (size_t j = 0; j <= sweeps.size(); ++j) {
      timer.barrier();
      double start = now();
      // Several passes per timing: one pass (60-120 ms on 2 cores) is a few
      // of the scheduler's slices, and its loss came out anywhere in 0-1.3.
      for (int pass = 0; pass < kSweepPasses; ++pass)
        if (j == 0)
          sweep(nullptr, 0);
        else
          sweep(groups[j - 1].get(), sweeps[j - 1].syncs);
      double t = timer.span(start, now()) / kSweepPasses;
      (j == 0 ? base : synced[j - 1]).push_back(t);
    }
  for (size_t j = 0; j < sweeps.size(); ++j) {
    SyncSweep &w = sweeps[j];
    w.baseS = medianOf(base);
    w.syncedS = medianOf(synced[j]);
    w.slowdown = syncSlowdownOf(base, synced[j], w.syncs, w.collectiveS);
  }
  return sweeps;
}

double PipelineSharing::halfWaitingSpeedup() const {
  return halfS > 0 ? std::max(1.0, allS / halfS) : 1.0;
}

double PipelineSharing::othersWaitingSpeedup() const {
  return oneS > 0 ? std::max(1.0, allS / oneS) : 1.0;
}

PipelineSharing measurePipelineSharing(CommWorld &world, Timer &timer,
                                       const Schedule &schedule,
                                       size_t kernels) {
  PipelineSharing result;
  const int64_t ranks = world.size(), rank = world.rank();
  if (ranks < 2 || kernels == 0)
    return result;
  std::unique_ptr<Communicator> comm = world.split(0, rank);
  constexpr int64_t kHandoffs = 20;
  constexpr double kBetweenSendsS = 1e-3;
  // Pairs 2i, 2i + 1 (a core's ranks when shard-run pins them, as a pp=2
  // replica's stages): sender, receiver or (the odd rank out) neither.
  const bool sender = rank % 2 == 0 && rank + 1 < ranks,
             receiver = rank % 2 == 1;
  const int64_t peer = sender ? rank + 1 : rank - 1;
  size_t nextKernel = 0;
  auto runFor = [&](double seconds) {
    double until = now() + seconds;
    do {
      schedule.body(nextKernel)();
      nextKernel = (nextKernel + 1) % kernels;
    } while (now() < until);
  };
  auto sweep = [&] {
    for (size_t i = 0; i < kernels; ++i)
      schedule.body(i)();
  };
  // The runtime's wait for one message from `from`.
  double stamp = 0;
  auto receive = [&](int64_t from) {
    comm->exchange({}, {Transfer{from, &stamp, sizeof(stamp)}})->wait();
  };
  const int64_t repeats = timer.repeats();
  std::vector<double> latencies(size_t(repeats * kHandoffs), -1.0);
  std::vector<double> all, halves, ones;
  sweep(); // warm-up
  for (int64_t r = 0; r < repeats; ++r) {
    timer.barrier();
    if (sender) {
      for (int64_t i = 0; i < kHandoffs; ++i) {
        runFor(kBetweenSendsS);
        double sent = now();
        // 8 bytes: the send completes without its receiver (eager).
        comm->exchange({Transfer{peer, &sent, sizeof(sent)}}, {})->wait();
      }
      runFor(kBetweenSendsS);
    } else if (receiver) {
      for (int64_t i = 0; i < kHandoffs; ++i) {
        receive(peer);
        latencies[size_t(r * kHandoffs + i)] = now() - stamp;
      }
    }
    // Every rank running the sweep.
    timer.barrier();
    double start = now();
    sweep();
    all.push_back(timer.span(start, now()));
    // Half running: each pair relays the sweep, in kHandoffs pieces run
    // in turn, as pipeline stages hand over microbatches (a waiting rank
    // takes more of the cores in short waits than in one long one: with 4
    // ranks on 2 cores a relay gained 1.4x, one long wait 2x).
    timer.barrier();
    start = now();
    if (sender || receiver) {
      for (int64_t piece = 0; piece < kHandoffs; ++piece) {
        if ((piece % 2 == 0) != sender) {
          receive(peer);
          continue;
        }
        for (size_t i = size_t(piece) * kernels / kHandoffs,
                    e = size_t(piece + 1) * kernels / kHandoffs;
             i < e; ++i)
          schedule.body(i)();
        double done = now();
        comm->exchange({Transfer{peer, &done, sizeof(done)}}, {})->wait();
      }
    }
    halves.push_back(timer.span(start, now()));
    // One rank running it; all others wait.
    timer.barrier();
    start = now();
    if (rank == 0) {
      sweep();
      double done = now();
      std::vector<Transfer> sends;
      for (int64_t to = 1; to < ranks; ++to)
        sends.push_back(Transfer{to, &done, sizeof(done)});
      comm->exchange(sends, {})->wait();
    } else {
      receive(0);
    }
    ones.push_back(timer.span(start, now()));
  }
  // Every receiver's latencies, to every rank.
  std::vector<double> gathered(latencies.size() * size_t(ranks));
  comm->allGather(latencies.data(), gathered.data(),
                  int64_t(latencies.size() * sizeof(double)))
      ->wait();
  std::vector<double> valid;
  for (double x : gathered)
    if (x >= 0)
      valid.push_back(x);
  if (!valid.empty()) {
    double sum = 0;
    for (double x : valid)
      sum += x;
    result.wakeupMeanS = sum / double(valid.size());
    result.wakeupMedianS = medianOf(valid);
    result.handoffs = int64_t(valid.size());
  }
  result.allS = medianOf(all);
  result.halfS = medianOf(halves);
  result.oneS = medianOf(ones);
  return result;
}

} // namespace autoshard::runtime::calibrate
