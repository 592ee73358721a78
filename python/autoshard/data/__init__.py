"""Real training data: text files -> a directory of token ids for `shard-run --data`.

`prepare` tokenizes text files (char, a byte-level BPE trained on them, or a
Hugging Face tokenizer.json) into ``train.bin`` / ``val.bin`` (flat
little-endian uint16 or uint32 ids, nanoGPT's layout) and a ``meta.json``
that describes them; docs/data-format.md is the format. CLI::

    python3 -m autoshard.data prepare corpus/*.txt -o build/data/corpus --tokenizer bpe:8192

Example::

    from autoshard.data import prepare, load_tokens, decode
    meta = prepare(["tinyshakespeare.txt"], "build/data/shakespeare", tokenizer="char")
    train = load_tokens("build/data/shakespeare", "train")  # np.memmap, (N,) uint16
    decode(meta, train[:100])                               # the first 100 bytes

Needs numpy, xxhash, tokenizers (BPE and tokenizer.json) and tqdm (progress).
"""

from .format import (FORMAT, VERSION, DataError, UsageError, decode, dtype_for_vocab,
                     load_tokens, read_meta)
from .prepare import prepare

__all__ = ["FORMAT", "VERSION", "DataError", "UsageError", "decode", "dtype_for_vocab",
           "load_tokens", "prepare", "read_meta"]
