"""Generate a dataset of synthetic Warp kernels paired with the C++/CUDA Warp makes of them.

Writes DIR/data/train-NNNNN-of-NNNNN.jsonl (or .parquet), DIR/stats.json and a dataset card
DIR/README.md that `datasets.load_dataset(DIR)` reads. The same command always gives the
same records, whatever --workers; an interrupted run continues with --resume. Duplicates are
dropped, and so are near-duplicates: kernels whose normalised tokens nearly match an earlier kept
kernel's (--near-dup-threshold).

examples:
  jit-synth generate --count 1000 --output out/ds
  python jit/code/synthesis/pipeline.py --count 200 --device cuda --output out/cuda --validate none
  jit-synth generate --count 100000 --output out/big --workers 8 --resume
  jit-synth generate --count 1000 --output out/ds --near-dup-threshold 0.8
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time

from jit.code.dataset.records import DEVICE_CHOICES



class UsageError(Exception):
    """Bad command-line input: reported in one line with exit code 2."""


def _positive(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be at least 1, got {value}")
        return value
    return parse


def _threshold(text: str) -> float:
    """--near-dup-threshold: a Jaccard similarity in [0, 1]; 0 or "off" switches the control off."""
    if text.strip().lower() == "off":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--near-dup-threshold takes a number in [0, 1] or off, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"--near-dup-threshold must be in [0, 1] (0 or off: no control), got {value:g}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=_positive("--count"), default=100, help="unique pairs to produce (default 100)")
    p.add_argument("--device", choices=sorted(DEVICE_CHOICES), default="both", help="code to extract (default both)")
    p.add_argument("--output", "-o", default="out/dataset", help="dataset folder (default out/dataset)")
    p.add_argument("--seed", type=int, default=0, help="run seed; kernel i is a function of (seed, i) (default 0)")
    p.add_argument("--categories", default=None,
                   help="comma-separated kernel categories (default all); see --list-categories")
    p.add_argument("--sources", default=None,
                   help="comma-separated kernel sources (default all, in the default mix): realistic, patterns, "
                        "mutants, random; see --list-categories")
    p.add_argument("--list-categories", action="store_true",
                   help="print the sources, their share of the default mix and their categories, then exit")
    p.add_argument("--complexity", choices=("small", "medium", "large", "mixed"), default="mixed",
                   help="kernel size (default mixed: small to large)")
    p.add_argument("--workers", type=_positive("--workers"), default=os.cpu_count() or 1,
                   help="worker processes (default: all cores)")
    p.add_argument("--shard-size", type=_positive("--shard-size"), default=1000, help="records per shard (default 1000)")
    p.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                   help="shard format (parquet needs: pip install 'warp-jit-synth[parquet]')")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true", help="continue an interrupted run in --output")
    group.add_argument("--overwrite", action="store_true", help="replace an existing dataset in --output")
    p.add_argument("--validate", choices=("none", "compile", "execute"), default="compile",
                   help="none: codegen only; compile: compile every pair for CPU (clang) and CUDA (NVRTC, "
                        "no GPU needed); execute: also run on the CPU and check gradients (default compile)")
    p.add_argument("--near-dup-threshold", type=_threshold, default=0.9, metavar="J",
                   help="drop a kernel when the Jaccard similarity of its normalised-token 4-gram set with an earlier "
                        "kept kernel's is J or more (MinHash estimate); 0 or off keeps near-duplicates (exact "
                        "duplicates are always dropped) (default 0.9)")
    p.add_argument("--arch", default="90", help="CUDA arch(s) for NVRTC, comma-separated (default 90)")
    p.add_argument("--emit-ptx", action="store_true", help="add the PTX of each kernel (field cuda_ptx)")
    p.add_argument("--no-backward", action="store_true", help="skip backward (adjoint) code")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: worker processes on this machine; ray: shard tasks on a Ray cluster "
                        "(pip install 'warp-jit-synth[ray]'; --output must be on storage every node sees)")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster to join (default: RAY_ADDRESS or a running cluster, else start a local one)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.set_defaults(run=run_command)


def _categories(text: str | None) -> tuple[str, ...] | None:
    from jit.code.synthesis.generator import CATEGORIES

    return _choices(text, sorted(CATEGORIES), "category")


def _sources(text: str | None) -> tuple[str, ...] | None:
    from jit.code.synthesis.generator import SOURCES

    return _choices(text, list(SOURCES), "source")


def _choices(text: str | None, known: list[str], what: str) -> tuple[str, ...] | None:
    """A comma-separated list of known names (None when not given)."""
    if not text:
        return None
    names = tuple(c.strip() for c in text.split(",") if c.strip())
    unknown = [c for c in names if c not in known]
    if unknown or not names:
        raise UsageError(f"unknown {what} {', '.join(unknown) or repr(text)}; choose from: {', '.join(known)}")
    return names


def _mix(categories, sources) -> None:
    """Refuse a --categories/--sources combination that leaves nothing to draw from."""
    from jit.code.synthesis.generator import mix

    try:
        mix(categories, sources)
    except ValueError as exc:
        raise UsageError(f"{exc}; drop --sources or pick categories of those sources (see --list-categories)") from None


def _archs(text: str) -> tuple[int, ...]:
    try:
        archs = tuple(int(a) for a in text.split(",") if a.strip())
    except ValueError:
        raise UsageError(f"--arch takes numbers such as 90 or 80,90, got {text!r}") from None
    if not archs or any(a < 50 for a in archs):
        raise UsageError(f"--arch takes compute capabilities such as 75, 80, 90, got {text!r}")
    return archs


def make_spec(args):
    from jit.code.synthesis.batch_generator import RunSpec

    devices = DEVICE_CHOICES[args.device]
    if getattr(args, "executor", "local") == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'warp-jit-synth[ray]'") from None
    if args.emit_ptx and "cuda" not in devices:
        raise UsageError("--emit-ptx needs CUDA code: use --device cuda or --device both")
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("--format parquet needs pyarrow: pip install 'warp-jit-synth[parquet]'") from None
    categories, sources = _categories(args.categories), _sources(args.sources)
    _mix(categories, sources)
    return RunSpec(
        out=os.path.abspath(args.output), count=args.count, seed=args.seed, devices=devices,
        categories=categories, sources=sources, complexity=args.complexity, shard_size=args.shard_size,
        backward=not args.no_backward, validate=args.validate, archs=_archs(args.arch),
        emit_ptx=args.emit_ptx, fmt=args.format, near_dup_threshold=args.near_dup_threshold,
    )


def prepare_output(spec, resume: bool, overwrite: bool) -> None:
    """Check the output folder before any work; never touch an existing dataset unless asked."""
    from jit.code.dataset import writers

    out = spec.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--output {out} is a file; give a folder")
    existing = os.path.isdir(out) and bool(os.listdir(out))
    run_file = os.path.join(out, writers.WORK, "run.json")
    if existing and not (resume or overwrite):
        raise UsageError(f"--output {out} is not empty; add --resume to continue it or --overwrite to replace it")
    if resume and existing:
        if not os.path.exists(run_file):
            raise UsageError(f"--resume: {out} was not made by jit-synth generate (no {writers.WORK}/run.json)")
        with open(run_file, encoding="utf-8") as f:
            previous = json.load(f)
        if previous.get("identity") != spec.identity():
            raise UsageError(f"--resume: {out} was made with other options ({_diff(previous.get('identity', {}), spec.identity())}); "
                             "repeat the original command or use --overwrite")
    ancestor = out
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise UsageError(f"--output {out} is not writable: {ancestor} is a file; give a folder")
    if not os.access(ancestor, os.W_OK):
        raise UsageError(f"--output {out} is not writable (no write permission on {ancestor})")
    if overwrite and existing:
        if not resume and not (os.path.exists(run_file) or writers.data_files(out)):
            raise UsageError(f"--overwrite: {out} does not look like a jit-synth dataset; refusing to delete it")
        import shutil

        shutil.rmtree(out)
    try:
        os.makedirs(os.path.join(out, writers.WORK), exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--output {out} is not writable: {exc.strerror}") from None
    writers.write_json(run_file, {"identity": spec.identity()})


def _diff(a: dict, b: dict) -> str:
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys)


class Progress:
    """tqdm on a terminal; plain log lines every few seconds otherwise."""

    def __init__(self, total: int, quiet: bool):
        self.total, self.quiet = total, quiet
        self.pairs = self.rejects = 0
        self.t0 = self.last = time.perf_counter()
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="pair", dynamic_ncols=True, smoothing=0.1)

    def update(self, pairs: int, rejects: int) -> None:
        self.pairs += pairs
        self.rejects += rejects
        if self.bar is not None:
            self.bar.update(max(0, min(pairs, self.total - self.bar.n)))
            self.bar.set_postfix(rejects=self.rejects, refresh=False)
        elif not self.quiet and time.perf_counter() - self.last >= 5:
            self.last = time.perf_counter()
            rate = self.pairs / max(self.last - self.t0, 1e-9)
            print(f"[jit-synth] {min(self.pairs, self.total)}/{self.total} pairs, {rate:.1f} pairs/s, {self.rejects} rejects",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def generate_dataset(spec, workers: int, quiet: bool = True, command: str = "", executor: str = "local",
                     ray_address: str | None = None) -> dict:
    """Run (or finish) a generation run into ``spec.out``; returns the stats written to stats.json."""
    from jit.code.synthesis import batch_generator as bg
    from jit.code.dataset import writers

    t0 = time.perf_counter()
    done = writers.finished_parts(spec.out)
    resumed = sorted(done)
    progress = Progress(spec.count, quiet)
    progress.update(sum(d["records"] for d in done.values()), 0)
    parts = bg.plan(spec.count, spec.shard_size)
    merge = bg.Merge(spec)
    try:
        while True:
            todo = [p for p in parts if p.number not in done]
            if executor == "ray":
                from jit.code.dataset import ray_executor

                results = ray_executor.run_parts(spec, todo, ray_address, progress.update)
            else:
                results = bg.run_parts(spec, todo, workers, progress.update)
            for result in results:
                done[result["part"]] = result
            unique = merge.update(parts)
            if unique >= spec.count:
                break
            parts += bg.extend(parts, spec.count - unique, spec.shard_size)
    finally:
        progress.close()
    writers.write_shards(spec.out, merge.records(spec.count), spec.count, spec.shard_size, spec.fmt)
    writers.remove_scratch(spec.out)
    seconds = time.perf_counter() - t0
    stats = summarise(spec, [done[p.number] for p in parts], merge, seconds, resumed, workers)
    writers.write_json(os.path.join(spec.out, "stats.json"), stats)
    writers.write_card(spec.out, stats, spec.fmt, command)
    return stats


def summarise(spec, part_stats: list[dict], merge, seconds: float, resumed: list[int], workers: int) -> dict:
    from collections import Counter

    from jit.code.extraction import warp_backend as wb
    from jit.code.dataset import dedup, writers
    from jit.code.synthesis import realism
    from jit.code.synthesis.generator import GENERATOR_VERSION

    per_category: Counter = Counter()
    per_source: Counter = Counter()
    lines = Counter()
    builtins: set[str] = set()
    n = 0
    validation: Counter = Counter()
    sample = realism.Sampler()
    for record in sample.watch(writers.read_dataset(spec.out)):
        n += 1
        per_category[record["category"]] += 1
        meta = record.get("metadata", {})
        per_source[meta.get("source", "random")] += 1
        lines["python"] += meta.get("python_lines", 0)
        for d in spec.devices:
            lines[f"{d}_forward"] += meta.get(f"{d}_forward_lines", 0)
        builtins.update(meta.get("builtins", []))
        for key, value in sorted(record.get("validation", {}).items()):
            validation[f"{key}={value}"] += 1
    rejects: Counter = Counter()
    for s in part_stats:
        rejects.update(s["rejects"])
    if merge.duplicates:
        rejects["duplicate across parts"] += merge.duplicates
    if merge.near_duplicates:
        rejects["near-duplicate across parts"] += merge.near_duplicates
    new_records = sum(s["records"] for s in part_stats if s["part"] not in resumed)
    return {
        "count": n,
        "per_source": dict(sorted(per_source.items())),
        "per_category": dict(sorted(per_category.items())),
        "rejects": dict(sorted(rejects.items())),
        "mean_lines": {k: round(v / max(n, 1), 2) for k, v in sorted(lines.items())},
        "distinct_builtins": len(builtins),
        "near_duplicates": {"threshold": spec.near_dup_threshold, "within_parts": rejects["near-duplicate"],
                            "across_parts": merge.near_duplicates, "shingle": dedup.SHINGLE, "num_perm": dedup.NUM_PERM},
        "realism": sample.figures(),
        "validation": dict(sorted(validation.items())),
        "pairs_per_second": round(new_records / seconds, 2) if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "workers": workers,
        "resumed_parts": len(resumed),
        "warp_version": wb.warp_version(),
        "generator_version": GENERATOR_VERSION,
        "seed": spec.seed,
        "devices": list(spec.devices),
        "validate": spec.validate,
        "format": spec.fmt,
        "shard_size": spec.shard_size,
    }


def run_command(args, parser=None) -> int:
    if args.list_categories:
        print(list_categories())
        return 0
    try:
        spec = make_spec(args)
        prepare_output(spec, args.resume, args.overwrite)
    except UsageError as exc:
        print(f"jit-synth generate: error: {exc}", file=sys.stderr)
        return 2
    command = "jit-synth generate " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []) or [])
    from jit.code.dataset.ray_executor import ClusterError

    try:
        stats = generate_dataset(spec, args.workers, args.quiet, command.strip(), args.executor, args.ray_address)
    except ClusterError as exc:
        print(f"jit-synth generate: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        rejected = sum(stats["rejects"].values())
        print(f"wrote {stats['count']} pairs to {spec.out}/data ({stats['pairs_per_second']} pairs/s, "
              f"{rejected} rejected: {stats['rejects']})")
    return 0


def list_categories() -> str:
    """The sources with their share of the default mix, each with its categories and their weights."""
    from jit.code.synthesis.generator import CATEGORIES, SOURCES

    lines = []
    for source, (share, what) in SOURCES.items():
        lines.append(f"{source} ({share:.0%} of the default mix): {what}")
        names = sorted(n for n, c in CATEGORIES.items() if c.source == source)
        lines += [f"  {n:24s} weight {CATEGORIES[n].weight:g}" for n in names] or ["  (no categories)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from jit import cli

    return cli.run_command("pipeline.py", sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
