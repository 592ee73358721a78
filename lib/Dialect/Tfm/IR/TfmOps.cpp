//===- TfmOps.cpp - Transformer graph ops ---------------------------------===//
//
// Verifiers recompute each op's result types from its operands and
// attributes and report the first violated rule with the value found.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace autoshard::tfm;

#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.cpp.inc"

namespace {

/// Prints a shape as `[2, 3, 4]` for diagnostics.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// Checks that `result` has exactly `expected`; the message names both.
LogicalResult verifyResultType(Operation *op, Type actual, Type expected,
                               StringRef what = "result") {
  if (actual == expected)
    return success();
  return op->emitOpError() << what << " type must be " << expected
                           << " (inferred from operands), found " << actual;
}

} // namespace

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto lhs = getLhs().getType();
  auto rhs = getRhs().getType();
  if (lhs.getElementType() != rhs.getElementType())
    return emitOpError() << "operand element types must match, found "
                         << lhs.getElementType() << " and "
                         << rhs.getElementType();
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  if (lr < 2)
    return emitOpError() << "lhs must have rank >= 2, found rank " << lr;
  if (rr < 2)
    return emitOpError() << "rhs must have rank >= 2, found rank " << rr;
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  if (rr != 2 && rr != lr)
    return emitOpError() << "rhs must be rank 2 or have lhs's rank " << lr
                         << ", found rank " << rr;
  if (rr == lr && ls.drop_back(2) != rs.drop_back(2))
    return emitOpError() << "batch dims must match: lhs "
                         << shapeStr(ls.drop_back(2)) << ", rhs "
                         << shapeStr(rs.drop_back(2));
  int64_t m = ls[lr - 2], k = ls[lr - 1];
  if (getTransposeLhs())
    std::swap(m, k);
  int64_t rk = rs[rr - 2], n = rs[rr - 1];
  if (getTransposeRhs())
    std::swap(rk, n);
  if (k != rk)
    return emitOpError() << "contracting dims must match: lhs K = " << k
                         << ", rhs K = " << rk;
  SmallVector<int64_t> shape(ls.drop_back(2));
  shape.append({m, n});
  return verifyResultType(*this, getType(),
                          RankedTensorType::get(shape, lhs.getElementType()));
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

/// `rhs` must equal `lhs` or a suffix of its shape; the result is `lhs`.
static LogicalResult verifyBroadcastBinary(Operation *op) {
  auto lhs = cast<RankedTensorType>(op->getOperand(0).getType());
  auto rhs = cast<RankedTensorType>(op->getOperand(1).getType());
  if (lhs.getElementType() != rhs.getElementType())
    return op->emitOpError() << "operand element types must match, found "
                             << lhs.getElementType() << " and "
                             << rhs.getElementType();
  if (rhs.getRank() > lhs.getRank() ||
      lhs.getShape().take_back(rhs.getRank()) != rhs.getShape())
    return op->emitOpError()
           << "rhs shape must be a suffix of lhs shape " << shapeStr(lhs.getShape())
           << ", found " << shapeStr(rhs.getShape());
  return verifyResultType(op, op->getResult(0).getType(), lhs);
}

LogicalResult AddOp::verify() { return verifyBroadcastBinary(*this); }

#define GET_OP_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
