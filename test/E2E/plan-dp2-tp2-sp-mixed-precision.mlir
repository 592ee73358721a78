// End to end, 4 ranks, mixed precision: the nanoGPT CPU model (batch 8, seq
// 32, vocabulary padded to a multiple of 8) compiled with
// --tfm-mixed-precision and --tfm-autodiff, then for 1 device and for the
// plan dp=2,tp=2,sp=1 (Megatron TP with sequence parallelism, vocab-parallel
// loss). tfm.cast has an elementwise sharding rule, the bf16 weight copies
// keep their parameters' layouts, and the backward recomputes them from the
// f32 parameters, so the partitioned program has the collectives of the f32
// plan (plan-dp2-tp2-sp.mlir): bf16 activations gathered and reduce-scattered
// over tp, f32 weight gradients all-reduced over dp. Both run 5 steps in
// memory-check mode; the 4-rank losses must equal the 1-device losses
// within 1e-4 relative (measured: 2.4e-5; bf16 partial sums are rounded per
// rank before their reduction, so the f32 bound of 1e-5 does not apply).
//
// REQUIRES: runtime, mpi
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 32 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-mixed-precision --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.1.json" -o /dev/null
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1" --dist-propagate --dist-partition --rt-lower --rt-plan-memory --rt-export="output=%t.4.json" -o %t.4.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.4.mlir
// RUN: FileCheck %s --check-prefix=BWD < %t.4.mlir
// RUN: shard-run %t.1.json --data %data/tinyshakespeare.txt --steps 5 --eval-interval 0 --sample 0 --check-memory --log %t.1.jsonl > %t.1.out
// RUN: shard-run -n 4 %t.4.json --data %data/tinyshakespeare.txt --steps 5 --eval-interval 0 --sample 20 --check-memory --log %t.4.jsonl | FileCheck %s
// RUN: %python %S/Inputs/compare-losses.py %t.1.jsonl %t.4.jsonl --steps 5 --rtol 1e-4 | FileCheck %s --check-prefix=LOSS

// Megatron's layout: no weight is gathered (only the position table, whose
// rows the sequence shard selects), activations move in bf16, the loss is
// vocab-parallel in f32, weight gradients are reduced in f32.
// IR-LABEL: rt.func @gpt2_block_fwd
// IR-NOT: dist.all_gather{{.*}}(!rt.buffer<{{[0-9]+}}x{{[0-9]+}}xbf16>)
// IR-NOT: dist.all_to_all
// IR: rt.return
// IR-LABEL: rt.func @gpt2_block_bwd
// IR-NOT: dist.all_gather{{.*}}(!rt.buffer<{{[0-9]+}}x{{[0-9]+}}xbf16>)
// IR-NOT: dist.all_to_all
// IR: rt.return
// BWD-LABEL: rt.func @gpt2_block_bwd
// BWD: rt.kernel "dist.all_gather"{{.*}}(!rt.buffer<4x16x128xbf16>) -> !rt.buffer<4x32x128xbf16>
// BWD: rt.kernel "dist.reduce_scatter"{{.*}}(!rt.buffer<4x32x128xf32>) -> !rt.buffer<4x16x128xf32>
// BWD: rt.return
// IR-LABEL: rt.func @train_step
// IR-DAG: rt.kernel "vocab_ce_stats"
// IR-DAG: rt.kernel "dist.reduce_scatter"{{.*}}(!rt.buffer<4x32x128xbf16>) -> !rt.buffer<4x16x128xbf16>
// IR-DAG: rt.kernel "dist.all_reduce"{{.*}}axes = ["dp"]{{.*}}(!rt.buffer<128x64xf32>)
// IR-DAG: rt.kernel "adamw"{{.*}}(!rt.buffer<128x64xf32>, !rt.buffer<128x64xf32>, !rt.buffer<128x64xf32>, !rt.buffer<128x64xf32>

// CHECK: ranks: 4 (mpi), mesh [dp=2, tp=2]
// CHECK: memory check: on
// CHECK: final train loss {{[0-9.]+}}
// CHECK: peak {{.*}} ([[PEAK:[0-9]+]] bytes, predicted [[PEAK]])
// CHECK: sample:
// CHECK-NEXT: {{.+}}

// LOSS: step 0: {{.*}} ok
// LOSS: step 4: {{.*}} ok
// LOSS: 5 steps match
