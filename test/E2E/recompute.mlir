// End to end, activation recomputation (tfm-recompute): the nanoGPT Tiny
// Shakespeare CPU model (batch 8, seq 32, vocabulary padded to a multiple of
// 8) trained for 10 steps with recompute none, selective and full, on 1 rank
// and under dp=2,tp=2,sp=1 on 4 ranks, in memory-check mode. Recomputation
// re-runs the same ops on the same values, so every run's losses equal the
// run without recomputation on the same ranks (1e-6 relative; in fact bit
// for bit), and the peak bytes per rank decrease none > selective > full.
//
// REQUIRES: runtime, mpi
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 32 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff --tfm-recompute=mode=none -o %t.none.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff --tfm-recompute=mode=selective -o %t.selective.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff --tfm-recompute=mode=full -o %t.full.mlir

// One rank.
// RUN: shard-opt %t.none.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.1.none.json" -o /dev/null
// RUN: shard-opt %t.selective.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.1.selective.json" -o /dev/null
// RUN: shard-opt %t.full.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.1.full.json" -o /dev/null
// RUN: shard-run %t.1.none.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.1.none.jsonl > %t.1.none.out
// RUN: shard-run %t.1.selective.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.1.selective.jsonl > %t.1.selective.out
// RUN: shard-run %t.1.full.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.1.full.jsonl > %t.1.full.out
// RUN: %python %S/Inputs/compare-losses.py %t.1.none.jsonl %t.1.selective.jsonl --steps 10 --rtol 1e-6 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/compare-losses.py %t.1.none.jsonl %t.1.full.jsonl --steps 10 --rtol 1e-6 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/peak-decreases.py none=%t.1.none.out selective=%t.1.selective.out full=%t.1.full.out | FileCheck %s --check-prefix=PEAK

// Four ranks, dp=2,tp=2,sp=1: the plan names the mode (dist-apply-plan
// checks it against the module's tfm.recompute).
// RUN: shard-opt %t.none.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm --rt-lower --rt-plan-memory --rt-export="output=%t.4.none.json" -o /dev/null
// RUN: shard-opt %t.selective.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,recompute=selective" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm --rt-lower --rt-plan-memory --rt-export="output=%t.4.selective.json" -o /dev/null
// RUN: shard-opt %t.full.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,recompute=full" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm --rt-lower --rt-plan-memory --rt-export="output=%t.4.full.json" -o /dev/null
// RUN: shard-run -n 4 %t.4.none.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.4.none.jsonl > %t.4.none.out
// RUN: shard-run -n 4 %t.4.selective.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.4.selective.jsonl > %t.4.selective.out
// RUN: shard-run -n 4 %t.4.full.json --data %data/tinyshakespeare.txt --steps 10 --eval-interval 0 --sample 0 --check-memory --log %t.4.full.jsonl > %t.4.full.out
// RUN: %python %S/Inputs/compare-losses.py %t.4.none.jsonl %t.4.selective.jsonl --steps 10 --rtol 1e-6 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/compare-losses.py %t.4.none.jsonl %t.4.full.jsonl --steps 10 --rtol 1e-6 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/compare-losses.py %t.1.none.jsonl %t.4.full.jsonl --steps 10 --rtol 1e-5 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/peak-decreases.py none=%t.4.none.out selective=%t.4.selective.out full=%t.4.full.out | FileCheck %s --check-prefix=PEAK
// RUN: FileCheck %s --check-prefix=RANKS < %t.4.full.out

// LOSS: 10 steps match
// PEAK: peaks decrease
// RANKS: ranks: 4 (mpi), mesh [dp=2, tp=2]
// RANKS: peak {{.*}} ([[BYTES:[0-9]+]] bytes, predicted [[BYTES]])
