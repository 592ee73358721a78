//===- Artifact.h - The compiled-program artifact (format v2) ---*- C++ -*-===//
//
// In-memory form of the JSON artifact that `shard-opt --rt-export` writes
// (docs/artifact-format.md is the contract), and its loader. Loading checks
// the whole document: format and version, every field's presence and type,
// dtypes, op names and arities, buffer ids, alias element counts, call
// arities and argument types, frame bounds, entry slots, the memory totals,
// that no two simultaneously live transient buffers overlap, that every
// buffer is written before it is read and every entry output is written,
// and (version 5) the content checksum; the JSON's size and nesting depth
// are bounded before it is parsed. Every
// failure throws ArtifactError naming the place (function, buffer or
// instruction), the field and the value found. MLIR-free, backend-free.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_ARTIFACT_H
#define AUTOSHARD_RUNTIME_ARTIFACT_H

#include "autoshard/runtime/Types.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace autoshard::runtime {

/// A malformed, inconsistent or unsupported artifact. The message names the
/// artifact, the place, the field and the value found.
class ArtifactError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The format version this runtime writes and reads; it also reads versions
/// 1 (a single-device program: no mesh axes, nothing sharded, no plan) to
/// 4. Version 5 = version 4 plus the required content `checksum`.
constexpr int64_t kArtifactVersion = 5;
constexpr int64_t kMinArtifactVersion = 1;
/// The first version whose artifacts carry (and must carry) `checksum`.
constexpr int64_t kChecksumArtifactVersion = 5;

/// The largest artifact the loader reads (an artifact holds no weights: a
/// real one is a few MiB; a larger file is not an artifact).
constexpr int64_t kMaxArtifactBytes = int64_t(1) << 30;

/// The `checksum` of artifact text `json` whose checksum value begins at
/// byte `valueOffset` (the first character inside its quotes):
/// "xxh3-64:" and the 16 lowercase hex digits of XXH3-64 (seed 0) of the
/// text with those 16 digits replaced by '0'. rt-export computes the same.
std::string artifactChecksum(std::string_view json, size_t valueOffset);

/// How a tensor is laid out over the device mesh: for each dim, the mesh
/// axes it is split over, major to minor (empty: not split). Every axis not
/// named is replicated. An empty `dims` (a version-1 artifact, or a
/// replicated scalar) means replicated.
struct Sharding {
  std::vector<std::vector<std::string>> dims;
  bool isReplicated() const;
  /// E.g. "[[dp], [], [tp, cp]]", for messages.
  std::string str() const;
};

/// The device mesh: named axes, major to minor, and their sizes. Ranks are
/// numbered row-major (the last axis varies fastest). A single device has
/// no axes.
struct Mesh {
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;

  /// Product of the sizes (1 for no axes).
  int64_t numDevices() const;
  /// Index of `axis`, or -1.
  int64_t axisIndex(std::string_view axis) const;
  /// Coordinates (one per axis) of `rank`.
  std::vector<int64_t> coords(int64_t rank) const;
  /// Size of the group over `axes` (product of their sizes).
  int64_t groupSize(const std::vector<std::string> &axes) const;
  /// Index of `rank` in its group over `axes`: its coordinates on `axes`
  /// linearised in the listed order (first axis major).
  int64_t indexInGroup(int64_t rank,
                       const std::vector<std::string> &axes) const;
  /// `rank`'s coordinates linearised with `axis` moved to the innermost
  /// (fastest) place and the others in mesh order; `rank` itself when the
  /// mesh has no such axis. With `axis` = "pp", the stages of one pipeline
  /// replica get consecutive indices (CPU core placement, cpu/Placement.h).
  int64_t indexWithAxisInnermost(int64_t rank, std::string_view axis) const;
  /// Which group over `axes` `rank` belongs to: its coordinates on the
  /// other axes, linearised row-major in mesh order.
  int64_t groupColor(int64_t rank, const std::vector<std::string> &axes) const;
  /// The world rank of the member with group index `index` of the group
  /// over `axes` that contains `rank`.
  int64_t rankInGroup(int64_t rank, const std::vector<std::string> &axes,
                      int64_t index) const;
  /// For each dim of a tensor sharded by `sharding`, the index of the block
  /// that `rank` holds (a dim split over [a, b] has size(a) * size(b) blocks,
  /// block coord(a) * size(b) + coord(b)); 0 for unsplit dims.
  /// `tensorRank` is the number of dims (a replicated sharding may list none).
  std::vector<int64_t> blockIndex(const Sharding &sharding, int64_t rank,
                                  size_t tensorRank) const;
  /// Number of blocks of each dim (product of its axes' sizes).
  std::vector<int64_t> numBlocks(const Sharding &sharding,
                                 size_t tensorRank) const;
};

/// Kind of a persistent state tensor.
enum class StateKind { Param, OptM, OptV };
/// How a state tensor is initialised (see Init.h).
enum class InitKind { Normal, Zeros, Ones };

/// One persistent tensor (parameter or optimizer moment).
struct StateSpec {
  std::string name;
  StateKind kind = StateKind::Param;
  std::string of;  ///< For opt_m/opt_v: the parameter it belongs to.
  TensorType type; ///< Local (per-rank) type.
  std::vector<int64_t> globalShape; ///< Shape of the unsharded tensor.
  Sharding sharding;
  InitKind init = InitKind::Zeros;
  double initStd = 0.0; ///< For InitKind::Normal.
  /// The unpadded global shape (`init.logical_shape`) of a padded state
  /// (same rank, each dim <= the global one); empty: the global shape.
  /// Elements outside it are 0 and the init keys on indices in it.
  std::vector<int64_t> logicalShape;
  bool weightDecay = false;
  /// Pipeline stages (coordinates on the mesh's `pp` axis) whose ranks hold
  /// this tensor; empty: every rank (version 3, `stages`).
  std::vector<int64_t> stages;
  /// Whether the ranks of pipeline stage `stage` (-1: no pipeline) hold it.
  bool heldBy(int64_t stage) const;
  /// The shape the init keys element indices on (Init.h): the logical
  /// shape, else the global one, else the local one. Throws ArtifactError
  /// for a rank over 16, or a logical shape or block offset (`offset`,
  /// empty: none) of another rank than the tensor's.
  const std::vector<int64_t> &
  initShape(const std::vector<int64_t> &offset) const;
};

/// A compile-time constant; `data` holds its bytes in the tensor's dtype.
struct ConstantSpec {
  TensorType type;
  std::vector<unsigned char> data;
};

/// Where a buffer's bytes live (docs/artifact-format.md, "Buffer kinds").
enum class BufferKind { Arg, Local, Alias, State, Const, Input, Output };

/// One buffer of a function. Which fields are meaningful depends on `kind`.
struct BufferSpec {
  BufferKind kind = BufferKind::Local;
  TensorType type;
  int64_t index = -1;      ///< Arg: argument index.
  int64_t offset = 0;      ///< Local/Input/Output: bytes from the frame base.
  int64_t bytes = 0;       ///< Local/Input/Output: reserved bytes.
  std::string category;    ///< Local: activation, grad, workspace or io.
  int64_t of = -1;         ///< Alias: the aliased buffer id.
  int64_t stateIndex = -1; ///< State: index into Artifact::state.
  int64_t constIndex = -1; ///< Const: index into Artifact::constants.
  std::string role;        ///< Input/Output: the entry slot.
};

/// An attribute value: unit/bool, integer, float, integer array, string or
/// string array (collectives' `axes`, `reduction`).
using AttrValue = std::variant<bool, int64_t, double, std::vector<int64_t>,
                               std::string, std::vector<std::string>>;

/// The attributes of one instruction. Getters throw ArtifactError naming
/// the attribute and the value found when it is absent or of another kind.
class AttrMap {
public:
  void set(std::string name, AttrValue value);
  bool has(std::string_view name) const;
  /// A float attribute (an integer value is accepted and converted).
  double getF64(std::string_view name) const;
  int64_t getI64(std::string_view name) const;
  /// A unit attribute: true if present and true, false if absent.
  bool getFlag(std::string_view name) const;
  std::vector<int64_t> getI64Array(std::string_view name) const;
  std::string getString(std::string_view name) const;
  /// A list of strings (an empty JSON list also reads as one).
  std::vector<std::string> getStringArray(std::string_view name) const;
  /// `context` prefixes error messages (e.g. "function 'f', instruction 3").
  std::string context;

private:
  const AttrValue &get(std::string_view name, const char *expected) const;
  std::map<std::string, AttrValue, std::less<>> values;
};

/// One instruction: a kernel (op, args, results, attrs) or a call.
struct Instruction {
  std::string op; ///< tfm op name without the prefix, or "call".
  std::vector<int64_t> args;
  std::vector<int64_t> results;
  AttrMap attrs;
  int64_t callee = -1;     ///< Call: index into Artifact::functions.
  int64_t frameOffset = 0; ///< Call: the callee frame's offset in ours.
  bool isCall() const { return callee >= 0; }
};

/// A function: buffers (indexed by id) and an instruction stream.
struct Function {
  std::string name;
  int64_t frameBytes = 0;
  int64_t numArgs = 0;
  std::vector<BufferSpec> buffers;
  std::vector<Instruction> code;
};

/// An entry's input or output slot.
struct Slot {
  std::string role;
  TensorType type; ///< Local (per-rank) type.
  std::vector<int64_t> globalShape;
  Sharding sharding;
  /// Partial axes (axis, "sum" or "max"), in mesh order: the slot's global
  /// value is the reduction of the members' local values over the group of
  /// these axes. Only test programs (the resharding tests) have them.
  std::vector<std::pair<std::string, std::string>> partial;
  int64_t buffer = -1; ///< Id of the slot's input/output buffer.
};

/// An entry point (train_step, eval, logits, ...).
struct EntrySpec {
  /// The entry (`train_step`, `eval`, `logits`); several entries share it
  /// when each pipeline stage has its own program.
  std::string name;
  /// The key in the artifact's `entries` (`train_step@pp1`; else name).
  std::string key;
  /// The pipeline stage whose ranks run this program; -1: every rank.
  int64_t ppStage = -1;
  int64_t function = -1; ///< Index into Artifact::functions.
  /// > 0: the entry's sequences (dim 1 of tokens, labels and logits) are in
  /// zig-zag order of this many chunks (SequencePositions.h; zig-zag cp):
  /// the caller feeds row p the token of original position
  /// zigzagPosition(p, seq, zigzagChunks). 0: the original order.
  int64_t zigzagChunks = 0;
  std::vector<Slot> inputs;
  std::vector<Slot> outputs;
};

/// The static memory plan (docs/artifact-format.md, "Memory"), in bytes.
/// What one rank of a pipeline stage allocates (version 3, `memory.stages`).
struct StageMemory {
  int64_t ppStage = 0;
  int64_t stateBytes = 0;
  int64_t transientBytes = 0;
  int64_t peakBytes = 0;
};

struct MemoryPlan {
  int64_t stateBytes = 0;
  int64_t constantBytes = 0;
  int64_t transientBytes = 0;
  int64_t peakBytes = 0;
  /// Per entry: category -> live bytes at the entry's peak.
  std::map<std::string, std::map<std::string, int64_t>> breakdownAtPeak;
  std::map<std::string, int64_t> stateBreakdown;
  /// Per pipeline stage (empty without a pipeline).
  std::vector<StageMemory> stages;
  /// The plan of stage `stage`, or null (no pipeline, or no such stage).
  const StageMemory *findStage(int64_t stage) const;
};

/// The `model` summary: the fields the runtime needs.
struct ModelInfo {
  std::string name;
  int64_t vocabSize = 0;
  int64_t paddedVocabSize = 0;
  int64_t batch = 0;
  int64_t seq = 0;
};

/// A loaded, fully validated artifact.
struct Artifact {
  std::string source; ///< Path (or name) used in messages.
  int64_t version = kArtifactVersion;
  std::string producer;
  ModelInfo model;
  int64_t worldSize = 1;
  Mesh mesh;
  /// The `plan` object as JSON text ("{}" if absent); informational.
  std::string planJson = "{}";
  /// The whole `model` object as JSON text: the keys ModelInfo does not
  /// parse (e.g. the Hugging Face weight map `hf`, read by the training
  /// library, docs/hf-checkpoints.md) stay available here.
  std::string modelJson = "{}";
  std::vector<StateSpec> state;
  std::vector<ConstantSpec> constants;
  std::vector<Function> functions;
  std::vector<EntrySpec> entries;
  MemoryPlan memory;

  /// Index of function `name`, or -1.
  int64_t findFunction(std::string_view name) const;
  /// The entry `name`, or nullptr.
  const EntrySpec *findEntry(std::string_view key) const;
  /// The program of entry `name` that the ranks of pipeline stage `stage`
  /// run (the only one without a pipeline), or null.
  const EntrySpec *findEntry(std::string_view name, int64_t stage) const;
  /// The pipeline stage (coordinate on the mesh's `pp` axis) of `rank`, or
  /// -1 when the artifact has no pipeline stages.
  int64_t pipelineStage(int64_t rank) const;
  /// Index of state tensor `name`, or -1.
  int64_t findState(std::string_view name) const;
};

/// Parses and validates an artifact from JSON text; `source` names it in
/// messages. Throws ArtifactError.
Artifact parseArtifact(std::string_view json, const std::string &source);

/// Reads and validates the artifact at `path`. Throws ArtifactError naming
/// the path when the file cannot be read or is invalid.
Artifact loadArtifact(const std::string &path);

/// The buffer that owns the bytes of buffer `id` of `fn` (follows aliases).
int64_t rootBuffer(const Function &fn, int64_t id);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_ARTIFACT_H
