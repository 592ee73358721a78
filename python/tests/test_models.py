"""Tests of the model builder: parameter counts, IR structure, attributes, options."""

import json
import math
import os
import re

import pytest

from conftest import REPO_ROOT, config_names, config_path
from irutil import check_ssa, forward_param_count, parse_module

from autoshard.models import (ROLES, build_model, config_from_dict, count_parameters,
                              format_count, load_config, moe_capacity, parameter_specs)
from autoshard.models.ir import fmt_f64

# Known sizes (unpadded, tied embeddings counted once, position tables included).
KNOWN_COUNTS = {
    # V*H + P*H + L*(12H^2 + 13H) + 2H, V=50257, P=1024, H=768, L=12
    "gpt2-124m": 124_439_808,
    # 2*V*H + L*(2*H*H + 2*H*(G*D) + 3*H*F + 2H) + H
    "llama3-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
    # 2*V*H + L*(attention + E*3*H*F + H*E + 2H) + H
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_630_071_296,
    # V=51200, P=2048, H=12288, L=96
    "gpt3-175b": 174_615_846_912,
    # nanoGPT prints 10.65M: it excludes wpe (256*384 = 98,304)
    "nanogpt-shakespeare-char": 10_745_088,
    "nanogpt-shakespeare-char-cpu": 804_096,
}


def _gpt2_formula(V, P, H, L, F, bias=True):
    per = 4 * H * H + 2 * H * F + 2 * H  # q,k,v,o; fc, proj; 2 LN gammas
    if bias:
        per += 4 * H + F + H + 2 * H  # q,k,v,o biases; fc, proj biases; 2 LN betas
    return V * H + P * H + L * per + H + (H if bias else 0)


def _llama_formula(V, H, L, N, G, F, E=0):
    D = H // N
    attn = 2 * H * N * D + 2 * H * G * D
    ffn = 3 * H * F if E == 0 else E * 3 * H * F + H * E
    return 2 * V * H + L * (attn + ffn + 2 * H) + H


@pytest.fixture(scope="module")
def built():
    """name -> (cfg, text, funcs) for every config, batch 2, seq 64."""
    out = {}
    for name in config_names():
        cfg = load_config(config_path(name))
        text = build_model(cfg, 2, 64)
        out[name] = (cfg, text, parse_module(text))
    return out


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_parameter_count_known(name):
    cfg = load_config(config_path(name))
    assert count_parameters(cfg) == KNOWN_COUNTS[name]


def test_known_counts_match_closed_forms():
    # The table above, re-derived from the architectures (independent of the builder).
    assert _gpt2_formula(50257, 1024, 768, 12, 3072) == KNOWN_COUNTS["gpt2-124m"]
    assert _gpt2_formula(51200, 2048, 12288, 96, 49152) == KNOWN_COUNTS["gpt3-175b"]
    assert _gpt2_formula(65, 256, 384, 6, 1536, bias=False) == KNOWN_COUNTS["nanogpt-shakespeare-char"]
    assert _gpt2_formula(65, 64, 128, 4, 512, bias=False) == KNOWN_COUNTS["nanogpt-shakespeare-char-cpu"]
    assert _llama_formula(128256, 4096, 32, 32, 8, 14336) == KNOWN_COUNTS["llama3-8b"]
    assert _llama_formula(128256, 8192, 80, 64, 8, 28672) == KNOWN_COUNTS["llama3-70b"]
    assert _llama_formula(128256, 16384, 126, 128, 8, 53248) == KNOWN_COUNTS["llama3.1-405b"]
    assert _llama_formula(32000, 4096, 32, 32, 8, 14336, E=8) == KNOWN_COUNTS["mixtral-8x7b"]
    assert _llama_formula(32768, 6144, 56, 48, 8, 16384, E=8) == KNOWN_COUNTS["mixtral-8x22b"]


def test_nanogpt_count_without_positions_matches_nanogpt_report():
    cfg = load_config(config_path("nanogpt-shakespeare-char"))
    n = count_parameters(cfg) - cfg.max_positions * cfg.hidden_size
    assert round(n / 1e6, 2) == 10.65


def test_count_equals_emitted_parameters(built):
    for name, (cfg, text, funcs) in built.items():
        assert forward_param_count(funcs) == count_parameters(cfg), name


def test_format_count():
    assert format_count(124_439_808) == "124.4M"
    assert format_count(8_030_261_248) == "8.03B"
    assert format_count(46_702_792_704) == "46.70B"


# --------------------------------------------------------------------------- structure


def test_ssa_and_types_consistent(built):
    for name, (_, _, funcs) in built.items():
        check_ssa(funcs)


def test_one_block_called_once_per_layer(built):
    for name, (cfg, text, funcs) in built.items():
        blocks = [f for f in funcs.values() if f.private]
        assert len(blocks) == 1, name
        assert blocks[0].name == f"{cfg.model_type}_block"
        assert not funcs["forward"].private
        calls = [op for op in funcs["forward"].ops if op["op"] == "func.call"]
        assert len(calls) == cfg.num_layers, name
        assert all(c["callee"] == blocks[0].name for c in calls)
        # the layer index operand is the constant i, in order
        consts = {op["results"][0]: op["value"] for op in funcs["forward"].ops
                  if op["op"] == "arith.constant"}
        assert [consts[c["operands"][1]] for c in calls] == list(range(cfg.num_layers))
        # layer i's call passes exactly layer i's parameters
        fwd_args = {n: attrs for n, _, attrs in funcs["forward"].args}
        for i, c in enumerate(calls):
            names = [fwd_args[o].get("tfm.param") for o in c["operands"] if o in fwd_args
                     and "tfm.param" in fwd_args[o]]
            assert names and all(n.startswith(f"layers.{i}.") for n in names), (name, i)
        # no layer parameter is used outside its call
        blk = blocks[0]
        nweights = sum(1 for _, _, a in blk.args if "tfm.name" in a)
        assert nweights * cfg.num_layers == sum(
            1 for _, _, a in funcs["forward"].args if a.get("tfm.param", "").startswith("layers."))


def test_gpt3_175b_is_emitted_compactly(built):
    cfg, text, funcs = built["gpt3-175b"]
    assert cfg.num_layers == 96
    blk = [f for f in funcs.values() if f.private][0]
    # the block body is emitted once: one attention op in the whole module
    assert text.count("tfm.attention") == 1
    assert len(blk.ops) < 40
    # The Hugging Face weight map (tfm.model's `hf`) names every HF tensor, so
    # it grows with depth like the parameter list; the rest stays small.
    head = [l for l in text.splitlines() if l.startswith("module attributes")][0]
    hf_map = head[head.index(", hf = {"):]
    assert len(text) - len(hf_map) < 400_000
    assert len(hf_map) < 4_000 * cfg.num_layers


def test_forward_signature_and_arg_attrs(built):
    for name, (cfg, _, funcs) in built.items():
        fwd = funcs["forward"]
        (n0, t0, a0), (n1, t1, a1) = fwd.args[:2]
        assert a0 == {"tfm.input": "tokens"} and t0 == "tensor<2x64xi32>"
        assert a1 == {"tfm.input": "labels"} and t1 == "tensor<2x64xi32>"
        assert fwd.results == ["tensor<f32>"]
        params = [a for _, _, a in fwd.args if "tfm.param" in a]
        names = [a["tfm.param"] for a in params]
        assert len(set(names)) == len(names), name
        for a in params:
            assert a["tfm.role"] in ROLES, a
            assert a["tfm.init"] in ("normal", "ones", "zeros")
            assert ("tfm.init_std" in a) == (a["tfm.init"] == "normal")
            if a["tfm.role"] == "bias":
                assert a["tfm.init"] == "zeros" and "tfm.bias_of" in a
            if a["tfm.role"] == "norm":
                assert a["tfm.init"] == "ones"
        blk = [f for f in funcs.values() if f.private][0]
        assert blk.args[0][2] == {"tfm.role": "hidden"}
        assert blk.args[1] [1:] == ("tensor<i64>", {"tfm.role": "layer_index"})
        for _, _, a in blk.args:
            assert "tfm.role" in a


def test_roles_are_the_compilers_role_enum():
    """The compiler compares tfm.role values as cases of tfm::Role (TfmAttrs.td):
    every role the builder emits must be one."""
    td = os.path.join(REPO_ROOT, "include", "autoshard", "Dialect", "Tfm", "IR", "TfmAttrs.td")
    with open(td) as f:
        enum = f.read().split('def Tfm_Role ')[1].split("]>")[0]
    cases = set(re.findall(r'I32EnumAttrCase<"\w+", \d+, "(\w+)">', enum))
    assert set(ROLES) | {"hidden", "layer_index", "step"} == cases


def test_init_std_follows_nanogpt(built):
    for name, (cfg, _, funcs) in built.items():
        resid = cfg.initializer_range / math.sqrt(2 * cfg.num_layers)
        for _, _, a in funcs["forward"].args:
            if a.get("tfm.init") != "normal":
                continue
            std = float(a["tfm.init_std"].split(":")[0])
            want = resid if a["tfm.role"] in ("attn_out", "mlp_down", "expert_down") \
                else cfg.initializer_range
            assert std == want, (name, a)


def test_gpt2_124m_layout(built):
    cfg, text, funcs = built["gpt2-124m"]
    fwd = funcs["forward"]
    params = {a["tfm.param"]: (t, a) for _, t, a in fwd.args if "tfm.param" in a}
    assert list(params)[:2] == ["wte", "wpe"]
    assert params["wte"][0] == "tensor<50257x768xf32>"
    assert params["wpe"][0] == "tensor<1024x768xf32>"
    assert "lm_head" not in params  # tied
    for local in ("ln_1.weight", "ln_1.bias", "attn.wq", "attn.bq", "attn.wk", "attn.bk",
                  "attn.wv", "attn.bv", "attn.wo", "attn.bo", "ln_2.weight", "ln_2.bias",
                  "mlp.w_fc", "mlp.b_fc", "mlp.w_proj", "mlp.b_proj"):
        assert f"layers.11.{local}" in params, local
    assert params["layers.0.attn.wq"][0] == "tensor<768x768xf32>"
    assert params["layers.0.mlp.w_fc"][0] == "tensor<768x3072xf32>"
    assert params["layers.0.mlp.w_proj"][0] == "tensor<3072x768xf32>"
    assert params["layers.0.attn.bq"][1]["tfm.bias_of"] == "attn_q"
    assert params["layers.0.ln_1.bias"][1]["tfm.bias_of"] == "norm"
    assert "ln_f.bias" in params
    ops = [op["op"] for op in fwd.ops]
    assert ops[:3] == ["tfm.embedding", "tfm.position_embedding", "tfm.add"]
    pe = fwd.ops[1]
    assert pe["attrs"]["seq_len"].startswith("64") and pe["out_types"] == ["tensor<64x768xf32>"]
    lm = [op for op in fwd.ops if op["op"] == "tfm.matmul"][-1]
    assert lm["attrs"].get("transpose_rhs") is True and lm["out_types"] == ["tensor<2x64x50257xf32>"]
    ce = fwd.ops[-1]
    assert ce["op"] == "tfm.cross_entropy" and "vocab_size" not in ce["attrs"]
    blk = funcs["gpt2_block"]
    bops = [op["op"] for op in blk.ops]
    assert bops.count("tfm.layer_norm") == 2 and bops.count("tfm.matmul") == 6
    assert bops.count("tfm.add") == 8  # 6 biases + 2 residuals
    assert "tfm.rope" not in bops and "tfm.dropout" not in bops
    ln = [op for op in blk.ops if op["op"] == "tfm.layer_norm"][0]
    assert len(ln["operands"]) == 3  # with beta
    att = [op for op in blk.ops if op["op"] == "tfm.attention"][0]
    assert att["attrs"]["causal"] is True
    assert float(att["attrs"]["scale"].split(":")[0]) == 1 / math.sqrt(64)
    assert att["in_types"][0] == "tensor<2x64x12x64xf32>"
    assert att["out_types"] == ["tensor<2x64x12x64xf32>", "tensor<2x12x64xf32>"]
    gelu = [op for op in blk.ops if op["op"] == "tfm.gelu"][0]
    assert "tanh_approx" not in gelu["attrs"]  # config says "gelu": exact


def test_gelu_new_uses_tanh_approx():
    raw = json.load(open(config_path("gpt2-124m")))
    raw["activation_function"] = "gelu_new"
    text = build_model(config_from_dict(raw), 1, 16)
    assert re.search(r"tfm\.gelu %\w+ \{tanh_approx\}", text)


def test_nanogpt_no_bias_and_dropout(built):
    cfg, text, funcs = built["nanogpt-shakespeare-char"]
    fwd, blk = funcs["forward"], funcs["gpt2_block"]
    roles = [a.get("tfm.role") for _, _, a in fwd.args]
    assert "bias" not in roles
    ln = [op for op in blk.ops if op["op"] == "tfm.layer_norm"][0]
    assert len(ln["operands"]) == 2  # no beta
    # dropout 0.2: a step input, one dropout after embeddings, two per block
    assert fwd.args[2][1:] == ("tensor<i64>", {"tfm.input": "step"})
    assert blk.args[2][1:] == ("tensor<i64>", {"tfm.role": "step"})
    drops = [op for op in blk.ops if op["op"] == "tfm.dropout"]
    assert [d["attrs"]["site"].split(":")[0].strip() for d in drops] == ["1", "2"]
    assert all(d["operands"][1:] == ["%step", "%layer"] for d in drops)
    assert all(d["attrs"]["rate"].startswith("2.000000e-01") for d in drops)
    fdrops = [op for op in fwd.ops if op["op"] == "tfm.dropout"]
    assert len(fdrops) == 1 and fdrops[0]["attrs"]["site"].startswith("0")
    # the CPU config has dropout 0: no step, no dropout ops
    cfg2, text2, funcs2 = built["nanogpt-shakespeare-char-cpu"]
    assert "tfm.dropout" not in text2 and '"step"' not in text2


def test_dropout_override():
    cfg = load_config(config_path("nanogpt-shakespeare-char-cpu"))
    text = build_model(cfg, 2, 16, dropout=0.1)
    assert text.count("tfm.dropout") == 3
    text = build_model(load_config(config_path("nanogpt-shakespeare-char")), 2, 16, dropout=0.0)
    assert "tfm.dropout" not in text


def test_llama_layout(built):
    cfg, text, funcs = built["llama3-8b"]
    fwd, blk = funcs["forward"], funcs["llama_block"]
    params = {a["tfm.param"]: (t, a) for _, t, a in fwd.args if "tfm.param" in a}
    assert list(params)[0] == "tok_embeddings"
    assert list(params)[-2:] == ["norm.weight", "lm_head"]
    assert params["lm_head"][0] == "tensor<4096x128256xf32>"
    assert params["lm_head"][1]["tfm.role"] == "lm_head"
    assert params["layers.0.attn.wk"][0] == "tensor<4096x1024xf32>"  # GQA: 8 kv heads
    assert params["layers.0.mlp.w_gate"][1]["tfm.role"] == "mlp_gate"
    assert params["layers.0.mlp.w_down"][0] == "tensor<14336x4096xf32>"
    assert "bias" not in {a["tfm.role"] for _, a in params.values()}
    assert "wpe" not in params and "tfm.position_embedding" not in text
    bops = [op["op"] for op in blk.ops]
    assert bops.count("tfm.rms_norm") == 2 and bops.count("tfm.rope") == 2
    assert bops.count("tfm.swiglu") == 1 and "tfm.gelu" not in bops
    rope = [op for op in blk.ops if op["op"] == "tfm.rope"]
    assert rope[0]["attrs"]["theta"].startswith("5.000000e+05")
    assert rope[0]["in_types"] == ["tensor<2x64x32x128xf32>"]
    assert rope[1]["in_types"] == ["tensor<2x64x8x128xf32>"]
    att = [op for op in blk.ops if op["op"] == "tfm.attention"][0]
    assert att["in_types"][1] == "tensor<2x64x8x128xf32>"
    lm = [op for op in fwd.ops if op["op"] == "tfm.matmul"][-1]
    assert "transpose_rhs" not in lm["attrs"] and lm["operands"][1] == "%lm_head"


def test_mixtral_layout(built):
    # The shared config has no output_router_logits: as in HF, no aux loss.
    cfg, text, funcs = built["mixtral-8x7b"]
    assert not cfg.output_router_logits and not cfg.uses_aux_loss
    assert funcs["mixtral_block"].results == ["tensor<2x64x4096xf32>"]
    assert "tfm.moe_aux_loss" not in text and "tfm.scale" not in text
    raw = json.load(open(config_path("mixtral-8x7b")))
    raw["output_router_logits"] = True
    cfg = config_from_dict(raw, name="mixtral-8x7b")
    text = build_model(cfg, 2, 64)
    funcs = parse_module(text)
    check_ssa(funcs)
    fwd, blk = funcs["forward"], funcs["mixtral_block"]
    assert blk.results == ["tensor<2x64x4096xf32>", "tensor<f32>"]
    params = {a["tfm.param"]: (t, a) for _, t, a in fwd.args if "tfm.param" in a}
    assert params["layers.0.moe.router"][0] == "tensor<4096x8xf32>"
    assert params["layers.0.moe.experts.w_gate"][0] == "tensor<8x4096x14336xf32>"
    assert params["layers.0.moe.experts.w_down"][0] == "tensor<8x14336x4096xf32>"
    assert params["layers.0.moe.experts.w_up"][1]["tfm.role"] == "expert_up"
    ops = {op["op"]: op for op in blk.ops}
    assert ops["tfm.moe_router"]["attrs"]["top_k"].startswith("2")
    assert ops["tfm.moe_router"]["attrs"]["renormalize"] is True
    assert ops["tfm.moe_router"]["out_types"] == ["tensor<2x64x2xf32>", "tensor<2x64x2xi32>"]
    disp = ops["tfm.moe_dispatch"]
    assert disp["attrs"]["num_experts"].startswith("8")
    assert disp["attrs"]["capacity"].startswith("64")  # dropless: C = S
    assert disp["attrs"]["dropless"] is True
    assert disp["out_types"] == ["tensor<8x2x64x4096xf32>"]
    assert ops["tfm.moe_combine"]["out_types"] == ["tensor<2x64x4096xf32>"]
    assert "tfm.moe_aux_loss" in ops
    # forward: sum of 32 aux losses, scaled by coef / L, added to the CE loss
    scale = [op for op in fwd.ops if op["op"] == "tfm.scale"]
    assert len(scale) == 1
    assert float(scale[0]["attrs"]["factor"].split(":")[0]) == pytest.approx(0.02 / 32, rel=1e-15)
    assert fwd.ops[-1]["op"] == "tfm.add" and fwd.ops[-1]["out_types"] == ["tensor<f32>"]
    assert sum(1 for op in fwd.ops if op["op"] == "tfm.add") == 32  # 31 aux sums + 1


def test_mixtral_capacity_factor():
    cfg = load_config(config_path("mixtral-8x7b"))
    assert moe_capacity(cfg, 64) == 64
    assert moe_capacity(cfg, 64, 1.25) == 20  # ceil(1.25 * 64 * 2 / 8)
    assert moe_capacity(cfg, 64, 1.0) == 16
    assert moe_capacity(cfg, 64, 100.0) == 64  # capped at S
    assert moe_capacity(cfg, 1, 0.01) == 1
    text = build_model(cfg, 2, 64, capacity_factor=1.25)
    assert "capacity = 20 : i64" in text
    assert "tensor<8x2x20x4096xf32>" in text and "tensor<8x40x4096xf32>" in text
    assert "dropless" not in text.split("tfm.moe_dispatch")[1].split(":")[0]
    assert "expert_dropless = false" in text


def test_mixtral_max_tokens_per_expert():
    cfg = load_config(config_path("mixtral-8x7b"))
    text = build_model(cfg, 2, 64, max_tokens_per_expert=24)
    dispatch = text.split("tfm.moe_dispatch")[1].split("\n")[0]
    assert "capacity = 24 : i64" in dispatch and "dropless" in dispatch
    assert "tensor<8x2x24x4096xf32>" in text
    # still Hugging Face's routing: a bounded dropless layer never drops
    head = [l for l in text.splitlines() if l.startswith("module attributes")][0]
    assert "expert_capacity = 24 : i64" in head and "expert_dropless = true" in head
    assert "hf_incompatible" not in head


def test_mixtral_zero_aux_coef_drops_aux_loss():
    raw = json.load(open(config_path("mixtral-8x7b")))
    raw["router_aux_loss_coef"] = 0.0
    raw["output_router_logits"] = True
    raw["num_hidden_layers"] = 2
    text = build_model(config_from_dict(raw), 1, 8)
    funcs = parse_module(text)
    check_ssa(funcs)
    assert "tfm.moe_aux_loss" not in text and "tfm.scale" not in text
    assert funcs["mixtral_block"].results == ["tensor<1x8x4096xf32>"]


def test_vocab_padding():
    cfg = load_config(config_path("gpt2-124m"))
    text = build_model(cfg, 2, 64, vocab_multiple=128)
    funcs = parse_module(text)
    check_ssa(funcs)
    args = {a.get("tfm.param"): (t, a) for _, t, a in funcs["forward"].args}
    assert args["wte"][0] == "tensor<50304x768xf32>"
    assert args["wte"][1]["tfm.vocab_size"].startswith("50257")
    ce = funcs["forward"].ops[-1]
    assert ce["in_types"][0] == "tensor<2x64x50304xf32>"
    assert ce["attrs"]["vocab_size"] == "50257 : i64"
    assert count_parameters(cfg) == KNOWN_COUNTS["gpt2-124m"]
    assert "num_parameters = 124439808 : i64" in text
    assert "padded_vocab_size = 50304 : i64" in text
    # untied: the LM head is padded too
    cfg = load_config(config_path("llama3-8b"))
    text = build_model(cfg, 1, 8, vocab_multiple=1000)
    assert "tensor<129000x4096xf32>" in text and "tensor<4096x129000xf32>" in text
    assert "vocab_size = 128256 : i64}" in text
    # already a multiple: no vocab_size attribute on the loss
    text = build_model(cfg, 1, 8, vocab_multiple=128)
    assert "tfm.cross_entropy %logits, %labels :" in text
    ps = parameter_specs(cfg, 1000)
    assert sum(p.numel for p in ps) == KNOWN_COUNTS["llama3-8b"]


def test_dtype_option():
    cfg = load_config(config_path("llama3-8b"))
    text = build_model(cfg, 1, 8, dtype="bf16")
    funcs = parse_module(text)
    check_ssa(funcs)
    assert "xf32>" not in text.replace("tensor<1x32x8xf32>", "")  # only lse and losses are f32
    assert funcs["forward"].results == ["tensor<f32>"]
    assert "tensor<4096x4096xbf16>" in text


def test_module_summary_attribute(built):
    cfg, text, _ = built["mixtral-8x7b"]
    head = [l for l in text.splitlines() if l.startswith("module attributes")][0]
    for want in ('name = "mixtral-8x7b"', 'model_type = "mixtral"', "num_layers = 32 : i64",
                 "num_experts = 8 : i64", "expert_capacity = 64 : i64",
                 "num_parameters = 46702792704 : i64", "seq_len = 64 : i64"):
        assert want in head


def test_head_dim_key_and_ssa_names_unique():
    raw = json.load(open(config_path("llama3-8b")))
    raw.update(num_hidden_layers=2, head_dim=64, num_attention_heads=16, num_key_value_heads=4)
    cfg = config_from_dict(raw)
    text = build_model(cfg, 1, 8)
    funcs = parse_module(text)
    check_ssa(funcs)
    params = {a["tfm.param"]: t for _, t, a in funcs["forward"].args if "tfm.param" in a}
    assert params["layers.0.attn.wq"] == "tensor<4096x1024xf32>"
    assert params["layers.0.attn.wo"] == "tensor<1024x4096xf32>"
    assert params["layers.0.attn.wk"] == "tensor<4096x256xf32>"


@pytest.mark.parametrize("x", [1e-5, 0.02, 1e-6, 0.1, 500000.0, 1e6, 1 / math.sqrt(128),
                               0.02 / math.sqrt(24), 1e-300, 123456789.123, 1e22, 3.0])
def test_fmt_f64_is_exact_mlir_float(x):
    s = fmt_f64(x)
    lit, ty = s.split(" : ")
    assert ty == "f64"
    assert re.fullmatch(r"-?[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?", lit), s
    assert float(lit) == x


def test_fmt_f64_prefers_spec_spelling():
    assert fmt_f64(1e-5) == "1.000000e-05 : f64"
    assert fmt_f64(500000.0) == "5.000000e+05 : f64"
