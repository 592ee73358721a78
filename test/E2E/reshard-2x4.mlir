// Resharding on a 2x4 mesh, checked numerically on the CPU runtime (8
// ranks): gen_reshard.py enumerates every sharding of a 3-D f32 tensor
// (8x16x24) on mesh [a=2, b=4] -- each axis replicated, partial (sum or max)
// or on one of the dims, in every order within a dim, i.e. 37 shardings --
// and emits one entry per valid ordered pair (748: every pair except one
// that would make an axis partial), each a single `dist.reshard`.
// dist-partition lowers them to all_gather / all_to_all / reduce_scatter /
// all_reduce / shard_slice; shard-reshard-check feeds each rank its block
// of the global tensor (value = row-major index; integer parts that sum to
// it for partial inputs), runs every entry and compares every rank's output
// block exactly.
//
// REQUIRES: runtime, mpi
// RUN: %python %S/Inputs/gen_reshard.py --mesh a=2,b=4 --max all -o %t.mlir
// RUN: shard-opt %t.mlir --dist-partition --rt-lower --rt-plan-memory --rt-export="output=%t.json" -o /dev/null
// RUN: shard-reshard-check -n 8 %t.json | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: 748 passed, 0 failed
