// End to end, 4 ranks: scripts/train.sh's pp=2 x dp=2 plan trained for 8
// steps with shard-run's ranks left to the scheduler and pinned to cores
// (--bind-cores auto; cpu/Placement.h: where 4 ranks outnumber the cores,
// each replica's two stages on one core). Placement moves ranks, not
// arithmetic: losses and grad norms must be bitwise the same. The banner
// says where rank 0 runs and why.
//
// REQUIRES: runtime, mpi
// RUN: rm -rf %t && mkdir -p %t
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan pp=2,dp=2,mb=2 --steps 8 --eval-interval 0 --eval-iters 1 --sample 0 --out %t/none > %t/none.out 2>&1
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan pp=2,dp=2,mb=2 --steps 8 --eval-interval 0 --eval-iters 1 --sample 0 --out %t/auto -- --bind-cores auto > %t/auto.out 2>&1
// RUN: FileCheck %s --check-prefix=NONE < %t/none.out
// RUN: FileCheck %s --check-prefix=AUTO < %t/auto.out
// RUN: %python %S/Inputs/compare-losses.py %t/none/metrics.jsonl %t/auto/metrics.jsonl --steps 8 --rtol 0 | FileCheck %s --check-prefix=LOSS
// RUN: %python %S/Inputs/compare-losses.py %t/none/metrics.jsonl %t/auto/metrics.jsonl --steps 8 --rtol 0 --key grad_norm | FileCheck %s --check-prefix=LOSS
// A cluster file calibrated with pinned ranks (host.pinned_cores; here the
// committed file with the field added): train.sh --plan auto runs its plan
// pinned, as it was planned.
// RUN: %python -c "import json, sys; c = json.load(open(sys.argv[1])); c['by_ranks_per_node']['4']['host']['pinned_cores'] = 2; json.dump(c, open(sys.argv[2], 'w'))" %autoshard_src/configs/clusters/cpu-2core.json %t/pinned.json
// RUN: env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan auto -n 4 --cluster %t/pinned.json --steps 2 --eval-interval 0 --eval-iters 1 --sample 0 --out %t/autoplan > %t/autoplan.out 2>&1
// RUN: FileCheck %s --check-prefix=AUTOPLAN < %t/autoplan.out
// RUN: not env BUILD_DIR=%autoshard_build %autoshard_src/scripts/train.sh --plan pp=2,dp=2,mb=2 --steps 1 --eval-interval 0 --eval-iters 1 --sample 0 --out %t/bad -- --bind-cores always > %t/bad.out 2>&1
// RUN: FileCheck %s --check-prefix=BAD < %t/bad.out

// NONE: ranks: 4 (mpi), mesh [pp=2, dp=2]
// NONE: cores: not pinned (--bind-cores none) (rank 0)
// NONE: final train loss

// On a machine of fewer than 4 cores rank 0 is pinned to the first; with
// 4 or more nothing is oversubscribed.
// AUTO: ranks: 4 (mpi), mesh [pp=2, dp=2]
// AUTO: cores: {{pinned to core [0-9]+ \(4 ranks on [1-3] cores?: --bind-cores auto\)|not pinned \(4 ranks on ([4-9]|[1-9][0-9]+) cores\)}} (rank 0)
// AUTO: final train loss

// LOSS: step 7: {{.*}} relative error 0.00e+00 ok
// LOSS: 8 steps match

// BAD: --bind-cores expects 'auto' or 'none', found 'always'

// AUTOPLAN: auto plan for 4 ranks on pinned.json
// AUTOPLAN: cores: pinned.json was calibrated with its ranks pinned to 2 cores (host.pinned_cores): --bind-cores auto
// AUTOPLAN: cores: {{pinned to core [0-9]+ \(4 ranks on [1-3] cores?: --bind-cores auto\)|not pinned \(4 ranks on ([4-9]|[1-9][0-9]+) cores\)}} (rank 0)
