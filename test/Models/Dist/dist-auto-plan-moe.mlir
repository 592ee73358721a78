// dist-auto-plan on an MoE model (4-layer Mixtral-style config): the
// one-block copy drops the other blocks' load-balancing losses (a dropped
// block adds 0 to their sum), so MoE models are profiled like dense ones.
// compilable=true searches expert parallelism folded over dp and cp (here
// it picks ep=4 over dp=8: with the expert weight gradients costed at their
// true reduction length, the capacity, dp=4 x cp=2 with Ulysses attention
// scores lower; dist-auto-plan-moe-ep.mlir covers the ep search). On the
// fixed CPU description of test/Inputs/cpu-2core-fixed.json: the calibrated
// configs/clusters/cpu-2core.json moves with the machine (issue 21).
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 16 --seq 64 --vocab-multiple 64 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/../../Inputs/cpu-2core-fixed.json gpus=8 compilable=true" -o /dev/null | FileCheck %s
// CHECK: dist-auto-plan: model {{.*}}mixtral{{.*}}4 layers
// CHECK: chosen plan: pp=1,dp=8,cp=1,tp=1,{{.*}},ep=4,
// CHECK: as --plan:
// CHECK: search: {{[0-9]+}} candidates
