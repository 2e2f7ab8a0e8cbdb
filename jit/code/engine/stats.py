"""stats.json of a run: what the records are (``jit.code.analysis.summary``) and what the run did."""

from __future__ import annotations

from collections import Counter

from jit.code.analysis import realism
from jit.code.analysis.summary import record_builtins
from jit.code.analysis.token_stats import TokenStats
from jit.code.engine import dedup, writers
from jit.code.engine.merge import Merge
from jit.code.engine.plan import RunSpec


def run_stats(run: RunSpec, part_stats: list[dict], merge: Merge, seconds: float, resumed: list[int], workers: int,
              splits: dict[str, int]) -> dict:
    """stats.json of a finished run: the records' summary, rejects by reason, near-duplicates,
    exclusions, splits, speed, and what the source says of itself (versions, seed, provenance)."""
    per_category: Counter = Counter()
    per_source: Counter = Counter()
    licences: Counter = Counter()
    lines = Counter()
    builtins: set[str] = set()
    n = 0
    validation: Counter = Counter()
    self_contained = 0
    sample = realism.Sampler()
    tokens = TokenStats()
    for record in sample.watch(writers.read_dataset(run.out)):
        n += 1
        per_category[record["category"]] += 1
        meta = record.get("metadata", {})
        per_source[meta.get("source") or meta.get("found_by") or "random"] += 1
        if meta.get("found_by"):
            name = f"{meta.get('distribution') or '(no distribution)'} {meta.get('distribution_version') or ''}".strip()
            licences[name, meta.get("license") or "unknown"] += 1
            self_contained += bool(meta.get("self_contained"))
        lines["python"] += meta.get("python_lines", record["python_source"].count("\n") + 1)
        for d in run.devices:
            lines[f"{d}_forward"] += meta.get(f"{d}_forward_lines", (record.get(f"{d}_forward") or "").count("\n"))
        builtins.update(record_builtins(record))
        for key, value in sorted(record.get("validation", {}).items()):
            validation[f"{key}={value}"] += 1
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
        "count": n,
        "source": run.source.name,
        **run.source.describe(),
        "per_source": dict(sorted(per_source.items())),
        "per_category": dict(sorted(per_category.items())),
        "rejects": dict(sorted(rejects.items())),
        "mean_lines": {k: round(v / max(n, 1), 2) for k, v in sorted(lines.items())},
        "distinct_builtins": len(builtins),
        "near_duplicates": {"threshold": run.near_dup_threshold, "within_parts": rejects["near-duplicate"],
                            "across_parts": merge.near_duplicates, "shingle": dedup.SHINGLE, "num_perm": dedup.NUM_PERM},
        "excluded": {**merge.exclusions.describe(), "records": merge.excluded} if merge.exclusions is not None else None,
        "splits": splits,
        "realism": sample.figures(),
        "tokens": tokens.figures(),
        "validation": dict(sorted(validation.items())),
        "pairs_per_second": round(new_records / seconds, 2) if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "workers": workers,
        "resumed_parts": len(resumed),
        "devices": list(run.devices),
        "validate": run.validate,
        "format": run.fmt,
        "shard_size": run.shard_size,
    }
    if licences:
        stats["provenance"] = [{"distribution": name, "license": licence, "records": n}
                               for (name, licence), n in sorted(licences.items())]
        stats["self_contained"] = {"records": self_contained, "share": round(self_contained / max(n, 1), 4)}
    if counts:
        stats["source_counts"] = dict(sorted(counts.items()))
    return stats
