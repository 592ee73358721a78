//===- Passes.td - rt passes -------------------------------*- tablegen -*-===//
//
// The last stage of the compiler, in this order:
//   rt-lower           tfm functions on tensors -> rt functions on buffers
//   rt-fuse-epilogues  (optional) adds folded into the GEMM feeding them
//   rt-plan-memory     static offsets, frame sizes, peak breakdown
//   rt-export          the JSON artifact (docs/artifact-format.md)
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_TD
#define AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RtLower : Pass<"rt-lower", "::mlir::ModuleOp"> {
  let summary = "Lower tfm functions on tensors to rt instruction streams";
  let description = [{
    Runs after `tfm-autodiff` (and, for several ranks, after the `dist`
    passes); followed by `rt-plan-memory`. Every `func.func` becomes an
    `rt.func` of the same name, keeping what it computes (`tfm.func_kind`,
    the `tfm.recompute` marker) for the analyses of the rt form; every
    tensor value becomes a buffer:

    * public functions are entries, each the entry of its own name
      (`tfm-autodiff` emits `@train_step`, `@eval` and `@logits`; the
      builder's `@forward` does not survive it): an argument tagged
      `tfm.input = ROLE` becomes `rt.input ROLE`, a result tagged
      `tfm.output = ROLE` becomes `rt.output ROLE`; an argument tagged
      `tfm.param = NAME` or `tfm.state = NAME` becomes `rt.state @NAME`,
      declared once per module by an `rt.state_def` built from the
      argument's `tfm.init`, `tfm.init_std`, `tfm.state_kind`, `tfm.state_of`
      (parameters of rank >= 2 get `decay`);
    * a result tagged as state `NAME` is written in place into that state's
      buffer. That is allowed only if the state's old value (or a reshape of
      it) is not read after the op that produces the new value, and, when
      that op is a call, not read by the call either; otherwise the pass
      fails naming the state and the op;
    * private functions are callees: results become trailing buffer
      arguments that the caller passes (destination passing);
    * a value that a function returns is computed directly in its
      destination (output slot, state, or the caller's buffer), through
      `rt.view`s of it when it is a reshape; when that is impossible
      (the value is an argument or a constant, or is returned twice) a
      `reshape` kernel (the runtime's copy) writes it at the end;
    * a `dist` communication op on local tensors (after `dist-partition`)
      becomes `rt.kernel "dist.OP"` (the op's full name, e.g.
      `dist.all_reduce`, so it never clashes with a tfm kernel) with its
      attributes but `mesh`, `reduction` as the string `"sum"`/`"max"`;
      `dist.shard_slice`, `dist.axis_index` and the flat-buffer ops
      `dist.pack` / `dist.unpack` (`num_groups`, `scatter_dims`; one
      result buffer per unpacked tensor) likewise. A `dist.all_reduce`
      (or its start) of a `dist.pack` that nothing else reads reduces in
      place: its result is the packed buffer itself. A `*_start` op
      gets a `handle` number (0, 1, ... per function) and writes into the
      buffer of its `dist.wait`'s result (that value's destination if it
      is returned); the wait becomes `rt.kernel "dist.wait"` whose args are
      the start's args then its results, whose results are the start's,
      with the same `handle`. The handle must have exactly one use, a
      `dist.wait` in the same function;
    * the `dist.sharding` attribute of an entry argument or result is kept
      as `rt.sharding` on its `rt.state_def`, `rt.input` or `rt.output`;
      it describes the global layout of the local value, so a function that
      carries `dist.sharding` (on an argument, a result or an op) must be
      marked `dist.partitioned` (set by `dist-partition`): an unpartitioned
      sharded function still has global shapes and is an error;
    * the vocab-parallel `tfm.vocab_*` ops that `dist-partition` emits are
      plain tfm ops: their `shard` operand (from `dist.axis_index`) is a
      buffer like any other;
    * `tfm.OP` becomes `rt.kernel "OP"` with the op's attributes verbatim
      (dialect-prefixed discardable attributes such as `dist.sharding` are
      dropped); `tfm.reshape` becomes `rt.view` (no copy); `arith.constant`
      becomes `rt.const`; `func.call` becomes `rt.call` with an
      `rt.alloc` per callee result;
    * each other value gets an `rt.alloc` with a category, by the first rule
      that applies: `workspace` if nothing reads it (a kernel output that is
      still written) or it is a `sum_squares`/`clip_coef` result; `grad` if
      it is computed in a backward function (`tfm.func_kind =
      #tfm.func_kind<backward>`, e.g. `@B_bwd`), by a gradient op (`*_grad`,
      `matmul_wgrad`), by a call to a backward function, or by
      any op with a `grad` operand (gradients flow from the loss seed
      through plain ops such as `matmul` and `add` too); `activation`
      otherwise (forward values, including the residuals a `_fwd` call
      returns to its caller).
  }];
  let dependentDialects = ["::autoshard::rt::RtDialect"];
}

def RtFuseEpilogues : Pass<"rt-fuse-epilogues", "::mlir::ModuleOp"> {
  let summary = "Fold the add or gelu that consumes a GEMM into the GEMM (residual, bias, gelu, gelu_grad epilogues)";
  let description = [{
    Runs after `rt-lower`, before `rt-plan-memory` (a planned function is an
    error: its offsets would no longer hold). A Transformer adds the output
    of most GEMMs to something right away: the residual stream after the
    attention out-projection and the MLP down-projection, the input
    gradient of a block's branches in the backward, a bias after a linear
    layer with biases. As two kernels, the GEMM writes a temporary that the
    add reads back; one GEMM with beta = 1 (cuBLAS, OpenBLAS) adds in place
    instead: one kernel, one buffer and two passes over the result fewer.

    The pass rewrites

    ```mlir
    %t = rt.alloc activation : !rt.buffer<16x64x128xf32>
    rt.kernel "matmul"(%a, %b) -> (%t) attrs {...} : ...
    ...
    rt.kernel "add"(%c, %t) -> (%r) : ...      // or "add"(%t, %c)
    ```

    into `rt.kernel "matmul"(%a, %b, %c) -> (%r) attrs {...}` at the add's
    place: `r = op(a) op(b) + c` with `c` of the result's type (residual;
    `c` may be `r` itself, in place), and `add(%t, %bias)` with a rank-1
    `bias` of the result's last dim `n` (a suffix-broadcast add) into
    `rt.kernel "matmul"(%a, %b, %bias) -> (%r) attrs {epilogue = "bias", ...}`:
    `r = op(a) op(b) + bias` on every row. Conditions, all required:

    * `t` is an `rt.alloc` (not a slot, state, view or argument) whose only
      uses are the matmul (its one result) and the add (one operand), the
      matmul comes first, and it has two arguments (not already fused);
    * `t`, `r` and (residual) `c` have the same type; (bias) `c` is
      `[n]` of the same element type;
    * `r` may not share bytes with `a` or `b` (the fused kernel writes `r`
      while it reads them);
    * no instruction between the two writes `a` or `b` (the fused kernel
      reads them later than the matmul did), and there is no `rt.call`, no
      `dist.*_start` and no `dist.wait` between them (a callee's or an
      asynchronous collective's accesses are not analysed).

    "May share bytes" follows `rt.view`s to the root buffer: two values alias
    when they have the same root or name the same state; a function
    argument stands for every buffer any call passes in its place
    (transitively; for a function nobody calls, for any buffer), so a
    callee's argument aliases what its callers say.
    Reads and writes of `c` and `r` between the two need no condition: the
    fused kernel reads `c` and writes `r` where the add did.

    Activations. The MLP's up-projection is followed by gelu, and in the
    backward the GEMM of its input gradient by gelu_grad. The pass rewrites

    ```mlir
    rt.kernel "matmul"(%a, %b) -> (%t) : ...
    rt.kernel "gelu"(%t) -> (%y) attrs {tanh_approx} : ...
    rt.kernel "matmul"(%dy, %w) -> (%u) attrs {transpose_rhs} : ...
    rt.kernel "gelu_grad"(%u, %x) -> (%dx) : ...
    ```

    into `rt.kernel "matmul"(%a, %b) -> (%y) attrs {epilogue = "gelu",
    tanh_approx}` (or `-> (%y, %t)` when `t` is read elsewhere too: the
    pre-activation a training forward saves) and `rt.kernel "matmul"(%dy,
    %w, %x) -> (%dx) attrs {epilogue = "gelu_grad", transpose_rhs}`, at the
    activation's place. Conditions, all required:

    * the activation is the first kernel after the matmul (two arguments,
      one result `t`) that names `t`, in the same block; `t` is its only
      `x` (gelu) or its `dy` and not its `x` (gelu_grad); its only
      attribute, if any, is `tanh_approx`; all buffers have `t`'s type;
    * gelu_grad: `t` is an `rt.alloc` used only by the two kernels (the
      product is never written); gelu: the same, or `t` is kept as the
      second result, and then no instruction between the two reads or
      writes memory that may alias `t` (it is written later now);
    * the activation's result may not share bytes with `a`, `b`, `t` or
      (gelu_grad) `x`;
    * between the two, as above: no instruction writes `a` or `b`, no
      `rt.call`, no `dist.*_start`, no `dist.wait`.

    Everything else is left as it is.
  }];
  // Kernel names are dist op names for communication; the pass asks those
  // ops' traits, so their dialect must be loaded.
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def RtPlanMemory : Pass<"rt-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Plan a static frame for every rt function";
  let description = [{
    Runs after `rt-lower` (and `rt-fuse-epilogues`, when used); followed by
    `rt-export`. Plans callees before
    callers (recursion is an error). In a function, a local (`rt.alloc`) is
    live from the first to the last instruction that names it (directly or
    through an `rt.view`); I/O slots are live for the whole function; a call
    reserves its callee's whole frame during the call. Buffers are placed
    greedily in program order (largest first among those that become live
    at the same instruction) at the lowest 64-byte aligned offset that does
    not overlap any buffer live at the same time (first fit).
    The pass records `frame_bytes` (the highest end, 64-aligned) on the
    function, `offset` on locals and slots, `frame_offset` on calls, and
    `peak_breakdown`: the live bytes per category at the instruction where
    live bytes peak, callee peaks included at their calls.

    The result is then checked independently of the planner: every pair of
    buffers live at the same instruction must occupy disjoint bytes inside
    the frame; a violation fails the pass naming both buffers. With
    `verify-only`, existing offsets are only checked (no planning).
  }];
  let options = [
    Option<"verifyOnly", "verify-only", "bool", /*default=*/"false",
           "Only check the existing plan, do not re-plan">,
  ];
}

def RtExport : Pass<"rt-export", "::mlir::ModuleOp"> {
  let summary = "Write the planned rt program as the JSON artifact";
  let description = [{
    Runs last, after `rt-plan-memory`; leaves the IR unchanged. Writes the
    artifact described in `docs/artifact-format.md` (format version 5, with
    its content `checksum`) to `output` (`-` for stdout): the mesh (the module's one `dist.mesh`, if
    any) and world size, the plan (module attribute `dist.plan`), state
    table from `rt.state_def`s with `global_shape` and `sharding` from
    their `rt.sharding` (replicated without one; likewise for entry
    slots), constant
    pool (one entry per distinct `rt.const` value), every function with its
    buffers and code, entries with their I/O slots, the memory section and
    the module's `tfm.model` summary. Fails if a function is not planned or
    a type or attribute has no artifact form.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to write the artifact to ('-' for stdout)">,
  ];
}

#endif // AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_TD
