"""stats.json of a run: what the records are (``jit.code.analysis.summary``) and what the run did.

The records are counted shard by shard, as tasks of the run's executor (``shard_figures``), and the
counts added up here; the realism figures read the records of an evenly spaced sample only, the
very sample ``realism.Sampler`` would keep of the whole stream, so the figures are those of one pass.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from jit.code.analysis import realism
from jit.code.analysis.summary import RecordCounts
from jit.code.analysis.token_stats import TokenStats
from jit.code.engine import dedup, writers
from jit.code.engine.merge import Merge
from jit.code.engine.plan import RunSpec


def run_stats(run: RunSpec, part_stats: list[dict], merge: Merge, seconds: float, resumed: list[int], workers: int,
              splits: dict[str, int]) -> dict:
    """stats.json of a finished run: the records' summary, rejects by reason, near-duplicates,
    exclusions, splits, speed, and what the source says of itself (versions, seed, provenance)."""
    files = writers.data_files(run.out)
    counts_of, tokens, sizes = RecordCounts(run.devices), TokenStats(), []
    for shard_counts, shard_tokens, n in merge._stage("counts", shard_figures, [(path, run.devices) for path in files]):
        add_counts(counts_of, shard_counts)
        for name, lengths in shard_tokens.lengths.items():
            tokens.lengths[name].extend(lengths)
        sizes.append(n)
    sample = sampled(files, sizes)
    rejects: Counter = Counter()
    counts: Counter = Counter()
    for s in part_stats:
        rejects.update(s["rejects"])
        counts.update(s.get("counts", {}))
    if merge.duplicates:
        rejects["duplicate across parts"] += merge.duplicates
    if merge.near_duplicates:
        rejects["near-duplicate across parts"] += merge.near_duplicates
    new_records = sum(s["records"] for s in part_stats if s["part"] not in resumed)
    stats = {
        "count": counts_of.count,
        "source": run.source.name,
        **run.source.describe(),
        **counts_of.figures(),
        "rejects": dict(sorted(rejects.items())),
        "near_duplicates": {"threshold": run.near_dup_threshold, "within_parts": rejects["near-duplicate"],
                            "across_parts": merge.near_duplicates, "shingle": dedup.SHINGLE, "num_perm": dedup.NUM_PERM},
        "excluded": {**merge.exclusions.describe(), "records": merge.excluded} if merge.exclusions is not None else None,
        "splits": splits,
        "realism": sample.figures(),
        "tokens": tokens.figures(),
        "pairs_per_second": round(new_records / seconds, 2) if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "merge_seconds": {stage: round(t, 2) for stage, t in merge.seconds.items()},
        "merge": merge.compared,
        "workers": workers,
        "resumed_parts": len(resumed),
        "devices": list(run.devices),
        "validate": run.validate,
        "format": run.fmt,
        "shard_size": run.shard_size,
    }
    if counts:
        stats["source_counts"] = dict(sorted(counts.items()))
    return stats


def shard_figures(path: str, devices: tuple[str, ...]) -> tuple[RecordCounts, TokenStats, int]:
    """A task: the counts and token lengths of one shard's records, and how many it holds."""
    counts, tokens, n = RecordCounts(devices), TokenStats(), 0
    for _, record, _ in writers.read_records(path):
        if record is not None:
            counts.add(record)
            tokens.add(record)
            n += 1
    return counts, tokens, n


def add_counts(total: RecordCounts, more: RecordCounts) -> None:
    """Add ``more``'s counts to ``total`` (every field is a count or a Counter of counts)."""
    for name, value in vars(more).items():
        if isinstance(value, Counter):
            getattr(total, name).update(value)
        elif isinstance(value, int):
            setattr(total, name, getattr(total, name) + value)


def sampled(files: list[str], sizes: list[int]) -> realism.Sampler:
    """The sampler a pass over every record of ``files`` would leave, reading only its records."""
    sample = realism.Sampler()
    for i in range(sum(sizes)):  # the sampler's choice depends on positions only: run it on them
        sample.add({"python_source": i + 1})  # + 1: the sampler keeps "" for a falsy source
    sample.kept = [i - 1 for i in sample.kept]
    wanted = set(sample.kept)
    sources, starts = {}, np.cumsum([0, *sizes]).tolist()
    for path, start, stop in zip(files, starts, starts[1:]):
        rows = {i - start for i in wanted if start <= i < stop}
        if rows and path.endswith(".jsonl"):  # parse only the sampled lines
            with open(path, "rb") as f:
                for row, line in enumerate(f):
                    if row in rows:
                        sources[start + row] = json.loads(line).get("python_source") or ""
        elif rows:
            for number, record, _ in writers.read_records(path):
                if number - 1 in rows and record is not None:
                    sources[start + number - 1] = record.get("python_source") or ""
    sample.kept = [sources.get(i, "") for i in sample.kept]
    return sample
