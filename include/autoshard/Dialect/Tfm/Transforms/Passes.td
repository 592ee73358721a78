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
      arguments of `@B` are passed to `@B_bwd` directly instead, and
      constants and `tfm.cast`s of arguments (the bf16 weight copies of
      `tfm-mixed-precision`) are recomputed in `@B_bwd` rather than saved;
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
    microbatch alive at a time. Each sum is placed right after the op that
    produced its microbatch's value (a layer's backward call), so a
    microbatch's gradients die as soon as they are added, and the last
    microbatch's sum (then scaled) marks when a layer's gradient is final,
    which is where `dist-bucket-collectives` and `dist-overlap-collectives`
    reduce it. Gradients stay partial over data-parallel
    axes through the accumulation (they are reduced once, by the consumer
    of the sum). `tfm.model`'s `batch` becomes `M * b` and
    `tfm.microbatches = M` is recorded on the module (`dist-apply-plan`
    checks a plan's `mb` against it). Dropout masks are keyed on (seed,
    step, layer, site, element of the microbatch's tensor), so microbatch j
    keys its dropouts on the layers `k + j * L` (L: one more than the
    largest layer key) to drop other elements than the other microbatches;
    the masks still do not depend on the sharding, so every plan with the
    same `M` trains alike (the RNG holds layer keys below 2^16: M · L larger
    than that is an error).
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
           "microbatches per step, 1 to 65536 (gradient accumulation; @forward is one microbatch)">,
  ];
}

def TfmMixedPrecision : Pass<"tfm-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "bf16 (or f16) compute with f32 master weights";
  let description = [{
    Rewrites the model builder's f32 `@forward` so that its tensor math runs
    in `compute-type` (`bf16` by default, or `f16`) while the parameters stay
    `f32`. It runs on the model, BEFORE `tfm-autodiff`, so the backward is
    derived from the rewritten forward: the gradient of `tfm.cast` is the
    cast back, so every parameter gradient arrives in `f32`, and gradient
    accumulation, the global-norm clipping and `tfm.adamw` (parameters, `m`,
    `v`) all stay `f32`. This is the recipe of Micikevicius et al., "Mixed
    Precision Training" (ICLR 2018) as Megatron-LM implements it for bf16
    (`--bf16`: f32 main params and grads, bf16 compute) and the op lists of
    `torch.autocast` (matmuls in the low type; softmax, norms and losses in
    f32). With bf16 (f32's exponent range) no loss scaling is needed; with
    f16 the pass inserts none either (no dynamic loss scaler yet), so f16 is
    for experiments only.

    The policy, op by op (only forward ops may be present; the pass fails on
    gradient or optimizer ops and on a module it already rewrote, marked
    `tfm.mixed_precision = "bf16"`):

    * Parameters (`tfm.param` arguments of `@forward`, and the arguments of
      block functions they are passed to) stay `f32`: the master weights,
      the values `tfm.adamw` updates. Each is cast to the compute type by a
      `tfm.cast` right before each op that uses it in the compute type (one
      cast per using op; a tied embedding used by the embedding and the LM
      head gets two, so its two gradients are summed in `f32`). A block
      function receives the `f32` parameters and casts them inside, so one
      block function still serves every layer.
    * `f32` ops (autocast's float32 list; Megatron's fp32 softmax, norm
      statistics and loss): `tfm.layer_norm`, `tfm.rms_norm` (input cast to
      `f32`, `gamma`/`beta` used in `f32` as they are, and the output cast
      back to the compute type right after the op, once),
      `tfm.cross_entropy` (the logits are cast to `f32` before the loss, so
      the softmax, the log-sum-exp and the loss are `f32`, and `@logits`
      returns `f32` logits), `tfm.moe_router` (the router softmax; its gates
      stay `f32` until an op that uses them casts them) and
      `tfm.moe_aux_loss`.
    * Every other tfm op with a float tensor operand of rank >= 1 runs in the
      compute type: its float operands are cast to it where they are not
      already (parameters, constants, `f32` gates) and its result types are
      recomputed by the op's own type inference. So matmuls, attention
      (whose `lse` output is `f32` by definition), activations, rope,
      dropout, embeddings and the residual adds all see bf16 activations,
      and the activations saved for the backward are bf16.
    * Scalar arithmetic (ops whose float operands are all rank 0, e.g. the
      MoE auxiliary loss added to the loss) stays `f32`: the loss is `f32`.
    * Block functions are rewritten once, for the operand types of their
      calls (which must agree across calls); entries keep their signatures
      (a result that changed type would be cast back; the loss never does).

    The runtime needs a `cast` kernel (CPU: stores bf16, computes each op in
    f32; CUDA: native bf16 kernels). `tfm.cast` has an elementwise sharding
    rule and lets a partial sum pass, so plans apply unchanged.
  }];
  let dependentDialects = [
    "::autoshard::tfm::TfmDialect",
    "::mlir::func::FuncDialect",
  ];
  let options = [
    Option<"computeType", "compute-type", "std::string", "\"bf16\"",
           "element type of the compute (bf16 or f16); parameters, gradients "
           "and optimizer states stay f32">,
  ];
}

def TfmRecompute : Pass<"tfm-recompute", "::mlir::ModuleOp"> {
  let summary = "Activation recomputation (none, selective, full)";
  let description = [{
    Trades compute for activation memory in the training step that
    `tfm-autodiff` built (Chen et al. 2016, "Training Deep Nets with
    Sublinear Memory Cost"; Korthikanti et al. 2022, "Reducing Activation
    Recomputation in Large Transformer Models"; Megatron-LM's
    `--recompute-granularity full|selective`). It runs after `tfm-autodiff`
    and before `dist-apply-plan`, on global shapes, and rewrites each pair
    `%r = call @B_fwd(args)` ... `call @B_bwd(dy..., args..., %r#residuals)`
    in the public functions (every layer, every microbatch):

    * `mode=full`: the forward calls `@B_full_fwd(args) -> (<results of
      @B>)`, `@B_fwd` without its residuals, so a layer keeps only its input
      (which is the previous layer's output) between the forward and the
      backward. Right before each `@B_bwd` call, `call
      @B_recompute_full(args) {tfm.recompute}` (the forward call's operands)
      re-runs the layer's forward and returns exactly the residuals the
      backward reads: `@B_fwd` returning only its residuals, so what only
      the block's outputs need (in a GPT block the MLP down-projection and
      the residual add, and under SP their reduce-scatter) is left out. The
      residuals of one layer are alive at a time.
    * `mode=selective`: the norms and the elementwise ops of the block
      (`tfm.layer_norm`, `tfm.rms_norm`, `tfm.gelu`, `tfm.silu`,
      `tfm.swiglu`, `tfm.rope`, `tfm.dropout`, `tfm.add`/`sub`/`mul`/
      `scale`, `tfm.cast`, `tfm.broadcast`, `tfm.reshape` and constants:
      memory-bound, a few FLOPs per element) are recomputed; the results of
      everything else (matmuls, `tfm.attention` with its log-sum-exp, MoE
      routing and dispatch, nested calls) are kept. This is Megatron-Core's
      `--recompute-modules layernorm,moe_act` extended to the dense MLP
      activation. Korthikanti et al.'s selective recomputation (Megatron's
      `core_attn`: the attention scores, softmax and dropout, O(s^2)
      memory) has nothing left to recompute here: `tfm.attention` is fused
      and saves only `q`, `k`, `v`, its output and the log-sum-exp, from
      which its backward recomputes the probabilities. Residual by residual, in program order, a residual made
      by a cheap op is recomputed when the values its recomputation needs
      that are not kept anyway (block arguments are always at hand) are
      strictly smaller than the residual itself; otherwise it is kept. So a
      GPT-2 block keeps q, k, v, the attention output and log-sum-exp, the
      residual stream after attention and the MLP's up-projection, and
      recomputes both LayerNorm outputs and the GELU output: 16 -> 9 units
      of batch x seq x hidden per layer (the attention output is a residual
      both as 4-D and as its 3-D view, which is recomputed as a view). The
      recomputation is folded into the backward, as DESIGN.md §4 puts it
      ("recomputation is the choice of which residuals to save"): the
      forward calls `@B_selective_fwd(args) -> (<results of @B>, kept...)`
      and the backward `@B_selective_bwd(<inputs of @B_bwd before its
      residuals>, <arguments of @B_fwd the recomputation reads that @B_bwd
      does not take>, kept...)`, which recomputes the other residuals first
      and then runs `@B_bwd`'s body. No separate call is made, so a
      pipeline split places it like any backward call. A block with nothing
      to recompute keeps its pair.
    * `mode=none`: nothing changes.

    The re-runs of `full` carry the unit attribute `tfm.recompute` and the
    forward call's other attributes (`tfm.layer`) and operands, so that
    `dist-pipeline-split` places each in the backward unit of its layer;
    the `@B_selective_bwd` functions of `selective` carry it too (they
    recompute). The module records the mode as
    `tfm.recompute = "full" | "selective" | "none"` (`dist-apply-plan`
    checks a plan's `recompute` against it); running the pass on a module
    that has it is an error. Numerics are unchanged bit for bit: the same
    ops run on the same values (dropout masks are keyed on the step and the
    layer index, not on when they are drawn).
  }];
  let dependentDialects = [
    "::autoshard::tfm::TfmDialect",
    "::mlir::func::FuncDialect",
  ];
  let options = [
    Option<"mode", "mode", "std::string", "\"full\"",
           "what to recompute: full (whole blocks), selective (norms and "
           "elementwise ops) or none">,
  ];
}

#endif // AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_TD
