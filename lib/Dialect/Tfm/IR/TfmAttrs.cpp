//===- TfmAttrs.cpp - Transformer graph attributes ------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace autoshard::tfm;

#include "autoshard/Dialect/Tfm/IR/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.cpp.inc"

void TfmDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.cpp.inc"
      >();
}

// `tfm.func_kind` must be a kind on a function; the other `tfm.*`
// attributes are the builder's and are checked by the passes that read
// them.
LogicalResult TfmDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != kFuncKindAttrName)
    return success();
  if (!isa<FuncKindAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
    return op->emitOpError()
           << "'" << kFuncKindAttrName
           << "' must be a #tfm.func_kind on a function, found "
           << attr.getValue();
  return success();
}

std::optional<FuncKind> autoshard::tfm::getFuncKind(Operation *func) {
  if (!func)
    return std::nullopt;
  if (auto kind = func->getAttrOfType<FuncKindAttr>(kFuncKindAttrName))
    return kind.getValue();
  return std::nullopt;
}

void autoshard::tfm::setFuncKind(Operation *func, FuncKind kind) {
  func->setAttr(kFuncKindAttrName, FuncKindAttr::get(func->getContext(), kind));
}

bool autoshard::tfm::isGradientFunc(Operation *func) {
  std::optional<FuncKind> kind = getFuncKind(func);
  return kind == FuncKind::Backward || kind == FuncKind::InputGrad ||
         kind == FuncKind::WeightGrad;
}

std::optional<Role> autoshard::tfm::getRole(DictionaryAttr attrs) {
  auto role = attrs ? attrs.getAs<StringAttr>(kRoleAttrName) : StringAttr();
  return role ? symbolizeRole(role.getValue()) : std::nullopt;
}

bool autoshard::tfm::isExpertRole(Role role) {
  return role == Role::ExpertUp || role == Role::ExpertGate ||
         role == Role::ExpertDown;
}

bool autoshard::tfm::isVocabRole(Role role) {
  return role == Role::Embedding || role == Role::LmHead;
}
