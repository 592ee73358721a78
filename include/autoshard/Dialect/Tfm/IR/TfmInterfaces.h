//===- TfmInterfaces.h - Op knowledge for later passes ----------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace autoshard::tfm {

/// Cost of one op execution: `flops` in FLOP (multiply-add = 2), `bytes` in
/// bytes read plus written.
struct OpCost {
  double flops = 0;
  double bytes = 0;
};

/// Elements of a ranked tensor type (1 for a scalar, 0 for any other type),
/// as the cost model counts them.
double tensorElements(mlir::Type type);

/// Bytes of a ranked tensor type: its elements times the element bit width
/// rounded up to whole bytes (0 for any other type).
double tensorBytes(mlir::Type type);

/// The roofline of an op's kernel (TfmCostOpInterface::getRooflineKind):
/// a GEMM (tensor-core peak, shape-dependent efficiency), a fused attention
/// kernel, or a memory-bound kernel.
enum class RooflineKind { Gemm, Attention, Memory };

/// The problem of a GEMM-like op (TfmCostOpInterface::getGemmShape), in
/// elements: `batch` independent products of [m, k] x [k, n]; a weight
/// shared by every batch entry is folded into m, as the GEMM library does.
struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};

/// The problem of an attention kernel (TfmCostOpInterface::getAttentionShape):
/// `batchHeads` (B·N, one per query head) score matrices of seqQ x seqK
/// elements; `causal`: query i sees keys up to position i (seqQ == seqK),
/// so a blocked kernel skips the key blocks above the diagonal.
struct AttentionShape {
  double batchHeads = 0;
  int64_t seqQ = 0, seqK = 0;
  bool causal = false;
  /// Score elements B·N·Sq·Sk (the full square, masked or not).
  double scores() const {
    return batchHeads * static_cast<double>(seqQ) * static_cast<double>(seqK);
  }
};

} // namespace autoshard::tfm

#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
