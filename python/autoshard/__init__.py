"""autoshard: an MLIR auto-sharding compiler for Transformer training.

Python side of the project. Subpackages:

* :mod:`autoshard.models` -- model front end: builds ``tfm`` dialect IR (global
  shapes, forward + loss, repeated blocks emitted once) from an HF-style
  ``config.json``.  CLI: ``python3 -m autoshard.models CONFIG.json --batch B
  --seq S -o model.mlir``.

The package is stdlib-only.
"""

__all__ = ["models"]
