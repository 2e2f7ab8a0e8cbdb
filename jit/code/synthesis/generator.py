"""``generate(seed, index)`` -> one random Warp kernel as a self-contained Python source.

Csmith/YARPGen in spirit: each item draws from its own ``random.Random(f"{seed}:{index}:{attempt}")``,
picks a category from the weighted registry (``categories``: each source's share of the mix,
split among its categories), and lets that category's builder compose the kernel from the typed statement and expression builders (``stmt``,
``expr``). Every module-level name in a source (kernel, helpers, structs) ends in the item's
8-hex hash, so many sources can share one Warp module. ``attempt`` lets the pipeline draw a
new kernel for the same index when Warp rejects one.

What it leaves out: building and validating the kernel (the pipeline does that with
``ir_extractor``), and executing it.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from jit.code.analysis.builtins import body_nodes, called_builtins, called_operators, warp_builtins  # noqa: F401
from jit.code.synthesis.categories import CATEGORIES, DEFAULT_SOURCES, SOURCES, Category
from jit.code.synthesis.docs import BRIEF, american, brief_comments
from jit.code.synthesis.layout import AIRY, SUBSCRIPT_SHARE, format_source, paragraphs, subscript_arrays
from jit.code.synthesis.stmt import COMPLEXITY, KernelBuilder, Param

__all__ = ["CATEGORIES", "DEFAULT_SOURCES", "SOURCES", "Category", "KernelSpec", "generate", "called_builtins", "warp_builtins"]

GENERATOR_VERSION = 48  # bumped whenever the same (seed, index) may give a different kernel


@dataclass(slots=True)
class KernelSpec:
    name: str
    category: str
    source: str
    seed: int
    index: int
    attempt: int
    metadata: dict = field(default_factory=dict)


def item_hash(seed: int, index: int, attempt: int) -> str:
    return hashlib.sha1(f"{seed}:{index}:{attempt}".encode()).hexdigest()[:8]


def generate(seed: int, index: int, categories: Sequence[str] | None = None,
             complexity: str | int = "medium", attempt: int = 0,
             sources: Sequence[str] | None = None) -> KernelSpec:
    """The kernel of item ``index`` of run ``seed``; the same arguments always give the same source."""
    if not isinstance(complexity, int) and complexity not in (*COMPLEXITY, "mixed"):  # not every builder reads it
        raise ValueError(f"unknown complexity {complexity!r}; choose from small, medium, large, mixed or an int")
    names, weights = mix(categories, sources)
    rng = random.Random(f"{seed}:{index}:{attempt}")
    category = rng.choices(names, weights)[0]
    suffix = item_hash(seed, index, attempt)
    name = f"{category}_{suffix}"
    for _ in range(REDRAWS):
        kb: KernelBuilder = CATEGORIES[category].build(rng, name, suffix, complexity)
        source = kb.source()
        if CATEGORIES[category].source == "mutants" or not too_small(source):
            break
    name = kb.name  # a builder may name its kernel by what it does (still ending in the suffix)
    synthesized = CATEGORIES[category].source != "mutants"  # mutants keep their seed's text
    if synthesized:
        if rng.random() < SUBSCRIPT_SHARE:
            source = subscript_arrays(source)
        source, name = american(source), american(name)
        if rng.random() < BRIEF:
            source = brief_comments(source)
        if rng.random() < AIRY:
            source = paragraphs(source)
    source = format_source(source)
    meta = metadata(kb, source, category, seed, index, attempt, complexity)
    if synthesized and "purpose" in meta:
        meta["purpose"] = american(meta["purpose"])
    return KernelSpec(name, category, source, seed, index, attempt, meta)


REDRAWS = 4  # builds of a synthesized kernel before a too-small one is kept anyway
MIN_STATEMENTS = 3  # in a synthesized kernel's body, ``wp.tid()`` included


def too_small(source: str) -> bool:
    """A synthesized kernel that dead-code elimination left as a bare copy or a single call: the
    builder draws again (from the same per-item random source, so the item stays reproducible).
    Mutants are exempt: a mutant is as small as its real seed."""
    kernel = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)
                  and any("kernel" in ast.unparse(d) for d in node.decorator_list))
    statements = (node for node in ast.walk(kernel) if isinstance(node, ast.stmt))
    # counted only as far as the answer needs: the walk stops at the kernel's third statement
    return len(list(itertools.islice(statements, MIN_STATEMENTS + 1))) - 1 < MIN_STATEMENTS


def choosable(categories: Sequence[str] | None, sources: Sequence[str] | None = None) -> list[str]:
    """The categories an item may be drawn from: those named, else those of the named sources, else
    those of the default mix (``DEFAULT_SOURCES``)."""
    if sources is not None:
        wanted = list(dict.fromkeys(sources))
        unknown = [s for s in wanted if s not in SOURCES]
        if unknown or not wanted:
            raise ValueError(f"unknown sources {unknown or wanted}; valid choices: {', '.join(SOURCES)}")
    if categories is None:
        wanted = DEFAULT_SOURCES if sources is None else sources
        return [n for n, c in CATEGORIES.items() if c.source in wanted]
    names = list(dict.fromkeys(categories))
    unknown = [n for n in names if n not in CATEGORIES]
    if unknown or not names:
        raise ValueError(f"unknown categories {unknown or names}; valid choices: {', '.join(CATEGORIES)}")
    return [n for n in names if sources is None or CATEGORIES[n].source in sources]


def mix(categories: Sequence[str] | None, sources: Sequence[str] | None = None) -> tuple[list[str], list[float]]:
    """Categories and their draw weights: each source gets its share of the mix, split among
    its chosen categories by their weights (a source with no chosen category gives its share away)."""
    names = choosable(categories, sources)
    if not names:
        raise ValueError(f"no category of sources {', '.join(sources or [])} among {', '.join(categories or [])}")
    totals: dict[str, float] = {}
    for n in names:
        totals[CATEGORIES[n].source] = totals.get(CATEGORIES[n].source, 0.0) + CATEGORIES[n].weight
    weights = [SOURCES[CATEGORIES[n].source][0] * CATEGORIES[n].weight / totals[CATEGORIES[n].source] for n in names]
    return names, weights


# ---------------------------------------------------------------------------------------------
# metadata


def metadata(kb: KernelBuilder, source: str, category: str, seed: int, index: int, attempt: int,
             complexity) -> dict:
    needs = bool(kb.meta.get("needs_runtime_objects"))
    reason = kb.meta.get("reason")
    recipes = kb.meta.get("objects", {})  # handle name -> how its runtime object is built
    handles = [p.name for p in kb.params if p.kind == "handle"]
    built = bool(handles) and all(h in recipes for h in handles)
    launch = {
        "dim": list(kb.dims),
        "args": [arg_info(p, kb.dims, recipes.get(p.name)) for p in kb.params],
        "runnable": not needs or built,
        "reason": None if built else reason,
    }
    if kb.block_dim is not None:
        launch["block_dim"] = kb.block_dim
        launch["tiled"] = True
    outputs = [p for p in kb.params if p.kind == "array" and p.role in ("out", "inout")]
    nodes = body_nodes(source)
    meta = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "index": index,
        "attempt": attempt,
        "source": CATEGORIES[category].source,
        "category": category,
        "complexity": complexity,
        "statements": kb.budget,
        "lines": source.count("\n"),
        "helpers": len(kb.funcs),
        "structs": len(kb.structs),
        "builtins": called_builtins(nodes),
        "operators": called_operators(nodes),
        "launch": launch,
        "differentiable_outputs": [p.name for p in outputs
                                   if p.dtype.kind not in ("struct", "bool") and p.dtype.is_float
                                   and kb.meta.get("differentiable", True)],
        "deterministic": bool(kb.meta.get("deterministic", True)),
        "needs_runtime_objects": needs,
        "needs_runtime_objects_reason": reason,
    }
    meta.update(kb.meta.get("record", {}))
    return meta


def arg_info(p: Param, dims: list[int], build: dict | None = None) -> dict:
    info = {"name": p.name, "kind": p.kind, "dtype": p.dtype.name, "role": p.role}
    if p.kind == "array":
        info["shape"] = list(p.shape) if p.shape is not None else list(dims[: p.ndim])
    lo, hi = p.value_range
    if p.dtype.kind == "uint" or p.dtype.scalar == "uint32":
        lo = max(0.0, lo)
    info["range"] = [lo, hi]
    if build:
        info["build"] = dict(build)
    if p.dtype.kind == "struct":
        info["fields"] = struct_fields(p.dtype)
        if getattr(p, "field_ranges", None):
            info["field_ranges"] = {n: list(r) for n, r in p.field_ranges.items()}
    return info


def struct_fields(t) -> dict:
    """Field name -> Warp dtype name, or for a nested struct {"dtype": name, "fields": {...}}."""
    return {n: ({"dtype": ft.name, "fields": struct_fields(ft)} if ft.kind == "struct" else ft.name)
            for n, ft in t.fields}


