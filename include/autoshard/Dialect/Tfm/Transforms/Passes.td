//===- Passes.td - tfm transformations ---------------------*- tablegen -*-===//
//
// Passes over the `tfm` dialect (global shapes, before any sharding).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_TD
#define AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmAutodiff : Pass<"tfm-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the training step (forward, backward, clipping, AdamW)";
  let description = [{
    Derives the training step from the model builder's `@forward(tokens,
    labels, [step], params...) -> loss`, following the contract in
    `spec/autodiff.md` (consumed by `rt-lower`):

    * every block function `@B` called from `@forward` gets a pair
      `@B_fwd(<args of @B>) -> (<results of @B>, residuals...)` and
      `@B_bwd(<dy per float result>, <args of @B the backward reads>,
      residuals...) -> (<gradient per float argument of @B>)`, generated once
      per callee however many layers call it. The residuals are exactly the
      values computed inside `@B` that the backward reads, in program order;
      arguments of `@B` are passed to `@B_bwd` directly instead;
    * `@train_step(tokens, labels, step, lr, params..., m..., v...) ->
      (loss, grad_norm, params'..., m'..., v'...)` runs the forward, the
      reverse pass (each op's `TfmVJPOpInterface` rule, `tfm.add` where a
      value has several uses, e.g. a token embedding tied to the LM head),
      global-norm clipping (`tfm.sum_squares`, `tfm.clip_coef`) and one
      `tfm.adamw` per parameter; weight decay applies to parameters of rank
      >= 2 only (nanoGPT's grouping: no decay for norms and biases);
    * `@eval(tokens, labels, params...) -> loss` (the eval entry) is
      `@forward` with dropout off, as PyTorch's `model.eval()`: each
      `tfm.dropout` becomes its input, and a call to a block function that
      contains dropout (itself or through its callees) goes to its
      dropout-free clone `@B_infer`, made once per callee, without the
      arguments only dropout read (the step, the layer index); blocks
      without dropout are called as they are. `@eval` takes no step;
    * `@logits(tokens, params...) -> logits` is `@eval` without the loss
      (for sampling).

    `@eval` replaces `@forward`, so the public functions of the result are
    exactly the runtime entries (`@train_step`, `@eval`, `@logits`); the
    block functions are left unchanged, and private functions nobody calls
    any more are removed. The learning rate and the 1-based step are
    runtime inputs of `@train_step`; dropout runs in `@train_step` only.

    Gradient accumulation (`microbatches = M > 1`): `@forward` is taken as
    one microbatch of `b` rows, and `@train_step` and `@eval` take a batch
    of `M * b` rows; each runs the forward (and backward) once per
    microbatch `tfm.microbatch {index = j, count = M}` (rows `j, j + M,
    ...`), sums the gradients and the losses and scales both by `1 / M`:
    the loss and the gradients of the mean over all `M * b` rows, as one
    step over the whole batch computes them, with the activations of one
    microbatch alive at a time. Gradients stay partial over data-parallel
    axes through the accumulation (they are reduced once, by the consumer
    of the sum). `tfm.model`'s `batch` becomes `M * b` and
    `tfm.microbatches = M` is recorded on the module (`dist-apply-plan`
    checks a plan's `mb` against it). Dropout with `M > 1` is rejected (its
    masks are keyed on the row within the microbatch).
  }];
  let dependentDialects = [
    "::autoshard::tfm::TfmDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
  ];
  let options = [
    Option<"beta1", "beta1", "double", "0.9",
           "AdamW decay rate of the first moment">,
    Option<"beta2", "beta2", "double", "0.95",
           "AdamW decay rate of the second moment">,
    Option<"epsilon", "epsilon", "double", "1e-8",
           "AdamW denominator epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1",
           "decoupled weight decay of parameters of rank >= 2">,
    Option<"maxGradNorm", "max-grad-norm", "double", "1.0",
           "global gradient norm above which gradients are scaled down (0: no clipping)">,
    Option<"microbatches", "microbatches", "int64_t", "1",
           "microbatches per step (gradient accumulation; @forward is one microbatch)">,
  ];
}

#endif // AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_TD
