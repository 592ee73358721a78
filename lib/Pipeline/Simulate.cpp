//===- Simulate.cpp - Unit-cost pipeline schedule simulator ---------------===//

#include "autoshard/Pipeline/Simulate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

using namespace autoshard::pipeline;
using Kind = PipelineOp::Kind;

double OpCosts::of(Kind kind) const {
  switch (kind) {
  case Kind::F:
    return forward;
  case Kind::B:
    return backward;
  case Kind::I:
    return inputGrad;
  case Kind::W:
    return weightGrad;
  }
  return 0;
}

double ProcessorSharing::wakeupScale(double busyFraction) const {
  return 2 * std::clamp(busyFraction, 0.0, 1.0);
}

std::vector<double>
ProcessorSharing::fairSpeeds(const std::vector<double> &busy) const {
  const int64_t p = busy.size();
  double mean = 0;
  for (double b : busy)
    mean += b / double(p);
  // The node's capacity for this pipeline, in ranks' shares: all of it
  // while every rank runs, less what the waiting ones poll away.
  double capacity = double(p) * mean / (mean + (1 - mean) * waitingUse);
  // Max-min fair (water-filling): a rank that asks for less than the
  // level (its busy fraction at full speed) gets it; the others share
  // the rest equally.
  std::vector<int64_t> order(p);
  for (int64_t r = 0; r < p; ++r)
    order[r] = r;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return busy[a] < busy[b]; });
  std::vector<double> speeds(p, 1.0);
  double left = capacity;
  for (int64_t i = 0; i < p; ++i) {
    int64_t r = order[i];
    double level = left / double(p - i);
    double use = std::min(busy[r] * maxSpeedup, level);
    speeds[r] = std::max(1.0, use / busy[r]);
    left -= use;
  }
  return speeds;
}

namespace {

/// (rank, position in the rank's program order).
using OpRef = std::pair<int64_t, int64_t>;

/// The first occurrence of each (stage, microbatch, kind) in the schedule.
class OpIndex {
public:
  explicit OpIndex(const PipelineSchedule &schedule) {
    for (int64_t r = 0, e = schedule.rankOrders.size(); r < e; ++r) {
      const auto &order = schedule.rankOrders[r];
      for (int64_t i = 0, n = order.size(); i < n; ++i)
        first.insert({key(order[i]), {r, i}});
    }
  }
  std::optional<OpRef> find(Kind kind, int64_t stage, int64_t mb) const {
    auto it = first.find(key({kind, stage, mb}));
    if (it == first.end())
      return std::nullopt;
    return it->second;
  }

private:
  using Key = std::tuple<int64_t, int64_t, int>;
  static Key key(const PipelineOp &op) {
    return {op.stage, op.microbatch, static_cast<int>(op.kind)};
  }
  std::map<Key, OpRef> first;
};

/// A data predecessor of an op: where it runs, or (when absent from the
/// schedule) its name.
struct DataPred {
  std::optional<OpRef> at;
  std::string name;
};

/// The data predecessors of `op` (see simulateSchedule).
std::vector<DataPred> dataPredecessors(const OpIndex &index,
                                       const PipelineOp &op,
                                       int64_t numStages) {
  std::vector<DataPred> preds;
  auto add = [&](Kind kind, int64_t stage) {
    preds.push_back({index.find(kind, stage, op.microbatch),
                     formatOp({kind, stage, op.microbatch})});
  };
  int64_t s = op.stage;
  switch (op.kind) {
  case Kind::F:
    if (s > 0)
      add(Kind::F, s - 1);
    break;
  case Kind::B:
  case Kind::I:
    add(Kind::F, s);
    if (s + 1 < numStages) {
      std::optional<OpRef> b = index.find(Kind::B, s + 1, op.microbatch);
      if (b)
        preds.push_back({b, ""});
      else
        preds.push_back({index.find(Kind::I, s + 1, op.microbatch),
                         formatOp({Kind::B, s + 1, op.microbatch}) + "/" +
                             formatOp({Kind::I, s + 1, op.microbatch})});
    }
    break;
  case Kind::W:
    add(Kind::I, s);
    break;
  }
  return preds;
}

std::string describeRef(const PipelineSchedule &schedule, OpRef ref) {
  return formatOp(schedule.rankOrders[ref.first][ref.second]) + " (rank " +
         std::to_string(ref.first) + " op #" + std::to_string(ref.second) + ")";
}

} // namespace

namespace {
/// Peak in-flight activations per rank, in program order (static).
std::vector<int64_t> peakActivationsOf(const PipelineSchedule &schedule) {
  std::vector<int64_t> peak(schedule.rankOrders.size(), 0);
  for (size_t r = 0; r < peak.size(); ++r) {
    int64_t live = 0;
    for (const PipelineOp &op : schedule.rankOrders[r]) {
      if (op.kind == Kind::F)
        ++live;
      else if (op.kind == Kind::B || op.kind == Kind::W)
        --live;
      peak[r] = std::max(peak[r], live);
    }
  }
  return peak;
}

/// What both simulations track: which ops ran and when, each rank's next
/// op, and the result they fill.
struct Progress {
  const PipelineSchedule &schedule;
  const SimulationOptions &options;
  const int64_t p;
  OpIndex index;
  SimulationResult result;
  std::vector<std::vector<char>> done;
  std::vector<std::vector<double>> endTime;
  std::vector<int64_t> next;
  std::vector<double> rankFree;

  Progress(const PipelineSchedule &schedule, const SimulationOptions &options)
      : schedule(schedule), options(options), p(schedule.rankOrders.size()),
        index(schedule), done(p), endTime(p), next(p, 0), rankFree(p, 0) {
    for (int64_t r = 0; r < p; ++r) {
      done[r].assign(schedule.rankOrders[r].size(), 0);
      endTime[r].assign(schedule.rankOrders[r].size(), 0);
    }
    result.peakActivations = peakActivationsOf(schedule);
    result.busy.assign(p, 0);
    result.running.assign(p, 0);
    result.timeline.assign(p, {});
  }

  double costOf(const PipelineOp &op) const {
    if (op.stage >= 0 &&
        op.stage < static_cast<int64_t>(options.stageCosts.size()))
      return options.stageCosts[op.stage].of(op.kind);
    return options.costs.of(op.kind);
  }
  const PipelineOp &head(int64_t r) const {
    return schedule.rankOrders[r][size_t(next[r])];
  }

  /// When rank r's head op has its rank free and all its data (a transfer
  /// from another rank arrives p2pLatency after its op), and whether r
  /// was already waiting for some of it; nothing while a predecessor has
  /// not run or r has no op left.
  std::optional<std::pair<double, bool>> dataAt(int64_t r) const {
    if (next[r] >= static_cast<int64_t>(schedule.rankOrders[r].size()))
      return std::nullopt;
    double at = rankFree[r];
    bool waited = false;
    for (const DataPred &pred :
         dataPredecessors(index, head(r), schedule.numStages)) {
      if (!pred.at || !done[pred.at->first][pred.at->second])
        return std::nullopt;
      auto [from, i] = *pred.at;
      double arrival = endTime[from][i];
      if (from != r) {
        arrival += options.p2pLatency;
        waited |= arrival > rankFree[r];
      }
      at = std::max(at, arrival);
    }
    return std::make_pair(at, waited);
  }

  /// Records rank r's head op as run from `start` to `end`.
  void finish(int64_t r, double start, double end) {
    const PipelineOp &op = head(r);
    done[r][size_t(next[r])] = 1;
    endTime[r][size_t(next[r])] = end;
    rankFree[r] = end;
    result.busy[r] += costOf(op);
    result.running[r] += end - start;
    result.timeline[r].push_back({op, start, end});
    result.makespan = std::max(result.makespan, end);
    ++next[r];
  }

  /// Fills the bubble fractions from the busy times and makespan, and the
  /// blocked ops and deadlock report of the ranks whose program did not
  /// finish; returns the result.
  SimulationResult summarize() {
    double busy = 0, idle = 0;
    for (int64_t r = 0; r < p; ++r) {
      busy += result.busy[r];
      idle += result.makespan - result.busy[r];
    }
    result.idleOverBusy = busy > 0 ? idle / busy : 0;
    result.idleOverMakespan =
        result.makespan > 0 ? idle / (p * result.makespan) : 0;

    for (int64_t r = 0; r < p; ++r) {
      const auto &order = schedule.rankOrders[r];
      if (next[r] == static_cast<int64_t>(order.size()))
        continue;
      BlockedOp blocked{r, next[r], order[next[r]], ""};
      for (const DataPred &pred :
           dataPredecessors(index, blocked.op, schedule.numStages)) {
        if (!pred.at) {
          blocked.waitsFor = pred.name + ", which no rank runs";
          break;
        }
        if (!done[pred.at->first][pred.at->second]) {
          blocked.waitsFor = describeRef(schedule, *pred.at) + ", not run";
          break;
        }
      }
      result.blocked.push_back(std::move(blocked));
    }
    result.deadlocked = !result.blocked.empty();
    if (result.deadlocked) {
      std::string report = "deadlock:";
      for (const BlockedOp &blocked : result.blocked)
        report += " rank " + std::to_string(blocked.rank) + " blocked at op #" +
                  std::to_string(blocked.index) + " " + formatOp(blocked.op) +
                  ", waiting for " + blocked.waitsFor + ";";
      if (std::optional<DependencyCycle> cycle = findDependencyCycle(schedule))
        report += " dependency cycle: " + cycle->description;
      else
        report.pop_back();
      result.deadlockReport = report;
    }
    return std::move(result);
  }
};

SimulationResult simulateOnce(const PipelineSchedule &schedule,
                              const SimulationOptions &options,
                              const std::vector<double> &speeds) {
  Progress run(schedule, options);
  // List scheduling: run every rank's head op as soon as its rank is free
  // and its data is there (a receiver already waiting runs only when
  // woken), until no rank can move.
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < run.p; ++r)
      while (std::optional<std::pair<double, bool>> ready = run.dataAt(r)) {
        double start =
            ready->first + (ready->second ? options.wakeupLatency : 0);
        run.finish(r, start, start + run.costOf(run.head(r)) / speeds[r]);
        progress = true;
      }
  }
  return run.summarize();
}

/// simulateSchedule for ranks pinned to cores (ProcessorSharing::pinned):
/// processor sharing per core, event by event. While n of this replica's
/// ranks on a core run, each op advances at ranksPerCore / (copies * n)
/// of its cost per unit time (its cost is its time with every rank of the
/// node running, ranksPerCore to a core). A receiver that waits when its
/// data arrives starts wakeupLatency later if another rank of its core is
/// running then (that rank keeps the core to the end of its time slice),
/// or as soon as no rank of its core runs; at once on an idle core.
SimulationResult simulatePinned(const PipelineSchedule &schedule,
                                const SimulationOptions &options) {
  const ProcessorSharing &share = options.sharing;
  Progress run(schedule, options);
  const int64_t p = run.p;
  std::vector<double> remaining(p, 0), startedAt(p, 0);
  std::vector<char> running(p, 0);
  // A rank woken late: when it may start its head op (-1: not decided).
  std::vector<double> wakesAt(p, -1);
  auto coreOf = [&](int64_t r) {
    // A rank coreOf does not name runs on a core of its own.
    return r < int64_t(share.coreOf.size()) ? share.coreOf[size_t(r)] : -1 - r;
  };
  // Of rank r's core, how many ranks (r included when it runs) run.
  auto runningOn = [&](int64_t r) {
    int64_t n = 0;
    for (int64_t q = 0; q < p; ++q)
      n += running[q] && coreOf(q) == coreOf(r);
    return n;
  };
  double now = 0;
  for (;;) {
    // Start every op that can start now: first those of ranks that run
    // on (their data came while they ran), then the receivers that waited,
    // which are woken late where their core is busy.
    auto tryStart = [&](int64_t r, bool receivers) {
      if (running[r])
        return false;
      std::optional<std::pair<double, bool>> ready = run.dataAt(r);
      if (!ready || ready->first > now + 1e-15 || ready->second != receivers)
        return false;
      // Woken late only while its core stays busy: once no rank of the
      // core runs, the scheduler runs the waiting rank at once.
      const bool busy = runningOn(r) > 0;
      if (wakesAt[r] < 0)
        wakesAt[r] = receivers && busy ? now + options.wakeupLatency : now;
      else if (!busy)
        wakesAt[r] = now;
      if (wakesAt[r] > now + 1e-15)
        return false;
      running[r] = 1;
      wakesAt[r] = -1;
      startedAt[r] = now;
      remaining[r] = run.costOf(run.head(r));
      return true;
    };
    for (bool started = true; started;) {
      started = false;
      for (bool receivers : {false, true})
        for (int64_t r = 0; r < p; ++r)
          started |= tryStart(r, receivers);
    }
    // Rates under the current sharing of each core.
    std::vector<double> rate(p, 0);
    for (int64_t r = 0; r < p; ++r)
      if (running[r])
        rate[r] = share.ranksPerCore / (share.copies * double(runningOn(r)));
    // The next event: an op ends, data arrives, a woken rank starts.
    double step = std::numeric_limits<double>::infinity();
    for (int64_t r = 0; r < p; ++r) {
      if (running[r]) {
        step = std::min(step, remaining[r] / rate[r]);
        continue;
      }
      if (wakesAt[r] >= 0)
        step = std::min(step, wakesAt[r] - now);
      else if (std::optional<std::pair<double, bool>> ready = run.dataAt(r))
        step = std::min(step, ready->first - now);
    }
    if (!std::isfinite(step))
      break;
    step = std::max(step, 0.0);
    now += step;
    for (int64_t r = 0; r < p; ++r) {
      if (!running[r])
        continue;
      remaining[r] -= rate[r] * step;
      if (remaining[r] > 1e-12 * std::max(1.0, run.costOf(run.head(r))))
        continue;
      running[r] = 0;
      run.finish(r, startedAt[r], now);
    }
  }
  return run.summarize();
}
} // namespace

SimulationResult
autoshard::pipeline::simulateSchedule(const PipelineSchedule &schedule,
                                      const SimulationOptions &options) {
  const int64_t p = schedule.rankOrders.size();
  const ProcessorSharing &share = options.sharing;
  if (share.pinned() && p > 0)
    return simulatePinned(schedule, options);
  std::vector<double> speeds(p, 1.0);
  if ((!share.shares() && options.wakeupLatency <= 0) || p == 0)
    return simulateOnce(schedule, options, speeds);
  // A fixed point of the ranks' busy fractions with their speeds (their
  // fair share of the node, ProcessorSharing::fairSpeeds; 1 where nothing
  // is shared) and with the wake-up latency at the mean busy fraction
  // (wakeupScale): simulate, read the busy fractions, move halfway to
  // what they imply (damped), until nothing moves. Starts where the
  // latency was measured, half the ranks busy; the last simulation always
  // has the final speeds and latency.
  double mean = 0.5;
  auto simulateAt = [&] {
    SimulationOptions at = options;
    at.wakeupLatency = options.wakeupLatency * share.wakeupScale(mean);
    return simulateOnce(schedule, at, speeds);
  };
  SimulationResult sim = simulateAt();
  for (int iteration = 0; iteration < 100; ++iteration) {
    if (sim.deadlocked || sim.makespan <= 0)
      return sim;
    std::vector<double> busy(p);
    double simMean = 0;
    for (int64_t r = 0; r < p; ++r) {
      busy[r] = std::clamp(sim.running[r] / sim.makespan, 1e-6, 1.0);
      simMean += busy[r] / double(p);
    }
    std::vector<double> fair =
        share.shares() ? share.fairSpeeds(busy) : std::vector<double>(p, 1.0);
    double moved = std::abs(simMean - mean);
    mean = (mean + simMean) / 2;
    for (int64_t r = 0; r < p; ++r) {
      double next = (speeds[r] + fair[r]) / 2;
      moved = std::max(moved, std::abs(next - speeds[r]) / speeds[r]);
      speeds[r] = next;
    }
    sim = simulateAt();
    if (moved < 1e-4)
      break;
  }
  return sim;
}

std::optional<DependencyCycle>
autoshard::pipeline::findDependencyCycle(const PipelineSchedule &schedule) {
  int64_t p = schedule.rankOrders.size();
  OpIndex index(schedule);
  // Flat node ids: offset[r] + position.
  std::vector<int64_t> offset(p + 1, 0);
  for (int64_t r = 0; r < p; ++r)
    offset[r + 1] = offset[r] + schedule.rankOrders[r].size();
  int64_t numNodes = offset[p];
  std::vector<OpRef> refOf(numNodes);
  for (int64_t r = 0; r < p; ++r)
    for (int64_t i = 0, e = schedule.rankOrders[r].size(); i < e; ++i)
      refOf[offset[r] + i] = {r, i};

  // dependsOn[n]: the nodes that must finish before n.
  std::vector<std::vector<int64_t>> dependsOn(numNodes);
  for (int64_t n = 0; n < numNodes; ++n) {
    auto [r, i] = refOf[n];
    if (i > 0)
      dependsOn[n].push_back(n - 1);
    for (const DataPred &pred :
         dataPredecessors(index, schedule.rankOrders[r][i], schedule.numStages))
      if (pred.at)
        dependsOn[n].push_back(offset[pred.at->first] + pred.at->second);
  }

  // Iterative DFS along dependsOn; a back edge closes a cycle.
  enum : char { White, Grey, Black };
  std::vector<char> color(numNodes, White);
  std::vector<std::pair<int64_t, size_t>> stack; // (node, next edge)
  for (int64_t root = 0; root < numNodes; ++root) {
    if (color[root] != White)
      continue;
    stack.push_back({root, 0});
    color[root] = Grey;
    while (!stack.empty()) {
      auto &[node, edge] = stack.back();
      if (edge == dependsOn[node].size()) {
        color[node] = Black;
        stack.pop_back();
        continue;
      }
      int64_t succ = dependsOn[node][edge++];
      if (color[succ] == White) {
        color[succ] = Grey;
        stack.push_back({succ, 0});
        continue;
      }
      if (color[succ] != Grey)
        continue;
      // The grey path from succ to the top depends on itself; reversed, it
      // lists the ops in "must finish before" order.
      DependencyCycle cycle;
      auto it = std::find_if(stack.begin(), stack.end(),
                             [&](const auto &e) { return e.first == succ; });
      for (auto jt = stack.end(); jt != it;) {
        --jt;
        cycle.ops.push_back(refOf[jt->first]);
      }
      for (const OpRef &ref : cycle.ops)
        cycle.description += describeRef(schedule, ref) + " -> ";
      cycle.description += describeRef(schedule, cycle.ops.front());
      return cycle;
    }
  }
  return std::nullopt;
}
