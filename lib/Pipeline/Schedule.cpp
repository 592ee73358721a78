//===- Schedule.cpp - Pipeline-parallel schedules -------------------------===//
//
// Generators follow algorithms.md §1.4 (re-derived from torch
// torch/distributed/pipelining/schedules.py and Megatron-Core
// pipeline_parallel/schedules.py); §1.5 holds their golden outputs.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Pipeline/Schedule.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace autoshard::pipeline;
using Kind = PipelineOp::Kind;

char autoshard::pipeline::opKindLetter(Kind kind) {
  switch (kind) {
  case Kind::F:
    return 'F';
  case Kind::B:
    return 'B';
  case Kind::I:
    return 'I';
  case Kind::W:
    return 'W';
  }
  return '?';
}

std::string autoshard::pipeline::formatOp(const PipelineOp &op) {
  return std::to_string(op.stage) + opKindLetter(op.kind) +
         std::to_string(op.microbatch);
}

//===----------------------------------------------------------------------===//
// Schedule kinds
//===----------------------------------------------------------------------===//

const char *autoshard::pipeline::scheduleKindName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved1F1B:
    return "interleaved";
  case ScheduleKind::LoopedBFS:
    return "looped-bfs";
  case ScheduleKind::ZBH1:
    return "zb-h1";
  case ScheduleKind::ZBV:
    return "zb-v";
  }
  return "?";
}

bool autoshard::pipeline::splitsBackward(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::ZBH1:
  case ScheduleKind::ZBV:
    return true;
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
  case ScheduleKind::Interleaved1F1B:
  case ScheduleKind::LoopedBFS:
    return false;
  }
  return false;
}

OrError<ScheduleKind>
autoshard::pipeline::parseScheduleKind(std::string_view name) {
  static const ScheduleKind kinds[] = {ScheduleKind::GPipe,
                                       ScheduleKind::OneFOneB,
                                       ScheduleKind::Interleaved1F1B,
                                       ScheduleKind::LoopedBFS,
                                       ScheduleKind::ZBH1,
                                       ScheduleKind::ZBV};
  for (ScheduleKind kind : kinds)
    if (name == scheduleKindName(kind))
      return kind;
  if (name == "interleaved-1f1b")
    return ScheduleKind::Interleaved1F1B;
  return OrError<ScheduleKind>::failure(
      "unknown pipeline schedule '" + std::string(name) +
      "' (expected gpipe, 1f1b, interleaved, interleaved-1f1b, looped-bfs, "
      "zb-h1 or zb-v)");
}

//===----------------------------------------------------------------------===//
// Stage maps
//===----------------------------------------------------------------------===//

std::vector<int64_t>
autoshard::pipeline::loopStageToRank(int64_t numRanks, int64_t stagesPerRank) {
  std::vector<int64_t> map(numRanks * stagesPerRank);
  for (int64_t s = 0, e = map.size(); s < e; ++s)
    map[s] = s % numRanks;
  return map;
}

std::vector<int64_t> autoshard::pipeline::vStageToRank(int64_t numRanks) {
  std::vector<int64_t> map(2 * numRanks);
  for (int64_t r = 0; r < numRanks; ++r) {
    map[r] = r;
    map[2 * numRanks - 1 - r] = r;
  }
  return map;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

namespace {

PipelineSchedule makeSchedule(ScheduleKind kind, int64_t p, int64_t m,
                              std::vector<int64_t> stageToRank) {
  PipelineSchedule schedule;
  schedule.name = scheduleKindName(kind);
  schedule.numRanks = p;
  schedule.numStages = stageToRank.size();
  schedule.numMicrobatches = m;
  schedule.stageToRank = std::move(stageToRank);
  schedule.rankOrders.resize(p);
  return schedule;
}

/// torch ScheduleGPipe.
void buildGPipe(PipelineSchedule &schedule) {
  int64_t m = schedule.numMicrobatches;
  for (int64_t r = 0; r < schedule.numRanks; ++r) {
    auto &order = schedule.rankOrders[r];
    for (int64_t j = 0; j < m; ++j)
      order.push_back({Kind::F, r, j});
    for (int64_t j = 0; j < m; ++j)
      order.push_back({Kind::B, r, j});
  }
}

/// Megatron-Core forward_backward_pipelining_without_interleaving.
void buildOneFOneB(PipelineSchedule &schedule) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  for (int64_t r = 0; r < p; ++r) {
    auto &order = schedule.rankOrders[r];
    int64_t warmup = std::min(p - r - 1, m);
    for (int64_t j = 0; j < warmup; ++j)
      order.push_back({Kind::F, r, j});
    for (int64_t j = 0; j < m - warmup; ++j) {
      order.push_back({Kind::F, r, j + warmup});
      order.push_back({Kind::B, r, j});
    }
    for (int64_t j = m - warmup; j < m; ++j)
      order.push_back({Kind::B, r, j});
  }
}

/// Megatron-Core forward_backward_pipelining_with_interleaving with
/// microbatch_group_size_per_vp_stage = g: `get_schedule_table` lists
/// (microbatch, chunk) per virtual microbatch k; forward k runs
/// table[k], backward k runs table[k] on chunk v-1-c.
void buildInterleaved(PipelineSchedule &schedule, int64_t v, int64_t g) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  std::vector<std::pair<int64_t, int64_t>> table; // (microbatch, chunk)
  for (int64_t first = 0; first < m; first += g) {
    int64_t last = first + g >= m ? m : first + g;
    for (int64_t c = 0; c < v; ++c)
      for (int64_t j = first; j < last; ++j)
        table.push_back({j, c});
  }
  int64_t total = v * m;
  for (int64_t r = 0; r < p; ++r) {
    auto &order = schedule.rankOrders[r];
    auto forward = [&](int64_t k) {
      order.push_back({Kind::F, table[k].second * p + r, table[k].first});
    };
    auto backward = [&](int64_t k) {
      order.push_back(
          {Kind::B, (v - 1 - table[k].second) * p + r, table[k].first});
    };
    int64_t warmup = std::min(2 * (p - r - 1) + (v - 1) * g, total);
    for (int64_t k = 0; k < warmup; ++k)
      forward(k);
    for (int64_t k = 0; k < total - warmup; ++k) {
      forward(k + warmup);
      backward(k);
    }
    for (int64_t k = total - warmup; k < total; ++k)
      backward(k);
  }
}

/// torch ScheduleLoopedBFS.
void buildLoopedBFS(PipelineSchedule &schedule, int64_t v) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  for (int64_t r = 0; r < p; ++r) {
    auto &order = schedule.rankOrders[r];
    for (int64_t c = 0; c < v; ++c)
      for (int64_t j = 0; j < m; ++j)
        order.push_back({Kind::F, c * p + r, j});
    for (int64_t c = v - 1; c >= 0; --c)
      for (int64_t j = m - 1; j >= 0; --j)
        order.push_back({Kind::B, c * p + r, j});
  }
}

/// torch ScheduleInterleavedZeroBubble with one stage per rank, in the
/// closed form of algorithms.md §1.4 (checked equal to torch's output).
void buildZBH1(PipelineSchedule &schedule) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  for (int64_t i = 0; i < p; ++i) {
    auto &order = schedule.rankOrders[i];
    for (int64_t x = 0; x <= m + p - 2; ++x) {
      if (x < m)
        order.push_back({Kind::F, i, x});
      int64_t in = x - (p - 1 - i), w = x - (p - 1);
      if (in >= 0 && in < m)
        order.push_back({Kind::I, i, in});
      if (w >= 0 && w < m)
        order.push_back({Kind::W, i, w});
    }
  }
}

/// torch ScheduleZBVZeroBubble._calculate_single_rank_operations.
void buildZBV(PipelineSchedule &schedule) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  int64_t n = std::max(2 * p - 1, m);
  for (int64_t r = 0; r < p; ++r) {
    auto &order = schedule.rankOrders[r];
    int64_t s0 = r, s1 = 2 * p - 1 - r;
    int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    // Ops of microbatches >= m (padding up to n) become no-ops.
    auto emit = [&](Kind kind, int64_t stage, int64_t mb) {
      if (mb < m)
        order.push_back({kind, stage, mb});
    };
    for (int64_t k = 0; k < 2 * (p - r) - 1; ++k)
      emit(Kind::F, s0, f0++);
    for (int64_t k = 0; k < r; ++k) {
      emit(Kind::F, s1, f1++);
      emit(Kind::F, s0, f0++);
    }
    for (int64_t k = 0; k < p - r; ++k) {
      emit(Kind::F, s1, f1++);
      emit(Kind::I, s1, b1);
      emit(Kind::W, s1, b1++);
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n)
        emit(Kind::F, s0, f0++);
      emit(Kind::I, s0, b0);
      emit(Kind::W, s0, b0++);
      emit(Kind::F, s1, f1++);
      emit(Kind::I, s1, b1);
      emit(Kind::W, s1, b1++);
    }
    int64_t w0 = b0, w1 = b1;
    for (int64_t k = 0; k < r; ++k) {
      emit(Kind::I, s0, b0++);
      emit(Kind::I, s1, b1++);
    }
    for (int64_t k = 0; k < p - r; ++k) {
      emit(Kind::I, s0, b0++);
      emit(Kind::W, s0, w0++);
    }
    while (w1 < b1)
      emit(Kind::W, s1, w1++);
    while (w0 < b0)
      emit(Kind::W, s0, w0++);
  }
}

std::string badParam(ScheduleKind kind, const std::string &what) {
  return std::string("pipeline schedule '") + scheduleKindName(kind) +
         "': " + what;
}

} // namespace

OrError<PipelineSchedule> autoshard::pipeline::buildSchedule(ScheduleKind kind,
                                                             int64_t p,
                                                             int64_t m,
                                                             int64_t v) {
  using Result = OrError<PipelineSchedule>;
  if (p < 1)
    return Result::failure(badParam(
        kind, "p (pipeline ranks) must be >= 1, got p=" + std::to_string(p)));
  if (m < 1)
    return Result::failure(badParam(
        kind, "m (microbatches) must be >= 1, got m=" + std::to_string(m)));
  if (v < 1)
    return Result::failure(badParam(
        kind, "v (stages per rank) must be >= 1, got v=" + std::to_string(v)));

  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
  case ScheduleKind::ZBH1: {
    if (v != 1)
      return Result::failure(badParam(
          kind, "v (stages per rank) must be 1, got v=" + std::to_string(v) +
                    " (use 'interleaved', 'looped-bfs' or 'zb-v' for "
                    "several stages per rank)"));
    PipelineSchedule schedule = makeSchedule(kind, p, m, loopStageToRank(p, 1));
    if (kind == ScheduleKind::GPipe)
      buildGPipe(schedule);
    else if (kind == ScheduleKind::OneFOneB)
      buildOneFOneB(schedule);
    else
      buildZBH1(schedule);
    return schedule;
  }
  case ScheduleKind::Interleaved1F1B: {
    if (v < 2)
      return Result::failure(badParam(
          kind, "v (stages per rank) must be >= 2, got v=" + std::to_string(v) +
                    " (use '1f1b' for v=1)"));
    // Megatron-Core: microbatch_group_size_per_vp_stage g (here g = p) must
    // lie in [p, m], and m % g == 0 or m % g >= p; with g = p this is
    // m >= p and m % p == 0.
    int64_t g = p;
    if (m < g)
      return Result::failure(badParam(
          kind, "m (microbatches) must be >= p, got m=" + std::to_string(m) +
                    " with p=" + std::to_string(p) +
                    " (Megatron-Core's interleaved schedule runs microbatches "
                    "in groups of p)"));
    if (m % g != 0 && m % g < p)
      return Result::failure(badParam(
          kind, "m (microbatches) must be a multiple of p, got m=" +
                    std::to_string(m) + " with p=" + std::to_string(p) +
                    " (Megatron-Core's interleaved schedule runs microbatches "
                    "in groups of p)"));
    PipelineSchedule schedule = makeSchedule(kind, p, m, loopStageToRank(p, v));
    buildInterleaved(schedule, v, g);
    return schedule;
  }
  case ScheduleKind::LoopedBFS: {
    PipelineSchedule schedule = makeSchedule(kind, p, m, loopStageToRank(p, v));
    buildLoopedBFS(schedule, v);
    return schedule;
  }
  case ScheduleKind::ZBV: {
    if (v != 2)
      return Result::failure(badParam(
          kind, "v (stages per rank) must be 2, got v=" + std::to_string(v) +
                    " (ZB-V places exactly two stages per rank in a V)"));
    PipelineSchedule schedule = makeSchedule(kind, p, m, vStageToRank(p));
    buildZBV(schedule);
    return schedule;
  }
  }
  return Result::failure("unknown pipeline schedule kind");
}

//===----------------------------------------------------------------------===//
// Text format
//===----------------------------------------------------------------------===//

std::string
autoshard::pipeline::formatSchedule(const PipelineSchedule &schedule) {
  std::string text;
  for (size_t r = 0; r < schedule.rankOrders.size(); ++r) {
    text += "rank" + std::to_string(r) + ":";
    for (const PipelineOp &op : schedule.rankOrders[r])
      text += " " + formatOp(op);
    text += "\n";
  }
  return text;
}

namespace {

/// Bounds the tables a parsed schedule allocates (stages, microbatches).
constexpr int64_t kMaxParsedIndex = 1 << 20;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// Parses a non-empty run of decimal digits at text[pos...]; advances pos.
std::optional<int64_t> parseNumber(std::string_view text, size_t &pos) {
  size_t start = pos;
  int64_t value = 0;
  while (pos < text.size() && isDigit(text[pos])) {
    if (value > (INT64_MAX - 9) / 10)
      return std::nullopt;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == start)
    return std::nullopt;
  return value;
}

/// Parses one op token like "4B0"; on failure returns why.
OrError<PipelineOp> parseOpToken(std::string_view token) {
  using Result = OrError<PipelineOp>;
  size_t pos = 0;
  std::optional<int64_t> stage = parseNumber(token, pos);
  if (!stage)
    return Result::failure("expected <stage><F|B|I|W><microbatch>, e.g. 4B0");
  if (pos == token.size())
    return Result::failure("missing op kind and microbatch after the stage");
  Kind kind;
  switch (token[pos]) {
  case 'F':
    kind = Kind::F;
    break;
  case 'B':
    kind = Kind::B;
    break;
  case 'I':
    kind = Kind::I;
    break;
  case 'W':
    kind = Kind::W;
    break;
  default:
    return Result::failure(std::string("unknown op kind '") + token[pos] +
                           "' (expected F, B, I or W)");
  }
  ++pos;
  std::optional<int64_t> mb = parseNumber(token, pos);
  if (!mb)
    return Result::failure("missing microbatch number after the op kind");
  if (pos != token.size())
    return Result::failure("unexpected '" + std::string(token.substr(pos)) +
                           "' after the op");
  if (*stage > kMaxParsedIndex || *mb > kMaxParsedIndex)
    return Result::failure("stage or microbatch larger than " +
                           std::to_string(kMaxParsedIndex));
  return PipelineOp{kind, *stage, *mb};
}

} // namespace

OrError<PipelineSchedule>
autoshard::pipeline::parseSchedule(std::string_view text, std::string name) {
  using Result = OrError<PipelineSchedule>;
  std::map<int64_t, std::vector<PipelineOp>> ranks;
  int64_t lineNo = 0;
  size_t lineStart = 0;
  while (lineStart < text.size()) {
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string_view::npos)
      lineEnd = text.size();
    std::string_view line = text.substr(lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    ++lineNo;
    std::string where = "line " + std::to_string(lineNo) + ": ";

    size_t pos = 0;
    while (pos < line.size() && isSpace(line[pos]))
      ++pos;
    if (pos == line.size() || line[pos] == '#' || line.substr(pos, 3) == "```")
      continue;
    if (line.substr(pos, 4) != "rank")
      return Result::failure(where + "expected 'rank<N>:' at the start, got '" +
                             std::string(line.substr(pos)) + "'");
    pos += 4;
    std::optional<int64_t> rank = parseNumber(line, pos);
    if (!rank || pos >= line.size() || line[pos] != ':')
      return Result::failure(where + "expected 'rank<N>:' at the start, got '" +
                             std::string(line.substr(0, pos + 1)) + "'");
    ++pos;
    if (ranks.count(*rank))
      return Result::failure(where + "rank " + std::to_string(*rank) +
                             " is listed twice");
    std::vector<PipelineOp> &order = ranks[*rank];
    while (true) {
      while (pos < line.size() && isSpace(line[pos]))
        ++pos;
      if (pos == line.size())
        break;
      size_t tokenStart = pos;
      while (pos < line.size() && !isSpace(line[pos]))
        ++pos;
      std::string_view token = line.substr(tokenStart, pos - tokenStart);
      OrError<PipelineOp> op = parseOpToken(token);
      if (!op)
        return Result::failure(where + "token '" + std::string(token) +
                               "': " + op.error());
      order.push_back(*op);
    }
  }
  if (ranks.empty())
    return Result::failure("no 'rank<N>:' lines in the schedule text");
  int64_t numRanks = ranks.size();
  for (int64_t r = 0; r < numRanks; ++r)
    if (!ranks.count(r))
      return Result::failure("rank " + std::to_string(r) + " is missing (" +
                             std::to_string(numRanks) +
                             " rank lines must be rank0..rank" +
                             std::to_string(numRanks - 1) + ")");

  PipelineSchedule schedule;
  schedule.name = std::move(name);
  schedule.numRanks = numRanks;
  int64_t maxStage = -1, maxMb = -1;
  for (auto &[rank, order] : ranks)
    for (const PipelineOp &op : order) {
      maxStage = std::max(maxStage, op.stage);
      maxMb = std::max(maxMb, op.microbatch);
    }
  schedule.numStages = maxStage + 1;
  schedule.numMicrobatches = maxMb + 1;
  schedule.stageToRank.assign(schedule.numStages, -1);
  for (auto &[rank, order] : ranks)
    for (const PipelineOp &op : order)
      if (schedule.stageToRank[op.stage] < 0)
        schedule.stageToRank[op.stage] = rank;
  for (auto &[rank, order] : ranks)
    schedule.rankOrders.push_back(std::move(order));
  return schedule;
}

//===----------------------------------------------------------------------===//
// Check A: well-formedness
//===----------------------------------------------------------------------===//

std::vector<std::string>
autoshard::pipeline::validateSchedule(const PipelineSchedule &schedule) {
  std::vector<std::string> errors;
  int64_t p = schedule.numRanks, S = schedule.numStages,
          m = schedule.numMicrobatches;
  if (p < 1)
    errors.push_back("numRanks must be >= 1, got " + std::to_string(p));
  if (S < 1)
    errors.push_back("numStages must be >= 1, got " + std::to_string(S));
  if (m < 1)
    errors.push_back("numMicrobatches must be >= 1, got " + std::to_string(m));
  if (static_cast<int64_t>(schedule.rankOrders.size()) != p)
    errors.push_back("rankOrders has " +
                     std::to_string(schedule.rankOrders.size()) +
                     " entries, expected numRanks=" + std::to_string(p));
  if (static_cast<int64_t>(schedule.stageToRank.size()) != S)
    errors.push_back("stageToRank has " +
                     std::to_string(schedule.stageToRank.size()) +
                     " entries, expected numStages=" + std::to_string(S));
  if (!errors.empty())
    return errors;
  for (int64_t s = 0; s < S; ++s)
    if (schedule.stageToRank[s] < 0 || schedule.stageToRank[s] >= p)
      errors.push_back(
          "stage " + std::to_string(s) + " has no owning rank in [0, " +
          std::to_string(p) +
          ") (stageToRank = " + std::to_string(schedule.stageToRank[s]) + ")");

  // Where each (stage, mb, kind) occurs: (rank, position) per occurrence.
  using Key = std::tuple<int64_t, int64_t, int>;
  std::map<Key, std::vector<std::pair<int64_t, int64_t>>> where;
  for (int64_t r = 0; r < p; ++r) {
    const auto &order = schedule.rankOrders[r];
    for (int64_t i = 0, e = order.size(); i < e; ++i) {
      const PipelineOp &op = order[i];
      std::string at = "rank " + std::to_string(r) + " op #" +
                       std::to_string(i) + " " + formatOp(op);
      if (op.stage < 0 || op.stage >= S) {
        errors.push_back(at + ": stage out of range [0, " + std::to_string(S) +
                         ")");
        continue;
      }
      if (op.microbatch < 0 || op.microbatch >= m) {
        errors.push_back(at + ": microbatch out of range [0, " +
                         std::to_string(m) + ")");
        continue;
      }
      int64_t owner = schedule.stageToRank[op.stage];
      if (owner != r && owner >= 0 && owner < p)
        errors.push_back(at + ": stage " + std::to_string(op.stage) +
                         " is owned by rank " + std::to_string(owner) +
                         " (each stage runs on exactly one rank)");
      where[{op.stage, op.microbatch, static_cast<int>(op.kind)}].push_back(
          {r, i});
    }
  }

  auto occurrences = [&](int64_t s, int64_t j, Kind kind) {
    auto it = where.find({s, j, static_cast<int>(kind)});
    return it == where.end() ? std::vector<std::pair<int64_t, int64_t>>()
                             : it->second;
  };
  auto describe = [](char letter, std::pair<int64_t, int64_t> at) {
    return std::string(1, letter) + " (rank " + std::to_string(at.first) +
           " op #" + std::to_string(at.second) + ")";
  };
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t j = 0; j < m; ++j) {
      std::string prefix =
          "stage " + std::to_string(s) + " mb " + std::to_string(j) + ": ";
      auto fs = occurrences(s, j, Kind::F), bs = occurrences(s, j, Kind::B),
           is = occurrences(s, j, Kind::I), ws = occurrences(s, j, Kind::W);
      if (fs.size() != 1)
        errors.push_back(prefix + std::to_string(fs.size()) +
                         " F ops, expected exactly 1");
      if (bs.size() + is.size() != 1)
        errors.push_back(prefix + std::to_string(bs.size()) + " B and " +
                         std::to_string(is.size()) +
                         " I ops, expected exactly one B or one I");
      if (ws.size() != is.size())
        errors.push_back(prefix + std::to_string(is.size()) + " I and " +
                         std::to_string(ws.size()) +
                         " W ops, expected as many W as I");
      // Order on the rank: F < B/I < W (only checked when unique and on the
      // same rank; other cases are reported above).
      auto before =
          [&](const std::vector<std::pair<int64_t, int64_t>> &a, char la,
              const std::vector<std::pair<int64_t, int64_t>> &b, char lb) {
            if (a.size() == 1 && b.size() == 1 && a[0].first == b[0].first &&
                a[0].second > b[0].second)
              errors.push_back(prefix + describe(lb, b[0]) + " comes before " +
                               describe(la, a[0]));
          };
      before(fs, 'F', bs, 'B');
      before(fs, 'F', is, 'I');
      before(is, 'I', ws, 'W');
    }
  }
  return errors;
}

OrError<bool>
autoshard::pipeline::backwardIsSplit(const PipelineSchedule &schedule) {
  const PipelineOp *whole = nullptr, *cut = nullptr;
  for (const std::vector<PipelineOp> &rankOps : schedule.rankOrders)
    for (const PipelineOp &op : rankOps) {
      if (op.kind == PipelineOp::Kind::B && !whole)
        whole = &op;
      if (op.kind == PipelineOp::Kind::I && !cut)
        cut = &op;
    }
  if (whole && cut)
    return OrError<bool>::failure(
        "the schedule runs " + formatOp(*whole) +
        " as a whole backward (B) but " + formatOp(*cut) +
        " cut into I and W; use B everywhere or I and W everywhere");
  return cut != nullptr;
}
