// dist-auto-plan on nanoGPT (CPU recipe) over the 2-core CPU "cluster":
// report structure (plan table, rejected families, search statistics), the
// chosen plan recorded on the module, the Chrome trace, the JSON report and
// the evaluate mode.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 64 --vocab-multiple 8 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 trace=%t.trace.json" -o %t.out.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=ATTR < %t.out.mlir
// RUN: FileCheck %s --check-prefix=TRACE < %t.trace.json
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 format=json" -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=1,tp=2,sp=1,mbs=2" -o /dev/null | FileCheck %s --check-prefix=EVAL
// The search space restricted (e.g. to a published run's software): no SP,
// ZeRO-0 only, 1F1B only.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 schedules=1f1b zero=0 sp=false recompute=none cp=1" -o /dev/null | FileCheck %s --check-prefix=RESTRICT
// The `--auto-plan` shorthand of shard-opt.
// RUN: shard-opt %t.model.mlir --auto-plan "cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2" -o /dev/null | FileCheck %s --check-prefix=FLAG
// RUN: shard-opt %t.model.mlir --auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=2" -o /dev/null | FileCheck %s --check-prefix=FLAG
// Both shorthands are listed by --help.
// RUN: shard-opt --help | FileCheck %s --check-prefix=HELP

// CHECK: dist-auto-plan: model nanogpt-shakespeare-char-cpu ({{.*}} 4 layers, seq 64), cluster CPU 2-core {{.*}}, 4 GPUs (1 node), global batch 8
// CHECK: MFU convention: 3 x forward{{.*}}; {{0\.[1-9][0-9]}} GFLOP per sequence
// CHECK: chosen plan: pp={{[0-9]+}},dp={{[0-9]+}},cp={{[0-9]+}},tp={{[0-9]+}}
// CHECK-NEXT: as --plan: {{(pp=[0-9]+,)?}}dp={{[0-9]+}}
// CHECK: rank plan step s tokens/s MFU peak GiB compute exp.comm bubble optimizer sim
// Step seconds to 4 decimals (CPU steps of tens of ms differ by a few %).
// CHECK-NEXT: 1 pp={{[^ ]+}} {{[0-9]+\.[0-9]{4} }}
// CHECK-NEXT: 2 pp=
// CHECK: rejected families
// CHECK: tp=
// Five (tp, sp) configurations x 2 microbatch sizes x 3 recomputation modes,
// and (gradients in the static frame) 48 more under each cp the search scores.
// CHECK: search: {{[0-9]+}} candidates ({{[0-9]+}} fit), {{[0-9]+}} simulated, 78 block compilations
// CHECK-SAME: candidates/s
// CHECK: analytic: pp/dp/ZeRO/schedule composition

// ATTR: dist.auto_plan = "pp=

// TRACE: "traceEvents"
// TRACE-SAME: "optimizer"

// JSON: "plans": [
// JSON: "apply_plan": "
// JSON: "bubble_s"
// JSON: "exposed_comm_s"
// JSON: "mfu"
// JSON: "peak_bytes"
// JSON: "rejected"
// JSON: "stats"
// JSON: "candidates"

// RESTRICT: chosen plan: pp={{[0-9]+}},dp={{[0-9]+}},cp=1,tp={{[0-9]+}},sp=0,zero=0,
// RESTRICT-NOT: sp=1
// RESTRICT-NOT: zero={{[123]}}
// RESTRICT-NOT: schedule=gpipe
// RESTRICT: search: {{[0-9]+}} candidates ({{[0-9]+}} fit), {{[0-9]+}} simulated, 6 block compilations

// EVAL: 2 GPUs (1 node), global batch 8
// EVAL: evaluated plan: pp=1,dp=1,cp=1,tp=2,sp=1,zero=0,ep=1,mbs=2,mb=4,schedule=1f1b,vpp=1,recompute=none
// EVAL-NEXT: as --plan: dp=1,tp=2,sp=1,mb=4{{$}}
// EVAL: memory per GPU (evaluated plan, MiB): params
// EVAL: search: 1 candidates (1 fit), 0 simulated, 2 block compilations

// FLAG: evaluated plan: pp=1,dp=2,cp=1,tp=1,sp=0,zero=0,ep=1,mbs=4,mb=1,schedule=1f1b,vpp=1,recompute=none

// HELP: --auto-plan=<options> {{.*}}Shorthand for --dist-auto-plan="<options>"
// HELP: --plan=<plan> {{.*}}Shorthand for --dist-apply-plan=plan=<plan>
