//===- Passes.td - dist passes -----------------------------*- tablegen -*-===//
//
// The sharding pipeline (spec/sharding.md), in this order:
//   dist-apply-plan   mesh + seed shardings from a plan
//   dist-propagate    a sharding for every value
//   dist-partition    global -> per-rank shapes, collectives
//   dist-explain      report of what the plan does (analysis only)
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
    | `cp` | >= 1 | context parallel degree (sequence dim of the inputs, contiguous chunks) |
    | `cp_attention` | `ring`, `ulysses` | attention under `cp > 1`: ring attention (default), or Ulysses all-to-alls over `cp` (the query and key/value heads divisible by `tp` x `cp`) |
    | `zero` | 0..3 | ZeRO stage on the `dp` x `cp` group (with `ep`: on `dp` x `ep`, expert states on `dp`) |
    | `ep` | >= 1 | expert parallelism (MoE models), folded over the tp x cp x dp ranks minor first (Megatron-Core's parallel folding): every tp rank when `etp=1`, every cp rank, then `ep/(tp cp)` of the dp ranks, which must divide `dp`; never over pp; with `zero=3` the expert weights are gathered over `dp` |
    | `etp` | 1 or `tp` | expert tensor parallelism: 1 (default) keeps every expert whole on its rank; `tp` splits each expert Megatron-style over the tp ranks (up/gate by columns, down by rows), which then leave the ep group |
    | `pp`, `mb`, `vpp` | >= 1 | pipeline stages, microbatches, model chunks per pipeline rank |
    | `schedule` | `gpipe`, `1f1b`, `interleaved`, `looped-bfs`, `zb-h1`, `zb-v` | pipeline schedule (built by `dist-schedule` and `dist-pipeline-split`) |
    | `recompute` | `none`, `selective`, `full` | activation recomputation: must equal the module's `tfm.recompute` (set by `tfm-recompute`; absent: `none`) |

    Unknown keys, repeated keys, non-integers, degrees below 1, `sp=1` with
    `tp=1`, a `zero` outside 0..3, an `etp` other than 1 or `tp` and an
    `ep` that does not fold (not a multiple of the tp and cp ranks it takes,
    or the rest not dividing `dp`) are errors naming the
    key and the value found. If every
    degree is 1 the pass changes nothing.

    Otherwise it adds `dist.mesh @mesh [...]` with the axes of size > 1 in
    the order `pp, dp, cp, tp` (tp fastest, so it stays inside a node), the
    module attribute `dist.plan` (every key, defaults filled), and
    `dist.sharding` argument / result attributes on the public (entry)
    functions, selected by the builder's role attributes:

    * inputs `tokens`, `labels` `[B, S]`: `[{dp}, {cp}~]` (the sequence must
      be divisible by `cp`: rank `i` of `cp` holds positions
      `[i S/cp, (i+1) S/cp)`; the forward-only entry that returns
      `logits`, which the sampler feeds a growing context, keeps whole
      sequences: `[{dp}, {}~]`); other inputs and the scalar outputs (loss,
      grad norm) replicated. Context parallelism follows from propagation:
      every activation carries `cp` on its sequence dim, rope / position
      embedding / dropout use global positions, the loss is a mean over the
      global tokens, gradients are summed over `dp` x `cp`, and
      `tfm.attention` is partitioned into ring attention (see
      `Tfm/Sharding/RingAttention.cpp` and "Ring attention" in TfmOps.md);
    * TP (Megatron): `attn_q/k/v`, `mlp_up`, `mlp_gate` `[H, out]` are
      column-parallel `[{}, {tp}~]`; `attn_out`, `mlp_down` `[in, H]` are
      row-parallel `[{tp}, {}~]`; biases of column-parallel layers `[{tp}~]`;
      the embedding `[V, H]` is vocab-parallel `[{tp}, {}~]` and an untied
      `lm_head` `[H, V]` `[{}, {tp}~]`; norms, other biases and position
      tables replicated. Query heads, kv heads (from the `tfm.model`
      attribute), the padded vocabulary and the sharded weight dims must be
      divisible by `tp`;
    * ZeRO stage `k` on the data-parallel group `dp` x `cp` (Megatron's
      distributed optimizer shards over DP x CP: the cp ranks hold the same
      weights): `k >= 1` optimizer states, `k = 3` parameters get `dp`
      (and `cp`) as the minor axes of dim 0 (after its `tp`, as Megatron's
      distributed optimizer shards the TP-local tensor; or of the first dim
      that divides;
      a tensor with no such dim stays replicated and is listed in the module
      attribute `dist.zero_unsharded`). For `k >= 2` the final gradient of
      each parameter in the train step is pinned by a
      `dist.sharding_constraint` to its optimizer states' sharding (so it is
      reduce-scattered where it is produced);
    * SP: the hidden state passed into and out of every block call of the
      entry functions (and its gradient) is pinned to `[{dp}, {tp}, {}~]`
      (`[{dp}, {cp, tp}, {}~]` with context parallelism: each cp chunk split
      on tp; the sequence must be divisible by cp*tp) by
      `dist.sharding_constraint`s.
    * EP (`ep > 1`): the mesh factors the dp ranks into `dp` (size dp/ep,
      the expert-data-parallel group) and `ep` (`pp, dp, ep, cp, tp`); the
      batch is split on `{dp, ep}` wherever the list above says `{dp}`, and
      ZeRO shards dense states on `{dp, ep}`. Expert weights (roles
      `expert_gate`, `expert_up`, `expert_down`, `[E, ...]`) get `ep` as the
      major axis of dim 0 (ZeRO shards their states on `dp` only). In every
      function, the MoE capacity buffers `[E, B, C, H]` between the token
      side and the expert side (result of `tfm.moe_dispatch`, operand of
      `tfm.moe_combine`, and their gradients) are pinned to the token layout
      `[{}, {dp, ep}, {}, {}~]` and the expert layout `[{ep}, {dp}, {}, {}~]`,
      so that `dist-partition` derives one `dist.all_to_all` over `ep` per
      boundary. The expert count must be divisible by `ep`; a model without
      `tfm.moe_dispatch` is an error (see docs/expert-parallelism.md).
      With `cp > 1` the ep group folds over every cp rank and `ep/cp` dp
      ranks: the mesh axis `ep` has size `ep/cp`, expert weights get
      `{ep, cp}` on dim 0 and the expert layout is `[{ep, cp}, {dp}, {}, {}~]`
      (the way back goes through `[{ep}, {dp}, {}, {}~]`: one all-gather over
      `cp`, then the all-to-all over `ep`). With `etp=1` and `tp > 1` the ep
      group takes every tp rank too: the mesh axis `ep` has size
      `ep/(tp cp)`, dim 0 of the expert weights and the expert layout get
      `tp` as their minor axis (token to expert side: a local slice over
      `tp`; back: an all-gather over `tp`, then the all-to-all). With
      `etp=tp` the expert weights' ffn dim goes on `tp` instead (dim 2 of
      `expert_gate` and `expert_up`, dim 1 of `expert_down`), so the expert
      output is partial over `tp` until the way back reduces it.
    * Ulysses (`cp_attention=ulysses`, DeepSpeed-Ulysses): in every
      function, each `tfm.attention`'s q/k/v and `tfm.attention_grad`'s
      dout are pinned first to the sequence layout `[{dp}, {cp}, {tp}, {}~]`
      and then to the head layout `[{dp}, {}, {tp, cp}, {}~]` (lse
      `[{dp}, {tp, cp}, {}~]`), and their results the other way round, so
      that `dist-partition` derives one `dist.all_to_all` over `cp` per
      tensor and the attention between runs whole sequences of its heads.
      What the forward returns for the backward (q/k/v/out/lse) is returned
      in the head layout and the backward reuses it as is: 4 all-to-alls
      per layer each way. Heads not divisible by `tp` x `cp` are an error
      naming the op and the count.

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
    `ShardingRuleOpInterface` factor rule: for each factor, the mesh axes
    found on the operand and result dims tied to it are candidates;
    conflicting candidates (different axes for one factor, or one axis for
    two factors) are resolved by keeping the layout whose resharding would
    cost the most (bytes of the tensors that would have to move, fixed
    values weighted far above soft ones, and training state — parameters
    and optimizer states, also inside callees — far above any other fixed
    value, so TP weights never move and activations are re-gathered
    instead, as in Megatron); a parameter's gradient (an operand tied dim
    for dim to a parameter, as adamw's) prefers the parameter's layout,
    followed back through constraints, calls and gradient sums to the ops
    that compute it, with the weight of state, except on an axis its
    producer's operands are partial over when reducing them first costs
    more (never over `dp`: data-parallel gradients are reduced once per
    step);
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
    When the fixed point is reached and the call sites of a callee pass
    operands with different shardings, the callee is cloned per distinct
    signature (the first keeps its name, the others get `_s1`, `_s2`, ...;
    never per layer: call sites that agree share one function) and the
    propagation starts over.
    A `dist.sharding_constraint` pins its result; backward it only proposes
    its axes for the unsharded dims of its operand (never over an axis the
    operand is partial on), and `dist-partition` reshards between the two
    (e.g. one reduce-scatter of a partial gradient under ZeRO-2).

    Output: the discardable `dist.sharding` attribute on every op with
    tensor results (an array for several results), `dist.sharding` on the
    arguments and results of every reachable function. Values nothing
    constrains are replicated.

    The algorithm is the `ShardingPropagator` class
    (`autoshard/Dialect/Dist/Analysis/ShardingPropagator.h`), usable and
    tested without the pass.

    ```mlir
    // after --dist-apply-plan="plan=tp=2" --dist-propagate, inside a block:
    %1 = tfm.matmul %0, %wq {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}~]>} ...
    %8 = tfm.matmul %7, %wo {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}~], partial = {tp: sum}>} ...
    ```
  }]);
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def DistZigzagSequence : Pass<"dist-zigzag-sequence", "::mlir::ModuleOp"> {
  let summary = "Hold every sequence of a zig-zag cp plan in zig-zag order";
  let description = [{
    Zig-zag load balancing of ring attention (algorithms.md §2.3, as in
    ring-flash-attn's zigzag and torchtitan's head-tail balancer). Runs
    after `dist-propagate`, before `dist-partition`, and only for a plan
    with `cp_layout=zigzag` (`dist.plan`); otherwise it changes nothing.

    With `n = 2 cp`, every entry (train, eval, and the sampling entry, which
    takes whole sequences and splits them over the axis of role `context`
    inside) takes its sequences permuted: position
    chunk `q` of `n` holds the original chunk `q / 2` (even `q`) or
    `n - 1 - q / 2` (odd `q`), so that the contiguous block of cp rank `r`
    holds the original chunks `r` and `n - 1 - r` and every rank does the
    same causal attention work. Nothing else in the program depends on the
    order but the ops of `TfmSequenceOrderOpInterface` (the causal mask,
    rope, position embeddings, dropout's mask, the experts' capacity slot
    order): the pass sets their
    `zigzag_chunks = n` in every function those entries call, and
    `dist-partition` keeps it on their per-rank forms (a causal attention
    left whole in zig-zag order is an error there). The module's
    `dist.sequence_order` records the permuted entries, which `rt-export`
    writes to the artifact for `shard-run` to permute the tokens and labels
    it feeds and to read the logits of a position (the loss is a sum over
    positions: the same in either order).

    Error: a sequence length not divisible by `2 cp`.

    ```mlir
    // dist.plan = {cp = 2, cp_layout = "zigzag", ...}:
    %y = tfm.rope %x {theta = 1.0e4 : f64, zigzag_chunks = 4 : i64} : ...
    ```
  }];
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

    1. An op with a partition hook (`PartitionOpInterface`: vocab-parallel
       embedding / embedding_grad / cross_entropy / cross_entropy_grad,
       sum_squares, position_embedding(_grad), dropout / dropout_grad as
       `tfm.dropout_local(_grad)` keyed on global indices) emits its own
       local ops; the pass never special-cases an op by name.
    2. Otherwise the op's factor rule (`ShardingRuleOpInterface`) gives
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

def DistExplain : Pass<"dist-explain", "::mlir::ModuleOp"> {
  let summary = "Report what a plan does: shardings, collectives, memory per rank";
  let description = !subst("~]", "]", [{
    An analysis (the IR is not changed) in the spirit of the strategy table
    of DESIGN.md §1, read off the compiled program. Runs anywhere after
    `dist-partition`:

    * on `func.func`s (right after `dist-partition`): it lowers a copy of
      the module with `rt-lower,rt-plan-memory` to get the instruction
      streams and the static memory plan, and reads the builder's roles
      (`tfm.role`) from the entry functions' arguments;
    * on `rt.func`s (after `rt-lower`; a copy is planned with
      `rt-plan-memory` if the module is not yet): roles come from an
      `rt.role` attribute on `rt.state_def` when present, else states are
      named by their state names (`layers.*.attn.wq`).

    The report has four parts:

    1. Header: the model (`tfm.model`), the plan (`dist.plan`), the mesh
       axes and the world size.
    2. One row per strategy of the plan (DP, CP, ZeRO-k, TP, SP), derived from
       the shardings of the entry's inputs and states (`rt.sharding` /
       `dist.sharding`), not from the plan text: which inputs are split on
       which dim, which parameters are column / row / vocab split on `tp`
       (by role), which optimizer states and parameters are split on `dp`
       (and those left replicated, `dist.zero_unsharded`), and which
       activations the sequence-parallel collectives split. With
       activation recomputation (`tfm.recompute` from `tfm-recompute`), a
       `Recomp` row: the mode and the recompute functions the step calls.
    3. Collectives per training step per rank (`train_step`; a function
       called L times counts L times), by strategy, op and axes: count and
       bytes (the bytes of the local operand; of the result for a `recv`;
       `_start` forms count as their op, `dist.wait`, `dist.shard_slice` and
       `dist.axis_index` are not communication). A collective is attributed
       by its axes and form: a tensor of at most one element is
       "loss/grad norm"; a `ppermute` on `cp` is "CP ring" (ring
       attention's K/V and dK/dV shifts); an all-reduce on `dp` and/or `cp`
       alone is DP (gradients summed over the data-parallel group); an
       all-gather / reduce-scatter over the whole ZeRO group (`dp` x `cp`)
       is ZeRO-k when `zero > 0`; any other op but an all-reduce whose axes
       include `dp` is ZeRO-k when `zero > 0`; other ops on `dp` alone are
       DP; on `tp` only, an
       all-gather / reduce-scatter on dim 1 of a rank >= 3 tensor is SP
       when `sp = 1`, anything else TP; other axis sets are named by their
       strategies joined with `+`. Then the per-call collectives of each
       function, and one total line per other entry (`eval`, `logits`).
    4. Memory per rank with the plan and without it (one rank): state by
       kind (params, optimizer m and v; without the plan: the global shapes
       times the element size), the `train_step` frame (`frame_bytes`) and
       the live bytes by category at its peak (`peak_breakdown`). The
       transient bytes without the plan need the one-rank program: pass
       `baseline=FILE` (the artifact `rt-export` writes for the same model
       with no plan); without it those cells read `n/a`.

    Options: `output` (`-` = stdout), `format` (`text` or `json`; the JSON
    has the same content, exact integers, and with pp `pipeline_ranks`:
    every pipeline rank's held states by kind, frame and live bytes per
    category at its peak, where part 4 is the heaviest rank's), `baseline`.

    Axes are recognised by their role on the `dist.mesh` (data, context,
    tensor, expert), never by name; the report's texts name them by the
    plan keys dist-apply-plan gives them. The report model and its readers
    and renderers are a library (`autoshard/Dialect/Dist/Analysis/
    ExplainReport.h`, `ExplainReader.h`).

    ```
    // nanoGPT, batch 16 x seq 32:
    // shard-opt ts.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1"
    //   --dist-propagate --dist-partition
    //   --dist-explain=baseline=one-rank.json -o /dev/null   (excerpt)
    strategies (what is split on which axis, from the entry's shardings; roles from tfm.role)
      DP      dp=2  batch: tokens dim 0 (16x32 -> 8x32), labels dim 0 (16x32 -> 8x32); ...
      ZeRO-1  dp=2  optimizer states m, v: 70 of 70 split on dp; optimizer state per rank 6.20 MiB -> 1.57 MiB
      TP      tp=2  columns (last dim): attn_q, attn_k, attn_v, mlp_up (16); rows (dim 0): attn_out, mlp_down (8); vocab: embedding (1); ...
      SP      tp=2  sequence dim 1 of the residual stream on tp (8x32x128 -> 8x16x128 per rank between blocks); ...

    collectives per train_step per rank (calls expanded; bytes = local operand)
      strategy        op              axes    count   bytes/step
      ZeRO-1          reduce_scatter  dp         34     2.69 MiB
      SP              all_gather      tp         22     1.38 MiB
      ...
      per call:
        gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2

    memory per rank (train_step)
                                  with plan      without  ratio
      state: total                 3.13 MiB     9.29 MiB   0.34
      transient: frame             5.70 MiB    20.41 MiB   0.28
    ```
    See docs/dist-explain.md for a full report.
  }]);
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the report (- = stdout)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Report format: text, json or html (one self-contained page: "
           "strategy table, mesh, pipeline timelines, memory bars; "
           "docs/dist-explain.md)">,
    Option<"baseline", "baseline", "std::string", /*default=*/"\"\"",
           "Artifact (rt-export JSON) of the same model without a plan, for "
           "the transient memory without the plan">,
  ];
  let dependentDialects = [
    "::autoshard::dist::DistDialect",
    "::autoshard::rt::RtDialect",
  ];
}

def DistSchedule : Pass<"dist-schedule", "::mlir::ModuleOp"> {
  let summary = "Choose and check the pipeline schedule of the plan";
  let description = [{
    Runs after `dist-apply-plan`, before `dist-pipeline-split` (which runs
    it itself when it was not run). For a plan with pp > 1 it builds the
    per-rank order of the pipeline's compute ops — F, B, or I and W when
    the backward is split — for the plan's `schedule`, `pp`, `vpp` and
    `mb` (`lib/Pipeline`, algorithms.md §1.4), or reads it from `file` in
    the §1.5 text format (one line per rank, e.g.
    `rank0: 0F0 0F1 0B0 0B1`; stage s of S = pp·vpp runs on the first rank
    that lists it), checks that it is well formed and cannot deadlock
    (algorithms.md §1.6, checks A and B), and records it as the module
    attribute `dist.pipeline_schedule`. `dist-pipeline-split` then emits
    each rank's program in that order; a user schedule with I and W ops
    gets the backward cut like ZB-H1's.

    Errors name the file, line and token, or the check that failed and the
    op, e.g. a schedule whose ranks, stages or microbatches differ from the
    plan's, an op before its dependency on the same rank, or a deadlock.

    ```
    shard-opt step.mlir --dist-apply-plan=plan=pp=2,mb=4 \
      --dist-schedule=file=my-schedule.txt --dist-propagate --dist-partition \
      --dist-pipeline-split --dist-verify-comm
    ```
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Read the schedule from this file (§1.5 text format of "
           "../shared/reference/algorithms.md) instead of building the "
           "plan's schedule">,
  ];
}

def DistPipelineSplit : Pass<"dist-pipeline-split", "::mlir::ModuleOp"> {
  let summary = "One program per pipeline rank, in the plan's schedule";
  let description = [{
    Pipeline parallelism (plan `pp`, `vpp`, `mb`, `schedule`; DESIGN.md
    §5; algorithms.md §1). Runs on the partitioned module (after
    `dist-partition`, before `dist-bucket-collectives`, so that buckets
    form per rank): every entry function `@E` (the train step, eval,
    logits) becomes `@E__pp0 ... @E__pp<p-1>`, one per pp rank
    (`dist.entry = "E"`, `dist.pp_stage = r`, `dist.pp_chunks` = the
    stages it runs), and `@E` is erased. Nothing is sharded over `pp`: the
    rank programs hold different ops, not different shards.

    Stages. The model is cut into S = pp × vpp stages (model chunks) of
    contiguous layers; stage s runs on rank `stageToRank[s]` of the
    schedule (s itself for gpipe, 1f1b and zb-h1; s mod pp for interleaved
    and looped-bfs, Megatron's chunk c of rank r = stage c·pp + r; the V
    shape r, 2pp-1-r for zb-v). The k-th block call of a microbatch's
    forward is layer k; layers go to stages by a cost-balanced split
    (`lib/Pipeline` StagePartition: contiguous, >= 1 layer per stage,
    minimizing the largest stage's FLOPs from `TfmCostOpInterface` over
    microbatch 0's forward and backward, the embedding counted on the
    first stage and the final norm, LM head and loss on the last, like
    Megatron's account-for-embedding/loss-in-pipeline-split; equal layers
    split evenly). One split serves every entry (recorded as
    `dist.pipeline_stages`: first layer and FLOPs per stage).

    Placement. The ops of microbatch j (those that depend on its rows,
    `tfm.microbatch {index = j}`; with one microbatch, those that depend
    on an input that is not state, and the backward)
    form the units F(s, j) and B(s, j); backward ops are those that depend
    on the loss-gradient seed (`tfm.cross_entropy_grad`,
    `tfm.vocab_ce_grad`) and forward re-runs marked `tfm.recompute`
    (activation recomputation; placed with their layer's backward). A
    backward block call takes the layer of the forward residuals it reads.
    Other forward ops run on the latest stage of their operands, backward
    ops on the earliest; ops with no staged operand (they read only
    arguments: a ZeRO-3 parameter all-gather, a position table) follow
    their users, and run once on every rank whose units use them (on its
    earliest such stage) instead of being sent, so that a parameter read
    through one (the tied embedding, all-gathered on the first and the last
    stage) is held and updated by each of those ranks in every entry; ops
    without operands (constants) are recomputed where used. For the
    zero-bubble schedules (zb-h1, zb-v; Qi et al. 2023) B(s, j) is split
    into I(s, j), the ops a value leaving the unit depends on (the input
    gradient the previous stage waits for), and W(s, j), the rest (weight
    gradients, read only by the accumulation and the tail); a block
    backward call is cut into `@f__input` and `@f__weight` (the weight
    half takes the values of the input half it reads,
    `dist.backward_part`). An op over several microbatches that reads no
    argument (the gradient accumulation and its scaling, the
    data-parallel reduction of the sum, the loss mean) runs in the unit
    of the microbatch its stage runs last (the last one; the first under
    looped BFS, whose backward runs the microbatches in reverse): each
    layer's gradient is complete, and `dist-overlap-collectives` can
    start its reduction, right after that layer's last backward, behind
    the stage's remaining backward, instead of in the tail. The tail (the
    optimizer and whatever else over several microbatches reads state or
    an input, the global gradient norm `tfm.sum_squares` and everything
    after it) runs on every rank that needs its results:
    every rank returns the loss and the norm and updates the state it
    holds. A parameter used on two ranks (the embedding tied to the LM
    head) is held and updated on both from the same gradient, which the
    rank that sums the two contributions sends to the other (Megatron's
    embedding-group reduction). The global norm is one partial
    `tfm.sum_squares` per rank over the gradients it owns, then
    `dist.all_reduce` over `pp`: each gradient counted once.

    Schedule. Each rank runs its units in the order of the plan's
    schedule (`lib/Pipeline`: gpipe, 1f1b, interleaved, looped-bfs, zb-h1,
    zb-v) — or of the module's `dist.pipeline_schedule` when `dist-schedule`
    recorded one (possibly a user's) — forward-only entries stage by stage (each rank its stages in
    increasing order, microbatches in order), then its tail. A value
    another rank's unit needs is sent with `dist.send_start` right after
    the producing unit; the consuming unit receives (`dist.recv`, at its
    start) what it needs from each sender together with everything that
    sender sent it before, so the k-th send of a pair matches the k-th
    receive even when a rank produces values in another order than its
    peer reads them. Values another rank's tail needs are sent and
    received first thing in the tails. Send handles are waited at the end
    of the program, so a send never blocks: with an acyclic schedule no
    program can deadlock (`dist-verify-comm` checks all of this on the
    result).

    Errors: fewer layers than stages, a schedule the microbatch count does
    not allow (interleaved: mb a multiple of pp), a tail reading state its
    rank does not hold, an entry (eval, logits) reading a state on a rank
    where the training step does not hold (so never updates) it; each names
    the entry and the values.
  }];
  let dependentDialects = [
    "::autoshard::dist::DistDialect",
    "::autoshard::tfm::TfmDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
  ];
}

def DistVerifyComm : Pass<"dist-verify-comm", "::mlir::ModuleOp"> {
  let summary = "Check that every rank's sends, receives and collectives match";
  let description = [{
    Runs last among the `dist` passes (after `dist-pipeline-split` and
    `dist-bucket-collectives`), on every compile with a mesh. For every
    entry and every rank of the mesh it expands the program the rank runs
    (its pipeline stage's function, calls inlined) into point-to-point and
    collective events and checks them with `lib/Pipeline`'s verifier
    (algorithms.md §1.6, checks C and D):

    * for every ordered pair of ranks, the k-th send matches the k-th
      receive: same `dist.tag` (the transferred value: unit kind F/B or
      tail, microbatch, position in the original entry) and type, and the
      counts agree (NCCL and MPI point-to-point calls between two ranks
      match in order);
    * the members of every group enter the same collectives in the same
      order (op, operand types);
    * a simulated run completes: sends are asynchronous, receives and
      collectives block; a cycle of waits is a deadlock.

    A violation is an error naming the entry, the ranks, the position and
    the first mismatched op (`rank R @func op #k dist.recv`). One device
    (no mesh): nothing to check.

    Only one rank per class of symmetric ranks is expanded: an axis other
    than the pipeline axis that no send or receive names (dp, tp, cp, ep in
    every plan) is checked at size 1. Ranks that differ only on such axes
    run the same program, exchange no message, and enter the collectives
    that join them in the same order; the blocking semantics is monotone,
    so the reduced mesh completes exactly when the whole mesh does. The
    result is exact, and the cost is that of the pipeline ranks (dp =
    1,048,576 takes as long as dp = 1; the argument is in
    DistVerifyComm.cpp). Calls are inlined; a recursive call is an error, and
    so is a program of more than 2^22 communication events to expand.
  }];
}

def DistBucketCollectives
    : Pass<"dist-bucket-collectives", "::mlir::ModuleOp"> {
  let summary = "Coalesce independent collectives into one per bucket";
  let description = [{
    Runs after `dist-partition` (per-rank IR), before `rt-lower`. Within
    each block of every `func.func`, blocking `dist.all_reduce`,
    `dist.reduce_scatter` and `dist.all_gather` ops with the same kind,
    mesh, axes (in order), reduction and element type are grouped into
    buckets, and each bucket of two or more becomes one collective over a
    flat 1-D buffer (DESIGN.md §5: ZeRO/FSDP and DDP issue a few large
    collectives, as Megatron's distributed optimizer and FSDP2 do):

    * all-reduce: `dist.pack` the operands, one `dist.all_reduce`,
      `dist.unpack` the results;
    * reduce-scatter: `dist.pack` with `num_groups` = group size and each
      member's `scatter_dim`, one `dist.reduce_scatter` on dim 0, and
      `dist.unpack`: segment `r` of the packed buffer is every tensor's
      shard `r`, so rank `r` gets exactly the shards the per-tensor
      reduce-scatters gave it;
    * all-gather: `dist.pack` the shards, one `dist.all_gather` on dim 0,
      and `dist.unpack` with `num_groups` = group size and each member's
      `gather_dim`.

    The result is exactly that of the per-tensor collectives (same
    reductions of the same elements; only their grouping changes).

    Bucket policy, in program order: a collective joins the open bucket of
    its key when

    1. the merged collective can be placed after the producer of every
       member's operand and before the first use of every member's result
       (so no bucket depends on itself: a collective whose operand depends
       on a member's result cannot join);
    2. the bucket's bytes stay within `bucket-bytes` (the full side of each
       member: the operand of an all-reduce / reduce-scatter, the result of
       an all-gather; 0 = no limit);
    3. with `split-at-calls` (default), it belongs to the bucket's layer
       group: a call is a layer (a block's forward or backward), and a
       reduction's group is that of its operand's producer (the calls
       before the ops that follow it; down a chain of reductions, that of
       the first non-reduction), a gather's that of the gather itself, or,
       when the op that computes its operand reads reduced gradients (the
       ZeRO-1/2 optimizer update of a parameter shard), the latest group
       of those reductions. So a bucket is a layer group, as FSDP2
       reduce-scatters (and DDP all-reduces) each layer's gradients right
       after its backward instead of holding every layer's full gradients
       to the end, even when the partitioner left every reduction at the
       end of the step (`dist-overlap-collectives` then starts them
       there); and the updated parameters are gathered in the gradients'
       buckets, each behind the next buckets' updates (Megatron's
       distributed optimizer with `overlap_param_gather`).

    Otherwise the open bucket is closed and a new one starts. Keys are
    bucketed one after the other (all-gather keys first, as they move up to
    their first consumer; then reduction keys; each kind in order of first
    appearance), each round
    seeing the flat collectives of the previous ones as ordinary ops, so a
    chain across keys (e.g. a norm gradient all-reduced over `tp`, then
    reduce-scattered over `dp`) buckets at both steps; a collective whose
    operand is produced by, or whose result feeds, another collective of
    its own key stays where it is. A
    reduction bucket is placed right after the last producer of its
    operands (so the full-size inputs die early); a gather bucket right
    before the first consumer of its results (so the gathered tensors live
    as briefly as possible). The flat buffers are ordinary values, planned
    by `rt-plan-memory`; rt-lower lowers pack and unpack to the
    `dist.pack` / `dist.unpack` kernels.

    ```mlir
    // before (dp = 2, ZeRO-2 gradients of one layer):
    %a = dist.reduce_scatter %ga on @m axes = [dp] scatter_dim = 0 reduction = sum
        : tensor<128x512xf32> -> tensor<64x512xf32>
    %b = dist.reduce_scatter %gb on @m axes = [dp] scatter_dim = 0 reduction = sum
        : tensor<128xf32> -> tensor<64xf32>
    // after:
    %p = dist.pack %ga, %gb num_groups = 2 scatter_dims = [0, 0]
        : tensor<128x512xf32>, tensor<128xf32> -> tensor<65664xf32>
    %s = dist.reduce_scatter %p on @m axes = [dp] scatter_dim = 0 reduction = sum
        : tensor<65664xf32> -> tensor<32832xf32>
    %a, %b = dist.unpack %s : tensor<32832xf32> -> tensor<64x512xf32>, tensor<64xf32>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"40 * 1024 * 1024",
           "Largest bucket in bytes (the full, unsharded side); 0 = no limit">,
    Option<"splitAtCalls", "split-at-calls", "bool", /*default=*/"true",
           "Start a new bucket after a call (one bucket per layer group)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "Flat collectives created">,
    Statistic<"numRemoved", "removed-collectives",
              "Collectives removed (bucket members minus buckets)">,
  ];
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}


def DistHoistArgumentGathers
    : Pass<"dist-hoist-argument-gathers", "::mlir::ModuleOp"> {
  let summary = "Gather a callee's sharded arguments at its call sites";
  let description = [{
    Runs after `dist-partition` and `dist-pipeline-split` (per-rank IR),
    before `dist-bucket-collectives` and `dist-overlap-collectives`. A
    block function that all-gathers an argument (a ZeRO-3 parameter shard
    before its use, FSDP's unshard) cannot start that gather before it is
    called, so the gather of layer i+1 could never run behind layer i. For
    every private `func.func` whose only uses are `func.call`s, each
    argument whose single use is a blocking `dist.all_gather` over axes
    without a pipeline axis is gathered at every call site instead (the
    same op, right before the call, on the call's operand) and the function
    takes the gathered value. The program computes the same values with the
    same collectives; only their place moves from the callee into the
    caller, where `dist-bucket-collectives` buckets each layer's gathers
    and `dist-overlap-collectives` starts them `overlap-calls` calls before
    their use (FSDP2's prefetch; torchtitan's and Megatron's ZeRO-3 with
    `overlap_param_gather`). Every call site of a function is rewritten
    alike, so each member of a group still runs the same collectives in the
    same order (`dist-verify-comm`).

    ```mlir
    // before (dp = 2, ZeRO-3: the block gathers its weight shard):
    func.func private @block(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>) {
      %wf = dist.all_gather %w on @m axes = [dp] gather_dim = 0
          : tensor<32x64xf32> -> tensor<64x64xf32>
      ...
    %y = func.call @block(%x, %w0) : ...
    // after:
    func.func private @block(%x: tensor<4x64xf32>, %wf: tensor<64x64xf32>) {
      ...
    %g = dist.all_gather %w0 on @m axes = [dp] gather_dim = 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    %y = func.call @block(%x, %g) : ...
    ```
  }];
  let statistics = [
    Statistic<"numArguments", "hoisted-arguments",
              "Function arguments now gathered at the call sites">,
  ];
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def DistOverlapCollectives
    : Pass<"dist-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "Start collectives early, behind the compute that does not need them";
  let description = [{
    Runs after `dist-bucket-collectives` (per-rank IR), before
    `dist-verify-comm` and `rt-lower`. Compute/communication overlap
    (PyTorch DDP's bucketed all-reduce during backward, Megatron's
    `overlap_grad_reduce` and `overlap_param_gather`, FSDP2's reduce-scatter
    behind the next layer's backward and its all-gather prefetch): in every
    block of every `func.func`, each blocking collective of the `kinds`
    selected (default all four: `all_reduce`, `reduce_scatter`,
    `all_gather`, `all_to_all`) whose group does not span `pp`

    1. moves up, with the `dist.pack` of its bucket:
       - a reduction or an all-to-all to right after the producer of its
         operand (the pack to right after the last producer of its
         operands), so that a layer's gradients are reduced as soon as its
         backward has produced them;
       - an all-gather to `overlap-calls` calls before the first use of its
         result (a prefetch: with `dist-hoist-argument-gathers`, layer
         i+1's ZeRO-3 weights are gathered during layer i, forward and
         backward), or to right after its operand's producer when that
         comes later (a ZeRO-1/2 parameter gather right after its bucket's
         optimizer update, behind the next buckets' updates; an SP re-gather
         behind the GEMMs before its use); never earlier, so that no more
         than that many layers' gathered tensors are alive;
    2. becomes `dist.*_start` there and a `dist.wait` before the first use
       of its result, but no later than right after the `overlap-calls`-th
       call that follows the start (one layer's backward by default): the
       reduction runs during that layer, and no more than a few buckets
       are in flight, so the full gradients of a ZeRO-2 reduce-scatter die
       one layer later instead of at the end of the step. A wait that would
       land right before `dist.send_start`s (a pipeline stage sending what
       that call computed) goes after them, so that the neighbour stage
       does not wait for this group's collective (the loss all-reduce over
       dp before the last microbatch's gradient send, issue 21). A
       latency-bound collective (result of at most `latency-bound-bytes`:
       a loss, a final norm's weight gradient) has no such bound: it is
       waited for right before its first use, since keeping it in flight
       holds no memory, and an early wait would put its group's slowest
       member on the critical path (the last pipeline stage waited for the
       loss all-reduce over dp between its layers' backward, before the
       boundary gradient send its neighbour stage waits for).

    Collectives keep their program order among themselves where they land
    at the same place. With microbatches (`mb > 1`) tfm-autodiff adds each
    microbatch's gradient right after the backward that produced it, so the
    last microbatch's layers are reduced behind the following layers'
    backward too; so are a pipeline stage's, whose accumulation
    dist-pipeline-split places right after each layer's last backward. A
    collective with
    no call and no tensor op between its start and its wait stays blocking.
    Every member of a group runs
    the same function, so the order in which the group's collectives are
    started is the same on every rank (`dist-verify-comm` checks it);
    collectives over `pp` (the tied embedding's gradient, between stage
    programs) are left alone. The runtime starts the collective (MPI
    non-blocking collective, NCCL on the communication stream) and the
    memory plan keeps its operand and result live until the wait (rt-lower
    reduces a bucket's flat buffer in place, so that is one buffer): the
    price is one layer's flat gradient bucket live during the next layer's
    backward, and one more layer's gathered weights during the current
    layer under ZeRO-3 (nanoGPT CPU, dp=2,tp=2,sp=1: peak 8.11 MB blocking,
    8.00 MB overlapped; with selective recomputation 7.48 and 7.51 MB). On
    CPU ranks an MPI non-blocking collective progresses inside MPI calls
    only: `shard-run --comm-thread on` drives them from a thread of their
    own, which is where the overlap becomes real on CPUs.

    ```mlir
    // before (dp = 2, two layers' gradient buckets reduced at the end):
    %g1 = call @block_bwd(...)      %g0 = call @block_bwd(...)
    %r1 = dist.all_reduce %g1 ...   %r0 = dist.all_reduce %g0 ...
    // after:
    %g1 = call @block_bwd(...)
    %h1 = dist.all_reduce_start %g1 on @mesh axes = [dp] reduction = sum
    %g0 = call @block_bwd(...)
    %r1 = dist.wait %h1
    %h0 = dist.all_reduce_start %g0 ...
    ```
  }];
  let options = [
    Option<"overlapCalls", "overlap-calls", "int64_t", /*default=*/"1",
           "Calls (layers) a collective may run behind before its wait">,
    Option<"latencyBoundBytes", "latency-bound-bytes", "int64_t",
           /*default=*/"65536",
           "Collectives of at most this many result bytes are waited for "
           "at their first use, not bounded by overlap-calls">,
    ListOption<"kinds", "kinds", "std::string",
               "Collective kinds started early (all_reduce, reduce_scatter, "
               "all_gather, all_to_all; default: all four)",
               "llvm::cl::ZeroOrMore">,
  ];
  let statistics = [
    Statistic<"numAsync", "async-collectives",
              "Collectives turned into start / wait">,
    Statistic<"numHoisted", "hoisted-collectives",
              "Collectives moved up to their operand's producer">,
  ];
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

def DistAutoPlan : Pass<"dist-auto-plan", "::mlir::ModuleOp"> {
  let summary = "Search the plan space with a cost model and report the best plan";
  let description = [{
    DESIGN.md §7. Runs on the model builder's output (tfm ops, global
    shapes, before `tfm-autodiff`). Compiles a one-block copy of the model
    once per layer-local configuration (tp, sp) at microbatch sizes 1 and
    2 (tfm-autodiff, dist-apply-plan, dist-propagate, dist-partition,
    rt-lower, rt-plan-memory), reads per-op FLOPs/bytes
    (TfmCostOpInterface), TP collectives, residuals and the static memory
    plan off the per-rank program, then searches dp/tp/pp/cp, SP, ZeRO,
    microbatch size and count, schedule and vpp, and recomputation with the
    planner library (lib/Planner): analytic composition for every
    candidate, the pipeline simulator for the best. A plan that does not
    fit in HBM is rejected, never scored.

    Writes a report (plan table, rejected families, search statistics; see
    docs/planner.md), optionally a Chrome trace of the chosen plan's
    predicted step, and sets the module attribute `dist.auto_plan` to the
    chosen plan. With `evaluate=PLAN` it scores only that plan (the keys of
    the report's plan column; `mb` defaults to batch / (dp * mbs)).

    ```
    shard-opt model.mlir --dist-auto-plan="cluster=configs/clusters/dgx-h100.json nodes=128 batch=1536" -o /dev/null
    ```
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (JSON, docs/cluster-format.md)">,
    Option<"nodes", "nodes", "int64_t", /*default=*/"1", "Number of nodes">,
    Option<"gpus", "gpus", "int64_t", /*default=*/"0",
           "Number of GPUs (>= 1; instead of nodes, not with it)">,
    Option<"batch", "batch", "int64_t", /*default=*/"0",
           "Global batch in sequences (>= 1; default: the model IR's batch)">,
    Option<"evaluatePlan", "evaluate", "std::string", /*default=*/"\"\"",
           "Score only this plan instead of searching">,
    Option<"report", "report", "std::string", /*default=*/"\"-\"",
           "Where to write the report (- = stdout)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Report format: text, json or html (candidates as stacked "
           "time and memory bars, rejected families; docs/planner.md)">,
    Option<"trace", "trace", "std::string", /*default=*/"\"\"",
           "Chrome-trace file of the chosen plan's predicted step">,
    Option<"top", "top", "int64_t", /*default=*/"10",
           "Plans listed in the report">,
    Option<"simulateTop", "simulate-top", "int64_t", /*default=*/"16",
           "Best analytic candidates re-scored with the schedule simulator">,
    Option<"compilable", "compilable", "bool", /*default=*/"false",
           "Search only what the compiler builds today (schedules gpipe, "
           "1f1b, interleaved, zb-h1, zb-v; ring cp with contiguous chunks, "
           "scored with their causal imbalance, and Ulysses cp; ep folded "
           "over dp, or under cp over every cp rank and ep/cp dp ranks, "
           "never cp without ep on an MoE model), so the chosen plan can be "
           "compiled and run">,
    ListOption<"schedules", "schedules", "std::string",
               "Search only these pipeline schedules (1f1b, interleaved, "
               "zb-h1, zb-v, gpipe; default: 1f1b, interleaved, zb-h1, "
               "gpipe)">,
    ListOption<"recomputes", "recompute", "std::string",
               "Search only these recomputation modes (none, selective, "
               "full; default: all)">,
    ListOption<"zeroStages", "zero", "int64_t",
               "Search only these ZeRO stages (0-3; default: all)">,
    ListOption<"cpDegrees", "cp", "int64_t",
               "Search only these context-parallel degrees (default: 1, 2, "
               "4, 8)">,
    ListOption<"cpAttentions", "cp-attention", "std::string",
               "Search only these attention modes under cp > 1 (ring, "
               "ulysses; default: both, ulysses where tp*cp divides the "
               "query and key/value heads)">,
    ListOption<"epDegrees", "ep", "int64_t",
               "Search only these expert-parallel degrees (default: 1, 2, "
               "4, ..., 64 for MoE models, those that divide the expert "
               "count and dp*cp; dense models: 1)">,
    Option<"searchSp", "sp", "bool", /*default=*/"true",
           "Search sequence parallelism (false: tp plans without SP only)">,
    Option<"crossNode", "cross-node", "std::string", /*default=*/"\"warn\"",
           "Plans whose tp (sp), cp or ep groups span nodes: 'warn' (score "
           "them, list their groups in the report and warn when the chosen "
           "or evaluated plan is one) or 'forbid' (reject them)">,
  ];
  let dependentDialects = [
    "::autoshard::dist::DistDialect",
    "::autoshard::rt::RtDialect",
  ];
}

def DistListPlans : Pass<"dist-list-plans", "::mlir::ModuleOp"> {
  let summary = "List the valid plans of a train step, or check listed ones";
  let description = [{
    Runs on a train step (after `tfm-autodiff`, and `tfm-recompute` if
    any) and changes nothing. For each `world` size it enumerates every
    factorisation into pp x dp x cp x tp (pp and cp from `pp` and `cp`,
    default every divisor), with sp (tp > 1), each ZeRO stage (dp x cp >
    1), each schedule of `schedules` (pp > 1; interleaved and looped-bfs
    with `vpp` model chunks per rank, zb-v with 2), ep (MoE models: every
    divisor of dp x cp; under cp > 1 not ep = 1, which would repeat the
    expert compute on every cp rank) and cp_attention ring and ulysses
    (cp > 1); `mb` and `recompute` are the module's (`tfm.microbatches`,
    `tfm.recompute`). Each plan is checked as the compiler checks it:
    `dist-apply-plan` and, with pp > 1, the model's layers against
    pp x vpp and `dist-schedule`, on a copy of the module; the reason a
    plan is rejected is the compiler's first error.

    With `plans-file` it checks the plans listed in that file instead (one
    plan per line, `#` starts a comment), in file order.

    `format=text` prints one valid plan per line (`invalid=true`, and
    `plans-file`: `# invalid: PLAN: REASON` lines too); `format=json` an
    object with the model's `tfm.model` integers, `microbatches`,
    `recompute`, and `plans`: per plan its text, `valid`, `reason` when
    invalid, `world` and every key (when it parses), `line` with
    `plans-file`.

    ```
    shard-opt step.mlir --dist-list-plans="world=8 pp=1,2 cp=1 schedules=1f1b format=json" -o /dev/null
    shard-opt step.mlir --dist-list-plans="plans-file=scripts/plan_lists/llama.txt" -o /dev/null
    ```
  }];
  let options = [
    ListOption<"worlds", "world", "int64_t",
               "World sizes to enumerate the plans of">,
    ListOption<"pipelineDegrees", "pp", "int64_t",
               "Pipeline degrees (default: every divisor of the world "
               "size)">,
    ListOption<"contextDegrees", "cp", "int64_t",
               "Context-parallel degrees (default: every divisor of the "
               "world size)">,
    ListOption<"schedules", "schedules", "std::string",
               "Schedules of the pp > 1 plans (default: gpipe, 1f1b, "
               "interleaved, looped-bfs, zb-h1, zb-v)">,
    Option<"stagesPerRank", "vpp", "int64_t", /*default=*/"2",
           "Model chunks per rank of interleaved and looped-bfs plans">,
    Option<"plansFile", "plans-file", "std::string", /*default=*/"\"\"",
           "Check the plans listed in this file instead of enumerating">,
    Option<"listInvalid", "invalid", "bool", /*default=*/"false",
           "Also list the rejected plans, with the reason">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the list (- = stdout)">,
    Option<"format", "format", "std::string", /*default=*/"\"text\"",
           "Output format: text or json">,
  ];
  let dependentDialects = ["::autoshard::dist::DistDialect"];
}

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_TD
