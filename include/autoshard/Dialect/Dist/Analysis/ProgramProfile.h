//===- ProgramProfile.h - What each function of a program does --*- C++ -*-===//
//
// The one reading of a partitioned per-rank program that dist-auto-plan and
// dist-explain share: per function, its kind, its costed ops, its
// communication ops and its calls, in program order; the call tree of an
// entry; and the block structure of a training step. An analysis in
// upstream MLIR's shape: constructed from the module (a pass on the module
// may use `getAnalysis<ProgramProfile>()`), read-only, holding pointers
// into the IR, so it is valid while the module is unchanged.
//
// It reads either form of the program:
//  * func form (after dist-partition; per-rank shapes): `func.func` and
//    `func.call`; tfm ops costed through TfmCostOpInterface; dist
//    communication ops (CommOpInterface). dist-auto-plan reads this form.
//  * rt form (after rt-lower): `rt.func` and `rt.call`; an `rt.kernel`
//    whose name is that of a dist communication op, with the op's
//    attributes but the mesh (the module's first `dist.mesh` stands for
//    it). Kernels have no cost model: no costed ops. dist-explain reads
//    this form.
// Functions are recognised by `tfm.func_kind` and the `tfm.recompute`
// marker (TfmAttrNames.h; rt-lower carries both onto `rt.func`), never by
// their names; mesh axes by their role on the `dist.mesh`.
//
// Units: bytes and shapes per rank, FLOPs per op execution.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_ANALYSIS_PROGRAMPROFILE_H
#define AUTOSHARD_DIALECT_DIST_ANALYSIS_PROGRAMPROFILE_H

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autoshard::dist {

/// One communication op: a collective or point-to-point op, blocking or
/// `*_start` (its `dist.wait` moves no data and is not recorded).
struct CommRecord {
  /// The dist op (func form) or the `rt.kernel` (rt form).
  mlir::Operation *op = nullptr;
  CommKind kind = CommKind::AllReduce;
  /// The op's name (`dist.all_reduce_start`).
  llvm::StringRef name;
  /// The asynchronous `*_start` form.
  bool async = false;
  /// The mesh of its group: the op's own (func form) or the module's first
  /// (rt form); null if the module has none.
  MeshOp mesh;
  /// The mesh axes its group spans.
  llvm::SmallVector<std::string> axes;
  /// Shape of its data operand (of its result for an op without operands,
  /// a receive) and of its result (empty if the result is not a tensor: a
  /// `*_start`'s handle in func form). A bucketed collective (operand made
  /// by `dist.pack`, or result read by `dist.unpack`:
  /// dist-bucket-collectives) is described by its first member tensor on
  /// either side instead of the flat buffer.
  llvm::SmallVector<int64_t> shape, resultShape;
  /// Bytes of the data operand and of the result (0 without a tensor
  /// result), the flat buffers' for a bucketed collective. Bytes are counted
  /// as each form does: `rt::BufferType::getSizeInBytes`, and for tensors
  /// elements x whole bytes per element.
  int64_t bytes = 0, resultBytes = 0;
  /// Elements of the data tensor, or of the largest member of a bucket.
  int64_t numElements = 0;
  /// The gathered, scattered or split dim (`gather_dim`, `scatter_dim`,
  /// `split_dim`; a bucket member's split dim), if any.
  std::optional<int64_t> dim;

  /// Whether the group spans at least one axis and every axis has one of
  /// `roles` on `mesh`.
  bool allAxesHaveRoles(llvm::ArrayRef<AxisRole> roles) const;
  /// Whether one of the group's axes has `role` on `mesh`.
  bool anyAxisHasRole(AxisRole role) const;
};

/// One op with a cost model (tfm::TfmCostOpInterface; func form only).
struct CostRecord {
  mlir::Operation *op = nullptr;
  tfm::RooflineKind roofline = tfm::RooflineKind::Memory;
  /// FLOPs and bytes of one execution.
  tfm::OpCost cost;
  /// The GEMM problem (GEMM ops); nullopt otherwise.
  std::optional<tfm::GemmShape> gemm;
  /// The attention kernel's problem (attention ops); nullopt otherwise.
  std::optional<tfm::AttentionShape> attention;
  /// A gradient op (tfm::trait::Gradient) / a weight gradient
  /// (tfm::trait::WeightGradient).
  bool gradient = false, weightGradient = false;
};

/// The costed and the communication ops of a piece of a program, each in
/// program order.
struct WorkProfile {
  std::vector<CostRecord> costs;
  std::vector<CommRecord> comms;
};

/// A call (`func.call` or `rt.call`).
struct CallRecord {
  mlir::Operation *op = nullptr;
  llvm::StringRef callee;
  /// The call re-runs a forward for its backward (`tfm.recompute` on a
  /// `func.call`, set by tfm-recompute mode=full).
  bool recompute = false;
};

/// One function (`func.func` or `rt.func`) and everything in its body,
/// nested regions included.
struct FunctionProfile {
  mlir::Operation *op = nullptr;
  llvm::StringRef name;
  /// `tfm.func_kind`; nullopt for the builder's functions (entries, plain
  /// blocks) and anything a tfm transform did not make.
  std::optional<tfm::FuncKind> kind;
  /// Re-runs (part of) a forward: full recomputation's re-run (kind
  /// `recompute`) or a function marked `tfm.recompute` (selective
  /// recomputation's backward and the halves the backward split cut from
  /// it).
  bool recomputes = false;
  /// A public `func.func` or an `rt.func` with an `entry`.
  bool entry = false;
  WorkProfile work;
  llvm::SmallVector<CallRecord> calls;
};

/// A training step read by its block calls (func form; `@train_step` of
/// tfm-autodiff, optionally after tfm-recompute).
struct TrainStepProfile {
  const FunctionProfile *step = nullptr;
  /// The first block forward and backward the step calls (`forward`,
  /// `backward` kinds) and the first full-recomputation re-run (a call
  /// marked `tfm.recompute` or a callee of kind `recompute`; null without
  /// one).
  const FunctionProfile *forward = nullptr, *backward = nullptr,
                        *recompute = nullptr;
  /// The step's own ops (its top-level ops; the optimizer step,
  /// tfm::trait::OptimizerStep, left out) by phase: before the first block
  /// forward (embedding); after a block forward up to and with the loss
  /// (tfm::trait::TrainingLoss: final norm, head, loss); after the loss
  /// (the loss gradient through the head); after a block backward (the
  /// embedding's gradient). The phase is that of the last block forward or
  /// backward call before the op.
  WorkProfile embedding, head, headBackward, embeddingBackward;
};

/// What each function of a module does (see the file comment).
class ProgramProfile {
public:
  /// Reads `module` (a `builtin.module`; anything else reads as empty).
  explicit ProgramProfile(mlir::Operation *module);

  /// Every function, in module order.
  llvm::ArrayRef<FunctionProfile> getFunctions() const { return functions; }
  /// The function named `name`; null if there is none.
  const FunctionProfile *lookup(llvm::StringRef name) const;

  /// Visits `root` and, depth first in program order, every function a call
  /// reaches: a function once per call that reaches it. Callees that are
  /// not functions of the module are skipped.
  void
  walkCallTree(llvm::StringRef root,
               llvm::function_ref<void(const FunctionProfile &)> visit) const;
  /// Calls per run of `root` of every function it reaches (walkCallTree),
  /// `root` itself counted once.
  llvm::StringMap<int64_t> getCallCounts(llvm::StringRef root) const;

  /// The training step `entry` read by its block calls. Errors: no function
  /// `entry` ("the compiled program has no <entry>"), no block forward or
  /// backward call in it.
  llvm::Expected<TrainStepProfile>
  getTrainStep(llvm::StringRef entry = "train_step") const;

private:
  std::vector<FunctionProfile> functions;
  llvm::StringMap<size_t> index;
};

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_ANALYSIS_PROGRAMPROFILE_H
