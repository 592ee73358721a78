// dist-schedule: the plan's schedule, or a user's in the §1.5 format,
// checked and recorded for dist-pipeline-split.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff=microbatches=2 -o %t.ts.mlir

// The plan's 1F1B order.
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2 --dist-schedule -o - | FileCheck %s --check-prefix=PLAN
// PLAN: dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0B1\0Arank1: 1F0 1B0 1F1 1B1\0A"

// A user's order is followed by dist-pipeline-split: rank 1 alternates
// (1F0 1B0 1F1 1B1) as the file says.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2,schedule=gpipe --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-custom.txt --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=CUSTOM
// CUSTOM: dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0B1\0Arank1: 1F0 1B0 1F1 1B1\0A"
// CUSTOM-LABEL: func.func @train_step__pp1(
// CUSTOM: dist.recv {{.*}} {dist.tag = "F mb=0
// CUSTOM: call @gpt2_block_bwd
// CUSTOM: dist.recv {{.*}} {dist.tag = "F mb=1

// A hand-written split backward gets the input/weight cut of ZB-H1.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-zb.txt --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=ZB
// ZB: func.func private @gpt2_block_bwd__input(
// ZB: func.func private @gpt2_block_bwd__weight(

// Errors: a deadlock, a size mismatch, a bad token, a missing file.
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-deadlock.txt 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// DEADLOCK: error: dist-schedule: {{.*}}schedule-pp2-mb2-deadlock.txt: the schedule cannot run: deadlock: rank 0 blocked at op #1 0B0
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-mixed.txt 2>&1 | FileCheck %s --check-prefix=MIXED
// MIXED: error: dist-schedule: {{.*}}schedule-pp2-mb2-mixed.txt: the schedule runs 0B0 as a whole backward (B) but 1I0 cut into I and W; use B everywhere or I and W everywhere
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 1 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff=microbatches=4 | not shard-opt --dist-apply-plan=plan=pp=2,mb=4 --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-custom.txt 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: error: dist-schedule: {{.*}}schedule-pp2-mb2-custom.txt: the schedule has 2 rank(s), 2 stage(s) and 2 microbatch(es), but the plan has pp=2, pp*vpp=2 and mb=4
// RUN: echo "rank0: 0F0 0X0" > %t.bad.txt
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%t.bad.txt 2>&1 | FileCheck %s --check-prefix=TOKEN
// TOKEN: error: dist-schedule: {{.*}}bad.txt: line 1: token '0X0': unknown op kind 'X'
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan=plan=pp=2,mb=2 --dist-schedule=file=%t.missing.txt 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: dist-schedule: cannot read the schedule file '{{.*}}missing.txt': No such file or directory
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan=plan=dp=2,mb=2 --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-custom.txt 2>&1 | FileCheck %s --check-prefix=NOPP
// NOPP: error: dist-schedule: file={{.*}} given, but the plan has pp=1 (no pipeline)
