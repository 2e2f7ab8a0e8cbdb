"""How much a set of kernels reads like real Warp code: six figures against a reference set.

The unit is a kernel: a function decorated ``@wp.kernel`` (``@wp.kernel(...)``, ``@warp.kernel``)
anywhere in a source. A source may also hold ``@wp.func`` helpers and ``@wp.struct`` classes;
every figure below is measured over kernel functions only (their bodies, for the counts), so a
generated source and a real kernel are measured the same way. The reference is, by default,
the kernels of the *measure* half of Warp's own examples and tests (``reference``).

- dead names: local names stored in a kernel (every name in a store context: targets of
  ``=``, ``+=``, annotated assignments, tuple unpacking and ``for`` loops; not parameters, not
  ``_``) that the kernel never loads, over all local names stored, pooled over kernels.
- constant tests: tests of ``if``/``elif``/``while`` and of ternaries (``a if c else b``) that
  load no variable (no name other than ``wp``; ``wp.pi`` is not a variable), over all tests.
- generator-style identifiers: distinct identifiers a kernel defines (parameters, locals, loop
  variables) matching ``^[A-Za-z]+[0-9]+$`` (``a1``, ``v12``), over all distinct identifiers
  defined, pooled over kernels.
- builtin JS divergence: Jensen-Shannon divergence (base 2, so 0 = same, 1 = disjoint) between
  the distributions of ``wp.NAME(...)`` call counts in kernel bodies of the two sets.
- nearest-neighbour similarity: for every reference kernel, the best Jaccard similarity of its
  normalised token 4-gram set (``tokens.shingles(tokens.norm_tokens(kernel), 4)``) against any
  kernel of the measured set; the mean over reference kernels.
- idiom coverage: AST nodes are labelled by class name, except calls ``wp.NAME(...)``, labelled
  ``wp.NAME/arity`` (positional + keyword arguments); an idiom is a ``parent>child`` label
  pair inside a kernel body (expression contexts such as ``Load`` are left out); coverage is
  the share of the reference's idiom occurrences whose idiom occurs at least once in the set.

What it leaves out: building or running kernels, and reading datasets (``stats`` feeds
``dataset_figures`` the records).
"""

from __future__ import annotations

import ast
import collections
import functools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from jit.code.analysis.tokens import norm_tokens, shingles

__all__ = ["FIGURES", "Profile", "Sampler", "dataset_figures", "figures", "idiom_pairs", "js_divergence",
           "kernel_defs", "label", "profile", "scan", "wp_call"]

FIGURES = ("dead_names", "constant_tests", "generator_style_identifiers", "builtin_js_divergence",
           "nearest_neighbour_similarity", "idiom_coverage")
GENERATOR_STYLE = re.compile(r"^[A-Za-z]+[0-9]+$")
DATASET_SAMPLE = 5000


# ---------------------------------------------------------------------------------------------
# what the figures look at in one kernel


def _is_kernel_decorator(d: ast.AST) -> bool:
    d = d.func if isinstance(d, ast.Call) else d
    return (isinstance(d, ast.Attribute) and d.attr == "kernel"
            and isinstance(d.value, ast.Name) and d.value.id in ("wp", "warp"))


def kernel_defs(tree: ast.AST) -> list[ast.FunctionDef]:
    """Kernel functions of a parsed source, at any depth, in source order."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
            and any(_is_kernel_decorator(d) for d in n.decorator_list)]


def wp_call(node: ast.AST) -> str | None:
    """NAME for a call ``wp.NAME(...)``, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "wp":
        return node.func.attr
    return None


def label(node: ast.AST) -> str:
    name = wp_call(node)
    if name is not None:
        return f"wp.{name}/{len(node.args) + len(node.keywords)}"
    return type(node).__name__


def scan(fn: ast.FunctionDef) -> tuple[list[ast.AST], list[str]]:
    """Every node inside a function body, and the ``parent>child`` label of every edge there."""
    nodes: list[ast.AST] = []
    pairs: list[str] = []
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        parent = label(node)
        skip = node.func if wp_call(node) is not None else None  # the name is in the label already
        for child in ast.iter_child_nodes(node):
            if child is not skip and not isinstance(child, ast.expr_context):
                pairs.append(f"{parent}>{label(child)}")
                stack.append(child)
    return nodes, pairs


def idiom_pairs(fn: ast.FunctionDef) -> list[str]:
    return scan(fn)[1]


def _params(fn: ast.FunctionDef) -> set[str]:
    return {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}


def _is_constant_test(test: ast.AST) -> bool:
    return not any(isinstance(n, ast.Name) and n.id != "wp" for n in ast.walk(test))


# ---------------------------------------------------------------------------------------------
# a set of kernels, summarised once


@dataclass(slots=True)
class Profile:
    """What the figures need of a set of kernels (counts pooled over kernels)."""

    kernels: int = 0
    unparsable: int = 0        # sources that do not parse (left out)
    stored: int = 0
    dead: int = 0
    tests: int = 0
    constant_tests: int = 0
    defined: int = 0
    generator_style: int = 0
    builtins: collections.Counter = field(default_factory=collections.Counter)
    idioms: collections.Counter = field(default_factory=collections.Counter)
    shingles: list[frozenset] = field(default_factory=list)

    def add(self, fn: ast.FunctionDef, text: str) -> None:
        self.kernels += 1
        nodes, pairs = scan(fn)
        params = _params(fn)
        names = [n for n in nodes if isinstance(n, ast.Name)]
        stored = {n.id for n in names if isinstance(n.ctx, ast.Store)} - params - {"_"}
        loaded = {n.id for n in names if isinstance(n.ctx, ast.Load)}
        self.stored += len(stored)
        self.dead += len(stored - loaded)
        defined = stored | params
        self.defined += len(defined)
        self.generator_style += sum(1 for n in defined if GENERATOR_STYLE.match(n))
        for node in nodes:
            if isinstance(node, (ast.If, ast.While, ast.IfExp)):
                self.tests += 1
                self.constant_tests += _is_constant_test(node.test)
            elif isinstance(node, ast.Call):
                name = wp_call(node)
                if name is not None:
                    self.builtins[name] += 1
        self.idioms.update(pairs)
        self.shingles.append(frozenset(shingles(norm_tokens(text), 4)))


def profile(sources: Iterable[str]) -> Profile:
    """The profile of every kernel in ``sources`` (Python source texts)."""
    prof = Profile()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            prof.unparsable += 1
            continue
        for fn in kernel_defs(tree):
            prof.add(fn, ast.get_source_segment(source, fn) or "")
    return prof


@functools.cache
def measure_profile() -> Profile:
    """The profile of the measure half of the reference kernels (computed once per Warp version
    and version of this code, then read from the disk cache)."""
    import sys

    from jit.code.analysis import cache, reference, tokens

    return cache.cached("realism-measure", cache.key(sys.modules[__name__], reference, tokens),
                        lambda: profile(k.source for k in reference.kernels("measure")))


# ---------------------------------------------------------------------------------------------
# the figures


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def js_divergence(p: collections.Counter, q: collections.Counter) -> float:
    """Jensen-Shannon divergence, base 2, of two count distributions (1.0 when one is empty)."""
    sp, sq = sum(p.values()), sum(q.values())
    if not sp or not sq:
        return 0.0 if sp == sq else 1.0
    total = 0.0
    for key in p.keys() | q.keys():
        a, b = p.get(key, 0) / sp, q.get(key, 0) / sq
        m = (a + b) / 2
        total += (a * math.log2(a / m) if a else 0.0) + (b * math.log2(b / m) if b else 0.0)
    return max(0.0, total / 2)


def nearest_neighbour(reference: Sequence[frozenset], measured: Sequence[frozenset]) -> float:
    """Mean over reference sets of the best Jaccard against any measured set.

    An inverted index (shingle -> ids of measured sets holding it) turns each reference set's
    intersections with all measured sets into one ``bincount`` over the ids it hits.
    """
    if not reference or not measured:
        return 0.0
    index: dict[str, list[int]] = collections.defaultdict(list)
    for i, s in enumerate(measured):
        for sh in s:
            index[sh].append(i)
    postings = {sh: np.asarray(ids, dtype=np.int32) for sh, ids in index.items()}
    sizes = np.fromiter((len(s) for s in measured), dtype=np.int64, count=len(measured))
    best = []
    for ref in reference:
        hits = [postings[sh] for sh in ref if sh in postings]
        if not hits:
            best.append(0.0)
            continue
        inter = np.bincount(np.concatenate(hits), minlength=len(measured))
        best.append(float(np.max(inter / (len(ref) + sizes - inter))))
    return sum(best) / len(best)


def idiom_coverage(reference: collections.Counter, measured: collections.Counter) -> float:
    total = sum(reference.values())
    return sum(n for idiom, n in reference.items() if idiom in measured) / total if total else 0.0


def compare(measured: Profile, reference: Profile) -> dict:
    """The six figures of ``measured`` against ``reference``, with the kernel counts."""
    return {
        "kernels": measured.kernels,
        "reference_kernels": reference.kernels,
        "dead_names": _ratio(measured.dead, measured.stored),
        "constant_tests": _ratio(measured.constant_tests, measured.tests),
        "generator_style_identifiers": _ratio(measured.generator_style, measured.defined),
        "builtin_js_divergence": round(js_divergence(measured.builtins, reference.builtins), 4),
        "nearest_neighbour_similarity": round(nearest_neighbour(reference.shingles, measured.shingles), 4),
        "idiom_coverage": round(idiom_coverage(reference.idioms, measured.idioms), 4),
    }


def figures(sources: Sequence[str], reference: Sequence[str] | None = None) -> dict:
    """The six figures of the kernels in ``sources`` against ``reference`` (default: the measure half)."""
    ref = measure_profile() if reference is None else profile(reference)
    return compare(profile(sources), ref)


# ---------------------------------------------------------------------------------------------
# datasets


class Sampler:
    """Evenly spaced python sources of a record stream of unknown length, at most ``limit``.

    Keeps every ``stride``-th record; when more than ``2 * limit`` are kept, the stride doubles
    and every other kept one is dropped, so memory stays bounded and the choice depends only
    on the records' order.
    """

    def __init__(self, limit: int = DATASET_SAMPLE):
        self.limit, self.stride, self.seen = limit, 1, 0
        self.kept: list[str] = []

    def add(self, record: dict) -> None:
        if self.seen % self.stride == 0:
            self.kept.append(record.get("python_source") or "")
            if len(self.kept) > 2 * self.limit:
                self.kept, self.stride = self.kept[::2], self.stride * 2
        self.seen += 1

    def watch(self, records: Iterable[dict]) -> Iterator[dict]:
        """Pass ``records`` through, sampling them on the way."""
        for record in records:
            self.add(record)
            yield record

    def sources(self) -> list[str]:
        step = max(1, math.ceil(len(self.kept) / self.limit))
        return self.kept[::step]

    def figures(self) -> dict:
        """The figures of the sampled sources, with how many records were seen and measured."""
        sources = self.sources()
        return {**figures(sources), "records": self.seen, "records_measured": len(sources)}


def dataset_figures(records: Iterable[dict], limit: int = DATASET_SAMPLE) -> dict:
    """The figures of dataset records (``python_source``), on at most ``limit`` evenly spaced ones."""
    sampler = Sampler(limit)
    for record in records:
        sampler.add(record)
    return sampler.figures()
