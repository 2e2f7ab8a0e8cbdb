"""stats.json of a run: what the records are (``jit.code.analysis.summary``) and what the run did."""

from __future__ import annotations

from collections import Counter

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
    counts_of = RecordCounts(run.devices)
    sample = realism.Sampler()
    tokens = TokenStats()
    for record in sample.watch(writers.read_dataset(run.out)):
        counts_of.add(record)
        tokens.add(record)
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
