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
from collections import Counter, defaultdict

from jit.code.checks.compile import compile_rebuilt
from jit.code.commands import common as options
from jit.code.records import FIELDS, record_id

HELP = "re-check an existing dataset folder"

def add_arguments(p) -> None:
    p.add_argument("dataset", help="dataset folder (with data/train-*.jsonl or .parquet)")
    p.add_argument("--no-compile", action="store_true", help="skip compiling the records")
    p.add_argument("--arch", type=int, default=90, help="CUDA arch for NVRTC (default 90)")
    p.add_argument("--show", type=int, default=20, help="bad ids to list (default 20)")


def check_dataset(folder: str, compile_code: bool = True, arch: int = 90,
                  notes: Counter | None = None) -> tuple[Counter, dict[str, list[str]], int]:
    """(problems by reason, reason -> bad ids or shard:line, records read); ``notes`` gets counts
    that are not problems (``not self-contained``: records of real code not rebuilt)."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.engine import writers

    wb.silence_performance_notes()
    problems: Counter = Counter()
    bad: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    good: list[dict] = []
    n = 0

    def report(reason, where):
        problems[reason] += 1
        bad[reason].append(where)

    for path in writers.data_files(folder):
        for line, record, error in writers.read_records(path):
            where = f"{os.path.basename(path)}:{line}"
            if error:
                report("torn or unparseable line", where)
                continue
            n += 1
            missing = [f for f in FIELDS if f not in record]
            if missing:
                report(f"missing fields {','.join(missing)}", record.get("id", where))
                continue
            rid = record["id"]
            if rid in seen:
                report("duplicate id", rid)
                continue
            seen.add(rid)
            if not isinstance(record["python_source"], str) or record_id(record) != rid:
                report("id does not match python_source", rid)
                continue
            good.append(record)
    if compile_code:
        # real code whose text cannot rebuild it (metadata.self_contained false) was compiled when it
        # was recorded; it cannot be rebuilt here
        rebuildable = [r for r in good if (r.get("metadata") or {}).get("self_contained") is not False]
        if notes is not None:
            notes["not self-contained"] += len(good) - len(rebuildable)
        for rid, reason in compile_rebuilt(rebuildable, arch).items():
            report(reason, rid)
    replay = [r for r in good if r.get("io")]
    if replay:
        from jit.code.checks import execute

        for rid, reason in execute.replay_records(replay).items():
            report(reason, rid)
    return problems, bad, n


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
