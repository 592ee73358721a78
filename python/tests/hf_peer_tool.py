"""The Hugging Face Transformers side of the peer check (test_hf_peer.py).

Runs under the peer venv's Python (torch + transformers; ``scripts/setup.sh``
installs it, see ``peer_python()`` in test_hf_peer.py), never under the
build venv. ``hf_peer_tool.py JOBS.json`` runs a list of jobs in one process
(importing torch takes seconds) and prints the list of their results as one
JSON line. Jobs (``{"cmd": ..., arguments}``):

* ``create`` (``config``: a config dict, ``out``, ``seed``,
  ``max_shard_size`` or null): a randomly initialised
  ``AutoModelForCausalLM`` of that config (fp32, norms and biases perturbed),
  ``save_pretrained`` to ``out`` (sharded with an index when
  ``max_shard_size`` is given, e.g. ``"40KB"``). Returns ``{"tensors": {name: shape}}``.
* ``loss`` (``model``, ``tokens``): ``tokens`` is a list of S + 1 ids; the mean
  next-token cross entropy of ``ids[:-1]`` against ``ids[1:]`` in eval mode
  (no dropout; for Mixtral without the router aux loss unless the config's
  ``output_router_logits``), computed in float64 from fp32 logits. Returns
  ``{"loss": x}``.
* ``greedy`` (``model``, ``prompt``, ``count``): ``count`` greedy (argmax) tokens after the
  prompt ids, recomputing the whole context each step (no KV cache, like
  autoshard's sampler). Returns ``{"tokens": [...]}``.
"""

import argparse
import json
import sys

import torch
import transformers


def _create(args):
    torch.manual_seed(args.seed)
    raw = dict(args.config)
    cfg = transformers.AutoConfig.for_model(**raw)
    model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32)
    # Non-trivial norms and biases, so that a mix-up of weight and bias or a
    # missing transpose cannot hide behind ones and zeros.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or ".ln_" in name:
                p.add_(torch.randn_like(p) * 0.1)
    kw = {}
    if args.max_shard_size:
        kw["max_shard_size"] = args.max_shard_size
    model.save_pretrained(args.out, **kw)
    return {"tensors": {k: list(v.shape) for k, v in model.state_dict().items()}}


def _load(path):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
    model.eval()
    return model


def _logits(model, ids):
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0]


def _loss(args):
    ids = list(args.tokens)
    model = _load(args.model)
    logits = _logits(model, ids[:-1]).double()
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:], dtype=torch.long))
    return {"loss": loss.item(), "vocab": model.config.vocab_size}


def _greedy(args):
    ids = list(args.prompt)
    model = _load(args.model)
    out = []
    for _ in range(args.count):
        nxt = int(torch.argmax(_logits(model, ids)[-1]).item())
        ids.append(nxt)
        out.append(nxt)
    return {"tokens": out}


def main(argv=None):
    p = argparse.ArgumentParser(prog="hf_peer_tool")
    p.add_argument("jobs", help="JSON list of jobs, each {\"cmd\": NAME, ...arguments}")
    args = p.parse_args(argv)
    with open(args.jobs, encoding="utf-8") as f:
        jobs = json.load(f)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()
    run = {"create": _create, "loss": _loss, "greedy": _greedy}
    results = [run[j["cmd"]](argparse.Namespace(**{k: v for k, v in j.items() if k != "cmd"}))
               for j in jobs]
    json.dump(results, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
