#!/usr/bin/env python3
"""autoshard's nanoGPT CPU model and recipe in JAX: one jitted, sharded train
step on a dp x tp mesh of forced host devices. Run with the JAX venv
(~/.cache/autoshard-jax-venv, python/requirements-jax.txt):

  jax_peer.py [--mesh dp=2,tp=2] [--threads 2] [--steps 2000] ...
  jax_peer.py --mesh dp=1,tp=1                   (one device, no collectives)
  jax_peer.py --show-sharding --steps 20 ...     (print param / activation shardings)
  jax_peer.py --hlo-out step.hlo ...             (write the compiled train step's HLO)
  jax_peer.py --sp-collectives shard_map ...     (explicit SP collectives, see below)

Prints progress lines and, at the end, one JSON line: {"peer": "jax-jit",
"steps", "tokens_per_s", "wall_s", "final_train_loss", "val_loss",
"peak_rss_mib", "devices", "mesh", "threads", "collectives", "jax", ...}.
The options, data, schedule, timed steps and evaluation are common.py's, as
for torch_peer.py.

The mesh. --mesh dp=D,tp=T makes D*T XLA host devices in this one process
(XLA_FLAGS=--xla_force_host_platform_device_count=D*T, set before jax is
imported) and a jax.sharding.Mesh of shape (D, T) with axes ("dp", "tp") of
AxisType.Auto (GSPMD propagation; jax.make_mesh's default is Explicit). The
train step -- forward, backward, clip, AdamW -- is one jax.jit with
in/out shardings on the params, the optimizer state and the batch, params and
optimizer state donated, compiled once ahead of time (lower().compile()), and
with_sharding_constraint on the activations:
  * data parallel: the batch (and every activation) is split on "dp"; XLA
    all-reduces the gradients over "dp".
  * Megatron tensor parallel on "tp": wq/wk/wv and the MLP up projection
    (w_fc) column-split (heads / inner features on "tp"), the attention output
    projection (wo) and the MLP down projection (w_proj) row-split; the tied
    embedding table wte [vocab, hidden] vocab-split (param and Adam state),
    so the head gives vocab-split logits and the cross-entropy's max / sum
    reduce over "tp". For the lookup XLA chooses to all-gather the 128 x 128
    table (64 KiB) and gather each device's sequence slice locally, rather
    than Megatron's masked lookup + reduce; the lookup's gradient is summed
    over "tp" (an all-reduce of the table's gradient).
  * Megatron sequence parallel on "tp": the residual stream between the
    sub-layers and the layer norms (ln_1, ln_2, ln_f) are split on the
    sequence dim; the norm outputs are all-gathered over "tp" before the
    column-split matmuls, and the row-split matmuls' partial sums are
    reduce-scattered back onto the sequence dim (the backward mirrors it).
    --sp-collectives gspmd (default) writes these boundaries as
    with_sharding_constraint only; XLA:CPU has no reduce-scatter-forming
    pass, so each reduce-scatter is compiled as an all-reduce of the full
    sequence + a local slice (2x the bytes of a reduce-scatter; the q/k/v
    input gradients are even all-reduced separately). --sp-collectives
    shard_map writes the two boundaries as small jax.shard_map regions
    (all_gather + the column-split matmuls; the row-split matmul +
    psum_scatter), which compile to real all-gather / reduce-scatter
    instructions in both directions. The math, the shardings and the
    losses are the same either way.
  wpe and the norm weights are replicated (XLA updates wpe sequence-split
  and all-gathers it). The JSON line's "collectives" counts the all-gather /
  reduce-scatter / all-reduce / collective-permute / all-to-all
  instructions of the compiled step (compiled().as_text(); a tuple
  all-reduce that XLA combined from many counts once). dp=2,tp=2: gspmd 21
  all-gather, 0 reduce-scatter, 23 all-reduce; shard_map 21 / 17 / 6.

Threads. --threads N is meant as the process's total compute threads, as far
as XLA:CPU lets one set it (it has no intra_op_parallelism_threads flag: XLA
rejects that name in XLA_FLAGS):
  * PJRT_NPROC=N sizes XLA's intra-op ("XLAEigen") pool, but XLA makes that
    pool at least one thread per device (seen: max(N, D*T) threads), so the
    D*T device programs always run concurrently on D*T threads.
  * When N <= D*T, --xla_cpu_multi_thread_eigen=false: each device program
    runs its ops on one thread (the device is the unit of parallelism, as one
    rank with one thread). When N > D*T (e.g. dp=1,tp=1 --threads 2), ops
    stay multi-threaded on the N-thread pool.
  * The process is pinned (sched_setaffinity, before jax starts any thread)
    to N of the CPUs it may use, so 4 devices at --threads 2 share 2 cores
    instead of taking 4 (--no-pin keeps the inherited CPU set).
  * OMP/MKL/OPENBLAS_NUM_THREADS=N (common.set_thread_env) for any library
    pool XLA's kernels start. JAX_PLATFORMS=cpu. Any XLA_FLAGS already in the
    environment are appended after these.
  On a 2-core machine more devices ran faster than fewer (dp=2,tp=2 at
  --threads 2 well above dp=1,tp=1 at --threads 2): one XLA:CPU device
  program does not use two cores well at this size.

Differences from autoshard's model and run (and from torch_peer.py):
  * Init: the same distributions (normal std 0.02, GPT-2's resid-scaled std
    on wo / w_proj, ones for the norm weights, padded wte rows 0), drawn from
    jax.random (threefry, key --seed), so the numbers differ from autoshard's
    and from torch's; partitionable threefry, so they do not depend on the
    mesh.
  * Exact GELU is jax.nn.gelu(approximate=False): XLA's erf (a rational
    approximation, float32), not autoshard's oneDNN / SLEEF erf nor torch's.
  * Attention is written out (QK^T / sqrt(d), -inf above the diagonal,
    softmax, PV) and left to XLA's fusion; autoshard and torch use fused
    attention kernels. Layer norm is written out (biased variance, eps 1e-5).
  * The loss is logsumexp(logits) - logit[label] over vocab-split logits
    (padded logits -inf), mean over the batch's tokens.
  * AdamW is optax (scale_by_adam + add_decayed_weights on >= 2-D params),
    multiplied by the host-side common.lr_at(step) passed into the step;
    clipping is torch's clip_grad_norm_ (scale min(1, clip / (norm + 1e-6))).
  * Devices are XLA host devices in one process (collectives are in-process
    memory copies), not autoshard's shard-run ranks.
  * Timing: per step from the call to float(loss) (the step is dispatched
    asynchronously, the float blocks); the batch's device_put is before the
    clock as torch's from_numpy. The compile happens before the loop and is
    in wall_s, not in tokens/s.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "collective-permute", "all-to-all")


def extra_args(p):
    p.add_argument("--mesh", default="dp=2,tp=2",
                   help="dp=D,tp=T: D*T forced host devices (default dp=2,tp=2)")
    p.add_argument("--no-pin", action="store_true",
                   help="do not pin the process to --threads CPUs")
    p.add_argument("--sp-collectives", choices=["gspmd", "shard_map"], default="gspmd",
                   help="gspmd: sequence-parallel boundaries as with_sharding_constraint "
                        "(XLA:CPU emits all-reduce + slice for the reduce-scatters); shard_map: "
                        "explicit all_gather / psum_scatter at the boundaries")
    p.add_argument("--show-sharding", action="store_true",
                   help="print the shardings of some params and activations")
    p.add_argument("--hlo-out", default=None, help="write the compiled train step's HLO here")


def parse_mesh(s: str) -> tuple[int, int]:
    kv = {}
    for part in s.split(","):
        k, _, v = part.partition("=")
        if k.strip() not in ("dp", "tp") or not v.strip().isdigit() or int(v) < 1:
            raise SystemExit(f"--mesh {s!r}: expected dp=D,tp=T")
        kv[k.strip()] = int(v)
    return kv.get("dp", 1), kv.get("tp", 1)


def configure_threads(devices: int, threads: int, pin: bool) -> dict:
    """XLA / PJRT / affinity settings; must run before jax is imported."""
    flags = [f"--xla_force_host_platform_device_count={devices}"]
    multi_eigen = threads > devices
    if not multi_eigen:
        flags.append("--xla_cpu_multi_thread_eigen=false")
    user = os.environ.get("XLA_FLAGS", "").strip()
    os.environ["XLA_FLAGS"] = " ".join(flags + ([user] if user else []))
    os.environ["PJRT_NPROC"] = str(threads)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    common.set_thread_env(threads)
    cpus = sorted(os.sched_getaffinity(0))
    if pin and threads < len(cpus):
        cpus = cpus[:threads]
        os.sched_setaffinity(0, cpus)
    return {"xla_flags": os.environ["XLA_FLAGS"], "pjrt_nproc": threads,
            "multi_thread_eigen": multi_eigen, "cpus": cpus}


def count_collectives(hlo: str) -> dict:
    counts = {}
    for op in COLLECTIVES:
        # an instruction's opcode: "= f32[...] all-reduce(" or its async "-start(" form
        counts[op] = len(re.findall(rf"\s{op}(?:-start)?\(", hlo))
    return counts


def main() -> int:
    a = common.parse_args(__doc__.splitlines()[0], default_threads=2, extra=extra_args)
    dp, tp = parse_mesh(a.mesh)
    nd = dp * tp
    H, NH, NI, S = common.N_EMBD, common.N_HEAD, common.N_INNER, a.seq
    for what, n, d in (("--batch", a.batch, dp), ("heads", NH, tp), ("mlp inner", NI, tp),
                       ("--seq (sequence parallel)", S, tp)):
        if n % d:
            raise SystemExit(f"{what} {n} is not divisible by {d} ({a.mesh})")
    thread_cfg = configure_threads(nd, a.threads, not a.no_pin)
    t_start = time.perf_counter()

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

    if len(jax.devices()) < nd:
        raise SystemExit(f"{len(jax.devices())} devices, --mesh needs {nd}")
    mesh = Mesh(np.array(jax.devices()[:nd]).reshape(dp, tp), ("dp", "tp"),
                axis_types=(AxisType.Auto, AxisType.Auto))

    def ns(*spec):
        return NamedSharding(mesh, P(*spec))

    data = common.CharData(a.data, a.seq, a.batch, a.seed, a.eval_iters)
    V, VP = data.vocab, common.padded_vocab(data.vocab)
    if VP % tp:
        raise SystemExit(f"padded vocab {VP} is not divisible by tp={tp}")
    HD = H // NH

    REPL = ns()
    BATCH = ns("dp", None)                 # ids / labels [B, S]
    RESID = ns("dp", "tp", None)           # residual stream [B, S, H]: sequence parallel
    FULLSEQ = ns("dp", None, None)         # norm outputs gathered over the sequence
    HEADS = ns("dp", None, "tp", None)     # q, k, v, attention out [B, S, NH, HD]
    INNER = ns("dp", None, "tp")           # MLP inner / vocab logits [B, S, NI|VP]

    block_shard = {"ln_1": REPL, "wq": ns(None, "tp"), "wk": ns(None, "tp"), "wv": ns(None, "tp"),
                   "wo": ns("tp", None), "ln_2": REPL, "w_fc": ns(None, "tp"),
                   "w_proj": ns("tp", None)}
    param_shard = {"wte": ns("tp", None), "wpe": REPL, "ln_f": REPL,
                   "blocks": [dict(block_shard) for _ in range(common.N_LAYER)]}

    def init_params(key):
        keys = iter(jax.random.split(key, 2 + 6 * common.N_LAYER))

        def normal(shape, std):
            return std * jax.random.normal(next(keys), shape, jnp.float32)

        wte = normal((VP, H), common.INIT_STD).at[V:].set(0.0)  # 0 outside the logical shape
        blocks = [{"ln_1": jnp.ones((H,)), "ln_2": jnp.ones((H,)),
                   "wq": normal((H, H), common.INIT_STD), "wk": normal((H, H), common.INIT_STD),
                   "wv": normal((H, H), common.INIT_STD), "wo": normal((H, H), common.RESID_STD),
                   "w_fc": normal((H, NI), common.INIT_STD),
                   "w_proj": normal((NI, H), common.RESID_STD)}
                  for _ in range(common.N_LAYER)]
        return {"wte": wte, "wpe": normal((S, H), common.INIT_STD), "ln_f": jnp.ones((H,)),
                "blocks": blocks}

    wsc = jax.lax.with_sharding_constraint
    shown = set()

    def show(name, x):
        if a.show_sharding and name not in shown:
            shown.add(name)
            jax.debug.inspect_array_sharding(
                x, callback=lambda s, n=name, sh=x.shape: print(f"  activation {n} {sh}: {s.spec}"))
        return x

    def layer_norm(x, w):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + common.LN_EPS) * w

    causal = jnp.tril(jnp.ones((S, S), dtype=bool))
    logit_mask = jnp.where(jnp.arange(VP) < V, 0.0, -jnp.inf).astype(jnp.float32)

    # The sequence-parallel boundaries, two ways (--sp-collectives).
    # col_parallel(x, ws): SP -> TP, the norm output x [B, S/tp, H] all-gathered
    # over the sequence, times each column-split w (or, head=True, the
    # vocab-split wte transposed); its backward reduce-scatters the summed
    # partial input gradients. row_parallel(y, w): y split on its last dim times
    # the row-split w, the partial sums reduce-scattered onto the sequence
    # (TP -> SP); its backward all-gathers.
    if tp == 1:
        a.sp_collectives = "gspmd"  # no sequence parallelism on one tp rank
    if a.sp_collectives == "gspmd":
        def col_parallel(x, ws, head=False):
            h = wsc(x, FULLSEQ)
            return [wsc(h @ (w.T if head else w), INNER) for w in ws]

        def row_parallel(y, w):
            return wsc(y @ w, RESID)
    else:
        def col_parallel(x, ws, head=False):
            def local(t, *us):
                g = jax.lax.all_gather(t, "tp", axis=1, tiled=True)
                return [g @ (u.T if head else u) for u in us]
            wspec = P("tp", None) if head else P(None, "tp")
            return jax.shard_map(local, mesh=mesh, in_specs=(RESID.spec,) + (wspec,) * len(ws),
                                 out_specs=[INNER.spec] * len(ws))(x, *ws)

        def row_parallel(y, w):
            return jax.shard_map(
                lambda t, u: jax.lax.psum_scatter(t @ u, "tp", scatter_dimension=1, tiled=True),
                mesh=mesh, in_specs=(INNER.spec, P("tp", None)), out_specs=RESID.spec)(y, w)

    def block(p, x):
        B = x.shape[0]
        q, k, v = (wsc(t.reshape(B, S, NH, HD), HEADS)  # SP -> TP: all-gather the sequence
                   for t in col_parallel(layer_norm(x, p["ln_1"]), [p["wq"], p["wk"], p["wv"]]))
        att = jnp.einsum("bqnd,bknd->bnqk", q, k) / math.sqrt(HD)
        att = jax.nn.softmax(jnp.where(causal, att, -jnp.inf), axis=-1)
        y = wsc(jnp.einsum("bnqk,bknd->bqnd", att, v), HEADS)
        show("attention out (heads)", y)
        x = x + row_parallel(wsc(y.reshape(B, S, H), INNER), p["wo"])  # TP -> SP: reduce-scatter
        show("residual after attention", x)
        (u,) = col_parallel(layer_norm(x, p["ln_2"]), [p["w_fc"]])
        u = wsc(jax.nn.gelu(u, approximate=False), INNER)  # exact (erf) GELU
        show("mlp inner", u)
        return x + row_parallel(u, p["w_proj"])

    def loss_fn(params, ids, labels):
        ids, labels = wsc(ids, BATCH), wsc(labels, BATCH)
        x = wsc(jnp.take(params["wte"], ids, axis=0) + params["wpe"][None, :S], RESID)
        show("embedding out / residual", x)
        for p in params["blocks"]:
            x = block(p, x)
        (logits,) = col_parallel(layer_norm(x, params["ln_f"]), [params["wte"]], head=True)
        logits = logits + logit_mask  # tied head, vocab-split logits
        show("logits", logits)
        picked = jnp.sum(jnp.where(jnp.arange(VP) == labels[..., None], logits, 0.0), axis=-1)
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)

    # AdamW: optax's adam scaling + decoupled weight decay on >= 2-D params;
    # the learning rate (common.lr_at) multiplies the update in the step.
    opt = optax.chain(
        optax.scale_by_adam(b1=a.beta1, b2=a.beta2, eps=1e-8),
        optax.add_decayed_weights(a.weight_decay,
                                  mask=lambda ps: jax.tree.map(lambda x: x.ndim >= 2, ps)))

    def train_step(params, opt_state, ids, labels, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, ids, labels)
        norm = optax.global_norm(grads)
        scale = jnp.minimum(1.0, a.grad_clip / (norm + 1e-6))  # torch's clip_grad_norm_
        grads = jax.tree.map(lambda g: g * scale, grads)
        updates, opt_state = opt.update(grads, opt_state, params)
        params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
        return params, opt_state, loss

    params = jax.jit(init_params, out_shardings=param_shard)(jax.random.key(a.seed))
    opt_shard = optax.tree_map_params(opt, lambda _, s: s, jax.eval_shape(opt.init, params),
                                      param_shard, transform_non_params=lambda _: REPL)
    opt_state = jax.jit(opt.init, out_shardings=opt_shard)(params)

    step_jit = jax.jit(train_step, in_shardings=(param_shard, opt_shard, BATCH, BATCH, REPL),
                       out_shardings=(param_shard, opt_shard, REPL), donate_argnums=(0, 1))
    ids_spec = jax.ShapeDtypeStruct((a.batch, S), jnp.int32, sharding=BATCH)
    lr_spec = jax.ShapeDtypeStruct((), jnp.float32, sharding=REPL)
    if a.show_sharding:
        print("params:")
        for name, x in (("wte", params["wte"]), ("wpe", params["wpe"]), ("ln_f", params["ln_f"])) + \
                tuple((f"blocks[0].{k}", v) for k, v in params["blocks"][0].items()):
            print(f"  {name} {x.shape}: {x.sharding.spec}, shard {x.sharding.shard_shape(x.shape)}")
        mu0 = opt_state[0].mu["blocks"][0]["w_fc"]
        print(f"  adam mu blocks[0].w_fc: {mu0.sharding.spec}")
        print("activations (train step, traced once):")
    t_c = time.perf_counter()
    step = step_jit.lower(params, opt_state, ids_spec, ids_spec, lr_spec).compile()
    compile_s = time.perf_counter() - t_c
    hlo = step.as_text()
    collectives = count_collectives(hlo)
    if a.hlo_out:
        Path(a.hlo_out).write_text(hlo)
    print(f"compiled the train step in {compile_s:.1f} s on {nd} device(s), mesh dp={dp} tp={tp}; "
          f"collectives {collectives}", flush=True)

    eval_loss = jax.jit(loss_fn, in_shardings=(param_shard, BATCH, BATCH), out_shardings=REPL)
    val = [(jax.device_put(x.astype(np.int32), BATCH), jax.device_put(y.astype(np.int32), BATCH))
           for x, y in data.val_batches]

    def evaluate() -> float:
        return sum(float(eval_loss(params, x, y)) for x, y in val) / len(val)

    timer = common.StepTimer(a.batch * a.seq)
    val_loss = float("nan")
    loss_v = float("nan")
    for it in range(a.steps):
        if a.eval_interval > 0 and it % a.eval_interval == 0:
            val_loss = evaluate()
            print(f"step {it}: val loss {val_loss:.4f}", flush=True)
        lr = common.lr_at(a, it)
        xb, yb = data.train_batch()
        xb = jax.device_put(xb.astype(np.int32), BATCH)
        yb = jax.device_put(yb.astype(np.int32), BATCH)
        t0 = time.perf_counter()
        params, opt_state, loss = step(params, opt_state, xb, yb, np.float32(lr))
        loss_v = float(loss)
        dt = time.perf_counter() - t0
        timer.add(it, dt)
        common.progress(a, it, loss_v, lr, dt, a.batch * a.seq)
    val_loss = evaluate()
    print(f"step {a.steps}: val loss {val_loss:.4f}", flush=True)
    wall = time.perf_counter() - t_start
    import jaxlib
    print(common.result_line(
        peer="jax-jit", steps=a.steps, tokens_per_s=timer.tokens_per_s(), wall_s=wall,
        final_train_loss=loss_v, val_loss=val_loss, peak_rss_mib=common.peak_rss_mib(),
        devices=nd, mesh={"dp": dp, "tp": tp}, sp_collectives=a.sp_collectives, threads=a.threads, batch=a.batch, seq=a.seq,
        timed_steps=timer.steps, compile_s=compile_s, collectives=collectives,
        cpus=thread_cfg["cpus"], multi_thread_eigen=thread_cfg["multi_thread_eigen"],
        xla_flags=thread_cfg["xla_flags"], jax=jax.__version__, jaxlib=jaxlib.__version__,
        optax=optax.__version__), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
