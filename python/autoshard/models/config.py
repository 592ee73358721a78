"""Model configuration: reading HF-style ``config.json`` files.

:func:`load_config` / :func:`config_from_dict` turn an HF-style config (the
keys of Hugging Face ``GPT2Config``, ``LlamaConfig``, ``MixtralConfig``, plus
nanoGPT's ``bias`` / ``dropout`` / ``block_size``) into a normalised,
validated :class:`ModelConfig`.  Every problem is reported as a
:class:`ConfigError` that names the offending key and value.

Supported ``model_type`` values and what they mean here:

``gpt2`` (alias ``nanogpt``)
    GPT-2 / nanoGPT: learned absolute positions, pre-LayerNorm blocks,
    multi-head attention, GELU MLP, final LayerNorm.
    Keys: ``vocab_size``, ``n_embd``, ``n_layer``, ``n_head``, ``n_positions``
    (or nanoGPT's ``block_size``) are required; ``n_inner`` (default
    ``4*n_embd``), ``activation_function`` (default ``gelu_new``),
    ``layer_norm_epsilon`` (1e-5), ``tie_word_embeddings`` (true),
    ``initializer_range`` (0.02), ``bias`` (true: biases on every linear
    layer and LayerNorm betas, as GPT-2; nanoGPT's ``bias: false`` removes
    them all), ``dropout`` (nanoGPT; sets both embedding and residual
    dropout) or HF's ``embd_pdrop`` / ``resid_pdrop``; default 0.0 (HF's
    GPT2Config default is 0.1, but pre-training configs and nanoGPT use 0).
    ``attn_pdrop`` (dropout on attention probabilities) cannot be expressed
    with the fused ``tfm.attention`` op and is rejected when non-zero.
    ``scale_attn_weights`` must be true and ``scale_attn_by_inverse_layer_idx``
    false (HF's defaults; the other values change the attention and are
    rejected); ``reorder_and_upcast_attn`` only changes HF's numerics and is
    accepted (and exported).  ``head_dim`` (not an HF GPT-2 key) may set the
    head size; unless ``head_dim * n_head == n_embd`` the model has no Hugging
    Face form (``hf_incompatible``).

    GELU: ``gelu`` (PyTorch's ``nn.GELU()``, what nanoGPT uses) is the exact
    erf form; ``gelu_new``, ``gelu_pytorch_tanh`` and ``gelu_fast`` (HF GPT-2's
    default) are the tanh approximation (``tanh_approx`` on ``tfm.gelu``).
    The activation is taken literally from the config file.

``llama``
    Llama 2/3: RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, no biases,
    untied LM head by default.  Required: ``vocab_size``, ``hidden_size``,
    ``intermediate_size``, ``num_hidden_layers``, ``num_attention_heads``,
    ``max_position_embeddings``.  Optional: ``num_key_value_heads`` (default
    = heads), ``head_dim`` (default hidden/heads), ``rms_norm_eps`` (1e-6),
    ``rope_theta`` (10000), ``hidden_act`` (must be ``silu``),
    ``tie_word_embeddings`` (false), ``attention_bias`` / ``mlp_bias``
    (false), ``initializer_range`` (0.02).  ``attention_dropout`` must be 0
    (as ``attn_pdrop``).

    RoPE, as transformers 5 reads it: ``rope_parameters`` (what transformers
    5 writes: ``{"rope_theta": ..., "rope_type": "default"}``) or the legacy
    ``rope_scaling`` (which, when set, replaces it) holds the RoPE type and
    may hold ``rope_theta``; a top-level ``rope_theta`` (transformers 4) is
    used when the dict has none, and both disagreeing is an error.  A
    ``rope_type`` other than ``default`` (llama3, linear, yarn, ...) is not
    modelled (tfm.rope has no scaling; shapes and FLOPs are unchanged): a
    warning is issued and the model has no Hugging Face form
    (``hf_incompatible``).  ``partial_rotary_factor`` other than 1 is
    rejected.

``mixtral``
    Llama attention (without biases: ``attention_bias`` and ``mlp_bias`` must
    be false) + sparse MoE FFN (SwiGLU experts, softmax top-k router with
    renormalised gates).  Llama keys plus required ``num_local_experts`` and
    ``num_experts_per_tok``; optional ``router_aux_loss_coef`` (default
    0.001) and ``output_router_logits`` (false).  Defaults follow HF's
    MixtralConfig where it differs from Llama: ``rope_theta`` 1e6,
    ``rms_norm_eps`` 1e-5, ``num_key_value_heads`` 8 when absent (given as
    null: = heads, as transformers 4 reads it).  As in HF, the router aux
    loss is part of the training loss only when ``output_router_logits`` is
    true (and ``router_aux_loss_coef > 0``).  ``sliding_window`` is not
    modelled (full causal attention): it is exact for sequences no longer
    than the window; building with a longer ``seq`` warns and the model has
    no Hugging Face form.  ``router_jitter_noise`` must be 0.

Every integer must fit in int64 (the IR's ``i64`` attributes and tensor
dims); sizes derived from them (tensor element counts, the parameter count)
are checked by the builder.  A required key given as ``null`` is reported as
null, not as missing; an optional key given as ``null`` takes its default (HF
writes e.g. ``"n_inner": null``).

Keys that are neither read for the model type nor known HF metadata (see
:data:`KNOWN_KEYS` and :data:`HF_COMMON_KEYS`) are ignored with a
:class:`ConfigWarning` (``unknown config key 'n_embdd' (ignored)``), so that a
misspelt key does not silently fall back to a default.  Every key
transformers 5 writes into these families' ``config.json`` is known.

Besides the model, :class:`ModelConfig` keeps what a Hugging Face export
needs (the activation's spelling, the token ids, and why the model has no
exact Hugging Face form, if so); see :mod:`autoshard.models.hf`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from typing import Any, Mapping, Optional, Tuple

__all__ = ["ConfigError", "ConfigWarning", "ModelConfig", "load_config", "config_from_dict",
           "INT64_MAX", "KNOWN_KEYS", "HF_COMMON_KEYS"]

#: Largest value of an MLIR ``i64`` (tensor dims, element counts, attributes).
INT64_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A model config (or a build option) is invalid.

    The message names the offending key (or option) and its value.
    """


class ConfigWarning(UserWarning):
    """A model config has something that is accepted but ignored."""


#: Keys of Hugging Face ``PretrainedConfig`` (metadata, tokenizer ids,
#: generation defaults, task heads) that any config.json may carry and that do
#: not change the model this package builds.  Keys starting with ``_``
#: (``_name_or_path``, ``_attn_implementation``, ...) are HF internals and are
#: accepted too.
HF_COMMON_KEYS = frozenset({
    "model_type", "architectures", "auto_map", "torch_dtype", "dtype", "transformers_version",
    "use_cache", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
    "decoder_start_token_id", "return_dict", "output_hidden_states", "output_attentions",
    "torchscript", "use_bfloat16", "tf_legacy_loss", "pruned_heads", "tie_encoder_decoder",
    "is_decoder", "is_encoder_decoder", "add_cross_attention", "cross_attention_hidden_size",
    "chunk_size_feed_forward", "problem_type", "finetuning_task", "id2label", "label2id",
    "num_labels", "task_specific_params", "tokenizer_class", "prefix", "quantization_config",
    # generation defaults (older configs keep them in config.json)
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
    "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
    "num_return_sequences", "output_scores", "return_dict_in_generate", "forced_bos_token_id",
    "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
    "suppress_tokens", "begin_suppress_tokens",
})

_LLAMA_KEYS = frozenset({
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_act",
    "max_position_embeddings", "initializer_range", "rms_norm_eps", "rope_theta",
    "rope_scaling", "rope_parameters", "tie_word_embeddings", "attention_bias", "mlp_bias",
    "attention_dropout", "pretraining_tp", "partial_rotary_factor",
})

#: Per model type, the keys read or knowingly ignored (HF's ``GPT2Config``,
#: ``LlamaConfig``, ``MixtralConfig`` and nanoGPT's extras), besides
#: :data:`HF_COMMON_KEYS`.
KNOWN_KEYS = {
    "gpt2": frozenset({
        "vocab_size", "n_positions", "n_ctx", "n_embd", "n_layer", "n_head", "n_inner",
        "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon",
        "initializer_range", "tie_word_embeddings", "scale_attn_weights",
        "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "summary_type",
        "summary_use_proj", "summary_activation", "summary_proj_to_labels",
        "summary_first_dropout", "head_dim",
        # nanoGPT
        "block_size", "bias", "dropout",
    }),
    "llama": _LLAMA_KEYS,
    "mixtral": _LLAMA_KEYS | {
        "num_local_experts", "num_experts_per_tok", "router_aux_loss_coef",
        "output_router_logits", "router_jitter_noise", "sliding_window",
    },
}


_GELU_EXACT = {"gelu"}
_GELU_TANH = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast"}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A normalised model description, independent of HF key spellings.

    All sizes are element counts (not bytes).

    Attributes:
        name: model name (the config file's stem unless given).
        model_type: ``"gpt2"``, ``"llama"`` or ``"mixtral"``.
        vocab_size: V, the real (unpadded) vocabulary size.
        hidden_size: H.
        num_layers: number of Transformer blocks.
        num_heads: N, query heads.
        num_kv_heads: G, key/value heads (== N without GQA).
        head_dim: D.
        ffn_hidden_size: F, MLP (or per-expert) inner size.
        max_positions: P, the longest sequence the model supports.
        norm: ``"layer_norm"`` or ``"rms_norm"``.
        norm_eps: epsilon of every norm.
        norm_bias: LayerNorm has a beta.
        attn_bias: q/k/v/o projections have biases.
        mlp_bias: MLP projections have biases.
        activation: ``"gelu"`` (exact), ``"gelu_tanh"`` or ``"swiglu"``.
        positions: ``"learned"`` (position table) or ``"rope"``.
        rope_theta: RoPE base (only for ``positions == "rope"``).
        tie_word_embeddings: LM head reuses the token embedding.
        initializer_range: std of the normal init of weight matrices.
        embd_dropout: dropout rate after the embedding sum.
        resid_dropout: dropout rate on each block's two residual branches.
        num_experts: E (0 for dense models).
        experts_per_token: K, top-k of the router (0 for dense models).
        router_aux_loss_coef: weight of the load-balancing loss.
        output_router_logits: HF's switch for the load-balancing loss: it
            is part of the training loss only when this is true.
        sliding_window: Mixtral's attention window (None: full attention);
            not modelled, see :mod:`autoshard.models.config`.
        activation_function: GPT-2's ``activation_function`` as spelt in the
            config (exported as is); None for the other families.
        reorder_and_upcast_attn: GPT-2's flag (HF numerics only; exported).
        token_ids: the config's ``bos_token_id`` / ``eos_token_id`` /
            ``pad_token_id`` entries, as ``(key, value)`` pairs (exported).
        hf_incompatible: why the model has no exact Hugging Face form
            (config-level reasons; the builder adds option-level ones).
        source: path of the config file, if loaded from one.
    """

    name: str
    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    ffn_hidden_size: int
    max_positions: int
    norm: str
    norm_eps: float
    norm_bias: bool
    attn_bias: bool
    mlp_bias: bool
    activation: str
    positions: str
    rope_theta: float
    tie_word_embeddings: bool
    initializer_range: float
    embd_dropout: float = 0.0
    resid_dropout: float = 0.0
    num_experts: int = 0
    experts_per_token: int = 0
    router_aux_loss_coef: float = 0.0
    output_router_logits: bool = False
    sliding_window: Optional[int] = None
    activation_function: Optional[str] = None
    reorder_and_upcast_attn: bool = False
    token_ids: Tuple[Tuple[str, Any], ...] = ()
    hf_incompatible: Tuple[str, ...] = ()
    source: Optional[str] = None

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models."""
        return self.num_experts > 0

    @property
    def uses_dropout(self) -> bool:
        """True when any dropout rate is non-zero (the model needs a step input)."""
        return self.embd_dropout > 0.0 or self.resid_dropout > 0.0

    @property
    def uses_aux_loss(self) -> bool:
        """True when the router load-balancing loss is part of the training loss.

        As in HF Mixtral: only with ``output_router_logits`` and a positive
        ``router_aux_loss_coef``.
        """
        return self.is_moe and self.output_router_logits and self.router_aux_loss_coef > 0.0


# ----------------------------------------------------------------------------
# Key readers: each names the key and the value it rejects.


class _Reader:
    def __init__(self, raw: Mapping[str, Any], where: str):
        self.raw = raw
        self.where = where

    def _err(self, msg: str) -> ConfigError:
        return ConfigError(f"{self.where}: {msg}")

    def has(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def absent(self, key: str, what: str = "") -> ConfigError:
        """The error for a required key that is missing or null."""
        if key in self.raw:
            return self._err(f"key '{key}' is null{what}")
        return self._err(f"missing required key '{key}'{what}")

    def int(self, key: str, default: Optional[int] = None, *, minimum: int = 1) -> int:
        if not self.has(key):
            if default is None:
                raise self.absent(key, " (expected an integer)" if key in self.raw else "")
            return default
        v = self.raw[key]
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._err(f"key '{key}' must be an integer, got {v!r}")
        if v < minimum:
            raise self._err(f"key '{key}' must be >= {minimum}, got {v!r}")
        if v > INT64_MAX:
            raise self._err(f"key '{key}' = {v} does not fit in int64 "
                            f"(at most {INT64_MAX})")
        return v

    def float(self, key: str, default: Optional[float] = None, *, lo: float = 0.0,
              hi: float = math.inf, lo_open: bool = False, hi_open: bool = False) -> float:
        if not self.has(key):
            if default is None:
                raise self.absent(key)
            return float(default)
        v = self.raw[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._err(f"key '{key}' must be a finite number, got {v!r}")
        try:
            v = float(v)
        except OverflowError:  # an int beyond the float range
            raise self._err(f"key '{key}' must be a finite number, got {v!r}") from None
        if not math.isfinite(v):
            raise self._err(f"key '{key}' must be a finite number, got {v!r}")
        bad_lo = v <= lo if lo_open else v < lo
        bad_hi = v >= hi if hi_open else v > hi
        if bad_lo or bad_hi:
            lb = "(" if lo_open else "["
            rb = ")" if hi_open else "]"
            raise self._err(f"key '{key}' must be in {lb}{lo}, {hi}{rb}, got {v!r}")
        return v

    def bool(self, key: str, default: bool) -> bool:
        if not self.has(key):
            return default
        v = self.raw[key]
        if not isinstance(v, bool):
            raise self._err(f"key '{key}' must be true or false, got {v!r}")
        return v

    def str(self, key: str, default: Optional[str] = None) -> str:
        if not self.has(key):
            if default is None:
                raise self.absent(key)
            return default
        v = self.raw[key]
        if not isinstance(v, str):
            raise self._err(f"key '{key}' must be a string, got {v!r}")
        return v


_TOKEN_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


def _token_ids(r: _Reader) -> Tuple[Tuple[str, Any], ...]:
    """The config's token ids (an int, a list of ints for eos, or null), for exports."""
    out = []
    for key in _TOKEN_ID_KEYS:
        if key not in r.raw:
            continue
        v = r.raw[key]
        ok = v is None or (isinstance(v, int) and not isinstance(v, bool)) or (
            isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v))
        if not ok:
            raise r._err(f"key '{key}' must be an integer, a list of integers or null, got {v!r}")
        out.append((key, tuple(v) if isinstance(v, list) else v))
    return tuple(out)


def _zero_rate(r: _Reader, key: str) -> None:
    """A dropout rate on attention probabilities: only 0 can be built."""
    p = r.float(key, 0.0, hi=1.0, hi_open=True)
    if p > 0.0:
        raise r._err(f"key '{key}' = {r.raw[key]!r} is not supported (dropout on attention "
                     "probabilities cannot be expressed with the fused tfm.attention op); set it to 0")


def _heads(r: _Reader, hidden: int, heads_key: str, hidden_key: str):
    heads = r.int(heads_key)
    if r.has("head_dim"):
        head_dim = r.int("head_dim")
    else:
        if hidden % heads != 0:
            raise r._err(f"'{heads_key}' = {heads} does not divide '{hidden_key}' = {hidden}")
        head_dim = hidden // heads
    return heads, head_dim


def _gpt2(r: _Reader, name: str, source: Optional[str]) -> ModelConfig:
    vocab = r.int("vocab_size")
    hidden = r.int("n_embd")
    layers = r.int("n_layer")
    heads, head_dim = _heads(r, hidden, "n_head", "n_embd")
    if r.has("n_positions"):
        positions = r.int("n_positions")
    elif r.has("block_size"):
        positions = r.int("block_size")
    else:
        raise r.absent("n_positions", " (or nanoGPT's 'block_size')")
    ffn = r.int("n_inner", 4 * hidden)
    if ffn > INT64_MAX:
        raise r._err(f"the default 'n_inner' = 4 * 'n_embd' = {ffn} does not fit in int64; "
                     "set 'n_inner'")
    act = r.str("activation_function", "gelu_new")
    if act in _GELU_EXACT:
        activation = "gelu"
    elif act in _GELU_TANH:
        activation = "gelu_tanh"
    else:
        raise r._err(f"key 'activation_function' = {act!r} is not supported "
                     f"(expected one of {sorted(_GELU_EXACT | _GELU_TANH)})")
    bias = r.bool("bias", True)
    if r.has("dropout"):
        embd = resid = r.float("dropout", 0.0, hi=1.0, hi_open=True)
    else:
        embd = r.float("embd_pdrop", 0.0, hi=1.0, hi_open=True)
        resid = r.float("resid_pdrop", 0.0, hi=1.0, hi_open=True)
    _zero_rate(r, "attn_pdrop")
    if not r.bool("scale_attn_weights", True):
        raise r._err("key 'scale_attn_weights' = False is not supported (tfm.attention scales "
                     "by 1/sqrt(head_dim)); set it to true")
    if r.bool("scale_attn_by_inverse_layer_idx", False):
        raise r._err("key 'scale_attn_by_inverse_layer_idx' = True is not supported (every "
                     "layer's attention is scaled by 1/sqrt(head_dim) only); set it to false")
    reorder = r.bool("reorder_and_upcast_attn", False)
    incompatible = []
    if heads * head_dim != hidden:
        incompatible.append(f"'head_dim' = {head_dim} times 'n_head' = {heads} is not 'n_embd' "
                            f"= {hidden} (Hugging Face GPT-2 has head_dim = n_embd / n_head)")
    return ModelConfig(
        name=name, model_type="gpt2", vocab_size=vocab, hidden_size=hidden,
        num_layers=layers, num_heads=heads, num_kv_heads=heads, head_dim=head_dim,
        ffn_hidden_size=ffn, max_positions=positions, norm="layer_norm",
        norm_eps=r.float("layer_norm_epsilon", 1e-5, lo_open=True), norm_bias=bias,
        attn_bias=bias, mlp_bias=bias, activation=activation, positions="learned",
        rope_theta=0.0, tie_word_embeddings=r.bool("tie_word_embeddings", True),
        initializer_range=r.float("initializer_range", 0.02, lo_open=True),
        embd_dropout=embd, resid_dropout=resid, activation_function=act,
        reorder_and_upcast_attn=reorder, token_ids=_token_ids(r),
        hf_incompatible=tuple(incompatible), source=source)


#: transformers' defaults where Mixtral's differ from Llama's (MixtralConfig).
_LLAMA_DEFAULTS = {"rope_theta": 10000.0, "rms_norm_eps": 1e-6}
_MIXTRAL_DEFAULTS = {"rope_theta": 1e6, "rms_norm_eps": 1e-5, "num_key_value_heads": 8}


def _rope(r: _Reader, model_type: str) -> Tuple[float, Optional[str]]:
    """RoPE base and, for a RoPE type that is not modelled, that type.

    As transformers 5 reads it: a non-empty ``rope_scaling`` (legacy) replaces
    ``rope_parameters``; its ``rope_theta`` wins over a top-level one, which
    wins over the family default; ``rope_type`` (legacy ``type``) defaults to
    ``"default"``.
    """
    dicts = {}
    for key in ("rope_scaling", "rope_parameters"):
        if r.has(key):
            v = r.raw[key]
            if not isinstance(v, Mapping):
                raise r._err(f"key '{key}' must be an object or null, got {v!r}")
            if v:
                dicts[key] = v
    if len(dicts) == 2 and dicts["rope_scaling"] != dicts["rope_parameters"]:
        raise r._err("both 'rope_scaling' and 'rope_parameters' are given and differ "
                     "(transformers 5 uses 'rope_scaling' and drops 'rope_parameters'); "
                     "keep one")
    key, rp = next(iter(dicts.items()), ("rope_parameters", {}))
    sub = _Reader(rp, f"{r.where}: '{key}'")
    default = (_MIXTRAL_DEFAULTS if model_type == "mixtral" else _LLAMA_DEFAULTS)["rope_theta"]
    theta = r.float("rope_theta", default, lo_open=True)
    if sub.has("rope_theta"):
        inner = sub.float("rope_theta", lo_open=True)
        if r.has("rope_theta") and inner != theta:
            raise r._err(f"'{key}' has 'rope_theta' = {rp['rope_theta']!r} but the top-level "
                         f"'rope_theta' = {r.raw['rope_theta']!r}; they must agree")
        theta = inner
    for rd, where in ((sub, f"'{key}'"), (r, "the config")):
        if rd.has("partial_rotary_factor") and \
                rd.float("partial_rotary_factor", lo_open=True) != 1.0:
            raise r._err(f"'partial_rotary_factor' = {rd.raw['partial_rotary_factor']!r} in "
                         f"{where} is not supported (tfm.rope rotates the whole head)")
    rope_type = rp.get("rope_type", rp.get("type", "default"))
    if not isinstance(rope_type, str):
        raise r._err(f"'{key}' has 'rope_type' = {rope_type!r}, expected a string")
    if rope_type == "default":
        return theta, None
    warnings.warn(f"{r.where}: '{key}' (rope_type {rope_type!r}) is ignored (tfm.rope has no "
                  "scaling; shapes and FLOPs are unchanged)", ConfigWarning, stacklevel=4)
    return theta, rope_type


def _llama_like(r: _Reader, name: str, source: Optional[str], model_type: str) -> ModelConfig:
    defaults = _MIXTRAL_DEFAULTS if model_type == "mixtral" else _LLAMA_DEFAULTS
    vocab = r.int("vocab_size")
    hidden = r.int("hidden_size")
    ffn = r.int("intermediate_size")
    layers = r.int("num_hidden_layers")
    heads, head_dim = _heads(r, hidden, "num_attention_heads", "hidden_size")
    # HF: absent -> the family default (Llama: = heads; Mixtral: 8); null -> = heads.
    kv_default = heads if "num_key_value_heads" in r.raw else \
        defaults.get("num_key_value_heads", heads)
    kv = r.int("num_key_value_heads", kv_default)
    if heads % kv != 0:
        raise r._err(f"'num_key_value_heads' = {kv} does not divide "
                     f"'num_attention_heads' = {heads}")
    if head_dim % 2 != 0:
        raise r._err(f"RoPE needs an even head dim, got {head_dim} "
                     f"(hidden_size {hidden} / num_attention_heads {heads})")
    positions = r.int("max_position_embeddings")
    act = r.str("hidden_act", "silu")
    if act != "silu":
        raise r._err(f"key 'hidden_act' = {act!r} is not supported (expected 'silu')")
    _zero_rate(r, "attention_dropout")
    theta, rope_type = _rope(r, model_type)
    incompatible = []
    if rope_type is not None:
        incompatible.append(f"RoPE type {rope_type!r} is not modelled (tfm.rope has no scaling)")
    experts = topk = 0
    coef = 0.0
    router_logits = False
    window = None
    attn_bias = r.bool("attention_bias", False)
    mlp_bias = r.bool("mlp_bias", False)
    if model_type == "mixtral":
        experts = r.int("num_local_experts")
        topk = r.int("num_experts_per_tok")
        if topk > experts:
            raise r._err(f"'num_experts_per_tok' = {topk} exceeds "
                         f"'num_local_experts' = {experts}")
        coef = r.float("router_aux_loss_coef", 0.001)
        router_logits = r.bool("output_router_logits", False)
        for key, on in (("mlp_bias", mlp_bias), ("attention_bias", attn_bias)):
            if on:
                raise r._err(f"key '{key}' = True is not supported for mixtral (HF's "
                             "MixtralConfig has no such key: its layers have no biases)")
        jitter = r.float("router_jitter_noise", 0.0)
        if jitter > 0.0:
            raise r._err(f"key 'router_jitter_noise' = {r.raw['router_jitter_noise']!r} is not "
                         "supported (the router input is not perturbed); set it to 0")
        if r.has("sliding_window"):
            window = r.int("sliding_window")
    return ModelConfig(
        name=name, model_type=model_type, vocab_size=vocab, hidden_size=hidden,
        num_layers=layers, num_heads=heads, num_kv_heads=kv, head_dim=head_dim,
        ffn_hidden_size=ffn, max_positions=positions, norm="rms_norm",
        norm_eps=r.float("rms_norm_eps", defaults["rms_norm_eps"], lo_open=True),
        norm_bias=False, attn_bias=attn_bias, mlp_bias=mlp_bias, activation="swiglu",
        positions="rope", rope_theta=theta,
        tie_word_embeddings=r.bool("tie_word_embeddings", False),
        initializer_range=r.float("initializer_range", 0.02, lo_open=True),
        num_experts=experts, experts_per_token=topk, router_aux_loss_coef=coef,
        output_router_logits=router_logits, sliding_window=window, token_ids=_token_ids(r),
        hf_incompatible=tuple(incompatible), source=source)


_FAMILIES = {"gpt2": "gpt2", "nanogpt": "gpt2", "llama": "llama", "mixtral": "mixtral"}


def unknown_keys(raw: Mapping[str, Any], model_type: str) -> list:
    """Keys of ``raw`` that a ``model_type`` config does not use, in file order."""
    known = KNOWN_KEYS[_FAMILIES[model_type]] | HF_COMMON_KEYS
    return [k for k in raw if not (isinstance(k, str) and (k in known or k.startswith("_")))]


def _warn_unknown_keys(raw: Mapping[str, Any], family: str) -> None:
    for key in unknown_keys(raw, family):
        # stacklevel 3: the caller of config_from_dict.
        warnings.warn(f"unknown config key {key!r} (ignored)", ConfigWarning, stacklevel=3)


def config_from_dict(raw: Mapping[str, Any], name: str = "model",
                     source: Optional[str] = None) -> ModelConfig:
    """Validate an HF-style config dict and return a :class:`ModelConfig`.

    Args:
        raw: the parsed ``config.json`` contents.
        name: model name used in the IR (function names are derived from the
            model type, not from this) and in messages.
        source: where ``raw`` came from, used in error messages.

    Raises:
        ConfigError: a required key is missing or null, a value has the wrong
            type or range (integers must fit in int64), heads do not divide
            the hidden size, kv heads do not divide heads, an activation is
            unsupported, or ``model_type`` is unknown.

    Warns:
        ConfigWarning: for each key that is not used for this model type and
            is not HF metadata (it is ignored).
    """
    where = source or name
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: config must be a JSON object, got {type(raw).__name__}")
    r = _Reader(raw, where)
    mt = r.str("model_type")
    family = _FAMILIES.get(mt)
    if family is None:
        raise ConfigError(f"{where}: unknown 'model_type' = {mt!r} "
                          f"(supported: {', '.join(sorted(_FAMILIES))})")
    _warn_unknown_keys(raw, family)
    if family == "gpt2":
        return _gpt2(r, name, source)
    return _llama_like(r, name, source, family)


def load_config(path: "os.PathLike[str] | str", name: Optional[str] = None) -> ModelConfig:
    """Read and validate an HF-style ``config.json``.

    Args:
        path: the JSON file.
        name: model name; defaults to the file name without ``.json``.

    Raises:
        ConfigError: the file cannot be read, is not valid JSON, or the
            config is invalid (see :func:`config_from_dict`).
    """
    path = os.fspath(path)
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: invalid JSON: {e}") from e
    if name is None:
        base = os.path.basename(path)
        name = base[:-5] if base.endswith(".json") else base
        if name == "config":  # HF layout: <model>/config.json
            name = os.path.basename(os.path.dirname(os.path.abspath(path))) or name
    return config_from_dict(raw, name=name, source=path)
