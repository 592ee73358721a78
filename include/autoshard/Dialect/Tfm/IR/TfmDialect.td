//===- TfmDialect.td - Transformer graph dialect -----------*- tablegen -*-===//
//
// The `tfm` dialect: Transformer training ops on global (unsharded) shapes.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_TD
#define AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_TD

include "mlir/IR/OpBase.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::autoshard::tfm";
  let summary = "Transformer training graph on global shapes";
  let description = [{
    The `tfm` dialect describes one Transformer training step on global,
    unsharded tensor shapes: the forward ops a model builder emits (embedding,
    matmul, norms, activations, RoPE, attention, cross-entropy, MoE routing),
    their gradient ops used by `tfm-autodiff`, and the optimizer ops (global
    gradient norm, clipping, AdamW).

    Layout conventions used throughout:

    * activations are `[B, S, H]` (batch, sequence, hidden), row-major;
    * attention operands are `[B, S, heads, D]` (head dim innermost), so that
      splitting heads over a tensor-parallel axis is a split of dim 2;
    * weights of a linear layer are `[in, out]` (`y = x @ W`);
    * every reduction and loss is computed in the element type of its input
      unless stated otherwise; losses are scalar `tensor<f32>` means.

    Each op verifies its shapes and names the violated rule and the value
    found. Ops declare what later passes need through op interfaces:
    `TfmVJPOpInterface` (gradient rule) and `TfmCostOpInterface` (FLOP and
    byte counts). How operand and result dims relate under sharding, and
    how an op is partitioned, is the dist dialect's contract
    (`dist::ShardingRuleOpInterface`, `dist::PartitionOpInterface`), which
    every tfm op implements through external models that tools register
    with `autoshard::tfm::registerShardingInterfaceExternalModels`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_TD
