// scripts/auto_plan.sh (what scripts/train.sh --plan auto and
// scripts/auto_plan_check.sh use): prints the plan dist-auto-plan chooses
// for 8 ranks in --plan syntax; a missing cluster file, a device count the
// cluster cannot hold and a cluster on which no plan fits are clear errors.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 16 --seq 64 --vocab-multiple 64 -q -o %t.model.mlir
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/auto_plan.sh %t.model.mlir -n 8 --batch 16 --report %t.json 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: not env BUILD_DIR=%autoshard_build %autoshard_src/scripts/auto_plan.sh %t.model.mlir --cluster %t.missing.json 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not env BUILD_DIR=%autoshard_build %autoshard_src/scripts/auto_plan.sh %t.model.mlir -n 16 2>&1 | FileCheck %s --check-prefix=NODE
// RUN: not env BUILD_DIR=%autoshard_build %autoshard_src/scripts/auto_plan.sh %t.model.mlir --cluster %S/Inputs/auto-plan-tiny-cluster.json 2>&1 | FileCheck %s --check-prefix=NOFIT
// train.sh's own checks of --plan auto's options (before anything is built).
// RUN: not %autoshard_src/scripts/train.sh --plan auto --cluster %t.missing.json 2>&1 | FileCheck %s --check-prefix=TRAIN-MISSING
// RUN: not %autoshard_src/scripts/train.sh --cluster %S/Inputs/auto-plan-tiny-cluster.json 2>&1 | FileCheck %s --check-prefix=TRAIN-NOAUTO

// The plan in dist-apply-plan syntax: no mbs, defaults omitted.
// CHECK: {{^}}{{(pp=[0-9]+,)?}}dp={{[0-9]+}}
// CHECK-NOT: mbs=
// SUMMARY: auto plan: pp={{[0-9]+}},dp={{[0-9]+}},cp={{[0-9]+}},{{.*}}mbs={{[0-9]+}}{{.*}} (predicted step
// MISSING: auto_plan.sh: cluster file '{{.*}}missing.json' not found
// NODE: auto_plan.sh: dist-auto-plan failed for 16 ranks: dist-auto-plan: cluster 'CPU 2-core (this development machine)' is one node of 8 devices
// NOFIT: auto_plan.sh: no plan for 8 ranks fits in memory (global batch 16, cluster tiny): tp=1 pp=1 cp=1: OOM: smallest peak {{[0-9.]+}} MiB > 256.1 MiB
// TRAIN-MISSING: train.sh: cluster file '{{.*}}missing.json' not found
// TRAIN-NOAUTO: train.sh: --cluster is only used with --plan auto
