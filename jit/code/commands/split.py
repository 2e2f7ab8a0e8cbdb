"""``jit-synth split``: see ``jit.code.engine.splits`` (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from jit.code.commands import common as options
from jit.code.engine import splits
from jit.code.engine.splits import EXAMPLE, SplitError, parse_splits, split_dataset

__doc__ = splits.__doc__  # noqa: A001  the help text lives beside the code it describes
HELP = "split an existing dataset into train/validation/test without leaks"

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="dataset folder (with data/*.jsonl or data/*.parquet)")
    parser.add_argument("--splits", required=True, metavar="NAME=FRACTION,...",
                        help=f"split names and fractions summing to 1, e.g. {EXAMPLE}")
    parser.add_argument("--seed", type=int, default=0, help="shuffles which groups go to which split (default 0)")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    try:
        fractions = parse_splits(args.splits)
        if not os.path.isdir(args.dir):
            raise SplitError(f"{args.dir} is not a folder; give a dataset folder made by jit-synth")
        command = "jit-synth split " + " ".join(shlex.quote(a) for a in (getattr(args, "argv", None) or
                                                                        [args.dir, "--splits", args.splits]))
        sizes = split_dataset(args.dir, fractions, args.seed, command)
    except (ValueError, SplitError, OSError) as exc:
        return options.error(args.prog, exc)
    total = sum(sizes.values())
    print(f"split {total} records in {args.dir}: " + ", ".join(f"{name} {n}" for name, n in sizes.items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth split", argv)
