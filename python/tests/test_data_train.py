"""shard-run --data DIR end to end: prepared directories train like text files.

Needs the build (scripts/train.sh, shard-opt, shard-run); skipped without it.
Each test compiles the nanoGPT CPU model once with scripts/train.sh and then
runs shard-run directly.
"""

import json
import os
import subprocess

import pytest

from conftest import REPO_ROOT, find_shard_opt

from autoshard.data import prepare

SHAKESPEARE = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data",
                                            "tinyshakespeare.txt"))
STEPS = 6


def _bin_dir():
    opt = find_shard_opt()
    if opt is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    d = os.path.dirname(opt)
    if not os.access(os.path.join(d, "shard-run"), os.X_OK):
        pytest.skip(f"no shard-run beside {opt}")
    return d


def _train(data, out, extra=()):
    """scripts/train.sh on `data` for STEPS steps; returns (rc, output, log records)."""
    if not os.path.isfile(SHAKESPEARE):
        pytest.skip(f"{SHAKESPEARE} not found")
    env = dict(os.environ, BUILD_DIR=os.path.dirname(_bin_dir()))
    cmd = [os.path.join(REPO_ROOT, "scripts", "train.sh"), "--data", str(data),
           "--steps", str(STEPS), "--eval-interval", "3", "--eval-iters", "2",
           "--sample", "40", "--out", str(out), *extra]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=600)
    log = out / "metrics.jsonl"
    recs = [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []
    return p.returncode, p.stdout, recs


def _losses(recs):
    return [(r["step"], r.get("train_loss"), r.get("val_loss")) for r in recs
            if "train_loss" in r or "val_loss" in r]


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("text")
    rc, text, recs = _train(SHAKESPEARE, out)
    assert rc == 0, text
    return out, text, recs


def test_char_directory_trains_like_the_text_file(text_run, tmp_path):
    _, _, text_recs = text_run
    d = tmp_path / "char"
    prepare([SHAKESPEARE], d, tokenizer="char")
    rc, out, recs = _train(d, tmp_path / "run")
    assert rc == 0, out
    assert "tokenizer char (char), vocab 65" in out
    # The same windows of the same ids: every loss equal as floating-point bits.
    assert _losses(recs) == _losses(text_recs)
    assert len([r for r in recs if "train_loss" in r]) == STEPS


def test_bpe_directory_trains_and_samples_words(tmp_path):
    d = tmp_path / "bpe"
    meta = prepare([SHAKESPEARE], d, tokenizer="bpe:512")
    rc, out, recs = _train(d, tmp_path / "run")
    assert rc == 0, out
    assert "vocab 512" in out and "model" in out
    train = [r["train_loss"] for r in recs if "train_loss" in r]
    assert len(train) == STEPS and all(0 < x < 20 for x in train)
    # A fresh model's loss is about ln(V) (V = 512 padded to 512): the model
    # was built at the tokenizer's vocabulary, not the config's 65.
    assert abs(train[0] - 6.24) < 0.5, train[0]
    sample = out.split("sample:", 1)[1]
    assert len(sample.strip()) > 40  # 40 BPE tokens decode to more than 40 bytes
    assert meta["tokenizer"]["eot_id"] is not None


def _shard_run(artifact, data, *extra):
    cmd = [os.path.join(_bin_dir(), "shard-run"), str(artifact), "--data", str(data),
           "--steps", "2", "--warmup", "1", "--decay-steps", "2", "--eval-interval", "0",
           "--eval-iters", "1", "--sample", "0", *extra]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)


def test_bad_directories_are_clear_errors(text_run, tmp_path):
    out, _, _ = text_run
    artifact = out / "model.json"  # built at the 65-character vocabulary
    d = tmp_path / "bpe"
    prepare([SHAKESPEARE], d, tokenizer="bpe:300")
    p = _shard_run(artifact, d)
    assert p.returncode != 0
    assert "does not cover the 300 token ids" in p.stdout, p.stdout
    c = tmp_path / "char"
    prepare([SHAKESPEARE], c, tokenizer="char")
    with open(c / "train.bin", "r+b") as f:
        f.truncate(1000)
    p = _shard_run(artifact, c)
    assert p.returncode != 0 and "train.bin" in p.stdout and "truncated" in p.stdout, p.stdout
    (c / "meta.json").unlink()
    p = _shard_run(artifact, c)
    assert p.returncode != 0 and "has no meta.json" in p.stdout, p.stdout
