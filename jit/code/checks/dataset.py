"""Re-check a dataset folder: schema, torn lines, ids, rebuild-and-compile, io replay.

What ``jit-synth validate`` runs (``jit.code.commands.validate`` prints it): every record must
parse, carry the schema's fields, have the id its text gives (``records.record_id``), rebuild
from its python_source alone and compile (``compile.compile_rebuilt``), and reproduce its io
example on the CPU (``execute.replay_records``).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict

from jit.code.checks.compile import compile_rebuilt
from jit.code.records import FIELDS, record_id


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
        for rid, reason in compile_rebuilt(rebuildable, (arch,)).items():
            report(reason, rid)
    replay = [r for r in good if r.get("io")]
    if replay:
        from jit.code.checks import execute

        for rid, reason in execute.replay_records(replay).items():
            report(reason, rid)
    return problems, bad, n
