"""Re-check a dataset folder: schema, torn lines, ids, real compilation and io replay.

Reads DIR/data/*.jsonl or *.parquet. Every record must parse, carry the schema's fields, have
an id equal to the hash of its normalised python_source (and unique; for real code whose text
is not self-contained, of the text and its code), rebuild from its python_source alone, and
compile for the devices it has code for: CPU with Warp's clang and CUDA with NVRTC to PTX (no
GPU needed). Records are rebuilt many to a Warp module, never two that define the same name.
Real code whose text cannot rebuild it (metadata.self_contained false; it was compiled when it
was recorded) is counted, not rebuilt. Records with an `io` example are rebuilt and
re-launched on the CPU and must reproduce their outputs. Prints a summary by reason and the
ids of bad records; exits 1 when anything is wrong, 2 on bad input.

examples:
  jit-synth validate out/dataset
  jit-synth validate out/dataset --no-compile     # schema, ids and io replay only
"""

from __future__ import annotations

import os
import sys
from collections import Counter

from jit.code.checks.dataset import check_dataset
from jit.code.commands import common as options

HELP = "re-check an existing dataset folder"

def add_arguments(p) -> None:
    p.add_argument("dataset", help="dataset folder (with data/train-*.jsonl or .parquet)")
    p.add_argument("--no-compile", action="store_true", help="skip compiling the records")
    p.add_argument("--arch", type=int, default=90, help="CUDA arch for NVRTC (default 90)")
    p.add_argument("--show", type=int, default=20, help="bad ids to list (default 20)")


def run(args, parser=None) -> int:
    from jit.code.engine import writers

    if not os.path.isdir(args.dataset):
        return options.error(args.prog, f"{args.dataset} is not a folder")
    if not writers.data_files(args.dataset):
        return options.error(args.prog, f"no data/train-*.jsonl or .parquet in {args.dataset}")
    notes: Counter = Counter()
    problems, bad, n = check_dataset(args.dataset, not args.no_compile, args.arch, notes)
    if not problems:
        skipped = notes["not self-contained"]
        how = "rebuilt from their python_source and compiled for their devices" if not args.no_compile else "compile skipped"
        note = f"; {skipped} not rebuilt: their text is not self-contained (metadata.self_contained)" if skipped else ""
        print(f"ok: {n} records valid ({how}{note})")
        return 0
    for reason, count in problems.most_common():
        shown = ", ".join(bad[reason][: args.show])
        print(f"{count:6d}  {reason}: {shown}")
    print(f"FAILED: {sum(problems.values())} problems in {n} records")
    return 1


def main(argv: list[str] | None = None) -> int:
    return options.main_of(sys.modules[__name__], "jit-synth validate", argv)
