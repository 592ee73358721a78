//===- Reporting.cpp - Progress display and trace recording ---------------===//

#include "Reporting.h"

#include "autoshard/runtime/Communicator.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <unistd.h>

namespace autoshard::shardrun {

/// Whether `out` is a terminal. Under `shard-run -n N` the ranks' stdout is
/// mpirun's pseudo-terminal, so the launcher passes the user's answer in
/// AUTOSHARD_STDOUT_TTY. Under the user's own launcher (mpirun, srun) the
/// rank's stdout may be such a pseudo-terminal whatever the user's is (a
/// file, a pipe), so without that answer a rank writes plain lines.
static bool isTerminal(std::FILE *out) {
  if (const char *forced = std::getenv("AUTOSHARD_STDOUT_TTY"))
    return std::string_view(forced) == "1";
  if (runtime::startedByLauncher())
    return false;
  return isatty(fileno(out));
}

Progress::Progress(std::FILE *out, int64_t totalSteps, int64_t every)
    : out(out), tty(isTerminal(out)), total(totalSteps), every(every) {}

void Progress::step(int64_t step, double loss, double lr, double tokensPerS) {
  bool last = step + 1 == total;
  if (tty) {
    double now = TraceRecorder::nowUs();
    if (!last && now - lastDrawUs < 1e5)
      return;
    lastDrawUs = now;
    std::fprintf(out,
                 "\r\033[Kstep %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s",
                 static_cast<long long>(step + 1),
                 static_cast<long long>(total), loss, lr, tokensPerS);
    pending = true;
  } else if (step % every == 0 || last) {
    std::fprintf(out, "step %lld/%lld: loss %.4f, lr %.2e, %.0f tok/s\n",
                 static_cast<long long>(step + 1),
                 static_cast<long long>(total), loss, lr, tokensPerS);
  }
  std::fflush(out);
}

void Progress::line(const std::string &text) {
  if (pending)
    std::fputs("\r\033[K", out);
  std::fprintf(out, "%s\n", text.c_str());
  pending = false;
  lastDrawUs = 0;
  std::fflush(out);
}

void Progress::finish() {
  if (pending)
    std::fputc('\n', out);
  pending = false;
  std::fflush(out);
}

TraceRecorder::TraceRecorder(runtime::ChromeTrace &trace)
    : trace(trace), epochUs(nowUs()) {}

double TraceRecorder::nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

void TraceRecorder::record(std::string_view name, std::string_view function,
                           double startUs, double durUs, int depth) {
  (void)depth; // complete events nest by time on one thread
  trace.add(std::string(name), std::string(function), startUs - epochUs, durUs);
}

void TraceRecorder::span(const std::string &name, double startUs,
                         double durUs) {
  trace.add(name, "step", startUs - epochUs, durUs);
}

void TraceRecorder::recordComm(const runtime::CommSpan &s) {
  std::lock_guard<std::mutex> lock(commMutex);
  comm.push_back({std::string(s.name), std::string(s.library), s.bytes, s.ranks,
                  s.queuedUs, s.startUs, s.durUs, s.failed});
}

void TraceRecorder::flushComm() {
  std::vector<CommEvent> events;
  {
    std::lock_guard<std::mutex> lock(commMutex);
    events.swap(comm);
  }
  trace.nameThread(0, "compute");
  std::stable_sort(events.begin(), events.end(),
                   [](const CommEvent &a, const CommEvent &b) {
                     return a.startUs < b.startUs;
                   });
  // Greedy interval partitioning: each event on the first track that is
  // free by its start (as few tracks as operations were in flight at once).
  std::vector<double> trackEnd;
  for (const CommEvent &e : events) {
    size_t track = 0;
    while (track < trackEnd.size() && trackEnd[track] > e.startUs)
      ++track;
    if (track == trackEnd.size()) {
      trackEnd.push_back(0);
      trace.nameThread(static_cast<int>(track) + 1,
                       track == 0 ? "comm"
                                  : "comm " + std::to_string(track + 1));
    }
    trackEnd[track] = e.startUs + e.durUs;
    nlohmann::json args = {{"library", e.library},
                           {"bytes", e.bytes},
                           {"ranks", e.ranks},
                           {"queued_us", e.startUs - e.queuedUs}};
    if (e.failed)
      args["failed"] = true;
    trace.add(e.name, "comm", e.startUs - epochUs, e.durUs, 0,
              static_cast<int>(track) + 1, std::move(args));
  }
}

std::vector<double> peakRssMiBPerRank(runtime::CommContext *comm) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double mine = static_cast<double>(usage.ru_maxrss) / 1024.0; // KiB on Linux
  if (!comm || comm->world().size() <= 1)
    return {mine};
  std::vector<double> all(comm->world().size());
  comm->all().allGather(&mine, all.data(), sizeof(double))->wait();
  return all;
}

std::string formatBytes(int64_t bytes) {
  char buf[64];
  if (bytes < 1024)
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  else if (bytes < (int64_t(1) << 20))
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1048576.0);
  return buf;
}

} // namespace autoshard::shardrun
