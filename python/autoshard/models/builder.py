"""Model builder: ``ModelConfig`` -> ``tfm`` dialect IR text.

The emitted module (global, unsharded shapes; forward + loss only; the
training step is derived later by ``shard-opt --tfm-autodiff``)::

    module attributes {tfm.model = {...summary...}} {
      // one private function per distinct block signature (one for these models)
      func.func private @gpt2_block(%x: tensor<BxSxHxf32> {tfm.role = "hidden"},
                                    %layer: tensor<i64> {tfm.role = "layer_index"},
                                    [%step: tensor<i64> {tfm.role = "step"},]  // dropout > 0 only
                                    <that layer's weights, same order as in @forward>)
          -> tensor<BxSxHxf32>                          // MoE: -> (hidden, tensor<f32> aux loss)
      func.func @forward(%ids: tensor<BxSxi32> {tfm.input = "tokens"},
                         %labels: tensor<BxSxi32> {tfm.input = "labels"},
                         [%step: tensor<i64> {tfm.input = "step"},]
                         <every parameter, with tfm.param/tfm.role/tfm.init[/tfm.init_std]>)
          -> tensor<f32>                                 // mean loss
    }

Conventions:

* Weights are ``[in, out]`` (``y = x @ W``); q, k and v have separate weights
  (no fused QKV) so that tensor parallelism splits heads cleanly; expert
  weights are batched ``[E, in, out]``.
* Attention: ``[B,S,N*D]`` is reshaped to ``[B,S,N,D]``, ``tfm.attention
  {causal, scale = 1/sqrt(D)}`` (result #0 used; #1 is the log-sum-exp) and
  reshaped back.
* Parameters are function arguments of ``@forward`` in this order: token
  embedding, position table (GPT-2), each layer's weights in block order,
  final norm, LM head (untied models only).  Argument attributes:
  ``tfm.param`` (stable name, e.g. ``"layers.3.attn.wq"``), ``tfm.role``
  (one of :data:`ROLES`), ``tfm.init`` (``"normal"``, ``"ones"``,
  ``"zeros"``) and ``tfm.init_std`` (f64, normal only); biases (including
  LayerNorm betas) also carry ``tfm.bias_of = "<role of what they belong
  to>"`` so that a plan can shard a column-parallel bias like its weight.
  Padded vocab tables carry ``tfm.vocab_size`` (the real V).  Block
  arguments carry ``tfm.role`` (``hidden``, ``layer_index``, ``step`` or the
  parameter role) and ``tfm.name`` (layer-local name, e.g. ``"attn.wq"``).
* Init follows nanoGPT: normal(0, initializer_range) for every matrix and
  embedding, normal(0, initializer_range / sqrt(2 * n_layer)) for the
  residual projections (``attn_out``, ``mlp_down``, ``expert_down``), zeros
  for biases, ones for norm weights.
* Dropout (GPT-2/nanoGPT only, when the config's rate > 0): ``tfm.dropout``
  with ``site = 0`` after the embedding sum (layer operand = constant 0),
  ``site = 1`` on the attention residual branch and ``site = 2`` on the MLP
  residual branch (layer operand = the block's layer index).  The step is an
  input of ``@forward``.
* MoE (Mixtral): ``logits = x @ router [H,E]`` -> ``tfm.moe_router {top_k,
  renormalize}`` -> ``tfm.moe_dispatch {num_experts, capacity}`` ->
  ``[E,B,C,H]`` reshaped to ``[E,B*C,H]`` -> batched SwiGLU expert matmuls ->
  reshaped back -> ``tfm.moe_combine``.  Capacity C (slots per expert per
  sequence) is dropless by default: ``C = S``, the exact maximum number of
  tokens one expert can receive from a sequence (the K choices of a token are
  distinct experts).  ``max_tokens_per_expert = N`` bounds a dropless layer's
  buffers at ``C = N`` instead (``tfm.moe_dispatch {dropless}``: no token is
  ever dropped; a sequence that routes more than N tokens to one expert is a
  clear runtime error), so dispatch memory and all-to-all bytes follow N
  rather than the worst case.  With ``capacity_factor = cf``:
  ``C = min(S, ceil(cf * S * K / E))`` (tokens beyond C are dropped, in the
  order of tfm.moe_dispatch).  When the config's ``output_router_logits`` is
  true (as in HF, which adds the aux loss only then) and
  ``router_aux_loss_coef > 0``, each block returns its ``tfm.moe_aux_loss``;
  ``@forward`` sums them and adds ``router_aux_loss_coef * mean over layers``
  to the cross-entropy (HF's ``load_balancing_loss_func`` also pools all
  layers into one term of the same scale).  Otherwise the aux loss is not
  computed and blocks return only the hidden state.
* Vocab padding (``vocab_multiple``): the embedding table is ``[Vp, H]`` and
  an untied LM head ``[H, Vp]`` with ``Vp = ceil(V / m) * m``; the logits are
  ``[B, S, Vp]`` and ``tfm.cross_entropy {vocab_size = V}`` masks the padded
  classes, so the padded model is the unpadded one.  Parameter counts always
  report the unpadded model.
* Hugging Face: the summary carries the weight map ``hf`` (every HF tensor
  as boxes of parameters, the config.json an export writes, ...; see
  :mod:`autoshard.models.hf` and docs/hf-checkpoints.md), or
  ``hf_incompatible = "<reason>"`` when the built model has no exact HF form
  (e.g. ``capacity_factor`` below dropless, a RoPE type that is not
  modelled).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from . import hf
from .config import INT64_MAX, ConfigError, ConfigWarning, ModelConfig
from .ir import (UNIT, FuncBuilder, Int64OverflowError, TensorType, Value, fmt_f64, fmt_i64,
                 fmt_str)

__all__ = ["ROLES", "DTYPES", "Param", "parameter_specs", "count_parameters",
           "moe_capacity", "padded_vocab_size", "build_model"]

#: Parameter roles (``tfm.role`` of parameter arguments).
ROLES = ("embedding", "pos_embedding", "attn_q", "attn_k", "attn_v", "attn_out",
         "mlp_up", "mlp_gate", "mlp_down", "norm", "lm_head", "router",
         "expert_up", "expert_gate", "expert_down", "bias")

#: Element types accepted for parameters and activations.
DTYPES = ("f32", "bf16", "f16", "f64")

# dropout sites (the RNG key is (seed, step, layer, site, element))
SITE_EMBEDDING = 0
SITE_ATTN_RESID = 1
SITE_MLP_RESID = 2


@dataclasses.dataclass(frozen=True)
class Param:
    """One model parameter, as it appears in ``@forward``'s argument list.

    Attributes:
        name: stable full name (``tfm.param``), e.g. ``"layers.3.attn.wq"``.
        local: name inside its layer (``"attn.wq"``); equals ``name`` for
            parameters outside the blocks.
        layer: layer index, or None outside the blocks.
        role: one of :data:`ROLES`.
        shape: emitted shape (vocab dims padded).
        logical_shape: shape of the unpadded model.
        init: ``"normal"``, ``"ones"`` or ``"zeros"``.
        init_std: std of the normal init (None otherwise).
        bias_of: for biases, the role of the weight (or ``"norm"``) they belong to.
        vocab_size: for vocab-sized tables, the real V (None otherwise).
    """

    name: str
    local: str
    layer: Optional[int]
    role: str
    shape: Tuple[int, ...]
    logical_shape: Tuple[int, ...]
    init: str
    init_std: Optional[float] = None
    bias_of: Optional[str] = None
    vocab_size: Optional[int] = None

    @property
    def numel(self) -> int:
        """Element count of the unpadded parameter."""
        return math.prod(self.logical_shape)

    def attrs(self, local: bool = False) -> Dict[str, object]:
        """MLIR argument attributes (``local``: the block-function form)."""
        a: Dict[str, object] = {}
        if local:
            a["tfm.name"] = fmt_str(self.local)
        else:
            a["tfm.param"] = fmt_str(self.name)
        a["tfm.role"] = fmt_str(self.role)
        if self.bias_of is not None:
            a["tfm.bias_of"] = fmt_str(self.bias_of)
        if not local:
            a["tfm.init"] = fmt_str(self.init)
            if self.init_std is not None:
                a["tfm.init_std"] = fmt_f64(self.init_std)
            if self.vocab_size is not None and self.shape != self.logical_shape:
                a["tfm.vocab_size"] = fmt_i64(self.vocab_size)
        return a


def padded_vocab_size(vocab_size: int, vocab_multiple: int = 1) -> int:
    """``vocab_size`` rounded up to a multiple of ``vocab_multiple`` (>= 1)."""
    if isinstance(vocab_multiple, bool) or not isinstance(vocab_multiple, int) or vocab_multiple < 1:
        raise ConfigError(f"option vocab_multiple must be an integer >= 1, got {vocab_multiple!r}")
    padded = -(-vocab_size // vocab_multiple) * vocab_multiple
    if padded > INT64_MAX:
        raise ConfigError(f"option vocab_multiple = {vocab_multiple}: the padded vocab size "
                          f"{padded} does not fit in int64")
    return padded


# ----------------------------------------------------------------------------
# Parameter lists


class _PB:
    """Collects the parameters of one scope (model level or one layer)."""

    def __init__(self, cfg: ModelConfig, layer: Optional[int]):
        self.cfg = cfg
        self.layer = layer
        self.params: List[Param] = []
        self.std = cfg.initializer_range
        self.resid_std = cfg.initializer_range / math.sqrt(2.0 * cfg.num_layers)

    def add(self, local: str, role: str, shape, init: str, std: Optional[float] = None,
            bias_of: Optional[str] = None, logical=None, vocab_size=None) -> None:
        name = local if self.layer is None else f"layers.{self.layer}.{local}"
        shape = tuple(shape)
        self.params.append(Param(name=name, local=local, layer=self.layer, role=role,
                                 shape=shape, logical_shape=tuple(logical or shape),
                                 init=init, init_std=std if init == "normal" else None,
                                 bias_of=bias_of, vocab_size=vocab_size))

    def weight(self, local: str, role: str, shape, resid: bool = False) -> None:
        self.add(local, role, shape, "normal", self.resid_std if resid else self.std)

    def bias(self, local: str, of: str, n: int) -> None:
        self.add(local, "bias", (n,), "zeros", bias_of=of)

    def norm(self, prefix: str, n: int, with_bias: bool) -> None:
        self.add(f"{prefix}.weight", "norm", (n,), "ones")
        if with_bias:
            self.bias(f"{prefix}.bias", "norm", n)


def _attn_params(pb: _PB) -> None:
    c = pb.cfg
    H, qd, kvd = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    for w, b, role, out in (("wq", "bq", "attn_q", qd), ("wk", "bk", "attn_k", kvd),
                            ("wv", "bv", "attn_v", kvd)):
        pb.weight(f"attn.{w}", role, (H, out))
        if c.attn_bias:
            pb.bias(f"attn.{b}", role, out)
    pb.weight("attn.wo", "attn_out", (qd, H), resid=True)
    if c.attn_bias:
        pb.bias("attn.bo", "attn_out", H)


def _layer_params(cfg: ModelConfig, i: int) -> List[Param]:
    pb = _PB(cfg, i)
    H, F = cfg.hidden_size, cfg.ffn_hidden_size
    if cfg.model_type == "gpt2":
        pb.norm("ln_1", H, cfg.norm_bias)
        _attn_params(pb)
        pb.norm("ln_2", H, cfg.norm_bias)
        pb.weight("mlp.w_fc", "mlp_up", (H, F))
        if cfg.mlp_bias:
            pb.bias("mlp.b_fc", "mlp_up", F)
        pb.weight("mlp.w_proj", "mlp_down", (F, H), resid=True)
        if cfg.mlp_bias:
            pb.bias("mlp.b_proj", "mlp_down", H)
    else:
        pb.norm("attention_norm", H, False)
        _attn_params(pb)
        pb.norm("ffn_norm", H, False)
        if cfg.is_moe:
            E = cfg.num_experts
            pb.weight("moe.router", "router", (H, E))
            pb.weight("moe.experts.w_gate", "expert_gate", (E, H, F))
            pb.weight("moe.experts.w_up", "expert_up", (E, H, F))
            pb.weight("moe.experts.w_down", "expert_down", (E, F, H), resid=True)
        else:
            pb.weight("mlp.w_gate", "mlp_gate", (H, F))
            if cfg.mlp_bias:
                pb.bias("mlp.b_gate", "mlp_gate", F)
            pb.weight("mlp.w_up", "mlp_up", (H, F))
            if cfg.mlp_bias:
                pb.bias("mlp.b_up", "mlp_up", F)
            pb.weight("mlp.w_down", "mlp_down", (F, H), resid=True)
            if cfg.mlp_bias:
                pb.bias("mlp.b_down", "mlp_down", H)
    return pb.params


def _embedding_params(cfg: ModelConfig, vp: int) -> List[Param]:
    pb = _PB(cfg, None)
    V, H = cfg.vocab_size, cfg.hidden_size
    emb = "wte" if cfg.model_type == "gpt2" else "tok_embeddings"
    pb.add(emb, "embedding", (vp, H), "normal", pb.std, logical=(V, H), vocab_size=V)
    if cfg.positions == "learned":
        pb.add("wpe", "pos_embedding", (cfg.max_positions, H), "normal", pb.std)
    return pb.params


def _head_params(cfg: ModelConfig, vp: int) -> List[Param]:
    pb = _PB(cfg, None)
    V, H = cfg.vocab_size, cfg.hidden_size
    if cfg.model_type == "gpt2":
        pb.norm("ln_f", H, cfg.norm_bias)
    else:
        pb.norm("norm", H, False)
    if not cfg.tie_word_embeddings:
        pb.add("lm_head", "lm_head", (H, vp), "normal", pb.std, logical=(H, V), vocab_size=V)
    return pb.params


def parameter_specs(cfg: ModelConfig, vocab_multiple: int = 1) -> List[Param]:
    """Every parameter of the model, in ``@forward`` argument order.

    This is the list :func:`build_model` emits (and :func:`count_parameters`
    sums), so the two can never disagree.

    Args:
        cfg: the model.
        vocab_multiple: pad vocab dims to a multiple of this (>= 1).

    Raises:
        ConfigError: ``vocab_multiple`` < 1, or a parameter's element count or
            the total parameter count does not fit in int64.
    """
    vp = padded_vocab_size(cfg.vocab_size, vocab_multiple)
    emb, head = _embedding_params(cfg, vp), _head_params(cfg, vp)
    # Every layer has the first one's shapes (only the names differ), so the
    # sizes are checked before the per-layer lists are built.
    layer0 = _layer_params(cfg, 0)
    where = cfg.source or cfg.name
    for p in emb + layer0 + head:
        for shape in (p.shape, p.logical_shape):
            n = math.prod(shape)
            if n > INT64_MAX:
                raise ConfigError(f"{where}: parameter '{p.name}' of shape {list(shape)} has {n} "
                                  f"elements, which does not fit in int64 (at most {INT64_MAX})")
    total = sum(p.numel for p in emb + head) + cfg.num_layers * sum(p.numel for p in layer0)
    if total > INT64_MAX:
        raise ConfigError(f"{where}: the parameter count {total} does not fit in int64 "
                          f"(at most {INT64_MAX})")
    params = emb
    for i in range(cfg.num_layers):
        params += _layer_params(cfg, i)
    return params + head


def count_parameters(cfg: ModelConfig) -> int:
    """Number of parameters (elements) of the unpadded model.

    Summed over :func:`parameter_specs`, i.e. the arguments the builder emits;
    a tied LM head is counted once, position tables are included.
    """
    return sum(p.numel for p in parameter_specs(cfg))


def moe_capacity(cfg: ModelConfig, seq: int, capacity_factor: Optional[float] = None) -> int:
    """Expert capacity C (token slots per expert per sequence).

    Args:
        cfg: an MoE model (E experts, top-K).
        seq: sequence length S.
        capacity_factor: None for dropless (``C = S``, the most tokens of one
            sequence an expert can receive); otherwise ``C = min(S, max(1,
            ceil(capacity_factor * S * K / E)))``.

    Raises:
        ConfigError: capacity_factor is not a positive number.
    """
    if capacity_factor is None:
        return seq
    if isinstance(capacity_factor, bool) or not isinstance(capacity_factor, (int, float)) \
            or not math.isfinite(capacity_factor) or capacity_factor <= 0:
        raise ConfigError(f"option capacity_factor must be a positive number, got {capacity_factor!r}")
    c = math.ceil(capacity_factor * seq * cfg.experts_per_token / cfg.num_experts - 1e-9)
    return max(1, min(seq, c))


# ----------------------------------------------------------------------------
# IR emission


class _Emitter:
    def __init__(self, cfg: ModelConfig, batch: int, seq: int, dtype: str,
                 capacity: int, with_step: bool, with_aux: bool, dropless: bool = True):
        self.cfg = cfg
        self.B, self.S = batch, seq
        self.dt = dtype
        self.capacity = capacity
        self.dropless = dropless
        self.with_step = with_step
        self.with_aux = with_aux

    def t(self, *shape: int) -> TensorType:
        return TensorType(shape, self.dt)

    # -- shared pieces --------------------------------------------------------

    def norm(self, f: FuncBuilder, x: Value, w: Dict[str, Value], prefix: str, hint: str) -> Value:
        c = self.cfg
        eps = {"epsilon": fmt_f64(c.norm_eps)}
        if c.norm == "layer_norm":
            ops = [x, w[f"{prefix}.weight"]]
            if f"{prefix}.bias" in w:
                ops.append(w[f"{prefix}.bias"])
            return f.op1("tfm.layer_norm", ops, x.type, eps, hint)
        return f.op1("tfm.rms_norm", [x, w[f"{prefix}.weight"]], x.type, eps, hint)

    def linear(self, f: FuncBuilder, x: Value, w: Value, b: Optional[Value], hint: str) -> Value:
        shape = x.type.shape[:-1] + (w.type.shape[-1],)
        y = f.op1("tfm.matmul", [x, w], self.t(*shape), None, hint)
        if b is not None:
            y = f.op1("tfm.add", [y, b], y.type, None, hint)
        return y

    def dropout(self, f: FuncBuilder, x: Value, step: Value, layer: Value, rate: float,
                site: int, hint: str) -> Value:
        return f.op1("tfm.dropout", [x, step, layer], x.type,
                     {"rate": fmt_f64(rate), "site": fmt_i64(site)}, hint)

    def attention(self, f: FuncBuilder, x: Value, w: Dict[str, Value]) -> Value:
        c = self.cfg
        B, S, N, G, D = self.B, self.S, c.num_heads, c.num_kv_heads, c.head_dim
        q = self.linear(f, x, w["attn.wq"], w.get("attn.bq"), "q")
        k = self.linear(f, x, w["attn.wk"], w.get("attn.bk"), "k")
        v = self.linear(f, x, w["attn.wv"], w.get("attn.bv"), "v")
        q = f.op1("tfm.reshape", [q], self.t(B, S, N, D), None, "q4")
        k = f.op1("tfm.reshape", [k], self.t(B, S, G, D), None, "k4")
        v = f.op1("tfm.reshape", [v], self.t(B, S, G, D), None, "v4")
        if c.positions == "rope":
            theta = {"theta": fmt_f64(c.rope_theta)}
            q = f.op1("tfm.rope", [q], q.type, theta, "q_rope")
            k = f.op1("tfm.rope", [k], k.type, theta, "k_rope")
        out, _lse = f.op("tfm.attention", [q, k, v],
                         [self.t(B, S, N, D), TensorType((B, N, S), "f32")],
                         {"causal": UNIT, "scale": fmt_f64(1.0 / math.sqrt(D))}, ("attn", "attn_lse"))
        a = f.op1("tfm.reshape", [out], self.t(B, S, N * D), None, "attn_flat")
        return self.linear(f, a, w["attn.wo"], w.get("attn.bo"), "attn_out")

    def dense_mlp(self, f: FuncBuilder, x: Value, w: Dict[str, Value]) -> Value:
        c = self.cfg
        if c.activation == "swiglu":
            g = self.linear(f, x, w["mlp.w_gate"], w.get("mlp.b_gate"), "gate")
            u = self.linear(f, x, w["mlp.w_up"], w.get("mlp.b_up"), "up")
            h = f.op1("tfm.swiglu", [g, u], g.type, None, "act")
            return self.linear(f, h, w["mlp.w_down"], w.get("mlp.b_down"), "mlp_out")
        u = self.linear(f, x, w["mlp.w_fc"], w.get("mlp.b_fc"), "fc")
        attrs = {"tanh_approx": UNIT} if c.activation == "gelu_tanh" else None
        h = f.op1("tfm.gelu", [u], u.type, attrs, "act")
        return self.linear(f, h, w["mlp.w_proj"], w.get("mlp.b_proj"), "mlp_out")

    def moe(self, f: FuncBuilder, x: Value, w: Dict[str, Value]) -> Tuple[Value, Optional[Value]]:
        c = self.cfg
        B, S, H, F = self.B, self.S, c.hidden_size, c.ffn_hidden_size
        E, K, C = c.num_experts, c.experts_per_token, self.capacity
        logits = f.op1("tfm.matmul", [x, w["moe.router"]], self.t(B, S, E), None, "router_logits")
        gates, ids = f.op("tfm.moe_router", [logits],
                          [self.t(B, S, K), TensorType((B, S, K), "i32")],
                          {"top_k": fmt_i64(K), "renormalize": UNIT}, ("gates", "expert_ids"))
        aux = None
        if self.with_aux:
            aux = f.op1("tfm.moe_aux_loss", [logits, ids], TensorType((), "f32"), None, "aux")
        dispatch_attrs = {"num_experts": fmt_i64(E), "capacity": fmt_i64(C)}
        if self.dropless:
            dispatch_attrs["dropless"] = UNIT
        buf = f.op1("tfm.moe_dispatch", [x, ids], self.t(E, B, C, H), dispatch_attrs,
                    "dispatched")
        flat = f.op1("tfm.reshape", [buf], self.t(E, B * C, H), None, "expert_in")
        g = f.op1("tfm.matmul", [flat, w["moe.experts.w_gate"]], self.t(E, B * C, F), None, "expert_gate")
        u = f.op1("tfm.matmul", [flat, w["moe.experts.w_up"]], self.t(E, B * C, F), None, "expert_up")
        h = f.op1("tfm.swiglu", [g, u], g.type, None, "expert_act")
        d = f.op1("tfm.matmul", [h, w["moe.experts.w_down"]], self.t(E, B * C, H), None, "expert_out")
        d = f.op1("tfm.reshape", [d], self.t(E, B, C, H), None, "expert_out4")
        y = f.op1("tfm.moe_combine", [d, gates, ids], self.t(B, S, H), None, "moe_out")
        return y, aux

    # -- functions ------------------------------------------------------------

    def block(self, fname: str, layer_params: Sequence[Param]) -> FuncBuilder:
        c = self.cfg
        f = FuncBuilder(fname, private=True)
        x = f.arg("x", self.t(self.B, self.S, c.hidden_size), {"tfm.role": fmt_str("hidden")})
        layer = f.arg("layer", TensorType((), "i64"), {"tfm.role": fmt_str("layer_index")})
        step = None
        if self.with_step:
            step = f.arg("step", TensorType((), "i64"), {"tfm.role": fmt_str("step")})
        w: Dict[str, Value] = {}
        for p in layer_params:
            w[p.local] = f.arg(p.local.replace(".", "_"), TensorType(p.shape, self.dt),
                               p.attrs(local=True))
        n1, n2 = ("ln_1", "ln_2") if c.model_type == "gpt2" else ("attention_norm", "ffn_norm")
        h = self.norm(f, x, w, n1, "attn_in")
        a = self.attention(f, h, w)
        if step is not None and c.resid_dropout > 0:
            a = self.dropout(f, a, step, layer, c.resid_dropout, SITE_ATTN_RESID, "attn_drop")
        x = f.op1("tfm.add", [x, a], x.type, None, "resid_attn")
        h = self.norm(f, x, w, n2, "mlp_in")
        aux = None
        if c.is_moe:
            m, aux = self.moe(f, h, w)
        else:
            m = self.dense_mlp(f, h, w)
        if step is not None and c.resid_dropout > 0:
            m = self.dropout(f, m, step, layer, c.resid_dropout, SITE_MLP_RESID, "mlp_drop")
        x = f.op1("tfm.add", [x, m], x.type, None, "resid_mlp")
        f.ret([x] + ([aux] if aux is not None else []))
        return f

    def forward(self, params: Sequence[Param], blocks: Dict[int, FuncBuilder]) -> FuncBuilder:
        c = self.cfg
        B, S, H = self.B, self.S, c.hidden_size
        f = FuncBuilder("forward")
        ids = f.arg("ids", TensorType((B, S), "i32"), {"tfm.input": fmt_str("tokens")})
        labels = f.arg("labels", TensorType((B, S), "i32"), {"tfm.input": fmt_str("labels")})
        step = None
        if self.with_step:
            step = f.arg("step", TensorType((), "i64"), {"tfm.input": fmt_str("step")})
        by_layer: Dict[Optional[int], List[Value]] = {}
        named: Dict[str, Value] = {}
        for p in params:
            v = f.arg(p.name.replace(".", "_"), TensorType(p.shape, self.dt), p.attrs())
            by_layer.setdefault(p.layer, []).append(v)
            named[p.name] = v

        emb_name = "wte" if c.model_type == "gpt2" else "tok_embeddings"
        wte = named[emb_name]
        h = f.op1("tfm.embedding", [ids, wte], self.t(B, S, H), None, "tok_emb")
        if c.positions == "learned":
            pos = f.op1("tfm.position_embedding", [named["wpe"]], self.t(S, H),
                        {"seq_len": fmt_i64(S)}, "pos_emb")
            h = f.op1("tfm.add", [h, pos], h.type, None, "emb")
        if step is not None and c.embd_dropout > 0:
            l0 = f.constant_i64(0, "emb_layer")
            h = self.dropout(f, h, step, l0, c.embd_dropout, SITE_EMBEDDING, "emb_drop")

        auxes: List[Value] = []
        for i in range(c.num_layers):
            blk = blocks[i]
            li = f.constant_i64(i, f"layer{i}")
            ops = [h, li] + ([step] if step is not None else []) + by_layer[i]
            res = f.call(blk.name, ops, blk.result_types(), (f"h{i + 1}", f"aux{i}"))
            h = res[0]
            if len(res) > 1:
                auxes.append(res[1])

        if c.model_type == "gpt2":
            final = {"ln_f.weight": named["ln_f.weight"]}
            if "ln_f.bias" in named:
                final["ln_f.bias"] = named["ln_f.bias"]
            h = self.norm(f, h, final, "ln_f", "final_norm")
        else:
            h = self.norm(f, h, {"norm.weight": named["norm.weight"]}, "norm", "final_norm")
        if c.tie_word_embeddings:
            vp = wte.type.shape[0]
            logits = f.op1("tfm.matmul", [h, wte], self.t(B, S, vp), {"transpose_rhs": UNIT}, "logits")
        else:
            head = named["lm_head"]
            logits = f.op1("tfm.matmul", [h, head], self.t(B, S, head.type.shape[1]), None, "logits")
        ce_attrs = None
        if logits.type.shape[-1] != c.vocab_size:
            ce_attrs = {"vocab_size": fmt_i64(c.vocab_size)}
        loss = f.op1("tfm.cross_entropy", [logits, labels], TensorType((), "f32"), ce_attrs, "ce_loss")
        if auxes:
            total = auxes[0]
            for a in auxes[1:]:
                total = f.op1("tfm.add", [total, a], total.type, None, "aux_sum")
            scaled = f.op1("tfm.scale", [total],  total.type,
                           {"factor": fmt_f64(c.router_aux_loss_coef / c.num_layers)}, "aux_loss")
            loss = f.op1("tfm.add", [loss, scaled], loss.type, None, "loss")
        f.ret([loss])
        return f


def _validate_run(cfg: ModelConfig, batch: int, seq: int, dtype: str) -> None:
    for opt, v in (("batch", batch), ("seq", seq)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"option {opt} must be an integer >= 1, got {v!r}")
        if v > INT64_MAX:
            raise ConfigError(f"option {opt} = {v} does not fit in int64 (at most {INT64_MAX})")
    if seq > cfg.max_positions:
        key = "n_positions" if cfg.model_type == "gpt2" else "max_position_embeddings"
        raise ConfigError(f"{cfg.source or cfg.name}: seq {seq} exceeds the model's maximum "
                          f"positions '{key}' = {cfg.max_positions}")
    if dtype not in DTYPES:
        raise ConfigError(f"option dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")


def _model_summary(cfg: ModelConfig, params: Sequence[Param], batch: int, seq: int,
                   dtype: str, vp: int, capacity: int, dropless: bool, nparams: int) -> str:
    items = [
        ("name", fmt_str(cfg.name)), ("model_type", fmt_str(cfg.model_type)),
        ("num_layers", fmt_i64(cfg.num_layers)), ("hidden_size", fmt_i64(cfg.hidden_size)),
        ("num_heads", fmt_i64(cfg.num_heads)), ("num_kv_heads", fmt_i64(cfg.num_kv_heads)),
        ("head_dim", fmt_i64(cfg.head_dim)), ("ffn_hidden_size", fmt_i64(cfg.ffn_hidden_size)),
        ("vocab_size", fmt_i64(cfg.vocab_size)), ("padded_vocab_size", fmt_i64(vp)),
        ("max_positions", fmt_i64(cfg.max_positions)), ("batch", fmt_i64(batch)),
        ("seq_len", fmt_i64(seq)), ("dtype", fmt_str(dtype)),
        ("num_parameters", fmt_i64(nparams)),
        ("tie_word_embeddings", "true" if cfg.tie_word_embeddings else "false"),
    ]
    if cfg.uses_dropout:
        items += [("embd_dropout", fmt_f64(cfg.embd_dropout)),
                  ("resid_dropout", fmt_f64(cfg.resid_dropout))]
    if cfg.is_moe:
        items += [("num_experts", fmt_i64(cfg.num_experts)),
                  ("experts_per_token", fmt_i64(cfg.experts_per_token)),
                  ("expert_capacity", fmt_i64(capacity)),
                  ("expert_dropless", "true" if dropless else "false"),
                  ("router_aux_loss_coef", fmt_f64(cfg.router_aux_loss_coef)),
                  ("output_router_logits", "true" if cfg.output_router_logits else "false")]
    # A dropless layer routes as HF's Mixtral whatever its buffer bound (a
    # bound that is too small fails at run time; it never drops a token).
    hf_capacity = capacity if cfg.is_moe and not dropless else seq
    items.append(hf.hf_summary_item(cfg, params, seq, hf_capacity))
    return "{" + ", ".join(f"{k} = {v}" for k, v in items) + "}"


def build_model(cfg: ModelConfig, batch: int, seq: int, *, vocab_multiple: int = 1,
                capacity_factor: Optional[float] = None, dtype: str = "f32",
                dropout: Optional[float] = None,
                max_tokens_per_expert: Optional[int] = None) -> str:
    """Emit the model's ``tfm`` IR module as MLIR text.

    Args:
        cfg: the model (see :func:`autoshard.models.load_config`).
        batch: global batch size B (sequences per step), >= 1.
        seq: sequence length S (tokens), 1 <= S <= cfg.max_positions.
        vocab_multiple: pad the vocab dim of the embedding / LM head to a
            multiple of this (Megatron's make-vocab-size-divisible-by); the
            loss masks the padding.
        capacity_factor: MoE only; None = dropless (C = S), otherwise
            ``C = min(S, ceil(cf * S * K / E))``.
        dtype: element type of parameters and activations (f32, bf16, f16,
            f64); losses are always f32, token ids i32.
        dropout: override the config's dropout rates (GPT-2 family only; a
            value in [0, 1)); None keeps the config's.
        max_tokens_per_expert: MoE only, dropless: bound each expert's
            buffer at this many tokens per sequence (``C = N``, 1 <= N <= S)
            instead of ``C = S``; routing more is a runtime error, never a
            drop.  Exclusive with capacity_factor.

    Returns:
        The module text (ends with a newline).  See the module docstring for
        the layout.

    Raises:
        ConfigError: invalid option (batch/seq < 1, seq > max positions,
            unknown dtype, vocab_multiple < 1, capacity_factor <= 0, bad
            dropout, max_tokens_per_expert outside [1, S] or with
            capacity_factor), or a parameter, an activation tensor or the parameter
            count too large for int64 (MLIR's dims and element counts).
    """
    _validate_run(cfg, batch, seq, dtype)
    if dropout is not None:
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not (0.0 <= dropout < 1.0):
            raise ConfigError(f"option dropout must be in [0, 1), got {dropout!r}")
        if dropout > 0 and cfg.model_type != "gpt2":
            raise ConfigError(f"option dropout = {dropout!r} is only supported for gpt2 models, "
                              f"not {cfg.model_type!r}")
        cfg = dataclasses.replace(cfg, embd_dropout=float(dropout), resid_dropout=float(dropout))
    if capacity_factor is not None and not cfg.is_moe:
        raise ConfigError(f"option capacity_factor = {capacity_factor!r} only applies to MoE "
                          f"models, not {cfg.model_type!r}")
    if max_tokens_per_expert is not None:
        if not cfg.is_moe:
            raise ConfigError(f"option max_tokens_per_expert = {max_tokens_per_expert!r} only "
                              f"applies to MoE models, not {cfg.model_type!r}")
        if capacity_factor is not None:
            raise ConfigError("options max_tokens_per_expert (dropless, bounded) and "
                              "capacity_factor (tokens dropped) exclude each other")
        if isinstance(max_tokens_per_expert, bool) or not isinstance(max_tokens_per_expert, int) \
                or not 1 <= max_tokens_per_expert <= seq:
            raise ConfigError(f"option max_tokens_per_expert must be an integer in [1, seq = "
                              f"{seq}] (seq is already the exact dropless bound), got "
                              f"{max_tokens_per_expert!r}")
    params = parameter_specs(cfg, vocab_multiple)
    vp = padded_vocab_size(cfg.vocab_size, vocab_multiple)
    dropless = capacity_factor is None
    if not cfg.is_moe:
        capacity = 0
    elif max_tokens_per_expert is not None:
        capacity = max_tokens_per_expert
    else:
        capacity = moe_capacity(cfg, seq, capacity_factor)
    if cfg.sliding_window is not None and cfg.sliding_window < seq:
        warnings.warn(f"{cfg.source or cfg.name}: 'sliding_window' = {cfg.sliding_window} is "
                      f"shorter than seq {seq} and is ignored (tfm.attention is fully causal); "
                      "the model has no Hugging Face form", ConfigWarning, stacklevel=2)
    try:
        return _emit(cfg, params, batch, seq, dtype, vp, capacity, dropless)
    except Int64OverflowError as e:
        # An activation shape (e.g. [B, S, V] logits) too large for the IR.
        raise ConfigError(f"{cfg.source or cfg.name}: with batch {batch} and seq {seq}, "
                          f"{e}") from None


def _emit(cfg: ModelConfig, params: List[Param], batch: int, seq: int, dtype: str, vp: int,
          capacity: int, dropless: bool) -> str:
    em = _Emitter(cfg, batch, seq, dtype, capacity, with_step=cfg.uses_dropout,
                  with_aux=cfg.uses_aux_loss, dropless=dropless)

    # One block function per distinct layer signature (layer-local names and shapes).
    by_layer: Dict[int, List[Param]] = {}
    for p in params:
        if p.layer is not None:
            by_layer.setdefault(p.layer, []).append(p)
    sigs: Dict[tuple, FuncBuilder] = {}
    blocks: Dict[int, FuncBuilder] = {}
    for i in range(cfg.num_layers):
        lp = by_layer[i]
        sig = tuple((p.local, p.role, p.shape) for p in lp)
        if sig not in sigs:
            fname = f"{cfg.model_type}_block" + (f"_{len(sigs)}" if sigs else "")
            sigs[sig] = em.block(fname, lp)
        blocks[i] = sigs[sig]
    fwd = em.forward(params, blocks)

    nparams = sum(p.numel for p in params)
    summary = _model_summary(cfg, params, batch, seq, dtype, vp, capacity, dropless, nparams)
    src = cfg.source or cfg.name
    out = [f"// {cfg.name}: {cfg.model_type}, {cfg.num_layers} layers, {nparams} parameters; "
           f"batch {batch}, seq {seq}, {dtype}.",
           f"// Generated by autoshard.models from {src}.",
           f"module attributes {{tfm.model = {summary}}} {{"]
    for blk in sigs.values():
        out.append(blk.render())
        out.append("")
    out.append(fwd.render())
    out.append("}")
    return "\n".join(out) + "\n"
