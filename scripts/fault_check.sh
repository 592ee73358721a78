#!/usr/bin/env bash
# Fault suite (issue 19, items 1, 3 and 7): hung ranks, signals, dead ranks.
#
#   scripts/fault_check.sh [--filter RE] [--junit FILE] [--out DIR]
#                          [--timeout 180] [--reuse] [-v]
#
# Compiles the nanoGPT CPU model (global batch 16) for 1 rank and the plans
# dp=2,tp=2 and pp=2,dp=2,mb=2 (4 ranks) with scripts/train.sh, then runs
# `shard-run` on Tiny Shakespeare and checks, one JUnit test case each:
#   watchdog  SIGSTOP of one rank of a 4-rank job with --comm-timeout 10
#             (dp=2,tp=2 with the communication thread off and on; pp=2,dp=2,
#             whose ranks also wait in point-to-point receives): the job ends
#             within 10 + 30 s of the stop, non-zero, with a "shard-run: error:"
#             line from every other rank, one of which says "communication
#             timeout: OP ... over group [AXES] (world ranks ...) ... at step
#             N; waiting for rank R[ (by way of rank Q, which waits for it)],
#             which did not answer" naming the stopped
#             rank; meanwhile no waiting rank uses more than half a core;
#   signal    SIGINT to `shard-run -n 4` and SIGTERM to a 1-rank shard-run,
#             both without --save-dir: "shard-run: interrupted at step N by
#             ..." at a step boundary, exit 128 + the signal, and the log holds
#             exactly steps 0..N-1 (with --save-dir: scripts/checkpoint_check.sh);
#   death     SIGKILL of rank 1 of a 4-rank job: "shard-run: error: rank 1 (pid
#             P) died during step N" with N the step the job was in; a rank
#             killed while writing --save-params after the last of 3 steps
#             (AUTOSHARD_TEST_WRITE_FAULT): "died after its last training
#             step (3 steps done; ...)", and no target file;
#   hosts     two "hosts" (network namespaces with their own host names, joined
#             by a veth pair, 10.77.0.1 and 10.77.0.2; skipped where namespaces
#             cannot be created), the user's own mpirun on host A starting 2
#             ranks on each (plm_rsh_agent mapping a host to `ip netns exec`,
#             TCP between the hosts, OpenMPI's out-of-band keepalive and
#             net.ipv4.tcp_retries2=5 of docs/running.md) for dp=2,tp=2 and
#             pp=2,dp=2: 6 losses equal to
#             `shard-run -n 4` on one host, plain progress lines in the output
#             file (no terminal escape codes); then, in a second run, the
#             link taken down after 3 steps: the job ends non-zero within
#             --comm-timeout 10 + 30 s with the watchdog's or mpirun's
#             "lost communication" message.
# Prints one line per case and ends with "N passed, N failed, N skipped";
# exit status 1 if any case failed. Needs shard-run built with MPI (OpenMPI's
# mpirun). Tools come from $BUILD_DIR (default build/); outputs go to --out
# (default $BUILD_DIR/fault-check). --reuse keeps the artifacts of an earlier
# run there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/py_tool.sh"
run_py_tool fault_check.py "$@"
