//===- BackwardSplit.h - Input/weight-gradient split of calls ---*- C++ -*-===//
//
// Zero-bubble schedules (ZB-H1, ZB-V; Qi et al. 2023, "Zero Bubble Pipeline
// Parallelism") run a layer's backward in two parts: I, the gradient with
// respect to the layer's input (on the pipeline's critical path, sent to
// the previous stage), and W, the gradients of its weights (deferred to
// fill bubbles). dist-pipeline-split uses this to cut a backward block call
// into two calls.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_BACKWARDSPLIT_H
#define AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_BACKWARDSPLIT_H

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallBitVector.h"

#include <map>
#include <optional>
#include <string>

namespace autoshard::dist {

/// Splits calls of backward functions into an input-gradient call and a
/// weight-gradient call. Callee pairs are created once per (callee, split)
/// and inserted after the callee as `<callee>__input` and `<callee>__weight`.
class BackwardCallSplitter {
public:
  explicit BackwardCallSplitter(mlir::ModuleOp module)
      : module(module), symbols(module) {}

  /// Replaces `call` by two calls: `@<callee>__input(args)`, which computes
  /// every result not in `weightResults` plus the intermediate values the
  /// weight part reads ("saved", as the ZB paper's W needs the I pass's
  /// activations gradients), and `@<callee>__weight(args, saved)`, which
  /// computes the results in `weightResults` from them. The weight part is
  /// what only those results need (e.g. `tfm.matmul_wgrad`); an op both
  /// parts need stays in the input part; ops without operands (constants)
  /// are re-created in the weight part instead of saved. Returns the two
  /// calls (input first), or std::nullopt when the call is left whole: no
  /// weight result, a weight part with no op of its own, a callee that is
  /// external, has more than one block, or contains ops with regions.
  std::optional<std::pair<mlir::func::CallOp, mlir::func::CallOp>>
  split(mlir::func::CallOp call, const llvm::SmallBitVector &weightResults);

private:
  struct Parts {
    mlir::func::FuncOp input, weight;
  };
  std::optional<Parts> splitCallee(mlir::func::FuncOp callee,
                                   const llvm::SmallBitVector &weightResults);

  mlir::ModuleOp module;
  mlir::SymbolTable symbols;
  /// (callee, weight-result mask as a 0/1 string) -> its parts (or none).
  std::map<std::pair<std::string, std::string>, std::optional<Parts>> cache;
};

} // namespace autoshard::dist

#endif // AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_BACKWARDSPLIT_H
