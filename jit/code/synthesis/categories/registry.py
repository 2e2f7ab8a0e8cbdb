"""The registry of kernel categories and the sources they belong to (see the package's docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Category:
    build: Callable  # (rng, kernel name, suffix, complexity) -> KernelBuilder
    weight: float = 1.0  # within its source
    source: str = "random"


# source -> (its share of a mix that draws it, what it is)
SOURCES: dict[str, tuple[float, str]] = {
    "realistic": (0.30, "data-flow directed kernels named by role, builtins drawn from a census of real Warp code"),
    "patterns": (0.45, "skeletons of what simulation, graphics, tile and property-check kernels do, randomised "
                       "in their details"),
    # a seed has few meaning-keeping mutants far enough from each other: a larger share is mostly redrawn
    "mutants": (0.20, "mutations that keep the meaning of real kernels from Warp's examples, library and tests"),
    "random": (0.15, "the typed random-program generator, for coverage of Warp's builtins"),
    "composed": (0.35, "kernels composed from pieces with a purpose (integrators, forces, stencils, ...)"),
}

# the sources a run draws from when it names none: kernels with a purpose only; the others are
# opt-in (--sources realistic,random), kept for builtin coverage
DEFAULT_SOURCES: tuple[str, ...] = ("composed", "patterns", "mutants")

CATEGORIES: dict[str, Category] = {}


def register(name: str, weight: float = 1.0, source: str = "random"):
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r} for category {name!r}")

    def wrap(fn):
        if name in CATEGORIES:  # a second family of one name would silently replace the first
            raise ValueError(f"category {name!r} is registered twice")
        CATEGORIES[name] = Category(fn, weight, source)
        return fn
    return wrap
