"""``jit-synth``: generate | extract | trace | validate | stats | split | export | report.

Each sub-command lives in the module that owns its work; this file only wires argparse.
"""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage dump) and exits 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def run_command(prog: str, module, argv: list[str] | None = None) -> int:
    """Run one sub-command module (its ``add_arguments`` and docstring) on ``argv`` by itself."""
    parser = OneLineParser(prog=prog, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    return args.run(args, parser)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="jit-synth",
        description="Synthesize and extract Python -> C++/CUDA training pairs from NVIDIA Warp kernels.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    from jit.code.harvest import modules as discover

    from jit.code.harvest import traced as trace
    from jit.code.synthesis import pipeline
    from jit.code.analysis import summary as stats
    from jit.code.checks import compile as validate

    pipeline.add_arguments(sub.add_parser("generate", help="generate a dataset of synthetic kernels and their code",
                                          description=pipeline.__doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter))
    discover.add_arguments(sub.add_parser("extract", help="a dataset of the kernels in existing Warp code (files, folders, packages)",
                                          description=discover.__doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter))
    trace.add_arguments(sub.add_parser("trace", help="a dataset of the kernels a Warp program builds while it runs",
                                       description=trace.__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))
    stats.add_arguments(sub.add_parser("stats", help="summarise a dataset folder: categories, builtins, sizes",
                                       description=stats.__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))
    validate.add_arguments(sub.add_parser("validate", help="re-check an existing dataset folder",
                                          description=validate.__doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter))
    from jit.code.engine import splits

    splits.add_arguments(sub.add_parser("split", help="split an existing dataset into train/validation/test without leaks",
                                        description=splits.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter))
    from jit.code import export

    export.add_arguments(sub.add_parser("export", help="write supervised fine-tuning examples (chat messages JSONL) per split",
                                        description=export.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter))
    from jit.code import report

    report.add_arguments(sub.add_parser("report", help="write one HTML page of figures and tables about a dataset",
                                        description=report.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv[1:]
    return args.run(args, parser)


if __name__ == "__main__":
    sys.exit(main())
