//===- Executor.h - Runs the entries of an artifact -------------*- C++ -*-===//
//
// The executor allocates exactly the artifact's memory plan through the
// backend (one state block, the constant pool and one transient arena of
// memory.transient_bytes shared by all entries), binds every instruction
// once, and runs entries: inputs are copied into their slots in the entry's
// frame, the instruction stream runs (a call places the callee's frame at
// frame_offset inside the caller's), outputs are copied out. The hot loop
// only gathers pointers (frame base + offset) and calls pre-bound kernels.
//
// Memory-check mode (ExecutorOptions::checkMemory, `shard-run
// --check-memory`) poisons the arena with 0xFF bytes (NaN for floats, -1
// for ids) before each entry, poisons each result right before the
// instruction that writes it (unless updated in place), poisons every value
// and callee frame once it is dead, and fails on a NaN in any float result:
// a read of unwritten or dead memory shows up at the instruction that did it.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_EXECUTOR_H
#define AUTOSHARD_RUNTIME_EXECUTOR_H

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

/// A failure while running an entry: a kernel rejected its data (e.g. a
/// token id outside the vocabulary) or memory-check mode found a NaN. The
/// message names the function, the instruction and the op.
class ExecutionError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Options of an Executor.
struct ExecutorOptions {
  /// Seed of the run: weight init (Init.h) and dropout masks.
  uint64_t seed = 1337;
  /// Poison memory and check results (see the file comment). Slow.
  bool checkMemory = false;
  /// The groups of the job (shard-run creates them over MPI). When null, a
  /// world-size-1 artifact gets a one-rank LocalWorld; a larger one runs
  /// as rank `rank` without communication (state init and programs
  /// without `dist.*` kernels only: those fail to bind).
  CommContext *comm = nullptr;
  /// This process's rank when `comm` is null (else comm->rank()).
  int64_t rank = 0;
};

/// Receives the timing of every executed instruction (for a Chrome trace).
class ExecutionTracer {
public:
  virtual ~ExecutionTracer() = default;
  /// One finished instruction: `name` is the op (or, for a call, the
  /// callee), `function` the function it ran in, `depth` the call depth (0
  /// in the entry function). Times are microseconds of std::steady_clock;
  /// a call's event encloses its body's events.
  virtual void record(std::string_view name, std::string_view function,
                      double startUs, double durUs, int depth) = 0;
};

/// Runs the entries of one artifact on one backend.
class Executor {
public:
  /// Binds every instruction and allocates state, constants and the
  /// transient arena (state is left uninitialised: call initState()).
  /// Throws ArtifactError when an instruction cannot be bound.
  Executor(const Artifact &artifact, Backend &backend,
           ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Artifact &artifact() const { return program; }

  /// Initialises every state tensor from its init spec and the seed; a
  /// sharded state gets this rank's block of the unsharded init. With
  /// `zeroParams` the parameters are zero-filled instead (for a caller that
  /// overwrites them next, e.g. from a Hugging Face checkpoint: what it
  /// does not write, the vocabulary padding, is zero as after the init).
  void initState(bool zeroParams = false);
  /// This executor's rank in the job.
  int64_t rank() const { return rank_; }
  /// This rank's pipeline stage (its coordinate on the mesh's `pp` axis),
  /// or -1 when the artifact has no pipeline stages. Entries resolve to the
  /// stage's program; only the stage's state is allocated.
  int64_t pipelineStage() const { return ppStage_; }
  /// Whether this rank holds state tensor `name` (every rank but in a
  /// pipeline); throws ArtifactError if there is no such state.
  bool holdsState(std::string_view name) const;
  /// The job's communicators (null for a multi-rank artifact run without
  /// them, see ExecutorOptions::comm).
  CommContext *comm() const { return options.comm; }
  /// The global coordinates where this rank's block of a tensor of
  /// `globalShape` with `sharding` starts (one per dim).
  std::vector<int64_t>
  shardOffset(const Sharding &sharding,
              const std::vector<int64_t> &localShape) const;

  /// Index of entry `name`; throws ArtifactError if the artifact lacks it.
  int entryIndex(std::string_view name) const;
  /// Whether the artifact has entry `name`.
  bool hasEntry(std::string_view name) const;

  /// Runs entry `entry`. inputs[i] points to host data of entry.inputs[i]'s
  /// type; outputs[i] receives entry.outputs[i] (host memory). `tracer`, if
  /// given, receives every instruction's time. Throws ExecutionError.
  void run(int entry, const void *const *inputs, void *const *outputs,
           ExecutionTracer *tracer = nullptr);
  /// Same, with slots named by role; every slot must be given.
  void run(std::string_view entry,
           const std::map<std::string, const void *> &inputs,
           const std::map<std::string, void *> &outputs,
           ExecutionTracer *tracer = nullptr);

  /// Bytes this executor allocated (state + constants + arena); equals
  /// memory.peak_bytes of a valid artifact (its stage's with a pipeline).
  int64_t allocatedBytes() const { return allocated; }

  /// Host copy of state tensor `name` (its dtype's bytes); throws
  /// ArtifactError if there is none.
  std::vector<unsigned char> readState(std::string_view name) const;
  /// The state tensor `name` in place, as host memory (its type's bytes),
  /// or null when the backend's memory is not host-accessible (a GPU) and
  /// readState/writeState must stage it. Throws ArtifactError if this rank
  /// does not hold it.
  void *stateHostPointer(std::string_view name) const;
  /// Overwrites state tensor `name` from host bytes of its type.
  void writeState(std::string_view name, const void *data);
  /// Host copy of a float state tensor as T (its dtype must be T's).
  template <typename T> std::vector<T> readStateAs(std::string_view name) const;

private:
  struct Prepared;
  /// Lays out state and constants, binds every instruction.
  void prepare();
  /// Frees what the constructor allocated.
  void release();
  void execute(int64_t function, char *frame, void *const *args, int depth,
               ExecutionTracer *tracer);
  int64_t stateIndex(std::string_view name) const;

  const Artifact &program;
  Backend &backend;
  ExecutorOptions options;
  std::unique_ptr<Prepared> prepared;
  std::unique_ptr<CommWorld> localWorld;
  std::unique_ptr<CommContext> localComm;
  int64_t rank_ = 0;
  int64_t ppStage_ = -1;
  int64_t stateBytes_ = 0, transientBytes_ = 0;
  void *stateBlock = nullptr;
  void *constantPool = nullptr;
  char *arena = nullptr;
  int64_t allocated = 0;
  std::vector<void *> statePtrs;
};

template <typename T>
std::vector<T> Executor::readStateAs(std::string_view name) const {
  const TensorType &type = program.state[stateIndex(name)].type;
  if (dtypeSize(type.dtype) != static_cast<int64_t>(sizeof(T)))
    throw ArtifactError("state '" + std::string(name) + "' is " + type.str() +
                        ", not readable as a " + std::to_string(sizeof(T)) +
                        "-byte type");
  std::vector<unsigned char> bytes = readState(name);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::copy(bytes.begin(), bytes.end(),
            reinterpret_cast<unsigned char *>(out.data()));
  return out;
}

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_EXECUTOR_H
