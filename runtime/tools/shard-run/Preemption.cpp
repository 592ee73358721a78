//===- Preemption.cpp - Stop at a step boundary on a signal ---------------===//

#include "Preemption.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

volatile std::sig_atomic_t received = 0; // the first signal number

extern "C" void onRankSignal(int sig) {
  if (received == 0)
    received = sig;
}

volatile std::sig_atomic_t forwarded = 0;
volatile std::sig_atomic_t pending = 0;    // first signal held back
volatile std::sig_atomic_t ranksReady = 0; // every rank has its watch
volatile pid_t child = -1;

extern "C" void onLauncherSignal(int sig) {
  if (child <= 0)
    return;
  bool first = forwarded++ == 0;
  // write(2) is async-signal-safe; printf is not.
  const char *name = sig == SIGTERM  ? "SIGTERM"
                     : sig == SIGINT ? "SIGINT"
                     : sig == SIGHUP ? "SIGHUP"
                                     : "SIGUSR1";
  const char *what = first ? " received: the ranks checkpoint and stop at the "
                             "next step (again: stop now)\n"
                           : " received again: stopping the job now\n";
  for (const char *part : {"shard-run: ", name, what}) {
    ssize_t ignored = ::write(2, part, std::strlen(part));
    (void)ignored;
  }
  // A rank that has not installed its watch yet would die of SIGUSR1:
  // the first signal waits (in runForwardingSignals) until all have.
  if (first && !ranksReady) {
    pending = 1;
    return;
  }
  ::kill(child, first ? SIGUSR1 : SIGTERM);
}

void install(void (*handler)(int)) {
  // The handler runs on a stack of its own: a signal frame pushed on the
  // interrupted thread's stack may overwrite what JIT-generated kernels
  // (oneDNN's) keep below their stack pointer.
  static std::vector<char> altStack(1 << 16);
  stack_t ss{};
  ss.ss_sp = altStack.data();
  ss.ss_size = altStack.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_ONSTACK;
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGHUP})
    sigaction(sig, &sa, nullptr);
}

/// Whether every one of `ranks` ranks has created its ready file.
bool allReady(const std::string &prefix, int64_t ranks) {
  for (int64_t r = 0; r < ranks; ++r)
    if (::access((prefix + std::to_string(r)).c_str(), F_OK) != 0)
      return false;
  return true;
}

} // namespace

PreemptionWatch::PreemptionWatch(int64_t rank) {
  install(onRankSignal);
  // Tell the launcher this rank can now take a forwarded signal.
  if (const char *prefix = std::getenv("AUTOSHARD_READY_PREFIX");
      prefix && *prefix) {
    std::string path = prefix + std::to_string(rank);
    int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
    if (fd >= 0)
      ::close(fd);
  }
}

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
  case SIGHUP:
    return "SIGHUP";
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

int runForwardingSignals(const std::vector<std::string> &args,
                         const std::string &readyPrefix, int64_t ranks) {
  std::vector<char *> cargs;
  for (const std::string &a : args)
    cargs.push_back(const_cast<char *>(a.c_str()));
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  install(onLauncherSignal);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot fork to run '") + args[0] +
                             "': " + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0); // the terminal's Ctrl-C reaches us, not mpirun
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGHUP})
      sigaction(sig, &sa, nullptr);
    // If the launcher dies (SIGKILL, the OOM killer), mpirun gets SIGTERM
    // and ends the ranks: no job left running unwatched, writing into
    // --save-dir.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) // it died before prctl took effect
      ::_exit(1);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr,
                 "shard-run: error: cannot run '%s': %s (install openmpi-bin, "
                 "or set AUTOSHARD_MPIRUN)\n",
                 cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  child = pid;
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, ranksReady ? 0 : WNOHANG);
    if (done == pid)
      break;
    if (done < 0 && errno != EINTR)
      throw std::runtime_error(std::string("waiting for '") + args[0] +
                               "': " + std::strerror(errno));
    if (!ranksReady && allReady(readyPrefix, ranks)) {
      ranksReady = 1;
      if (pending && forwarded == 1)
        ::kill(pid, SIGUSR1); // the signal held back until now
    }
    if (!ranksReady)
      ::usleep(20000);
  }
  for (int64_t r = 0; r < ranks; ++r)
    ::unlink((readyPrefix + std::to_string(r)).c_str());
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace autoshard::shardrun
