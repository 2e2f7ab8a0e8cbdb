"""Does the generator write kernels that read like real Warp code? The six realism figures.

    python jit/benchmarks/realism.py --count 3000 --seed 7
    python jit/benchmarks/realism.py --count 3000 --seed 7 --sources realistic patterns --json out.json
    python jit/benchmarks/realism.py --dataset DIR

Generates ``--count`` kernels with ``generate(seed, index)`` (code generation only, Warp builds
nothing) or reads a dataset folder's records, and measures them against the *measure* half
of Warp's own examples and tests (``realism`` defines the figures). Next to them stands the
"real code" column: the seed half measured the same way against the measure half. Also
reports the reference corpus (kernels and self-contained kernels per half), distinct
normalised sources and structures (``generator_quality.canonical``), distinct Warp builtins,
and how long each step took. It measures, it does not assert.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from pathlib import Path

from jit.benchmarks.generator_quality import canonical
from jit.code.analysis import realism
from jit.code.analysis import reference
from jit.code.analysis.tokens import norm_tokens, shingles
from jit.code.synthesis.generator import called_builtins, generate


def corpus() -> dict:
    """Kernels, self-contained and generic kernels, and files, per half of the reference."""
    out = {"distribution": reference.distribution()}
    for half in reference.HALVES:
        ks = reference.kernels(half)
        out[half] = {"files": len({k.path for k in ks}), "kernels": len(ks),
                     "self_contained": sum(k.self_contained for k in ks), "generic": sum(k.generic for k in ks)}
    return out


def generated(seed: int, count: int, sources: list[str] | None) -> tuple[list[str], list[str], dict]:
    """Sources and categories of ``count`` generated kernels; items whose generation raised are counted."""
    texts, categories, errors = [], [], collections.Counter()
    for index in range(count):
        try:
            spec = generate(seed, index, sources=sources)
        except Exception as exc:  # a broken category must not hide the figures of the others
            errors[f"{type(exc).__name__}: {str(exc)[:120]}"] += 1
            continue
        texts.append(spec.source)
        categories.append(spec.category)
    return texts, categories, dict(errors.most_common(10))


def diversity(texts: list[str]) -> dict:
    n = max(1, len(texts))
    builtins = {b for t in texts for b in called_builtins(t)}
    return {"distinct_sources_ratio": round(len({canonical(t) for t in texts}) / n, 4),
            "distinct_structure_ratio": round(len({canonical(t, erase_literals=True) for t in texts}) / n, 4),
            "distinct_builtins": len(builtins),
            "near_duplicate_kernels_j90": round(near_duplicate_share(texts, NEAR_DUPLICATE) / n, 4)}


NEAR_DUPLICATE = 0.9  # exact Jaccard of normalised token 4-grams


def near_duplicate_share(texts: list[str], threshold: float) -> int:
    """How many of ``texts`` have another text at exact Jaccard >= ``threshold`` (normalised 4-grams).

    Prefix filtering finds the candidates: ordered rarest first, two sets at Jaccard >= t share
    one of the first ``|A| - ceil(t |A|) + 1`` shingles of either; candidates are then compared exactly.
    """
    sets = [frozenset(shingles(norm_tokens(t), 4)) for t in texts]
    df = collections.Counter(sh for s in sets for sh in s)
    index: dict[str, list[int]] = collections.defaultdict(list)
    flagged = set()
    for i, s in enumerate(sets):
        prefix = sorted(s, key=lambda sh: (df[sh], sh))[: len(s) - math.ceil(threshold * len(s)) + 1]
        candidates = {j for sh in prefix for j in index[sh]}
        for j in candidates:
            other = sets[j]
            if min(len(s), len(other)) >= threshold * max(len(s), len(other)) and \
                    len(s & other) >= threshold * len(s | other):
                flagged.update((i, j))
        for sh in prefix:
            index[sh].append(i)
    return len(flagged)


def render(report: dict) -> str:
    c = report["corpus"]
    lines = [f"reference: {c['distribution']['name']} {c['distribution']['version']} ({c['distribution']['license']}), "
             "warp/examples + warp/tests, split by file"]
    for half in reference.HALVES:
        h = c[half]
        lines.append(f"  {half:<8} {h['files']:>4} files  {h['kernels']:>5} kernels  "
                     f"{h['self_contained']:>5} self-contained  {h['generic']:>4} generic")
    label = report["measured_label"]
    lines += ["", f"{'figure':<30} {label:>12} {'real code':>10}"]
    for name in realism.FIGURES:
        lines.append(f"{name:<30} {report['measured'][name]:>12.4f} {report['real_code'][name]:>10.4f}")
    lines.append(f"{'kernels measured':<30} {report['measured']['kernels']:>12} {report['real_code']['kernels']:>10}")
    for key, value in report.get("diversity", {}).items():
        lines.append(f"{key:<30} {value:>12}")
    if report.get("categories"):
        lines.append(f"{'categories':<30} {len(report['categories']):>12}")
    if report.get("generate_errors"):
        lines += ["", "generate() raised:"] + [f"  {n:>5}  {e}" for e, n in report["generate_errors"].items()]
    lines += ["", "seconds: " + ", ".join(f"{k} {v}" for k, v in report["seconds"].items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sources", nargs="+", default=None, help="kernel sources to generate from (default: the mix)")
    parser.add_argument("--dataset", type=Path, default=None, help="measure this dataset folder instead of generating")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON")
    args = parser.parse_args(argv)

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    report: dict = {"corpus": corpus()}
    seconds["reference"] = round(time.perf_counter() - t0, 2)

    t0 = time.perf_counter()
    ref = realism.measure_profile()
    report["real_code"] = realism.compare(realism.profile(k.source for k in reference.kernels("seed")), ref)
    seconds["real_code_figures"] = round(time.perf_counter() - t0, 2)

    if args.dataset is not None:
        from jit.code.analysis.summary import StatsError
        from jit.code.commands.stats import read_records

        t0 = time.perf_counter()
        try:
            report["measured"] = realism.dataset_figures(read_records(args.dataset))
        except StatsError as exc:
            print(f"realism: error: {exc}", file=sys.stderr)
            return 2
        report["measured_label"] = "dataset"
        report["diversity"] = diversity([r.get("python_source") or "" for r in read_records(args.dataset)])
        seconds["dataset_figures"] = round(time.perf_counter() - t0, 2)
    else:
        report.update(seed=args.seed, count=args.count, sources=args.sources, measured_label="generated")
        t0 = time.perf_counter()
        texts, categories, report["generate_errors"] = generated(args.seed, args.count, args.sources)
        seconds["generate"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        report["measured"] = realism.compare(realism.profile(texts), ref)
        seconds["figures"] = round(time.perf_counter() - t0, 2)
        report["diversity"] = diversity(texts)
        report["categories"] = dict(collections.Counter(categories).most_common())
    report["seconds"] = seconds

    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
