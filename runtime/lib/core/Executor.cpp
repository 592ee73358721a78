//===- Executor.cpp - Runs the entries of an artifact ---------------------===//

#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/Ops.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace autoshard::runtime {

namespace {

/// Where a buffer's bytes are, resolved at load time: a fixed device
/// pointer (state, constants), an offset from the frame base, or an
/// argument of the caller.
struct Location {
  enum Base : uint8_t { Absolute, Frame, Arg } base = Absolute;
  void *ptr = nullptr; // Absolute
  int64_t offset = 0;  // Frame: bytes; Arg: argument index
};

/// A frame byte range [offset, offset + bytes).
struct FrameRange {
  int64_t offset, bytes;
};

/// One instruction, bound.
struct Step {
  BoundKernel kernel;            // empty for a call
  int64_t callee = -1;           // call: function index
  int64_t frameOffset = 0;       // call: callee frame offset
  std::vector<int64_t> operands; // buffer ids: args, then results
  std::vector<void *> pointers;  // operand pointers, gathered per run
  std::string name;              // op or callee (traces)
  std::string place;             // messages
  // Memory-check mode only.
  std::vector<FrameRange> poisonBefore, poisonAfter;
  std::vector<size_t> floatResults; // operand positions to check for NaN
};

double nowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

/// Lays out tensors back to back by decreasing element size, so each starts
/// aligned to its element size without padding. Returns offsets in bytes.
std::vector<int64_t> packedOffsets(const std::vector<const TensorType *> &ts) {
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtypeSize(ts[a]->dtype) > dtypeSize(ts[b]->dtype);
  });
  std::vector<int64_t> offsets(ts.size());
  int64_t at = 0;
  for (size_t i : order) {
    offsets[i] = at;
    at += ts[i]->bytes();
  }
  return offsets;
}

} // namespace

struct Executor::Prepared {
  struct Function {
    std::vector<Location> locations; // per buffer id
    std::vector<Step> steps;
    std::vector<void *> pointers; // per buffer id, for the running call
  };
  std::vector<Function> functions;
};

Executor::Executor(const Artifact &artifact, Backend &backend,
                   ExecutorOptions options)
    : program(artifact), backend(backend), options(options),
      prepared(std::make_unique<Prepared>()) {
  if (!this->options.comm && artifact.worldSize == 1) {
    localWorld = createLocalWorld();
    localComm = std::make_unique<CommContext>(artifact, *localWorld);
    this->options.comm = localComm.get();
  }
  rank_ = this->options.comm ? this->options.comm->rank() : options.rank;
  if (rank_ < 0 || rank_ >= artifact.worldSize)
    throw ArtifactError("artifact '" + artifact.source + "': rank " +
                        std::to_string(rank_) + " is outside its world of " +
                        std::to_string(artifact.worldSize));
  const MemoryPlan &plan = artifact.memory;
  // A pipeline stage's ranks hold only its state and frames.
  ppStage_ = artifact.pipelineStage(rank_);
  stateBytes_ = plan.stateBytes;
  transientBytes_ = plan.transientBytes;
  if (const StageMemory *stage = plan.findStage(ppStage_)) {
    stateBytes_ = stage->stateBytes;
    transientBytes_ = stage->transientBytes;
  } else if (ppStage_ >= 0) {
    throw ArtifactError("artifact '" + artifact.source + "': rank " +
                        std::to_string(rank_) + " is on pipeline stage " +
                        std::to_string(ppStage_) +
                        ", which memory.stages does not list");
  }
  int64_t before = backend.allocatedBytes();
  try {
    stateBlock = backend.allocate(stateBytes_);
    constantPool = backend.allocate(plan.constantBytes);
    arena = static_cast<char *>(backend.allocate(transientBytes_));
    allocated = backend.allocatedBytes() - before;
    prepare();
  } catch (...) {
    release();
    throw;
  }
}

void Executor::prepare() {
  const Artifact &artifact = program;

  std::vector<const TensorType *> types;
  for (const StateSpec &s : artifact.state)
    if (s.heldBy(ppStage_))
      types.push_back(&s.type);
  std::vector<int64_t> stateOffsets = packedOffsets(types);
  size_t next = 0;
  for (const StateSpec &s : artifact.state)
    statePtrs.push_back(s.heldBy(ppStage_) ? static_cast<char *>(stateBlock) +
                                                 stateOffsets[next++]
                                           : nullptr);
  types.clear();
  for (const ConstantSpec &c : artifact.constants)
    types.push_back(&c.type);
  std::vector<void *> constPtrs;
  std::vector<int64_t> constOffsets = packedOffsets(types);
  for (size_t i = 0; i < artifact.constants.size(); ++i) {
    constPtrs.push_back(static_cast<char *>(constantPool) + constOffsets[i]);
    backend.copyToDevice(constPtrs.back(), artifact.constants[i].data.data(),
                         artifact.constants[i].type.bytes());
  }

  for (const Function &fn : artifact.functions) {
    Prepared::Function &pf = prepared->functions.emplace_back();
    pf.pointers.resize(fn.buffers.size());
    for (size_t id = 0; id < fn.buffers.size(); ++id) {
      const BufferSpec &b =
          fn.buffers[rootBuffer(fn, static_cast<int64_t>(id))];
      Location loc;
      switch (b.kind) {
      case BufferKind::State:
        loc.ptr = statePtrs[b.stateIndex];
        break;
      case BufferKind::Const:
        loc.ptr = constPtrs[b.constIndex];
        break;
      case BufferKind::Arg:
        loc = {Location::Arg, nullptr, b.index};
        break;
      default:
        loc = {Location::Frame, nullptr, b.offset};
        break;
      }
      pf.locations.push_back(loc);
    }
    // Last instruction naming each root (for poisoning dead values).
    std::vector<int64_t> lastUse(fn.buffers.size(), -1);
    for (size_t i = 0; i < fn.code.size(); ++i) {
      const Instruction &inst = fn.code[i];
      Step &step = pf.steps.emplace_back();
      step.place = "function '" + fn.name + "', instruction " +
                   std::to_string(i) + " ('" + inst.op + "')";
      step.operands = inst.args;
      step.operands.insert(step.operands.end(), inst.results.begin(),
                           inst.results.end());
      step.pointers.resize(step.operands.size());
      for (int64_t id : step.operands)
        lastUse[rootBuffer(fn, id)] = static_cast<int64_t>(i);
      if (inst.isCall()) {
        step.callee = inst.callee;
        step.frameOffset = inst.frameOffset;
        step.name = artifact.functions[inst.callee].name;
        continue;
      }
      step.name = inst.op;
      KernelSignature sig;
      sig.op = inst.op;
      sig.attrs = &inst.attrs;
      sig.place = "artifact '" + artifact.source + "': " + step.place;
      sig.seed = options.seed;
      sig.comm = options.comm;
      sig.mesh = &artifact.mesh;
      sig.rank = rank_;
      sig.function = fn.name;
      for (int64_t id : inst.args)
        sig.args.push_back(fn.buffers[id].type);
      for (int64_t id : inst.results)
        sig.results.push_back(fn.buffers[id].type);
      step.kernel = backend.bind(sig);
      // Results written fresh (not updated in place) are poisoned first.
      for (size_t r = 0; r < inst.results.size(); ++r) {
        int64_t id = inst.results[r];
        int64_t root = rootBuffer(fn, id);
        bool inPlace =
            std::any_of(inst.args.begin(), inst.args.end(), [&](int64_t arg) {
              return rootBuffer(fn, arg) == root;
            });
        if (pf.locations[id].base == Location::Frame && !inPlace)
          step.poisonBefore.push_back(
              {pf.locations[id].offset, fn.buffers[id].type.bytes()});
        // A `dist.*_start` result is written by the time of its wait.
        if (isFloat(fn.buffers[id].type.dtype) && !isAsyncStartOp(inst.op))
          step.floatResults.push_back(inst.args.size() + r);
      }
    }
    for (size_t id = 0; id < fn.buffers.size(); ++id) {
      const BufferSpec &b = fn.buffers[id];
      if ((b.kind == BufferKind::Local || b.kind == BufferKind::Input) &&
          lastUse[id] >= 0)
        pf.steps[lastUse[id]].poisonAfter.push_back({b.offset, b.bytes});
    }
    for (Step &step : pf.steps)
      if (step.callee >= 0)
        step.poisonAfter.push_back(
            {step.frameOffset, artifact.functions[step.callee].frameBytes});
  }
}

Executor::~Executor() { release(); }

void Executor::release() {
  const MemoryPlan &plan = program.memory;
  backend.deallocate(arena, transientBytes_);
  backend.deallocate(constantPool, plan.constantBytes);
  backend.deallocate(stateBlock, stateBytes_);
  arena = nullptr;
  constantPool = stateBlock = nullptr;
}

std::vector<int64_t>
Executor::shardOffset(const Sharding &sharding,
                      const std::vector<int64_t> &localShape) const {
  std::vector<int64_t> offset =
      program.mesh.blockIndex(sharding, rank_, localShape.size());
  for (size_t d = 0; d < offset.size(); ++d)
    offset[d] *= localShape[d];
  return offset;
}

void Executor::initState(bool zeroParams) {
  for (size_t i = 0; i < program.state.size(); ++i) {
    const StateSpec &s = program.state[i];
    if (!statePtrs[i])
      continue; // held by another pipeline stage
    if (zeroParams && s.kind == StateKind::Param) {
      backend.fill(statePtrs[i], 0, s.type.bytes());
      continue;
    }
    backend.initState(statePtrs[i], s, options.seed,
                      shardOffset(s.sharding, s.type.shape));
  }
}

int Executor::entryIndex(std::string_view name) const {
  if (const EntrySpec *e = program.findEntry(name, ppStage_))
    return static_cast<int>(e - program.entries.data());
  throw ArtifactError("artifact '" + program.source + "' has no entry '" +
                      std::string(name) + "'");
}

bool Executor::hasEntry(std::string_view name) const {
  return program.findEntry(name, ppStage_) != nullptr;
}

bool Executor::holdsState(std::string_view name) const {
  return statePtrs[stateIndex(name)] != nullptr;
}

int64_t Executor::stateIndex(std::string_view name) const {
  int64_t i = program.findState(name);
  if (i < 0)
    throw ArtifactError("artifact '" + program.source +
                        "' has no state tensor '" + std::string(name) + "'");
  return i;
}

std::vector<unsigned char> Executor::readState(std::string_view name) const {
  int64_t i = stateIndex(name);
  if (!statePtrs[i])
    throw ArtifactError(
        "state '" + std::string(name) + "' is not held by pipeline stage " +
        std::to_string(ppStage_) + " (rank " + std::to_string(rank_) + ")");
  std::vector<unsigned char> out(program.state[i].type.bytes());
  backend.copyToHost(out.data(), statePtrs[i], out.size());
  return out;
}

void *Executor::stateHostPointer(std::string_view name) const {
  int64_t i = stateIndex(name);
  if (!statePtrs[i])
    throw ArtifactError(
        "state '" + std::string(name) + "' is not held by pipeline stage " +
        std::to_string(ppStage_) + " (rank " + std::to_string(rank_) + ")");
  return backend.hostAccessible() ? statePtrs[i] : nullptr;
}

void Executor::writeState(std::string_view name, const void *data) {
  int64_t i = stateIndex(name);
  if (!statePtrs[i])
    throw ArtifactError(
        "state '" + std::string(name) + "' is not held by pipeline stage " +
        std::to_string(ppStage_) + " (rank " + std::to_string(rank_) + ")");
  backend.copyToDevice(statePtrs[i], data, program.state[i].type.bytes());
}

void Executor::run(int entry, const void *const *inputs, void *const *outputs,
                   ExecutionTracer *tracer) {
  const EntrySpec &e = program.entries.at(entry);
  const Prepared::Function &pf = prepared->functions[e.function];
  if (options.checkMemory)
    backend.fill(arena, 0xFF, transientBytes_);
  for (size_t i = 0; i < e.inputs.size(); ++i)
    backend.copyToDevice(arena + pf.locations[e.inputs[i].buffer].offset,
                         inputs[i], e.inputs[i].type.bytes());
  execute(e.function, arena, nullptr, 0, tracer);
  for (size_t i = 0; i < e.outputs.size(); ++i)
    backend.copyToHost(outputs[i],
                       arena + pf.locations[e.outputs[i].buffer].offset,
                       e.outputs[i].type.bytes());
}

void Executor::run(std::string_view entry,
                   const std::map<std::string, const void *> &inputs,
                   const std::map<std::string, void *> &outputs,
                   ExecutionTracer *tracer) {
  int index = entryIndex(entry);
  const EntrySpec &e = program.entries[index];
  auto gather = [&](const std::vector<Slot> &slots, const auto &given,
                    const char *what) {
    std::vector<std::decay_t<decltype(given.begin()->second)>> ptrs;
    for (const Slot &s : slots) {
      auto it = given.find(s.role);
      if (it == given.end())
        throw ExecutionError("entry '" + e.name + "': no " + what + " '" +
                             s.role + "' given");
      ptrs.push_back(it->second);
    }
    return ptrs;
  };
  std::vector<const void *> in = gather(e.inputs, inputs, "input");
  std::vector<void *> out = gather(e.outputs, outputs, "output");
  run(index, in.data(), out.data(), tracer);
}

void Executor::execute(int64_t function, char *frame, void *const *args,
                       int depth, ExecutionTracer *tracer) {
  Prepared::Function &pf = prepared->functions[function];
  for (size_t id = 0; id < pf.locations.size(); ++id) {
    const Location &loc = pf.locations[id];
    pf.pointers[id] = loc.base == Location::Absolute ? loc.ptr
                      : loc.base == Location::Frame  ? frame + loc.offset
                                                     : args[loc.offset];
  }
  const std::string &fnName = program.functions[function].name;
  const bool check = options.checkMemory;
  for (Step &step : pf.steps) {
    for (size_t k = 0; k < step.operands.size(); ++k)
      step.pointers[k] = pf.pointers[step.operands[k]];
    double start = tracer ? nowUs() : 0.0;
    if (check)
      for (const FrameRange &r : step.poisonBefore)
        backend.fill(frame + r.offset, 0xFF, r.bytes);
    try {
      if (step.callee >= 0)
        execute(step.callee, frame + step.frameOffset, step.pointers.data(),
                depth + 1, tracer);
      else
        step.kernel(step.pointers.data());
    } catch (const ExecutionError &) {
      throw;
    } catch (const std::exception &e) {
      throw ExecutionError(step.place + ": " + e.what());
    }
    if (check) {
      const Function &fn = program.functions[function];
      for (size_t k : step.floatResults) {
        const TensorType &t = fn.buffers[step.operands[k]].type;
        if (backend.hasNaN(step.pointers[k], t.dtype, t.numel()))
          throw ExecutionError(
              step.place + ": result buffer " +
              std::to_string(step.operands[k]) + " " + t.str() +
              " holds NaN (--check-memory: a read of unwritten or dead "
              "memory, or a diverged value)");
      }
      for (const FrameRange &r : step.poisonAfter)
        backend.fill(frame + r.offset, 0xFF, r.bytes);
    }
    if (tracer) {
      backend.synchronize();
      tracer->record(step.name, fnName, start, nowUs() - start, depth);
    }
  }
}

} // namespace autoshard::runtime
