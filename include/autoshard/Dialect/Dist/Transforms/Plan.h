//===- Plan.h - Parallelism plans -------------------------------*- C++ -*-===//
//
// The plan syntax shared by `dist-apply-plan`, the tools and the scripts:
// `"dp=2,tp=2,sp=1,zero=1"`. See the `dist-apply-plan` pass description.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLAN_H
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLAN_H

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace autoshard::dist {

/// A parallelism plan: the degree of each strategy plus its options. Mesh
/// axes are named after the degrees (`pp`, `dp`, `cp`, `tp`) and ordered
/// that way, `tp` fastest; SP rides on `tp` and ZeRO on `dp`.
struct Plan {
  /// Pipeline stages (dist-pipeline-split).
  int64_t pp = 1;
  /// Data parallel degree: the batch dim of the inputs is split on `dp`.
  int64_t dp = 1;
  /// Context parallel degree: the sequence dim of the inputs is split on
  /// `cp` in contiguous chunks; attention runs as `cpAttention` says.
  int64_t cp = 1;
  /// Tensor parallel degree (Megatron column/row, vocab-parallel).
  int64_t tp = 1;
  /// Sequence parallelism on the `tp` axis (0 or 1; needs tp > 1).
  int64_t sp = 0;
  /// ZeRO stage 0..3 on the `dp` axis (1: optimizer states, 2: + grads,
  /// 3: + params). Allowed with dp = 1, where it changes nothing.
  int64_t zero = 0;
  /// Expert parallel degree: folds over the tp x cp x dp ranks (adds none;
  /// Megatron-Core's MoE parallel folding, ETP x EP x EDP laid over the
  /// ranks that the dense layers split as TP x CP x DP), minor ranks first:
  /// with etp = 1 the ep group takes every tp rank, then every cp rank of a
  /// sequence (the MoE layers see whole sequences: capacity and drop order
  /// are per sequence), then ep/(tp cp) of the dp ranks; with etp = tp the
  /// tp ranks split each expert instead and ep folds over cp and dp. The
  /// mesh factors dp into `dp` (the expert-data-parallel group) and `ep`
  /// (getExpertParallelOverDp), the batch is split on `{dp, ep}` and the
  /// expert weights' `E` dim on `{ep, cp, tp}` (those in the group). Needs
  /// ep a multiple of the folded tp x cp, the rest dividing dp, and
  /// E % ep == 0.
  int64_t ep = 1;
  /// Expert tensor parallel degree: 1 (each rank holds whole experts) or tp
  /// (the expert weights split Megatron-style over the tp ranks: up/gate by
  /// columns, down by rows; the tp ranks then leave the ep group).
  int64_t etp = 1;
  /// Microbatches per step (gradient accumulation; tfm-autodiff builds them).
  int64_t mb = 1;
  /// Model chunks (virtual pipeline stages) per pipeline rank: >= 2 with
  /// "interleaved", any with "looped-bfs", exactly 2 with "zb-v", else 1.
  int64_t vpp = 1;
  /// Pipeline schedule (lib/Pipeline, algorithms.md §1.4): "gpipe", "1f1b",
  /// "interleaved" (alias "interleaved-1f1b"), "looped-bfs", "zb-h1" or
  /// "zb-v".
  std::string schedule = "1f1b";
  /// Activation recomputation: "none", "selective" or "full" (built by
  /// tfm-recompute before dist-apply-plan, which checks that the module's
  /// `tfm.recompute` matches).
  std::string recompute = "none";
  /// How attention runs under cp > 1 (algorithms.md §2): "ring" (ring
  /// attention, Liu et al. 2023: K/V chunks travel around the cp ring,
  /// blocks merged by log-sum-exp) or "ulysses" (DeepSpeed-Ulysses,
  /// Jacobs et al. 2023: all-to-alls over cp swap the sequence split for a
  /// head split around a local attention; needs the query and key/value
  /// heads divisible by tp*cp).
  std::string cpAttention = "ring";
  /// How ring attention lays the sequence over the cp ranks (algorithms.md
  /// §2.3): "contiguous" (rank r holds positions [r S/cp, (r+1) S/cp); under
  /// a causal mask the last rank does (2cp-1)/cp of the balanced work) or
  /// "zigzag" (the program holds the sequence permuted so that rank r holds
  /// the original chunks r and 2cp-1-r of 2cp: every rank does the same
  /// work; dist-zigzag-sequence; needs cp > 1, cp_attention=ring and the
  /// sequence divisible by 2cp).
  std::string cpLayout = "contiguous";

  /// Parses `key=value,...` (whitespace around keys and values ignored; an
  /// empty string is the default plan). Errors name the key and the value.
  /// With `onlySupported` (dist-apply-plan), values the compiler cannot
  /// build yet (with cp > 1, an ep that is not a multiple of cp) are
  /// errors too; without it (the planner, which scores them analytically)
  /// any known value is accepted.
  static llvm::Expected<Plan> parse(llvm::StringRef text,
                                    bool onlySupported = true);

  /// Number of devices: the product of the mesh axis sizes.
  int64_t getWorldSize() const { return pp * dp * cp * tp; }
  /// True if every degree is 1 (nothing to distribute).
  bool isTrivial() const { return getWorldSize() == 1; }
  /// The tp ranks an ep group spans: tp when ep > 1 and etp = 1, else 1.
  int64_t getExpertParallelOverTp() const {
    return ep > 1 && etp == 1 ? tp : 1;
  }
  /// The cp ranks an ep group spans: cp when ep > 1, else 1.
  int64_t getExpertParallelOverCp() const { return ep > 1 ? cp : 1; }
  /// The dp ranks an ep group spans (ep / (its tp and cp ranks)); the size
  /// of the mesh axis `ep`.
  int64_t getExpertParallelOverDp() const {
    return ep / (getExpertParallelOverTp() * getExpertParallelOverCp());
  }
  /// Size of the mesh axis `dp`: the data-parallel ranks that hold the same
  /// experts (dp / getExpertParallelOverDp(); dp when ep = 1).
  int64_t getExpertDataParallel() const {
    return dp / getExpertParallelOverDp();
  }
  /// One axis of the plan's mesh.
  struct MeshAxis {
    llvm::StringRef name;
    int64_t size;
    AxisRole role;
  };
  /// Mesh axes of size > 1, in mesh order (pp, dp, ep, cp, tp), each named
  /// after its plan key (getAxisName) and given the role of that degree;
  /// with ep > 1 the data-parallel ranks are the axes `dp` (the
  /// expert-data-parallel group, role data) and `ep` (role expert).
  llvm::SmallVector<MeshAxis> getMeshAxes() const;
  /// Name of the mesh axis of role `role`: its plan key (`dp`, `cp`, `tp`,
  /// `ep`, `pp`).
  static llvm::StringRef getAxisName(AxisRole role);

  /// The `dist.plan` module attribute: every key, integers as i64.
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  /// Inverse of toAttr (missing keys take their defaults).
  static llvm::Expected<Plan> fromAttr(mlir::DictionaryAttr attr);
  /// The plan of `module`'s `dist.plan` attribute: nullopt without one;
  /// failure, after an error on the module prefixed with `pass`, when it
  /// does not read as a plan.
  static mlir::FailureOr<std::optional<Plan>> fromModule(mlir::ModuleOp module,
                                                         llvm::StringRef pass);
  /// `dp=2,tp=2,...` with every key, parseable by `parse`.
  std::string str() const;
};

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLAN_H
