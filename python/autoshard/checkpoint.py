"""Read autoshard checkpoints from Python (numpy; xxhash to verify them).

A checkpoint (`shard-run --save-dir DIR` writes `DIR/step-000123/`, see
docs/checkpoint-format.md) holds one safetensors file per writing rank and a
`manifest.json` that lists, for every state tensor (parameters and the AdamW
moments `opt_m` / `opt_v`), its global shape and the chunks that cover it:
the file, the tensor's key in it (its name), the chunk's global box
(`offset`, `shape`, one entry per dim), its byte offset in the file and its
XXH3-64. Every rank file is a plain safetensors file, so
`safetensors.numpy.load_file` opens it; this module puts the chunks back
together into global (unsharded) arrays.

It is as strict as shard-run's loader (runtime/train/lib/CheckpointLoad.cpp):
`step-N.tmp` / `step-N.old` directories (saves in progress) are refused; the
manifest must be version 1 to VERSION and well formed (every chunk inside
its tensor, the chunks covering it exactly once); each rank file it reads
must have the manifest's size, a valid safetensors header that agrees with
the manifest on every chunk read (tensor, dtype, shape, byte offset, global
offset) and the manifest's step; and every chunk read must match its
XXH3-64 (`verify=False` skips only that). Every problem is a CheckpointError
that names the checkpoint, the file and the tensor.

Example::

    from autoshard.checkpoint import load_checkpoint
    params = load_checkpoint("build/ckpt/step-002000")   # name -> np.ndarray
    params["wte"].shape                                   # (128, 128)

Needs `numpy`, and `xxhash` to verify checksums (the default; `pip install
numpy xxhash`).
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Union

FORMAT = "autoshard-checkpoint"
VERSION = 1  # the newest manifest version this reader understands (kCheckpointVersion)
MIN_VERSION = 1  # the oldest

KINDS = ("param", "opt_m", "opt_v")

# manifest dtype -> (safetensors dtype, numpy dtype of the array returned, bytes)
_DTYPES = {"f32": ("F32", "float32", 4), "f64": ("F64", "float64", 8),
           "f16": ("F16", "float16", 2), "bf16": ("BF16", "uint16", 2),
           "i32": ("I32", "int32", 4), "i64": ("I64", "int64", 8)}
_ST_BYTES = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I32": 4, "I64": 8}
_MAX_HEADER_BYTES = 100_000_000  # the reference safetensors reader's cap
_HEX64 = re.compile(r"[0-9a-fA-F]{1,16}")


class CheckpointError(ValueError):
    """A checkpoint this reader cannot use; the message names the file and tensor."""


# --- the manifest -------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _product(shape: List[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _check_dir(path: Path) -> None:
    """Refuses `step-N.tmp` / `step-N.old` (a save in progress or being replaced)."""
    leaf = path.name
    if leaf in ("", ".", ".."):
        leaf = path.resolve().name
    if len(leaf) > 4 and leaf.endswith((".tmp", ".old")):
        raise CheckpointError(f"checkpoint '{path}' is a save in progress or one being "
                              f"replaced (*.tmp / *.old), not a complete checkpoint")


def _field(obj, key: str, types, where: str, mf) -> object:
    """obj[key], which must exist and be of `types` ("int": an integer, not a bool)."""
    prefix = f"checkpoint manifest '{mf}': " + (f"{where}: " if where else "")
    if not isinstance(obj, dict) or key not in obj:
        raise CheckpointError(f"{prefix}field '{key}' is missing")
    v = obj[key]
    ok = _is_int(v) if types == "int" else isinstance(v, types)
    if not ok:
        raise CheckpointError(f"{prefix}field '{key}' has the wrong type: {json.dumps(v)}")
    return v


def _int_list(v: list, what: str, mf) -> List[int]:
    if not all(_is_int(x) and x >= 0 for x in v):
        raise CheckpointError(f"checkpoint manifest '{mf}': {what} must list integers >= 0, "
                              f"found {json.dumps(v)}")
    return v


def _hex64(s: str, what: str, mf) -> int:
    if not _HEX64.fullmatch(s):
        raise CheckpointError(f"checkpoint manifest '{mf}': {what} xxh3_64 {s!r} is not a "
                              f"64-bit hex checksum")
    return int(s, 16)


def _check_manifest(path: Path, manifest, tensors: Optional[Iterable[str]] = None) -> None:
    """Checks the structure of `manifest` (format, version, step, files and the
    tensors named in `tensors`, all if None) the way shard-run does; no I/O."""
    mf = path / "manifest.json"
    if not isinstance(manifest, dict):
        raise CheckpointError(f"'{mf}' is not a JSON object")
    fmt = _field(manifest, "format", str, "", mf)
    if fmt != FORMAT:
        raise CheckpointError(f"'{mf}': format is {fmt!r}, not {FORMAT!r}")
    if "version" not in manifest or not _is_int(manifest["version"]):
        raise CheckpointError(f"'{mf}': format version {json.dumps(manifest.get('version'))} "
                              f"is not an integer (this reader reads versions "
                              f"{MIN_VERSION} to {VERSION})")
    version = manifest["version"]
    if version < MIN_VERSION or version > VERSION:
        raise CheckpointError(f"'{mf}': format version {version} is "
                              f"{'invalid' if version < MIN_VERSION else 'newer than this reader'}"
                              f" (it reads versions {MIN_VERSION} to {VERSION})")
    step = _field(manifest, "step", "int", "", mf)
    if step < 0:
        raise CheckpointError(f"'{mf}': step is {step}, not a step count")
    files = _field(manifest, "files", dict, "", mf)
    for name, f in files.items():
        where = f"file '{name}'"
        if "/" in name or name in ("", ".", ".."):
            raise CheckpointError(f"'{mf}': file name {name!r} is not a plain file name")
        if _field(f, "bytes", "int", where, mf) < 0:
            raise CheckpointError(f"'{mf}': {where} has {f['bytes']} bytes")
        _hex64(_field(f, "xxh3_64", str, where, mf), where, mf)
    all_tensors = _field(manifest, "tensors", dict, "", mf)
    for name in (all_tensors if tensors is None else tensors):
        if name not in all_tensors:
            raise CheckpointError(f"checkpoint '{path}' has no tensor '{name}'")
        _check_tensor(mf, name, all_tensors[name], files)


def _check_tensor(mf: Path, name: str, t, files: dict) -> None:
    where = f"tensor '{name}'"
    kind = _field(t, "kind", str, where, mf)
    if kind not in KINDS:
        raise CheckpointError(f"checkpoint manifest '{mf}': {where} has unknown kind "
                              f"{kind!r} (one of {', '.join(KINDS)})")
    dtype = _field(t, "dtype", str, where, mf)
    if dtype not in _DTYPES:
        raise CheckpointError(f"checkpoint manifest '{mf}': {where} has unknown dtype "
                              f"{dtype!r} (one of {', '.join(_DTYPES)})")
    elem = _DTYPES[dtype][2]
    gshape = _int_list(_field(t, "global_shape", list, where, mf), f"{where} global_shape", mf)
    chunks = _field(t, "chunks", list, where, mf)
    for c in chunks:
        cfile = _field(c, "file", str, where, mf)
        byte_offset = _field(c, "byte_offset", "int", where, mf)
        _hex64(_field(c, "xxh3_64", str, where, mf), f"{where} chunk", mf)
        off = _int_list(_field(c, "offset", list, where, mf), f"{where} chunk offset", mf)
        shape = _int_list(_field(c, "shape", list, where, mf), f"{where} chunk shape", mf)
        if len(off) != len(gshape) or len(shape) != len(gshape):
            raise CheckpointError(f"checkpoint manifest '{mf}': {where} has a chunk of rank "
                                  f"{len(shape)} (offset {_shape_str(off)}), but its global "
                                  f"shape {_shape_str(gshape)} has rank {len(gshape)}")
        if any(o + s > g for o, s, g in zip(off, shape, gshape)):
            raise CheckpointError(f"checkpoint manifest '{mf}': {where} chunk at "
                                  f"{_shape_str(off)} of shape {_shape_str(shape)} lies outside "
                                  f"the global shape {_shape_str(gshape)}")
        if cfile not in files:
            raise CheckpointError(f"checkpoint manifest '{mf}': {where} names file '{cfile}', "
                                  f"which 'files' does not list")
        end = byte_offset + _product(shape) * elem
        if byte_offset < 0 or end > files[cfile]["bytes"]:
            raise CheckpointError(f"checkpoint manifest '{mf}': {where} chunk at byte "
                                  f"{byte_offset} ends at byte {end} of '{cfile}', which has "
                                  f"{files[cfile]['bytes']} bytes")
    # exactly once: pairwise disjoint, and as many elements as the tensor
    for i, x in enumerate(chunks):
        for y in chunks[i + 1:]:
            if all(a < b + n and b < a + m for a, m, b, n in
                   zip(x["offset"], x["shape"], y["offset"], y["shape"])):
                raise CheckpointError(f"checkpoint manifest '{mf}': {where} has overlapping "
                                      f"chunks at {_shape_str(x['offset'])} and "
                                      f"{_shape_str(y['offset'])}")
    covered = sum(_product(c["shape"]) for c in chunks)
    if covered != _product(gshape):
        raise CheckpointError(f"checkpoint manifest '{mf}': {where}'s chunks cover {covered} "
                              f"elements, but its global shape {_shape_str(gshape)} has "
                              f"{_product(gshape)}")


def _file_size_error(path: Path, name: str, size: Optional[int], want: int) -> CheckpointError:
    what = "no file" if size is None else f"{size} bytes"
    hint = "" if size is None else " (truncated?)" if size < want else " (grown?)"
    return CheckpointError(f"checkpoint '{path}': file '{name}' has {what}, the manifest "
                           f"says {want} bytes{hint}")


def read_manifest(path: Union[str, Path]) -> dict:
    """The parsed `manifest.json` of checkpoint directory `path`, checked.

    Raises CheckpointError if `path` is a `step-N.tmp` / `step-N.old`
    directory (a save in progress), has no manifest (an incomplete save), is
    not an autoshard checkpoint, has a format version outside MIN_VERSION to
    VERSION, is malformed (a missing or mistyped field, a chunk outside its
    tensor, chunks that overlap or do not cover their tensor, an unknown
    dtype or kind), or if a rank file is missing or its size differs from
    the manifest's.
    """
    path = Path(path)
    _check_dir(path)
    mf = path / "manifest.json"
    if not mf.is_file():
        if not path.is_dir():
            raise CheckpointError(f"checkpoint '{path}' is not a directory")
        hint = " (an incomplete save?)"
        if any(p.name.startswith("step-") for p in path.iterdir()):
            hint = " (a save directory: pass one of its step-N checkpoints)"
        raise CheckpointError(f"checkpoint '{path}' has no manifest.json{hint}")
    try:
        manifest = json.loads(mf.read_bytes())
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise CheckpointError(f"'{mf}' is not valid JSON: {e}") from None
    except OSError as e:
        raise CheckpointError(f"cannot read '{mf}': {e}") from None
    _check_manifest(path, manifest)
    for name, f in manifest["files"].items():
        size = (path / name).stat().st_size if (path / name).is_file() else None
        if size != f["bytes"]:
            raise _file_size_error(path, name, size, f["bytes"])
    return manifest


# --- rank files ---------------------------------------------------------------

class _Header:
    """A rank file's safetensors header, checked (like readSafetensorsHeader)."""

    def __init__(self, where: str, raw_len: bytes, text: bytes, size: int):
        def fail(what):
            return CheckpointError(f"{where}: {what}")

        (n,) = struct.unpack("<Q", raw_len)
        self.data_start = 8 + n
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None
        if not isinstance(doc, dict):
            raise fail("the safetensors header is not a JSON object")
        data_bytes = size - self.data_start
        self.metadata: Dict[str, str] = {}
        self.tensors: Dict[str, tuple] = {}  # name -> (dtype, shape, begin)
        ranges = []
        for name, v in doc.items():
            if name == "__metadata__":
                if not isinstance(v, dict) or not all(isinstance(s, str) for s in v.values()):
                    raise fail("the header's __metadata__ is not a map of strings")
                self.metadata = v
                continue
            bad = lambda what, name=name: fail(f"tensor '{name}' in the header: {what}")
            if not (isinstance(v, dict) and isinstance(v.get("dtype"), str)
                    and isinstance(v.get("shape"), list)
                    and isinstance(v.get("data_offsets"), list) and len(v["data_offsets"]) == 2):
                raise bad(f"needs dtype, shape and data_offsets [begin, end], found "
                          f"{json.dumps(v)}")
            dtype, shape, offsets = v["dtype"], v["shape"], v["data_offsets"]
            if dtype not in _ST_BYTES:
                raise bad(f"dtype {dtype!r} is not one of {', '.join(_ST_BYTES)}")
            if not all(_is_int(d) and d >= 0 for d in shape):
                raise bad(f"shape {json.dumps(shape)} has a dim that is not >= 0")
            if not all(_is_int(o) and o >= 0 for o in offsets):
                raise bad(f"data_offsets {json.dumps(offsets)} are not byte offsets")
            begin, end = offsets
            need = _product(shape) * _ST_BYTES[dtype]
            if end - begin != need:
                raise bad(f"data_offsets [{begin}, {end}) hold {end - begin} bytes, but "
                          f"{dtype}{_shape_str(shape)} needs {need}")
            if end > data_bytes:
                raise bad(f"data ends at byte {end} of the data, but the file holds only "
                          f"{data_bytes} data bytes (truncated?)")
            ranges.append((begin, end))
            self.tensors[name] = (dtype, shape, begin)
        ranges.sort()
        for (_, e0), (b1, _) in zip(ranges, ranges[1:]):
            if b1 < e0:
                raise fail(f"two tensors in the header overlap at data byte {b1}")


class _Files:
    """The rank files of one checkpoint that a load reads: each opened, its
    size and header checked once. A context manager (closes them)."""

    def __init__(self, path: Path, manifest: dict):
        self.path, self.manifest = path, manifest
        self.open: Dict[str, tuple] = {}  # name -> (fd, _Header)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for fd, _ in self.open.values():
            os.close(fd)
        self.open.clear()

    def get(self, name: str):
        if name in self.open:
            return self.open[name]
        fpath = self.path / name
        want = self.manifest["files"][name]["bytes"]
        try:
            fd = os.open(fpath, os.O_RDONLY)
        except FileNotFoundError:
            raise _file_size_error(self.path, name, None, want) from None
        except OSError as e:
            raise CheckpointError(f"checkpoint '{self.path}': cannot open '{name}': {e}") from None
        try:
            size = os.fstat(fd).st_size
            if size != want:
                raise _file_size_error(self.path, name, size, want)
            where = f"checkpoint '{self.path}': file '{name}'"
            raw_len = self._pread(fd, name, 8, 0)
            (n,) = struct.unpack("<Q", raw_len)
            if n > _MAX_HEADER_BYTES or n > size - 8:
                raise CheckpointError(f"{where}: safetensors header length {n} exceeds the file "
                                      f"({size} bytes) or 100 MB")
            header = _Header(where, raw_len, self._pread(fd, name, n, 8), size)
            saved = header.metadata.get("autoshard.step")
            if saved != str(self.manifest["step"]):
                raise CheckpointError(f"{where} was saved at step {saved or '?'}, the manifest "
                                      f"says step {self.manifest['step']}")
        except BaseException:
            os.close(fd)
            raise
        self.open[name] = (fd, header)
        return self.open[name]

    def _pread(self, fd: int, name: str, n: int, offset: int) -> bytes:
        try:
            data = os.pread(fd, n, offset)
            while len(data) < n:
                more = os.pread(fd, n - len(data), offset + len(data))
                if not more:
                    break
                data += more
        except OSError as e:
            raise CheckpointError(f"checkpoint '{self.path}': cannot read '{name}': {e}") from None
        if len(data) != n:
            raise CheckpointError(f"checkpoint '{self.path}': file '{name}' ended at byte "
                                  f"{offset + len(data)}, reading {n} bytes at {offset} "
                                  f"(truncated while reading?)")
        return data

    def read_chunk(self, tensor: str, spec: dict, c: dict, verify: bool):
        """The bytes of chunk `c` of `tensor`, checked against the file's header
        and (verify) its checksum."""
        fd, h = self.get(c["file"])
        st_dtype = _DTYPES[spec["dtype"]][0]
        where = f"checkpoint '{self.path}': file '{c['file']}': tensor '{tensor}'"
        if tensor not in h.tensors:
            raise CheckpointError(f"{where}: the file's header has no tensor '{tensor}', but the "
                                  f"manifest puts its chunk at global {_shape_str(c['offset'])} "
                                  f"there")
        dtype, shape, begin = h.tensors[tensor]
        if dtype != st_dtype:
            raise CheckpointError(f"{where}: the file's header says dtype {dtype} "
                                  f"({dtype.lower()}), the manifest says {spec['dtype']}")
        if shape != c["shape"]:
            raise CheckpointError(f"{where}: the file's header says shape {_shape_str(shape)}, "
                                  f"the manifest's chunk at global {_shape_str(c['offset'])} "
                                  f"says {_shape_str(c['shape'])}")
        if h.data_start + begin != c["byte_offset"]:
            raise CheckpointError(f"{where}: the file's header puts it at byte "
                                  f"{h.data_start + begin}, the manifest says byte "
                                  f"{c['byte_offset']}")
        saved = None
        try:
            info = json.loads(h.metadata.get(tensor, ""))
            if isinstance(info, dict):
                saved = info.get("offset")
        except (ValueError, RecursionError):
            pass
        if not (isinstance(saved, list) and len(saved) == len(c["offset"])
                and all(_is_int(a) and a == b for a, b in zip(saved, c["offset"]))):
            raise CheckpointError(f"{where}: the file's metadata says global offset "
                                  f"{json.dumps(saved)}, the manifest says "
                                  f"{_shape_str(c['offset'])}")
        data = self._pread(fd, c["file"], _product(shape) * _ST_BYTES[dtype], c["byte_offset"])
        if verify:
            got, want = _xxh3_64()(data), int(c["xxh3_64"], 16)
            if got != want:
                raise CheckpointError(f"{where}: the chunk at global {_shape_str(c['offset'])} "
                                      f"has checksum {got:016x}, the manifest says "
                                      f"{c['xxh3_64']} (corrupt)")
        return data


def _xxh3_64():
    try:
        import xxhash
    except ImportError:
        raise ImportError("autoshard.checkpoint needs the xxhash package to verify "
                          "checksums (pip install xxhash), or pass verify=False") from None
    return xxhash.xxh3_64_intdigest


def _load(path: Path, manifest: dict, name: str, files: _Files, verify: bool):
    import numpy as np

    spec = manifest["tensors"][name]
    dtype = np.dtype(_DTYPES[spec["dtype"]][1])
    out = np.empty(spec["global_shape"], dtype=dtype)  # the chunks cover it exactly once
    for c in spec["chunks"]:
        data = files.read_chunk(name, spec, c, verify)
        block = np.frombuffer(data, dtype=dtype.newbyteorder("<")).reshape(c["shape"])
        out[tuple(slice(o, o + s) for o, s in zip(c["offset"], c["shape"]))] = block
    return out


# --- public API ---------------------------------------------------------------

def verify_checksums(path: Union[str, Path], manifest: Optional[dict] = None) -> None:
    """Checks every rank file of checkpoint `path` against its whole-file
    XXH3-64 (the manifest's `files`), and its size.

    Needs the `xxhash` package (`pip install xxhash`). Raises CheckpointError
    naming the first file that is missing or differs (and for what
    read_manifest refuses).
    """
    import xxhash

    path = Path(path)
    _check_dir(path)
    if manifest is None:
        manifest = read_manifest(path)
    else:
        _check_manifest(path, manifest, tensors=())
    for name, f in manifest["files"].items():
        h, size = xxhash.xxh3_64(), 0
        try:
            with open(path / name, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 24), b""):
                    h.update(block)
                    size += len(block)
        except FileNotFoundError:
            raise _file_size_error(path, name, None, f["bytes"]) from None
        except OSError as e:
            raise CheckpointError(f"checkpoint '{path}': cannot read '{name}': {e}") from None
        if size != f["bytes"]:
            raise _file_size_error(path, name, size, f["bytes"])
        if h.intdigest() != int(f["xxh3_64"], 16):
            raise CheckpointError(f"checkpoint '{path}': file '{name}' has checksum "
                                  f"{h.hexdigest()}, the manifest says {f['xxh3_64']}")


def load_tensor(path: Union[str, Path], name: str, manifest: Optional[dict] = None, *,
                verify: bool = True):
    """State tensor `name` of checkpoint `path`, reassembled to its global shape.

    Returns a numpy array of the manifest's `global_shape` (row-major, native
    byte order; float32/float64/float16/int32/int64 for f32/f64/f16/i32/i64,
    bf16 as uint16 bit patterns, which numpy has no type for). `manifest`:
    read_manifest(path), to read several tensors without parsing it again.
    With `verify` (the default) every chunk's bytes are checked against its
    `xxh3_64` (needs the `xxhash` package).

    Raises CheckpointError if the checkpoint has no such tensor, for what
    read_manifest refuses, if a rank file it reads is missing, has another
    size than the manifest's, a malformed safetensors header, or a header
    that disagrees with the manifest (the tensor missing, another dtype,
    shape, byte offset, global offset or step), or if a chunk's checksum
    differs.
    """
    path = Path(path)
    if manifest is None:
        manifest = read_manifest(path)
        if not isinstance(manifest["tensors"].get(name), dict):
            raise CheckpointError(f"checkpoint '{path}' has no tensor '{name}'")
    else:
        _check_dir(path)
        _check_manifest(path, manifest, tensors=(name,))
    with _Files(path, manifest) as files:
        return _load(path, manifest, name, files, verify)


def load_checkpoint(path: Union[str, Path], kinds: Iterable[str] = ("param",), *,
                    verify: bool = True) -> Dict[str, "np.ndarray"]:
    """Every state tensor of checkpoint `path` whose kind is in `kinds`
    ("param", "opt_m", "opt_v"; one kind may be passed as a string), by
    name, each as load_tensor returns it (its global shape; f32 master
    weights as float32).

    Parameters keep the padded vocabulary rows (docs/running.md: the
    vocabulary is padded to a multiple of 64; the padded rows are zero).
    With `verify` (the default) the chunks read are checked against their
    XXH3-64 checksums (needs `xxhash`); chunks of other kinds are not read.
    Raises CheckpointError for an unknown kind and for what read_manifest
    and load_tensor refuse.
    """
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = set(kinds)
    unknown = kinds - set(KINDS)
    if unknown:
        raise CheckpointError(f"unknown state kinds {sorted(unknown)} ({', '.join(KINDS)})")
    path = Path(path)
    manifest = read_manifest(path)
    with _Files(path, manifest) as files:
        return {name: _load(path, manifest, name, files, verify)
                for name, spec in manifest["tensors"].items() if spec["kind"] in kinds}
