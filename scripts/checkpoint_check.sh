#!/usr/bin/env bash
# Checkpoint suite (issue 14, item 7): shard-run's sharded, atomic,
# reshardable checkpoints (--save-dir, --save-interval, --keep, --resume).
#
#   scripts/checkpoint_check.sh [--filter RE] [--junit FILE] [--out DIR]
#                               [--timeout 180] [--reuse] [--keep-files] [-v]
#
# Compiles the nanoGPT CPU model (global batch 16) for 1 rank and the plans
# dp=2,tp=2,pp=2,sp=1,zero=1,mb=4,schedule=1f1b (8 ranks), dp=4,zero=3,
# dp=2,tp=2, tp=2, pp=2,mb=4,schedule=interleaved,vpp=2, cp=2 and dp=2,
# Mixtral (configs/models/mixtral-tiny-cpu.json, 4 experts) for dp=4,ep=4 and
# dp=2,ep=2,zero=3, and Llama (configs/models/llama-tiny-cpu.json) for 1 rank,
# each once with scripts/train.sh, then runs `shard-run` directly (12 steps,
# --warmup 5 --decay-steps 12, eval every 6 steps) and checks, one JUnit test
# case each:
#   same_plan   resumed from its step-6 checkpoint under the same plan (1 rank,
#               the 8-rank headline plan, dp=4,zero=3), a run equals the
#               uninterrupted one bit for bit: train_loss, grad_norm, val_loss;
#   cross_plan  resumed under another plan it stays within 1e-5 relative of
#               the uninterrupted run: 8 ranks -> 4 ranks (dp=4,zero=3, saves
#               at step 9) -> 1 rank; tp=2 -> pp=2 interleaved; cp=2 -> dp=2;
#               Mixtral dp=4,ep=4 -> dp=2,ep=2,zero=3 and -> tp=2,ep=2 (ep over tp);
#   fault       SIGKILL of rank 2 of a 4-rank job (after its step-6
#               checkpoint) ends the job within 30 s, non-zero, naming rank 2;
#               --resume latest then reproduces the uninterrupted run bit for bit;
#   signal      SIGTERM to `shard-run -n 4` and SIGINT to a 1-rank shard-run
#               stop at a step boundary with a checkpoint (--keep 2 respected),
#               exit 0, and --resume latest continues bit for bit;
#   bad_input   truncated, missing or corrupt (checksum) rank files, another
#               model's checkpoint, a manifest missing a tensor or of a newer
#               version, --resume latest without a complete checkpoint, a full
#               disk during a save (a 14 MiB tmpfs, 1 and 4 ranks; skipped
#               where mount is not permitted) and a --save-dir below a regular
#               file: each exits 1 or 2 with a "shard-run: error:" line naming
#               the problem and trains nothing (the full disk: after its
#               intact step-3 checkpoint, which still resumes bit for bit);
#   python      every rank file opens with safetensors.numpy, and both
#               autoshard.checkpoint.load_checkpoint and an independent
#               reassembly of the chunks listed in manifest.json (key, shape,
#               byte offset, every element exactly once) give every parameter
#               exactly as `shard-run --save-params` of the same step (8 ranks,
#               dp=4,zero=3, Mixtral ep).
# Prints a table and ends with "N passed, N failed"; exit status 1 if any case
# failed. Needs shard-run built with MPI (OpenMPI's mpirun) and safetensors +
# numpy in the venv (python/requirements.txt).
# Tools come from $BUILD_DIR (default build/); outputs go to --out (default
# $BUILD_DIR/checkpoint-check; the files of passing cases are deleted unless
# --keep-files). --reuse keeps the artifacts of an earlier run there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/py_tool.sh"
run_py_tool checkpoint_check.py "$@"
