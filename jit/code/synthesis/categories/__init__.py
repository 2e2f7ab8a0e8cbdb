"""The registry of kernel categories: name -> (builder, weight).

Each module of this package registers its categories with ``@register(name, weight)``; a
builder takes ``(rng, name, suffix, complexity)`` and returns a finished ``KernelBuilder``.
Importing the package imports every module, so the registry is complete. What it leaves
out: choosing a category for an item (``generator``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Category:
    build: Callable  # (rng, kernel name, suffix, complexity) -> KernelBuilder
    weight: float = 1.0


CATEGORIES: dict[str, Category] = {}


def register(name: str, weight: float = 1.0):
    def wrap(fn):
        CATEGORIES[name] = Category(fn, weight)
        return fn
    return wrap


# each module registers its categories on import (order = registry order)
from jit.code.synthesis.categories import basic, rigid, composite, memory, tile, random_noise, queries  # noqa: E402,F401
