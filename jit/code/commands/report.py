"""``jit-synth report``: see ``jit.code.report``."""

from __future__ import annotations

import argparse
import os
import sys

from jit.code import report as reporting
from jit.code.commands import common as options
from jit.code.engine import writers
from jit.code.report import ReportError, check_input, render

__doc__ = reporting.__doc__  # noqa: A001  the help text lives beside the code it describes
HELP = "write one HTML page of figures and tables about a dataset"

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR",
                        help="dataset folder (with data/{split}-NNNNN-of-NNNNN.jsonl or .parquet)")
    parser.add_argument("--output", "-o", metavar="FILE.html", help="where to write the page (default DIR/report.html)")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    output = args.output or os.path.join(args.dir, "report.html")
    try:
        check_input(args.dir)
        if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
            raise ReportError(f"the folder of --output {output} does not exist; create it or choose another file")
        page, figures = render(args.dir)
        writers.write_atomic(output, page)
    except (ReportError, OSError) as exc:
        return options.error(args.prog, exc)
    print(f"wrote {output}: {figures} figures, {len(page) / 1e6:.1f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth report", argv)
