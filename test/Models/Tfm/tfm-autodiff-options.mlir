// Optimizer options are checked before any op is built (an out-of-range value
// is a clear error, never an abort); max-grad-norm=0 means no clipping.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 -o %t.mlir 2>/dev/null
// RUN: not shard-opt %t.mlir --tfm-autodiff="beta2=2" 2>&1 | FileCheck %s --check-prefix=BETA2
// RUN: not shard-opt %t.mlir --tfm-autodiff="beta1=-0.1" 2>&1 | FileCheck %s --check-prefix=BETA1
// RUN: not shard-opt %t.mlir --tfm-autodiff="epsilon=0" 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not shard-opt %t.mlir --tfm-autodiff="weight-decay=-1" 2>&1 | FileCheck %s --check-prefix=WD
// RUN: not shard-opt %t.mlir --tfm-autodiff="max-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: shard-opt %t.mlir --tfm-autodiff="max-grad-norm=0" | FileCheck %s --check-prefix=NOCLIP
// Infinite values are refused too (issue 19: weight-decay=inf was accepted).
// RUN: not shard-opt %t.mlir --tfm-autodiff="weight-decay=inf" 2>&1 | FileCheck %s --check-prefix=WDINF
// RUN: not shard-opt %t.mlir --tfm-autodiff="epsilon=inf" 2>&1 | FileCheck %s --check-prefix=EPSINF
// RUN: not shard-opt %t.mlir --tfm-autodiff="max-grad-norm=inf" 2>&1 | FileCheck %s --check-prefix=CLIPINF
// RUN: not shard-opt %t.mlir --tfm-autodiff="microbatches=65537" 2>&1 | FileCheck %s --check-prefix=MANY

// BETA2: error: tfm-autodiff: option beta2 must be in [0, 1), found 2.000000e+00
// BETA2-NOT: LLVM ERROR
// BETA1: error: tfm-autodiff: option beta1 must be in [0, 1), found -1.000000e-01
// EPS: error: tfm-autodiff: option epsilon must be in (0, inf), finite, found 0.000000e+00
// WD: error: tfm-autodiff: option weight-decay must be in [0, inf), finite, found -1.000000e+00
// CLIP: error: tfm-autodiff: option max-grad-norm must be in [0, inf), finite (0: no clipping), found -1.000000e+00
// WDINF: error: tfm-autodiff: option weight-decay must be in [0, inf), finite, found INF
// EPSINF: error: tfm-autodiff: option epsilon must be in (0, inf), finite, found INF
// CLIPINF: error: tfm-autodiff: option max-grad-norm must be in [0, inf), finite (0: no clipping), found INF
// MANY: error: tfm-autodiff: option microbatches must be in [1, 65536], found 65537
// NOCLIP: tfm.clip_coef {{.*}}max_norm = 1.000000e+30
