//===- CommVerify.h - Communication program verifier ------------*- C++ -*-===//
//
// An abstract per-rank communication program (sends, receives, collectives
// and compute markers in program order) and its verifier: Checks C (message
// matching) and D (runtime blocking semantics, deadlock) of
// /work/shared/reference/algorithms.md §1.6. The programs are independent of
// pipeline schedules, so they can be built from compiled IR as well as from
// a PipelineSchedule (lowerScheduleToComm).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PIPELINE_COMMVERIFY_H
#define AUTOSHARD_PIPELINE_COMMVERIFY_H

#include "autoshard/Pipeline/Schedule.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace autoshard::pipeline {

/// One communication-relevant event of a rank's program.
struct CommEvent {
  /// Send: a non-blocking (buffered) isend to `peer`. Recv: a receive from
  /// `peer` that blocks until the matching send has been issued. Collective:
  /// blocks until every member of `group` has reached it. Compute: never
  /// blocks (a marker that keeps labels and positions meaningful).
  enum class Kind { Send, Recv, Collective, Compute };
  Kind kind = Kind::Compute;
  /// World rank of the other side (Send/Recv only; -1 otherwise).
  int64_t peer = -1;
  /// Communicator/group id (Collective only; -1 otherwise), a key of the
  /// CommGroups passed to verifyCommunication.
  int64_t group = -1;
  /// What is communicated; two messages (or collective calls) match iff
  /// their signatures are equal, e.g. "act s1->s2 mb=3 f32[8x64x128]" or
  /// "all_reduce sum f32[50304x768]".
  std::string signature;
  /// Where the event comes from, for messages, e.g. "rank 1 op #12
  /// dist.send".
  std::string label;

  /// A Send of `signature` to world rank `peer`.
  static CommEvent send(int64_t peer, std::string signature,
                        std::string label = "");
  /// A Recv of `signature` from world rank `peer`.
  static CommEvent recv(int64_t peer, std::string signature,
                        std::string label = "");
  /// A Collective call `signature` on group id `group`.
  static CommEvent collective(int64_t group, std::string signature,
                              std::string label = "");
  /// A Compute marker (no communication).
  static CommEvent compute(std::string label);
};

/// The program of one rank, in program order.
using RankProgram = std::vector<CommEvent>;

/// Group membership: group id -> the world ranks of its members, in
/// communicator order (no duplicates).
using CommGroups = std::map<int64_t, std::vector<int64_t>>;

/// How messages name the rank of `programs[index]`; empty: by the index.
using RankNamer = std::function<std::string(int64_t index)>;

/// One problem found by verifyCommunication.
struct CommViolation {
  enum class Kind {
    /// A bad peer or group: out of range, a rank sending to itself, an
    /// unknown group, a rank entering a collective of a group it is not in.
    Malformed,
    /// Check C, point-to-point: the k-th send src->dst and the k-th recv on
    /// dst from src have different signatures.
    MessageMismatch,
    /// Check C, point-to-point: src sends dst a different number of
    /// messages than dst receives from src.
    MessageCount,
    /// Check C, collectives: the members of a group enter different
    /// sequences of collectives (order, signature or count).
    CollectiveMismatch,
    /// Check D: the simulated run does not complete.
    Deadlock,
  };
  Kind kind;
  std::string message;
};

/// Checks C and D of algorithms.md §1.6 on one program per world rank
/// (programs[r] is rank r's; peers are indices into `programs`):
///  - (C) for every ordered pair (src, dst), the k-th send src->dst must
///    have the signature of the k-th recv on dst from src, and the counts
///    must agree (NCCL p2p has no tags: calls to the same peer match in
///    order; NCCL user guide, p2p). The message names both ranks, k, and
///    both signatures and labels; only the first mismatch per pair is
///    reported. For each group, every member must enter the group's
///    collectives in the same order with the same signatures; the message
///    names the group, its ranks, the position and the first mismatch.
///  - (D) a simulation with sends non-blocking, a recv blocking until its
///    (k-th, FIFO) send has been issued, a collective blocking until every
///    member reached it. If it does not complete, one Deadlock violation
///    names each blocked rank with its blocked event and the wait-for cycle
///    (or the finished rank waited for). Skipped when there is a Malformed
///    violation.
/// Ranks are named in messages by `rankName` when it is given (a caller that
/// verifies a subset of the world, e.g. one rank per class of symmetric
/// ranks, passes the world rank each program stands for), else by their
/// index in `programs`.
/// Returns the violations; empty = verified.
std::vector<CommViolation>
verifyCommunication(const std::vector<RankProgram> &programs,
                    const CommGroups &groups, const RankNamer &rankName = {});

/// All violation messages, one per line (for diagnostics and test output).
std::string formatViolations(const std::vector<CommViolation> &violations);

/// Where lowerScheduleToComm places each receive.
enum class RecvPlacement {
  /// torch `_add_send_recv` (schedules.py): simulate all ranks in lockstep
  /// (one op per rank per round, ranks in increasing order) and append the
  /// receiver's recv at the moment the sender issues its send ("we let a
  /// sender on another rank put our recv ops in place"); the recv is posted
  /// there (irecv) and waited before its consumer. Recvs then follow each
  /// sender's send order, so every valid schedule verifies (§1.6 C(a)).
  /// The Recv event sits at the posting position; verifyCommunication
  /// blocks there, which is stricter than torch's wait before use, so a
  /// program that verifies also runs with the later wait.
  SenderOrder,
  /// The naive lowering of §1.6 Check C: each op's recvs immediately before
  /// it, its sends immediately after. V-shaped schedules (ZB-V) fail Check C
  /// with it, because activations and gradients share a direction.
  BeforeUse,
};

/// Options of lowerScheduleToComm.
struct LowerOptions {
  RecvPlacement placement = RecvPlacement::SenderOrder;
  /// Appended (after a space) to every activation/gradient signature, e.g.
  /// "f32[8x64x128]"; empty = nothing.
  std::string activationType;
  std::string gradientType;
  /// Add the tied-embedding gradient all-reduce between the ranks of the
  /// first and last stage, after all compute of each member, as a
  /// Collective on group `tiedEmbeddingGroup` = {rank(0), rank(S-1)}
  /// (Megatron's embedding group). Not emitted when both stages are on one
  /// rank (p = 1, ZB-V): the gradients are then summed locally.
  bool tiedEmbeddingAllReduce = false;
  int64_t tiedEmbeddingGroup = 0;
};

/// The per-rank programs of a lowered schedule and the groups they use.
struct CommLowering {
  std::vector<RankProgram> programs;
  CommGroups groups;
};

/// Lowers a schedule to one RankProgram per pipeline rank (rank r = world
/// rank r): each compute op becomes a Compute event labelled
/// "rank <r> op #<i> <op>", preceded/followed by its receives/sends. An F of
/// stage s sends "act s<s>->s<s+1> mb=<j>" to the rank of stage s+1, a B or
/// I of stage s sends "grad s<s>->s<s-1> mb=<j>" to the rank of stage s-1;
/// nothing is sent between stages on the same rank (torch passes the tensor
/// locally). With SenderOrder placement, fails (naming the blocked ops) when
/// the schedule cannot run (a dependency cycle or a missing producer); with
/// BeforeUse it never fails and verifyCommunication reports the problem.
OrError<CommLowering> lowerScheduleToComm(const PipelineSchedule &schedule,
                                          const LowerOptions &options = {});

} // namespace autoshard::pipeline

#endif // AUTOSHARD_PIPELINE_COMMVERIFY_H
