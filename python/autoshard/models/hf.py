"""The Hugging Face weight map: how every HF tensor is made of autoshard parameters.

``docs/hf-checkpoints.md`` is the contract.  The builder puts the map into
the module's ``tfm.model`` summary as the dictionary ``hf`` (``rt-export``
copies it into the artifact's ``model`` object), and the runtime's
``--init-from`` / ``--save-hf`` follow it without any model knowledge.  A
model the builder cannot express exactly as a Hugging Face model gets
``hf_incompatible = "<reason>"`` instead (see :func:`incompatibility`).

The map (:class:`WeightMap`)::

    hf = {
      architecture = "LlamaForCausalLM",   // config.json "architectures"[0]
      config = "{...}",        // JSON text: the config.json an export writes
      check = ["hidden_size", ...],        // keys an import compares
      defaults = "{...}",      // JSON text: transformers' value of each
                               // checked key when config.json omits it
      prefix = "model.",       // base-model prefix (optional on import)
      ignore = [".rotary_emb.inv_freq"],   // buffer-name suffixes to skip
      tied = [],               // tied copies: skipped on import, not written
      tensors = [{name = "model.embed_tokens.weight",
                  shape = array<i64: 11, 16>,
                  parts = [{param = "tok_embeddings",
                            hf_begin = array<i64: 0, 0>, hf_shape = array<i64: 11, 16>,
                            param_begin = array<i64: 0, 0>,
                            squeeze = 0 : i64, transpose = false}]}, ...]
    }

A part maps the box ``[hf_begin, hf_begin + hf_shape)`` of its HF tensor
onto the parameter box that starts at ``param_begin`` and has the shape
``[1] * squeeze + (swap_last_two(hf_shape) if transpose else hf_shape)``.
``param = ""`` is a box of zeros (its ``param_begin`` is empty): nanoGPT's
``bias: false`` is exported as GPT-2 with zero biases.  The parts of a tensor
cover it exactly once, and the parts naming a parameter cover its logical
(unpadded) shape exactly once; :func:`verify` checks both.

Stdlib only (no torch, no transformers).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .config import ModelConfig
from .ir import fmt_i64, fmt_str

__all__ = ["Part", "Tensor", "WeightMap", "ARCHITECTURES", "incompatibility", "weight_map",
           "verify", "to_mlir", "hf_summary_item"]

#: ``config.json`` ``architectures[0]`` per model type.
ARCHITECTURES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM",
                 "mixtral": "MixtralForCausalLM"}

# transformers' GPT2Config / LlamaConfig / MixtralConfig defaults of the
# checked keys (transformers 5.24; test_hf_map.py compares them with the
# classes when the peer venv is there).  None: computed from the model (see
# _defaults).
_GPT2_DEFAULTS = {
    "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "tie_word_embeddings": True, "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
}
_LLAMA_DEFAULTS = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": None,  # = num_attention_heads
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "hidden_act": "silu",
    "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False,
}
_MIXTRAL_DEFAULTS = {
    "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 4096 * 32, "rms_norm_eps": 1e-5, "hidden_act": "silu",
    "tie_word_embeddings": False, "num_local_experts": 8, "num_experts_per_tok": 2,
    "sliding_window": None,
}
_DEFAULTS = {"gpt2": _GPT2_DEFAULTS, "llama": _LLAMA_DEFAULTS, "mixtral": _MIXTRAL_DEFAULTS}

# HF's default token ids (written as null in an export when they fall outside
# the vocabulary and the config did not set them, so that transformers does
# not warn about ids the model cannot produce).
_TOKEN_DEFAULTS = {"gpt2": {"bos_token_id": 50256, "eos_token_id": 50256},
                   "llama": {"bos_token_id": 1, "eos_token_id": 2},
                   "mixtral": {"bos_token_id": 1, "eos_token_id": 2}}

_PREFIX = {"gpt2": "transformer.", "llama": "model.", "mixtral": "model."}
# Old GPT-2 checkpoints carry the causal mask buffers; old Llama conversions
# the rotary inverse frequencies.
_IGNORE = {"gpt2": (".attn.bias", ".attn.masked_bias"), "llama": (".rotary_emb.inv_freq",),
           "mixtral": (".rotary_emb.inv_freq",)}


@dataclasses.dataclass(frozen=True)
class Part:
    """A box of a Hugging Face tensor and the parameter box it is.

    Attributes:
        param: the parameter (``tfm.param``); ``""``: the box holds zeros.
        hf_begin: start of the box in the HF tensor.
        hf_shape: shape of the box.
        param_begin: start of the box in the parameter (``()`` for zeros).
        squeeze: leading unit dims of the parameter box.
        transpose: the last two dims are swapped.
    """

    param: str
    hf_begin: Tuple[int, ...]
    hf_shape: Tuple[int, ...]
    param_begin: Tuple[int, ...] = ()
    squeeze: int = 0
    transpose: bool = False

    @property
    def param_shape(self) -> Tuple[int, ...]:
        """Shape of the parameter box."""
        s = tuple(self.hf_shape)
        if self.transpose:
            s = s[:-2] + (s[-1], s[-2])
        return (1,) * self.squeeze + s


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One Hugging Face tensor: full name (with the prefix), shape, parts."""

    name: str
    shape: Tuple[int, ...]
    parts: Tuple[Part, ...]


@dataclasses.dataclass(frozen=True)
class WeightMap:
    """The ``hf`` dictionary (see the module docstring)."""

    architecture: str
    config: Dict[str, Any]
    check: Tuple[str, ...]
    defaults: Dict[str, Any]
    prefix: str
    ignore: Tuple[str, ...]
    tied: Tuple[str, ...]
    tensors: Tuple[Tensor, ...]

    def config_json(self) -> str:
        """The ``config`` JSON text (what an export writes, less architectures/dtype)."""
        return _json(self.config)

    def defaults_json(self) -> str:
        """The ``defaults`` JSON text."""
        return _json(self.defaults)


def _json(obj) -> str:
    # ASCII only (MLIR strings and llvm::json both take it as is); no NaN/inf.
    return json.dumps(obj, separators=(", ", ": "), allow_nan=False)


# ----------------------------------------------------------------------------
# Incompatibility


def incompatibility(cfg: ModelConfig, seq: int, capacity: int) -> Optional[str]:
    """Why the built model has no exact Hugging Face form, or None.

    Args:
        cfg: the model as built (after option overrides).
        seq: the sequence length S it is built for.
        capacity: the MoE expert capacity C (ignored for dense models).

    Reasons: those of the config (``cfg.hf_incompatible``: a RoPE type that
    is not modelled, a GPT-2 ``head_dim`` that is not ``n_embd / n_head``), a
    capacity below S (``capacity_factor``: tokens may be dropped; HF Mixtral
    is dropless), a Mixtral ``sliding_window`` shorter than S (HF masks
    attention beyond the window; tfm.attention is fully causal).  Joined by
    ``"; "``.
    """
    reasons = list(cfg.hf_incompatible)
    if cfg.model_type not in ARCHITECTURES:
        reasons.append(f"model type {cfg.model_type!r} has no Hugging Face mapping")
    if cfg.is_moe and capacity < seq:
        reasons.append(f"expert capacity {capacity} < seq {seq} (capacity_factor): tokens "
                       "beyond it are dropped, Hugging Face Mixtral is dropless")
    if cfg.sliding_window is not None and cfg.sliding_window < seq:
        reasons.append(f"'sliding_window' = {cfg.sliding_window} < seq {seq}: Hugging Face "
                       "masks attention beyond the window, tfm.attention is fully causal")
    return "; ".join(reasons) if reasons else None


# ----------------------------------------------------------------------------
# The export config, checked keys and their defaults


def _token_ids(cfg: ModelConfig) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    given = dict(cfg.token_ids)
    for key, default in _TOKEN_DEFAULTS[cfg.model_type].items():
        if key not in given and default >= cfg.vocab_size:
            out[key] = None
    for key, v in cfg.token_ids:
        out[key] = list(v) if isinstance(v, tuple) else v
    return out


def _config(cfg: ModelConfig) -> Dict[str, Any]:
    """The config.json an export writes: canonical keys, the built values."""
    c = cfg
    if c.model_type == "gpt2":
        d = {
            "model_type": "gpt2", "vocab_size": c.vocab_size, "n_positions": c.max_positions,
            "n_embd": c.hidden_size, "n_layer": c.num_layers, "n_head": c.num_heads,
            "n_inner": c.ffn_hidden_size,
            "activation_function": c.activation_function or
            ("gelu" if c.activation == "gelu" else "gelu_new"),
            "layer_norm_epsilon": c.norm_eps, "resid_pdrop": c.resid_dropout,
            "embd_pdrop": c.embd_dropout, "attn_pdrop": 0.0,
            "initializer_range": c.initializer_range, "scale_attn_weights": True,
            "scale_attn_by_inverse_layer_idx": False,
            "reorder_and_upcast_attn": c.reorder_and_upcast_attn,
            "tie_word_embeddings": c.tie_word_embeddings,
        }
    else:
        d = {
            "model_type": c.model_type, "vocab_size": c.vocab_size,
            "hidden_size": c.hidden_size, "intermediate_size": c.ffn_hidden_size,
            "num_hidden_layers": c.num_layers, "num_attention_heads": c.num_heads,
            "num_key_value_heads": c.num_kv_heads, "head_dim": c.head_dim,
            "hidden_act": "silu", "max_position_embeddings": c.max_positions,
            "rms_norm_eps": c.norm_eps,
            # transformers 5 reads rope_parameters, transformers 4 rope_theta.
            "rope_theta": c.rope_theta,
            "rope_parameters": {"rope_theta": c.rope_theta, "rope_type": "default"},
            "attention_dropout": 0.0,
        }
        if c.model_type == "llama":
            d.update(attention_bias=c.attn_bias, mlp_bias=c.mlp_bias)
        else:
            d.update(sliding_window=c.sliding_window, num_local_experts=c.num_experts,
                     num_experts_per_tok=c.experts_per_token,
                     router_aux_loss_coef=c.router_aux_loss_coef,
                     output_router_logits=c.output_router_logits, router_jitter_noise=0.0)
        d.update(initializer_range=c.initializer_range,
                 tie_word_embeddings=c.tie_word_embeddings)
    d.update(_token_ids(c))
    return d


def _defaults(cfg: ModelConfig) -> Dict[str, Any]:
    d = dict(_DEFAULTS[cfg.model_type])
    if d.get("num_key_value_heads", 0) is None:
        # Llama: an absent num_key_value_heads is num_attention_heads (which
        # the import checks first).
        d["num_key_value_heads"] = cfg.num_heads
    return d


# ----------------------------------------------------------------------------
# Tensors


def _zeros(n: int) -> Tuple[int, ...]:
    return (0,) * n


def _same(param, hf_shape=None) -> Part:
    """The whole parameter (logical shape), as is."""
    shape = tuple(hf_shape or param.logical_shape)
    return Part(param.name, _zeros(len(shape)), shape, _zeros(len(shape)))


def _transposed(param) -> Part:
    """The whole 2-D parameter (logical shape), transposed (``[in,out]`` -> ``[out,in]``)."""
    r, c = param.logical_shape
    return Part(param.name, (0, 0), (c, r), (0, 0), 0, True)


def _zero_part(shape) -> Part:
    shape = tuple(shape)
    return Part("", _zeros(len(shape)), shape, ())


def _gpt2_tensors(cfg: ModelConfig, p: Mapping[str, Any]) -> List[Tensor]:
    H, F = cfg.hidden_size, cfg.ffn_hidden_size
    qd = cfg.num_heads * cfg.head_dim
    out = []

    def t(name, shape, parts):
        out.append(Tensor("transformer." + name, tuple(shape), tuple(parts)))

    def vec(name, pname, n):
        t(name, (n,), [_same(p[pname])] if pname in p else [_zero_part((n,))])

    t("wte.weight", p["wte"].logical_shape, [_same(p["wte"])])
    t("wpe.weight", p["wpe"].logical_shape, [_same(p["wpe"])])
    for i in range(cfg.num_layers):
        L = f"layers.{i}."
        h = f"h.{i}."
        t(h + "ln_1.weight", (H,), [_same(p[L + "ln_1.weight"])])
        vec(h + "ln_1.bias", L + "ln_1.bias", H)
        # Conv1D [in, out]: the columns are q | k | v.
        t(h + "attn.c_attn.weight", (H, 3 * qd),
          [Part(p[L + f"attn.{w}"].name, (0, j * qd), (H, qd), (0, 0))
           for j, w in enumerate(("wq", "wk", "wv"))])
        if L + "attn.bq" in p:
            t(h + "attn.c_attn.bias", (3 * qd,),
              [Part(p[L + f"attn.{b}"].name, (j * qd,), (qd,), (0,))
               for j, b in enumerate(("bq", "bk", "bv"))])
        else:
            t(h + "attn.c_attn.bias", (3 * qd,), [_zero_part((3 * qd,))])
        t(h + "attn.c_proj.weight", (qd, H), [_same(p[L + "attn.wo"])])
        vec(h + "attn.c_proj.bias", L + "attn.bo", H)
        t(h + "ln_2.weight", (H,), [_same(p[L + "ln_2.weight"])])
        vec(h + "ln_2.bias", L + "ln_2.bias", H)
        t(h + "mlp.c_fc.weight", (H, F), [_same(p[L + "mlp.w_fc"])])
        vec(h + "mlp.c_fc.bias", L + "mlp.b_fc", F)
        t(h + "mlp.c_proj.weight", (F, H), [_same(p[L + "mlp.w_proj"])])
        vec(h + "mlp.c_proj.bias", L + "mlp.b_proj", H)
    t("ln_f.weight", (H,), [_same(p["ln_f.weight"])])
    vec("ln_f.bias", "ln_f.bias", H)
    return out


def _llama_tensors(cfg: ModelConfig, p: Mapping[str, Any]) -> List[Tensor]:
    H, F, E = cfg.hidden_size, cfg.ffn_hidden_size, cfg.num_experts
    out = []

    def t(name, parts, shape=None):
        parts = tuple(parts)
        if shape is None:
            shape = parts[0].hf_shape
        out.append(Tensor(name, tuple(shape), parts))

    t("model.embed_tokens.weight", [_same(p["tok_embeddings"])])
    for i in range(cfg.num_layers):
        L = f"layers.{i}."
        m = f"model.layers.{i}."
        for proj, w, b in (("q_proj", "wq", "bq"), ("k_proj", "wk", "bk"),
                           ("v_proj", "wv", "bv"), ("o_proj", "wo", "bo")):
            t(m + f"self_attn.{proj}.weight", [_transposed(p[L + "attn." + w])])
            if L + "attn." + b in p:
                t(m + f"self_attn.{proj}.bias", [_same(p[L + "attn." + b])])
        if cfg.is_moe:
            router = p[L + "moe.router"]
            t(m + "block_sparse_moe.gate.weight", [_transposed(router)])
            for e in range(E):
                # HF's legacy per-expert layout (what save_pretrained writes):
                # w1 = gate [F,H], w2 = down [H,F], w3 = up [F,H].
                for hf_w, ours, shape in (("w1", "w_gate", (F, H)), ("w2", "w_down", (H, F)),
                                          ("w3", "w_up", (F, H))):
                    t(m + f"block_sparse_moe.experts.{e}.{hf_w}.weight",
                      [Part(p[L + "moe.experts." + ours].name, (0, 0), shape, (e, 0, 0), 1,
                            True)])
        else:
            for proj, w, b in (("gate_proj", "w_gate", "b_gate"), ("up_proj", "w_up", "b_up"),
                               ("down_proj", "w_down", "b_down")):
                t(m + f"mlp.{proj}.weight", [_transposed(p[L + "mlp." + w])])
                if L + "mlp." + b in p:
                    t(m + f"mlp.{proj}.bias", [_same(p[L + "mlp." + b])])
        t(m + "input_layernorm.weight", [_same(p[L + "attention_norm.weight"])])
        t(m + "post_attention_layernorm.weight", [_same(p[L + "ffn_norm.weight"])])
    t("model.norm.weight", [_same(p["norm.weight"])])
    return out


def weight_map(cfg: ModelConfig, params: Sequence[Any]) -> WeightMap:
    """The weight map of a model (which must be Hugging Face compatible).

    Args:
        cfg: the model as built.
        params: its parameters (:func:`autoshard.models.parameter_specs`,
            vocabulary padded or not: the map covers the logical shapes).
    """
    p = {q.name: q for q in params}
    if cfg.model_type == "gpt2":
        tensors = _gpt2_tensors(cfg, p)
        check = tuple(_GPT2_DEFAULTS)
    else:
        tensors = _llama_tensors(cfg, p)
        check = tuple(_DEFAULTS[cfg.model_type])
    tied: Tuple[str, ...] = ()
    if cfg.tie_word_embeddings:
        tied = ("lm_head.weight",)
    else:
        # [H, Vp] -> [V, H]: the logical columns [0, V) only.
        tensors.append(Tensor("lm_head.weight", (cfg.vocab_size, cfg.hidden_size),
                              (_transposed(p["lm_head"]),)))
    return WeightMap(architecture=ARCHITECTURES[cfg.model_type], config=_config(cfg),
                     check=check, defaults=_defaults(cfg), prefix=_PREFIX[cfg.model_type],
                     ignore=_IGNORE[cfg.model_type], tied=tied, tensors=tuple(tensors))


# ----------------------------------------------------------------------------
# Checking


def _overlap(a_begin, a_shape, b_begin, b_shape) -> bool:
    return all(ab < bb + bs and bb < ab + as_
               for ab, as_, bb, bs in zip(a_begin, a_shape, b_begin, b_shape))


def _cover_problems(what: str, shape: Sequence[int], boxes) -> List[str]:
    """Problems of ``boxes`` ((label, begin, shape)) as an exact cover of ``shape``."""
    bad = []
    for label, begin, bshape in boxes:
        if len(begin) != len(shape) or len(bshape) != len(shape):
            bad.append(f"{what}: {label} has rank {len(bshape)}, expected {len(shape)}")
            continue
        if any(b < 0 or s < 0 or b + s > n for b, s, n in zip(begin, bshape, shape)):
            bad.append(f"{what}: {label} [{list(begin)} + {list(bshape)}] is outside "
                       f"{list(shape)}")
    if bad:
        return bad
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if _overlap(boxes[i][1], boxes[i][2], boxes[j][1], boxes[j][2]):
                bad.append(f"{what}: {boxes[i][0]} and {boxes[j][0]} overlap")
    covered = sum(math.prod(b[2]) for b in boxes)
    if not bad and covered != math.prod(shape):
        bad.append(f"{what}: the parts cover {covered} of {math.prod(shape)} elements")
    return bad


def verify(wm: WeightMap, params: Sequence[Any]) -> None:
    """Check that ``wm`` is an exact map of ``params``.

    Every tensor is covered exactly once by its parts; every part's
    parameter exists and the parts naming one parameter cover its logical
    shape exactly once; every parameter is named; names are unique and
    ``tied`` names are no tensors.

    Raises:
        ValueError: listing the problems.
    """
    by_name = {q.name: q for q in params}
    bad: List[str] = []
    names = [t.name for t in wm.tensors]
    if len(set(names)) != len(names):
        bad.append("tensor names are not unique")
    for n in wm.tied:
        if n in names:
            bad.append(f"tied name {n!r} is also a tensor")
    per_param: Dict[str, list] = {}
    for t in wm.tensors:
        bad += _cover_problems(t.name, t.shape, [(f"part {k}", q.hf_begin, q.hf_shape)
                                                 for k, q in enumerate(t.parts)])
        for k, q in enumerate(t.parts):
            if q.param == "":
                if q.param_begin or q.squeeze or q.transpose:
                    bad.append(f"{t.name}: zero part {k} has a parameter box")
                continue
            if q.param not in by_name:
                bad.append(f"{t.name}: part {k} names unknown parameter {q.param!r}")
                continue
            per_param.setdefault(q.param, []).append(
                (f"{t.name} part {k}", q.param_begin, q.param_shape))
    for name, q in by_name.items():
        boxes = per_param.get(name)
        if not boxes:
            bad.append(f"parameter {name!r} is not in the map")
            continue
        bad += _cover_problems(f"parameter {name!r}", q.logical_shape, boxes)
    if bad:
        raise ValueError("invalid Hugging Face weight map:\n  " + "\n  ".join(bad))


# ----------------------------------------------------------------------------
# MLIR


def _ints(xs: Sequence[int]) -> str:
    if not xs:
        return "array<i64>"
    return "array<i64: " + ", ".join(str(int(x)) for x in xs) + ">"


def _strs(xs: Sequence[str]) -> str:
    return "[" + ", ".join(fmt_str(x) for x in xs) + "]"


def _part_mlir(q: Part) -> str:
    return (f"{{param = {fmt_str(q.param)}, hf_begin = {_ints(q.hf_begin)}, "
            f"hf_shape = {_ints(q.hf_shape)}, param_begin = {_ints(q.param_begin)}, "
            f"squeeze = {fmt_i64(q.squeeze)}, transpose = {'true' if q.transpose else 'false'}}}")


def to_mlir(wm: WeightMap) -> str:
    """The ``hf`` dictionary attribute as MLIR text (one line)."""
    tensors = ", ".join(
        f"{{name = {fmt_str(t.name)}, shape = {_ints(t.shape)}, parts = ["
        + ", ".join(_part_mlir(q) for q in t.parts) + "]}"
        for t in wm.tensors)
    return (f"{{architecture = {fmt_str(wm.architecture)}, config = {fmt_str(wm.config_json())}, "
            f"check = {_strs(wm.check)}, defaults = {fmt_str(wm.defaults_json())}, "
            f"prefix = {fmt_str(wm.prefix)}, ignore = {_strs(wm.ignore)}, "
            f"tied = {_strs(wm.tied)}, tensors = [{tensors}]}}")


def hf_summary_item(cfg: ModelConfig, params: Sequence[Any], seq: int,
                    capacity: int) -> Tuple[str, str]:
    """The ``tfm.model`` entry: ``("hf", <dict>)`` or ``("hf_incompatible", <reason>)``.

    The map is verified (:func:`verify`) before it is emitted.
    """
    reason = incompatibility(cfg, seq, capacity)
    if reason is not None:
        return "hf_incompatible", fmt_str(reason)
    wm = weight_map(cfg, params)
    verify(wm, params)
    return "hf", to_mlir(wm)
