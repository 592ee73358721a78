"""The prepared token directory (docs/data-format.md): its meta.json and readers.

`prepare` writes it; `shard-run --data DIR` (runtime/train) and the functions
here read it. Everything a reader needs is in meta.json, so that the C++ side
needs neither the `tokenizers` library nor Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Union

FORMAT = "autoshard-tokens"
VERSION = 1  # the newest meta.json version this reader understands
SPLITS = ("train", "val")
META = "meta.json"
_ITEMSIZE = {"uint16": 2, "uint32": 4}


class DataError(ValueError):
    """Data that cannot be prepared or read; the message names the file and value."""


class UsageError(DataError):
    """A bad argument (tokenizer spec, validation fraction); the CLI exits with status 2."""


def dtype_for_vocab(vocab_size: int) -> str:
    """Token dtype of a vocabulary of `vocab_size` ids: "uint16" when every id
    fits in 16 bits (vocab_size <= 65536), else "uint32".

    Raises DataError if vocab_size is not in [1, 2**32].
    """
    if not isinstance(vocab_size, int) or not 1 <= vocab_size <= 1 << 32:
        raise DataError(f"vocabulary size {vocab_size!r} is not in [1, 2^32]")
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def file_xxh3(path: Union[str, Path]) -> str:
    """XXH3-64 of the file's bytes, as 16 lowercase hex digits."""
    import xxhash

    h = xxhash.xxh3_64()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_hex(s: str) -> bool:
    try:
        bytes.fromhex(s)
    except ValueError:
        return False
    return " " not in s  # fromhex skips spaces


def read_meta(path: Union[str, Path], verify: bool = False) -> dict:
    """The parsed meta.json of prepared token directory `path`, checked.

    Checks the format and version, the dtype against vocab_size, that every
    split file is a plain file name whose size is `tokens * itemsize` bytes
    (a truncated or overwritten file is caught here) and that token_bytes has
    vocab_size entries. With `verify`, also checks each split file's XXH3-64
    (reads every byte). Raises DataError naming the file on any mismatch.
    """
    path = Path(path)
    mf = path / META
    if not mf.is_file():
        raise DataError(f"'{path}' is not a prepared token directory: it has no {META}")
    try:
        meta = json.loads(mf.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"'{mf}' is not valid JSON: {e}") from None
    if not isinstance(meta, dict):
        raise DataError(f"'{mf}' is not a JSON object")
    if meta.get("format") != FORMAT:
        raise DataError(f"'{mf}': format is {meta.get('format')!r}, not {FORMAT!r}")
    if not _is_int(meta.get("version")) or not 1 <= meta["version"] <= VERSION:
        raise DataError(f"'{mf}': format version {meta.get('version')!r} is not one this "
                        f"reader understands (1 to {VERSION})")
    vocab = meta.get("vocab_size")
    if not _is_int(vocab) or vocab < 1:
        raise DataError(f"'{mf}': vocab_size {vocab!r} is not a positive integer")
    dtype = meta.get("dtype")
    if dtype not in _ITEMSIZE:
        raise DataError(f"'{mf}': dtype {dtype!r} is not uint16 or uint32")
    if dtype != dtype_for_vocab(vocab):
        raise DataError(f"'{mf}': dtype {dtype} does not match vocab_size {vocab} "
                        f"(expected {dtype_for_vocab(vocab)})")
    tb = meta.get("token_bytes")
    if not isinstance(tb, list) or len(tb) != vocab:
        raise DataError(f"'{mf}': token_bytes has "
                        f"{len(tb) if isinstance(tb, list) else 'no'} entries, "
                        f"vocab_size is {vocab}")
    if not (all(isinstance(h, str) and len(h) % 2 == 0 for h in tb)
            and _is_hex("".join(tb))):
        raise DataError(f"'{mf}': token_bytes has an entry that is not a hex string")
    tk = meta.get("tokenizer")
    eot = tk.get("eot_id") if isinstance(tk, dict) else None
    if (not isinstance(tk, dict) or tk.get("kind") not in ("char", "bpe", "huggingface")
            or not (eot is None or (_is_int(eot) and 0 <= eot < vocab))):
        raise DataError(f"'{mf}': tokenizer {tk!r} is not a known kind with an eot_id "
                        f"below vocab_size {vocab}")
    for split in SPLITS:
        s = meta.get(split)
        if not isinstance(s, dict):
            raise DataError(f"'{mf}': no {split!r} split")
        name = s.get("file")
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise DataError(f"'{mf}': {split} file {name!r} is not a plain file name")
        tokens, nbytes = s.get("tokens"), s.get("bytes")
        if not _is_int(tokens) or tokens < 0 or nbytes != tokens * _ITEMSIZE[dtype]:
            raise DataError(f"'{mf}': {split} split has tokens {tokens!r} and bytes "
                            f"{nbytes!r}, which do not agree for dtype {dtype}")
        f = path / name
        size = f.stat().st_size if f.is_file() else None
        if size != nbytes:
            raise DataError(f"'{f}' has {'no file' if size is None else f'{size} bytes'}, "
                            f"{META} says {nbytes} bytes ({tokens} {dtype} tokens)"
                            + (" (truncated?)" if size is not None and size < nbytes else ""))
        if verify and file_xxh3(f) != s.get("xxh3_64"):
            raise DataError(f"'{f}' has checksum {file_xxh3(f)}, {META} says "
                            f"{s.get('xxh3_64')}")
    return meta


def load_tokens(path: Union[str, Path], split: str):
    """Token ids of split "train" or "val" of prepared directory `path`.

    Returns a read-only np.memmap of shape (tokens,) and the directory's dtype
    (uint16 or uint32), without reading the file. Raises DataError if the
    directory fails `read_meta` or `split` is not train/val.
    """
    import numpy as np

    if split not in SPLITS:
        raise DataError(f"unknown split {split!r} (train, val)")
    meta = read_meta(path)
    s = meta[split]
    if s["tokens"] == 0:  # np.memmap refuses an empty file
        return np.zeros(0, dtype=meta["dtype"])
    return np.memmap(Path(path) / s["file"], dtype=meta["dtype"], mode="r",
                     shape=(s["tokens"],))


def decode(meta: dict, ids: Iterable[int]) -> bytes:
    """The bytes token ids `ids` stand for: the concatenation of their
    meta["token_bytes"] entries (no tokenizer needed).

    `ids` is any iterable of ints or an integer array. For char and byte-level
    BPE directories this is exact (decoding a whole split gives back the
    corpus, with the end-of-text token's text between documents); for other
    tokenizers see docs/data-format.md. Raises DataError for an id outside
    [0, vocab_size).
    """
    import numpy as np

    table: List[bytes] = [bytes.fromhex(h) for h in meta["token_bytes"]]
    arr = np.asarray(ids if hasattr(ids, "__len__") else list(ids))
    if arr.size == 0:
        return b""
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise DataError(f"token ids must be a 1-D sequence of integers, found shape "
                        f"{arr.shape} dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= len(table):
        bad = lo if lo < 0 else hi
        raise DataError(f"token id {bad} is outside the vocabulary [0, {len(table)})")
    return b"".join(map(table.__getitem__, arr.tolist()))
