"""int64 limits, null keys, unknown-key warnings and scripts/compile_model.sh options."""

import json
import os
import subprocess
import sys
import warnings

import pytest

from conftest import CONFIG_DIR, PYTHON_DIR, REPO_ROOT, config_names

from autoshard.models import (ConfigError, ConfigWarning, build_model, config_from_dict,
                              count_parameters, load_config, parameter_specs)
from autoshard.models.config import HF_COMMON_KEYS, INT64_MAX, KNOWN_KEYS

GPT2 = {"model_type": "gpt2", "vocab_size": 65, "n_positions": 64, "n_embd": 128,
        "n_layer": 2, "n_head": 4}
LLAMA = {"model_type": "llama", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 64}
MIXTRAL = dict(LLAMA, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2)


def _cfg(base, **kw):
    raw = dict(base)
    raw.update(kw)
    return raw


def _err(raw, *words):
    with pytest.raises(ConfigError) as ei:
        config_from_dict(raw, name="t")
    msg = str(ei.value)
    for w in words:
        assert w in msg, (w, msg)
    return msg


def _no_warnings(raw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return config_from_dict(raw, name="t")


# ------------------------------------------------------------------ int64 limits


@pytest.mark.parametrize("key", ["n_embd", "vocab_size", "n_layer", "n_inner", "n_positions"])
def test_key_beyond_int64(key):
    _err(_cfg(GPT2, **{key: 2**63}), f"key '{key}' = {2**63} does not fit in int64")


def test_int64_max_itself_is_an_integer_value():
    # The key reader accepts INT64_MAX; the derived shapes are what overflow.
    cfg = config_from_dict(_cfg(GPT2, n_layer=INT64_MAX), name="t")
    assert cfg.num_layers == INT64_MAX
    with pytest.raises(ConfigError, match="parameter count .* does not fit in int64"):
        count_parameters(cfg)


def test_default_ffn_beyond_int64():
    _err(_cfg(GPT2, n_embd=2**62, n_head=1), "'n_inner' = 4 * 'n_embd'", "set 'n_inner'")


def test_parameter_shape_beyond_int64():
    # n_embd = 10^12: each attention matrix has 10^24 elements (it used to be
    # emitted, with a parameter count of ~2.4e25 as an i64).
    cfg = config_from_dict(_cfg(GPT2, n_embd=10**12), name="t")
    with pytest.raises(ConfigError) as ei:
        build_model(cfg, 1, 8)
    msg = str(ei.value)
    assert "parameter 'layers.0.attn.wq' of shape [1000000000000, 1000000000000]" in msg
    assert "does not fit in int64" in msg


def test_padded_vocab_shape_beyond_int64():
    cfg = config_from_dict(_cfg(GPT2, vocab_size=2**40, n_embd=2**23, n_head=1), name="t")
    with pytest.raises(ConfigError, match="parameter 'wte' of shape .* does not fit in int64"):
        parameter_specs(cfg)


def test_parameter_count_beyond_int64_is_fast():
    # 2^40 layers of ~2^27 parameters: rejected before any per-layer list is built.
    cfg = config_from_dict(_cfg(GPT2, n_layer=2**40, n_embd=2**12, n_head=1), name="t")
    with pytest.raises(ConfigError, match=r"the parameter count \d+ does not fit in int64"):
        count_parameters(cfg)


def test_activation_beyond_int64():
    cfg = config_from_dict(GPT2, name="t")
    with pytest.raises(ConfigError) as ei:
        build_model(cfg, 2**60, 8)
    msg = str(ei.value)
    assert f"with batch {2**60} and seq 8" in msg and "does not fit in int64" in msg


@pytest.mark.parametrize("kw,word", [
    (dict(batch=2**63), "option batch"),
    (dict(seq=2**63), "option seq"),
    (dict(vocab_multiple=2**63), "padded vocab size"),
])
def test_options_beyond_int64(kw, word):
    cfg = config_from_dict(_cfg(GPT2, n_positions=INT64_MAX), name="t")
    args = dict(batch=1, seq=8)
    args.update(kw)
    with pytest.raises(ConfigError, match=word):
        build_model(cfg, args.pop("batch"), args.pop("seq"), **args)


def test_float_key_beyond_float_range():
    _err(_cfg(GPT2, layer_norm_epsilon=10**400), "'layer_norm_epsilon' must be a finite number")


def test_largest_fitting_sizes_still_build():
    # Sizes near but inside the limit are not rejected by the checks.
    cfg = config_from_dict(_cfg(GPT2, vocab_size=2**31, n_embd=2**16, n_head=2**4), name="t")
    n = count_parameters(cfg)
    assert n < INT64_MAX


# ------------------------------------------------------------------ null keys


@pytest.mark.parametrize("key", ["n_embd", "vocab_size", "n_head", "n_layer"])
def test_null_required_key(key):
    msg = _err(_cfg(GPT2, **{key: None}), f"key '{key}' is null")
    assert "missing" not in msg


def test_null_positions():
    msg = _err(_cfg(GPT2, n_positions=None), "key 'n_positions' is null", "block_size")
    assert "missing" not in msg


def test_null_model_type():
    _err(_cfg(GPT2, model_type=None), "key 'model_type' is null")


def test_missing_key_still_says_missing():
    raw = dict(GPT2)
    del raw["n_embd"]
    _err(raw, "missing required key 'n_embd'")


def test_null_optional_key_takes_default():
    # HF's gpt2 config.json has "n_inner": null.
    cfg = config_from_dict(_cfg(GPT2, n_inner=None), name="t")
    assert cfg.ffn_hidden_size == 4 * 128


# ------------------------------------------------------------------ unknown keys


def test_unknown_key_warns():
    with pytest.warns(ConfigWarning, match=r"unknown config key 'n_embdd' \(ignored\)"):
        config_from_dict(_cfg(GPT2, n_embdd=256), name="t")


def test_key_of_another_model_type_warns():
    with pytest.warns(ConfigWarning, match="'num_local_experts'"):
        config_from_dict(_cfg(LLAMA, num_local_experts=8), name="t")


def test_one_warning_per_unknown_key():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config_from_dict(_cfg(GPT2, foo=1, bar=2), name="t")
    assert [str(w.message) for w in caught] == ["unknown config key 'foo' (ignored)",
                                                "unknown config key 'bar' (ignored)"]


def test_real_hf_gpt2_config_does_not_warn():
    # openai-community/gpt2's config.json.
    raw = {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.0, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": None, "n_layer": 12,
        "n_positions": 1024, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "torch_dtype": "float32", "transformers_version": "4.41.0", "use_cache": True,
        "vocab_size": 50257, "_name_or_path": "gpt2",
    }
    assert _no_warnings(raw).hidden_size == 768


def test_real_hf_llama_and_mixtral_configs_do_not_warn():
    llama = _cfg(LLAMA, architectures=["LlamaForCausalLM"], attention_bias=False,
                 attention_dropout=0.0, bos_token_id=128000, eos_token_id=128001,
                 hidden_act="silu", initializer_range=0.02, mlp_bias=False, pretraining_tp=1,
                 rms_norm_eps=1e-05, rope_scaling=None, rope_theta=500000.0,
                 tie_word_embeddings=False, torch_dtype="bfloat16",
                 transformers_version="4.43.0.dev0", use_cache=True, head_dim=16)
    _no_warnings(llama)
    mixtral = _cfg(MIXTRAL, architectures=["MixtralForCausalLM"], attention_dropout=0.0,
                   bos_token_id=1, eos_token_id=2, output_router_logits=False,
                   router_aux_loss_coef=0.02, router_jitter_noise=0.0, sliding_window=None,
                   torch_dtype="bfloat16", transformers_version="4.36.0.dev0", use_cache=True)
    _no_warnings(mixtral)


@pytest.mark.parametrize("name", config_names())
def test_shared_configs_do_not_warn(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_config(os.path.join(CONFIG_DIR, name + ".json"))


def test_known_key_lists_cover_what_the_readers_use():
    assert "n_embd" in KNOWN_KEYS["gpt2"] and "block_size" in KNOWN_KEYS["gpt2"]
    assert "num_local_experts" in KNOWN_KEYS["mixtral"]
    assert "num_local_experts" not in KNOWN_KEYS["llama"]
    assert {"architectures", "torch_dtype", "transformers_version", "bos_token_id",
            "eos_token_id", "use_cache"} <= HF_COMMON_KEYS


# ------------------------------------------------------------------ CLI


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    return subprocess.run([sys.executable, "-m", "autoshard.models", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_prints_unknown_key_warning(tmp_path):
    p = tmp_path / "typo.json"
    p.write_text(json.dumps(_cfg(GPT2, n_embdd=256)))
    r = _cli(str(p), "--batch", "1", "--seq", "8", "-o", os.devnull)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "autoshard.models: warning: unknown config key 'n_embdd' (ignored)"
    assert "Warning" not in r.stderr  # not Python's default warning format


def test_cli_warning_comes_before_the_error_it_explains(tmp_path):
    raw = _cfg(GPT2, n_embdd=256)
    del raw["n_embd"]
    p = tmp_path / "typo.json"
    p.write_text(json.dumps(raw))
    r = _cli(str(p), "--batch", "1", "--seq", "8")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "autoshard.models: warning: unknown config key 'n_embdd' (ignored)",
        f"autoshard.models: error: {p}: missing required key 'n_embd'"]


def test_cli_overflow_is_a_config_error(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(_cfg(GPT2, n_embd=10**12)))
    r = _cli(str(p), "--batch", "1", "--seq", "8")
    assert r.returncode == 2 and "does not fit in int64" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


# ------------------------------------------------------------------ compile_model.sh

SCRIPT = os.path.join(REPO_ROOT, "scripts", "compile_model.sh")


def _script(*args, **env):
    return subprocess.run(["bash", SCRIPT, *args], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=300)


def test_script_help():
    r = _script("--help")
    assert r.returncode == 0 and r.stdout.startswith("Usage: scripts/compile_model.sh")
    assert "--dtype" in r.stdout
    assert _script("cfg.json", "-h").returncode == 0


@pytest.mark.parametrize("args,opt", [(["--batch"], "--batch"), (["--seq"], "--seq"),
                                      (["-o"], "-o"), (["x.json", "--seq", "--batch", "2"], "--seq")])
def test_script_option_without_value(args, opt):
    r = _script(*args)
    assert r.returncode == 2
    assert f"compile_model.sh: option '{opt}' needs a value" in r.stderr
    assert "unbound variable" not in r.stderr


def test_script_passes_other_options_to_the_builder(tmp_path, shard_opt):
    # A BUILD_DIR with the tools it looks for, so that setup.sh is not run.
    (tmp_path / "bin").mkdir()
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    os.symlink(os.path.abspath(shard_opt), tmp_path / "bin" / "shard-opt")
    os.symlink(sys.executable, tmp_path / "venv" / "bin" / "python")
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps(GPT2))
    out = tmp_path / "m.mlir"
    r = _script(str(cfg), "--batch", "2", "--seq", "8", "--dtype", "bf16",
                "--vocab-multiple", "64", "-o", str(out), BUILD_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "xbf16>" in text and "padded_vocab_size = 128 : i64" in text
    r = _script(str(cfg), "--batch", "2", "--seq", "8", "--bogus", BUILD_DIR=str(tmp_path))
    assert r.returncode == 2 and "--bogus" in r.stderr


def test_cli_writes_into_a_pipe_instead_of_replacing_it(tmp_path):
    # `-o /dev/null` used to rename a temporary file over the device node.
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps(GPT2))
    r = _cli(str(cfg), "--batch", "1", "--seq", "8", "-q", "-o", str(fifo))
    reader.join(timeout=60)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert received and "func.func @forward" in received[0]
