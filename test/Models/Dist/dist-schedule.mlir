// dist-schedule's recorded order, followed by dist-pipeline-split on the
// builder's nanoGPT. The pass itself (plan orders, file checks, errors):
// test/Dialect/Dist/dist-schedule.mlir.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff=microbatches=2 -o %t.ts.mlir

// A user's order is followed by dist-pipeline-split: rank 1 alternates
// (1F0 1B0 1F1 1B1) as the file says.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2,schedule=gpipe --dist-schedule=file=%autoshard_src/test/Dialect/Dist/Inputs/schedule-pp2-mb2-custom.txt --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=CUSTOM
// CUSTOM: dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0B1\0Arank1: 1F0 1B0 1F1 1B1\0A"
// CUSTOM-LABEL: func.func @train_step__pp1(
// CUSTOM: dist.recv {{.*}} {dist.tag = "F mb=0
// CUSTOM: call @gpt2_block_bwd
// CUSTOM: dist.recv {{.*}} {dist.tag = "F mb=1

// A hand-written split backward gets the input/weight cut of ZB-H1.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%autoshard_src/test/Dialect/Dist/Inputs/schedule-pp2-mb2-zb.txt --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=ZB
// ZB: func.func private @gpt2_block_bwd__input(
// ZB: func.func private @gpt2_block_bwd__weight(
