// dist-explain on a hand-written partitioned program with known collectives
// (Inputs/explain-toy.mlir: its header lists them), in func form (lowered on
// a copy), in rt form, as JSON, with a baseline. nanoGPT through the whole
// pipeline, where an independent recount of the partitioned IR must match
// the report: test/Models/Dist/dist-explain.mlir.
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain -o /dev/null | FileCheck %s
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain -o %t.toy.mlir > /dev/null
// RUN: shard-opt %S/Inputs/explain-toy.mlir | diff - %t.toy.mlir
// RUN: shard-opt %S/Inputs/explain-toy.mlir --rt-lower --rt-plan-memory --dist-explain -o /dev/null | FileCheck %s --check-prefix=RT
// RUN: shard-opt %S/Inputs/explain-toy.mlir --rt-lower --dist-explain="baseline=%S/Inputs/explain-toy-baseline.json output=%t.txt" -o /dev/null
// RUN: FileCheck %s --check-prefix=BASE < %t.txt
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain="format=json baseline=%S/Inputs/explain-toy-baseline.json" -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: not shard-opt %S/Inputs/explain-toy.mlir --dist-explain="format=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-FORMAT
// RUN: not shard-opt %S/Inputs/explain-toy.mlir --dist-explain="baseline=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-BASE
//
//

// CHECK-LABEL: dist-explain: toy
// CHECK-NEXT: plan: dp=2,tp=2,sp=0,zero=1
// CHECK-NEXT: mesh: [dp=2, tp=2], world size 4
// CHECK: strategies (what is split on which axis, from the entry's shardings; roles from tfm.role)
// CHECK-NEXT: DP      dp=2  batch: tokens dim 0 (4x4x8 -> 2x4x8);
// CHECK-NEXT: ZeRO-1  dp=2  optimizer states m, v: 1 of 1 split on dp; optimizer state per rank 256 B -> 64 B
// CHECK-NEXT: TP      tp=2  columns (last dim): attn_q (1); rows (dim 0): attn_out (1); replicated: norm (1); split parameters per rank 512 B -> 256 B
// CHECK-NOT: SP
// CHECK: collectives per train_step per rank
// CHECK-NEXT: strategy        op              axes    count   bytes/step
// CHECK-NEXT: DP              all_reduce      dp          1        256 B
// CHECK-NEXT: ZeRO-1          all_gather      dp          1         64 B
// CHECK-NEXT: ZeRO-1          reduce_scatter  dp          1        128 B
// CHECK-NEXT: TP              all_reduce      tp          3        768 B
// CHECK-NEXT: loss/grad norm  all_reduce      dp,tp       1          4 B
// CHECK-NEXT: total                                       7     1.19 KiB
// CHECK-NEXT: per call:
// CHECK-NEXT: blk (called 3x): all_reduce[tp] x1
// CHECK-NEXT: train_step (called 1x): all_reduce[dp] x1, reduce_scatter[dp] x1, all_gather[dp] x1, all_reduce[dp,tp] x1
// CHECK: memory per rank (train_step)
// CHECK-NEXT: with plan      without  ratio
// CHECK-NEXT: state: params                   288 B        544 B   0.53
// CHECK-NEXT: state: optimizer m               64 B        256 B   0.25
// CHECK-NEXT: state: optimizer v                0 B          0 B
// CHECK-NEXT: state: total                    352 B        800 B   0.44
// CHECK-NEXT: transient: frame {{.*}} n/a
// CHECK: at peak: live total {{.*}} n/a
// CHECK: transient n/a (pass baseline=<one-rank artifact.json>)

// Already lowered: the same counts; states are named by their names.
// RT: TP      tp=2  columns (last dim): wq (1); rows (dim 0): wo (1); replicated: ln (1)
// RT: TP              all_reduce      tp          3        768 B
// RT: total                                       7     1.19 KiB
// RT: blk (called 3x): all_reduce[tp] x1

// BASE: state: total                    352 B        800 B   0.44
// BASE-NEXT: transient: frame {{.*}}     4.00 KiB
// BASE-NEXT: at peak: activation {{.*}}     3.00 KiB
// BASE: at peak: io {{.*}}     1.00 KiB
// BASE: at peak: live total {{.*}}     4.00 KiB
// BASE-NEXT: total: state + frame {{.*}}     4.78 KiB
// BASE-NEXT: transient from {{.*}}explain-toy-baseline.json (world size 1, state there 800 B)

// JSON: "collectives": [
// JSON: "bytes": 768,
// JSON-NEXT: "count": 3,
// JSON-NEXT: "op": "all_reduce",
// JSON-NEXT: "strategy": "TP"
// JSON: "functions": {
// JSON-NEXT: "blk": {
// JSON-NEXT: "calls": 3,
// JSON: "frame": {
// JSON-NEXT: "with": {{[0-9]+}},
// JSON-NEXT: "without": 4096
// JSON: "state_total": {
// JSON-NEXT: "with": 352,
// JSON-NEXT: "without": 800
// JSON: "world_size": 4

// ERR-FORMAT: dist-explain: format must be 'text', 'json' or 'html', found 'xml'
// ERR-BASE: dist-explain: cannot read baseline
