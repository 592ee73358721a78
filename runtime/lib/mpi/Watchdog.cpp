//===- Watchdog.cpp - Timeouts of MPI operations --------------------------===//

#include "Watchdog.h"

#include "autoshard/runtime/Communicator.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

namespace autoshard::runtime::mpi_detail {

namespace {

using Clock = std::chrono::steady_clock;

// Tags on the watchdog's own communicator.
constexpr int kQuery = 1;   // "I gave up waiting; what do you wait for?"
constexpr int kAnswer = 2;  // what the answering rank waits for
constexpr int kVerdict = 3; // the diagnosis of the rank that gave up
constexpr int kAck = 4;     // a verdict was received

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.1f" : "%.0f", s);
  return buf;
}

std::string bytesText(int64_t b) {
  char buf[32];
  if (b < 1024)
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(b));
  else if (b < (int64_t(1) << 20))
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  return buf;
}

/// "2", "0, 1, 3"; long lists keep their first 8 and say how many more.
std::string rankList(const std::vector<int> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 8 && ranks.size() > 10) {
      s += ", ... (" + std::to_string(ranks.size()) + " in all)";
      break;
    }
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return s;
}

std::string ranksPhrase(const std::vector<int> &ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankList(ranks);
}

/// The world ranks of group indices `indices` of `op`'s group.
std::vector<int> worldOf(const OpInfo &op,
                         const std::vector<int64_t> &indices) {
  std::vector<int> out;
  for (int64_t i : indices)
    out.push_back(op.worldRanks && i >= 0 &&
                          i < static_cast<int64_t>(op.worldRanks->size())
                      ? (*op.worldRanks)[i]
                      : static_cast<int>(i));
  return out;
}

/// The operation and its group, without the activity.
std::string operation(const OpInfo &op) {
  std::string s = *op.name ? op.name : op.library;
  s += std::string(" (") + op.library + ", " + bytesText(op.bytes) + ")";
  if (op.label && !op.label->empty())
    s += " over group " + *op.label;
  if (op.worldRanks)
    s += " (world ranks " + rankList(*op.worldRanks) + ")";
  if (!op.recvFrom.empty())
    s += ", receiving from world " + ranksPhrase(worldOf(op, op.recvFrom));
  if (!op.sendTo.empty())
    s += ", sending to world " + ranksPhrase(worldOf(op, op.sendTo));
  return s;
}

/// The world ranks `op` waits for, without `self`: an exchange's peers, or
/// the group's members (every rank when the group is not known).
std::vector<int> peersOf(const OpInfo &op, int self, int size) {
  std::vector<int> peers;
  if (!op.recvFrom.empty() || !op.sendTo.empty()) {
    std::set<int> p;
    for (int r : worldOf(op, op.recvFrom))
      p.insert(r);
    for (int r : worldOf(op, op.sendTo))
      p.insert(r);
    peers.assign(p.begin(), p.end());
  } else if (op.worldRanks) {
    peers = *op.worldRanks;
  } else {
    for (int r = 0; r < size; ++r)
      peers.push_back(r);
  }
  peers.erase(std::remove(peers.begin(), peers.end(), self), peers.end());
  return peers;
}

// A query or an answer is "<peer>,<peer>,...\n<description>": the peers let
// the rank that gave up follow a chain of waits to the rank that holds it.
std::string withPeers(const std::vector<int> &peers, const std::string &text) {
  std::string s;
  for (size_t i = 0; i < peers.size(); ++i)
    s += (i ? "," : "") + std::to_string(peers[i]);
  return s + "\n" + text;
}

struct WaitNote {
  std::vector<int> peers;
  std::string text;
};

WaitNote parseNote(const std::string &msg) {
  WaitNote n;
  size_t nl = msg.find('\n');
  if (nl == std::string::npos) {
    n.text = msg;
    return n;
  }
  n.text = msg.substr(nl + 1);
  size_t at = 0;
  while (at < nl) {
    size_t comma = std::min(msg.find(',', at), nl);
    try {
      n.peers.push_back(std::stoi(msg.substr(at, comma - at)));
    } catch (const std::exception &) {
    }
    at = comma + 1;
  }
  return n;
}

} // namespace

double WaitClock::waited() const { return since(start); }

double WaitClock::pause() {
  double w = waited();
  if (w < 200e-6)
    return w;
  if (w < 20e-3) {
    sched_yield();
  } else {
    double s = std::min(1e-3, w / 100);
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
  }
  return waited();
}

Watchdog::Watchdog(double timeoutS, int rank, int size)
    : timeout(timeoutS), rank(rank), size(size) {
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rc != MPI_SUCCESS)
    throw CommError("MPI_Comm_dup (the communication watchdog's "
                    "communicator) failed: MPI error " +
                    std::to_string(rc));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
}

// The duplicate is not freed: MPI_Finalize frees it, and a free here could
// meet sends of a diagnosis still in flight.
Watchdog::~Watchdog() = default;

double Watchdog::graceS() const { return std::clamp(timeout / 10, 2.0, 20.0); }

void Watchdog::setActivity(const std::string &activity) {
  std::lock_guard<std::mutex> lock(activityMu);
  activity_ = activity;
}

std::string Watchdog::describe(const OpInfo &op, double waitedS) const {
  std::string activity;
  {
    std::lock_guard<std::mutex> lock(activityMu);
    activity = activity_;
  }
  return (activity.empty() ? "" : activity + ": ") + operation(op) +
         ", waiting " + seconds(waitedS) + " s";
}

std::vector<Watchdog::Message> Watchdog::receive() {
  std::vector<Message> out;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st) !=
            MPI_SUCCESS ||
        !flag)
      break;
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    Message m;
    m.source = st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    m.text.assign(std::max(count, 0), '\0');
    if (MPI_Recv(m.text.data(), count, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG,
                 comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      break;
    out.push_back(std::move(m));
  }
  return out;
}

void Watchdog::send(int to, int tag, const std::string &text) {
  // The buffer lives as long as the watchdog: the send completes whenever
  // the peer takes it, or never (a stopped peer), and nobody waits for it.
  sent.push_back(text);
  MPI_Request r;
  if (MPI_Isend(sent.back().data(), static_cast<int>(sent.back().size()),
                MPI_CHAR, to, tag, comm, &r) == MPI_SUCCESS)
    MPI_Request_free(&r);
}

std::string Watchdog::handle(const std::vector<Message> &msgs,
                             const std::string &me) {
  std::string verdict;
  for (const Message &m : msgs) {
    if (m.tag == kQuery) {
      send(m.source, kAnswer, me);
    } else if (m.tag == kVerdict) {
      send(m.source, kAck, "");
      if (verdict.empty())
        verdict = m.text;
    }
  }
  return verdict;
}

void Watchdog::check(const OpInfo &op, double waitedS) {
  std::lock_guard<std::mutex> lock(mu);
  bool due = waitedS >= timeout;
  if (!due && since(lastCheck) < kCheckAfterS)
    return;
  lastCheck = Clock::now();
  if (expired)
    throw CommError("communication watchdog: this rank has given up already");
  std::string me = describe(op, waitedS);
  const std::vector<Message> msgs = receive();
  const std::string verdict =
      msgs.empty() ? "" : handle(msgs, withPeers(peersOf(op, rank, size), me));
  if (!verdict.empty()) {
    expired = true;
    throw CommError("communication watchdog: " + verdict + "; this rank (" +
                    std::to_string(rank) + ") was waiting in " + me);
  }
  if (due) {
    expired = true;
    throw CommError(expire(op, waitedS));
  }
}

std::string Watchdog::expire(const OpInfo &op, double waitedS) {
  const std::vector<int> peers = peersOf(op, rank, size);
  const std::string line = describe(op, waitedS);
  const std::string me = withPeers(peers, line);
  // Said at once: if the transport itself is dead, MPI may end this process
  // while the diagnosis sends its questions (OpenMPI aborts on a connection
  // it cannot make).
  std::fprintf(stderr,
               "[autoshard watchdog] rank %d: %s: no progress after %s s; "
               "asking the other ranks what they wait for\n",
               rank, line.c_str(), seconds(timeout).c_str());
  std::fflush(stderr);
  for (int r = 0; r < size; ++r)
    if (r != rank)
      send(r, kQuery, me);
  const double grace = graceS();
  std::map<int, WaitNote> answers;
  std::string verdict;
  int verdictFrom = -1;
  Clock::time_point asked = Clock::now();
  while (static_cast<int>(answers.size()) < size - 1 && verdict.empty() &&
         since(asked) < grace) {
    for (const Message &m : receive()) {
      if (m.tag == kQuery) {
        // It gave up too: it is alive, and its query says what it waits for.
        send(m.source, kAnswer, me);
        answers[m.source] = parseNote(m.text);
      } else if (m.tag == kAnswer) {
        answers[m.source] = parseNote(m.text);
      } else if (m.tag == kVerdict) {
        send(m.source, kAck, "");
        if (verdict.empty()) {
          verdict = m.text;
          verdictFrom = m.source;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<int> silent;
  for (int r = 0; r < size; ++r)
    if (r != rank && r != verdictFrom && !answers.count(r))
      silent.push_back(r);

  std::string activity;
  {
    std::lock_guard<std::mutex> lock(activityMu);
    activity = activity_;
  }
  std::string msg = "communication timeout: " + operation(op) +
                    " did not complete within " + seconds(timeout) +
                    " s (--comm-timeout)" +
                    (activity.empty() ? "" : " at " + activity);
  if (!verdict.empty())
    return msg + "; rank " + std::to_string(verdictFrom) +
           "'s watchdog gave up first: " + verdict;

  std::vector<int> silentPeers, silentOthers;
  for (int r : silent)
    (std::find(peers.begin(), peers.end(), r) != peers.end() ? silentPeers
                                                             : silentOthers)
        .push_back(r);
  const std::string noAnswer =
      "did not answer the watchdog within " + seconds(grace) +
      " s (stopped, dead, unreachable, or busy outside communication)";
  if (!silentPeers.empty()) {
    msg += "; waiting for " + ranksPhrase(silentPeers) + ", which " + noAnswer;
  } else if (!peers.empty()) {
    // Every peer answered: follow what they wait for (breadth first) to a
    // rank that did not answer, the one that holds the chain up.
    std::map<int, int> via; // rank -> the rank that waits for it
    std::vector<int> queue = peers;
    for (int r : peers)
      via[r] = rank;
    int holder = -1;
    for (size_t i = 0; i < queue.size() && holder < 0; ++i) {
      auto it = answers.find(queue[i]);
      if (it == answers.end())
        continue;
      for (int next : it->second.peers) {
        if (next == rank || next < 0 || next >= size || via.count(next))
          continue;
        via[next] = queue[i];
        if (std::find(silent.begin(), silent.end(), next) != silent.end()) {
          holder = next;
          break;
        }
        queue.push_back(next);
      }
    }
    if (holder >= 0) {
      std::vector<int> chain;
      for (int r = via[holder]; r != rank; r = via[r])
        chain.insert(chain.begin(), r);
      msg += "; waiting for rank " + std::to_string(holder) + " (by way of " +
             ranksPhrase(chain) + ", which " +
             (chain.size() == 1 ? "waits" : "wait in turn") +
             " for it), which " + noAnswer;
      silentOthers.erase(
          std::remove(silentOthers.begin(), silentOthers.end(), holder),
          silentOthers.end());
    } else {
      msg += "; every peer (" + ranksPhrase(peers) +
             ") answered and waits too: the operation itself is stuck (a lost "
             "connection?)";
    }
  }
  if (!silentOthers.empty())
    msg += "; " + ranksPhrase(silentOthers) + " " + noAnswer + " either";
  int listed = 0;
  for (const auto &[r, note] : answers) {
    if (listed++ == 8) {
      msg += "; ... (" + std::to_string(answers.size()) + " answers in all)";
      break;
    }
    msg += "; rank " + std::to_string(r) + " waits: " + note.text;
  }

  // Tell the ranks that answered, so that each says what it waited for
  // before the job ends (each pauses before aborting, gaveUp()); give them
  // a moment to acknowledge.
  if (!answers.empty()) {
    std::string v =
        "rank " + std::to_string(rank) + " gave up after " + seconds(waitedS) +
        " s waiting in " + operation(op) +
        (activity.empty() ? "" : " at " + activity) +
        (silent.empty() ? ", though every rank answered"
                        : "; no answer from " + ranksPhrase(silent));
    for (const auto &[r, note] : answers)
      send(r, kVerdict, v);
    size_t acks = 0;
    Clock::time_point told = Clock::now();
    while (acks < answers.size() && since(told) < kVerdictAckWaitS) {
      for (const Message &m : receive()) {
        if (m.tag == kAck)
          ++acks;
        else if (m.tag == kQuery)
          send(m.source, kAnswer, me);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return msg;
}

} // namespace autoshard::runtime::mpi_detail
