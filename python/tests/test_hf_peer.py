"""The peer check against Hugging Face Transformers (docs/hf-checkpoints.md).

For tiny GPT-2, Llama (grouped-query attention, RoPE) and Mixtral configs,
transformers creates a random model and ``save_pretrained``s it; autoshard
builds the same config (vocabulary padded to a multiple of 8, so padding rows
exist), imports the weights with ``shard-run --init-from``, trains 20 steps
under a plan and exports them with ``--save-hf``. Checked, fp32, relative
tolerance 1e-5:

* autoshard's loss at step 0 (the imported weights, before any update) equals
  transformers' loss of the imported checkpoint on the same batch;
* transformers loads the export, and its loss on the validation batch equals
  autoshard's final eval loss, and its greedy continuation of autoshard's
  sample prompt equals autoshard's greedy (``--top-k 1``) sample.

The data are random token ids with exactly S + 1 tokens per split, so every
batch row of every step is the same window (Dataset::batch draws offsets in
[0, tokens - S)) and the batch is known without replaying the sampler.

Needs the build and the peer venv (torch + transformers, installed by
scripts/setup.sh under ~/.cache/autoshard-peer-venv, or AUTOSHARD_PEER_PYTHON);
skipped with a message naming what is missing.
"""

import json
import os
import random
import subprocess

import pytest
import xxhash

from conftest import peer_python, REPO_ROOT, find_shard_opt

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_peer_tool.py")
SEQ = 16
BATCH = 4
STEPS = 20
SAMPLE = 6
VOCAB = 97
RTOL = 1e-5

CONFIGS = {
    "gpt2": {"model_type": "gpt2", "vocab_size": VOCAB, "n_positions": 32, "n_embd": 64,
             "n_layer": 2, "n_head": 4, "activation_function": "gelu_new",
             "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
             "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True},
    "llama": {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": 64,
              "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "tie_word_embeddings": False},
    "mixtral": {"model_type": "mixtral", "vocab_size": VOCAB, "hidden_size": 64,
                "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
                "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 1e6,
                "router_aux_loss_coef": 0.02, "tie_word_embeddings": False},
}

PLANS = [("gpt2", None), ("gpt2", "dp=2,tp=2,pp=2"),
         ("llama", None), ("llama", "dp=2,tp=2,pp=2"),
         ("mixtral", None), ("mixtral", "dp=2,tp=2,pp=2"), ("mixtral", "dp=2,ep=2,tp=2")]




def _peer(jobs, tmp):
    py, why = peer_python()
    if py is None:
        pytest.skip(why)
    path = tmp / f"jobs-{random.getrandbits(32):08x}.json"
    path.write_text(json.dumps(jobs))
    p = subprocess.run([py, TOOL, str(path)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _bin_dir():
    opt = find_shard_opt()
    if opt is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    return os.path.dirname(opt)


def _write_tokens(d, train, val):
    """A prepared token directory (docs/data-format.md) holding exactly these ids."""
    d.mkdir()
    meta = {"format": "autoshard-tokens", "version": 1,
            "tokenizer": {"kind": "char", "spec": "char", "file": None, "eot_id": None,
                          "eot_token": None},
            "vocab_size": VOCAB, "dtype": "uint16", "val_fraction": 0.5, "documents": 1,
            "inputs": []}
    for split, ids in (("train", train), ("val", val)):
        data = b"".join(int(i).to_bytes(2, "little") for i in ids)
        (d / f"{split}.bin").write_bytes(data)
        meta[split] = {"file": f"{split}.bin", "tokens": len(ids), "bytes": len(data),
                       "xxh3_64": xxhash.xxh3_64_hexdigest(data)}
    # Printable, distinct one-byte texts, so that the sample decodes.
    meta["token_bytes"] = [f"{0x21 + i:02x}" for i in range(VOCAB)]
    (d / "meta.json").write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    """The three transformers models, created in one peer process."""
    root = tmp_path_factory.mktemp("hf")
    jobs = []
    for fam, cfg in CONFIGS.items():
        # Llama's checkpoint is sharded (an index and several files).
        jobs.append({"cmd": "create", "config": cfg, "out": str(root / fam), "seed": 7,
                     "max_shard_size": "40KB" if fam == "llama" else None})
    tensors = _peer(jobs, root)
    rng = random.Random(11)
    train = [rng.randrange(VOCAB) for _ in range(SEQ + 1)]
    val = [rng.randrange(VOCAB) for _ in range(SEQ + 1)]
    _write_tokens(root / "data", train, val)
    return root, dict(zip(CONFIGS, tensors)), train, val


def _train(hf_dir, data, out, plan):
    env = dict(os.environ, BUILD_DIR=os.path.dirname(_bin_dir()))
    cmd = [os.path.join(REPO_ROOT, "scripts", "train.sh"), "--init-from", str(hf_dir),
           "--save-hf", str(out / "hf"), "--data", str(data), "--seq", str(SEQ),
           "--batch", str(BATCH), "--steps", str(STEPS), "--lr", "3e-3", "--warmup", "2",
           "--vocab-multiple", "8", "--eval-interval", "0", "--eval-iters", "1",
           "--sample", str(SAMPLE), "--out", str(out)]
    if plan:
        cmd += ["--plan", plan]
    cmd += ["--", "--top-k", "1"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=env, timeout=900)
    assert p.returncode == 0, p.stdout[-4000:]
    recs = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
    return p.stdout, recs


def _close(a, b):
    return abs(a - b) <= RTOL * abs(b)


@pytest.mark.parametrize("family,plan", PLANS,
                         ids=[f"{f}-{p or '1rank'}" for f, p in PLANS])
def test_import_train_export_matches_transformers(hf_models, tmp_path, family, plan):
    root, _, train, val = hf_models
    hf_dir = root / family
    out, recs = _train(hf_dir, root / "data", tmp_path / "run", plan)
    assert "init from" in out, out[-2000:]
    step0 = next(r for r in recs if r.get("step") == 0 and "train_loss" in r)
    final = [r for r in recs if "val_loss" in r][-1]
    sample = [r for r in recs if "sample_tokens" in r][-1]
    export = tmp_path / "run" / "hf"
    assert (export / "config.json").is_file() and not list(tmp_path.glob("run/hf.tmp*"))
    peer = _peer([{"cmd": "loss", "model": str(hf_dir), "tokens": train},
                  {"cmd": "loss", "model": str(export), "tokens": val},
                  {"cmd": "greedy", "model": str(export), "prompt": sample["sample_prompt"],
                   "count": SAMPLE},
                  {"cmd": "loss", "model": str(hf_dir), "tokens": val}], tmp_path)
    init_loss, export_loss, greedy, init_val = peer
    assert export_loss["vocab"] == VOCAB  # the padding rows are not exported
    assert _close(step0["train_loss"], init_loss["loss"]), (step0, init_loss)
    assert _close(final["val_loss"], export_loss["loss"]), (final, export_loss)
    # Training moved the weights: the export is not the import.
    assert abs(export_loss["loss"] - init_val["loss"]) > 1e-3, (export_loss, init_val)
    assert sample["sample_tokens"] == greedy["tokens"]
