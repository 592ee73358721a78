// End to end, 4 ranks: build the nanoGPT Tiny Shakespeare CPU model (batch
// 8, seq 32, vocabulary padded to a multiple of 8 so that tp=2 divides it),
// compile it once for 1 device and once partitioned for the plan
// dp=2,tp=2,sp=1 (data parallel x Megatron TP with sequence parallelism and
// a vocab-parallel embedding and loss), run both for 3 steps in memory-check
// mode, and check that the 4-rank losses equal the 1-device losses within
// 1e-5 relative (DESIGN.md §6), with allocated == predicted peak on rank 0.
// Both then sample 40 characters with the `logits` entry (vocab-parallel
// logits all-gathered over tp at its end): the texts must be equal.
//
// REQUIRES: runtime, mpi
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 32 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.1.json" -o /dev/null
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1" --dist-propagate --dist-partition --rt-lower --rt-plan-memory --rt-export="output=%t.4.json" -o %t.4.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.4.mlir
// RUN: shard-run %t.1.json --data %data/tinyshakespeare.txt --steps 3 --eval-interval 0 --sample 40 --check-memory --log %t.1.jsonl > %t.1.out
// RUN: shard-run -n 4 %t.4.json --data %data/tinyshakespeare.txt --steps 3 --eval-interval 0 --sample 40 --check-memory --log %t.4.jsonl > %t.4.out
// RUN: FileCheck %s < %t.4.out
// RUN: sed -n '/^sample:/,$p' %t.1.out > %t.1.sample
// RUN: sed -n '/^sample:/,$p' %t.4.out > %t.4.sample
// RUN: diff %t.1.sample %t.4.sample
// RUN: FileCheck %s --check-prefix=SAMPLE < %t.4.sample
// RUN: %python %S/Inputs/compare-losses.py %t.1.jsonl %t.4.jsonl --steps 3 --rtol 1e-5 | FileCheck %s --check-prefix=LOSS

// The partitioned program uses the vocab-parallel loss and SP collectives.
// IR-DAG: rt.kernel "vocab_ce_stats"
// IR-DAG: rt.kernel "vocab_embedding"
// IR-DAG: rt.kernel "dist.reduce_scatter"
// IR-DAG: rt.kernel "dist.all_gather"
// The logits entry ends with the all-gather of the vocabulary over tp.
// IR-LABEL: rt.func @logits
// IR: rt.kernel "dist.all_gather"{{.*}}gather_dim = 2
// IR: rt.return

// SAMPLE: sample:
// SAMPLE-NEXT: {{.+}}

// CHECK: ranks: 4 (mpi), mesh [dp=2, tp=2]
// CHECK: memory check: on
// CHECK: final train loss {{[0-9.]+}}
// CHECK: peak {{.*}} ([[PEAK:[0-9]+]] bytes, predicted [[PEAK]])
// Each of the 4 ranks reports its peak resident set.
// CHECK: peak RSS per rank (MiB): {{[1-9][0-9]*, [1-9][0-9]*, [1-9][0-9]*, [1-9][0-9]*$}}

// LOSS: step 0: {{.*}} ok
// LOSS: step 1: {{.*}} ok
// LOSS: step 2: {{.*}} ok
// LOSS: 3 steps match
