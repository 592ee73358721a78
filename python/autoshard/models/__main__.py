"""CLI: ``python3 -m autoshard.models CONFIG.json --batch B --seq S -o model.mlir``.

Writes the model's ``tfm`` IR (``-o -`` or no ``-o``: stdout) and prints
``<name>: N parameters (X)`` to stderr.  Exit status 0 on success, 2 on a bad
config or option (with a one-line message naming the key and value), 1 if the
output cannot be written.  Ignored config keys are reported on stderr as
``autoshard.models: warning: unknown config key 'n_embdd' (ignored)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import warnings
from typing import List, Optional

from . import ConfigError, DTYPES, build_model, format_count, load_config, parameter_specs
from .config import ConfigWarning


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m autoshard.models",
        description="Emit tfm dialect IR (forward + loss, global shapes, one function per "
                    "distinct Transformer block) from an HF-style config.json.")
    p.add_argument("config", help="HF-style config.json (gpt2/nanogpt, llama, mixtral)")
    p.add_argument("--batch", "-b", type=int, required=True, help="global batch size B (sequences)")
    p.add_argument("--seq", "-s", type=int, required=True, help="sequence length S (tokens)")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument("--vocab-multiple", type=int, default=1, metavar="N",
                   help="pad the vocab dim of embedding/LM head to a multiple of N; the loss "
                        "masks the padding (default 1: no padding)")
    p.add_argument("--capacity-factor", type=float, default=None, metavar="CF",
                   help="MoE expert capacity C = min(S, ceil(CF*S*K/E)) per sequence "
                        "(default: dropless, C = S)")
    p.add_argument("--max-tokens-per-expert", type=int, default=None, metavar="N",
                   help="MoE, dropless: bound each expert's buffer at N tokens per sequence "
                        "(C = N instead of S); a sequence routing more than N tokens to one "
                        "expert stops the run with an error (no token is ever dropped)")
    p.add_argument("--dtype", choices=DTYPES, default="f32",
                   help="element type of parameters and activations (default f32)")
    p.add_argument("--dropout", type=float, default=None, metavar="P",
                   help="override the config's dropout rate (gpt2 family)")
    p.add_argument("--name", default=None, help="model name (default: config file stem)")
    p.add_argument("--vocab-size", type=int, default=None, metavar="V",
                   help="override the config's vocab_size (e.g. with a prepared token "
                        "directory's meta.json vocab_size)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the parameter count")
    return p


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if os.path.exists(path) and not os.path.isfile(path):
        # A device or a pipe (/dev/null, /dev/stdout, a FIFO): write into it.
        # Renaming a temporary file over it would replace the device itself
        # with a regular file (as root, /dev/null for everyone).
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".autoshard-", suffix=".mlir")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    prog = "autoshard.models"
    try:
        # Config warnings print as one line each, before any error (a misspelt
        # key often explains a "missing key" error).
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConfigWarning)
            try:
                cfg = load_config(args.config, name=args.name)
                if args.vocab_size is not None:
                    if args.vocab_size < 1:
                        raise ConfigError(f"--vocab-size must be >= 1, found {args.vocab_size}")
                    cfg = dataclasses.replace(cfg, vocab_size=args.vocab_size)
                text = build_model(cfg, args.batch, args.seq,
                                   vocab_multiple=args.vocab_multiple,
                                   capacity_factor=args.capacity_factor, dtype=args.dtype,
                                   dropout=args.dropout,
                                   max_tokens_per_expert=args.max_tokens_per_expert)
            finally:
                for w in caught:
                    if issubclass(w.category, ConfigWarning):
                        print(f"{prog}: warning: {w.message}", file=sys.stderr)
                    else:
                        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        _write(args.output, text)
    except OSError as e:
        print(f"{prog}: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
        return 1
    if not args.quiet:
        n = sum(p.numel for p in parameter_specs(cfg))
        print(f"{cfg.name}: {n} parameters ({format_count(n)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
