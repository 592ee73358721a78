// dist-auto-plan errors: a bad cluster file names the field and its value;
// missing options and inconsistent plans are clear errors.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 64 -q -o %t.model.mlir
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-bad-cluster.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-bad-efficiency.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/no-such-cluster.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not shard-opt %t.model.mlir --dist-auto-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCLUSTER
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WORLD
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2,foo=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEY

// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 schedules=1f1b,zb-x" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCHED
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 zero=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// SCHED: error: dist-auto-plan: option 'schedules': unknown value 'zb-x' (known: 1f1b, interleaved, zb-h1, zb-v, gpipe)
// ZERO: error: dist-auto-plan: option 'zero': 4 is out of range [0, 3]
// An option given without a value is an error, not the default search.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 schedules=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTYSCHED
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 zero=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTYZERO
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTYEVAL
// EMPTYSCHED: error: dist-auto-plan: option 'schedules' is given without a value (leave it out for the default)
// EMPTYZERO: error: dist-auto-plan: option 'zero' is given without a value
// EMPTYEVAL: error: dist-auto-plan: option 'evaluate' is given without a value

// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-bad-grad-buffer.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GRADBUF
// GRADBUF: error: dist-auto-plan: {{.*}}auto-plan-bad-grad-buffer.json: field 'memory.grad_buffer' must be "persistent" or "frame", got "ram"
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-two-kernel-costs.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KERNEL
// KERNEL: error: dist-auto-plan: {{.*}}auto-plan-two-kernel-costs.json: fields 'gpu.kernel_fixed_us' and 'efficiency.kernel_overhead_us' both give the fixed cost per kernel; keep one
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-bad-shares-node.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARES
// SHARES: error: dist-auto-plan: {{.*}}auto-plan-bad-shares-node.json: field 'gpu.shares_node' must be true or false, got "yes"
// NEG: error: dist-auto-plan: {{.*}}auto-plan-bad-cluster.json: field 'gpu.peak_bf16_tflops' must be a positive number, got -989
// TYPE: error: dist-auto-plan: {{.*}}auto-plan-bad-efficiency.json: field 'efficiency.gemm' must be a number, got "fast"
// MISSING: {{.*}}.model.mlir:3:1: error: dist-auto-plan: cannot read cluster file '{{.*}}no-such-cluster.json'
// The module's line (the model's attributes, about 10 KB) is not echoed.
// MISSING-NOT: module attributes
// NOCLUSTER: error: dist-auto-plan: the 'cluster' option (a cluster JSON file) is required
// WORLD: error: dist-auto-plan: evaluate: the plan uses pp*dp*cp*tp = 4 GPUs, the job has 2 (gpus, else nodes x the cluster's gpus_per_node)
// KEY: error: dist-auto-plan: evaluate: plan: unknown key 'foo' (value '1'{{.*}}(evaluate= also takes mbs, the microbatch size)
// A one-node cluster (no inter_node link) cannot take more devices than a node has.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json nodes=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONENODE
// ONENODE: cluster 'CPU 2-core (this development machine)' is one node of 8 devices (it has no 'inter_node' link), but the plan asks for 16
// A restriction to a degree the search never covers, and no devices.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=8 cp=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CPDEG
// CPDEG: error: dist-auto-plan: option 'cp': 3 is not a degree the search covers (searched: 1, 2, 4, 8)
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json nodes=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODES
// NODES: error: dist-auto-plan: nodes must be >= 1, got 0
// Explicit zeros are errors, not "use the default".
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPUS0
// GPUS0: error: dist-auto-plan: gpus must be >= 1, got 0
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPUSNEG
// GPUSNEG: error: dist-auto-plan: gpus must be >= 1, got -1
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=1 nodes=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: dist-auto-plan: give nodes or gpus, not both (nodes=2 gpus=1)
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 batch=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BATCH0
// BATCH0: error: dist-auto-plan: batch must be >= 1, got -1
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 top=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOP0
// TOP0: error: dist-auto-plan: top must be >= 1, got 0
// Interleaved with fewer microbatches than stages, or not a multiple of
// them: the compiler has no such schedule: the report says why, then an
// error (it exited 0).
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=pp=2,schedule=interleaved,vpp=2,mb=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: error: dist-auto-plan: evaluate=pp=2,schedule=interleaved,vpp=2,mb=1 is invalid: interleaved: mb=1 microbatches
// INTERLEAVED: no plan fits
// INTERLEAVED: invalid: interleaved: mb=1 microbatches are not a multiple of pp=2 (Megatron-Core's schedule runs them in groups of pp)
// A negative simulate-top was taken as 0 without a word.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 simulate-top=-1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIMTOP
// SIMTOP: error: dist-auto-plan: simulate-top must be >= 0, got -1
// evaluate= reads mb as --plan does; mbs and mb must agree when both are given.
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2,mb=2,mbs=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MBS
// MBS: error: dist-auto-plan: evaluate: mb=2 and mbs=1 disagree: dp*mbs*mb must be the global batch 8 (mb=4 with mbs=1)
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2,mb=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MBDIV
// MBDIV: error: dist-auto-plan: evaluate: global batch 8 is not a multiple of dp*mb = 6
// An empty item is an error, as in --plan (it was dropped: "dp=2," and
// "dp=2,,zero=1" were scored).
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2," -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2,,mbs=4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: dist-auto-plan: evaluate: plan: expected 'key=value', found '' (in "dp=2,")
// Nothing to score: 3 devices do not factor with the batch and the model.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCAND
// NOCAND: no plan fits: no candidate plan (3 GPUs do not factor into tp x cp x pp x dp
