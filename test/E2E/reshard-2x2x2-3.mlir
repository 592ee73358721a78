// Resharding on a 2x2x2 mesh, checked numerically on the CPU runtime (8
// ranks), part 3 of 4 (see reshard-2x4.mlir for the method): every
// sharding of an 8x16x24 f32 tensor on mesh [a=2, b=2, c=2] (246: each axis
// replicated, partial (sum, or max) or on one of the dims, in every order
// within a dim) and every valid ordered pair of them (29144, every pair
// except one that would make an axis partial), split round-robin over four
// tests of 7286 entries (one artifact of 29144 entries takes the loader too
// long on 8 oversubscribed ranks).
//
// REQUIRES: runtime, mpi
// RUN: %python %S/Inputs/gen_reshard.py --mesh a=2,b=2,c=2 --max all --chunk 2/4 -o %t.mlir
// RUN: shard-opt %t.mlir --dist-partition --rt-lower --rt-plan-memory --rt-export="output=%t.json" -o /dev/null
// RUN: shard-reshard-check -n 8 %t.json | FileCheck %s

// CHECK-NOT: FAIL
// CHECK: 7286 passed, 0 failed
