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

from jit.code.synthesis.categories.registry import CATEGORIES, DEFAULT_SOURCES, SOURCES, Category, register  # noqa: F401

# each module registers its categories on import (order = registry order)
from jit.code.synthesis.categories import basic, rigid, composite, memory, tile, random_noise, queries, realistic, patterns, patterns_particles, patterns_fluids, patterns_reductions, patterns_grid, patterns_rays, patterns_solid, patterns_rigid, patterns_cloth, patterns_geometry, patterns_tiles, patterns_checks, patterns_checks_geometry, patterns_checks_math, mutants, composed_particles, composed_fields, composed_solids  # noqa: F401
