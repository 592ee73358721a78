//===- Placement.h - Core placement of oversubscribed ranks -----*- C++ -*-===//
//
// Pins ranks that outnumber the node's cores, one core each, so that ranks
// which hand work to each other (a pipeline replica's stages, neighbouring
// data-parallel ranks) share a core, whichever way the scheduler would
// have placed them (docs/cpu-backend.md, "Core placement").
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

/// `--bind-cores auto`: pins every thread of the calling process to
/// blockCore(order,
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
