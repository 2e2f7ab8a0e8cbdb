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
import sys

from jit.code.commands import common as options
from jit.code.commands.common import UsageError

HELP = "generate a dataset of synthetic kernels and their code"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=options.positive("--count"), default=100, help="unique pairs to produce (default 100)")
    p.add_argument("--seed", type=int, default=0, help="run seed; kernel i is a function of (seed, i) (default 0)")
    p.add_argument("--categories", default=None,
                   help="comma-separated kernel categories (default all); see --list-categories")
    p.add_argument("--sources", default=None,
                   help="comma-separated kernel sources (default: the default mix, composed, patterns and "
                        "mutants: kernels with a purpose; realistic and random are opt-in, for builtin coverage); "
                        "see --list-categories")
    p.add_argument("--list-categories", action="store_true",
                   help="print the sources, their share of the default mix and their categories, then exit")
    p.add_argument("--complexity", choices=("small", "medium", "large", "mixed"), default="mixed",
                   help="kernel size (default mixed: small to large)")
    options.add_arguments(p, validate_choices=("none", "compile", "execute"))


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


def make_spec(args):
    """The engine's run for ``jit-synth generate`` (raises ``UsageError``)."""
    from jit.code.synthesis.batch_generator import GeneratedKernels

    categories, sources = _categories(args.categories), _sources(args.sources)
    _mix(categories, sources)
    source = GeneratedKernels(seed=args.seed, categories=categories, sources=sources, complexity=args.complexity)
    return options.run_spec(args, source, count=args.count)


def run(args, parser=None) -> int:
    if args.list_categories:
        print(list_categories())
        return 0
    try:
        spec = make_spec(args)
    except UsageError as exc:
        return options.error(args.prog, exc)
    return options.run(args.prog, args, spec)


def list_categories() -> str:
    """The sources with their share of the default mix, each with its categories and their weights."""
    from jit.code.synthesis.generator import CATEGORIES, DEFAULT_SOURCES, SOURCES

    lines = []
    total = sum(SOURCES[s][0] for s in DEFAULT_SOURCES)
    for source, (share, what) in SOURCES.items():
        where = f"{share / total:.0%} of the default mix" if source in DEFAULT_SOURCES else "opt-in: --sources " + source
        lines.append(f"{source} ({where}): {what}")
        names = sorted(n for n, c in CATEGORIES.items() if c.source == source)
        lines += [f"  {n:24s} weight {CATEGORIES[n].weight:g}" for n in names] or ["  (no categories)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "jit-synth generate") -> int:
    return options.main_of(sys.modules[__name__], prog, argv)
