// End to end: build the nanoGPT Tiny Shakespeare CPU model (batch 4, seq 32),
// compile it (autodiff, lowering, memory plan, export) and train it for 20
// steps with shard-run in memory-check mode (poisoned arena, NaN checks).
// Checks that the runtime allocates exactly the compiler's predicted peak,
// that the val loss goes down, and that sampling prints text.
//
// REQUIRES: runtime
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 32 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff="beta1=0.9 beta2=0.99 weight-decay=0.1 max-grad-norm=1.0" --rt-lower --rt-plan-memory --rt-export="output=%t.json" -o /dev/null
// RUN: shard-run %t.json --data %data/tinyshakespeare.txt --steps 20 --check-memory --eval-interval 10 --eval-iters 2 --sample 20 --log %t.jsonl | FileCheck %s
// RUN: %python %S/Inputs/loss-decreased.py %t.jsonl | FileCheck %s --check-prefix=LOSS

// CHECK: model nanogpt-shakespeare-char-cpu: vocab 65 (padded 65), batch 4, seq 32
// CHECK: memory check: on
// CHECK: step 0: val loss {{[0-9.]+}}
// CHECK: step 1/20: loss {{[0-9.]+}}
// CHECK: step 10: val loss {{[0-9.]+}}
// CHECK: step 20/20: loss {{[0-9.]+}}
// CHECK: step 20: val loss {{[0-9.]+}}
// CHECK: final train loss {{[0-9.]+}}, val loss {{[0-9.]+}}
// Allocated bytes == predicted peak bytes (the static memory plan).
// CHECK: peak {{.*}} ([[PEAK:[0-9]+]] bytes, predicted [[PEAK]])
// CHECK: sample:
// CHECK-NEXT: {{.+}}

// LOSS: val loss step 0 {{[0-9.]+}} -> step 20 {{[0-9.]+}}: decreased
