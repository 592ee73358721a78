"""autoshard.data: prepare / read_meta / load_tokens / decode and the CLI.

The char case is checked against an independent computation of what
runtime/train/lib/CharDataset.cpp does (byte vocabulary, split at
int(n * (1 - f))); BPE and tokenizer.json cases against encoding the whole
text with the `tokenizers` library.
"""

import json
import os
import random
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("tokenizers")
xxhash = pytest.importorskip("xxhash")

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402

from autoshard import data  # noqa: E402
from autoshard.data import DataError, UsageError  # noqa: E402
from autoshard.data.__main__ import main as cli  # noqa: E402
from autoshard.data.tokenizer import SAFE_CUT, SAFE_SPLIT_PATTERNS, chunk_safety  # noqa: E402

from conftest import PYTHON_DIR, REPO_ROOT  # noqa: E402

SHAKESPEARE = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data",
                                            "tinyshakespeare.txt"))


@pytest.fixture(scope="module")
def shakespeare():
    if not os.path.isfile(SHAKESPEARE):
        pytest.skip(f"{SHAKESPEARE} not found")
    return SHAKESPEARE


def quiet(msg):
    pass


def tricky_text(seed, words=4000):
    """Text full of whitespace runs before and after newlines, CRLF, digits,
    contractions, non-ASCII and a literal special token: what a wrong cut rule
    or a cut inside a UTF-8 sequence would get wrong."""
    parts = ["a", "X", "the", "Word", " ", "  ", "\n", "\n", "\n\n", " \n", "  \n", "\n ",
             "\r\n", "\t", ".", ",", "'s", "'ll", "12345", "7", "é", "e\u0301", "日本語",
             "\u00a0", "—", "!?", "<|endoftext|>", "\U0001F600"]
    rng = random.Random(seed)
    return "".join(rng.choice(parts) for _ in range(words))


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return str(path)


def run_cli(*args):
    """(exit status, stderr) of the CLI run in this process."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rc = cli([str(a) for a in args])
        except SystemExit as e:  # argparse
            rc = e.code
    return rc, err.getvalue()


def count_pieces(monkeypatch):
    """A list whose last entry counts the texts HFTokenizer.encode gets."""
    from autoshard.data.tokenizer import HFTokenizer

    counts = [0]
    encode = HFTokenizer.encode

    def counting(self, texts):
        counts[-1] += len(texts)
        return encode(self, texts)

    monkeypatch.setattr(HFTokenizer, "encode", counting)
    return counts


# --- char ------------------------------------------------------------------


def test_char_matches_chardataset(shakespeare, tmp_path):
    raw = open(shakespeare, "rb").read()
    # Independently: CharDataset's vocabulary is the sorted set of bytes.
    vocab = sorted(set(raw))
    ids = np.array([vocab.index(b) for b in range(256) if b in vocab])  # sanity
    assert list(ids) == list(range(len(vocab)))
    lut = {b: i for i, b in enumerate(vocab)}
    stream = np.array([lut[b] for b in raw], dtype=np.uint16)
    n_train = int(len(raw) * (1 - 0.1))

    out = tmp_path / "char"
    meta = data.prepare([shakespeare], out, tokenizer="char", progress=False, log=quiet)
    assert meta == data.read_meta(out, verify=True)
    assert meta["vocab_size"] == len(vocab) == 65
    assert meta["dtype"] == "uint16"
    assert meta["tokenizer"] == {"kind": "char", "spec": "char", "file": None,
                                 "eot_id": None, "eot_token": None}
    train, val = data.load_tokens(out, "train"), data.load_tokens(out, "val")
    assert train.dtype == np.uint16 and isinstance(train, np.memmap)
    assert len(train) == n_train == 1003854 and len(val) == len(raw) - n_train
    assert np.array_equal(train, stream[:n_train])
    assert np.array_equal(val, stream[n_train:])
    assert meta["train"]["xxh3_64"] == xxhash.xxh3_64(stream[:n_train].tobytes()).hexdigest()
    assert meta["token_bytes"] == [bytes([b]).hex() for b in vocab]
    assert meta["inputs"] == [{"path": os.path.abspath(shakespeare), "bytes": len(raw),
                               "xxh3_64": xxhash.xxh3_64(raw).hexdigest()}]
    assert data.decode(meta, val) == raw[n_train:]
    # The raw layout: nanoGPT's np.memmap with no header.
    assert np.array_equal(np.fromfile(out / "train.bin", dtype="<u2"), stream[:n_train])


def test_char_two_inputs_concatenated(tmp_path):
    a = write(tmp_path / "a.txt", "hello\n")
    b = write(tmp_path / "b.txt", "world, \xff!\n")  # \xff: a 2-byte UTF-8 sequence
    meta = data.prepare([a, b], tmp_path / "out", progress=False, log=quiet,
                        chunk_bytes=3, val_fraction=0.25)
    raw = open(a, "rb").read() + open(b, "rb").read()
    vocab = sorted(set(raw))
    stream = [vocab.index(x) for x in raw]
    n_train = int(len(raw) * 0.75)
    assert meta["documents"] == 2 and meta["vocab_size"] == len(vocab)
    assert list(data.load_tokens(tmp_path / "out", "train")) == stream[:n_train]
    assert list(data.load_tokens(tmp_path / "out", "val")) == stream[n_train:]


# --- BPE -------------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe_dir(shakespeare, tmp_path_factory):
    """bpe:512 trained on Tiny Shakespeare plus a tricky second document."""
    d = tmp_path_factory.mktemp("bpe")
    second = write(d / "second.txt", tricky_text(1, words=3000))
    out = d / "out"
    meta = data.prepare([shakespeare, second], out, tokenizer="bpe:512", progress=False,
                        log=quiet)
    return out, meta, [shakespeare, second]


def test_bpe_roundtrip(bpe_dir):
    out, meta, inputs = bpe_dir
    assert meta == data.read_meta(out, verify=True)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert meta["vocab_size"] == tok.get_vocab_size(with_added_tokens=True) == 512
    assert meta["tokenizer"] == {"kind": "bpe", "spec": "bpe:512", "file": "tokenizer.json",
                                 "eot_id": tok.token_to_id("<|endoftext|>"),
                                 "eot_token": "<|endoftext|>"}
    ids = np.concatenate([data.load_tokens(out, "train"), data.load_tokens(out, "val")])
    assert ids.max() < meta["vocab_size"]
    n = len(ids)
    assert meta["train"]["tokens"] == int(n * 0.9) and meta["val"]["tokens"] == n - int(n * 0.9)
    docs = [open(p, "rb").read() for p in inputs]
    eot = b"<|endoftext|>"
    assert data.decode(meta, ids) == docs[0] + eot + docs[1] + eot
    assert (ids == meta["tokenizer"]["eot_id"]).sum() >= 2
    # The library's own decoder agrees with token_bytes on the first document.
    k = list(ids).index(meta["tokenizer"]["eot_id"])
    assert tok.decode(ids[:k].tolist()).encode() == docs[0]


def test_bpe_streaming_equals_whole_document(tmp_path, monkeypatch):
    # A tokenizer trained on whitespace-heavy text has merges such as "  \n",
    # so cutting where the pre-tokens would differ also changes the ids.
    train = write(tmp_path / "train.txt", tricky_text(7, words=20000))
    data.prepare([train], tmp_path / "tok", tokenizer="bpe:700", progress=False, log=quiet)
    tok_file = str(tmp_path / "tok" / "tokenizer.json")
    tok = Tokenizer.from_file(tok_file)
    assert tok.token_to_id("ĠĠĊ") is not None  # "  \n"
    eot = tok.token_to_id("<|endoftext|>")
    text = open(SHAKESPEARE, encoding="utf-8").read()[:100_000] + tricky_text(2)
    doc = write(tmp_path / "doc.txt", text)
    assert len(SAFE_CUT.findall(text.encode())) > 2000  # the tiny chunks get cut a lot
    want = tok.encode(text).ids + [eot]
    pieces = count_pieces(monkeypatch)
    for how in ("param", "env"):
        d = tmp_path / how
        if how == "param":
            data.prepare([doc], d, tokenizer=tok_file, progress=False, log=quiet,
                         chunk_bytes=64)
        else:
            monkeypatch.setenv("AUTOSHARD_DATA_CHUNK_BYTES", "97")
            data.prepare([doc], d, tokenizer=tok_file, progress=False, log=quiet)
        got = np.concatenate([data.load_tokens(d, "train"), data.load_tokens(d, "val")])
        assert got.tolist() == want, how
        assert pieces[-1] > 2000, how  # it was encoded in pieces
        pieces.append(0)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_pieces_cover_the_file_at_safe_cuts(tmp_path, chunk):
    from autoshard.data.prepare import _Input, _NoBar, _pieces

    text = tricky_text(5, words=1500)
    raw = text.encode()
    doc = write(tmp_path / "doc.txt", text)
    batches = list(_pieces(_Input(doc), SAFE_CUT, chunk, _NoBar(), quiet))
    pieces = [p for b in batches for p in b]
    assert "".join(pieces) == text
    pos = 0
    for p in pieces[:-1]:
        pos += len(p.encode())
        assert raw[pos - 1:pos] == b"\n" and SAFE_CUT.match(raw, pos - 2), pos
    if chunk < 16:  # pieces of >= 1 byte: every safe cut is taken
        assert len(pieces) == len(SAFE_CUT.findall(raw)) + 1 > 15


def test_no_safe_cut_note(tmp_path):
    from autoshard.data.prepare import _Input, _NoBar, _pieces

    text = "line one.\r\nline two.\r\n" * 200  # CRLF: no '\n' between printables
    doc = write(tmp_path / "crlf.txt", text)
    notes = []
    pieces = [p for b in _pieces(_Input(doc), SAFE_CUT, 64, _NoBar(), notes.append) for p in b]
    assert pieces == [text]
    assert len(notes) == 1 and "crlf.txt" in notes[0] and "CRLF" in notes[0]


def test_naive_newline_cut_is_not_safe(bpe_dir):
    # Why SAFE_CUT wants a printable character before the '\n' as well: GPT-2's
    # `\s+(?!\S)` keeps "  " apart from the "\n" only when a word follows.
    tok = Tokenizer.from_file(str(bpe_dir[0] / "tokenizer.json"))
    assert _pretokens(tok, "a  \n") + _pretokens(tok, "X") != _pretokens(tok, "a  \nX")
    assert SAFE_CUT.search(b"a  \nX") is None
    assert _pretokens(tok, "a\n") + _pretokens(tok, "X") == _pretokens(tok, "a\nX")
    assert SAFE_CUT.search(b"a\nX").end() == 2


def test_user_tokenizer_json_gives_same_ids(bpe_dir, tmp_path):
    out, meta, inputs = bpe_dir
    # A tokenizer.json may ask to truncate and pad every encoding: ignored.
    tj = json.loads((out / "tokenizer.json").read_text())
    tj["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst",
                        "stride": 0}
    user = str(tmp_path / "user.json")
    write(user, json.dumps(tj))
    m2 = data.prepare(inputs, tmp_path / "out", tokenizer=user, progress=False, log=quiet)
    assert m2["tokenizer"] == {"kind": "huggingface", "spec": user, "file": "tokenizer.json",
                               "eot_id": meta["tokenizer"]["eot_id"],
                               "eot_token": "<|endoftext|>"}
    assert open(tmp_path / "out" / "tokenizer.json", "rb").read() == open(user, "rb").read()
    for split in ("train", "val"):
        assert m2[split] == meta[split]
        assert np.array_equal(data.load_tokens(tmp_path / "out", split),
                              data.load_tokens(out, split))
    assert m2["token_bytes"] == meta["token_bytes"]


def test_bpe_training_is_deterministic(shakespeare, tmp_path):
    # Separate processes: the Rust side's hash maps are seeded per process.
    text = open(shakespeare, encoding="utf-8").read()[:300_000]
    doc = write(tmp_path / "doc.txt", text)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    outs = []
    for i in range(2):
        d = tmp_path / f"run{i}"
        r = subprocess.run([sys.executable, "-m", "autoshard.data", "prepare", doc, "-o", d,
                            "--tokenizer", "bpe:400", "--no-progress"],
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "bpe:400" in r.stderr and "uint16" in r.stderr  # the summary line
        outs.append(d)
    for name in ("tokenizer.json", "train.bin", "val.bin"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    # The same text fed in other pieces trains the same tokenizer.
    d = tmp_path / "chunked"
    data.prepare([doc], d, tokenizer="bpe:400", progress=False, log=quiet, chunk_bytes=4096)
    assert (d / "tokenizer.json").read_bytes() == (outs[0] / "tokenizer.json").read_bytes()


# --- dtype, other tokenizer.json files, chunk safety ----------------------


def test_dtype_for_vocab():
    assert data.dtype_for_vocab(1) == "uint16"
    assert data.dtype_for_vocab(65536) == "uint16"
    assert data.dtype_for_vocab(65537) == "uint32"
    assert data.dtype_for_vocab(1 << 32) == "uint32"
    for bad in (0, (1 << 32) + 1):
        with pytest.raises(DataError, match=str(bad)):
            data.dtype_for_vocab(bad)


def test_large_vocab_is_uint32(tmp_path):
    # A WordLevel tokenizer.json with 70001 ids (no end-of-text token).
    vocab = {"[UNK]": 0, **{f"w{i}": i + 1 for i in range(70000)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = str(tmp_path / "big.json")
    tok.save(path)
    words = [f"w{i}" for i in random.Random(3).choices(range(70000), k=500)] + ["w69999"]
    text = "\n".join(" ".join(words[i:i + 7]) for i in range(0, len(words), 7)) + "\n"
    doc = write(tmp_path / "doc.txt", text)
    notes = []
    meta = data.prepare([doc], tmp_path / "out", tokenizer=path, progress=False,
                        log=notes.append, chunk_bytes=50)
    assert meta["vocab_size"] == 70001 and meta["dtype"] == "uint32"
    assert meta["tokenizer"]["eot_id"] is None
    assert any("end-of-text" in n and "big.json" in n for n in notes)
    train = data.load_tokens(tmp_path / "out", "train")
    assert train.dtype == np.uint32
    got = np.concatenate([train, data.load_tokens(tmp_path / "out", "val")])
    assert got.tolist() == tok.encode(text).ids
    assert got.max() == 70000
    assert data.decode(meta, [70000, 1]) == b"w69999w0"  # decode([id]) per token


def test_unsafe_tokenizer_is_encoded_whole(bpe_dir, tmp_path, monkeypatch):
    # add_prefix_space would put a space before every piece: not chunk-safe.
    tj = json.loads((bpe_dir[0] / "tokenizer.json").read_text())
    tj["pre_tokenizer"]["add_prefix_space"] = True
    path = tmp_path / "prefix.json"
    path.write_text(json.dumps(tj))
    tok = Tokenizer.from_file(str(path))
    text = tricky_text(4, words=800)
    doc = write(tmp_path / "doc.txt", text)
    notes = []
    pieces = count_pieces(monkeypatch)
    data.prepare([doc], tmp_path / "out", tokenizer=str(path), progress=False,
                 log=notes.append, chunk_bytes=32)
    assert pieces == [1]
    assert any("encoded whole" in n and "prefix.json" in n for n in notes)
    got = np.concatenate([data.load_tokens(tmp_path / "out", "train"),
                          data.load_tokens(tmp_path / "out", "val")])
    assert got.tolist() == tok.encode(text).ids + [tok.token_to_id("<|endoftext|>")]
    # ... and in pieces it would have differed.
    pieces, pos = [], 0
    for m in SAFE_CUT.finditer(text.encode()):
        pieces.append(text.encode()[pos:m.end()].decode())
        pos = m.end()
    pieces.append(text.encode()[pos:].decode())
    assert sum((tok.encode(p).ids for p in pieces), []) != tok.encode(text).ids


def test_metaspace_tokenizer(tmp_path):
    # SentencePiece style: spaces become "▁", one is prepended to the text;
    # not chunk-safe, and token_bytes turns "▁" back into a space.
    from tokenizers import decoders, trainers

    text = open(SHAKESPEARE, encoding="utf-8").read()[:20_000]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator([text], trainer=trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "</s>"], show_progress=False))
    path = str(tmp_path / "sp.json")
    tok.save(path)
    doc = write(tmp_path / "doc.txt", text)
    notes = []
    meta = data.prepare([doc], tmp_path / "out", tokenizer=path, progress=False,
                        log=notes.append)
    assert any("Metaspace" in n for n in notes)
    assert meta["tokenizer"]["eot_token"] == "</s>"
    ids = np.concatenate([data.load_tokens(tmp_path / "out", "train"),
                          data.load_tokens(tmp_path / "out", "val")])
    assert ids.tolist() == tok.encode(text, add_special_tokens=False).ids + [
        tok.token_to_id("</s>")]
    # Approximate only in the leading space the pre-tokenizer prepended.
    assert data.decode(meta, ids) == b" " + text.encode() + b"</s>"


def _host(normalizer=None, pre_tokenizer=None, added=()):
    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    for t in added:
        tok.add_special_tokens([t])
    return tok


def _split_then_bytes(pattern):
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), "isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                             use_regex=False)])


SAFE_CONFIGS = {
    "gpt2-bytelevel": lambda: _host(None, pre_tokenizers.ByteLevel(add_prefix_space=False)),
    "cl100k-nfc": lambda: _host(normalizers.NFC(), _split_then_bytes(SAFE_SPLIT_PATTERNS[1])),
    "qwen2-nfkc": lambda: _host(normalizers.NFKC(), _split_then_bytes(SAFE_SPLIT_PATTERNS[2])),
    "gpt2-split": lambda: _host(None, _split_then_bytes(SAFE_SPLIT_PATTERNS[0])),
    "whitespace": lambda: _host(None, pre_tokenizers.Whitespace()),
    "whitespace-split": lambda: _host(None, pre_tokenizers.WhitespaceSplit()),
    "bert": lambda: _host(normalizers.NFD(), pre_tokenizers.BertPreTokenizer()),
}


def _pretokens(tok, text):
    return [s for s, _ in tok.pre_tokenizer.pre_tokenize_str(
        tok.normalizer.normalize_str(text) if tok.normalizer else text)]


@pytest.mark.parametrize("name", sorted(SAFE_CONFIGS))
def test_safe_cut_fuzz(name):
    """Every accepted pre-tokenizer gives the same pre-tokens (so the same ids)
    for a text and for its two sides at any SAFE_CUT."""
    tok = SAFE_CONFIGS[name]()
    assert chunk_safety(json.loads(tok.to_str())) is None
    naive_broke = False
    for seed in range(60):
        text = tricky_text(100 + seed, words=60)
        raw = text.encode()
        whole = _pretokens(tok, text)
        for m in SAFE_CUT.finditer(raw):
            a, b = raw[:m.end()].decode(), raw[m.end():].decode()
            assert _pretokens(tok, a) + _pretokens(tok, b) == whole, (name, a[-8:], b[:8])
        # The rule the fuzz must be able to catch: any '\n' before non-space.
        for i in range(len(text) - 1):
            if text[i] == "\n" and not text[i + 1].isspace():
                if _pretokens(tok, text[:i + 1]) + _pretokens(tok, text[i + 1:]) != whole:
                    naive_broke = True
    if name.startswith("gpt2"):  # (cl100k's `\s*[\r\n]+` would not mind)
        assert naive_broke  # so the fuzz does exercise what SAFE_CUT excludes


@pytest.mark.parametrize("tok, why", [
    (lambda: _host(None, pre_tokenizers.ByteLevel(add_prefix_space=True)), "ByteLevel"),
    (lambda: _host(None, pre_tokenizers.Metaspace()), "Metaspace"),
    (lambda: _host(None, None), "no pre-tokenizer"),
    (lambda: _host(normalizers.Lowercase(), pre_tokenizers.Whitespace()), "Lowercase"),
    (lambda: _host(None, _split_then_bytes(r"\s+|\S+")), "Split"),
    (lambda: _host(None, pre_tokenizers.Sequence([
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        pre_tokenizers.Whitespace()])), "ByteLevel"),
])
def test_chunk_safety_rejects(tok, why):
    reason = chunk_safety(json.loads(tok().to_str()))
    assert reason is not None and why in reason


def test_chunk_safety_rejects_stripping_added_token():
    from tokenizers import AddedToken

    tok = _host(None, pre_tokenizers.Whitespace(), [AddedToken("<mask>", lstrip=True)])
    assert "<mask>" in chunk_safety(json.loads(tok.to_str()))


# --- reading ---------------------------------------------------------------


@pytest.fixture
def small_dir(tmp_path):
    doc = write(tmp_path / "doc.txt", "to be or not to be, that is the question\n" * 20)
    out = tmp_path / "small"
    data.prepare([doc], out, progress=False, log=quiet)
    return out


def test_read_meta_detects_truncation(small_dir):
    data.read_meta(small_dir)
    size = os.path.getsize(small_dir / "train.bin")
    os.truncate(small_dir / "train.bin", size - 2)
    with pytest.raises(DataError, match=r"train\.bin.*truncated"):
        data.read_meta(small_dir)
    with pytest.raises(DataError, match=r"train\.bin"):
        data.load_tokens(small_dir, "train")


def test_read_meta_verify_detects_changed_bytes(small_dir):
    with open(small_dir / "val.bin", "r+b") as f:
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 1]))
    data.read_meta(small_dir)  # sizes still agree
    with pytest.raises(DataError, match=r"val\.bin.*checksum"):
        data.read_meta(small_dir, verify=True)
    rc, err = run_cli("info", small_dir, "--verify")
    assert rc == 1 and "val.bin" in err


def test_read_meta_rejects_other_formats(small_dir):
    meta = json.loads((small_dir / "meta.json").read_text())
    for key, value, msg in [("format", "nanogpt", "nanogpt"), ("version", 2, "version 2"),
                            ("dtype", "uint32", "does not match"),
                            ("token_bytes", meta["token_bytes"][:-1], "entries"),
                            ("token_bytes", meta["token_bytes"][:-1] + ["zz"], "hex"),
                            ("tokenizer", dict(meta["tokenizer"], eot_id=999), "eot_id")]:
        bad = dict(meta, **{key: value})
        (small_dir / "meta.json").write_text(json.dumps(bad))
        with pytest.raises(DataError, match=msg):
            data.read_meta(small_dir)
    with pytest.raises(DataError, match="no meta.json"):
        data.read_meta(small_dir / "nonexistent")


def test_load_tokens_and_decode_errors(small_dir):
    meta = data.read_meta(small_dir)
    with pytest.raises(DataError, match="'test'"):
        data.load_tokens(small_dir, "test")
    with pytest.raises(DataError, match=str(meta["vocab_size"])):
        data.decode(meta, [0, meta["vocab_size"]])
    assert data.decode(meta, []) == b""


# --- errors ----------------------------------------------------------------


def _no_leftovers(parent):
    return [p for p in os.listdir(parent) if ".tmp-" in p or ".old-" in p]


@pytest.mark.parametrize("args, rc, needle", [
    (["--tokenizer", "bpe:abc"], 2, "bpe:abc"),
    (["--tokenizer", "bpe:10"], 2, "vocabulary size 10"),
    (["--tokenizer", "bpe:"], 2, "'bpe:'"),
    (["--tokenizer", "wordpiece"], 2, "'wordpiece'"),
    (["--tokenizer", "char", "--val-fraction", "0"], 2, "--val-fraction 0.0"),
    (["--tokenizer", "char", "--val-fraction", "1"], 2, "--val-fraction 1.0"),
    (["--tokenizer", "char", "--val-fraction", "-0.5"], 2, "--val-fraction -0.5"),
    (["--tokenizer", "char", "--val-fraction", "nan"], 2, "--val-fraction nan"),
    (["--tokenizer", "char", "--eot", "</s>"], 2, "--eot '</s>'"),
    (["--val-fraction", "0.1"], 2, "--tokenizer"),  # required
])
def test_usage_errors(tmp_path, args, rc, needle):
    doc = write(tmp_path / "doc.txt", "some text\n" * 10)
    got, err = run_cli("prepare", doc, "-o", tmp_path / "out", *args)
    assert got == rc and needle in err.strip().splitlines()[-1], err  # argparse: usage first
    assert not (tmp_path / "out").exists() and not _no_leftovers(tmp_path)


def test_usage_errors_api():
    with pytest.raises(UsageError, match="bpe:abc"):
        data.prepare(["x"], "y", tokenizer="bpe:abc")
    with pytest.raises(UsageError, match="1.5"):
        data.prepare(["x"], "y", val_fraction=1.5)
    assert issubclass(UsageError, DataError)


def _tokfile(tmp_path, name, text):
    return write(tmp_path / name, text)


@pytest.mark.parametrize("case", ["missing", "empty", "directory", "tok-missing",
                                  "tok-not-json", "tok-not-tokenizer", "tok-bad-model",
                                  "eot-unknown", "train-too-small", "val-too-small",
                                  "not-utf8", "second-empty"])
def test_data_errors(tmp_path, case):
    doc = write(tmp_path / "doc.txt", "some text\n" * 10)
    tok = "char"
    inputs = [doc]
    extra = []
    if case == "missing":
        inputs, needle = [str(tmp_path / "nope.txt")], "nope.txt"
    elif case == "empty":
        inputs, needle = [write(tmp_path / "e.txt", "")], "e.txt' is empty"
    elif case == "second-empty":
        inputs, needle = [doc, write(tmp_path / "e2.txt", "")], "e2.txt' is empty"
    elif case == "directory":
        inputs, needle = [str(tmp_path)], "is a directory"
    elif case == "tok-missing":
        tok, needle = str(tmp_path / "none.json"), "none.json"
    elif case == "tok-not-json":
        tok, needle = _tokfile(tmp_path, "t.json", "{not json"), "t.json' is not valid JSON"
    elif case == "tok-not-tokenizer":
        tok, needle = _tokfile(tmp_path, "t.json", '{"a": 1}'), "t.json' is not a Hugging"
    elif case == "tok-bad-model":
        tok = _tokfile(tmp_path, "t.json", '{"model": {"type": "Nope"}}')
        needle = "t.json' is not a Hugging Face tokenizer"
    elif case == "eot-unknown":
        t = _host(None, pre_tokenizers.Whitespace())
        tok = str(tmp_path / "t.json")
        t.save(tok)
        extra, needle = ["--eot", "<|nope|>"], "'<|nope|>'"
    elif case == "train-too-small":
        inputs, needle = [write(tmp_path / "s.txt", "ab")], "train split of 1"
    elif case == "val-too-small":
        inputs, needle = [write(tmp_path / "s.txt", "abcdefghij")], "val split of 1"
    elif case == "not-utf8":
        p = tmp_path / "bin.txt"
        p.write_bytes(b"hello\n" * 100 + b"\xff\xfe world\n")
        inputs, tok, needle = [str(p)], "bpe:300", "offset 600"
    rc, err = run_cli("prepare", *inputs, "-o", tmp_path / "out", "--tokenizer", tok, *extra)
    assert rc == 1 and needle in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists() and not _no_leftovers(tmp_path)
    with pytest.raises(DataError):
        data.prepare(inputs, tmp_path / "out", tokenizer=tok, eot=extra[1] if extra else None,
                     progress=False, log=quiet)


def test_existing_output_dir(tmp_path):
    doc = write(tmp_path / "doc.txt", "some text\n" * 10)
    out = tmp_path / "out"
    out.mkdir()
    data.prepare([doc], out, progress=False, log=quiet)  # an empty directory is fine
    first = (out / "meta.json").read_text()
    rc, err = run_cli("prepare", doc, "-o", out, "--tokenizer", "char")
    assert rc == 1 and "not empty" in err and "--force" in err
    write(tmp_path / "doc.txt", "other text\n" * 10)
    rc, err = run_cli("prepare", doc, "-o", out, "--tokenizer", "char", "--force", "-q")
    assert rc == 0 and err == ""
    assert (out / "meta.json").read_text() != first and not _no_leftovers(tmp_path)
    # --force never replaces a folder that is not a prepared directory.
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("precious")
    rc, err = run_cli("prepare", doc, "-o", other, "--tokenizer", "char", "--force")
    assert rc == 1 and "refusing" in err and (other / "keep.txt").exists()
