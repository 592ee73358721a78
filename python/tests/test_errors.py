"""Bad configs and options: clear ConfigError messages naming key and value; CLI exit codes."""

import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR, config_path

from autoshard.models import ConfigError, build_model, config_from_dict, load_config


def _raw(name):
    with open(config_path(name)) as f:
        return json.load(f)


def _err(raw, *words):
    with pytest.raises(ConfigError) as ei:
        config_from_dict(raw, name="t")
    msg = str(ei.value)
    for w in words:
        assert w in msg, (w, msg)
    return msg


@pytest.mark.parametrize("key", ["vocab_size", "n_embd", "n_layer", "n_head"])
def test_missing_gpt2_key(key):
    raw = _raw("gpt2-124m")
    del raw[key]
    _err(raw, "missing required key", f"'{key}'")


def test_missing_positions():
    raw = _raw("gpt2-124m")
    del raw["n_positions"]
    _err(raw, "'n_positions'", "block_size")


def test_block_size_alias():
    raw = _raw("gpt2-124m")
    raw["block_size"] = raw.pop("n_positions")
    assert config_from_dict(raw).max_positions == 1024


@pytest.mark.parametrize("key", ["hidden_size", "intermediate_size", "num_hidden_layers",
                                 "num_attention_heads", "max_position_embeddings",
                                 "num_local_experts", "num_experts_per_tok"])
def test_missing_mixtral_key(key):
    raw = _raw("mixtral-8x7b")
    del raw[key]
    _err(raw, f"'{key}'")


def test_missing_model_type():
    raw = _raw("llama3-8b")
    del raw["model_type"]
    _err(raw, "'model_type'")


def test_unknown_model_type():
    raw = _raw("llama3-8b")
    raw["model_type"] = "bert"
    _err(raw, "unknown 'model_type'", "'bert'", "llama")


def test_heads_do_not_divide_hidden():
    raw = _raw("gpt2-124m")
    raw["n_head"] = 7
    _err(raw, "'n_head' = 7", "'n_embd' = 768")
    raw = _raw("llama3-8b")
    raw["num_attention_heads"] = 30
    _err(raw, "'num_attention_heads' = 30", "'hidden_size' = 4096")


def test_kv_heads_do_not_divide_heads():
    raw = _raw("llama3-8b")
    raw["num_key_value_heads"] = 5
    _err(raw, "'num_key_value_heads' = 5", "'num_attention_heads' = 32")


def test_topk_exceeds_experts():
    raw = _raw("mixtral-8x7b")
    raw["num_experts_per_tok"] = 9
    _err(raw, "'num_experts_per_tok' = 9", "'num_local_experts' = 8")


@pytest.mark.parametrize("key,value", [("n_layer", "12"), ("n_layer", 0), ("n_layer", 2.5),
                                       ("n_layer", True), ("vocab_size", -1)])
def test_bad_int_values(key, value):
    raw = _raw("gpt2-124m")
    raw[key] = value
    _err(raw, f"'{key}'", repr(value))


@pytest.mark.parametrize("key,value", [("dropout", 1.0), ("dropout", -0.1), ("layer_norm_epsilon", 0),
                                       ("bias", "no"), ("activation_function", "relu"),
                                       ("attn_pdrop", 0.1)])
def test_bad_gpt2_values(key, value):
    raw = _raw("nanogpt-shakespeare-char")
    raw[key] = value
    _err(raw, f"'{key}'", repr(value))


def test_bad_llama_act():
    raw = _raw("llama3-8b")
    raw["hidden_act"] = "gelu"
    _err(raw, "'hidden_act'", "'gelu'")


def test_rope_scaling_warns_not_fails():
    raw = _raw("llama3.1-405b")
    raw["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}
    with pytest.warns(UserWarning, match="rope_scaling"):
        config_from_dict(raw)


def test_not_an_object():
    with pytest.raises(ConfigError, match="JSON object"):
        config_from_dict([1, 2])


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.json")


def test_invalid_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{ not json")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_config(p)


def test_hf_directory_layout_name(tmp_path):
    d = tmp_path / "my-model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(_raw("gpt2-124m")))
    assert load_config(d / "config.json").name == "my-model"


def test_seq_exceeds_positions():
    cfg = load_config(config_path("gpt2-124m"))
    with pytest.raises(ConfigError) as ei:
        build_model(cfg, 2, 1025)
    assert "seq 1025" in str(ei.value) and "'n_positions' = 1024" in str(ei.value)
    cfg = load_config(config_path("llama3-8b"))
    with pytest.raises(ConfigError, match="'max_position_embeddings' = 8192"):
        build_model(cfg, 1, 8193)


@pytest.mark.parametrize("kw,word", [
    (dict(batch=0), "batch"), (dict(seq=0), "seq"), (dict(batch=1.5), "batch"),
    (dict(vocab_multiple=0), "vocab_multiple"), (dict(dtype="f8"), "dtype"),
    (dict(dropout=1.5), "dropout"), (dict(capacity_factor=1.0), "capacity_factor"),
])
def test_bad_build_options(kw, word):
    cfg = load_config(config_path("gpt2-124m"))
    args = dict(batch=2, seq=64)
    args.update(kw)
    b, s = args.pop("batch"), args.pop("seq")
    with pytest.raises(ConfigError, match=word):
        build_model(cfg, b, s, **args)


@pytest.mark.parametrize("kw,word", [
    (dict(max_tokens_per_expert=0), r"max_tokens_per_expert must be an integer in \[1, seq = 8\]"),
    (dict(max_tokens_per_expert=9), r"in \[1, seq = 8\].*got 9"),
    (dict(max_tokens_per_expert=2.5), "max_tokens_per_expert"),
    (dict(max_tokens_per_expert=4, capacity_factor=1.0), "exclude each other"),
])
def test_bad_max_tokens_per_expert(kw, word):
    cfg = load_config(config_path("mixtral-8x7b"))
    with pytest.raises(ConfigError, match=word):
        build_model(cfg, 1, 8, **kw)


def test_max_tokens_per_expert_needs_moe():
    cfg = load_config(config_path("gpt2-124m"))
    with pytest.raises(ConfigError, match="only applies to MoE"):
        build_model(cfg, 1, 8, max_tokens_per_expert=4)


def test_bad_capacity_factor():
    cfg = load_config(config_path("mixtral-8x7b"))
    for cf in (0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="capacity_factor"):
            build_model(cfg, 1, 8, capacity_factor=cf)


def test_dropout_only_for_gpt2():
    cfg = load_config(config_path("llama3-8b"))
    with pytest.raises(ConfigError, match="dropout"):
        build_model(cfg, 1, 8, dropout=0.1)


# --------------------------------------------------------------------------- CLI


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-m", "autoshard.models", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_writes_ir_and_prints_count(tmp_path):
    out = tmp_path / "m.mlir"
    r = _cli(config_path("gpt2-124m"), "--batch", "2", "--seq", "64", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "gpt2-124m: 124439808 parameters (124.4M)"
    text = out.read_text()
    assert text.count("func.call @gpt2_block") == 12
    assert oct(out.stat().st_mode & 0o777) != "0o600"


def test_cli_stdout_and_quiet():
    r = _cli(config_path("mixtral-8x7b"), "--batch", "1", "--seq", "16", "--quiet",
             "--capacity-factor", "2", "--vocab-multiple", "64", "--dtype", "bf16")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "capacity = 8 : i64" in r.stdout  # ceil(2 * 16 * 2 / 8) and "xbf16>" in r.stdout


def test_cli_mixtral_count():
    r = _cli(config_path("mixtral-8x7b"), "--batch", "1", "--seq", "16", "-o", os.devnull)
    assert r.returncode == 0
    assert r.stderr.strip() == "mixtral-8x7b: 46702792704 parameters (46.70B)"


@pytest.mark.parametrize("args,word", [
    (["--batch", "2", "--seq", "4096"], "'n_positions' = 1024"),
    (["--batch", "0", "--seq", "64"], "batch"),
    (["--batch", "2", "--seq", "64", "--vocab-multiple", "0"], "vocab_multiple"),
    (["--batch", "2", "--seq", "64", "--capacity-factor", "1.5"], "capacity_factor"),
])
def test_cli_bad_options(args, word):
    r = _cli(config_path("gpt2-124m"), *args)
    assert r.returncode == 2
    assert word in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.startswith("autoshard.models: error:")
    assert r.stdout == ""


def test_cli_bad_config(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"model_type": "gpt2", "vocab_size": 10, "n_embd": 30, "n_layer": 1,
                             "n_head": 4, "n_positions": 8}))
    r = _cli(str(p), "--batch", "1", "--seq", "4")
    assert r.returncode == 2 and "'n_head' = 4" in r.stderr and "Traceback" not in r.stderr
    r = _cli(str(tmp_path / "missing.json"), "--batch", "1", "--seq", "4")
    assert r.returncode == 2 and "cannot read config" in r.stderr


def test_cli_missing_required_args():
    r = _cli(config_path("gpt2-124m"))
    assert r.returncode == 2 and "--batch" in r.stderr


def test_cli_unwritable_output(tmp_path):
    r = _cli(config_path("nanogpt-shakespeare-char-cpu"), "--batch", "1", "--seq", "4",
             "-o", str(tmp_path / "no" / "such" / "dir" / "m.mlir"))
    assert r.returncode == 1 and "cannot write" in r.stderr
