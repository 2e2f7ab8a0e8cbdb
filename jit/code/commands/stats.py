"""``jit-synth stats``: see ``jit.code.analysis.summary``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jit.code.analysis import summary
from jit.code.analysis.summary import StatsError, render, summarise_folder
from jit.code.commands import common as options

__doc__ = summary.__doc__  # noqa: A001  the help text lives beside the code it describes
HELP = "summarise a dataset folder: categories, builtins, sizes"

def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    try:
        summary = summarise_folder(Path(args.dir))
    except (StatsError, OSError) as exc:
        return options.error(args.prog, exc)
    print(json.dumps(summary, indent=2) if args.json else render(summary))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="dataset folder (with data/*.jsonl)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth stats", argv)
