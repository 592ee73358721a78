//===- Placement.cpp - Core placement of oversubscribed ranks -------------===//

#include "autoshard/runtime/cpu/Placement.h"

#include <dirent.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace autoshard::runtime::cpu {

std::vector<int> usableCoreIds() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        ids.push_back(c);
  if (ids.empty())
    ids.push_back(0);
  return ids;
}

int blockCore(int64_t order, int64_t ranks, const std::vector<int> &cores) {
  if (cores.empty())
    throw std::invalid_argument("core placement: no cores to place on");
  if (ranks < 1 || order < 0 || order >= ranks)
    throw std::invalid_argument("core placement: position " +
                                std::to_string(order) + " is not one of " +
                                std::to_string(ranks) + " ranks");
  return cores[size_t(order * int64_t(cores.size()) / ranks)];
}

CorePlacement placeRank(const std::string &mode, int64_t order,
                        int64_t localRanks, int64_t worldRanks,
                        int64_t threads) {
  if (mode != "auto" && mode != "none")
    throw std::invalid_argument("--bind-cores expects 'auto' or 'none', "
                                "found '" +
                                mode + "'");
  CorePlacement p;
  const std::vector<int> cores = usableCoreIds();
  p.cores = int(cores.size());
  const std::string count = std::to_string(localRanks) +
                            (localRanks == 1 ? " rank on " : " ranks on ") +
                            std::to_string(cores.size()) +
                            (cores.size() == 1 ? " core" : " cores");
  if (mode == "none")
    p.why = "--bind-cores none";
  else if (localRanks <= int64_t(cores.size()))
    p.why = count;
  else if (localRanks != worldRanks)
    p.why = "the job spans nodes";
  else if (threads > 1)
    p.why = "--threads " + std::to_string(threads);
  if (!p.why.empty())
    return p;
  p.core = blockCore(order, localRanks, cores);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(p.core, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    throw std::runtime_error("--bind-cores auto: cannot pin this rank to "
                             "core " +
                             std::to_string(p.core) + ": " +
                             std::strerror(errno));
  // sched_setaffinity(0) pins the calling thread only; the threads started
  // before it (the communication thread, MPI's) go to the same core.
  if (DIR *tasks = opendir("/proc/self/task")) {
    while (dirent *e = readdir(tasks))
      if (pid_t tid = pid_t(std::atoi(e->d_name)); tid > 0)
        sched_setaffinity(tid, sizeof(set), &set); // a thread may have ended
    closedir(tasks);
  }
  p.pinned = true;
  p.why = count;
  return p;
}

std::string describe(const CorePlacement &p) {
  if (p.pinned)
    return "pinned to core " + std::to_string(p.core) + " (" + p.why +
           ": --bind-cores auto)";
  return "not pinned (" + p.why + ")";
}

} // namespace autoshard::runtime::cpu
