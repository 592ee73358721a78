//===- Calibrate.cpp - shard-calibrate's shared timing, fits and output ---===//

#include "Calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

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

double Timer::median(const std::function<void()> &body) {
  constexpr double batchSeconds = 0.02;
  body();
  wait();
  double t0 = now();
  body();
  wait();
  double one = std::max(1e-9, now() - t0);
  double calls =
      max(std::min(1e5, std::max(1.0, std::ceil(batchSeconds / one))));
  std::vector<double> times;
  for (int64_t r = 0; r < count; ++r) {
    barrier();
    double start = now();
    for (int64_t c = 0; c < int64_t(calls); ++c)
      body();
    wait();
    times.push_back(max((now() - start) / calls));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void Timer::barrier() {
  double x = 0;
  all.allReduce(&x, &x, 1, DType::F64, ReduceOp::Sum)->wait();
}

double Timer::max(double x) {
  all.allReduce(&x, &x, 1, DType::F64, ReduceOp::Max)->wait();
  return x;
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

double GemmModel::time(const GemmPoint &g, double efficiency, double k0) const {
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
  return std::max(compute, bytes / bandwidth) + fixed;
}

GemmFit fitGemm(const std::vector<GemmPoint> &points, const GemmModel &model) {
  GemmFit best;
  double bestErr = 1e300;
  for (double eff = 0.30; eff <= 1.0001; eff += 0.02)
    for (double k0 = 0; k0 <= 512; k0 += 8) {
      double err = 0;
      for (const GemmPoint &g : points)
        err += std::fabs(std::log(model.time(g, eff, k0) / g.seconds));
      if (err < bestErr)
        bestErr = err, best.efficiency = eff, best.k0 = k0;
    }
  best.meanAbsLogError = bestErr / double(std::max<size_t>(1, points.size()));
  return best;
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
  // Columns: c, alpha, invB.
  std::vector<bool> active = {true, true, true};
  std::vector<double> coef(3, 0.0);
  for (int round = 0; round < 3; ++round) {
    double a[3][3] = {}, b[3] = {};
    for (const CommPoint &p : points) {
      auto [steps, frac] = ringTerms(p.kind, p.group);
      double row[3] = {1, steps, frac * p.bytes};
      for (int i = 0; i < 3; ++i) {
        row[i] = active[i] ? row[i] / p.seconds : 0;
      }
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
          a[i][j] += row[i] * row[j];
        b[i] += row[i];
      }
    }
    for (int i = 0; i < 3; ++i)
      if (!active[i])
        a[i][i] = 1, b[i] = 0;
    // Gaussian elimination with partial pivoting.
    for (int c = 0; c < 3; ++c) {
      int piv = c;
      for (int r = c + 1; r < 3; ++r)
        if (std::fabs(a[r][c]) > std::fabs(a[piv][c]))
          piv = r;
      std::swap(a[c], a[piv]);
      std::swap(b[c], b[piv]);
      if (std::fabs(a[c][c]) < 1e-300)
        throw std::runtime_error("collective fit: singular system");
      for (int r = 0; r < 3; ++r) {
        if (r == c)
          continue;
        double f = a[r][c] / a[c][c];
        for (int j = 0; j < 3; ++j)
          a[r][j] -= f * a[c][j];
        b[r] -= f * b[c];
      }
    }
    bool clamped = false;
    for (int i = 0; i < 3; ++i) {
      coef[i] = b[i] / a[i][i];
      if (active[i] && coef[i] < 0) {
        active[i] = false;
        coef[i] = 0;
        clamped = true;
      }
    }
    if (!clamped)
      break;
  }
  if (coef[2] <= 0)
    throw std::runtime_error("collective fit: no positive bandwidth term");
  return coef;
}

std::vector<CommPoint>
measureCollectives(CommWorld &world, Timer &timer,
                   const std::vector<double> &sizes,
                   const std::function<void *(int64_t)> &alloc) {
  std::vector<CommPoint> comms;
  const int64_t ranks = world.size();
  for (int64_t g = 2; g <= ranks; g *= 2) {
    std::unique_ptr<Communicator> group =
        world.split(world.rank() / g, world.rank() % g);
    for (double bytes : sizes) {
      int64_t count = int64_t(bytes / 4);
      void *send = alloc(int64_t(bytes) * g), *recv = alloc(int64_t(bytes) * g);
      auto time = [&](const std::string &kind,
                      const std::function<void()> &op) {
        comms.push_back({kind, g, bytes, timer.median(op)});
      };
      time("all_reduce", [&] {
        group->allReduce(send, recv, count, DType::F32, ReduceOp::Sum)->wait();
      });
      time("all_gather",
           [&] { group->allGather(send, recv, int64_t(bytes) / g)->wait(); });
      time("reduce_scatter", [&] {
        group->reduceScatter(send, recv, count / g, DType::F32, ReduceOp::Sum)
            ->wait();
      });
      time("all_to_all",
           [&] { group->allToAll(send, recv, int64_t(bytes) / g)->wait(); });
      if (g == 2)
        time("p2p", [&] {
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
  return comms;
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

int writeCluster(const nlohmann::json &cluster, const Options &opts) {
  std::string text = cluster.dump(2) + "\n";
  if (opts.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::ofstream file(opts.out);
  if (!file)
    throw std::runtime_error("cannot write '" + opts.out + "'");
  file << text;
  return file ? 0 : 1;
}

} // namespace autoshard::runtime::calibrate
