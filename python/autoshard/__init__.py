"""autoshard: an MLIR auto-sharding compiler for Transformer training.

Python side of the project. Subpackages:

* :mod:`autoshard.models` -- model front end: builds ``tfm`` dialect IR (global
  shapes, forward + loss, repeated blocks emitted once) from an HF-style
  ``config.json``.  CLI: ``python3 -m autoshard.models CONFIG.json --batch B
  --seq S -o model.mlir``.

* :mod:`autoshard.data` -- training data: text files -> token directory
  (``train.bin``, ``val.bin``, ``meta.json``; docs/data-format.md) for
  ``shard-run --data DIR``.  CLI: ``python3 -m autoshard.data prepare
  INPUT... -o DIR --tokenizer char|bpe:VOCAB|FILE.json``.

* :mod:`autoshard.report` -- HTML reports: the measured per-rank timeline of
  ``shard-run --trace`` files, in the style of ``dist-explain format=html``
  (whose stylesheet and script it holds).  CLI: ``python3 -m autoshard.report
  trace.json trace.rank1.json [--predicted plan.html] -o timeline.html``.

The models and report packages are stdlib-only; ``autoshard.data`` needs numpy, xxhash,
tokenizers and tqdm, ``autoshard.checkpoint`` numpy (and xxhash to verify).
"""

__all__ = ["models"]
