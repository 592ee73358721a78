//===- ToolMain.h - main() of a runtime tool that may run on N ranks ------===//
//
// Shared by shard-reshard-check and shard-calibrate: with N > 1 ranks and no
// launcher, re-execute under `mpirun -n N` on this node (as shard-run
// does); under a launcher, join the MPI world; otherwise run on a one-rank
// world. An exception is reported as "TOOL: error: MESSAGE" (with the rank
// when the world has several, which is then aborted) and exit status 1.
// SIGTERM, SIGINT or SIGHUP: rank 0 names the signal (under mpirun the
// launcher passes each on as SIGTERM) before the process
// ends by it (what is written, e.g. shard-calibrate's --out, is written
// whole or not at all).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TOOLS_TOOLMAIN_H
#define AUTOSHARD_RUNTIME_TOOLS_TOOLMAIN_H

#include "autoshard/runtime/Communicator.h"
#if AUTOSHARD_HAVE_MPI
#include "autoshard/runtime/mpi/MpiWorld.h"
#endif

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace autoshard::runtime::tools {

namespace detail {
/// The tool's name and this process's rank, for the stop-signal message.
inline const char *stopTool = "tool";
inline volatile std::sig_atomic_t stopRank = 0, stopUnderLauncher = 0;

/// SIGTERM, SIGINT, SIGHUP: rank 0 says which signal stopped the tool
/// (otherwise a job stopped under mpirun ends with status 1 and no word),
/// then the default action ends the process with that signal.
inline void onStopSignal(int sig) {
  if (stopRank == 0) {
    const char *name = sig == SIGTERM  ? "SIGTERM"
                       : sig == SIGINT ? "SIGINT"
                                       : "SIGHUP";
    // mpirun passes SIGINT, SIGHUP and SIGTERM on to the ranks as SIGTERM.
    const char *via = stopUnderLauncher ? " (from the launcher)" : "";
    for (const char *part : {stopTool, ": stopped by ", name, via,
                             " before it finished; nothing was written\n"})
      if (::write(STDERR_FILENO, part, std::strlen(part)) < 0)
        break;
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
} // namespace detail

/// Runs `body` on the job's world: `ranks(argc, argv)` parses the options
/// and returns the rank count asked for (throwing std::invalid_argument on
/// a bad option), `body(world)` does the work and returns the exit status.
inline int runOnWorld(const char *tool, int argc, char **argv,
                      const std::function<int64_t()> &ranks,
                      const std::function<int(CommWorld &)> &body) {
  std::unique_ptr<CommWorld> world;
  (void)argc; // used by the MPI launch only
  (void)argv;
  try {
    int64_t n = ranks();
    if (!startedByLauncher() && n > 1) {
#if AUTOSHARD_HAVE_MPI
      execUnderMpirun(static_cast<int>(n), argc, argv);
#else
      throw std::runtime_error("-n " + std::to_string(n) +
                               ": built without MPI");
#endif
    }
#if AUTOSHARD_HAVE_MPI
    if (startedByLauncher())
      world = createMpiWorld(&argc, &argv);
#endif
    if (!world)
      world = createLocalWorld();
    detail::stopTool = tool;
    detail::stopRank = static_cast<std::sig_atomic_t>(world->rank());
    detail::stopUnderLauncher = startedByLauncher();
    for (int sig : {SIGTERM, SIGINT, SIGHUP})
      std::signal(sig, detail::onStopSignal);
    return body(*world);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    if (world && world->size() > 1) {
      std::fprintf(stderr, "%s: error: rank %lld: %s\n", tool,
                   static_cast<long long>(world->rank()), e.what());
      std::fflush(stderr);
      world->abort(1);
    }
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  }
}

} // namespace autoshard::runtime::tools

#endif // AUTOSHARD_RUNTIME_TOOLS_TOOLMAIN_H
