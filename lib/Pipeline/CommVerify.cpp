//===- CommVerify.cpp - Communication program verifier --------------------===//

#include "autoshard/Pipeline/CommVerify.h"

#include <algorithm>
#include <deque>
#include <set>
#include <tuple>

using namespace autoshard::pipeline;

CommEvent CommEvent::send(int64_t peer, std::string signature,
                          std::string label) {
  return {Kind::Send, peer, -1, std::move(signature), std::move(label)};
}
CommEvent CommEvent::recv(int64_t peer, std::string signature,
                          std::string label) {
  return {Kind::Recv, peer, -1, std::move(signature), std::move(label)};
}
CommEvent CommEvent::collective(int64_t group, std::string signature,
                                std::string label) {
  return {Kind::Collective, -1, group, std::move(signature), std::move(label)};
}
CommEvent CommEvent::compute(std::string label) {
  return {Kind::Compute, -1, -1, "", std::move(label)};
}

//===----------------------------------------------------------------------===//
// verifyCommunication
//===----------------------------------------------------------------------===//

namespace {

/// "'sig' (event #i, label)".
std::string describe(const std::vector<RankProgram> &programs, int64_t rank,
                     int64_t index) {
  const CommEvent &event = programs[rank][index];
  std::string text =
      "'" + event.signature + "' (event #" + std::to_string(index);
  if (!event.label.empty())
    text += ", " + event.label;
  return text + ")";
}

/// "rank N" for world rank `rank` (an index into the programs), named by
/// the caller's RankNamer when it has one.
std::string rankText(const RankNamer &name, int64_t rank) {
  return "rank " + (name ? name(rank) : std::to_string(rank));
}

std::string rankList(const RankNamer &name, const std::vector<int64_t> &ranks) {
  std::string text;
  for (int64_t rank : ranks)
    text +=
        (text.empty() ? "" : ", ") + (name ? name(rank) : std::to_string(rank));
  return text;
}

std::string groupName(const RankNamer &name, int64_t group,
                      const std::vector<int64_t> &members) {
  return "group " + std::to_string(group) + " (ranks " +
         rankList(name, members) + ")";
}

void checkMalformed(const std::vector<RankProgram> &programs,
                    const CommGroups &groups, const RankNamer &name,
                    std::vector<CommViolation> &violations) {
  int64_t n = programs.size();
  auto report = [&](std::string message) {
    violations.push_back({CommViolation::Kind::Malformed, std::move(message)});
  };
  for (const auto &[group, members] : groups) {
    std::set<int64_t> seen;
    for (int64_t member : members) {
      if (member < 0 || member >= n)
        report(groupName(name, group, members) + ": member " +
               std::to_string(member) + " is not a rank in [0, " +
               std::to_string(n) + ")");
      else if (!seen.insert(member).second)
        report(groupName(name, group, members) + ": " + rankText(name, member) +
               " is listed twice");
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0, e = programs[r].size(); i < e; ++i) {
      const CommEvent &event = programs[r][i];
      std::string at = rankText(name, r) + " event #" + std::to_string(i) +
                       (event.label.empty() ? "" : " (" + event.label + ")");
      switch (event.kind) {
      case CommEvent::Kind::Send:
      case CommEvent::Kind::Recv:
        if (event.peer < 0 || event.peer >= n)
          report(at + ": peer " + std::to_string(event.peer) +
                 " is not a rank in [0, " + std::to_string(n) + ")");
        else if (event.peer == r)
          report(at + ": " +
                 (event.kind == CommEvent::Kind::Send ? "sends to"
                                                      : "receives from") +
                 " itself");
        break;
      case CommEvent::Kind::Collective: {
        auto it = groups.find(event.group);
        if (it == groups.end())
          report(at + ": unknown group " + std::to_string(event.group));
        else if (std::find(it->second.begin(), it->second.end(), r) ==
                 it->second.end())
          report(at + ": " + rankText(name, r) + " enters a collective of " +
                 groupName(name, event.group, it->second) +
                 ", of which it is not a member");
        break;
      }
      case CommEvent::Kind::Compute:
        break;
      }
    }
  }
}

/// Check C, point-to-point: FIFO matching per ordered pair.
void checkMessages(const std::vector<RankProgram> &programs,
                   const RankNamer &name,
                   std::vector<CommViolation> &violations) {
  int64_t n = programs.size();
  // (src, dst) -> event indices on src (sends) and on dst (recvs).
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sends, recvs;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0, e = programs[r].size(); i < e; ++i) {
      const CommEvent &event = programs[r][i];
      if (event.kind == CommEvent::Kind::Send)
        sends[{r, event.peer}].push_back(i);
      else if (event.kind == CommEvent::Kind::Recv)
        recvs[{event.peer, r}].push_back(i);
    }
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (const auto &entry : sends)
    pairs.insert(entry.first);
  for (const auto &entry : recvs)
    pairs.insert(entry.first);
  for (auto [src, dst] : pairs) {
    const std::vector<int64_t> &out = sends[{src, dst}];
    const std::vector<int64_t> &in = recvs[{src, dst}];
    std::string pair =
        "p2p " + rankText(name, src) + " -> " + rankText(name, dst);
    size_t common = std::min(out.size(), in.size());
    for (size_t k = 0; k < common; ++k) {
      if (programs[src][out[k]].signature == programs[dst][in[k]].signature)
        continue;
      violations.push_back({CommViolation::Kind::MessageMismatch,
                            pair + ", message #" + std::to_string(k) + ": " +
                                rankText(name, src) + " sends " +
                                describe(programs, src, out[k]) + " but " +
                                rankText(name, dst) + " receives " +
                                describe(programs, dst, in[k])});
      break;
    }
    if (out.size() != in.size()) {
      std::string first =
          out.size() > in.size()
              ? "first unmatched: send #" + std::to_string(common) + " " +
                    describe(programs, src, out[common])
              : "first unmatched: recv #" + std::to_string(common) + " " +
                    describe(programs, dst, in[common]);
      violations.push_back({CommViolation::Kind::MessageCount,
                            pair + ": " + rankText(name, src) + " sends " +
                                std::to_string(out.size()) + " messages but " +
                                rankText(name, dst) + " receives " +
                                std::to_string(in.size()) + "; " + first});
    }
  }
}

/// Check C, collectives: same sequence on every member of a group.
void checkCollectives(const std::vector<RankProgram> &programs,
                      const CommGroups &groups, const RankNamer &name,
                      std::vector<CommViolation> &violations) {
  for (const auto &[group, members] : groups) {
    if (members.empty())
      continue;
    std::vector<std::vector<int64_t>> seq(members.size());
    for (size_t m = 0; m < members.size(); ++m)
      for (int64_t i = 0, e = programs[members[m]].size(); i < e; ++i) {
        const CommEvent &event = programs[members[m]][i];
        if (event.kind == CommEvent::Kind::Collective && event.group == group)
          seq[m].push_back(i);
      }
    int64_t ref = members[0];
    for (size_t m = 1; m < members.size(); ++m) {
      int64_t other = members[m];
      size_t common = std::min(seq[0].size(), seq[m].size());
      bool mismatch = false;
      for (size_t k = 0; k < common && !mismatch; ++k) {
        if (programs[ref][seq[0][k]].signature ==
            programs[other][seq[m][k]].signature)
          continue;
        mismatch = true;
        violations.push_back({CommViolation::Kind::CollectiveMismatch,
                              groupName(name, group, members) +
                                  ", collective #" + std::to_string(k) + ": " +
                                  rankText(name, ref) + " enters " +
                                  describe(programs, ref, seq[0][k]) + " but " +
                                  rankText(name, other) + " enters " +
                                  describe(programs, other, seq[m][k])});
      }
      if (!mismatch && seq[0].size() != seq[m].size()) {
        bool refLonger = seq[0].size() > seq[m].size();
        violations.push_back(
            {CommViolation::Kind::CollectiveMismatch,
             groupName(name, group, members) + ": " + rankText(name, ref) +
                 " enters " + std::to_string(seq[0].size()) +
                 " collectives but " + rankText(name, other) + " enters " +
                 std::to_string(seq[m].size()) + "; first unmatched: #" +
                 std::to_string(common) + " " +
                 (refLonger ? describe(programs, ref, seq[0][common])
                            : describe(programs, other, seq[m][common]))});
      }
    }
  }
}

/// Check D: simulate the blocking semantics; report a deadlock.
void checkDeadlock(const std::vector<RankProgram> &programs,
                   const CommGroups &groups, const RankNamer &name,
                   std::vector<CommViolation> &violations) {
  int64_t n = programs.size();
  std::vector<size_t> pc(n, 0);
  std::map<std::pair<int64_t, int64_t>, int64_t> issued, consumed;
  auto atCollective = [&](int64_t rank, int64_t group) {
    return pc[rank] < programs[rank].size() &&
           programs[rank][pc[rank]].kind == CommEvent::Kind::Collective &&
           programs[rank][pc[rank]].group == group;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < n; ++r) {
      while (pc[r] < programs[r].size()) {
        const CommEvent &event = programs[r][pc[r]];
        if (event.kind == CommEvent::Kind::Send) {
          ++issued[{r, event.peer}];
        } else if (event.kind == CommEvent::Kind::Recv) {
          if (issued[{event.peer, r}] <= consumed[{event.peer, r}])
            break;
          ++consumed[{event.peer, r}];
        } else if (event.kind == CommEvent::Kind::Collective) {
          const std::vector<int64_t> &members = groups.at(event.group);
          if (!std::all_of(members.begin(), members.end(), [&](int64_t m) {
                return atCollective(m, event.group);
              }))
            break;
          for (int64_t m : members)
            if (m != r)
              ++pc[m];
        }
        ++pc[r];
        progress = true;
      }
    }
  }

  // Wait-for graph of the blocked ranks.
  std::vector<std::vector<int64_t>> waitsFor(n);
  std::string report = "deadlock:";
  bool deadlocked = false;
  for (int64_t r = 0; r < n; ++r) {
    if (pc[r] == programs[r].size())
      continue;
    deadlocked = true;
    const CommEvent &event = programs[r][pc[r]];
    std::string what;
    if (event.kind == CommEvent::Kind::Recv) {
      waitsFor[r].push_back(event.peer);
      what = "recv from " + rankText(name, event.peer);
    } else {
      for (int64_t m : groups.at(event.group))
        if (!atCollective(m, event.group))
          waitsFor[r].push_back(m);
      what = "collective of " +
             groupName(name, event.group, groups.at(event.group)) +
             ", waiting for ranks " + rankList(name, waitsFor[r]);
    }
    report += " " + rankText(name, r) + " blocked at " + what + " " +
              describe(programs, r, pc[r]) + ";";
  }
  if (!deadlocked)
    return;

  // Find a cycle among blocked ranks (DFS along waitsFor).
  std::vector<char> color(n, 0);
  std::vector<int64_t> path;
  std::vector<int64_t> cycle;
  auto blocked = [&](int64_t r) { return pc[r] < programs[r].size(); };
  for (int64_t root = 0; root < n && cycle.empty(); ++root) {
    if (!blocked(root) || color[root])
      continue;
    std::vector<std::pair<int64_t, size_t>> stack{{root, 0}};
    color[root] = 1;
    while (!stack.empty() && cycle.empty()) {
      auto &[node, edge] = stack.back();
      if (edge == waitsFor[node].size()) {
        color[node] = 2;
        stack.pop_back();
        continue;
      }
      int64_t next = waitsFor[node][edge++];
      if (!blocked(next) || color[next] == 2)
        continue;
      if (color[next] == 1) {
        auto it = std::find_if(stack.begin(), stack.end(),
                               [&](const auto &e) { return e.first == next; });
        for (; it != stack.end(); ++it)
          cycle.push_back(it->first);
        break;
      }
      color[next] = 1;
      stack.push_back({next, 0});
    }
  }
  if (!cycle.empty()) {
    report += " wait-for cycle: ";
    for (int64_t r : cycle)
      report += rankText(name, r) + " -> ";
    report += rankText(name, cycle.front());
  } else {
    report += " no wait-for cycle: blocked ranks wait for finished ranks "
              "(missing sends or collective calls)";
  }
  violations.push_back({CommViolation::Kind::Deadlock, report});
}

} // namespace

std::vector<CommViolation> autoshard::pipeline::verifyCommunication(
    const std::vector<RankProgram> &programs, const CommGroups &groups,
    const RankNamer &rankName) {
  std::vector<CommViolation> violations;
  checkMalformed(programs, groups, rankName, violations);
  if (!violations.empty())
    return violations;
  checkMessages(programs, rankName, violations);
  checkCollectives(programs, groups, rankName, violations);
  checkDeadlock(programs, groups, rankName, violations);
  return violations;
}

std::string autoshard::pipeline::formatViolations(
    const std::vector<CommViolation> &violations) {
  std::string text;
  for (const CommViolation &violation : violations)
    text += violation.message + "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// lowerScheduleToComm
//===----------------------------------------------------------------------===//

namespace {

using Kind = PipelineOp::Kind;

/// A message implied by a compute op: the destination rank and signature.
struct Message {
  int64_t dst;
  int64_t consumerStage;
  int64_t microbatch;
  bool isGrad;
  std::string signature;
};

/// The message `op` sends after it runs, if its consumer is on another rank.
std::optional<Message> outgoing(const PipelineSchedule &schedule,
                                const PipelineOp &op,
                                const LowerOptions &options) {
  int64_t s = op.stage, r = schedule.stageToRank[s];
  auto suffix = [](const std::string &type) {
    return type.empty() ? std::string() : " " + type;
  };
  if (op.kind == Kind::F && s + 1 < schedule.numStages &&
      schedule.stageToRank[s + 1] != r)
    return Message{schedule.stageToRank[s + 1], s + 1, op.microbatch, false,
                   "act s" + std::to_string(s) + "->s" + std::to_string(s + 1) +
                       " mb=" + std::to_string(op.microbatch) +
                       suffix(options.activationType)};
  if ((op.kind == Kind::B || op.kind == Kind::I) && s > 0 &&
      schedule.stageToRank[s - 1] != r)
    return Message{schedule.stageToRank[s - 1], s - 1, op.microbatch, true,
                   "grad s" + std::to_string(s) + "->s" +
                       std::to_string(s - 1) +
                       " mb=" + std::to_string(op.microbatch) +
                       suffix(options.gradientType)};
  return std::nullopt;
}

/// The producer of the message `op` needs before it runs, if that producer
/// is on another rank: F(s-1) for F(s), B/I(s+1) for B/I(s).
std::optional<PipelineOp> remoteProducer(const PipelineSchedule &schedule,
                                         const PipelineOp &op) {
  int64_t s = op.stage, r = schedule.stageToRank[s];
  if (op.kind == Kind::F && s > 0 && schedule.stageToRank[s - 1] != r)
    return PipelineOp{Kind::F, s - 1, op.microbatch};
  if ((op.kind == Kind::B || op.kind == Kind::I) &&
      s + 1 < schedule.numStages && schedule.stageToRank[s + 1] != r)
    return PipelineOp{Kind::B, s + 1, op.microbatch}; // or I: same message
  return std::nullopt;
}

std::string opLabel(int64_t rank, int64_t index, const PipelineOp &op) {
  return "rank " + std::to_string(rank) + " op #" + std::to_string(index) +
         " " + formatOp(op);
}

} // namespace

OrError<CommLowering>
autoshard::pipeline::lowerScheduleToComm(const PipelineSchedule &schedule,
                                         const LowerOptions &options) {
  using Result = OrError<CommLowering>;
  std::vector<std::string> errors = validateSchedule(schedule);
  if (!errors.empty())
    return Result::failure("cannot lower a malformed schedule: " +
                           errors.front());
  int64_t p = schedule.numRanks;
  CommLowering lowering;
  lowering.programs.resize(p);

  // Consumer op of each incoming message, for recv labels:
  // (rank, consumer stage, mb, isGrad) -> label of the consuming op.
  std::map<std::tuple<int64_t, int64_t, int64_t, bool>, std::string> consumer;
  for (int64_t r = 0; r < p; ++r)
    for (int64_t i = 0, e = schedule.rankOrders[r].size(); i < e; ++i) {
      const PipelineOp &op = schedule.rankOrders[r][i];
      if (op.kind != Kind::W)
        consumer[{r, op.stage, op.microbatch, op.kind != Kind::F}] =
            opLabel(r, i, op);
    }
  auto emitSend = [&](int64_t r, int64_t i, const PipelineOp &op,
                      const Message &msg) {
    lowering.programs[r].push_back(CommEvent::send(
        msg.dst, msg.signature,
        opLabel(r, i, op) + ": send to rank " + std::to_string(msg.dst)));
  };
  auto emitRecv = [&](int64_t src, const Message &msg) {
    lowering.programs[msg.dst].push_back(
        CommEvent::recv(src, msg.signature,
                        "rank " + std::to_string(msg.dst) + " recv from rank " +
                            std::to_string(src) + " for " +
                            consumer[{msg.dst, msg.consumerStage,
                                      msg.microbatch, msg.isGrad}]));
  };

  if (options.placement == RecvPlacement::BeforeUse) {
    for (int64_t r = 0; r < p; ++r) {
      const auto &order = schedule.rankOrders[r];
      for (int64_t i = 0, e = order.size(); i < e; ++i) {
        const PipelineOp &op = order[i];
        if (std::optional<PipelineOp> producer = remoteProducer(schedule, op)) {
          std::optional<Message> msg = outgoing(schedule, *producer, options);
          lowering.programs[r].push_back(CommEvent::recv(
              schedule.stageToRank[producer->stage], msg->signature,
              "rank " + std::to_string(r) + " recv from rank " +
                  std::to_string(schedule.stageToRank[producer->stage]) +
                  " for " + opLabel(r, i, op)));
        }
        lowering.programs[r].push_back(CommEvent::compute(opLabel(r, i, op)));
        if (std::optional<Message> msg = outgoing(schedule, op, options))
          emitSend(r, i, op, *msg);
      }
    }
  } else {
    // torch _add_send_recv: lockstep rounds, one op per rank per round.
    std::vector<size_t> next(p, 0);
    // Per rank: messages received (consumer stage, mb, isGrad) and ops done.
    std::vector<std::set<std::tuple<int64_t, int64_t, bool>>> received(p);
    std::vector<std::set<std::tuple<int64_t, int64_t, int>>> ran(p);
    auto ready = [&](int64_t r, const PipelineOp &op) {
      int64_t s = op.stage, j = op.microbatch;
      if (op.kind == Kind::F && s > 0)
        return received[r].count({s, j, false}) ||
               ran[r].count({s - 1, j, static_cast<int>(Kind::F)});
      if ((op.kind == Kind::B || op.kind == Kind::I) &&
          s + 1 < schedule.numStages)
        return received[r].count({s, j, true}) ||
               ran[r].count({s + 1, j, static_cast<int>(Kind::B)}) ||
               ran[r].count({s + 1, j, static_cast<int>(Kind::I)});
      return true;
    };
    bool remaining = true;
    while (remaining) {
      remaining = false;
      bool progress = false;
      for (int64_t r = 0; r < p; ++r) {
        const auto &order = schedule.rankOrders[r];
        if (next[r] == order.size())
          continue;
        remaining = true;
        const PipelineOp &op = order[next[r]];
        if (!ready(r, op))
          continue;
        int64_t i = next[r]++;
        lowering.programs[r].push_back(CommEvent::compute(opLabel(r, i, op)));
        ran[r].insert({op.stage, op.microbatch, static_cast<int>(op.kind)});
        if (std::optional<Message> msg = outgoing(schedule, op, options)) {
          emitSend(r, i, op, *msg);
          emitRecv(r, *msg);
          received[msg->dst].insert(
              {msg->consumerStage, msg->microbatch, msg->isGrad});
        }
        progress = true;
      }
      if (remaining && !progress) {
        std::string blocked;
        for (int64_t r = 0; r < p; ++r)
          if (next[r] < schedule.rankOrders[r].size())
            blocked += (blocked.empty() ? "" : ", ") +
                       opLabel(r, next[r], schedule.rankOrders[r][next[r]]);
        return Result::failure(
            "cannot place receives: schedule '" + schedule.name +
            "' cannot run (dependency cycle or missing producer); blocked "
            "at " +
            blocked);
      }
    }
  }

  if (options.tiedEmbeddingAllReduce) {
    int64_t first = schedule.stageToRank.front();
    int64_t last = schedule.stageToRank.back();
    if (first != last) {
      std::vector<int64_t> members = {std::min(first, last),
                                      std::max(first, last)};
      lowering.groups[options.tiedEmbeddingGroup] = members;
      for (int64_t r : members)
        lowering.programs[r].push_back(CommEvent::collective(
            options.tiedEmbeddingGroup, "all_reduce sum tied-embedding-grad",
            "rank " + std::to_string(r) +
                " tied-embedding gradient all-reduce"));
    }
  }
  return lowering;
}
