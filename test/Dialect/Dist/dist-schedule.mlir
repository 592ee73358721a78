// dist-schedule on hand-written modules that carry only a plan (what
// dist-apply-plan records): the plan's schedule, or a user's in the §1.5
// format, checked and recorded as `dist.pipeline_schedule` for
// dist-pipeline-split. test/Models/Dist/dist-schedule.mlir runs the recorded
// orders through dist-pipeline-split on the builder's nanoGPT.
// RUN: shard-opt %s -split-input-file --dist-schedule | FileCheck %s --check-prefix=PLAN
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-custom.txt 2>%t.err | FileCheck %s --check-prefix=FILE
// RUN: FileCheck %s --check-prefix=FILE-ERR < %t.err
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-zb.txt 2>/dev/null | FileCheck %s --check-prefix=ZB
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-deadlock.txt 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%S/Inputs/schedule-pp2-mb2-mixed.txt 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: echo "rank0: 0F0 0X0" > %t.bad.txt
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%t.bad.txt 2>&1 | FileCheck %s --check-prefix=TOKEN
// RUN: not shard-opt %s -split-input-file --dist-schedule=file=%t.missing.txt 2>&1 | FileCheck %s --check-prefix=MISSING

// 1F1B, pp = 2, mb = 2: the plan's order; a user's file replaces it (rank 1
// alternating, or the backward cut into I and W).
// PLAN-LABEL: module attributes {dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0B1\0Arank1: 1F0 1B0 1F1 1B1\0A"
// FILE-LABEL: module attributes {dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0B1\0Arank1: 1F0 1B0 1F1 1B1\0A"
// ZB-LABEL: module attributes {dist.pipeline_schedule = "rank0: 0F0 0F1 0I0 0I1 0W0 0W1\0Arank1: 1F0 1I0 1F1 1I1 1W0 1W1\0A"
// DEADLOCK: error: dist-schedule: {{.*}}schedule-pp2-mb2-deadlock.txt: the schedule cannot run: deadlock: rank 0 blocked at op #1 0B0
// MIXED: error: dist-schedule: {{.*}}schedule-pp2-mb2-mixed.txt: the schedule runs 0B0 as a whole backward (B) but 1I0 cut into I and W; use B everywhere or I and W everywhere
// TOKEN: error: dist-schedule: {{.*}}bad.txt: line 1: token '0X0': unknown op kind 'X'
// MISSING: error: dist-schedule: cannot read the schedule file '{{.*}}missing.txt': No such file or directory
module attributes {dist.plan = {cp = 1 : i64, cp_attention = "ring", dp = 1 : i64, ep = 1 : i64, mb = 2 : i64, pp = 2 : i64, recompute = "none", schedule = "1f1b", sp = 0 : i64, tp = 1 : i64, vpp = 1 : i64, zero = 0 : i64}} {
}

// -----

// Interleaved 1F1B, two chunks per rank (stages 0, 2 on rank 0); a file
// for pp*vpp = 2 stages does not fit it.
// PLAN-LABEL: module attributes {dist.pipeline_schedule = "rank0: 0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1\0Arank1: 1F0 1F1 3F0 3B0 3F1 3B1 1B0 1B1\0A"
// FILE-ERR: error: dist-schedule: {{.*}}schedule-pp2-mb2-custom.txt: the schedule has 2 rank(s), 2 stage(s) and 2 microbatch(es), but the plan has pp=2, pp*vpp=4 and mb=2
module attributes {dist.plan = {cp = 1 : i64, cp_attention = "ring", dp = 1 : i64, ep = 1 : i64, mb = 2 : i64, pp = 2 : i64, recompute = "none", schedule = "interleaved", sp = 0 : i64, tp = 1 : i64, vpp = 2 : i64, zero = 0 : i64}} {
}

// -----

// No pipeline: nothing to record, and a file is an error.
// PLAN-LABEL: module attributes {dist.plan = {{.*}}pp = 1 : i64
// FILE-ERR: error: dist-schedule: file={{.*}} given, but the plan has pp=1 (no pipeline)
module attributes {dist.plan = {cp = 1 : i64, cp_attention = "ring", dp = 2 : i64, ep = 1 : i64, mb = 2 : i64, pp = 1 : i64, recompute = "none", schedule = "1f1b", sp = 0 : i64, tp = 1 : i64, vpp = 1 : i64, zero = 0 : i64}} {
}

// -----

// No plan: nothing to do, and a file needs one.
// PLAN: // -----
// PLAN-NEXT: module {
// FILE-ERR: error: dist-schedule: file={{.*}} needs a plan (run dist-apply-plan first)
module {
}

// -----

// mb = 4: the plan's 1F1B has two warm-up forwards on rank 0; the pp=2,
// mb=2 file does not fit it.
// PLAN-LABEL: module attributes {dist.pipeline_schedule = "rank0: 0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3\0Arank1: 1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3\0A"
// FILE-ERR: error: dist-schedule: {{.*}}schedule-pp2-mb2-custom.txt: the schedule has 2 rank(s), 2 stage(s) and 2 microbatch(es), but the plan has pp=2, pp*vpp=2 and mb=4
module attributes {dist.plan = {cp = 1 : i64, cp_attention = "ring", dp = 1 : i64, ep = 1 : i64, mb = 4 : i64, pp = 2 : i64, recompute = "none", schedule = "1f1b", sp = 0 : i64, tp = 1 : i64, vpp = 1 : i64, zero = 0 : i64}} {
}
