"""``jit-synth export``: see ``jit.code.export``."""

from __future__ import annotations

import argparse
import sys

from jit.code import export as exporting
from jit.code.commands import common as options
from jit.code.commands.common import positive
from jit.code.export import TASKS, ExportError, export, load_exclusions, load_tokenizer, template

__doc__ = exporting.__doc__  # noqa: A001  the help text lives beside the code it describes
HELP = "write supervised fine-tuning examples (chat messages JSONL) per split"

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", metavar="DIR", nargs="?", help="dataset folder (with data/{split}-*.jsonl or .parquet)")
    p.add_argument("--task", choices=sorted(TASKS), help="what the examples teach (see --show-template)")
    p.add_argument("--output", "-o", metavar="OUT", help="folder for {split}.jsonl and export.json")
    p.add_argument("--max-tokens", type=positive("--max-tokens"), metavar="N", help="drop examples longer than N tokens")
    p.add_argument("--tokenizer", metavar="PATH_OR_NAME",
                   help="count tokens with this tokenizer (tokenizer.json, folder or hub name) instead of the estimate")
    p.add_argument("--exclude", metavar="PATH",
                   help="drop records whose Python source nearly duplicates one in PATH (a dataset folder, a JSONL "
                        "file or a folder of .py files, e.g. an evaluation set); counted in export.json")
    p.add_argument("--system", metavar="TEXT", help="system turn text (default: the task's; '' leaves the turn out)")
    p.add_argument("--show-template", action="store_true",
                   help="print the task's template (every task's without --task) and exit")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    try:
        if args.show_template:
            tasks = [TASKS[args.task]] if args.task else list(TASKS.values())
            print("\n".join(template(t, args.system) for t in tasks), end="")
            return 0
        for value, flag in ((args.dir, "DIR"), (args.task, "--task"), (args.output, "--output")):
            if not value:
                raise ExportError(f"{flag} is required (e.g. jit-synth export out/ds --task py2cuda --output out/sft)")
        if args.tokenizer and args.max_tokens is None:
            raise ExportError("--tokenizer only counts tokens for --max-tokens; give --max-tokens N too")
        counter = load_tokenizer(args.tokenizer) if args.tokenizer else None
        exclusions = load_exclusions(args.exclude) if args.exclude else None
        summary = export(args.dir, TASKS[args.task], args.output, max_tokens=args.max_tokens, counter=counter,
                         system=args.system, exclusions=exclusions)
    except (ExportError, OSError) as exc:
        return options.error(args.prog, exc)
    counts = ", ".join(f"{split} {n}" for split, n in summary["examples"].items())
    dropped = ", ".join(f"{reason} {n}" for reason, n in summary["dropped"].items()) or "none"
    print(f"wrote {args.output}: {counts} examples ({summary['task']}); dropped: {dropped}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth export", argv)
