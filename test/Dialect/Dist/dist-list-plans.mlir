// dist-list-plans: the plans of a world size the compiler accepts for a train
// step, each rejected one with the compiler's first error; or its verdict on
// the plans of a plan-list file. The module is not changed.
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=4 pp=1 cp=1,2 invalid=true" | FileCheck %s
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=2,1 pp=1 cp=1" -o /dev/null | FileCheck %s --check-prefix=ORDER
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="plans-file=%S/Inputs/plan-list.txt format=json" -o /dev/null | FileCheck %s --check-prefix=FILE
// A built model: pp x vpp against its layers, the schedule's constraints, and
// the step's microbatches (mb=2) and recomputation in every plan.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 8 --seq 16 --vocab-multiple 8 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --tfm-autodiff=microbatches=2 --tfm-recompute=mode=full -o %t.step.mlir
// RUN: shard-opt %t.step.mlir --dist-list-plans="world=4 pp=4 cp=1 schedules=zb-h1,interleaved,looped-bfs invalid=true" -o /dev/null | FileCheck %s --check-prefix=PP
// RUN: shard-opt %t.step.mlir --dist-list-plans="world=4 pp=2 cp=1 schedules=interleaved vpp=2 format=json" -o /dev/null | FileCheck %s --check-prefix=JSON
// Bad options.
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=2 plans-file=%S/Inputs/plan-list.txt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=2 schedules=foo" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SCHED
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="world=2 format=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-list-plans="plans-file=%t.missing" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING

// World 4 of the mini step (batch 4, seq 8, 2 heads): zero only with a
// dp x cp group, sp only with tp, ulysses only with cp; tp=4 does not divide
// the heads, nor ulysses' tp*cp=4.
// CHECK:      {{^}}dp=4{{$}}
// CHECK-NEXT: dp=4,zero=1
// CHECK-NEXT: dp=4,zero=2
// CHECK-NEXT: dp=4,zero=3
// CHECK-NEXT: dp=2,tp=2
// CHECK-NEXT: dp=2,tp=2,zero=1
// CHECK-NEXT: dp=2,tp=2,zero=2
// CHECK-NEXT: dp=2,tp=2,zero=3
// CHECK-NEXT: dp=2,tp=2,sp=1
// CHECK-NEXT: dp=2,tp=2,sp=1,zero=1
// CHECK-NEXT: dp=2,tp=2,sp=1,zero=2
// CHECK-NEXT: dp=2,tp=2,sp=1,zero=3
// CHECK-NEXT: # invalid: dp=1,tp=4: plan tp=4: the model's num_heads = 2 is not divisible by tp
// CHECK-NEXT: # invalid: dp=1,tp=4,sp=1: plan tp=4: the model's num_heads = 2 is not divisible by tp
// CHECK-NEXT: dp=2,cp=2
// CHECK-NEXT: dp=2,cp=2,cp_attention=ulysses
// CHECK-NEXT: dp=2,cp=2,zero=1
// CHECK:      dp=1,cp=2,tp=2
// CHECK-NEXT: # invalid: dp=1,cp=2,tp=2,cp_attention=ulysses: plan cp=2,cp_attention=ulysses: the attention's query has 2 heads, not divisible by tp*cp=4
// CHECK:      dp=1,cp=2,tp=2,sp=1,zero=3
// CHECK-NEXT: # invalid: dp=1,cp=2,tp=2,sp=1,zero=3,cp_attention=ulysses
// The module itself is printed unchanged.
// CHECK-NEXT: module attributes {tfm.model
// CHECK-NOT:  dist.

// World sizes in the order given, tp ascending.
// ORDER:      {{^}}dp=2{{$}}
// ORDER-NEXT: dp=2,zero=1
// ORDER-NEXT: dp=2,zero=2
// ORDER-NEXT: dp=2,zero=3
// ORDER-NEXT: dp=1,tp=2
// ORDER-NEXT: dp=1,tp=2,sp=1
// ORDER-NEXT: dp=1
// ORDER-NOT:  dp

// Every listed plan in file order, with its line; the keys when it parses.
// FILE:      "model": {
// FILE-NEXT:   "ffn_hidden_size": 16,
// FILE-NEXT:   "num_heads": 2,
// FILE:      "plans": [
// FILE:        "dp": 2,
// FILE:        "line": 2,
// FILE:        "plan": "dp=2",
// FILE:        "valid": true,
// FILE-NEXT:   "vpp": 1,
// FILE-NEXT:   "world": 2,
// FILE:        "dp": 3,
// FILE:        "line": 4,
// FILE:        "plan": "dp=3,tp=2",
// FILE-NEXT:   "pp": 1,
// FILE-NEXT:   "reason": "plan dp=3: the batch dim of input 'tokens' (size 4) is not divisible by dp",
// FILE:        "valid": false,
// FILE-NEXT:   "vpp": 1,
// FILE-NEXT:   "world": 6,
// FILE:        "line": 5,
// FILE-NEXT:   "mb": 1,
// FILE-NEXT:   "plan": "tp=2 , sp=1",
// FILE:        "sp": 1,
// FILE-NEXT:   "tp": 2,
// FILE-NEXT:   "valid": true,
// FILE:        "line": 6,
// FILE-NEXT:   "plan": "foo=1",
// FILE-NEXT:   "reason": "dist-apply-plan: plan: unknown key 'foo'
// FILE-NEXT:   "valid": false
// FILE-NEXT: }
// FILE-NEXT: ],
// FILE-NEXT: "recompute": "none"

// pp=4 on 4 layers: one stage per layer, so not with two chunks per rank.
// PP:      {{^}}pp=4,dp=1,mb=2,schedule=zb-h1,recompute=full{{$}}
// PP-NEXT: # invalid: pp=4,dp=1,mb=2,schedule=interleaved,vpp=2,recompute=full: dist-pipeline-split: pp=4 x vpp=2 needs at least 8 block calls (layers), the model has 4 (tfm.model num_layers)
// PP-NEXT: # invalid: pp=4,dp=1,mb=2,schedule=looped-bfs,vpp=2,recompute=full: dist-pipeline-split: pp=4 x vpp=2 needs at least 8 block calls
// PP-NOT:  pp=

// In the JSON report: the step's microbatches and recomputation; interleaved with 2
// microbatches on 2 ranks.
// JSON:      "microbatches": 2,
// JSON:      "plans": [
// JSON:        "mb": 2,
// JSON-NEXT:   "plan": "pp=2,dp=2,mb=2,schedule=interleaved,vpp=2,recompute=full",
// JSON-NEXT:   "pp": 2,
// JSON-NEXT:   "recompute": "full",
// JSON-NEXT:   "schedule": "interleaved",
// JSON:        "valid": true,
// JSON-NEXT:   "vpp": 2,
// JSON-NEXT:   "world": 4,
// JSON:      "recompute": "full"

// NONE: error: dist-list-plans: give either world=N[,N...] (enumerate) or plans-file=FILE (check the plans listed there)
// ZERO: error: dist-list-plans: world must be >= 1, found 0
// SCHED: error: dist-list-plans: unknown pipeline schedule 'foo'
// FORMAT: error: dist-list-plans: format must be text or json, found 'xml'
// MISSING: error: dist-list-plans: cannot read the plan list '{{.*}}.missing': No such file or directory
