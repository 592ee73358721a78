"""The Hugging Face weight map (autoshard.models.hf, docs/hf-checkpoints.md).

* For GPT-2 (biases and nanoGPT's bias-free layers, tied and untied),
  Llama (GQA, attention/MLP biases, tied and untied) and Mixtral: the parts
  of every tensor cover it exactly once, the parts naming each parameter
  cover its logical shape exactly once, and the tensor names and shapes are
  transformers' (listed here for tiny configs; and, when the peer venv with
  transformers is there, compared with what ``save_pretrained`` writes for a
  model built from the exported config).
* The exported config parses, round-trips through ``config_from_dict`` to
  the same model, and carries no key this package would warn about.
* Incompatible builds carry ``hf_incompatible`` with the reason.
* The map survives ``shard-opt`` (print/parse, generic form, tfm-autodiff)
  and ``--rt-export`` keeps it in the artifact's ``model.hf``.
* Config exactness: rope_parameters, the Mixtral aux-loss switch and
  defaults, nulls, transformers 5's own config.json files.
"""

import dataclasses
import json
import os
import subprocess
import sys
import warnings

import pytest

from conftest import peer_python, PYTHON_DIR, find_shard_opt

from autoshard.models import (ConfigError, ConfigWarning, build_model, config_from_dict,
                              parameter_specs)
from autoshard.models import hf

TINY = {
    "gpt2": {"model_type": "gpt2", "vocab_size": 11, "n_positions": 8, "n_embd": 16,
             "n_layer": 1, "n_head": 4, "activation_function": "gelu_new",
             "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True},
    "llama": {"model_type": "llama", "vocab_size": 11, "hidden_size": 16,
              "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
              "num_key_value_heads": 2, "max_position_embeddings": 8},
    "mixtral": {"model_type": "mixtral", "vocab_size": 11, "hidden_size": 16,
                "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 8,
                "num_local_experts": 3, "num_experts_per_tok": 2},
}

# What transformers 5.24's save_pretrained writes for TINY (model.safetensors).
GPT2_TENSORS = {
    "transformer.wte.weight": [11, 16], "transformer.wpe.weight": [8, 16],
    "transformer.h.0.ln_1.weight": [16], "transformer.h.0.ln_1.bias": [16],
    "transformer.h.0.attn.c_attn.weight": [16, 48], "transformer.h.0.attn.c_attn.bias": [48],
    "transformer.h.0.attn.c_proj.weight": [16, 16], "transformer.h.0.attn.c_proj.bias": [16],
    "transformer.h.0.ln_2.weight": [16], "transformer.h.0.ln_2.bias": [16],
    "transformer.h.0.mlp.c_fc.weight": [16, 64], "transformer.h.0.mlp.c_fc.bias": [64],
    "transformer.h.0.mlp.c_proj.weight": [64, 16], "transformer.h.0.mlp.c_proj.bias": [16],
    "transformer.ln_f.weight": [16], "transformer.ln_f.bias": [16],
}
_ATTN = {
    "model.layers.0.self_attn.q_proj.weight": [16, 16],
    "model.layers.0.self_attn.k_proj.weight": [8, 16],
    "model.layers.0.self_attn.v_proj.weight": [8, 16],
    "model.layers.0.self_attn.o_proj.weight": [16, 16],
    "model.layers.0.input_layernorm.weight": [16],
    "model.layers.0.post_attention_layernorm.weight": [16],
    "model.embed_tokens.weight": [11, 16], "model.norm.weight": [16], "lm_head.weight": [11, 16],
}
LLAMA_TENSORS = dict(_ATTN, **{
    "model.layers.0.mlp.gate_proj.weight": [32, 16],
    "model.layers.0.mlp.up_proj.weight": [32, 16],
    "model.layers.0.mlp.down_proj.weight": [16, 32],
})
LLAMA_BIASES = {
    "model.layers.0.self_attn.q_proj.bias": [16], "model.layers.0.self_attn.k_proj.bias": [8],
    "model.layers.0.self_attn.v_proj.bias": [8], "model.layers.0.self_attn.o_proj.bias": [16],
    "model.layers.0.mlp.gate_proj.bias": [32], "model.layers.0.mlp.up_proj.bias": [32],
    "model.layers.0.mlp.down_proj.bias": [16],
}
MIXTRAL_TENSORS = dict(_ATTN, **{"model.layers.0.block_sparse_moe.gate.weight": [3, 16]})
for _e in range(3):
    MIXTRAL_TENSORS.update({
        f"model.layers.0.block_sparse_moe.experts.{_e}.w1.weight": [32, 16],
        f"model.layers.0.block_sparse_moe.experts.{_e}.w2.weight": [16, 32],
        f"model.layers.0.block_sparse_moe.experts.{_e}.w3.weight": [32, 16],
    })


def _cfg(family, **kw):
    raw = dict(TINY[family])
    raw.update(kw)
    return config_from_dict(raw, name=f"tiny-{family}")


def _map(cfg, vocab_multiple=8):
    params = parameter_specs(cfg, vocab_multiple)
    wm = hf.weight_map(cfg, params)
    hf.verify(wm, params)
    return wm, params


def _shapes(wm):
    return {t.name: list(t.shape) for t in wm.tensors}


def _summary_entry(text):
    """The hf / hf_incompatible entry of the builder's tfm.model line."""
    head = [l for l in text.splitlines() if l.startswith("module attributes")][0]
    if ", hf_incompatible = " in head:
        return "hf_incompatible", head.split(", hf_incompatible = ", 1)[1]
    assert ", hf = {" in head, head[:500]
    return "hf", head.split(", hf = ", 1)[1]


# --------------------------------------------------------------------------- names and shapes


CASES = {
    "gpt2": ({}, GPT2_TENSORS, ["lm_head.weight"]),
    "gpt2-untied": ({"tie_word_embeddings": False},
                    dict(GPT2_TENSORS, **{"lm_head.weight": [11, 16]}), []),
    "nanogpt": ({"model_type": "nanogpt", "bias": False, "activation_function": "gelu",
                 "block_size": 8, "n_positions": None, "dropout": 0.0},
                GPT2_TENSORS, ["lm_head.weight"]),
    "llama": ({}, LLAMA_TENSORS, []),
    "llama-biases": ({"attention_bias": True, "mlp_bias": True},
                     dict(LLAMA_TENSORS, **LLAMA_BIASES), []),
    "llama-tied": ({"tie_word_embeddings": True},
                   {k: v for k, v in LLAMA_TENSORS.items() if k != "lm_head.weight"},
                   ["lm_head.weight"]),
    "mixtral": ({}, MIXTRAL_TENSORS, []),
}


def _family(case):
    return case.split("-")[0].replace("nanogpt", "gpt2")


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("vocab_multiple", [1, 8])
def test_names_shapes_and_exact_cover(case, vocab_multiple):
    kw, want, tied = CASES[case]
    cfg = _cfg(_family(case), **kw)
    wm, params = _map(cfg, vocab_multiple)  # verify(): exact covers both ways
    assert _shapes(wm) == want
    assert list(wm.tied) == tied
    assert wm.architecture == {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                               "mixtral": "MixtralForCausalLM"}[_family(case)]
    assert wm.prefix == ("transformer." if _family(case) == "gpt2" else "model.")
    assert all(t.name.startswith(wm.prefix) or t.name == "lm_head.weight" for t in wm.tensors)
    # every parameter is named by some part, every part box fits its tensor
    named = {q.param for t in wm.tensors for q in t.parts}
    assert {p.name for p in params} <= named


def test_nanogpt_bias_free_exports_zero_biases():
    wm, params = _map(_cfg("gpt2", bias=False))
    t = {x.name: x for x in wm.tensors}
    for name in ("transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.bias",
                 "transformer.h.0.attn.c_proj.bias", "transformer.h.0.mlp.c_fc.bias",
                 "transformer.ln_f.bias"):
        (part,) = t[name].parts
        assert part.param == "" and part.param_begin == () and part.hf_shape == t[name].shape
    assert not any("bias" in p.name or p.name.endswith(".b_fc") for p in params)


def test_gpt2_fused_qkv_columns():
    wm, _ = _map(_cfg("gpt2"))
    t = {x.name: x for x in wm.tensors}
    w = t["transformer.h.0.attn.c_attn.weight"].parts
    assert [(q.param, q.hf_begin, q.hf_shape, q.param_begin, q.transpose) for q in w] == [
        ("layers.0.attn.wq", (0, 0), (16, 16), (0, 0), False),
        ("layers.0.attn.wk", (0, 16), (16, 16), (0, 0), False),
        ("layers.0.attn.wv", (0, 32), (16, 16), (0, 0), False)]
    b = t["transformer.h.0.attn.c_attn.bias"].parts
    assert [(q.param, q.hf_begin) for q in b] == [
        ("layers.0.attn.bq", (0,)), ("layers.0.attn.bk", (16,)), ("layers.0.attn.bv", (32,))]


def test_padded_vocab_is_not_covered():
    cfg = _cfg("llama")
    wm, params = _map(cfg, vocab_multiple=8)
    p = {x.name: x for x in params}
    assert p["tok_embeddings"].shape == (16, 16) and p["tok_embeddings"].logical_shape == (11, 16)
    assert p["lm_head"].shape == (16, 16) and p["lm_head"].logical_shape == (16, 11)
    t = {x.name: x for x in wm.tensors}
    (emb,) = t["model.embed_tokens.weight"].parts
    assert (emb.param, emb.hf_shape, emb.param_shape) == ("tok_embeddings", (11, 16), (11, 16))
    (head,) = t["lm_head.weight"].parts
    # lm_head [H, Vp] <- lm_head.weight [V, H] transposed: columns [0, V) only
    assert (head.param, head.hf_shape, head.transpose, head.param_shape) == \
        ("lm_head", (11, 16), True, (16, 11))


def test_llama_projections_are_transposed():
    wm, _ = _map(_cfg("llama"))
    for t in wm.tensors:
        (q,) = t.parts
        if t.name.endswith("_proj.weight") or t.name == "lm_head.weight":
            assert q.transpose and q.param_shape == (t.shape[1], t.shape[0]), t.name
        else:
            assert not q.transpose, t.name


def test_mixtral_router_and_experts():
    wm, _ = _map(_cfg("mixtral"))
    t = {x.name: x for x in wm.tensors}
    (g,) = t["model.layers.0.block_sparse_moe.gate.weight"].parts
    assert (g.param, g.transpose, g.param_shape) == ("layers.0.moe.router", True, (16, 3))
    for e in range(3):
        pre = f"model.layers.0.block_sparse_moe.experts.{e}."
        for hf_w, ours, pshape in (("w1", "w_gate", (1, 16, 32)), ("w2", "w_down", (1, 32, 16)),
                                   ("w3", "w_up", (1, 16, 32))):
            (q,) = t[pre + hf_w + ".weight"].parts
            assert (q.param, q.param_begin, q.squeeze, q.transpose, q.param_shape) == \
                (f"layers.0.moe.experts.{ours}", (e, 0, 0), 1, True, pshape)


def test_verify_catches_gaps_overlaps_and_strays():
    wm, params = _map(_cfg("llama"))
    t0 = wm.tensors[0]
    q = t0.parts[0]
    short = dataclasses.replace(q, hf_shape=(10, 16))
    bad = dataclasses.replace(wm, tensors=(dataclasses.replace(t0, parts=(short,)),)
                              + wm.tensors[1:])
    with pytest.raises(ValueError, match="cover 160 of 176"):
        hf.verify(bad, params)
    twice = dataclasses.replace(wm, tensors=wm.tensors + (dataclasses.replace(t0, name="x"),))
    with pytest.raises(ValueError, match="overlap"):
        hf.verify(twice, params)
    stray = dataclasses.replace(t0, parts=(dataclasses.replace(q, param="nope"),))
    with pytest.raises(ValueError, match="unknown parameter 'nope'"):
        hf.verify(dataclasses.replace(wm, tensors=(stray,) + wm.tensors[1:]), params)
    with pytest.raises(ValueError, match="'tok_embeddings' is not in the map"):
        hf.verify(dataclasses.replace(wm, tensors=wm.tensors[1:]), params)


# --------------------------------------------------------------------------- export config


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_config_round_trips(case):
    kw, _, _ = CASES[case]
    cfg = _cfg(_family(case), **kw)
    wm, _ = _map(cfg)
    text = wm.config_json()
    raw = json.loads(text)
    assert raw == wm.config
    assert text.isascii()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown key, no ignored RoPE dict
        back = config_from_dict(raw, name=cfg.name)
    ignore = {"source", "activation_function", "token_ids"}
    if case == "nanogpt":
        # bias: false is exported as GPT-2 with zero biases: the same
        # function, now with (zero) bias parameters.
        ignore |= {"norm_bias", "attn_bias", "mlp_bias"}
        assert (back.norm_bias, back.attn_bias, back.mlp_bias) == (True, True, True)
    a = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ignore}
    b = {k: v for k, v in dataclasses.asdict(back).items() if k not in ignore}
    assert a == b
    wm2, _ = _map(back)
    assert _shapes(wm2) == _shapes(wm) and wm2.config == wm.config
    if case != "nanogpt":
        assert wm2.tensors == wm.tensors
    # every checked key is in the config, and has a default
    assert set(wm.check) <= set(raw) and set(wm.check) == set(wm.defaults)


def test_export_config_values():
    cfg = _cfg("llama", rope_parameters={"rope_theta": 5e5, "rope_type": "default"},
               head_dim=8, num_attention_heads=2, num_key_value_heads=1)
    c = hf.weight_map(cfg, parameter_specs(cfg)).config
    assert c["rope_theta"] == 5e5 and c["rope_parameters"] == {"rope_theta": 5e5,
                                                              "rope_type": "default"}
    assert (c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]) == (8, 2, 1)
    g = _cfg("gpt2", dropout=0.1, activation_function="gelu_pytorch_tanh", n_inner=None)
    c = hf.weight_map(g, parameter_specs(g)).config
    assert (c["resid_pdrop"], c["embd_pdrop"], c["attn_pdrop"]) == (0.1, 0.1, 0.0)
    assert c["activation_function"] == "gelu_pytorch_tanh" and c["n_inner"] == 64
    assert c["bos_token_id"] is None and c["eos_token_id"] is None  # 50256 >= V = 11
    m = _cfg("mixtral", output_router_logits=True, router_aux_loss_coef=0.1,
             bos_token_id=1, eos_token_id=[2, 3], sliding_window=8)
    c = hf.weight_map(m, parameter_specs(m)).config
    assert (c["output_router_logits"], c["router_aux_loss_coef"], c["sliding_window"]) == \
        (True, 0.1, 8)
    assert (c["bos_token_id"], c["eos_token_id"]) == (1, [2, 3])
    assert "attention_bias" not in c and "mlp_bias" not in c


def test_defaults_of_checked_keys():
    l = hf.weight_map(_cfg("llama"), parameter_specs(_cfg("llama")))
    # an absent num_key_value_heads is num_attention_heads (of this model)
    assert l.defaults["num_key_value_heads"] == 4 and l.defaults["rms_norm_eps"] == 1e-6
    m = hf.weight_map(_cfg("mixtral"), parameter_specs(_cfg("mixtral")))
    assert m.defaults["num_key_value_heads"] == 8 and m.defaults["sliding_window"] is None
    assert json.loads(m.defaults_json()) == m.defaults


def test_vocab_size_override_is_exported(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(TINY["llama"]))
    r = subprocess.run([sys.executable, "-m", "autoshard.models", str(p), "--batch", "1",
                        "--seq", "8", "--vocab-size", "13", "--vocab-multiple", "8", "-q"],
                       env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    kind, _ = _summary_entry(r.stdout)
    assert kind == "hf"
    assert '\\22vocab_size\\22: 13' in r.stdout or '\\"vocab_size\\": 13' in r.stdout
    assert 'name = "model.embed_tokens.weight", shape = array<i64: 13, 16>' in r.stdout


# --------------------------------------------------------------------------- incompatibility


def _built_entry(cfg, seq=8, **kw):
    return _summary_entry(build_model(cfg, 1, seq, **kw))


def test_capacity_factor_below_dropless_is_incompatible():
    cfg = _cfg("mixtral")
    kind, text = _built_entry(cfg, capacity_factor=1.0)  # C = ceil(8 * 2 / 3) = 6 < 8
    assert kind == "hf_incompatible"
    assert "expert capacity 6 < seq 8" in text and "dropless" in text
    # a factor so large that C = S drops nothing: the dropless model
    assert _built_entry(cfg, capacity_factor=100.0)[0] == "hf"
    assert _built_entry(cfg)[0] == "hf"


def test_rope_scaling_warns_and_is_incompatible():
    with pytest.warns(ConfigWarning, match="rope_scaling.*'llama3'.*ignored"):
        cfg = _cfg("llama", rope_scaling={"rope_type": "llama3", "factor": 8.0})
    kind, text = _built_entry(cfg)
    assert kind == "hf_incompatible" and "RoPE type 'llama3' is not modelled" in text
    with pytest.warns(ConfigWarning, match="rope_parameters.*'linear'"):
        cfg = _cfg("llama", rope_parameters={"rope_type": "linear", "factor": 2.0})
    assert "'linear'" in _built_entry(cfg)[1]
    with pytest.warns(ConfigWarning, match="'yarn'"):  # legacy spelling "type"
        _cfg("mixtral", rope_scaling={"type": "yarn", "factor": 2.0})


def test_sliding_window():
    cfg = _cfg("mixtral", sliding_window=4)
    with pytest.warns(ConfigWarning, match="'sliding_window' = 4 is shorter than seq 8"):
        kind, text = _built_entry(cfg, seq=8)
    assert kind == "hf_incompatible" and "'sliding_window' = 4 < seq 8" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kind, _ = _built_entry(cfg, seq=4)  # exact up to the window
    assert kind == "hf"


def test_gpt2_head_dim_other_than_n_embd_over_n_head_is_incompatible():
    cfg = _cfg("gpt2", head_dim=8)
    kind, text = _built_entry(cfg)
    assert kind == "hf_incompatible" and "'head_dim' = 8" in text
    assert _built_entry(_cfg("gpt2", head_dim=4))[0] == "hf"


def test_reasons_are_joined():
    with pytest.warns(ConfigWarning):
        cfg = _cfg("mixtral", rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    kind, text = _built_entry(cfg, capacity_factor=1.0)
    assert kind == "hf_incompatible" and "'dynamic'" in text and "; expert capacity" in text


# --------------------------------------------------------------------------- config exactness


def _err(family, *words, **kw):
    with pytest.raises(ConfigError) as ei:
        _cfg(family, **kw)
    for w in words:
        assert w in str(ei.value), (w, str(ei.value))


def test_rope_parameters_theta():
    assert _cfg("llama", rope_parameters={"rope_theta": 1e6, "rope_type": "default"}) \
        .rope_theta == 1e6
    assert _cfg("llama", rope_theta=5e5).rope_theta == 5e5
    assert _cfg("llama").rope_theta == 10000.0
    assert _cfg("llama", rope_theta=5e5, rope_parameters={"rope_type": "default"}) \
        .rope_theta == 5e5
    assert _cfg("llama", rope_theta=5e5, rope_parameters={"rope_theta": 5e5,
                                                           "rope_type": "default"}).rope_theta == 5e5
    assert _cfg("llama", rope_scaling=None, rope_parameters=None).rope_theta == 10000.0
    _err("llama", "'rope_theta' = 1000000.0", "top-level 'rope_theta' = 500000.0", "agree",
         rope_theta=5e5, rope_parameters={"rope_theta": 1e6, "rope_type": "default"})
    _err("llama", "both 'rope_scaling' and 'rope_parameters'",
         rope_scaling={"rope_type": "linear", "factor": 2.0},
         rope_parameters={"rope_theta": 1e6, "rope_type": "default"})
    _err("llama", "'rope_parameters' must be an object", rope_parameters=[1])
    _err("llama", "'rope_theta'", rope_parameters={"rope_theta": -1.0, "rope_type": "default"})
    _err("llama", "'partial_rotary_factor' = 0.5", partial_rotary_factor=0.5)
    _err("llama", "'partial_rotary_factor' = 0.5",
         rope_parameters={"rope_type": "default", "partial_rotary_factor": 0.5})
    assert _cfg("llama", partial_rotary_factor=1.0).rope_theta == 10000.0


def test_mixtral_defaults_follow_mixtral_config():
    cfg = _cfg("mixtral", num_key_value_heads=None)  # null: = heads (transformers 4)
    assert cfg.num_kv_heads == 4
    raw = dict(TINY["mixtral"], num_attention_heads=8)
    del raw["num_key_value_heads"]
    cfg = config_from_dict(raw)
    assert (cfg.num_kv_heads, cfg.rope_theta, cfg.norm_eps) == (8, 1e6, 1e-5)
    raw["num_attention_heads"] = 4  # 8 kv heads for 4 heads
    with pytest.raises(ConfigError, match="'num_key_value_heads' = 8 does not divide"):
        config_from_dict(raw)
    raw = dict(TINY["llama"])
    del raw["num_key_value_heads"]
    cfg = config_from_dict(raw)
    assert (cfg.num_kv_heads, cfg.rope_theta, cfg.norm_eps) == (4, 10000.0, 1e-6)


def test_mixtral_aux_loss_only_with_output_router_logits():
    off = build_model(_cfg("mixtral", router_aux_loss_coef=0.02), 1, 8)
    assert "tfm.moe_aux_loss" not in off and "tfm.scale" not in off
    assert "output_router_logits = false" in off
    on = build_model(_cfg("mixtral", router_aux_loss_coef=0.02, output_router_logits=True), 1, 8)
    assert on.count("tfm.moe_aux_loss") == 1 and "tfm.scale" in on
    assert "output_router_logits = true" in on
    zero = build_model(_cfg("mixtral", router_aux_loss_coef=0.0, output_router_logits=True), 1, 8)
    assert "tfm.moe_aux_loss" not in zero


def test_refused_keys():
    _err("llama", "'attention_dropout' = 0.1", "tfm.attention", attention_dropout=0.1)
    _err("mixtral", "'attention_dropout'", attention_dropout=0.5)
    _err("mixtral", "'router_jitter_noise' = 0.01", router_jitter_noise=0.01)
    _err("mixtral", "'attention_bias' = True", "mixtral", attention_bias=True)
    _err("mixtral", "'mlp_bias' = True", mlp_bias=True)
    _err("gpt2", "'scale_attn_weights' = False", scale_attn_weights=False)
    _err("gpt2", "'scale_attn_by_inverse_layer_idx' = True",
         scale_attn_by_inverse_layer_idx=True)
    _err("gpt2", "'attn_pdrop' = 0.1", attn_pdrop=0.1)
    _err("llama", "'bos_token_id'", bos_token_id="x")
    # accepted values
    _cfg("gpt2", reorder_and_upcast_attn=True, scale_attn_weights=True,
         scale_attn_by_inverse_layer_idx=False)
    _cfg("mixtral", router_jitter_noise=0.0, attention_bias=False, attention_dropout=0.0)


def test_nulls_are_absent():
    cfg = _cfg("gpt2", n_inner=None, head_dim=None, layer_norm_epsilon=None,
               activation_function=None, scale_attn_weights=None)
    assert (cfg.ffn_hidden_size, cfg.head_dim, cfg.norm_eps) == (64, 4, 1e-5)
    cfg = _cfg("llama", head_dim=None, rope_theta=None, rope_scaling=None, hidden_act=None)
    assert (cfg.head_dim, cfg.rope_theta) == (4, 10000.0)
    cfg = _cfg("mixtral", head_dim=None, sliding_window=None, router_jitter_noise=None,
               output_router_logits=None, rope_parameters=None)
    assert (cfg.head_dim, cfg.sliding_window, cfg.output_router_logits) == (4, None, False)


# config.json of GPT2Config(), LlamaConfig(), MixtralConfig() (tiny sizes) as
# transformers 5.24's save_pretrained writes them.
TF5_CONFIGS = {
    "gpt2": {
        "activation_function": "gelu_new", "add_cross_attention": False,
        "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.0, "bos_token_id": 50256,
        "dtype": "float32", "embd_pdrop": 0.1, "eos_token_id": 50256,
        "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
        "n_embd": 16, "n_head": 4, "n_inner": None, "n_layer": 1, "n_positions": 8,
        "pad_token_id": None, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "tie_word_embeddings": True, "transformers_version": "5.24.0", "use_cache": True,
        "vocab_size": 11},
    "llama": {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 1, "dtype": "float32", "eos_token_id": 2,
        "head_dim": 4, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02,
        "intermediate_size": 32, "max_position_embeddings": 8, "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 1,
        "num_key_value_heads": 2, "pad_token_id": None, "pretraining_tp": 1,
        "rms_norm_eps": 1e-06, "rope_parameters": {"rope_theta": 500000.0,
                                                   "rope_type": "default"},
        "tie_word_embeddings": False, "transformers_version": "5.24.0", "use_cache": True,
        "vocab_size": 11},
    "mixtral": {
        "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
        "dtype": "float32", "eos_token_id": 2, "head_dim": None, "hidden_act": "silu",
        "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 32,
        "max_position_embeddings": 8, "model_type": "mixtral", "num_attention_heads": 4,
        "num_experts_per_tok": 2, "num_hidden_layers": 1, "num_key_value_heads": 2,
        "num_local_experts": 3, "output_router_logits": False, "pad_token_id": None,
        "rms_norm_eps": 1e-05, "rope_parameters": {"rope_theta": 1000000.0,
                                                   "rope_type": "default"},
        "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "sliding_window": None,
        "tie_word_embeddings": False, "transformers_version": "5.24.0", "use_cache": True,
        "vocab_size": 11},
}


@pytest.mark.parametrize("family", sorted(TF5_CONFIGS))
def test_transformers5_config_json_is_read_exactly(family):
    raw = TF5_CONFIGS[family]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg = config_from_dict(raw, name="t")
    if family == "gpt2":
        # HF's dropout defaults written out are taken as given; attn_pdrop 0
        assert (cfg.ffn_hidden_size, cfg.resid_dropout, cfg.embd_dropout) == (64, 0.1, 0.1)
    elif family == "llama":
        assert (cfg.rope_theta, cfg.head_dim, cfg.norm_eps) == (500000.0, 4, 1e-6)
    else:
        assert (cfg.rope_theta, cfg.head_dim, cfg.num_kv_heads) == (1e6, 4, 2)
        assert not cfg.uses_aux_loss
    wm = hf.weight_map(cfg, parameter_specs(cfg))
    # every checked key has the value transformers reads from this file
    for key in wm.check:
        if key in raw:
            assert wm.config[key] == raw[key], key


def test_builder_does_not_import_torch_or_transformers():
    code = ("import sys, autoshard.models, autoshard.models.hf; "
            "assert not {'torch', 'transformers'} & set(sys.modules), sys.modules.keys()")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- MLIR and rt-export


def _as_json(wm):
    """The weight map as the artifact's model.hf should hold it."""
    return {
        "architecture": wm.architecture, "config": wm.config_json(), "check": list(wm.check),
        "defaults": wm.defaults_json(), "prefix": wm.prefix, "ignore": list(wm.ignore),
        "tied": list(wm.tied),
        "tensors": [{"name": t.name, "shape": list(t.shape), "parts": [
            {"param": q.param, "hf_begin": list(q.hf_begin), "hf_shape": list(q.hf_shape),
             "param_begin": list(q.param_begin), "squeeze": q.squeeze,
             "transpose": q.transpose} for q in t.parts]} for t in wm.tensors],
    }


@pytest.fixture(scope="module")
def shard_opt_bin():
    path = find_shard_opt()
    if path is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    return path


def _opt(shard_opt, src, *args):
    r = subprocess.run([shard_opt, str(src), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return r.stdout


@pytest.mark.parametrize("case", ["gpt2", "nanogpt", "llama-biases", "mixtral"])
def test_map_survives_shard_opt_and_rt_export(shard_opt_bin, tmp_path, case):
    kw, _, _ = CASES[case]
    raw = dict(TINY[_family(case)], **kw)
    # A config text with quotes and backslashes in it (the token ids are
    # exported as given; a name with odd characters rides along in the
    # summary only): the JSON string attribute must escape both.
    cfg = config_from_dict(raw, name='odd "name" \\ here')
    params = parameter_specs(cfg, 8)
    wm = hf.weight_map(cfg, params)
    text = build_model(cfg, 2, 8, vocab_multiple=8)
    src = tmp_path / "model.mlir"
    src.write_text(text)
    printed = tmp_path / "printed.mlir"
    printed.write_text(_opt(shard_opt_bin, src))
    generic = tmp_path / "generic.mlir"
    generic.write_text(_opt(shard_opt_bin, printed, "--mlir-print-op-generic"))
    out = tmp_path / "model.json"
    _opt(shard_opt_bin, generic, "--tfm-autodiff", "--rt-lower", "--rt-plan-memory",
         f"--rt-export=output={out}", "-o", os.devnull)
    art = json.loads(out.read_text())
    assert "hf_incompatible" not in art["model"]
    assert art["model"]["hf"] == _as_json(wm)
    assert json.loads(art["model"]["hf"]["config"]) == wm.config


def test_incompatible_reason_reaches_the_artifact(shard_opt_bin, tmp_path):
    cfg = _cfg("mixtral")
    src = tmp_path / "model.mlir"
    src.write_text(build_model(cfg, 2, 8, capacity_factor=1.0))
    out = tmp_path / "model.json"
    _opt(shard_opt_bin, src, "--tfm-autodiff", "--rt-lower", "--rt-plan-memory",
         f"--rt-export=output={out}", "-o", os.devnull)
    model = json.loads(out.read_text())["model"]
    assert "hf" not in model
    assert model["hf_incompatible"].startswith("expert capacity 6 < seq 8")


# --------------------------------------------------------------------------- transformers peer




_PEER = r'''
import json, os, sys, tempfile, warnings
import torch, transformers
from safetensors import safe_open
transformers.logging.set_verbosity_error()
jobs = json.load(open(sys.argv[1]))
out = []
for job in jobs:
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(job["config"])
    cfg = transformers.AutoConfig.from_pretrained(d)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    save = tempfile.mkdtemp()
    model.save_pretrained(save)
    with safe_open(os.path.join(save, "model.safetensors"), "pt") as f:
        tensors = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
    cls = type(cfg)
    fresh = cls()
    defaults = {}
    for k in job["check"]:
        v = getattr(fresh, k)
        defaults[k] = v
    attrs = {k: getattr(cfg, k, None) for k in job["attrs"]}
    out.append({"arch": type(model).__name__, "tensors": tensors, "defaults": defaults,
                "attrs": attrs, "tied": bool(getattr(cfg, "tie_word_embeddings", False)),
                "rope": getattr(cfg, "rope_parameters", None)})
print(json.dumps(out))
'''


PEER_CASES = {
    "gpt2": dict(TINY["gpt2"], n_layer=2),
    "gpt2-untied": dict(TINY["gpt2"], tie_word_embeddings=False),
    "nanogpt": dict(TINY["gpt2"], bias=False, activation_function="gelu", dropout=0.1),
    "llama": dict(TINY["llama"], num_hidden_layers=2, rope_theta=5e5, rms_norm_eps=1e-5),
    "llama-biases-tied": dict(TINY["llama"], attention_bias=True, mlp_bias=True,
                              tie_word_embeddings=True, head_dim=8),
    "mixtral": dict(TINY["mixtral"], num_hidden_layers=2, output_router_logits=True,
                    router_aux_loss_coef=0.05, sliding_window=64,
                    max_position_embeddings=64),
}


def test_map_matches_transformers(tmp_path):
    py, why = peer_python()
    if py is None:
        pytest.skip(why)
    jobs, maps = [], []
    for case, raw in PEER_CASES.items():
        cfg = config_from_dict(raw, name=case)
        wm, _ = _map(cfg)
        maps.append((case, cfg, wm))
        attrs = [k for k in wm.config if k not in ("model_type", "rope_parameters",
                                                   "rope_theta")]
        jobs.append({"config": wm.config_json(), "check": list(wm.check), "attrs": attrs})
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(jobs))
    tool = tmp_path / "peer.py"
    tool.write_text(_PEER)
    r = subprocess.run([py, str(tool), str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    results = json.loads(r.stdout.strip().splitlines()[-1])
    for (case, cfg, wm), res in zip(maps, results):
        assert res["arch"] == wm.architecture, case
        # save_pretrained writes exactly the map's tensors (tied copies left out)
        assert res["tensors"] == _shapes(wm), case
        assert all(n not in res["tensors"] for n in wm.tied), case
        # transformers read every exported key as written
        for k, v in res["attrs"].items():
            assert v == wm.config[k], (case, k, v, wm.config[k])
        if cfg.model_type != "gpt2":
            assert res["rope"] == {"rope_theta": cfg.rope_theta, "rope_type": "default"}, case
        # the defaults are transformers' (computed ones: for this model)
        for k, v in res["defaults"].items():
            if k == "num_key_value_heads" and cfg.model_type == "llama":
                continue  # LlamaConfig(): = its own 32 heads; ours: = this model's heads
            assert wm.defaults[k] == v, (case, k)
