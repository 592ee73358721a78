"""Dropless MoE with bounded buffers, end to end (docs/expert-parallelism.md).

A model built with ``--max-tokens-per-expert N`` keeps Hugging Face's
routing (nothing dropped) in ``[E, B, N, H]`` buffers; a batch that routes
more than N tokens of one sequence to one expert must stop the run with a
clear error naming the sequence, the expert and the bound -- on one rank and
under expert parallelism (the other ranks must not hang in the all-to-all).
Needs shard-opt and shard-run (and mpirun for the 2-rank case); skipped
without them.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, find_shard_opt

CONFIG = os.path.join(REPO_ROOT, "configs", "models", "mixtral-tiny-cpu.json")
SHAKESPEARE = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data",
                                            "tinyshakespeare.txt"))


def _tools():
    opt = find_shard_opt()
    if opt is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    run = os.path.join(os.path.dirname(opt), "shard-run")
    if not os.access(run, os.X_OK):
        pytest.skip(f"no shard-run beside {opt}")
    if not os.path.isfile(SHAKESPEARE):
        pytest.skip(f"{SHAKESPEARE} not found")
    return opt, run


def _compile(tmp_path, bound, plan=None):
    opt, run = _tools()
    model = tmp_path / "model.mlir"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python"))
    subprocess.run([sys.executable, "-m", "autoshard.models", CONFIG, "--batch", "4",
                    "--seq", "32", "--vocab-multiple", "64", "-q",
                    "--max-tokens-per-expert", str(bound), "-o", str(model)],
                   env=env, check=True)
    text = model.read_text()
    assert f"capacity = {bound} : i64, dropless" in text
    art = tmp_path / "model.json"
    options = "fuse-epilogues=true" + (f" plan={plan}" if plan else "")
    p = subprocess.run([opt, str(model), f"--autoshard-train={options} output={art}",
                        "-o", os.devnull], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert p.returncode == 0, p.stdout
    return run, art


def _run(run, art, ranks):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OPENBLAS_NUM_THREADS="1")
    cmd = [run, str(art), "-n", str(ranks), "--data", SHAKESPEARE, "--steps", "3",
           "--eval-interval", "0", "--sample", "0"]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env, timeout=120)


OVERFLOW = (r"moe_dispatch: sequence \d+ \(of this rank's batch\) routes \d+ tokens to "
            r"expert \d+, over the dropless bound of 2 tokens per expert and sequence "
            r"\(rebuild the model with a larger --max-tokens-per-expert, at most the "
            r"sequence length 32, which never overflows\)")


def test_overflow_is_a_clear_error_on_one_rank(tmp_path):
    run, art = _compile(tmp_path, 2)
    p = _run(run, art, 1)
    assert p.returncode != 0
    assert "shard-run: error:" in p.stderr
    assert "'moe_dispatch'" in p.stderr
    assert re.search(OVERFLOW, p.stderr), p.stderr


def test_overflow_ends_every_rank_under_expert_parallelism(tmp_path):
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    run, art = _compile(tmp_path, 2, plan="dp=2,ep=2")
    p = _run(run, art, 2)  # the timeout fails the test if a rank hangs
    assert p.returncode != 0
    assert re.search(OVERFLOW, p.stderr), p.stderr


def test_a_bound_of_seq_trains(tmp_path):
    # C = S is the exact dropless bound: never an overflow.
    run, art = _compile(tmp_path, 32)
    p = _run(run, art, 1)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "step 3" in p.stdout
