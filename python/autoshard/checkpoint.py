"""Read autoshard checkpoints from Python with the `safetensors` package.

A checkpoint (`shard-run --save-dir DIR` writes `DIR/step-000123/`, see
docs/checkpoint-format.md) holds one safetensors file per writing rank and a
`manifest.json` that lists, for every state tensor (parameters and the AdamW
moments `opt_m` / `opt_v`), its global shape and the chunks that cover it:
the file, the tensor's key in it (its name) and the chunk's global box
(`offset`, `shape`, one entry per dim). Every rank file is a plain
safetensors file, so `safetensors.numpy.load_file` opens it; this module
puts the chunks back together into global (unsharded) arrays.

Example::

    from autoshard.checkpoint import load_checkpoint
    params = load_checkpoint("build/ckpt/step-002000")   # name -> np.ndarray
    params["wte"].shape                                          # (128, 128)

Needs `numpy` and `safetensors` (`pip install numpy safetensors`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, Optional, Union

FORMAT = "autoshard-checkpoint"
VERSION = 1  # the newest manifest version this reader understands

_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32",
           "i64": "int64", "bf16": None}


class CheckpointError(ValueError):
    """A checkpoint this reader cannot use; the message names the file and tensor."""


def read_manifest(path: Union[str, Path]) -> dict:
    """The parsed `manifest.json` of checkpoint directory `path`.

    Raises CheckpointError if it is missing (an incomplete save), is not an
    autoshard checkpoint, or has a newer format version than VERSION.
    """
    path = Path(path)
    mf = path / "manifest.json"
    if not mf.is_file():
        hint = ""
        if path.is_dir() and any(p.name.startswith("step-") for p in path.iterdir()):
            hint = " (a save directory: pass one of its step-N checkpoints)"
        raise CheckpointError(f"checkpoint '{path}' has no manifest.json{hint or ' (an incomplete save?)'}")
    try:
        manifest = json.loads(mf.read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"'{mf}' is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise CheckpointError(f"'{mf}' is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"'{mf}': format is {manifest.get('format')!r}, not {FORMAT!r}")
    if not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise CheckpointError(f"'{mf}': format version {manifest.get('version')!r} is newer "
                              f"than this reader ({VERSION})")
    for name, f in manifest.get("files", {}).items():
        if "/" in name or name in (".", ".."):
            raise CheckpointError(f"'{mf}': file name {name!r} is not a plain file name")
        size = (path / name).stat().st_size if (path / name).is_file() else None
        if size != f.get("bytes"):
            raise CheckpointError(f"checkpoint '{path}': file '{name}' has "
                                  f"{'no file' if size is None else f'{size} bytes'}, "
                                  f"the manifest says {f.get('bytes')} bytes")
    return manifest


def verify_checksums(path: Union[str, Path], manifest: Optional[dict] = None) -> None:
    """Checks every rank file of checkpoint `path` against its XXH3-64 checksum.

    Needs the `xxhash` package (`pip install xxhash`). Raises CheckpointError
    naming the first file that differs.
    """
    import xxhash

    path = Path(path)
    manifest = manifest or read_manifest(path)
    for name, f in manifest["files"].items():
        h = xxhash.xxh3_64()
        with open(path / name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 24), b""):
                h.update(block)
        if h.hexdigest() != f["xxh3_64"]:
            raise CheckpointError(f"checkpoint '{path}': file '{name}' has checksum "
                                  f"{h.hexdigest()}, the manifest says {f['xxh3_64']}")


def load_tensor(path: Union[str, Path], name: str, manifest: Optional[dict] = None):
    """State tensor `name` of checkpoint `path`, reassembled to its global shape.

    Returns a numpy array (row-major, the tensor's dtype; bf16 as uint16 bit
    patterns, which numpy has no type for). Raises CheckpointError if the
    checkpoint has no such tensor or its chunks do not cover it.
    """
    import numpy as np
    from safetensors import safe_open

    path = Path(path)
    manifest = manifest or read_manifest(path)
    try:
        spec = manifest["tensors"][name]
    except KeyError:
        raise CheckpointError(f"checkpoint '{path}' has no tensor '{name}'") from None
    dtype = _DTYPES.get(spec["dtype"]) or "uint16"
    if spec["dtype"] not in _DTYPES:
        raise CheckpointError(f"checkpoint '{path}': tensor '{name}' has unknown dtype "
                              f"{spec['dtype']!r}")
    out = np.zeros(spec["global_shape"], dtype=dtype)
    seen = np.zeros(spec["global_shape"], dtype=bool)
    covered = 0
    for chunk in spec["chunks"]:
        with safe_open(str(path / chunk["file"]), framework="numpy") as f:
            block = f.get_tensor(name)
        if list(block.shape) != list(chunk["shape"]):
            raise CheckpointError(f"'{chunk['file']}': tensor '{name}' has shape "
                                  f"{list(block.shape)}, the manifest says {chunk['shape']}")
        box = tuple(slice(o, o + s) for o, s in zip(chunk["offset"], chunk["shape"]))
        if seen[box].any():
            raise CheckpointError(f"checkpoint '{path}': chunks of '{name}' overlap at "
                                  f"{chunk['offset']}")
        seen[box] = True
        out[box] = block
        covered += block.size
    if covered != out.size:
        raise CheckpointError(f"checkpoint '{path}': the chunks of '{name}' cover {covered} "
                              f"of {out.size} elements")
    return out


def load_checkpoint(path: Union[str, Path],
                    kinds: Iterable[str] = ("param",)) -> Dict[str, "np.ndarray"]:
    """Every state tensor of checkpoint `path` whose kind is in `kinds`
    ("param", "opt_m", "opt_v"), by name, at its global shape.

    Parameters keep the padded vocabulary rows (docs/running.md: the
    vocabulary is padded to a multiple of 64; the padded rows are zero).
    """
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = set(kinds)
    unknown = kinds - {"param", "opt_m", "opt_v"}
    if unknown:
        raise CheckpointError(f"unknown state kinds {sorted(unknown)} (param, opt_m, opt_v)")
    manifest = read_manifest(path)
    return {name: load_tensor(path, name, manifest)
            for name, spec in manifest["tensors"].items() if spec["kind"] in kinds}
