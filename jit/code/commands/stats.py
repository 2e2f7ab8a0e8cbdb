"""``jit-synth stats``: see ``jit.code.analysis.summary``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jit.code.analysis import summary
from jit.code.analysis import realism
from jit.code.analysis.summary import StatsError, render, summarise
from jit.code.analysis.token_stats import TokenStats
from jit.code.engine import writers
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


def read_records(folder: Path):
    """The records of a dataset folder's shards (JSONL or Parquet), in shard order."""
    files = writers.data_files(str(folder)) if folder.is_dir() else []
    if not files:
        raise StatsError(f"no records: no shards {folder}/data/<split>-*.jsonl or .parquet")
    for path in files:
        for number, record, error in writers.read_records(path):
            if error:
                raise StatsError(f"{path}:{number}: {error}")
            yield record


def summarise_folder(folder: Path) -> dict:
    """``summarise`` of a folder's records, with the realism figures of a sample of them."""
    sampler, tokens = realism.Sampler(), TokenStats()
    summary = summarise(sampler.watch(read_records(folder)), tokens)
    summary["realism"] = sampler.figures()
    summary["tokens"] = tokens.figures()
    return summary
