"""``jit-synth``: generate | extract | trace | validate | stats | split | export | report | bench | eval.

argparse only: each command module (``jit.code.commands``) adds its own arguments and runs.
"""

from __future__ import annotations

import sys

from jit.code.commands import bench, common, eval, export, extract, generate, report, split, stats, trace, validate

COMMANDS = {"generate": generate, "extract": extract, "trace": trace, "stats": stats, "validate": validate,
            "split": split, "export": export, "report": report, "bench": bench,
            "eval": eval}


def build_parser() -> common.OneLineParser:
    parser = common.OneLineParser(
        prog="jit-synth",
        description="Synthesize and extract Python -> C++/CUDA training pairs from NVIDIA Warp kernels.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        common.command_parser(sub.add_parser(name, help=module.HELP), module)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv[1:]
    return args.run(args, parser)


if __name__ == "__main__":
    sys.exit(main())
