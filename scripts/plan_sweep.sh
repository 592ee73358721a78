#!/usr/bin/env bash
# Plan sweep (DESIGN.md §6, §12): every plan must train like the 1-rank run.
#
#   scripts/plan_sweep.sh [-n N[,N...]] [--mb M[,M...]] [--cp C[,C...]] [--steps K] [--full]
#                         [--plans "dp=2;dp=2,tp=2,mb=2" | --plans-file FILE] [--list]
#                         [--filter RE] [--exclude RE] [--tol 1e-5] [--batch 16] [--seq 32]
#                         [--layers N] [--vocab-multiple 64] [--dropout P] [--config FILE]
#                         [--experts E] [--capacity-factor CF] [--max-tokens-per-expert N]
#                         [--check-memory some|all|none] [--fuse-epilogues all|plans|none]
#                         [--no-invalid] [--junit FILE] [--out DIR] [-v]
#
# Builds the nanoGPT CPU model (../shared/configs/models/nanogpt-shakespeare-char-cpu.json)
# at global batch 16 (every dp degree up to 16 divides it), seq 32, vocabulary
# padded to a multiple of 64 (as scripts/train.sh does for every run),
# differentiates it once, runs the 1-rank reference (no plan) for K steps
# (--steps, default 20), then compiles every plan with shard-opt's
# registered pipeline (`--autoshard-train="autodiff=false plan=P ..."`:
# dist-apply-plan, dist-propagate, dist-partition, dist-pipeline-split,
# dist-bucket-collectives, dist-overlap-collectives, dist-verify-comm,
# rt-lower, rt-fuse-epilogues, rt-plan-memory, rt-export, as scripts/train.sh)
# and runs it with `shard-run -n <world size>`.
# Compared with the reference (relative error <= --tol, default 1e-5): each
# step's train_loss and grad_norm, the final val_loss, and the final
# parameters (`shard-run --save-params`, gathered to global shape; per
# tensor ||got - ref|| / ||ref||). Also checks that the unpadded model
# matches the padded one, and that a sample of invalid plans (unknown key,
# tp not dividing the heads, sp=1 with tp=1, zero=4, world size mismatch,
# ...) fails with a clear message.
#
# --experts overrides an MoE config's expert count (e.g. 8 for ep=8) and
# --capacity-factor builds the MoE layers with that capacity factor (tokens
# beyond an expert's per-sequence capacity are dropped; default dropless);
# --max-tokens-per-expert keeps them dropless with buffers bounded at N tokens
# per expert and sequence (the all-to-alls move only the tokens routed).
# Plans may name ep (expert parallelism, folded over the dp ranks).
# A plan with recompute=X compiles a step differentiated with tfm-recompute mode=X.
# With --dropout, a plan with mb=M is compared with the 1-rank run with mb=M
# (each microbatch keys its own dropout masks).
# Plans: -n N[,N...] every valid dp x tp x sp x zero (x ep, MoE models) plan
# for those world sizes (times each --cp context-parallel degree, default 1;
# and each --mb microbatch count: a plan with mb=M compiles the
# model built at batch/M with tfm-autodiff microbatches=M, i.e. gradient
# accumulation over the same global batch); --full the same for 1, 2, 4 and
# 8 with pp 1, 2, 4, cp 1, 2, 4, mb 1, 2, 4, 8 and every schedule (--schedules all:
# gpipe, 1f1b, interleaved, looped-bfs, zb-h1, zb-v; vpp=2 for the three
# that run several model chunks per rank); default CI's covering set (20
# plans on 1, 2, 4 and 8 ranks, every pair of dp, tp, sp and ZeRO stage
# 1/2/3, scripts/plan_lists/covering.txt). A few plans run under --check-memory.
# The compiler enumerates and checks the -n/--full plans
# (`shard-opt --dist-list-plans`, on the train step of each mb) and reads
# every plan's keys and world size. --plans-file FILE runs the plans listed
# in FILE (one per line, '#' starts a comment, 'check-memory' in a plan's
# comment runs it under --check-memory; CI's lists are scripts/plan_lists/*.txt);
# --list prints the plans with their world sizes and exits.
# Every program is compiled like scripts/train.sh's, rt-fuse-epilogues
# included (--fuse-epilogues all); `plans` compiles the 1-rank reference
# without it (the errors then include the fused GEMMs' rounding), `none` skips it.
# Prints a table (plan, ranks, max relative error of the losses, of the
# parameters, peak bytes per rank, pass/fail, seconds) and ends with
# "N passed, N failed"; exit status 1 if any check failed.
# Tools come from $BUILD_DIR (default build/); outputs go to --out
# (default $BUILD_DIR/plan-sweep).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/py_tool.sh"
run_py_tool plan_sweep.py "$@"
