// RUN: shard-opt %s | shard-opt | FileCheck %s
// RUN: shard-opt %s --mlir-print-op-generic | shard-opt | FileCheck %s

// CHECK: dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]
dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]
