"""The registry of kernel categories: name -> (builder, weight, source).

Each module of this package registers its categories with ``@register(name, weight, source)``;
a builder takes ``(rng, name, suffix, complexity)`` and returns a finished ``KernelBuilder`` (or
an object with the same ``source()``, ``params``, ``dims``, ``block_dim``, ``budget``, ``funcs``,
``structs`` and ``meta``). ``meta["record"]``, when present, is merged into the record's metadata.

A category belongs to one *source*, the family of kernels it comes from (``SOURCES``): the
default mix draws a source by its share, then a category of that source by its weight.
Importing the package imports every module, so the registry is complete. What it leaves
out: choosing a category for an item (``generator``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Category:
    build: Callable  # (rng, kernel name, suffix, complexity) -> KernelBuilder
    weight: float = 1.0  # within its source
    source: str = "random"


# source -> (share of the default mix, what it is)
SOURCES: dict[str, tuple[float, str]] = {
    "realistic": (0.30, "data-flow directed kernels named by role, builtins drawn from a census of real Warp code"),
    "patterns": (0.20, "skeletons of what simulation and graphics kernels do, randomised in their details"),
    "mutants": (0.35, "type-correct mutations of real kernels from Warp's own examples and tests"),
    "random": (0.15, "the typed random-program generator, for coverage of Warp's builtins"),
}

CATEGORIES: dict[str, Category] = {}


def register(name: str, weight: float = 1.0, source: str = "random"):
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r} for category {name!r}")

    def wrap(fn):
        CATEGORIES[name] = Category(fn, weight, source)
        return fn
    return wrap


# each module registers its categories on import (order = registry order)
from jit.code.synthesis.categories import basic, rigid, composite, memory, tile, random_noise, queries, realistic, patterns, patterns_grid, patterns_solid, patterns_geometry, mutants  # noqa: E402,F401
