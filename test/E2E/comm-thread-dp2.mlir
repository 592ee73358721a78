// End to end, 2 ranks: scripts/train.sh's dp=2 plan (each layer's gradient
// all-reduce started right after its backward by dist-overlap-collectives,
// waited a layer later) trained for 20 steps with shard-run's communication
// thread off and on (docs/cpu-backend.md, "Overlap on the CPU"). The thread
// changes which thread calls MPI, not what MPI computes: losses and grad
// norms must be bitwise the same. The traces (rank 0 and rank 1) of the run
// with the thread have a "comm" track holding the step's all-reduces beside
// the compute track and its dist.wait events; without it there is none.
//
// REQUIRES: runtime, mpi
// RUN: rm -rf %t && mkdir -p %t
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan dp=2 --steps 20 --eval-interval 0 --eval-iters 2 --sample 0 --out %t/off -- --comm-thread off > %t/off.out 2>&1
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan dp=2 --steps 20 --eval-interval 0 --eval-iters 2 --sample 0 --out %t/on -- --comm-thread on --comm-poll-us 30 > %t/on.out 2>&1
// RUN: FileCheck %s --check-prefix=OFF < %t/off.out
// RUN: FileCheck %s --check-prefix=ON < %t/on.out
// RUN: %python %S/Inputs/compare-losses.py %t/off/metrics.jsonl %t/on/metrics.jsonl --steps 20 --rtol 0 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/compare-losses.py %t/off/metrics.jsonl %t/on/metrics.jsonl --steps 20 --rtol 0 --key grad_norm | FileCheck %s --check-prefix=LOSS
// RUN: grep '^final train loss' %t/off.out > %t/off.final
// RUN: grep '^final train loss' %t/on.out > %t/on.final
// RUN: diff %t/off.final %t/on.final
// RUN: %python %S/Inputs/check-comm-trace.py %t/on/trace.json | FileCheck %s --check-prefix=TRACE
// RUN: %python %S/Inputs/check-comm-trace.py %t/on/trace.rank1.json | FileCheck %s --check-prefix=TRACE
// RUN: %python %S/Inputs/check-comm-trace.py --no-comm %t/off/trace.json | FileCheck %s --check-prefix=NOTRACE

// OFF: ranks: 2 (mpi), mesh [dp=2]
// OFF: comm thread: off
// OFF: final train loss

// ON: ranks: 2 (mpi), mesh [dp=2]
// ON: comm thread: on (one per rank makes every MPI call, MPI_THREAD_MULTIPLE; polls every 30 us while an operation is outstanding)
// ON: final train loss

// LOSS: step 19: {{.*}} relative error 0.00e+00 ok
// LOSS: 20 steps match

// Operations in flight together take a second track ("comm 2").
// TRACE: compute track: {{[0-9]+}} events, {{[1-9][0-9]*}} dist.wait
// TRACE: comm tracks: comm{{(, comm [0-9]+)*$}}
// TRACE: comm events: all_reduce x{{[1-9][0-9]*$}}

// NOTRACE: no comm track
