// autoshard-train is the whole compile written once: the same artifact and
// rt program as the passes spelled out one by one (scripts/train.sh's two
// shard-opt runs), for one device, for a plan with microbatches and bf16
// compute, and from a train step (autodiff=false).
// The model: test/Inputs/tiny-gpt2-model.mlir (two layers, checked in).
// RUN: cp %S/../Inputs/tiny-gpt2-model.mlir %t.mlir

// One device, default options.
// RUN: shard-opt %t.mlir --autoshard-train="output=%t.p1.json" -o %t.p1.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff --rt-lower --rt-fuse-epilogues --rt-plan-memory --rt-export="output=%t.s1.json" -o %t.s1.mlir
// RUN: cmp %t.p1.json %t.s1.json
// RUN: cmp %t.p1.mlir %t.s1.mlir

// A pp x dp x tp plan with microbatches, recompute, bf16 and no epilogue
// fusion; tfm-autodiff's microbatches and tfm-recompute's mode come from
// the plan's mb= and recompute= keys.
// RUN: shard-opt %t.mlir --autoshard-train="precision=bf16 beta2=0.99 plan=dp=2,tp=2,pp=2,sp=1,zero=1,mb=2,recompute=selective fuse-epilogues=false output=%t.p8.json" -o %t.p8.mlir
// RUN: shard-opt %t.mlir --tfm-mixed-precision=compute-type=bf16 --tfm-autodiff="beta2=0.99 microbatches=2" --tfm-recompute=mode=selective --dist-apply-plan="plan=dp=2,tp=2,pp=2,sp=1,zero=1,mb=2,recompute=selective" --dist-propagate --dist-partition --dist-pipeline-split --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm --rt-lower --rt-plan-memory --rt-export="output=%t.s8.json" -o %t.s8.mlir
// RUN: cmp %t.p8.json %t.s8.json
// RUN: cmp %t.p8.mlir %t.s8.mlir
// RUN: FileCheck %s --check-prefix=PLAN < %t.p8.mlir
// PLAN: dist.mesh

// From a train step: autodiff=false skips tfm-autodiff.
// RUN: shard-opt %t.mlir --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --autoshard-train="autodiff=false plan=dp=2 output=%t.p2.json" -o /dev/null
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2" --dist-propagate --dist-partition --dist-pipeline-split --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm --rt-lower --rt-fuse-epilogues --rt-plan-memory --rt-export="output=%t.s2.json" -o /dev/null
// RUN: cmp %t.p2.json %t.s2.json

// Options stated beside the plan must agree with it: dist-apply-plan names both.
// RUN: shard-opt %t.mlir --autoshard-train="microbatches=2 recompute=selective plan=pp=2,mb=2,recompute=selective" -o %t.e1.mlir
// RUN: shard-opt %t.mlir --autoshard-train="plan=pp=2,mb=2,recompute=selective" -o %t.d1.mlir
// RUN: cmp %t.e1.mlir %t.d1.mlir
// RUN: not shard-opt %t.mlir --autoshard-train="recompute=full plan=dp=2,recompute=selective" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: dist-apply-plan: plan recompute=selective, but the module's tfm.recompute is full
// RUN: not shard-opt %t.mlir --autoshard-train="microbatches=2 plan=dp=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MBMISMATCH
// MBMISMATCH: error: dist-apply-plan: {{.*}}mb=1{{.*}}2 microbatch

// A bad option value is the pass's own error.
// RUN: not shard-opt %t.mlir --autoshard-train="recompute=some" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: {{.*}}some
