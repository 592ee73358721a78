"""CLI: ``python3 -m autoshard.data prepare INPUT... -o DIR --tokenizer SPEC``.

``prepare`` writes token directory DIR (docs/data-format.md) and prints a
one-line summary to stderr; ``info DIR [--verify]`` checks one and prints its
summary. Exit status 0 on success, 2 on a bad option (bad --tokenizer spec,
--val-fraction outside (0, 1)), 1 on a data error (missing, unreadable or
empty input, bad tokenizer file, corpus too small, DIR not empty), each with
a one-line message naming the file or value.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import DataError, UsageError, prepare, read_meta

PROG = "python3 -m autoshard.data"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Prepare tokenized training data "
                                "for shard-run --data DIR.")
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="tokenize text files into DIR",
                        description="Tokenize text files (each one document) into DIR: "
                        "train.bin, val.bin, meta.json (docs/data-format.md).")
    pp.add_argument("inputs", nargs="+", metavar="INPUT", help="UTF-8 text files, in order")
    pp.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    pp.add_argument("--tokenizer", required=True, metavar="SPEC",
                    help="char (one id per distinct byte, as --data file.txt), bpe:VOCAB "
                         "(train a byte-level BPE of VOCAB ids on the inputs) or "
                         "FILE.json (a Hugging Face tokenizer.json)")
    pp.add_argument("--val-fraction", type=float, default=0.1, metavar="F",
                    help="fraction of the token stream, at its end, for validation "
                         "(default 0.1)")
    pp.add_argument("--eot", default=None, metavar="TOKEN",
                    help="end-of-text token appended after each document (FILE.json only; "
                         "default: the first of <|endoftext|>, </s>, <|end_of_text|>, <eos> "
                         "it has)")
    pp.add_argument("--force", action="store_true",
                    help="replace DIR if it holds an earlier prepare's output")
    pp.add_argument("--no-progress", action="store_true",
                    help="no progress bars (default: shown when stderr is a terminal)")
    pp.add_argument("-q", "--quiet", action="store_true", help="no notes, no summary")
    ip = sub.add_parser("info", help="check DIR and print its summary")
    ip.add_argument("dir", metavar="DIR")
    ip.add_argument("--verify", action="store_true", help="also check the checksums")
    return p


def _summary(path: str, meta: dict) -> str:
    t = meta["tokenizer"]
    return (f"{path}: {meta['train']['tokens']} train + {meta['val']['tokens']} val tokens "
            f"({meta['documents']} document{'s' if meta['documents'] != 1 else ''}, "
            f"{sum(i['bytes'] for i in meta['inputs'])} bytes), vocab {meta['vocab_size']} "
            f"({t['spec']}), {meta['dtype']}")


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "prepare":
            log = (lambda msg: None) if args.quiet else None
            meta = prepare(args.inputs, args.output, tokenizer=args.tokenizer,
                           val_fraction=args.val_fraction, eot=args.eot, force=args.force,
                           progress=False if args.no_progress else None, log=log)
            if not args.quiet:
                print(_summary(args.output, meta), file=sys.stderr)
        else:
            print(_summary(args.dir, read_meta(args.dir, verify=args.verify)))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except DataError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
