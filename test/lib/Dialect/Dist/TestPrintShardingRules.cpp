//===- TestPrintShardingRules.cpp - Print every op's sharding rule --------===//
//
// `test-print-sharding-rules` prints the factor sharding rule of every op
// that has one, one line per op, in Shardy's notation
// (`#sdy.op_sharding_rule`):
//
//   tfm.matmul: ([i, k], [k, j]) -> ([i, j]) {i=8, j=16, k=32} reduction={k}
//
// Each operand and result is the list of its dims' factors; a dim tied to
// no factor is `_`, a dim larger than its factor (the factor is its major
// part, ShardingRule) is `i*N` with N its unsharded minor part. After the
// factor sizes: `reduction={..}` (Reduction factors, `:max` for a max
// reduction), `need_replication={..}`, `hook={..}` (factors only the
// partition hook may shard) and `linear={..}` (the jointly linear operand
// groups, by operand index), each when non-empty.
//
// With `dialect=NAME` it also fails, naming them, when ops of that dialect
// implement the rule interface but none of them is in the input: the lit
// test test/Dialect/Tfm/sharding-rules.mlir then holds every op's rule.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

using namespace mlir;

namespace {

/// The rule interface, in one place: the rule of `op` and whether ops named
/// `name` have one.
std::optional<autoshard::dist::ShardingRule> getRule(Operation *op) {
  if (auto rule = dyn_cast<autoshard::dist::ShardingRuleOpInterface>(op))
    return rule.getShardingRule();
  return std::nullopt;
}
bool hasRule(RegisteredOperationName name) {
  return name.hasInterface<autoshard::dist::ShardingRuleOpInterface>();
}

/// Factor names: i..z, then a..h, then f<N>.
std::string factorName(int64_t f) {
  static constexpr llvm::StringLiteral letters = "ijklmnopqrstuvwxyzabcdefgh";
  if (f < static_cast<int64_t>(letters.size()))
    return std::string(1, letters[f]);
  return "f" + std::to_string(f);
}

/// `[i, j*2, _]`: the factors of one value's dims.
void printDims(llvm::raw_ostream &os, ArrayRef<int64_t> dims, Type type,
               const autoshard::dist::ShardingRule &rule) {
  auto shaped = dyn_cast<ShapedType>(type);
  os << "[";
  llvm::interleaveComma(llvm::enumerate(dims), os, [&](auto entry) {
    int64_t f = entry.value();
    if (f < 0) {
      os << "_";
      return;
    }
    os << factorName(f);
    if (shaped && shaped.hasRank() &&
        entry.index() < static_cast<size_t>(shaped.getRank())) {
      int64_t size = shaped.getDimSize(entry.index());
      if (rule.factorSizes[f] > 0 && size != rule.factorSizes[f])
        os << "*" << size / rule.factorSizes[f];
    }
  });
  os << "]";
}

/// `name={a, b}` for the factors `select` picks, when there are any.
template <typename Fn>
void printFactorSet(llvm::raw_ostream &os, llvm::StringRef name,
                    const autoshard::dist::ShardingRule &rule, Fn select) {
  SmallVector<std::string> names;
  for (int64_t f = 0; f < rule.getNumFactors(); ++f)
    if (std::optional<std::string> text = select(f))
      names.push_back(*text);
  if (names.empty())
    return;
  os << " " << name << "={";
  llvm::interleaveComma(names, os);
  os << "}";
}

void printRule(llvm::raw_ostream &os, Operation *op,
               const autoshard::dist::ShardingRule &rule) {
  using autoshard::dist::FactorKind;
  using autoshard::dist::FactorReduction;
  auto printValues = [&](const auto &dimLists, TypeRange types) {
    os << "(";
    for (auto [i, dims] : llvm::enumerate(dimLists)) {
      if (i)
        os << ", ";
      printDims(os, dims, i < types.size() ? types[i] : Type(), rule);
    }
    os << ")";
  };
  os << op->getName() << ": ";
  printValues(rule.operandDims, op->getOperandTypes());
  os << " -> ";
  printValues(rule.resultDims, op->getResultTypes());
  os << " {";
  for (int64_t f = 0; f < rule.getNumFactors(); ++f)
    os << (f ? ", " : "") << factorName(f) << "=" << rule.factorSizes[f];
  os << "}";
  printFactorSet(
      os, "reduction", rule, [&](int64_t f) -> std::optional<std::string> {
        if (rule.factorKinds[f] != FactorKind::Reduction)
          return std::nullopt;
        return factorName(f) +
               (rule.getReduction(f) == FactorReduction::Max ? ":max" : "");
      });
  printFactorSet(os, "need_replication", rule,
                 [&](int64_t f) -> std::optional<std::string> {
                   if (rule.factorKinds[f] != FactorKind::NeedsReplication)
                     return std::nullopt;
                   return factorName(f);
                 });
  printFactorSet(os, "hook", rule,
                 [&](int64_t f) -> std::optional<std::string> {
                   if (!rule.factorNeedsHook(f))
                     return std::nullopt;
                   return factorName(f);
                 });
  if (!rule.linearOperandGroups.empty()) {
    os << " linear={";
    llvm::interleaveComma(rule.linearOperandGroups, os, [&](const auto &g) {
      os << "(";
      llvm::interleaveComma(g, os);
      os << ")";
    });
    os << "}";
  }
  os << "\n";
}

struct TestPrintShardingRulesPass
    : PassWrapper<TestPrintShardingRulesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestPrintShardingRulesPass)

  TestPrintShardingRulesPass() = default;
  TestPrintShardingRulesPass(const TestPrintShardingRulesPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-print-sharding-rules"; }
  StringRef getDescription() const final {
    return "Print the factor sharding rule of every op (Shardy notation)";
  }

  Option<std::string> dialect{
      *this, "dialect",
      llvm::cl::desc("Fail unless every op of this dialect that has a "
                     "sharding rule occurs in the input")};

  void runOnOperation() override {
    llvm::StringSet<> seen;
    getOperation()->walk([&](Operation *op) {
      std::optional<autoshard::dist::ShardingRule> rule = getRule(op);
      if (!rule)
        return;
      seen.insert(op->getName().getStringRef());
      printRule(llvm::outs(), op, *rule);
    });
    if (dialect.empty())
      return;
    SmallVector<StringRef> missing;
    for (RegisteredOperationName name : getContext().getRegisteredOperations())
      if (name.getDialectNamespace() == dialect && hasRule(name) &&
          !seen.contains(name.getStringRef()))
        missing.push_back(name.getStringRef());
    if (missing.empty())
      return;
    llvm::sort(missing);
    std::string list;
    llvm::raw_string_ostream os(list);
    llvm::interleaveComma(missing, os);
    getOperation()->emitError()
        << missing.size() << " op(s) of '" << dialect
        << "' have a sharding rule but no instance in the input: " << list;
    signalPassFailure();
  }
};

} // namespace

namespace autoshard::test {
void registerTestPrintShardingRulesPass() {
  PassRegistration<TestPrintShardingRulesPass>();
}
} // namespace autoshard::test
