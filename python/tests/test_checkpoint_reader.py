"""autoshard.checkpoint against small checkpoints written here (no build needed).

The checkpoints follow docs/checkpoint-format.md as shard-run writes them:
rank files from `safetensors.numpy.save_file` (a raw writer for bf16, which
numpy has no type for) with the `autoshard.*` and per-chunk metadata, and a
manifest with each chunk's byte offset and XXH3-64. Every damaged or edited
checkpoint must fail with a CheckpointError that names the problem, never
with a raw numpy / KeyError / ValueError, and never load silently.
"""

import copy
import json
import shutil
import struct

import pytest

np = pytest.importorskip("numpy")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
xxhash = pytest.importorskip("xxhash")

from autoshard.checkpoint import (CheckpointError, load_checkpoint, load_tensor,
                                  read_manifest, verify_checksums)

STEP = 7
ST_DTYPE = {"f32": "F32", "f64": "F64", "f16": "F16", "bf16": "BF16", "i32": "I32",
            "i64": "I64"}


def _write_raw_safetensors(path, arrays, metadata):
    """A safetensors file of `arrays` (name -> (safetensors dtype, np array));
    for bf16, which safetensors.numpy cannot write."""
    header, blobs, pos = {"__metadata__": metadata}, [], 0
    for name, (dt, a) in arrays.items():
        b = np.array(a, order="C").tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [pos, pos + len(b)]}
        blobs.append(b)
        pos += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def _header(path):
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return 8 + n, json.loads(raw[8:8 + n])


def write_checkpoint(d, tensors, step=STEP):
    """Writes checkpoint directory `d`. tensors: name -> (kind, dtype, global
    array (uint16 bit patterns for bf16), [(rank, offset, shape), ...])."""
    d.mkdir(parents=True)
    per_rank = {}
    for name, (kind, dtype, full, chunks) in tensors.items():
        for rank, off, shape in chunks:
            box = tuple(slice(o, o + s) for o, s in zip(off, shape))
            per_rank.setdefault(rank, {})[name] = (dtype, np.array(full[box], order="C"), off,
                                                   list(full.shape))
    manifest_chunks = {name: [] for name in tensors}
    files = {}
    for rank, chunks in sorted(per_rank.items()):
        fname = f"rank-{rank:05d}.safetensors"
        path = d / fname
        meta = {"autoshard.format": "autoshard-checkpoint-shard",
                "autoshard.step": str(step), "autoshard.rank": str(rank)}
        for name, (_, _, off, gshape) in chunks.items():
            meta[name] = json.dumps({"global_shape": gshape, "offset": list(off)},
                                    separators=(",", ":"))
        if any(dt == "bf16" for dt, *_ in chunks.values()):
            _write_raw_safetensors(path, {n: (ST_DTYPE[dt], a) for n, (dt, a, _, _)
                                          in chunks.items()}, meta)
        else:
            safetensors_numpy.save_file({n: a for n, (_, a, _, _) in chunks.items()},
                                        str(path), metadata=meta)
        start, header = _header(path)
        raw = path.read_bytes()
        for name, (_, a, off, _) in chunks.items():
            b0, b1 = header[name]["data_offsets"]
            manifest_chunks[name].append({
                "file": fname, "byte_offset": start + b0, "offset": list(off),
                "shape": list(a.shape),
                "xxh3_64": xxhash.xxh3_64_hexdigest(raw[start + b0:start + b1])})
        files[fname] = {"bytes": len(raw), "xxh3_64": xxhash.xxh3_64_hexdigest(raw)}
    manifest = {
        "format": "autoshard-checkpoint", "version": 1, "step": step,
        "model": {"name": "test", "fingerprint": "0"},
        "data": {"source": "x", "train_tokens": 1, "seed": 1, "next_step": step},
        "lr_schedule": {"max_lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 1,
                        "decay_steps": 2, "next_step": step},
        "tensors": {name: {"kind": kind, "of": "", "dtype": dtype,
                           "global_shape": list(full.shape), "chunks": manifest_chunks[name]}
                    for name, (kind, dtype, full, _) in tensors.items()},
        "files": files,
    }
    (d / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return d


def _arange(shape, dtype):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) * 1.5 + 1


WTE = _arange((4, 6), np.float32)
BIAS = _arange((6,), np.float32) - 100
M = _arange((4, 6), np.float32) * -0.25
V = _arange((4, 6), np.float32) * 0.125
SCALE = np.array(3.25, dtype=np.float32)

TENSORS = {
    # TP column split over both ranks
    "wte": ("param", "f32", WTE, [(0, [0, 0], [4, 3]), (1, [0, 3], [4, 3])]),
    "ln.bias": ("param", "f32", BIAS, [(0, [0], [6])]),
    "scale": ("param", "f32", SCALE, [(1, [], [])]),  # a scalar
    # a ZeRO row split
    "wte.exp_avg": ("opt_m", "f32", M, [(0, [0, 0], [2, 6]), (1, [2, 0], [2, 6])]),
    "wte.exp_avg_sq": ("opt_v", "f32", V, [(1, [0, 0], [4, 6])]),
}


@pytest.fixture
def ckpt(tmp_path):
    return write_checkpoint(tmp_path / "save" / "step-000007", TENSORS)


def edit(d, fn):
    m = json.loads((d / "manifest.json").read_text())
    fn(m)
    (d / "manifest.json").write_text(json.dumps(m))


def chunk(d, name, i=0):
    return json.loads((d / "manifest.json").read_text())["tensors"][name]["chunks"][i]


def error(fn, *words):
    """The message of the CheckpointError fn() raises; it must contain `words`."""
    with pytest.raises(CheckpointError) as ei:
        fn()
    msg = str(ei.value)
    for w in words:
        assert str(w) in msg, (w, msg)
    return msg


# --- what loads ---------------------------------------------------------------

def test_loads_global_arrays(ckpt):
    params = load_checkpoint(ckpt)
    assert sorted(params) == ["ln.bias", "scale", "wte"]
    for name, want in (("wte", WTE), ("ln.bias", BIAS), ("scale", SCALE)):
        assert params[name].dtype == np.float32 and params[name].shape == want.shape
        assert params[name].tobytes() == want.tobytes()
    state = load_checkpoint(ckpt, kinds=("param", "opt_m", "opt_v"))
    assert state["wte.exp_avg"].tobytes() == M.tobytes()
    assert state["wte.exp_avg_sq"].tobytes() == V.tobytes()
    assert sorted(load_checkpoint(ckpt, "opt_m")) == ["wte.exp_avg"]
    # the positional API of before, and verify=False
    m = read_manifest(ckpt)
    assert load_tensor(ckpt, "wte", m).tobytes() == WTE.tobytes()
    assert load_tensor(str(ckpt), "wte", verify=False).tobytes() == WTE.tobytes()
    assert load_checkpoint(ckpt, verify=False)["wte"].tobytes() == WTE.tobytes()
    verify_checksums(ckpt)
    # and each rank file is a plain safetensors file
    chunks = safetensors_numpy.load_file(str(ckpt / "rank-00001.safetensors"))
    assert chunks["wte"].tobytes() == WTE[:, 3:].tobytes()


def test_bf16_is_uint16_bit_patterns(tmp_path):
    bits = (np.arange(12, dtype=np.uint16) * 257).reshape(3, 4)
    d = write_checkpoint(tmp_path / "step-000007", {
        "w": ("param", "bf16", bits, [(0, [0, 0], [3, 2]), (1, [0, 2], [3, 2])])})
    w = load_tensor(d, "w")
    assert w.dtype == np.uint16 and w.shape == (3, 4) and (w == bits).all()


def test_unknown_tensor_and_kind(ckpt):
    error(lambda: load_tensor(ckpt, "nope"), "no tensor 'nope'")
    error(lambda: load_checkpoint(ckpt, kinds=("params",)), "unknown state kinds")


# --- 1. chunk checksums -------------------------------------------------------

def flip_byte(d, name, i=0, at=5):
    c = chunk(d, name, i)
    path = d / c["file"]
    raw = bytearray(path.read_bytes())
    raw[c["byte_offset"] + at] ^= 0x40
    path.write_bytes(bytes(raw))
    return c


def test_byte_flip_in_a_chunk_is_a_checksum_error(ckpt):
    c = flip_byte(ckpt, "wte", 1)
    got = xxhash.xxh3_64_hexdigest((ckpt / c["file"]).read_bytes()[
        c["byte_offset"]:c["byte_offset"] + 4 * 4 * 3])
    for fn in (lambda: load_checkpoint(ckpt), lambda: load_tensor(ckpt, "wte"),
               lambda: load_tensor(ckpt, "wte", read_manifest(ckpt), verify=True)):
        error(fn, "rank-00001.safetensors", "'wte'", got, c["xxh3_64"], "checksum")
    # verify=False skips the check (and returns the damaged data)
    w = load_tensor(ckpt, "wte", verify=False)
    assert w.tobytes() != WTE.tobytes() and (w[:, :3] == WTE[:, :3]).all()
    assert "rank-00001.safetensors" in error(lambda: verify_checksums(ckpt))


def test_checksum_of_a_tensor_not_read_is_not_needed(ckpt):
    flip_byte(ckpt, "wte.exp_avg_sq")
    assert load_checkpoint(ckpt)["wte"].tobytes() == WTE.tobytes()
    error(lambda: load_checkpoint(ckpt, kinds="opt_v"), "'wte.exp_avg_sq'", "checksum")


def test_bad_checksum_text(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"]["chunks"][0].update(xxh3_64="not-hex"))
    error(lambda: load_checkpoint(ckpt), "xxh3_64", "not-hex")


# --- 2. the manifest against each file's own header ---------------------------

def test_dtype_edited_to_bf16(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"].update(dtype="bf16"))
    error(lambda: load_checkpoint(ckpt), "'wte'", "rank-00000.safetensors", "bf16", "f32")


def test_dtype_edited_to_f64(ckpt):
    # 8-byte elements: the chunks would end past rank 1's file, or misread
    edit(ckpt, lambda m: m["tensors"]["ln.bias"].update(dtype="f64"))
    error(lambda: load_checkpoint(ckpt), "'ln.bias'", "f64")


def test_unknown_dtype(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"].update(dtype="fp8"))
    error(lambda: load_checkpoint(ckpt), "'wte'", "unknown dtype", "fp8")


def test_global_shape_edited_same_size(ckpt):
    # [4, 6] -> [6, 4]: the second chunk's box [0:4, 3:6] lies outside
    edit(ckpt, lambda m: m["tensors"]["wte"].update(global_shape=[6, 4]))
    error(lambda: load_checkpoint(ckpt), "'wte'", "[6, 4]", "outside")


def test_global_shape_edited_larger(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"].update(global_shape=[4, 8]))
    error(lambda: load_checkpoint(ckpt), "'wte'", "cover 24", "32")


def test_chunk_shapes_edited_consistently(ckpt):
    # The manifest on its own is consistent (two [2, 6] row blocks cover
    # [4, 6]), but the files hold [4, 3] column blocks.
    def fn(m):
        a, b = m["tensors"]["wte"]["chunks"]
        a.update(offset=[0, 0], shape=[2, 6])
        b.update(offset=[2, 0], shape=[2, 6])
    edit(ckpt, fn)
    error(lambda: load_checkpoint(ckpt), "'wte'", "rank-00000.safetensors", "[2, 6]", "[4, 3]")


def test_chunk_offsets_swapped(ckpt):
    # shapes, dtypes and byte offsets agree, but the chunks' global offsets
    # (the files' metadata) do not: the halves would be swapped
    def fn(m):
        a, b = m["tensors"]["wte"]["chunks"]
        a["offset"], b["offset"] = b["offset"], a["offset"]
    edit(ckpt, fn)
    error(lambda: load_checkpoint(ckpt), "'wte'", "[0, 3]", "[0, 0]", "offset")


def test_byte_offset_edited(ckpt):
    c = chunk(ckpt, "ln.bias")
    edit(ckpt, lambda m: m["tensors"]["ln.bias"]["chunks"][0].update(
        byte_offset=c["byte_offset"] + 4))
    error(lambda: load_checkpoint(ckpt, verify=False), "'ln.bias'", "rank-00000.safetensors",
          c["byte_offset"], c["byte_offset"] + 4)


def test_chunk_in_a_file_that_lacks_the_tensor(ckpt):
    edit(ckpt, lambda m: m["tensors"]["ln.bias"]["chunks"][0].update(
        file="rank-00001.safetensors"))
    error(lambda: load_checkpoint(ckpt), "'ln.bias'", "rank-00001.safetensors", "no tensor")


def test_chunk_file_not_listed(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"]["chunks"][0].update(file="rank-00009.safetensors"))
    error(lambda: load_checkpoint(ckpt), "'wte'", "rank-00009.safetensors")


def test_step_differs_from_the_files(ckpt):
    edit(ckpt, lambda m: m.update(step=8))
    error(lambda: load_checkpoint(ckpt), "step 7", "step 8")


def test_overlapping_chunks(ckpt):
    def fn(m):
        a, b = m["tensors"]["wte"]["chunks"]
        b["offset"] = [0, 2]
        m["tensors"]["wte"]["global_shape"] = [4, 6]
    edit(ckpt, fn)
    error(lambda: load_checkpoint(ckpt), "'wte'", "overlap")


def test_rank_of_a_chunk_differs(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"]["chunks"][0].update(offset=[0]))
    error(lambda: load_checkpoint(ckpt), "'wte'", "rank")


def test_chunk_past_the_end_of_its_file(ckpt):
    edit(ckpt, lambda m: m["tensors"]["wte"]["chunks"][1].update(byte_offset=10 ** 9))
    error(lambda: load_checkpoint(ckpt), "'wte'", "rank-00001.safetensors", "bytes")


def _write_header(d, fname, header_text):
    """Replaces the header of rank file `fname`, padded with spaces to the old
    header's length (the file keeps its size and data offsets)."""
    path = d / fname
    start, _ = _header(path)
    raw = path.read_bytes()
    assert len(header_text) <= start - 8
    path.write_bytes(raw[:8] + header_text.ljust(start - 8) + raw[start:])


@pytest.mark.parametrize("text,words", [
    (b"{not json", ["not a JSON object"]),
    (b"[1, 2]", ["not a JSON object"]),
    (b'{"wte": 5}', ["'wte'", "dtype"]),
    (b'{"wte": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 8]}}',
     ["'wte'", "data_offsets"]),
    (b'{"wte": {"dtype": "Q8", "shape": [4, 3], "data_offsets": [0, 48]}}', ["Q8"]),
    (b'{"wte": {"dtype": "F32", "shape": [4, -3], "data_offsets": [0, 48]}}', ["shape"]),
    (b'{"wte": {"dtype": "F32", "shape": [400000, 3], "data_offsets": [0, 4800000]}}',
     ["'wte'", "truncated"]),
    (b'{"__metadata__": {"autoshard.step": 7}}', ["__metadata__"]),
    (b'{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},'
     b' "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}', ["overlap"]),
    (b"\xff\xfe", ["not a JSON object"]),
])
def test_malformed_header(ckpt, text, words):
    _write_header(ckpt, "rank-00001.safetensors", text)
    error(lambda: load_checkpoint(ckpt, verify=False), "rank-00001.safetensors", *words)


def test_header_length_past_the_file(ckpt):
    path = ckpt / "rank-00000.safetensors"
    raw = bytearray(path.read_bytes())
    raw[:8] = struct.pack("<Q", len(raw))
    path.write_bytes(bytes(raw))
    error(lambda: load_checkpoint(ckpt), "rank-00000.safetensors", "header length")


# --- 3. format version --------------------------------------------------------

@pytest.mark.parametrize("version", [0, -1, 2, "1", 1.0, True, None])
def test_version(ckpt, version):
    edit(ckpt, lambda m: m.update(version=version))
    msg = error(lambda: read_manifest(ckpt), "version")
    error(lambda: load_checkpoint(ckpt), "version")
    if version in (0, -1):
        assert "invalid" in msg, msg
    if version == 2:
        assert "newer" in msg, msg


def test_version_missing(ckpt):
    edit(ckpt, lambda m: m.pop("version"))
    error(lambda: load_checkpoint(ckpt), "version")


def test_format(ckpt):
    edit(ckpt, lambda m: m.update(format="other"))
    error(lambda: load_checkpoint(ckpt), "format", "other")


# --- 4. saves in progress -----------------------------------------------------

@pytest.mark.parametrize("suffix", [".tmp", ".old"])
def test_save_in_progress_is_refused(ckpt, suffix):
    d = ckpt.with_name(ckpt.name + suffix)
    shutil.copytree(ckpt, d)
    m = read_manifest(ckpt)
    for fn in (lambda: read_manifest(d), lambda: load_checkpoint(d),
               lambda: load_checkpoint(str(d) + "/"), lambda: load_tensor(d, "wte", m),
               lambda: verify_checksums(d, m)):
        error(fn, suffix, "save in progress")


def test_save_directory_is_not_a_checkpoint(ckpt):
    error(lambda: load_checkpoint(ckpt.parent), "step-N")
    error(lambda: load_checkpoint(ckpt.parent / "missing"), "not a directory")


# --- 5. file sizes ------------------------------------------------------------

@pytest.mark.parametrize("change", ["truncate", "grow", "remove"])
def test_file_size_differs(ckpt, change):
    path = ckpt / "rank-00001.safetensors"
    size = path.stat().st_size
    m = read_manifest(ckpt)  # read before the file changed
    if change == "truncate":
        path.write_bytes(path.read_bytes()[:-3])
    elif change == "grow":
        path.write_bytes(path.read_bytes() + b"\0")
    else:
        path.unlink()
    words = ["rank-00001.safetensors"] + ([str(size)] if change != "remove" else [])
    error(lambda: read_manifest(ckpt), *words)
    error(lambda: load_checkpoint(ckpt, verify=False), *words)
    # a manifest read earlier: the file is checked when it is opened
    error(lambda: load_tensor(ckpt, "wte", m, verify=False), *words)
    error(lambda: verify_checksums(ckpt, m), "rank-00001.safetensors")


# --- malformed manifests: CheckpointError, never another exception -------------

def _paths(x, prefix=()):
    """Every key path of JSON value x."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def test_every_field_edited_or_removed(ckpt):
    """Each manifest field removed or replaced by a value of another type (or
    a negative one): loading everything either works or raises
    CheckpointError."""
    base = json.loads((ckpt / "manifest.json").read_text())
    replacements = [None, "x", -1, 1.5, [], {}, True, 10 ** 20]
    failures = 0
    for p in _paths(base):
        for r in ["<delete>"] + replacements:
            m = copy.deepcopy(base)
            parent = m
            for k in p[:-1]:
                parent = parent[k]
            if r == "<delete>":
                del parent[p[-1]]
            else:
                parent[p[-1]] = r
            (ckpt / "manifest.json").write_text(json.dumps(m))
            try:
                load_checkpoint(ckpt, kinds=("param", "opt_m", "opt_v"))
            except CheckpointError:
                failures += 1
            except Exception as e:  # noqa: BLE001 -- what the test is about
                pytest.fail(f"{p} = {r!r}: {type(e).__name__}: {e}")
    assert failures > 100


def test_every_header_byte_flipped(ckpt):
    """Any byte of a rank file's header changed: a CheckpointError or the
    right values, never another exception."""
    path = ckpt / "rank-00000.safetensors"
    start, _ = _header(path)
    raw = path.read_bytes()
    for i in range(start):
        for x in (0x01, 0x20, 0x80):
            damaged = bytearray(raw)
            damaged[i] ^= x
            path.write_bytes(bytes(damaged))
            try:
                got = load_checkpoint(ckpt, kinds=("param", "opt_m", "opt_v"))
            except CheckpointError:
                continue
            except Exception as e:  # noqa: BLE001
                pytest.fail(f"byte {i} ^ {x:#x}: {type(e).__name__}: {e}")
            assert got["wte"].tobytes() == WTE.tobytes(), (i, x)
            assert got["ln.bias"].tobytes() == BIAS.tobytes(), (i, x)
    path.write_bytes(raw)


def test_manifest_not_json(ckpt):
    (ckpt / "manifest.json").write_text("{")
    error(lambda: load_checkpoint(ckpt), "not valid JSON")
    (ckpt / "manifest.json").write_bytes(b"\xff\xfe{}")
    error(lambda: load_checkpoint(ckpt), "manifest.json")
    (ckpt / "manifest.json").write_text("[]")
    error(lambda: load_checkpoint(ckpt), "not a JSON object")
