//===- Passes.td - dist passes -----------------------------*- tablegen -*-===//
//
// The sharding pipeline (spec/sharding.md), in this order:
//   dist-apply-plan   mesh + seed shardings from a plan
//   dist-propagate    a sharding for every value
//   dist-partition    global -> per-rank shapes, collectives
//
// One `def` per pass; append new passes at the end of the file.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistApplyPlan : Pass<"dist-apply-plan", "::mlir::ModuleOp"> {
  let summary = "Create the device mesh and seed shardings from a plan";
  let description = !subst("~]", "]", [{
    Runs after `tfm-autodiff`; followed by `dist-propagate`. The plan is a
    comma-separated list of `key=value` (e.g.
    `--dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1"`):

    | key | values | meaning |
    |---|---|---|
    | `dp` | >= 1 | data parallel degree (batch dim of the inputs) |
    | `tp` | >= 1 | tensor parallel degree (Megatron column/row) |
    | `sp` | 0, 1 | sequence parallelism on the `tp` axis (needs `tp > 1`) |
    | `zero` | 0..3 | ZeRO stage on the `dp` axis |
    | `pp`, `cp`, `ep`, `mb`, `vpp` | 1 | reserved (later issues) |
    | `schedule` | `1f1b` | reserved |
    | `recompute` | `none` | reserved |

    Unknown keys, repeated keys, non-integers, degrees below 1, `sp=1` with
    `tp=1`, a `zero` outside 0..3 and a reserved key with a value other than
    its default are errors naming the key and the value found. If every
    degree is 1 the pass changes nothing.

    Otherwise it adds `dist.mesh @mesh [...]` with the axes of size > 1 in
    the order `pp, dp, cp, tp` (tp fastest, so it stays inside a node), the
    module attribute `dist.plan` (every key, defaults filled), and
    `dist.sharding` argument / result attributes on the public (entry)
    functions, selected by the builder's role attributes:

    * inputs `tokens`, `labels` `[B, S]`: `[{dp}, {}~]`; other inputs and the
      scalar outputs (loss, grad norm) replicated;
    * TP (Megatron): `attn_q/k/v`, `mlp_up`, `mlp_gate` `[H, out]` are
      column-parallel `[{}, {tp}~]`; `attn_out`, `mlp_down` `[in, H]` are
      row-parallel `[{tp}, {}~]`; biases of column-parallel layers `[{tp}~]`;
      the embedding `[V, H]` is vocab-parallel `[{tp}, {}~]` and an untied
      `lm_head` `[H, V]` `[{}, {tp}~]`; norms, other biases and position
      tables replicated. Query heads, kv heads (from the `tfm.model`
      attribute), the padded vocabulary and the sharded weight dims must be
      divisible by `tp`;
    * ZeRO stage `k` on `dp`: `k >= 1` optimizer states, `k = 3` parameters
      get `dp` as the major axis of dim 0 (or of the first dim that divides;
      a tensor with no such dim stays replicated and is listed in the module
      attribute `dist.zero_unsharded`). For `k >= 2` the final gradient of
      each parameter in the train step is pinned by a
      `dist.sharding_constraint` to its optimizer states' sharding (so it is
      reduce-scattered where it is produced);
    * SP: the hidden state passed into and out of every block call of the
      entry functions (and its gradient) is pinned to `[{dp}, {tp}, {}~]` by
      `dist.sharding_constraint`s.

    The state results of an entry function get the sharding of the matching
    argument. Every other sharding is left to `dist-propagate`.

    ```mlir
    // --dist-apply-plan="plan=dp=2,tp=2"
    dist.mesh @mesh [dp = 2, tp = 2]
    func.func @train_step(%tokens: tensor<4x16xi32>
        {dist.sharding = #dist.sharding<@mesh, [{dp}, {}~]>, tfm.input = "tokens"},
      %wq: tensor<128x128xf32>
        {dist.sharding = #dist.sharding<@mesh, [{}, {tp}~]>, tfm.role = "attn_q", ...}, ...)
    ```
  }]);
  let options = [
    Option<"plan", "plan", "std::string", /*default=*/"\"\"",
           "Parallelism plan, e.g. \"dp=2,tp=2,sp=1,zero=1\"">,
  ];
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def DistPropagate : Pass<"dist-propagate", "::mlir::ModuleOp"> {
  let summary = "Give every value a sharding, from the seeds through the op rules";
  let description = !subst("~]", "]", [{
    Runs after `dist-apply-plan` (or on IR with hand-written `dist.sharding`
    annotations); followed by `dist-partition`. Needs exactly one
    `dist.mesh` in the module (none: the pass does nothing).

    Fixed shardings: `dist.sharding` attributes already on entry function
    arguments and results, on callee arguments, and on ops in the input (user
    annotations), and the results of `dist.sharding_constraint`;
    `arith.constant`s are replicated. Everything else is soft and derived.

    Propagation runs to a fixed point over all functions reachable from the
    public ones, forward and backward, through the op's
    `TfmShardingRuleOpInterface` factor rule: for each factor, the mesh axes
    found on the operand and result dims tied to it are candidates;
    conflicting candidates (different axes for one factor, or one axis for
    two factors) are resolved by keeping the layout whose resharding would
    cost the most (bytes of the tensors that would have to move, fixed
    values weighted far above soft ones, so e.g. TP weights never move);
    `NeedsReplication` factors are never sharded. Under ZeRO-3 (`zero = 3`
    in the module's `dist.plan`) the `dp` axis of a parameter is storage
    only: it makes no claim (the parameter is all-gathered before use). Results get the chosen
    factor axes on their dims; a sharded `Reduction` factor leaves results
    that lack it partial (sum, or the rule's reduction); a partial (sum)
    operand stays partial through an op that is linear in it
    (`linearOperandGroups`), otherwise the op needs it reduced. Soft operands
    learn the factor axes backward (only unsharded dims gain axes, so the
    iteration terminates). `func.call` binds call operands to callee
    arguments and callee results to call results, in both directions;
    `func.return` of an entry function binds to its result attributes.
    A `dist.sharding_constraint` pins its result; backward it only proposes
    its axes for the unsharded dims of its operand (never over an axis the
    operand is partial on), and `dist-partition` reshards between the two
    (e.g. one reduce-scatter of a partial gradient under ZeRO-2).

    Output: the discardable `dist.sharding` attribute on every op with
    tensor results (an array for several results), `dist.sharding` on the
    arguments and results of every reachable function. Values nothing
    constrains are replicated.

    ```mlir
    // after --dist-apply-plan="plan=tp=2" --dist-propagate, inside a block:
    %1 = tfm.matmul %0, %wq {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}~]>} ...
    %8 = tfm.matmul %7, %wo {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}~], partial = {tp: sum}>} ...
    ```
  }]);
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "::mlir::ModuleOp"> {
  let summary = "Rewrite every function to per-rank shapes with collectives";
  let description = !subst("~]", "]", [{
    Runs after `dist-propagate` (or on hand-annotated IR); followed by
    `rt-lower`. Needs at most one `dist.mesh` (none: the pass does nothing).
    Input: `dist.sharding` on ops (one per result, an array for several),
    function arguments and results; an unannotated value is replicated.

    Every function is rewritten to local (per-rank) types: each argument and
    result gets the local type of its declared sharding, and each op is
    rebuilt on local operands:

    1. An op with a partition hook (`TfmPartitionOpInterface`: vocab-parallel
       embedding / embedding_grad / cross_entropy / cross_entropy_grad,
       sum_squares) emits its own local ops; the pass never special-cases an
       op by name.
    2. Otherwise the op's factor rule (`TfmShardingRuleOpInterface`) gives
       the factor -> mesh axes assignment: pass-through factors take the
       axes of the result dims tied to them (the result sharding is the
       plan), a `Reduction` factor takes the axes that its operand dims
       actually have and the result declares partial (so a row-parallel
       matmul computes a partial result locally), and a result partial
       over an axis that every operand of a linear group
       (`linearOperandGroups`) is partial over stays partial without
       communication (e.g. the sum of partial gradients). Each operand is
       resharded to the sharding the assignment implies, and the op is
       cloned with its local result types (and verified). A sharded factor
       marked `needsHook` without a hook that handles it is an error.
    3. `func.call` operands are resharded to the callee's argument
       shardings; its results have the callee's result shardings.
       `func.return` operands are resharded to the function's declared result
       shardings. `dist.sharding_constraint` and `dist.reshard` become the
       resharding between their operand's sharding and theirs. Other ops
       (e.g. `arith.constant`) compute replicated values.

    Resharding (lib/Dialect/Dist/Transforms/Reshard.cpp) decomposes any
    change of layout on an N-D mesh into `dist.all_gather`,
    `dist.all_to_all`, `dist.reduce_scatter`, `dist.all_reduce` and local
    `dist.shard_slice` steps; a partial value whose target shards a dim on
    the partial axes is exactly one `dist.reduce_scatter`. A value resharded
    to the same sharding twice in one block is resharded once (the forward
    and the backward of a block are different functions, so a ZeRO-3
    parameter is gathered again in each).

    The `dist.sharding` op attributes are removed; public (entry) functions
    keep their argument and result attributes (rt-export needs them),
    private ones lose them.

    ```mlir
    // before (tp = 2):
    %y = tfm.matmul %h, %wo {dist.sharding = #dist.sharding<@m, [{}, {}~], partial = {tp: sum}>}
        : (tensor<8x256xf32>, tensor<256x64xf32>) -> tensor<8x64xf32>
    %z = tfm.add %y, %x {dist.sharding = #dist.sharding<@m, [{}, {}~]>} : ...
    // after:
    %y = tfm.matmul %h, %wo : (tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
    %r = dist.all_reduce %y on @m axes = [tp] reduction = sum : tensor<8x64xf32> -> tensor<8x64xf32>
    %z = tfm.add %r, %x : ...
    ```
  }]);
  let dependentDialects = [
    "::autoshard::dist::DistDialect",
    "::autoshard::tfm::TfmDialect",
  ];
}

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_TD
