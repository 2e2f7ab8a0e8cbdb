"""Write one HTML page about a dataset folder, made to be read by a person instead of JSON.

    jit-synth report out/ds                       # writes out/ds/report.html
    jit-synth report out/ds --output ds.html

The page holds figures and tables of: the source and category mix; lengths per code field
(Python, C++ and CUDA forward and backward, helpers) and how many training pairs fit a 4k, 8k
and 32k context; builtin coverage; the realism figures next to those of real Warp code;
validation outcomes and rejects by reason; the near-duplicate rate; split sizes; provenance of
real code and of the kernels mutants come from; and a few records shown side by side (Python |
CUDA forward), one per source, chosen by a fixed rule among the shorter ones so they are readable.
When the folder (a benchmark, say) holds ``jit-synth eval --output`` folders, up to two levels
down, the page ends with their results: pass@1 per task and tier, each eval.json's table and why
predictions failed (counted from predictions.jsonl).

It reads DIR/data/{split}-NNNNN-of-NNNNN.jsonl|parquet as a stream, keeping counters and lengths
only, so a dataset of 100,000 records is fine, and DIR/stats.json (rejects, near-duplicates,
realism, splits) when present. Lengths are estimated tokens (jit/code/analysis/token_stats.py),
counted on at most 1,000 evenly spaced records: counting every record of a large dataset would
take longer than the rest of the report. The real-code column of the realism figures is the seed
half of Warp's own examples and tests measured against the measure half (jit/code/analysis/realism.py),
computed from the installed Warp in a few seconds.

The page is self-contained: figures are PNG images embedded in it (base64), styles are inline,
there is no script, so it opens offline and can be sent as one file. Needs matplotlib:
pip install 'warp-jit-synth[report]'.

What it leaves out: measuring realism of the records (stats.json has it, measured when the
dataset was written) and checking records again (jit-synth validate).
"""

from __future__ import annotations

import base64
import collections
import functools
import glob
import html
import io
import json
import math
import os
import re
from array import array
from dataclasses import dataclass, field

import numpy as np

from jit.code.analysis.summary import record_builtins, record_source
from jit.code.engine import writers
from jit.code.analysis.token_stats import CONTEXTS, FIELDS, PAIRS, count_tokens as length  # lengths in estimated tokens

UNIT = "tokens (estimated)"
SAMPLE = 1000          # records whose lengths are counted
SHOWN = 4              # records shown side by side
READABLE = (6, 30)     # Python lines of a record worth showing
TOP_BUILTINS = 30
SHARD = re.compile(r"^(?P<split>.+)-\d{5}-of-\d{5}\.(jsonl|parquet)$")
REALISM = {  # stats.json "realism" key -> label
    "dead_names": "dead names (stored, never loaded)",
    "constant_tests": "constant tests (no variable read)",
    "generator_style_identifiers": "generator-style identifiers (a1, v12)",
    "builtin_js_divergence": "builtin JS divergence",
    "nearest_neighbour_similarity": "nearest-neighbour similarity",
    "idiom_coverage": "idiom coverage",
}
COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]
LEGEND_RIGHT = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False}  # beside the axes
FIGURE_WIDTH = 9.0     # inches at DPI: fits the page's 1,100 px column
DPI = 110


class ReportError(Exception):
    """A dataset folder the report cannot read, or a missing dependency."""


# ---------------------------------------------------------------------------------------------
# one pass over the records


@dataclass
class Summary:
    """What the page needs of the records: counters, lengths of a sample, a few short records."""

    folder: str = ""
    count: int = 0
    unreadable: int = 0
    sampled: int = 0
    sources: collections.Counter = field(default_factory=collections.Counter)
    categories: collections.Counter = field(default_factory=collections.Counter)  # (source, category)
    splits: collections.Counter = field(default_factory=collections.Counter)
    builtins: collections.Counter = field(default_factory=collections.Counter)
    validation: collections.Counter = field(default_factory=collections.Counter)  # (check, outcome)
    reasons: collections.Counter = field(default_factory=collections.Counter)  # (check, reason text)
    found_by: collections.Counter = field(default_factory=collections.Counter)
    distributions: collections.Counter = field(default_factory=collections.Counter)
    licences: collections.Counter = field(default_factory=collections.Counter)
    seed_licences: collections.Counter = field(default_factory=collections.Counter)  # of mutants' seed kernels
    python_lines: dict[str, array] = field(default_factory=lambda: collections.defaultdict(lambda: array("I")))
    lengths: dict[str, list[int]] = field(default_factory=lambda: collections.defaultdict(list))
    candidates: dict[str, list[dict]] = field(default_factory=lambda: collections.defaultdict(list))
    shortest: dict[str, dict] = field(default_factory=dict)

    def add(self, record: dict, split: str, measure: bool) -> None:
        meta = record.get("metadata") or {}
        source = record_source(record)
        self.count += 1
        self.sources[source] += 1
        self.categories[(source, record.get("category") or "unknown")] += 1
        self.splits[split] += 1
        python = record.get("python_source") or ""
        self.python_lines[source].append(python.count("\n") + 1)
        self.builtins.update(record_builtins(record))
        for check, outcome in (record.get("validation") or {}).items():
            if check.endswith("_reason"):
                self.reasons[(check[:-len("_reason")], str(outcome)[:120])] += 1
            else:
                self.validation[(check, str(outcome))] += 1
        self._provenance(meta)
        if measure:
            self._measure(record)
        self._keep_sample(source, record, python)

    def _provenance(self, meta: dict) -> None:
        if meta.get("found_by"):
            self.found_by[meta["found_by"]] += 1
            name = f"{meta.get('distribution') or '(no distribution)'} {meta.get('distribution_version') or ''}"
            self.distributions[name.strip()] += 1
            self.licences[meta.get("license") or "unknown"] += 1
        seed = meta.get("seed_kernel")
        if isinstance(seed, dict):
            self.seed_licences[f"{seed.get('distribution') or '?'}: {seed.get('license') or 'unknown'}"] += 1

    def _measure(self, record: dict) -> None:
        self.sampled += 1
        counts = {name: length(record.get(name)) for name in FIELDS if record.get(name)}
        for name, n in counts.items():
            self.lengths[name].append(n)
        for pair, names in PAIRS.items():
            if names[-1] in counts:
                self.lengths[pair].append(sum(counts.get(name, 0) for name in names))

    def _keep_sample(self, source: str, record: dict, python: str) -> None:
        code, side = _code_side(record)
        if not code:
            return
        lines = python.count("\n") + 1
        kept = {"id": record.get("id"), "kernel_name": record.get("kernel_name"), "category": record.get("category"),
                "source": source, "python_source": python, "code": code, "side": side, "lines": lines}
        if READABLE[0] <= lines <= READABLE[1] and len(self.candidates[source]) < SHOWN:
            self.candidates[source].append(kept)
        elif source not in self.shortest or lines < self.shortest[source]["lines"]:
            self.shortest[source] = kept

    def samples(self, n: int = SHOWN) -> list[dict]:
        """Up to ``n`` records, taken in turn from each source (readable ones first, else the shortest)."""
        pools = [list(self.candidates[s]) or [self.shortest[s]] for s in sorted(self.sources)
                 if self.candidates[s] or s in self.shortest]
        chosen: list[dict] = []
        while len(chosen) < n and any(pools):
            for pool in pools:
                if pool and len(chosen) < n:
                    chosen.append(pool.pop(0))
        return chosen


def _code_side(record: dict) -> tuple[str, str]:
    for name, label in (("cuda_forward", "CUDA forward"), ("cpu_forward", "C++ forward")):
        if record.get(name):
            return record[name], label
    return "", ""


def _rows(path: str) -> int:
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def summarise(folder: str, sample: int = SAMPLE) -> Summary:
    """One pass over the shards of ``folder``; lengths of every ``total / sample``-th record."""
    paths = writers.data_files(folder)
    if not paths:
        raise ReportError(f"{folder} has no shards (data/{{split}}-NNNNN-of-NNNNN.jsonl or .parquet); "
                          "give a dataset folder made by jit-synth generate, extract or trace")
    stride = max(1, math.ceil(sum(_rows(p) for p in paths) / sample))
    summary = Summary(folder=folder)
    for path in paths:
        split = SHARD.match(os.path.basename(path)).group("split")
        for _, record, error in writers.read_records(path):
            if record is None:
                summary.unreadable += 1
            else:
                summary.add(record, split, measure=summary.count % stride == 0)
    return summary


def read_stats(folder: str) -> dict:
    try:
        return writers.read_stats(folder)
    except ValueError as exc:
        raise ReportError(f"{exc}; rewrite it with jit-synth stats or remove it") from None


@functools.cache
def real_code_figures() -> dict | None:
    """The realism figures of the seed half of Warp's own kernels against the measure half (None if unavailable)."""
    try:
        from jit.code.analysis import realism
        from jit.code.analysis import reference

        return realism.figures([k.source for k in reference.kernels("seed")])
    except Exception:  # noqa: BLE001 -- a missing reference only drops one column
        return None


# ---------------------------------------------------------------------------------------------
# figures: each returns a PNG as base64 text


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", facecolor="white")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(height: float, width: float = FIGURE_WIDTH):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _style(ax, grid_axis: str = "x") -> None:
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis=grid_axis, color="#e4e4e4", linewidth=0.8)
    ax.set_axisbelow(True)


def _log_axis(ax) -> None:
    """A log-scaled x axis labelled 200, 500, 1k, 2k ... (no crowded minor labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[:n - 1] + "\u2026"


def barh(items: list[tuple[str, int]], title: str, xlabel: str = "records", colors=None, legend=None) -> str:
    """Horizontal bars, largest on top, each labelled with its value."""
    from matplotlib.ticker import MaxNLocator

    fig = _figure(0.9 + (0.26 if len(items) < 20 else 0.2) * max(len(items), 1))
    ax = fig.add_subplot()
    labels = [_short(label) for label, _ in items][::-1]
    values = [v for _, v in items][::-1]
    bars = ax.barh(labels, values, color=(colors[::-1] if colors else COLORS[0]), height=0.7)
    ax.bar_label(bars, padding=3, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title, loc="left")
    ax.margins(x=0.08, y=0.01)
    _style(ax)
    if legend:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=c, label=label) for label, c in legend], **LEGEND_RIGHT)
    return _png(fig)


def sources_figure(s: Summary) -> str:
    return barh(s.sources.most_common(), f"Records per source ({s.count} records)",
                colors=[COLORS[i % len(COLORS)] for i in range(len(s.sources))])


def categories_figure(s: Summary) -> str:
    color = {source: COLORS[i % len(COLORS)] for i, (source, _) in enumerate(s.sources.most_common())}
    items = sorted(s.categories.items(), key=lambda kv: (-kv[1], kv[0]))
    return barh([(category, n) for (_, category), n in items],
                f"Records per category ({len(items)} categories), coloured by source",
                colors=[color[source] for (source, _), _ in items], legend=list(color.items()))


def lengths_figure(s: Summary) -> str:
    from matplotlib.ticker import MaxNLocator

    names = [name for name in FIELDS if s.lengths.get(name)]
    cols = 4 if len(names) > 3 else max(len(names), 1)
    rows = max(1, math.ceil(len(names) / cols))
    fig = _figure(2.4 * rows + 0.5, FIGURE_WIDTH + 2)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, name in zip(axes, names):
        values = np.asarray(s.lengths[name])
        lo, hi = max(int(values.min()), 1), int(values.max())
        lo, hi = (lo, hi) if hi > lo else (lo / 1.5, lo * 1.5)  # one length: a bin around it
        wide = hi / lo >= 10  # a log axis, unless the lengths span less than a factor of 10
        bins = (np.geomspace if wide else np.linspace)(lo, hi, int(np.clip(2 * np.sqrt(values.size), 5, 25)) + 1)
        ax.hist(values, bins=bins, color=COLORS[0], edgecolor="white", linewidth=0.5)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if wide:
            _log_axis(ax)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
        median = float(np.median(values))
        ax.axvline(median, color=COLORS[3], linewidth=1.2)
        ax.set_title(f"{FIELDS[name]} (median {median:,.0f})", fontsize=10, fontweight="normal")
        ax.set_xlabel(UNIT, fontsize=9)
        _style(ax, "y")
    for ax in axes[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"Length per field ({s.sampled} records measured)", x=0.01, ha="left", fontweight="bold")
    return _png(fig)


def context_figure(s: Summary) -> str:
    fig = _figure(3.6)
    ax = fig.add_subplot()
    for i, pair in enumerate(p for p in PAIRS if s.lengths.get(p)):
        values = np.sort(np.asarray(s.lengths[pair]))
        ax.step(values, np.arange(1, values.size + 1) / values.size, where="post", color=COLORS[i], linewidth=1.8,
                label=f"{pair} ({values.size} records)")
    for c in CONTEXTS:
        ax.axvline(c, color="#999999", linestyle="--", linewidth=1)
        ax.text(c, 0.02, f" {c // 1024}k", color="#555555", fontsize=9)
    _log_axis(ax)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"{UNIT}: Python kernel + helpers + forward code")
    ax.set_ylabel("share of records at most this long")
    ax.set_title("Which training pairs fit a context window", loc="left")
    ax.legend(loc="center right", frameon=False)  # below a cumulative curve: empty
    _style(ax, "both")
    return _png(fig)


def builtins_figure(s: Summary) -> str:
    return barh(s.builtins.most_common(TOP_BUILTINS),
                f"Top {min(TOP_BUILTINS, len(s.builtins))} of {len(s.builtins)} distinct Warp builtins",
                xlabel="records calling it")


def realism_figure(measured: dict, real: dict | None) -> str:
    names = [n for n in REALISM if isinstance(measured.get(n), (int, float))]
    fig = _figure(0.9 + 0.55 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))[::-1]
    height = 0.38 if real else 0.6
    bars = ax.barh(y + (height / 2 if real else 0), [measured[n] for n in names], height, color=COLORS[0],
                   label="this dataset")
    ax.bar_label(bars, fmt="%.3f", padding=3, fontsize=8)
    if real:
        bars = ax.barh(y - height / 2, [real.get(n, 0) for n in names], height, color=COLORS[2],
                       label="real Warp code (seed half)")
        ax.bar_label(bars, fmt="%.3f", padding=3, fontsize=8)
    ax.set_yticks(y, [REALISM[n] for n in names])
    ax.set_xlim(0, 1.1)
    ax.set_title("Realism against the kernels of Warp's examples and tests (measure half)", loc="left")
    ax.legend(**LEGEND_RIGHT)
    _style(ax)
    return _png(fig)


def validation_figure(s: Summary) -> str:
    from matplotlib.ticker import MaxNLocator

    checks = sorted({check for check, _ in s.validation})
    outcomes = sorted({outcome for _, outcome in s.validation})
    fig = _figure(0.9 + 0.5 * max(len(checks), 2))
    ax = fig.add_subplot()
    left = np.zeros(len(checks))
    for i, outcome in enumerate(outcomes):
        values = np.array([s.validation[(check, outcome)] for check in checks], dtype=float)
        bars = ax.barh(checks[::-1], values[::-1], left=left[::-1], color=COLORS[i % len(COLORS)], label=outcome,
                       height=0.6)
        ax.bar_label(bars, labels=[f"{int(v)}" if v else "" for v in values[::-1]], label_type="center",
                     color="white", fontsize=8)
        left += values
    ax.set_xlabel("records")
    ax.set_title("Validation outcome per check", loc="left")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(title="outcome", **LEGEND_RIGHT)
    _style(ax)
    return _png(fig)


def splits_figure(s: Summary) -> str:
    from matplotlib.ticker import MaxNLocator

    order = sorted(s.splits, key=lambda name: (-s.splits[name], name))
    fig = _figure(2.6, 6)
    ax = fig.add_subplot()
    bars = ax.bar(order, [s.splits[name] for name in order], color=COLORS[:len(order)], width=0.6)
    ax.bar_label(bars, labels=[f"{s.splits[n]} ({s.splits[n] / s.count:.0%})" for n in order], padding=3, fontsize=9)
    ax.set_ylabel("records")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(-0.6, max(len(order), 3) - 0.4)  # one or two splits: bars keep their width
    ax.margins(y=0.15)
    ax.set_title("Records per split (from the shard names)", loc="left")
    _style(ax, "y")
    return _png(fig)


# ---------------------------------------------------------------------------------------------
# the page


def _table(headers: list[str] | None, rows: list[list]) -> str:
    def cell(value, tag="td"):
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
        return f'<{tag}{" class=num" if numeric else ""}>{html.escape(text)}</{tag}>'

    head = "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr></thead>" if headers else ""
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table>{head}<tbody>{body}</tbody></table>"


def _img(png: str, caption: str) -> str:
    return (f'<figure><img src="data:image/png;base64,{png}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _share(n: int, total: int) -> str:
    return f"{n / total:.1%}" if total else "-"


def overview(s: Summary, stats: dict) -> str:
    """Numbers at a glance: counts from the records, the run's settings from stats.json."""
    near = stats.get("near_duplicates") or {}
    rows = [["records", s.count], ["splits", ", ".join(f"{k} {v:,}" for k, v in s.splits.most_common())],
            ["sources", len(s.sources)], ["categories", len({c for _, c in s.categories})],
            ["distinct Warp builtins", len(s.builtins)]]
    for key, label in (("source", "made by"), ("seed", "seed"), ("generator_version", "generator version"),
                       ("warp_version", "Warp version"), ("devices", "devices"), ("validate", "validation"),
                       ("format", "shard format"), ("seconds", "seconds to build"), ("pairs_per_second", "pairs/s")):
        if stats.get(key) is not None:
            value = stats[key]
            rows.append([label, ", ".join(value) if isinstance(value, list) else value])
    if near:
        rows.append(["near-duplicate threshold", near.get("threshold") or "off"])
    if s.unreadable:
        rows.append(["unreadable lines in shards", s.unreadable])
    return _table(None, rows)


def sources_table(s: Summary) -> str:
    rows = []
    for source, n in s.sources.most_common():
        lines = np.asarray(s.python_lines[source])
        cats = sum(1 for (src, _) in s.categories if src == source)
        rows.append([source, n, _share(n, s.count), cats, int(np.median(lines)), int(lines.max())])
    return _table(["source", "records", "share", "categories", "median Python lines", "max Python lines"], rows)


def lengths_table(s: Summary, stats: dict) -> tuple[str, str]:
    """Percentiles per field: from stats.json (every record) when it has them, else from the sample."""
    labels = {**FIELDS, **{pair: f"{pair} pair" for pair in PAIRS}}
    figures = dict(stats.get("tokens") or {})
    where = "every record (stats.json)" if figures else f"{s.sampled} evenly spaced records"
    if not figures:
        for name, values in s.lengths.items():
            v = np.asarray(values)
            figures[name] = {"count": int(v.size), "mean": float(v.mean()), "max": int(v.max()),
                             **{f"p{p}": float(np.percentile(v, p)) for p in (50, 90, 95, 99)}}
    rows = []
    for name, label in labels.items():
        row = figures.get(name)
        if row:
            fits = [_fits(row, s.lengths.get(name), c) if name in PAIRS else "" for c in CONTEXTS]
            rows.append([label, row["count"], *(round(row[k]) for k in ("mean", "p50", "p90", "p99")), row["max"],
                         *fits])
    headers = ["field", "records", "mean", "p50", "p90", "p99", "max", *(f"fits {c // 1024}k" for c in CONTEXTS)]
    return _table(headers, rows), where


def _fits(row: dict, sampled: list[int] | None, context: int) -> str:
    """Share of records that fit ``context``: stats.json's figure, else the sample's."""
    share = row.get(f"fits_{context // 1024}k")
    if share is None and sampled:
        share = float(np.mean(np.asarray(sampled) <= context))
    return "" if share is None else f"{100 * share:.1f}%"


def realism_table(measured: dict, real: dict | None) -> str:
    rows = [[label, f"{measured[n]:.4f}", f"{real[n]:.4f}" if real and n in real else "-"]
            for n, label in REALISM.items() if isinstance(measured.get(n), (int, float))]
    return _table(["figure", "this dataset", "real Warp code"], rows)


def rejects_html(s: Summary, stats: dict) -> str:
    parts = []
    rejects = sorted((stats.get("rejects") or {}).items(), key=lambda kv: -kv[1])
    if rejects:
        figure = barh(rejects, "Kernels rejected, by reason", xlabel="kernels", colors=[COLORS[3]] * len(rejects))
        parts.append(_img(figure, "Kernels dropped while building the dataset, by reason (stats.json rejects)."))
        parts.append(_table(["reason", "kernels"], rejects))
    elif stats:
        parts.append("<p>No kernel was rejected while building the dataset.</p>")
    near = stats.get("near_duplicates")
    if near:
        removed = near.get("within_parts", 0) + near.get("across_parts", 0)
        parts.append(_table(["near-duplicates", "value"], [
            ["threshold (Jaccard of normalised-token 4-grams, MinHash)", near.get("threshold") or "off"],
            ["removed while generating", near.get("within_parts", 0)],
            ["removed when merging parts", near.get("across_parts", 0)],
            ["near-duplicate rate (removed / (kept + removed))", _share(removed, s.count + removed)]]))
    excluded = stats.get("excluded")
    if excluded:
        parts.append(f"<p>{excluded.get('records', 0):,} records were dropped as near-duplicates of "
                     f"<code>{html.escape(str(excluded.get('path')))}</code> (--exclude).</p>")
    if s.reasons:
        rows = [[check, reason, n] for (check, reason), n in s.reasons.most_common(10)]
        parts.append("<p>Most frequent validation reasons in the records:</p>"
                     + _table(["check", "reason", "records"], rows))
    return "".join(parts)


STYLE = """
body { font: 16px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222;
       background: #f6f6f4; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; background: white; }
h1 { font-size: 28px; margin: 8px 0 4px; } h2 { font-size: 22px; margin: 40px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; font-weight: 600; }
.lead { color: #555; margin-top: 0; } nav { font-size: 14px; } nav a { margin-right: 14px; color: #3a5ea8; }
table { border-collapse: collapse; margin: 12px 0; font-size: 14px; }
th, td { padding: 4px 12px; border-bottom: 1px solid #e6e6e6; text-align: left; vertical-align: top; }
th { background: #f0f0ee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 16px 0; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: #666; font-size: 13px; margin-top: 4px; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.cols > div { min-width: 0; } .side { font-size: 12px; color: #666; text-transform: uppercase; letter-spacing: .05em; }
pre { font: 12px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; background: #f7f7f9; border: 1px solid #e3e3e8;
      padding: 8px 10px; max-height: 640px; overflow: auto; margin: 4px 0; white-space: pre-wrap;
      overflow-wrap: anywhere; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 90%; }
"""


def render(folder: str) -> tuple[str, int]:
    """The page for dataset ``folder`` and how many figures it holds."""
    check_input(folder)
    stats = read_stats(folder)
    s = summarise(folder)
    from matplotlib import rc_context

    with rc_context({"font.size": 10, "axes.titlesize": 12, "axes.titleweight": "bold", "axes.labelsize": 10,
                     "font.family": "DejaVu Sans"}):
        sections = [(key, title, fn(s, stats)) for key, title, fn in SECTIONS]
    sections = [(key, title, body) for key, title, body in sections if body is not None]
    figures = sum(body.count("<img ") for _, _, body in sections)
    nav = "".join(f'<a href="#{key}">{html.escape(title)}</a>' for key, title, _ in sections)
    body = "".join(f'<section id="{key}"><h2>{html.escape(title)}</h2>{content}</section>'
                   for key, title, content in sections)
    name = os.path.basename(os.path.abspath(folder))
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(name)}: dataset report</title><style>{STYLE}</style></head>"
            f"<body><main><h1>Dataset report: {html.escape(name)}</h1>"
            f'<p class="lead">{s.count:,} records in <code>{html.escape(os.path.abspath(folder))}</code>; '
            f"{len(writers.data_files(folder))} shards.</p><nav>{nav}</nav>{body}</main></body></html>\n")
    return page, figures


def mix_section(s: Summary, stats: dict) -> str:
    return (_img(sources_figure(s), "Records per source: where each kernel comes from.") + sources_table(s)
            + _img(categories_figure(s), "Records per category, coloured by the source that made them."))


def lengths_section(s: Summary, stats: dict) -> str:
    parts = []
    if s.lengths:
        parts.append(_img(lengths_figure(s), f"Length of each code field in {UNIT} (log scale when lengths vary "
                                             f"tenfold), measured on {s.sampled} evenly spaced records; red: median."))
    if any(s.lengths.get(p) for p in PAIRS):
        parts.append(_img(context_figure(s), "Share of records whose Python kernel, helper functions and forward code "
                                             "together fit a context of a given length."))
    table, where = lengths_table(s, stats)
    return "".join(parts) + f"<p>Percentiles in {UNIT} over {where}:</p>" + table


def builtins_section(s: Summary, stats: dict) -> str:
    if not s.builtins:
        return "<p>No builtin calls found.</p>"
    return (_img(builtins_figure(s), "How many records call each Warp builtin (wp.NAME), most used first.")
            + f"<p>{len(s.builtins):,} distinct builtins are called.</p>")


def realism_section(s: Summary, stats: dict) -> str | None:
    measured = stats.get("realism") or {}
    if not any(isinstance(measured.get(n), (int, float)) for n in REALISM):
        return None
    real = real_code_figures()
    note = (f"<p>Measured on {measured.get('records_measured', measured.get('kernels', '?'))} records against "
            f"{measured.get('reference_kernels', '?')} reference kernels. Real Warp code is the target: the "
            "closer, the more the kernels read like code people write (definitions in "
            "<code>jit/code/analysis/realism.py</code>).</p>")
    return _img(realism_figure(measured, real), "The six realism figures.") + note + realism_table(measured, real)


def validation_section(s: Summary, stats: dict) -> str:
    if not s.validation:
        return "<p>No record carries a validation outcome.</p>" + rejects_html(s, stats)
    rows = [[check, outcome, n] for (check, outcome), n in sorted(s.validation.items())]
    return (_img(validation_figure(s), "Validation outcome per check, from each record's validation field.")
            + _table(["check", "outcome", "records"], rows) + rejects_html(s, stats))


def splits_section(s: Summary, stats: dict) -> str:
    expected = stats.get("splits") or {}
    rows = [[name, n, _share(n, s.count), expected.get(name, "-")] for name, n in s.splits.most_common()]
    return (_img(splits_figure(s), "Records per split, counted in the shards.")
            + _table(["split", "records", "share", "stats.json"], rows))


def provenance_section(s: Summary, stats: dict) -> str | None:
    parts = []
    if s.found_by:
        parts.append(_img(barh(s.licences.most_common(), "Real-code records per licence"),
                          "Records of real code (extract or trace) per licence of the code they come from."))
        parts.append(_table(["found by", "records"], s.found_by.most_common()))
        parts.append(_table(["distribution", "records"], s.distributions.most_common()))
    if s.seed_licences:
        parts.append("<p>Mutants are changed copies of real kernels; the kernels they come from:</p>"
                     + _table(["seed kernel distribution: licence", "mutants"], s.seed_licences.most_common()))
    return "".join(parts) or None


def samples_section(s: Summary, stats: dict) -> str:
    blocks = []
    for r in s.samples():
        title = " &middot; ".join(html.escape(str(v)) for v in (r["kernel_name"], r["category"], r["source"],
                                                                 f"id {r['id']}"))
        blocks.append(f'<div class="pair"><h3>{title}</h3><div class="cols">'
                      f'<div><div class="side">Python</div><pre>{html.escape(r["python_source"])}</pre></div>'
                      f'<div><div class="side">{r["side"]}</div><pre>{html.escape(r["code"])}</pre></div></div></div>')
    intro = (f"<p>One record per source in turn, among those with a Python kernel of {READABLE[0]} to {READABLE[1]} "
             "lines (the first ones in the dataset).</p>")
    return intro + ("".join(blocks) or "<p>No record has code to show.</p>")


# ---------------------------------------------------------------------------------------------
# eval results: `jit-synth eval --output` folders inside the dataset folder

EVAL_FILES = ("eval.json", "*/eval.json", "*/*/eval.json")
EVAL_COLUMNS = (("ids", "kernels"), ("predictions", "predictions"), ("exact", "exact %"),
                ("renamed", "exact renamed %"), ("chrf", "chrF"), ("compiles", "compiles %"),
                ("matches", "runs and matches %"))


def eval_results(folder: str) -> list[tuple[str, dict, collections.Counter]]:
    """(folder relative to ``folder``, its eval.json, failures by kind from its predictions.jsonl)
    for each eval result in ``folder`` or up to two levels below it."""
    found = sorted({p for pattern in EVAL_FILES for p in glob.glob(os.path.join(folder, pattern))})
    out = []
    for path in found:
        try:
            with open(path, encoding="utf-8") as f:
                result = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and isinstance(result.get("tiers"), dict) and result.get("task"):
            where = os.path.dirname(path)
            out.append((os.path.relpath(where, folder), result, _failures(os.path.join(where, "predictions.jsonl"))))
    return out


def _failures(path: str) -> collections.Counter:
    """Why predictions failed: timeout, crashed, does not build, runs with a wrong output, ..."""
    kinds = collections.Counter()
    if not os.path.isfile(path):
        return kinds
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if row.get("passed"):
                continue
            error = row.get("error") or ""
            if error.startswith(("timeout", "crashed")):
                kinds[error.split(":", 1)[0]] += 1
            elif row.get("compiles") is False:
                kinds["does not build"] += 1
            elif row.get("mismatch"):
                kinds["runs, wrong output"] += 1
            elif error:
                kinds["builds, does not run"] += 1
            else:
                kinds["text differs (text-only task)"] += 1
    return kinds


def eval_figure(results: list[tuple[str, dict, collections.Counter]]) -> str:
    """pass@1 per result and tier, grouped bars."""
    tiers = [t for t in results[0][1]["tiers"] if t != "all"] + ["all"]
    fig = _figure(1.2 + 0.45 * len(results) * len(tiers) / 2)
    ax = fig.add_subplot()
    height = 0.8 / len(tiers)
    labels = [_short(f"{r['task']} ({where})") for where, r, _ in results]
    for n, tier in enumerate(tiers):
        values = [(r["tiers"].get(tier) or {}).get("pass@1") or 0.0 for _, r, _ in results]
        bars = ax.barh([i + n * height for i in range(len(results))], values, height=height,
                       color=COLORS[n % len(COLORS)], label=tier)
        ax.bar_label(bars, fmt="%.1f", padding=3, fontsize=8)
    ax.set_yticks([i + height * (len(tiers) - 1) / 2 for i in range(len(results))], labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.set_xlabel("pass@1 (%)")
    ax.set_title("pass@1 per eval and tier", loc="left")
    ax.legend(**LEGEND_RIGHT)
    _style(ax)
    return _png(fig)


def eval_section(s: Summary, stats: dict) -> str | None:
    results = eval_results(s.folder) if s.folder else []
    if not results:
        return None
    parts = [_img(eval_figure(results), "pass@1 per eval result and tier: the share of kernels whose prediction "
                                        "passes (runs and matches, compiles, or is exact, by the task's mode).")]
    for where, r, failures in results:
        pass_k = sorted(k for k in r["tiers"].get("all", {}) if k.startswith("pass@"))
        rows = [[tier] + [("-" if f.get(k) is None else f[k]) for k, _ in EVAL_COLUMNS]
                + [("-" if f.get(k) is None else f[k]) for k in pass_k] for tier, f in r["tiers"].items()]
        speed = f", {r['predictions_per_second']} predictions/s" if r.get("predictions_per_second") else ""
        parts.append(f"<h3>{html.escape(r['task'])} <code>{html.escape(where)}</code></h3>"
                     f"<p>{html.escape(r.get('mode', ''))}: {html.escape(r.get('mode_note', ''))}. Predictions: "
                     f"<code>{html.escape(str(r.get('source', '?')))}</code>; fresh inputs from seed "
                     f"{html.escape(str(r.get('seed')))}{speed}.</p>"
                     + _table(["tier"] + [h for _, h in EVAL_COLUMNS] + pass_k, rows))
        if failures:
            parts.append(_table(["why predictions failed", "predictions"], failures.most_common()))
    intro = ("<p>Results of <code>jit-synth eval --output</code> folders found in this folder (to two levels "
             "down): each table is one task's <code>eval.json</code>, failures are counted from its "
             "<code>predictions.jsonl</code>.</p>")
    return intro + "".join(parts)


SECTIONS = (  # anchor, title, body (None: left out)
    ("overview", "Overview", overview),
    ("mix", "Sources and categories", mix_section),
    ("lengths", "Lengths", lengths_section),
    ("builtins", "Builtin coverage", builtins_section),
    ("realism", "Realism", realism_section),
    ("validation", "Validation, rejects and near-duplicates", validation_section),
    ("splits", "Splits", splits_section),
    ("provenance", "Provenance", provenance_section),
    ("samples", "Records side by side", samples_section),
    ("eval", "Evaluation results", eval_section),
)


def check_input(folder: str) -> None:
    """Fail early, before any reading: matplotlib missing, or ``folder`` is not a folder."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ReportError("matplotlib is not installed; pip install 'warp-jit-synth[report]'") from exc
    if not os.path.isdir(folder):
        raise ReportError(f"{folder} is not a folder; give a dataset folder made by jit-synth")


# ---------------------------------------------------------------------------------------------
# command line
