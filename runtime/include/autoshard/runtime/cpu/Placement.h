//===- Placement.h - Core placement of oversubscribed ranks -----*- C++ -*-===//
//
// When a node runs more one-thread ranks than it has cores, the kernel's
// scheduler decides which ranks share a core, and it decides differently
// from run to run: on a 2-core machine `dp=4` measured 33 or 38-40 ms per
// step (runs of the same binary), and a pp=2 x dp=2 pipeline 36-52 ms.
// Pinning each rank to a core makes it one choice, and the choice matters:
// ranks that hand work to each other should share a core, so that a hand-off
// is a switch on that core (the sender waits, the receiver runs) rather than
// a wake-up on a core busy with another rank. The stages of a pipeline
// replica alternate; the ranks of a data-parallel ring meet their neighbours
// in every collective. Measured (bench/planner_vs_runtime/README.md, "Core
// placement"): dp=4 33.5 ms with neighbours on a core against 37.9 ms with
// them apart; the pipeline 36.4 ms (spread 1.01x) with each replica on a
// core against 52.8 ms with each stage on one.
//
//===----------------------------------------------------------------------===//
#ifndef AUTOSHARD_RUNTIME_CPU_PLACEMENT_H
#define AUTOSHARD_RUNTIME_CPU_PLACEMENT_H

#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::runtime::cpu {

/// The ids of the cores this process may run on (its affinity mask,
/// sched_getaffinity), increasing; at least one.
std::vector<int> usableCoreIds();

/// The core of the rank at position `order` (0 <= order < ranks) of the
/// placement order, when `ranks` ranks share `cores` (non-empty): contiguous
/// blocks, cores[order * cores.size() / ranks], so consecutive positions
/// share a core and every core gets ranks / cores of them (+-1). Throws
/// std::invalid_argument for an order outside [0, ranks) or no cores.
int blockCore(int64_t order, int64_t ranks, const std::vector<int> &cores);

/// How a rank was placed: `pinned` with its `core`, or why not (`why`);
/// `cores`: how many cores the node's ranks were placed on (the rank's
/// usable cores before pinning).
struct CorePlacement {
  bool pinned = false;
  int core = -1;
  int cores = 0;
  std::string why;
};

/// `--bind-cores auto`: pins the calling process to blockCore(order,
/// localRanks, usableCoreIds()) when the node's `localRanks` one-thread
/// ranks outnumber its usable cores and the job is this node
/// (`localRanks` == `worldRanks`; across nodes the order of a node's own
/// ranks is not known here). `threads` is the kernel threads asked for
/// (--threads; 0: derived, i.e. one per rank when ranks outnumber cores):
/// above 1 nothing is pinned. "none" never pins. Throws
/// std::invalid_argument for another mode and std::runtime_error when
/// sched_setaffinity fails (naming the core and the reason).
CorePlacement placeRank(const std::string &mode, int64_t order,
                        int64_t localRanks, int64_t worldRanks,
                        int64_t threads);

/// One line for the run's banner, e.g. "pinned to core 1 (4 ranks on 2
/// cores: --bind-cores auto)" or "not pinned (2 ranks on 2 cores)".
std::string describe(const CorePlacement &placement);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_PLACEMENT_H
