//===- ArtifactVerify.cpp - Cross-reference checks of an artifact ---------===//

#include "ArtifactVerify.h"

#include "autoshard/runtime/Ops.h"

#include <algorithm>
#include <functional>
#include <map>

namespace autoshard::runtime::detail {

namespace {

/// Throws ArtifactError("artifact 'SRC': WHERE: message").
[[noreturn]] void fail(const Artifact &a, const std::string &where,
                       const std::string &message) {
  throw ArtifactError("artifact '" + a.source + "': " + where + ": " + message);
}

std::string bufferPlace(const Function &fn, int64_t id) {
  return "function '" + fn.name + "', buffer " + std::to_string(id);
}

std::string instPlace(const Function &fn, size_t i) {
  return "function '" + fn.name + "', instruction " + std::to_string(i) +
         " ('" + fn.code[i].op + "')";
}

bool hasFrameBytes(BufferKind kind) {
  return kind == BufferKind::Local || kind == BufferKind::Input ||
         kind == BufferKind::Output;
}

void verifyState(const Artifact &a) {
  int64_t bytes = 0;
  for (const StateSpec &s : a.state) {
    std::string place = "state '" + s.name + "'";
    bytes += s.type.bytes();
    if (s.init == InitKind::Normal && !isFloat(s.type.dtype))
      fail(a, place, "normal init needs a float dtype, found " + s.type.str());
    if (s.kind == StateKind::Param)
      continue;
    int64_t of = a.findState(s.of);
    if (of < 0 || a.state[of].kind != StateKind::Param)
      fail(a, place, "field 'of' names no parameter: '" + s.of + "'");
    // Global shapes: ZeRO shards optimizer states, not their parameter.
    if (a.state[of].globalShape != s.globalShape)
      fail(a, place,
           "global shape " + TensorType{s.type.dtype, s.globalShape}.str() +
               " differs from parameter '" + s.of + "' " +
               TensorType{a.state[of].type.dtype, a.state[of].globalShape}
                   .str());
  }
  if (bytes != a.memory.stateBytes)
    fail(a, "memory",
         "field 'state_bytes' is " + std::to_string(a.memory.stateBytes) +
             ", but the state tensors hold " + std::to_string(bytes) +
             " bytes");
  int64_t constBytes = 0;
  for (const ConstantSpec &c : a.constants)
    constBytes += c.type.bytes();
  if (constBytes != a.memory.constantBytes)
    fail(a, "memory",
         "field 'constant_bytes' is " + std::to_string(a.memory.constantBytes) +
             ", but the constants hold " + std::to_string(constBytes) +
             " bytes");
}

/// Checks buffer `id` on its own; aliases are checked once their target is.
void verifyBuffer(const Artifact &a, const Function &fn, int64_t id,
                  std::vector<const BufferSpec *> &argBuffers) {
  const BufferSpec &b = fn.buffers[id];
  std::string place = bufferPlace(fn, id);
  int64_t numBuffers = static_cast<int64_t>(fn.buffers.size());
  switch (b.kind) {
  case BufferKind::Arg:
    if (b.index >= fn.numArgs)
      fail(a, place,
           "field 'index' is " + std::to_string(b.index) +
               ", but the function has num_args " + std::to_string(fn.numArgs));
    if (argBuffers[b.index])
      fail(a, place,
           "argument " + std::to_string(b.index) + " already has a buffer");
    argBuffers[b.index] = &b;
    break;
  case BufferKind::Alias: {
    if (b.of < 0 || b.of >= numBuffers || b.of == id)
      fail(a, place,
           "field 'of' must be another buffer id in [0, " +
               std::to_string(numBuffers) + "), found " + std::to_string(b.of));
    // A chain longer than the buffer count is a cycle.
    int64_t root = id;
    for (int64_t hops = 0; fn.buffers[root].kind == BufferKind::Alias; ++hops) {
      if (hops > numBuffers)
        fail(a, place, "aliases form a cycle");
      root = fn.buffers[root].of;
      if (root < 0 || root >= numBuffers)
        break; // reported when that alias is checked
    }
    const BufferSpec &of = fn.buffers[b.of];
    if (of.type.dtype != b.type.dtype || of.type.numel() != b.type.numel())
      fail(a, place,
           "alias " + b.type.str() + " of buffer " + std::to_string(b.of) +
               " " + of.type.str() + " must keep the dtype and element count");
    break;
  }
  case BufferKind::State:
    if (a.state[b.stateIndex].type != b.type)
      fail(a, place,
           "type " + b.type.str() + " differs from state '" +
               a.state[b.stateIndex].name + "' " +
               a.state[b.stateIndex].type.str());
    break;
  case BufferKind::Const:
    if (a.constants[b.constIndex].type != b.type)
      fail(a, place,
           "type " + b.type.str() + " differs from constant " +
               std::to_string(b.constIndex) + " " +
               a.constants[b.constIndex].type.str());
    break;
  case BufferKind::Local:
  case BufferKind::Input:
  case BufferKind::Output:
    if (b.bytes < b.type.bytes())
      fail(a, place,
           "field 'bytes' is " + std::to_string(b.bytes) + ", too small for " +
               b.type.str() + " (" + std::to_string(b.type.bytes()) +
               " bytes)");
    if (b.offset + b.bytes > fn.frameBytes)
      fail(a, place,
           "bytes [" + std::to_string(b.offset) + ", " +
               std::to_string(b.offset + b.bytes) + ") exceed frame_bytes " +
               std::to_string(fn.frameBytes));
    if (b.offset % dtypeSize(b.type.dtype) != 0)
      fail(a, place,
           "field 'offset' " + std::to_string(b.offset) +
               " is not a multiple of the element size of " +
               std::string(dtypeName(b.type.dtype)));
    break;
  }
}

void verifyInstruction(const Artifact &a, const Function &fn, size_t i) {
  const Instruction &inst = fn.code[i];
  std::string place = instPlace(fn, i);
  int64_t numBuffers = static_cast<int64_t>(fn.buffers.size());
  for (const std::vector<int64_t> *ids : {&inst.args, &inst.results})
    for (int64_t id : *ids)
      if (id < 0 || id >= numBuffers)
        fail(a, place,
             "buffer id " + std::to_string(id) + " out of range [0, " +
                 std::to_string(numBuffers) + ")");
  for (int64_t id : inst.results)
    if (fn.buffers[rootBuffer(fn, id)].kind == BufferKind::Const)
      fail(a, place, "writes constant buffer " + std::to_string(id));
  if (!inst.isCall())
    return;
  const Function &callee = a.functions[inst.callee];
  if (static_cast<int64_t>(inst.args.size()) != callee.numArgs)
    fail(a, place,
         "passes " + std::to_string(inst.args.size()) + " args, but '" +
             callee.name + "' has num_args " + std::to_string(callee.numArgs));
  if (inst.frameOffset + callee.frameBytes > fn.frameBytes)
    fail(a, place,
         "callee frame [" + std::to_string(inst.frameOffset) + ", " +
             std::to_string(inst.frameOffset + callee.frameBytes) +
             ") exceeds frame_bytes " + std::to_string(fn.frameBytes));
  for (const BufferSpec &param : callee.buffers) {
    if (param.kind != BufferKind::Arg)
      continue;
    const TensorType &given = fn.buffers[inst.args[param.index]].type;
    if (given != param.type)
      fail(a, place,
           "argument " + std::to_string(param.index) + " is " + given.str() +
               ", but '" + callee.name + "' expects " + param.type.str());
  }
}

/// Communication instructions: `axes` name distinct mesh axes, reductions
/// are sum or max, and every `dist.*_start` is completed by exactly one
/// later `dist.wait` with its handle in the same function, whose args are
/// the start's args then its results and whose results are the start's.
void verifyComm(const Artifact &a, const Function &fn) {
  std::map<int64_t, size_t> pending; // handle -> start instruction
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instruction &inst = fn.code[i];
    if (inst.isCall() || !isCommOp(inst.op))
      continue;
    std::string place = instPlace(fn, i);
    // Ops with a device group (not dist.wait, dist.pack, dist.unpack).
    const OpSpec *sig = lookupOp(inst.op);
    bool hasAxes = sig && sig->findAttr("axes");
    if (hasAxes) {
      std::vector<std::string> axes = inst.attrs.getStringArray("axes");
      if (axes.empty())
        fail(a, place, "attribute 'axes' must name at least one mesh axis");
      for (size_t k = 0; k < axes.size(); ++k) {
        if (a.mesh.axisIndex(axes[k]) < 0)
          fail(a, place,
               "attribute 'axes' names '" + axes[k] +
                   "', which is not an axis of the mesh");
        if (std::find(axes.begin(), axes.begin() + k, axes[k]) !=
            axes.begin() + k)
          fail(a, place, "attribute 'axes' names '" + axes[k] + "' twice");
      }
      if (inst.attrs.has("reduction")) {
        std::string r = inst.attrs.getString("reduction");
        if (r != "sum" && r != "max")
          fail(a, place,
               "attribute 'reduction' must be \"sum\" or "
               "\"max\", found \"" +
                   r + "\"");
      }
    }
    if (isAsyncStartOp(inst.op)) {
      int64_t handle = inst.attrs.getI64("handle");
      if (!pending.emplace(handle, i).second)
        fail(a, place,
             "handle " + std::to_string(handle) +
                 " is still pending from instruction " +
                 std::to_string(pending[handle]));
    } else if (inst.op == "dist.wait") {
      int64_t handle = inst.attrs.getI64("handle");
      auto it = pending.find(handle);
      if (it == pending.end())
        fail(a, place,
             "waits on handle " + std::to_string(handle) +
                 ", which no earlier dist.*_start of this "
                 "function has started");
      const Instruction &start = fn.code[it->second];
      std::vector<int64_t> args = start.args;
      args.insert(args.end(), start.results.begin(), start.results.end());
      if (inst.args != args || inst.results != start.results)
        fail(a, place,
             "must name the buffers of instruction " +
                 std::to_string(it->second) + " ('" + start.op +
                 "'): args = its args then its results, results "
                 "= its results");
      pending.erase(it);
    }
  }
  if (!pending.empty())
    fail(a, instPlace(fn, pending.begin()->second),
         "handle " + std::to_string(pending.begin()->first) +
             " is never waited on in function '" + fn.name + "'");
}

void verifyFunction(const Artifact &a, const Function &fn) {
  std::vector<const BufferSpec *> argBuffers(fn.numArgs, nullptr);
  for (size_t id = 0; id < fn.buffers.size(); ++id)
    verifyBuffer(a, fn, static_cast<int64_t>(id), argBuffers);
  for (int64_t i = 0; i < fn.numArgs; ++i)
    if (!argBuffers[i])
      fail(a, "function '" + fn.name + "'",
           "argument " + std::to_string(i) + " has no buffer of kind 'arg'");
  for (size_t i = 0; i < fn.code.size(); ++i)
    verifyInstruction(a, fn, i);
  verifyComm(a, fn);
}

void verifyNoRecursion(const Artifact &a) {
  enum Mark { Unvisited, Active, Done };
  std::vector<Mark> mark(a.functions.size(), Unvisited);
  std::function<void(size_t)> visit = [&](size_t f) {
    mark[f] = Active;
    for (const Instruction &inst : a.functions[f].code) {
      if (!inst.isCall())
        continue;
      if (mark[inst.callee] == Active)
        fail(a, "function '" + a.functions[f].name + "'",
             "calls '" + a.functions[inst.callee].name +
                 "' recursively (frames are planned statically)");
      if (mark[inst.callee] == Unvisited)
        visit(inst.callee);
    }
    mark[f] = Done;
  };
  for (size_t f = 0; f < a.functions.size(); ++f)
    if (mark[f] == Unvisited)
      visit(f);
}

/// Slot `s` of entry `e` must match exactly one buffer of kind `kind` with
/// its role and type; every such buffer must have a slot.
void verifySlots(const Artifact &a, const EntrySpec &e,
                 std::vector<Slot> &slots, BufferKind kind, const char *what) {
  const Function &fn = a.functions[e.function];
  std::string place = "entry '" + e.name + "'";
  for (Slot &s : slots) {
    int64_t found = -1;
    for (size_t id = 0; id < fn.buffers.size(); ++id) {
      const BufferSpec &b = fn.buffers[id];
      if (b.kind != kind || b.role != s.role)
        continue;
      if (found >= 0)
        fail(a, bufferPlace(fn, id),
             "repeats " + std::string(what) + " '" + s.role + "'");
      found = static_cast<int64_t>(id);
      if (b.type != s.type)
        fail(a, bufferPlace(fn, id),
             std::string(what) + " '" + s.role + "' is " + b.type.str() +
                 ", but the entry declares " + s.type.str());
    }
    if (found < 0)
      fail(a, place,
           std::string(what) + " '" + s.role + "' has no buffer in function '" +
               fn.name + "'");
    s.buffer = found;
    // Zig-zag order: the sequence dim (1) of every [batch, seq, ...] slot
    // must split into its chunks.
    if (e.zigzagChunks > 0 && s.globalShape.size() >= 2 &&
        s.globalShape[1] % e.zigzagChunks != 0)
      fail(a, place,
           std::string(what) + " '" + s.role + "' has sequence length " +
               std::to_string(s.globalShape[1]) + ", which zigzag_chunks " +
               std::to_string(e.zigzagChunks) + " does not divide");
  }
  for (size_t id = 0; id < fn.buffers.size(); ++id) {
    const BufferSpec &b = fn.buffers[id];
    bool declared = std::any_of(slots.begin(), slots.end(), [&](const Slot &s) {
      return s.role == b.role;
    });
    if (b.kind == kind && !declared)
      fail(a, bufferPlace(fn, id),
           std::string(what) + " '" + b.role + "' is not declared by entry '" +
               e.name + "'");
  }
}

/// Pipeline stages (version 3): each staged entry program reads only state
/// its stage holds, and each stage's memory adds up.
void verifyStages(const Artifact &a) {
  bool staged = false;
  for (const EntrySpec &e : a.entries) {
    if (e.ppStage < 0)
      continue;
    staged = true;
    if (!a.memory.findStage(e.ppStage))
      fail(a, "entry '" + e.key + "'",
           "pp_stage " + std::to_string(e.ppStage) +
               " has no entry in memory.stages");
    const Function &fn = a.functions[e.function];
    for (size_t id = 0; id < fn.buffers.size(); ++id) {
      const BufferSpec &b = fn.buffers[id];
      if (b.kind == BufferKind::State &&
          !a.state[b.stateIndex].heldBy(e.ppStage))
        fail(a, bufferPlace(fn, static_cast<int64_t>(id)),
             "reads state '" + a.state[b.stateIndex].name +
                 "', which pipeline stage " + std::to_string(e.ppStage) +
                 " does not hold");
    }
  }
  if (!a.memory.stages.empty() && !staged)
    fail(a, "memory", "lists stages, but no entry has a pp_stage");
  for (const StageMemory &sm : a.memory.stages) {
    std::string place = "memory, stage " + std::to_string(sm.ppStage);
    int64_t held = 0, frame = 0;
    for (const StateSpec &st : a.state)
      if (st.heldBy(sm.ppStage))
        held += st.type.bytes();
    for (const EntrySpec &e : a.entries)
      if (e.ppStage == sm.ppStage)
        frame = std::max(frame, a.functions[e.function].frameBytes);
    if (sm.stateBytes != held)
      fail(a, place,
           "field 'state_bytes' is " + std::to_string(sm.stateBytes) +
               ", but the stage's state tensors hold " + std::to_string(held));
    if (sm.transientBytes != frame)
      fail(a, place,
           "field 'transient_bytes' is " + std::to_string(sm.transientBytes) +
               ", but the stage's largest entry frame is " +
               std::to_string(frame));
    if (sm.peakBytes != held + a.memory.constantBytes + frame)
      fail(a, place,
           "field 'peak_bytes' is " + std::to_string(sm.peakBytes) +
               ", but state + constant + transient bytes are " +
               std::to_string(held + a.memory.constantBytes + frame));
  }
}

void verifyEntries(Artifact &a) {
  std::vector<bool> isEntryFunction(a.functions.size(), false);
  int64_t maxFrame = 0;
  for (EntrySpec &e : a.entries) {
    const Function &fn = a.functions[e.function];
    if (fn.numArgs != 0)
      fail(a, "entry '" + e.name + "'",
           "function '" + fn.name + "' takes " + std::to_string(fn.numArgs) +
               " args; an entry function takes none");
    verifySlots(a, e, e.inputs, BufferKind::Input, "input");
    verifySlots(a, e, e.outputs, BufferKind::Output, "output");
    isEntryFunction[e.function] = true;
    maxFrame = std::max(maxFrame, fn.frameBytes);
  }
  for (size_t f = 0; f < a.functions.size(); ++f)
    for (size_t id = 0; id < a.functions[f].buffers.size(); ++id) {
      BufferKind k = a.functions[f].buffers[id].kind;
      if (!isEntryFunction[f] &&
          (k == BufferKind::Input || k == BufferKind::Output))
        fail(a, bufferPlace(a.functions[f], static_cast<int64_t>(id)),
             "input/output buffers belong to entry functions only");
    }
  verifyStages(a);
  const MemoryPlan &m = a.memory;
  if (m.transientBytes != maxFrame)
    fail(a, "memory",
         "field 'transient_bytes' is " + std::to_string(m.transientBytes) +
             ", but the largest entry frame is " + std::to_string(maxFrame));
  int64_t peak = m.stateBytes + m.constantBytes + m.transientBytes;
  if (m.peakBytes != peak)
    fail(a, "memory",
         "field 'peak_bytes' is " + std::to_string(m.peakBytes) +
             ", but state + constant + transient bytes are " +
             std::to_string(peak));
}

/// A byte range of the frame and the instructions during which it is live.
struct LiveRange {
  int64_t begin, end;  // bytes [begin, end)
  int64_t first, last; // instructions [first, last]
  std::string what;
};

/// No two different values may share frame bytes while both are live. A
/// value is live from the first to the last instruction naming it (or any
/// alias of it); inputs from before the first instruction, outputs to after
/// the last; a call's callee frame during the call.
void verifyNoLiveOverlap(const Artifact &a, const Function &fn) {
  int64_t n = static_cast<int64_t>(fn.code.size());
  std::vector<LiveRange> ranges;
  std::vector<int64_t> rangeOf(fn.buffers.size(), -1);
  for (size_t id = 0; id < fn.buffers.size(); ++id) {
    const BufferSpec &b = fn.buffers[id];
    if (!hasFrameBytes(b.kind) || b.bytes == 0)
      continue;
    rangeOf[id] = static_cast<int64_t>(ranges.size());
    ranges.push_back({b.offset, b.offset + b.bytes,
                      b.kind == BufferKind::Input ? -1 : INT64_MAX,
                      b.kind == BufferKind::Output ? n : -1,
                      "buffer " + std::to_string(id)});
  }
  for (int64_t i = 0; i < n; ++i) {
    const Instruction &inst = fn.code[i];
    for (const std::vector<int64_t> *ids : {&inst.args, &inst.results})
      for (int64_t id : *ids) {
        int64_t r = rangeOf[rootBuffer(fn, id)];
        if (r < 0)
          continue;
        ranges[r].first = std::min(ranges[r].first, i);
        ranges[r].last = std::max(ranges[r].last, i);
      }
    if (inst.isCall() && a.functions[inst.callee].frameBytes > 0)
      ranges.push_back({inst.frameOffset,
                        inst.frameOffset + a.functions[inst.callee].frameBytes,
                        i, i,
                        "the frame of '" + a.functions[inst.callee].name +
                            "' called by instruction " + std::to_string(i)});
  }
  std::sort(
      ranges.begin(), ranges.end(),
      [](const LiveRange &x, const LiveRange &y) { return x.begin < y.begin; });
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i + 1; j < ranges.size() && ranges[j].begin < ranges[i].end;
         ++j) {
      const LiveRange &x = ranges[i], &y = ranges[j];
      if (x.first <= y.last && y.first <= x.last)
        fail(a, "function '" + fn.name + "'",
             x.what + " (bytes [" + std::to_string(x.begin) + ", " +
                 std::to_string(x.end) + "), live at instructions " +
                 std::to_string(x.first) + ".." + std::to_string(x.last) +
                 ") overlaps " + y.what + " (bytes [" +
                 std::to_string(y.begin) + ", " + std::to_string(y.end) +
                 "), live at " + std::to_string(y.first) + ".." +
                 std::to_string(y.last) + ")");
    }
}

/// How a function uses its arguments, for its callers' def-before-use.
struct ArgUse {
  std::vector<char> readsBeforeWrite; ///< Per argument index.
  std::vector<char> writes;           ///< Per argument index.
};

/// Def-before-use over the instruction stream: every buffer an instruction
/// reads (its args; a call's args that the callee reads before writing) is
/// an input, state, constant or argument, or was written by an earlier
/// instruction (its results; a call's args that the callee writes), through
/// any alias. Kernels read only their args (a result updated in place is
/// also an arg; the executor poisons the others before the kernel runs).
/// Returns how `fn` uses its arguments; `uses` holds its callees'.
ArgUse verifyDefBeforeUse(const Artifact &a, const Function &fn,
                          const std::vector<ArgUse> &uses,
                          std::vector<char> &defined) {
  ArgUse use;
  use.readsBeforeWrite.assign(fn.numArgs, 0);
  use.writes.assign(fn.numArgs, 0);
  defined.assign(fn.buffers.size(), 0);
  for (size_t id = 0; id < fn.buffers.size(); ++id) {
    BufferKind k = fn.buffers[id].kind;
    defined[id] = k == BufferKind::State || k == BufferKind::Const ||
                  k == BufferKind::Input;
  }
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instruction &inst = fn.code[i];
    const ArgUse *callee = inst.isCall() ? &uses[inst.callee] : nullptr;
    for (size_t k = 0; k < inst.args.size(); ++k) {
      if (callee && !callee->readsBeforeWrite[k])
        continue;
      int64_t root = rootBuffer(fn, inst.args[k]);
      if (defined[root])
        continue;
      const BufferSpec &b = fn.buffers[root];
      if (b.kind == BufferKind::Arg) {
        use.readsBeforeWrite[b.index] = 1; // the caller's to write
        continue;
      }
      std::string what =
          "buffer " + std::to_string(inst.args[k]) + " (" +
          fn.buffers[inst.args[k]].type.str() +
          (root != inst.args[k] ? ", an alias of buffer " + std::to_string(root)
                                : "") +
          ")";
      fail(a, instPlace(fn, i),
           (callee
                ? "passes " + what + " as argument " + std::to_string(k) +
                      ", which '" + a.functions[inst.callee].name + "' reads,"
                : "reads " + what + ",") +
               " but no earlier instruction of function '" + fn.name +
               "' writes it (a program must write a buffer before reading "
               "it: an instruction is missing)");
    }
    auto write = [&](int64_t id) {
      int64_t root = rootBuffer(fn, id);
      defined[root] = 1;
      if (fn.buffers[root].kind == BufferKind::Arg)
        use.writes[fn.buffers[root].index] = 1;
    };
    for (int64_t id : inst.results)
      write(id);
    if (callee)
      for (size_t k = 0; k < inst.args.size(); ++k)
        if (callee->writes[k])
          write(inst.args[k]);
  }
  return use;
}

/// Def-before-use in every function, callees first (no recursion: checked
/// before), then that every entry's program writes each declared output.
void verifyDataFlow(const Artifact &a) {
  std::vector<ArgUse> uses(a.functions.size());
  std::vector<char> done(a.functions.size(), 0);
  std::vector<std::vector<char>> definedAtEnd(a.functions.size());
  std::function<void(size_t)> visit = [&](size_t f) {
    done[f] = 1;
    for (const Instruction &inst : a.functions[f].code)
      if (inst.isCall() && !done[inst.callee])
        visit(inst.callee);
    uses[f] = verifyDefBeforeUse(a, a.functions[f], uses, definedAtEnd[f]);
  };
  for (size_t f = 0; f < a.functions.size(); ++f)
    if (!done[f])
      visit(f);
  for (const EntrySpec &e : a.entries) {
    const Function &fn = a.functions[e.function];
    for (const Slot &s : e.outputs)
      if (!definedAtEnd[e.function][rootBuffer(fn, s.buffer)])
        fail(a, "entry '" + e.key + "'",
             "output '" + s.role + "' (buffer " + std::to_string(s.buffer) +
                 ") is never written by function '" + fn.name + "' (" +
                 std::to_string(fn.code.size()) +
                 " instructions): the entry would return memory nothing "
                 "wrote");
  }
}

} // namespace

void verifyArtifact(Artifact &a) {
  verifyState(a);
  for (const Function &fn : a.functions)
    verifyFunction(a, fn);
  verifyNoRecursion(a);
  verifyEntries(a);
  verifyDataFlow(a);
  for (const Function &fn : a.functions)
    verifyNoLiveOverlap(a, fn);
}

} // namespace autoshard::runtime::detail
