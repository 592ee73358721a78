"""Tokenizers for `prepare`: the byte-level character vocabulary, a byte-level
BPE trained on the corpus, or a Hugging Face tokenizer.json.

Besides encoding, each one says which ids exist (vocab_size), what bytes each
id stands for (token_bytes, for meta.json) and where a document may be cut so
that encoding the pieces separately gives the ids of encoding it whole
(`boundary`), which is what lets `prepare` stream a corpus larger than memory.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from .format import DataError, UsageError

BPE_EOT = "<|endoftext|>"
BPE_SPECIALS = [BPE_EOT]
MIN_BPE_VOCAB = 256 + len(BPE_SPECIALS)  # every byte, then the specials
EOT_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>")

# A safe cut: just after a '\n' whose neighbours are both printable ASCII
# (the match ends after the '\n'; the lookahead needs the next byte, so a
# '\n' at the end of what has been read so far is never cut). Why both
# neighbours: GPT-2's `\s+(?!\S)` makes "a  \nX" pre-tokenize as "a", "  ",
# "\n", "X" but a piece "a  \n" as "a", "  \n". With non-space on both sides
# the '\n' is a pre-token of its own in the whole text and at the end of the
# piece alike, for every pre-tokenizer accepted by `chunk_safety`. ASCII
# because Unicode normalization leaves it alone and no regex flavour
# disagrees on whether it is whitespace; it is also never inside a UTF-8
# sequence, so every piece decodes on its own.
SAFE_CUT = re.compile(rb"[!-~]\n(?=[!-~])")

# Split patterns checked to have a '\n' pre-token at SAFE_CUT (tests fuzz them).
_GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_CL100K_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                   r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")  # GPT-4, Llama 3
_QWEN2_PATTERN = _CL100K_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
SAFE_SPLIT_PATTERNS = (_GPT2_PATTERN, _CL100K_PATTERN, _QWEN2_PATTERN)
_SAFE_NORMALIZERS = ("NFC", "NFD", "NFKC", "NFKD")


@dataclass
class TokenizerSpec:
    """A parsed `--tokenizer` argument."""
    kind: str                    # "char", "bpe" or "huggingface"
    spec: str                    # the argument as given
    vocab: Optional[int] = None  # bpe: the vocabulary size to train
    path: Optional[Path] = None  # huggingface: the tokenizer.json


def parse_spec(spec) -> TokenizerSpec:
    """Parses "char", "bpe:VOCAB" or a tokenizer.json path.

    Raises UsageError naming the spec if it is none of these or VOCAB is not
    an integer in [MIN_BPE_VOCAB, 2^32].
    """
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec:
        raise UsageError(f"bad --tokenizer {spec!r}: expected char, bpe:VOCAB or a "
                         f"tokenizer.json file")
    if spec == "char":
        return TokenizerSpec("char", spec)
    if spec == "bpe" or spec.startswith("bpe:"):
        v = spec[4:]
        if not (v.isascii() and v.isdigit()):
            raise UsageError(f"bad --tokenizer {spec!r}: the BPE vocabulary size {v!r} is "
                             f"not a positive integer (e.g. bpe:8192)")
        n = int(v)
        if n < MIN_BPE_VOCAB:
            raise UsageError(f"bad --tokenizer {spec!r}: vocabulary size {n} is below the "
                             f"minimum {MIN_BPE_VOCAB} (256 byte tokens + {BPE_EOT})")
        if n > 1 << 32:
            raise UsageError(f"bad --tokenizer {spec!r}: vocabulary size {n} is above 2^32")
        return TokenizerSpec("bpe", spec, vocab=n)
    path = Path(spec)
    if spec.endswith(".json") or path.exists():
        return TokenizerSpec("huggingface", spec, path=path)
    raise UsageError(f"bad --tokenizer {spec!r}: expected char, bpe:VOCAB or a "
                     f"tokenizer.json file")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's byte -> printable character map used by byte-level BPE."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


class CharTokenizer:
    """One token per distinct byte of the corpus, ids in byte order.

    The same vocabulary as runtime/train/lib/CharDataset.cpp, so that a
    prepared char directory trains exactly like `--data file.txt`.
    """
    kind = "char"
    eot_id = None
    eot_token = None
    boundary = None  # unused: bytes are encoded one by one, any cut is safe

    def __init__(self, seen):
        """`seen`: a bool array of 256, true for the bytes that occur."""
        import numpy as np

        self.chars = np.flatnonzero(seen).astype(np.uint8)
        if self.chars.size == 0:
            raise DataError("cannot build a character vocabulary from empty text")
        self.lut = np.full(256, -1, dtype=np.int64)
        self.lut[self.chars] = np.arange(self.chars.size)
        self.vocab_size = int(self.chars.size)

    def encode_bytes(self, block: bytes):
        """int64 ids of every byte of `block`; -1 for a byte outside the vocabulary."""
        import numpy as np

        return self.lut[np.frombuffer(block, dtype=np.uint8)]

    def token_bytes(self) -> List[bytes]:
        return [bytes([int(c)]) for c in self.chars]


def _flatten(node: Optional[dict], key: str) -> List[dict]:
    """A normalizer/pre-tokenizer/decoder node as the list of its parts."""
    if node is None:
        return []
    if node.get("type") == "Sequence":
        return [p for child in node.get(key, []) for p in _flatten(child, key)]
    return [node]


def _splits_at_safe_cut(pt: dict) -> bool:
    """Whether pre-tokenizer `pt` splits a '\\n' between printable ASCII into a
    pre-token of its own, looking no further than its neighbours."""
    t = pt.get("type")
    if t == "ByteLevel":
        return pt.get("use_regex", True) and not pt.get("add_prefix_space", False)
    if t in ("Whitespace", "WhitespaceSplit", "BertPreTokenizer"):
        return True
    if t == "Split":
        return (pt.get("pattern", {}).get("Regex") in SAFE_SPLIT_PATTERNS
                and pt.get("behavior") == "Isolated" and not pt.get("invert", False))
    return False


def _maps_bytes(pt: dict) -> bool:
    """Whether `pt` only rewrites each pre-token (ByteLevel without its regex)."""
    return (pt.get("type") == "ByteLevel" and not pt.get("use_regex", True)
            and not pt.get("add_prefix_space", False))


def chunk_safety(tj: dict) -> Optional[str]:
    """Why tokenizer.json `tj` cannot be encoded in pieces cut at SAFE_CUT,
    or None if it can.

    Safe means: the normalizer (if any) is Unicode normalization, which does
    not change ASCII nor compose across '\\n'; the first pre-tokenizer splits
    at the cut (GPT-2 ByteLevel, whitespace splitters, Split with the GPT-2 /
    cl100k / Qwen2 pattern) and the later ones work per pre-token; no added
    token strips whitespace (lstrip/rstrip would eat the '\\n') or contains a
    '\\n'. The model (BPE, WordPiece, Unigram, WordLevel) works within
    pre-tokens, so equal pre-tokens give equal ids. Anything else is encoded
    whole, which is always right.
    """
    norms = _flatten(tj.get("normalizer"), "normalizers")
    bad = [n.get("type") for n in norms if n.get("type") not in _SAFE_NORMALIZERS]
    if bad:
        return f"normalizer {bad[0]}"
    pts = _flatten(tj.get("pre_tokenizer"), "pretokenizers")
    if not pts:
        return "no pre-tokenizer (the whole text is one word)"
    if not _splits_at_safe_cut(pts[0]):
        return f"pre-tokenizer {pts[0].get('type')} {json.dumps(pts[0])[:80]}"
    for pt in pts[1:]:
        if not (_splits_at_safe_cut(pt) or _maps_bytes(pt)):
            return f"pre-tokenizer {pt.get('type')} {json.dumps(pt)[:80]}"
    for at in tj.get("added_tokens") or []:
        if at.get("lstrip") or at.get("rstrip") or "\n" in at.get("content", ""):
            return f"added token {at.get('content')!r} (lstrip/rstrip or a newline)"
    return None


class HFTokenizer:
    """A `tokenizers.Tokenizer` (trained here or read from tokenizer.json)."""

    def __init__(self, tok, kind: str, eot_token: Optional[str], name: str):
        tok.no_truncation()  # a tokenizer.json may truncate or pad every encode
        tok.no_padding()
        self.tok = tok
        self.kind = kind
        self.name = name
        self.json = json.loads(tok.to_str())
        vocab = tok.get_vocab(with_added_tokens=True)
        if not vocab:
            raise DataError(f"tokenizer '{name}' has an empty vocabulary")
        # Ids may have holes (added tokens placed beyond the model's vocab):
        # the size is what covers every id.
        self.vocab_size = max(vocab.values()) + 1
        self.eot_token = eot_token
        self.eot_id = None if eot_token is None else tok.token_to_id(eot_token)
        self.unsafe_reason = chunk_safety(self.json)
        self.boundary = SAFE_CUT if self.unsafe_reason is None else None

    def encode(self, texts: List[str]):
        """The ids of `texts` encoded separately, concatenated (int64). Special
        tokens of the post-processor (BOS, CLS) are not added: documents are
        separated by the end-of-text id only."""
        import numpy as np

        enc = getattr(self.tok, "encode_batch_fast", self.tok.encode_batch)
        out = [np.asarray(e.ids, dtype=np.int64)
               for e in enc(texts, add_special_tokens=False)]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def token_bytes(self) -> List[bytes]:
        """The bytes each id decodes to (b"" for an id no token has).

        Byte-level decoders: exact, through the inverse GPT-2 byte map.
        Metaspace / Replace decoders (SentencePiece style): the token with the
        replacement character turned back into a space and <0xNN> byte
        fallback tokens as their byte; the decoder's strip of the text's
        leading space is not applied. Others: `decode([id])`, approximate.
        Added tokens: their text.
        """
        tok = self.tok
        vocab = tok.get_vocab(with_added_tokens=True)
        added = {i: t.content for i, t in tok.get_added_tokens_decoder().items()}
        decs = _flatten(self.json.get("decoder"), "decoders")
        types = [d.get("type") for d in decs]
        out = [b""] * self.vocab_size
        if "ByteLevel" in types:
            inv = {c: b for b, c in bytes_to_unicode().items()}
            for t, i in vocab.items():
                if i in added or not all(c in inv for c in t):
                    out[i] = added.get(i, t).encode("utf-8")
                else:
                    out[i] = bytes(inv[c] for c in t)
            return out
        replaces = []
        for d in decs:
            if d.get("type") == "Metaspace":
                replaces.append((d.get("replacement", "\u2581"), " "))
            elif d.get("type") == "Replace" and "String" in d.get("pattern", {}):
                replaces.append((d["pattern"]["String"], d.get("content", "")))
        if replaces:
            fallback = "ByteFallback" in types
            for t, i in vocab.items():
                if i in added:
                    out[i] = added[i].encode("utf-8")
                elif fallback and re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", t):
                    out[i] = bytes([int(t[3:5], 16)])
                else:
                    for a, b in replaces:
                        t = t.replace(a, b)
                    out[i] = t.encode("utf-8")
            return out
        for i in set(vocab.values()):
            out[i] = (added[i] if i in added
                      else tok.decode([i], skip_special_tokens=False)).encode("utf-8")
        return out


def train_bpe(vocab_size: int, texts: Iterable[str]):
    """A byte-level BPE (GPT-2 pre-tokenization, every byte in the alphabet,
    `<|endoftext|>` as id 0) trained on `texts` with at most `vocab_size` ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=BPE_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def load_tokenizer_file(path: Path, eot: Optional[str], log) -> HFTokenizer:
    """The tokenizer in tokenizer.json `path`, with end-of-text token `eot`
    (None: the first special token among EOT_CANDIDATES, if any).

    Raises DataError if the file cannot be read, is not JSON, is not a
    tokenizer, or has no token `eot`.
    """
    from tokenizers import Tokenizer

    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read tokenizer file '{path}': {e.strerror}") from None
    try:
        tj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"tokenizer file '{path}' is not valid JSON: {e}") from None
    if not isinstance(tj, dict) or "model" not in tj:
        raise DataError(f"tokenizer file '{path}' is not a Hugging Face tokenizer.json "
                        f"(no \"model\")")
    try:
        tok = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as e:  # tokenizers raises a bare Exception
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DataError(f"tokenizer file '{path}' is not a Hugging Face tokenizer: "
                        f"{msg}") from None
    if eot is not None:
        if tok.token_to_id(eot) is None:
            raise DataError(f"--eot {eot!r}: tokenizer file '{path}' has no such token")
    else:
        specials = {t.content for t in tok.get_added_tokens_decoder().values() if t.special}
        eot = next((c for c in EOT_CANDIDATES if c in specials), None)
        if eot is None:
            log(f"note: tokenizer file '{path}' has none of the end-of-text tokens "
                f"{', '.join(EOT_CANDIDATES)}; documents are concatenated without a "
                f"separator (choose one with --eot)")
    return HFTokenizer(tok, "huggingface", eot, str(path))
