"""Kernels a running program builds: run it unchanged and record each one into a dataset.

    jit-synth trace --output DIR -- python SCRIPT.py [ARGS]
    jit-synth trace --output DIR -- python -m MODULE [ARGS]
    jit-synth trace --output DIR --device cpu -- pytest -q tests/test_sim.py

The program runs as it is, in the current folder, with its output shown; every kernel Warp
builds meanwhile (module-level kernels, factory closures, generic kernels as launched, with the
options the program built them with) is extracted for --device and written to the dataset
folder DIR as `jit-synth generate` writes it (data/, stats.json, card; --validate compile
rebuilds each record from its own python_source and compiles it; records whose text cannot
rebuild them are kept with --validate none only). The program's exit status and the count of
kernels are printed; a program that fails or crashes still yields the kernels it built. Nothing
is written outside DIR except what the program itself writes.
"""

from __future__ import annotations

import argparse
import os
import sys

from jit.code.commands import common as options
from jit.code.commands.common import UsageError
from jit.code.harvest.traced import TracedKernels, child_command

HELP = "a dataset of the kernels a Warp program builds while it runs"


def add_arguments(parser) -> None:
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="the program to run, after --: python SCRIPT.py [ARGS], python -m MODULE [ARGS] or pytest [ARGS]")
    options.add_arguments(parser, output_default=None, near_dup_default=0.0)


def run(args, parser=None) -> int:
    prog = args.prog
    command = list(args.program)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command:
            raise UsageError("nothing to run: add the program after --, e.g. jit-synth trace --output DIR -- python sim.py")
        try:
            child_command(command)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        out = os.path.abspath(args.output)
        source = TracedKernels(tuple(command), os.path.join(out, ".jit-synth", "trace"))
        spec = options.run_spec(args, source)
    except UsageError as exc:
        return options.error(prog, exc)

    def record(run) -> int:
        result = source.record(run)
        if result is not None and not args.quiet:
            print(f"[jit-synth trace] the program exited with status {result.exit_status}; "
                  f"{result.captured} kernels recorded", file=sys.stderr)
        return 0

    status = options.run(prog, args, spec, before=record)
    program = source.program()
    if status == 0 and not args.quiet:
        print(f"program exit status: {program.get('exit_status')}; kernels built and recorded: {program.get('kernels')}"
              + (f"; not recorded: {program.get('failed')}" if program.get("failed") else ""))
    return status


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth trace", argv)

