// `shard-opt --plan P` is shorthand for `--dist-apply-plan="plan=P"`, in both
// spellings, and a bad plan is the pass's clear error.
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --plan "dp=2,tp=2" | FileCheck %s
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --plan=dp=2,tp=2 | FileCheck %s
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --plan "dp=2,foo=2" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: dist.plan = {{{.*}}dp = 2 : i64{{.*}}tp = 2 : i64
// CHECK: dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
// BAD: error: dist-apply-plan: plan: unknown key 'foo' (value '2'; known keys: pp, dp, cp, tp, sp, zero, ep, etp, mb, schedule, vpp, recompute, cp_attention, cp_layout)
