"""Summarise a dataset folder: category counts, Warp builtin coverage, kernel sizes, realism.

Reads every record of DIR/data/*.jsonl (fields id, kernel_name, category, python_source,
metadata with builtins and lines) and prints how many kernels each category has, how many
distinct Warp builtins the kernels call out of all of Warp's builtins (and the most and
least used), the distribution of kernel sizes in lines, token counts per field (percentiles, and the share of
records that fit a 4k, 8k or 32k context), and the six realism figures
(``realism``: measured on at most 5,000 evenly spaced records against the measure half of
Warp's own kernels). Records without metadata are measured from their python_source. Exits 2
with one line when DIR holds no records.
"""

from __future__ import annotations

import collections

from jit.code.analysis import realism
from jit.code.analysis.builtins import called_builtins, warp_builtins


class StatsError(Exception):
    """A folder that cannot be summarised, with the reason."""


def record_builtins(record: dict) -> list[str]:
    """The Warp builtins a record calls: from its metadata, else read from its python_source."""
    meta = record.get("metadata") or {}
    if "builtins" in meta:
        return meta["builtins"]
    try:
        return called_builtins(record.get("python_source") or "")
    except SyntaxError:  # real code whose text is not valid Python on its own
        return []


def record_source(record: dict) -> str:
    """Which source a record came from: the generator's source, how real code was found, or "unknown"."""
    meta = record.get("metadata") or {}
    return meta.get("source") or meta.get("found_by") or "unknown"


class RecordCounts:
    """THE counts of a dataset's records that stats.json, the card and the report all show."""

    def __init__(self, devices=("cpu", "cuda")):
        self.devices = tuple(devices)
        self.count = self.self_contained = 0
        self.per_source: collections.Counter = collections.Counter()
        self.per_category: collections.Counter = collections.Counter()
        self.builtins: collections.Counter = collections.Counter()
        self.validation: collections.Counter = collections.Counter()
        self.lines: collections.Counter = collections.Counter()
        self.licences: collections.Counter = collections.Counter()  # (distribution version, licence)

    def add(self, record: dict) -> None:
        meta = record.get("metadata") or {}
        self.count += 1
        self.per_source[record_source(record)] += 1
        self.per_category[record.get("category") or "unknown"] += 1
        self.builtins.update(set(record_builtins(record)))
        for key, value in sorted((record.get("validation") or {}).items()):
            self.validation[f"{key}={value}"] += 1
        self.lines["python"] += meta.get("python_lines", (record.get("python_source") or "").count("\n") + 1)
        for d in self.devices:
            self.lines[f"{d}_forward"] += meta.get(f"{d}_forward_lines", (record.get(f"{d}_forward") or "").count("\n"))
        if meta.get("found_by"):
            name = f"{meta.get('distribution') or '(no distribution)'} {meta.get('distribution_version') or ''}".strip()
            self.licences[name, meta.get("license") or "unknown"] += 1
            self.self_contained += bool(meta.get("self_contained"))

    def figures(self) -> dict:
        n = max(self.count, 1)
        out = {
            "per_source": dict(sorted(self.per_source.items())),
            "per_category": dict(sorted(self.per_category.items())),
            "mean_lines": {k: round(v / n, 2) for k, v in sorted(self.lines.items())},
            "distinct_builtins": len(self.builtins),
            "validation": dict(sorted(self.validation.items())),
        }
        if self.licences:
            out["provenance"] = [{"distribution": name, "license": licence, "records": k}
                                 for (name, licence), k in sorted(self.licences.items())]
            out["self_contained"] = {"records": self.self_contained, "share": round(self.self_contained / n, 4)}
        return out


def summarise(records, tokens=None) -> dict:
    counts = RecordCounts()
    sizes: list[int] = []
    for rec in records:
        counts.add(rec)
        meta = rec.get("metadata") or {}
        sizes.append(int(meta.get("lines") or (rec.get("python_source") or "").count("\n")))
        if tokens is not None:
            tokens.add(rec)
    categories, builtins = counts.per_category, counts.builtins
    if not sizes:
        raise StatsError("no records in the data files")
    sizes.sort()
    total = len(warp_builtins())
    return {
        "records": len(sizes),
        "categories": dict(categories.most_common()),
        "builtins_distinct": len(builtins),
        "builtins_total": total,
        "builtin_coverage": round(len(builtins) / total, 4),
        "builtins_most_used": builtins.most_common(10),
        "builtins_least_used": sorted(builtins.items(), key=lambda kv: (kv[1], kv[0]))[:10],
        "lines": {"min": sizes[0], "p10": _pct(sizes, 10), "median": _pct(sizes, 50), "p90": _pct(sizes, 90),
                  "max": sizes[-1], "mean": round(sum(sizes) / len(sizes), 1)},
        "size_histogram": _histogram(sizes),
    }


def _pct(values: list[int], p: int) -> int:
    return values[min(len(values) - 1, len(values) * p // 100)]


def _histogram(sizes: list[int]) -> dict[str, int]:
    edges = (10, 20, 30, 50, 80, 120)
    out: dict[str, int] = {}
    lo = 0
    for hi in (*edges, None):
        label = f"{lo}-{hi - 1}" if hi else f"{lo}+"
        out[label] = sum(1 for s in sizes if s >= lo and (hi is None or s < hi))
        lo = hi or lo
    return out


def render(summary: dict) -> str:
    lines = [f"records: {summary['records']}", "", "categories:"]
    width = max(len(c) for c in summary["categories"])
    for cat, n in summary["categories"].items():
        lines.append(f"  {cat:<{width}}  {n:>7}  {100 * n / summary['records']:5.1f}%")
    lines += ["", f"builtin coverage: {summary['builtins_distinct']} / {summary['builtins_total']} "
                  f"distinct Warp builtins called ({100 * summary['builtin_coverage']:.1f}%)",
              "  most used:  " + ", ".join(f"{b} ({n})" for b, n in summary["builtins_most_used"]),
              "  least used: " + ", ".join(f"{b} ({n})" for b, n in summary["builtins_least_used"]),
              "", "size (lines of python source):"]
    s = summary["lines"]
    lines.append(f"  min {s['min']}  p10 {s['p10']}  median {s['median']}  p90 {s['p90']}  max {s['max']}  mean {s['mean']}")
    for label, n in summary["size_histogram"].items():
        lines.append(f"  {label:>8}  {n:>7}")
    if "realism" in summary:
        lines += ["", render_realism(summary["realism"])]
    if summary.get("tokens"):
        from jit.code.analysis.token_stats import render as render_tokens

        lines += ["", render_tokens(summary["tokens"])]
    return "\n".join(lines)


_REALISM_LABELS = {"dead_names": "dead names", "constant_tests": "constant tests",
                   "generator_style_identifiers": "generator-style identifiers",
                   "builtin_js_divergence": "builtin JS divergence",
                   "nearest_neighbour_similarity": "nearest-neighbour similarity",
                   "idiom_coverage": "idiom coverage"}


def render_realism(figures: dict) -> str:
    lines = [f"realism ({figures['kernels']} kernels of {figures['records_measured']} records, "
             f"against {figures['reference_kernels']} real Warp kernels):"]
    lines += [f"  {_REALISM_LABELS[name]:<29} {figures[name]:.4f}" for name in realism.FIGURES]
    return "\n".join(lines)


