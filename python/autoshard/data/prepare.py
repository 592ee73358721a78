"""`prepare`: text files -> a token directory (docs/data-format.md), streaming.

Every input is read in chunks of `chunk_bytes` (4 MiB) once per pass: the
char tokenizer counts bytes in a first pass, the BPE tokenizer trains in a
first pass, then the encode pass appends ids to train.bin. Memory stays at a
few chunks, whatever the corpus size, except for a tokenizer that cannot be
encoded in pieces (tokenizer.chunk_safety), whose documents are encoded whole.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Union

from .format import (FORMAT, META, VERSION, DataError, UsageError, dtype_for_vocab,
                     file_xxh3)
from .tokenizer import (BPE_EOT, SAFE_CUT, CharTokenizer, load_tokenizer_file, parse_spec,
                        train_bpe)

DEFAULT_CHUNK_BYTES = 4 << 20
CHUNK_ENV = "AUTOSHARD_DATA_CHUNK_BYTES"  # tests force tiny chunks with it
PIECES_PER_CHUNK = 16  # one encode_batch call gets a chunk cut into ~16 pieces


def _stderr(msg: str) -> None:
    print(f"autoshard.data: {msg}", file=sys.stderr)


def check_val_fraction(val_fraction) -> float:
    """`val_fraction` as a float; raises UsageError unless it is in (0, 1)."""
    ok = (isinstance(val_fraction, (int, float)) and not isinstance(val_fraction, bool)
          and 0 < val_fraction < 1)  # NaN fails the comparison too
    if not ok:
        raise UsageError(f"--val-fraction {val_fraction!r} is not in (0, 1)")
    return float(val_fraction)


def _chunk_bytes(chunk_bytes: Optional[int]) -> int:
    if chunk_bytes is None:
        env = os.environ.get(CHUNK_ENV)
        if not env:
            return DEFAULT_CHUNK_BYTES
        try:
            chunk_bytes = int(env)
        except ValueError:
            raise UsageError(f"{CHUNK_ENV}={env!r} is not an integer") from None
    if not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise UsageError(f"chunk size {chunk_bytes!r} is not a positive integer")
    return chunk_bytes


class _Input:
    """One input file and what each pass read of it (they must agree)."""

    def __init__(self, path):
        self.path = str(path)
        self.abspath = os.path.abspath(self.path)
        try:
            st = os.stat(self.path)
            if os.path.isdir(self.path):
                raise DataError(f"input '{self.path}' is a directory")
            open(self.path, "rb").close()
        except OSError as e:
            raise DataError(f"cannot read input '{self.path}': {e.strerror}") from None
        if st.st_size == 0:
            raise DataError(f"input '{self.path}' is empty")
        self.size = st.st_size
        self.read = None  # (bytes, xxh3) of the first pass
        self.warned = False  # the no-cut note is given once, not once per pass

    def record(self, nbytes: int, digest: str) -> None:
        if nbytes == 0:
            raise DataError(f"input '{self.path}' is empty")
        if self.read is not None and self.read != (nbytes, digest):
            raise DataError(f"input '{self.path}' changed while it was being prepared")
        self.read = (nbytes, digest)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(enabled: bool, total: int, desc: str):
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                file=sys.stderr, leave=False)


def _blocks(inp: _Input, chunk_bytes: int, bar) -> Iterator[bytes]:
    """The bytes of `inp`, `chunk_bytes` at a time; checksums them as it goes."""
    import xxhash

    h = xxhash.xxh3_64()
    n = 0
    try:
        with open(inp.path, "rb") as f:
            while True:
                block = f.read(chunk_bytes)
                if not block:
                    break
                h.update(block)
                n += len(block)
                yield block
                bar.update(len(block))  # once the consumer has used it
    except OSError as e:
        raise DataError(f"cannot read input '{inp.path}': {e.strerror}") from None
    inp.record(n, h.hexdigest())


def _decode(inp: _Input, piece: bytearray, offset: int) -> str:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"input '{inp.path}' is not UTF-8 text: byte 0x{piece[e.start]:02x} "
                        f"at offset {offset + e.start} ({e.reason})") from None


def _pieces(inp: _Input, boundary, chunk_bytes: int, bar, log) -> Iterator[List[str]]:
    """The text of `inp` as lists of pieces cut only at `boundary` matches (a
    list per chunk read, so that encode_batch can encode them in parallel).
    `boundary` None: the whole document as one piece."""
    buf = bytearray()
    base = 0   # offset of buf[0] in the file
    scan = 0   # no boundary starts in buf[:scan] past the last cut
    piece = max(1, chunk_bytes // PIECES_PER_CHUNK)
    for block in _blocks(inp, chunk_bytes, bar):
        buf += block
        if boundary is None:
            continue
        out, pos = [], 0
        while True:
            start = max(pos + piece, scan)
            m = boundary.search(buf, start)
            if m is None:
                # A match may start at len-2 once the next byte is read.
                scan = max(start, len(buf) - 2)
                break
            out.append(_decode(inp, buf[pos:m.end()], base + pos))
            pos = m.end()
        if pos:
            del buf[:pos]  # bytearray drops a prefix without copying the rest
            base += pos
            scan -= pos
        if out:
            yield out
        elif not inp.warned and len(buf) > PIECES_PER_CHUNK * chunk_bytes:
            log(f"note: input '{inp.path}' has no safe cut point (a '\\n' between two "
                f"printable ASCII characters) in {len(buf)} bytes; encoding it in larger "
                f"pieces (CRLF line endings?), which needs more memory")
            inp.warned = True
    if buf:
        yield [_decode(inp, buf, base)]


def _check_out(out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise DataError(f"output '{out}' exists and is not a directory")
    if not any(out.iterdir()):
        return
    if not force:
        raise DataError(f"output directory '{out}' is not empty (pass --force to replace it)")
    # --force replaces a previous prepare's output, never an arbitrary folder.
    try:
        ours = json.loads((out / META).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise DataError(f"refusing to replace '{out}': it is not empty and has no "
                        f"{FORMAT} {META}")


def _publish(tmp: Path, out: Path) -> None:
    """Moves the finished `tmp` to `out` (renames: `out` is never half-written)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        os.rename(out, old)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, out)


def prepare(inputs: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
            out_dir: Union[str, os.PathLike], tokenizer: str = "char",
            val_fraction: float = 0.1, eot: Optional[str] = None, force: bool = False,
            progress: Optional[bool] = None, *, chunk_bytes: Optional[int] = None,
            log: Optional[Callable[[str], None]] = None) -> dict:
    """Tokenizes text files `inputs` into token directory `out_dir`; returns
    its meta (the dict written to meta.json, docs/data-format.md).

    Each input is one document; the stream is the documents in order, each
    followed by the end-of-text id when the tokenizer has one. The first
    `int(n * (1 - val_fraction))` of its n ids go to train.bin, the rest to
    val.bin (uint16 when the vocabulary has <= 65536 ids, else uint32).

    tokenizer: "char" (one id per distinct byte, as shard-run's own text
      dataset), "bpe:VOCAB" (train a byte-level BPE of VOCAB ids on the
      inputs; saved as out_dir/tokenizer.json) or the path of a Hugging Face
      tokenizer.json (copied to out_dir/tokenizer.json).
    eot: the end-of-text token of a tokenizer.json (default: the first special
      token among <|endoftext|>, </s>, <|end_of_text|>, <eos>).
    force: replace `out_dir` if it holds an earlier prepare's output.
    progress: show tqdm progress bars (None: when stderr is a terminal).
    chunk_bytes: read size (default 4 MiB, or $AUTOSHARD_DATA_CHUNK_BYTES).
    log: where notes go (default: stderr).

    `out_dir` is written as a temporary sibling and renamed at the end: a
    failed or interrupted prepare leaves nothing behind. Raises UsageError
    (a DataError) for a bad tokenizer spec, val_fraction or eot, and DataError
    for a missing, unreadable, empty or non-UTF-8 (BPE) input, a bad tokenizer
    file, an existing non-empty out_dir, or a split of fewer than 2 tokens.
    """
    log = log or _stderr
    spec = parse_spec(tokenizer)
    vf = check_val_fraction(val_fraction)
    if eot is not None and spec.kind != "huggingface":
        raise UsageError(f"--eot {eot!r} needs a tokenizer.json (char has no end-of-text "
                         f"token, bpe uses {BPE_EOT})")
    chunk = _chunk_bytes(chunk_bytes)
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    ins = [_Input(p) for p in inputs]
    if not ins:
        raise UsageError("no input files")
    out = Path(os.path.abspath(out_dir))  # a real name and parent, even for "."
    _check_out(out, force)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    total = sum(i.size for i in ins)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        tk, tok_file = _make_tokenizer(spec, eot, ins, chunk, show, total, tmp, log)
        dtype = dtype_for_vocab(tk.vocab_size)
        n = _encode(tk, ins, chunk, show, total, tmp / "train.bin", dtype, log)
        meta = _split_and_describe(spec, tk, tok_file, ins, tmp, n, vf, dtype)
        tb = json.dumps(meta["token_bytes"])
        head = json.dumps({k: v for k, v in meta.items() if k != "token_bytes"}, indent=2)
        # token_bytes last and on one line: a 50k-entry list would be 50k lines.
        (tmp / META).write_text(head[:-2] + f',\n  "token_bytes": {tb}\n}}\n',
                                encoding="utf-8")
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def _make_tokenizer(spec, eot, ins, chunk, show, total, tmp: Path, log):
    """The tokenizer (after its first pass, if any) and its file name in tmp."""
    import numpy as np

    if spec.kind == "char":
        seen = np.zeros(256, dtype=bool)
        bar = _bar(show, total, "vocab")
        for inp in ins:
            for block in _blocks(inp, chunk, bar):
                seen |= np.bincount(np.frombuffer(block, dtype=np.uint8), minlength=256) > 0
        bar.close()
        return CharTokenizer(seen), None
    if spec.kind == "bpe":
        from .tokenizer import HFTokenizer

        bar = _bar(show, total, "train bpe")

        def texts() -> Iterable[str]:
            for inp in ins:
                for pieces in _pieces(inp, SAFE_CUT, chunk, bar, log):
                    yield from pieces

        tok = train_bpe(spec.vocab, texts())
        bar.close()
        tok.save(str(tmp / "tokenizer.json"))
        return HFTokenizer(tok, "bpe", BPE_EOT, spec.spec), "tokenizer.json"
    tk = load_tokenizer_file(spec.path, eot, log)
    if tk.boundary is None:
        log(f"note: tokenizer file '{spec.path}' is not known to give the same ids when a "
            f"document is encoded in pieces ({tk.unsafe_reason}); each input is encoded "
            f"whole, which needs memory for the whole file")
    shutil.copyfile(spec.path, tmp / "tokenizer.json")
    return tk, "tokenizer.json"


def _encode(tk, ins, chunk, show, total, path: Path, dtype: str, log) -> int:
    """Writes the whole token stream to `path`; returns its length."""
    import numpy as np

    n = 0
    bar = _bar(show, total, "encode")
    with open(path, "wb") as f:
        for inp in ins:
            if tk.kind == "char":
                parts = (tk.encode_bytes(b) for b in _blocks(inp, chunk, bar))
            else:
                parts = (tk.encode(p) for p in _pieces(inp, tk.boundary, chunk, bar, log))
            for ids in parts:
                if ids.size and (ids.min() < 0 or ids.max() >= tk.vocab_size):
                    # Only if an input changed between the passes (char) or a
                    # tokenizer reports ids beyond its own vocabulary.
                    raise DataError(f"input '{inp.path}': token id {int(ids.min())} or "
                                    f"{int(ids.max())} outside the vocabulary "
                                    f"[0, {tk.vocab_size})")
                ids.astype(dtype).tofile(f)
                n += ids.size
            if tk.eot_id is not None:
                np.array([tk.eot_id], dtype=dtype).tofile(f)
                n += 1
    bar.close()
    return n


def _split_and_describe(spec, tk, tok_file, ins, tmp: Path, n: int, vf: float,
                        dtype: str) -> dict:
    """Moves the tail of train.bin to val.bin; the meta of the directory."""
    import numpy as np

    n_train = int(n * (1 - vf))  # as CharDataset.cpp: size_t(double(n) * (1 - f))
    n_val = n - n_train
    if n_train < 2 or n_val < 2:
        where = f"'{ins[0].path}'" if len(ins) == 1 else f"{len(ins)} inputs"
        raise DataError(f"{where}: {n} tokens give a train split of {n_train} and a val "
                        f"split of {n_val} tokens at --val-fraction {vf:g}; each needs at "
                        f"least 2")
    item = np.dtype(dtype).itemsize
    train, val = tmp / "train.bin", tmp / "val.bin"
    with open(train, "r+b") as f, open(val, "wb") as g:
        f.seek(n_train * item)
        shutil.copyfileobj(f, g, 1 << 24)
        f.truncate(n_train * item)

    def split(path: Path, tokens: int) -> dict:
        return {"file": path.name, "tokens": tokens, "bytes": tokens * item,
                "xxh3_64": file_xxh3(path)}

    return {
        "format": FORMAT,
        "version": VERSION,
        "tokenizer": {"kind": tk.kind, "spec": spec.spec, "file": tok_file,
                      "eot_id": tk.eot_id, "eot_token": tk.eot_token},
        "vocab_size": tk.vocab_size,
        "dtype": dtype,
        "train": split(train, n_train),
        "val": split(val, n_val),
        "val_fraction": vf,
        "documents": len(ins),
        "inputs": [{"path": i.abspath, "bytes": i.read[0], "xxh3_64": i.read[1]} for i in ins],
        "token_bytes": [b.hex() for b in tk.token_bytes()],
    }
