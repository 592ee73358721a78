//===- Preemption.cpp - Stop at a step boundary on a signal ---------------===//

#include "Preemption.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

volatile std::sig_atomic_t received = 0; // the first signal number

// This rank's status file (runForwardingSignals reads it), or -1. Layout:
// bytes [0, 48) "PID STEPS_DONE" padded with blanks, byte 48 the state
// (R running, D done, F ended with its own error message), byte 49 'T' once
// a signal arrived, byte 63 a newline.
int statusFd = -1;
constexpr int kStatusBytes = 64, kStateAt = 48, kSignalAt = 49;

extern "C" void onRankSignal(int sig) {
  if (statusFd >= 0) { // pwrite(2) is async-signal-safe
    ssize_t ignored = ::pwrite(statusFd, "T", 1, kSignalAt);
    (void)ignored;
  }
  if (received == 0) {
    received = sig;
    return;
  }
  // A second signal: the default action (end the process) at once.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

volatile std::sig_atomic_t forwarded = 0;
volatile std::sig_atomic_t firstSignal = 0; // the launcher's first
volatile std::sig_atomic_t withCheckpoints = 0;
volatile std::sig_atomic_t pending = 0;    // first signal held back
volatile std::sig_atomic_t ranksReady = 0; // every rank has its watch
volatile pid_t child = -1;
/// PREFIX "signal": where the launcher writes the name of the signal it
/// forwards as SIGUSR1, so that the ranks can name it (set before the
/// handler is installed; read in the handler).
char signalFile[512] = {};

extern "C" void onLauncherSignal(int sig) {
  if (child <= 0)
    return;
  bool first = forwarded++ == 0;
  if (first)
    firstSignal = sig;
  // write(2) is async-signal-safe; printf is not.
  const char *name = sig == SIGTERM  ? "SIGTERM"
                     : sig == SIGINT ? "SIGINT"
                     : sig == SIGHUP ? "SIGHUP"
                                     : "SIGUSR1";
  const char *what = !first ? " received again: stopping the job now\n"
                     : withCheckpoints
                         ? " received: the ranks checkpoint and stop at the "
                           "next step (again: stop now)\n"
                         : " received: the ranks stop at the next step "
                           "(again: stop now)\n";
  for (const char *part : {"shard-run: ", name, what}) {
    ssize_t ignored = ::write(2, part, std::strlen(part));
    (void)ignored;
  }
  if (first && signalFile[0]) {
    // open/write/close are async-signal-safe.
    int fd = ::open(signalFile, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, name, std::strlen(name));
      (void)ignored;
      ::close(fd);
    }
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

void writeStatus(const char *text, int64_t bytes, off_t at) {
  if (statusFd < 0)
    return;
  ssize_t ignored = ::pwrite(statusFd, text, bytes, at);
  (void)ignored;
}

/// What the launcher knows of one rank.
struct RankStatus {
  pid_t pid = 0;
  int64_t stepsDone = -1;
  /// Past its last training step (the final evaluation and saves).
  bool finishing = false;
  char state = '?'; ///< '?': no status file (the rank never started).
  bool signalled = false;
  int64_t goneOrder = -1; ///< When it was seen gone (0 first), -1: never.
};

RankStatus readStatus(const std::string &path) {
  RankStatus st;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return st;
  char buf[kStatusBytes + 1] = {};
  ssize_t n = ::pread(fd, buf, kStatusBytes, 0);
  ::close(fd);
  if (n <= kStateAt)
    return st;
  long long pid = 0, steps = -1;
  char phase[4] = {};
  if (std::sscanf(buf, "%lld %lld %3s", &pid, &steps, phase) >= 1)
    st.pid = static_cast<pid_t>(pid);
  st.stepsDone = steps;
  st.finishing = std::strcmp(phase, "end") == 0;
  st.state = buf[kStateAt];
  st.signalled = n > kSignalAt && buf[kSignalAt] == 'T';
  return st;
}

const char *signalText(int sig) {
  switch (sig) {
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGHUP:
    return "SIGHUP";
  case SIGUSR1:
    return "SIGUSR1";
  }
  return "another signal";
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
  // Tell the launcher this rank can now take a forwarded signal: its status
  // file exists once the handlers are in place.
  if (const char *prefix = std::getenv("AUTOSHARD_READY_PREFIX");
      prefix && *prefix && statusFd < 0) {
    std::string path = prefix + std::to_string(rank);
    statusFd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    char blank[kStatusBytes];
    std::memset(blank, ' ', sizeof(blank));
    blank[kStateAt] = 'R';
    blank[kStatusBytes - 1] = '\n';
    writeStatus(blank, kStatusBytes, 0);
    noteRankStep(-1);
  }
  install(onRankSignal);
}

void noteRankStep(int64_t stepsDone, bool finishing) {
  char buf[kStateAt + 1];
  int n = std::snprintf(
      buf, sizeof(buf), "%lld %lld%s", static_cast<long long>(::getpid()),
      static_cast<long long>(stepsDone), finishing ? " end" : "");
  if (n < 0 || n >= kStateAt)
    return;
  std::memset(buf + n, ' ', kStateAt - n);
  writeStatus(buf, kStateAt, 0);
}

void noteRankEnd(RankEnd end) {
  writeStatus(end == RankEnd::Done     ? "D"
              : end == RankEnd::Failed ? "F"
                                       : "I",
              1, kStateAt);
}

bool underForwardingLauncher() {
  const char *env = std::getenv("AUTOSHARD_SIGNALS_FORWARDED");
  return env && *env == '1';
}

bool PreemptionWatch::requested(const Executor &executor,
                                int64_t stepsDone) const {
  noteRankStep(stepsDone);
  int32_t mine = received != 0 ? 1 : 0, any = mine;
  CommContext *comm = executor.comm();
  if (comm && comm->world().size() > 1)
    comm->all().allReduce(&mine, &any, 1, DType::I32, ReduceOp::Max)->wait();
  return any != 0;
}

int PreemptionWatch::interruptedExitStatus() const {
  return 128 + (received != 0 ? static_cast<int>(received) : SIGINT);
}

std::string PreemptionWatch::signalName() const {
  if (received == 0)
    return "";
  if (received == SIGUSR1 && underForwardingLauncher()) {
    // Under `shard-run -n N` a SIGTERM or SIGINT to the launcher arrives
    // as SIGUSR1 (see the file comment of Preemption.h); the launcher
    // wrote which one into PREFIX "signal".
    std::string name;
    if (const char *prefix = std::getenv("AUTOSHARD_READY_PREFIX")) {
      std::ifstream in(std::string(prefix) + "signal");
      std::getline(in, name);
    }
    if (name == "SIGTERM" || name == "SIGINT" || name == "SIGHUP" ||
        name == "SIGUSR1")
      return name + " (to shard-run)";
    return "a signal to shard-run (forwarded to the ranks as SIGUSR1)";
  }
  return signalText(received);
}

int runForwardingSignals(const std::vector<std::string> &args,
                         const std::string &readyPrefix, int64_t ranks,
                         bool checkpoints) {
  withCheckpoints = checkpoints ? 1 : 0;
  std::string signalPath = readyPrefix + "signal";
  if (signalPath.size() < sizeof(signalFile))
    std::memcpy(signalFile, signalPath.c_str(), signalPath.size() + 1);
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
  // Polls (every 20 ms) both mpirun and the ranks: the order in which the
  // ranks' processes disappear tells which one died first.
  std::vector<RankStatus> st(ranks);
  int64_t gone = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
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
    for (int64_t r = 0; r < ranks; ++r) {
      if (st[r].goneOrder >= 0)
        continue;
      if (st[r].pid <= 0)
        st[r].pid = readStatus(readyPrefix + std::to_string(r)).pid;
      if (st[r].pid > 0 && ::kill(st[r].pid, 0) != 0 && errno == ESRCH)
        st[r].goneOrder = gone++;
    }
    ::usleep(20000);
  }
  std::fflush(stdout);
  for (int64_t r = 0; r < ranks; ++r) {
    int64_t order = st[r].goneOrder;
    st[r] = readStatus(readyPrefix + std::to_string(r));
    st[r].goneOrder = order;
    ::unlink((readyPrefix + std::to_string(r)).c_str());
  }
  ::unlink(signalPath.c_str());
  int code = WIFEXITED(status)
                 ? WEXITSTATUS(status)
                 : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (forwarded > 0) {
    int sig = firstSignal;
    if (forwarded > 1) {
      // Stopped at once: no rank said where; the status files do.
      int64_t step = -1;
      for (const RankStatus &s : st)
        if (s.stepsDone >= 0 && (step < 0 || s.stepsDone < step))
          step = s.stepsDone;
      std::fprintf(stderr,
                   "shard-run: interrupted during step %lld by a second %s "
                   "(the job was stopped at once, no checkpoint of this "
                   "step)\n",
                   static_cast<long long>(std::max<int64_t>(step, 0)),
                   signalText(sig));
    }
    // Interrupted ranks exit 0 under this launcher (no mpirun report of
    // a failure), their status files say so.
    bool interrupted = forwarded > 1;
    for (const RankStatus &s : st)
      interrupted = interrupted || s.state == 'I';
    if (interrupted)
      return 128 + sig;
    return code;
  }
  if (code == 0)
    return code;
  // A failed job: if no rank ended with its own message, name the ranks
  // that vanished without one (and without a signal from mpirun, which
  // ends the others after the first death), the first to go first.
  for (const RankStatus &s : st)
    if (s.state == 'F')
      return code;
  std::vector<int64_t> dead;
  for (int64_t r = 0; r < ranks; ++r)
    if (st[r].state == 'R' && !st[r].signalled)
      dead.push_back(r);
  std::stable_sort(dead.begin(), dead.end(), [&](int64_t a, int64_t b) {
    auto key = [&](int64_t r) {
      return st[r].goneOrder < 0 ? INT64_MAX : st[r].goneOrder;
    };
    return key(a) < key(b);
  });
  if (dead.empty())
    return code;
  const RankStatus &d = st[dead[0]];
  std::string done = std::to_string(d.stepsDone) + " steps done";
  std::string when =
      d.stepsDone < 0 ? "before its first training step"
      : d.finishing
          ? "after its last training step (" + done +
                "; in the final evaluation or writing its outputs)"
          : "during step " + std::to_string(d.stepsDone) + " (" + done + ")";
  std::string others;
  for (size_t i = 1; i < dead.size(); ++i)
    others += (i > 1 ? ", " : "") + std::to_string(dead[i]);
  std::fprintf(stderr,
               "shard-run: error: rank %lld (pid %lld) died %s without a "
               "message of its own (killed by a signal or crashed; mpirun's "
               "report above says how)%s%s%s; the job ended with exit %d\n",
               static_cast<long long>(dead[0]), static_cast<long long>(d.pid),
               when.c_str(), others.empty() ? "" : "; ranks ", others.c_str(),
               others.empty() ? "" : " ended without a message too", code);
  return code;
}

} // namespace autoshard::shardrun
