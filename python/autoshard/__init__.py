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

The models package is stdlib-only; ``autoshard.data`` needs numpy, xxhash,
tokenizers and tqdm, ``autoshard.checkpoint`` numpy (and xxhash to verify).
"""

__all__ = ["models"]
