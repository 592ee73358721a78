//===- TfmAttrs.td - Transformer graph attributes ----------*- tablegen -*-===//
//
// The function kinds that tfm-autodiff, tfm-recompute and the backward split
// record on the functions they make (`tfm.func_kind`).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_TD
#define AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_TD

include "autoshard/Dialect/Tfm/IR/TfmDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tfm_FuncKind : I32EnumAttr<"FuncKind",
    "what a function made by a tfm transform computes", [
      I32EnumAttrCase<"Forward", 0, "forward">,
      I32EnumAttrCase<"Backward", 1, "backward">,
      I32EnumAttrCase<"InputGrad", 2, "input_grad">,
      I32EnumAttrCase<"WeightGrad", 3, "weight_grad">,
      I32EnumAttrCase<"Recompute", 4, "recompute">,
    ]> {
  let cppNamespace = "::autoshard::tfm";
  let genSpecializedAttr = 0;
}

// Not an attribute: the values of the `tfm.role` string attribute
// (TfmAttrNames.h), so that passes compare roles as enum cases
// (symbolizeRole) rather than as strings of their own. The parameter roles
// are python/autoshard/models/builder.py's ROLES; `hidden`, `layer_index`
// and `step` are the block arguments that are not parameters.
def Tfm_Role : I32Enum<"Role", "what a parameter or block argument is", [
      I32EnumAttrCase<"Embedding", 0, "embedding">,
      I32EnumAttrCase<"PosEmbedding", 1, "pos_embedding">,
      I32EnumAttrCase<"AttnQ", 2, "attn_q">,
      I32EnumAttrCase<"AttnK", 3, "attn_k">,
      I32EnumAttrCase<"AttnV", 4, "attn_v">,
      I32EnumAttrCase<"AttnOut", 5, "attn_out">,
      I32EnumAttrCase<"MlpUp", 6, "mlp_up">,
      I32EnumAttrCase<"MlpGate", 7, "mlp_gate">,
      I32EnumAttrCase<"MlpDown", 8, "mlp_down">,
      I32EnumAttrCase<"Norm", 9, "norm">,
      I32EnumAttrCase<"LmHead", 10, "lm_head">,
      I32EnumAttrCase<"Router", 11, "router">,
      I32EnumAttrCase<"ExpertUp", 12, "expert_up">,
      I32EnumAttrCase<"ExpertGate", 13, "expert_gate">,
      I32EnumAttrCase<"ExpertDown", 14, "expert_down">,
      I32EnumAttrCase<"Bias", 15, "bias">,
      I32EnumAttrCase<"Hidden", 16, "hidden">,
      I32EnumAttrCase<"LayerIndex", 17, "layer_index">,
      I32EnumAttrCase<"Step", 18, "step">,
    ]> {
  let cppNamespace = "::autoshard::tfm";
}

def Tfm_FuncKindAttr : EnumAttr<Tfm_Dialect, Tfm_FuncKind, "func_kind"> {
  let summary = "what a function made by a tfm transform computes";
  let description = [{
    The discardable `tfm.func_kind` attribute of a function, set by the
    transform that made it, so that later passes recognise layer functions
    by what they compute rather than by their names:

    * `forward`: a block's forward part (`@B_fwd`, tfm-autodiff; the
      `@B_selective_fwd` and `@B_full_fwd` variants of tfm-recompute): the
      block's results, then the residuals its backward reads (none for
      `@B_full_fwd`);
    * `backward`: a block's backward part (`@B_bwd`, tfm-autodiff;
      `@B_selective_bwd`, tfm-recompute): the gradients of the block's
      float arguments from the output gradients, arguments and residuals;
    * `input_grad` / `weight_grad`: the two halves of a backward function
      cut by dist-pipeline-split for the zero-bubble schedules
      (`@B_bwd__input`, `@B_bwd__weight`): the input gradients (plus the
      values the weight half reads), and the weight gradients;
    * `recompute`: full recomputation's re-run of a forward
      (`@B_recompute_full`, tfm-recompute), returning the residuals only.

    ```mlir
    func.func private @block_bwd(...) attributes {tfm.func_kind = #tfm.func_kind<backward>}
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_TD
