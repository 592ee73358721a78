//===- Preemption.cpp - Stop at a step boundary on a signal ---------------===//

#include "Preemption.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

volatile std::sig_atomic_t received = 0; // the first signal number

extern "C" void onRankSignal(int sig) {
  if (received == 0)
    received = sig;
}

volatile std::sig_atomic_t forwarded = 0;
volatile pid_t child = -1;

extern "C" void onLauncherSignal(int sig) {
  if (child <= 0)
    return;
  bool first = forwarded++ == 0;
  // write(2) is async-signal-safe; printf is not.
  const char *name = sig == SIGTERM  ? "SIGTERM"
                     : sig == SIGINT ? "SIGINT"
                                     : "SIGUSR1";
  const char *what = first ? " received: the ranks checkpoint and stop at the "
                             "next step (again: stop now)\n"
                           : " received again: stopping the job now\n";
  for (const char *part : {"shard-run: ", name, what}) {
    ssize_t ignored = ::write(2, part, std::strlen(part));
    (void)ignored;
  }
  ::kill(child, first ? SIGUSR1 : SIGTERM);
}

void install(void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1})
    sigaction(sig, &sa, nullptr);
}

} // namespace

PreemptionWatch::PreemptionWatch() { install(onRankSignal); }

bool PreemptionWatch::requested(const Executor &executor) const {
  int32_t mine = received != 0 ? 1 : 0, any = mine;
  CommContext *comm = executor.comm();
  if (comm && comm->world().size() > 1)
    comm->all().allReduce(&mine, &any, 1, DType::I32, ReduceOp::Max)->wait();
  return any != 0;
}

std::string PreemptionWatch::signalName() const {
  switch (received) {
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGUSR1:
    // Under `shard-run -n N` a SIGTERM or SIGINT to the launcher arrives
    // as SIGUSR1 (see the file comment of Preemption.h).
    if (const char *env = std::getenv("AUTOSHARD_SIGNALS_FORWARDED");
        env && *env == '1')
      return "a signal to shard-run (forwarded to the ranks as SIGUSR1)";
    return "SIGUSR1";
  case 0:
    return "";
  }
  return "signal " + std::to_string(received);
}

int runForwardingSignals(const std::vector<std::string> &args) {
  std::vector<char *> cargs;
  for (const std::string &a : args)
    cargs.push_back(const_cast<char *>(a.c_str()));
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  install(onLauncherSignal);
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot fork to run '") + args[0] +
                             "': " + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0); // the terminal's Ctrl-C reaches us, not mpirun
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGTERM, SIGINT, SIGUSR1})
      sigaction(sig, &sa, nullptr);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr,
                 "shard-run: error: cannot run '%s': %s (install openmpi-bin, "
                 "or set AUTOSHARD_MPIRUN)\n",
                 cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error(std::string("waiting for '") + args[0] +
                               "': " + std::strerror(errno));
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace autoshard::shardrun
