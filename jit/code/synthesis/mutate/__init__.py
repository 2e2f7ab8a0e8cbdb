"""Mutants: real Warp kernels changed only in ways that keep what they compute.

A seed (``seed_list``) is a real kernel from Warp's examples, library code or tests, stripped of
test scaffolding (``scaffolding``), with the launch read from its code (``infer``, ``bounds``)
and checked by running it (``verify``). A mutant (``driver``) changes its precision or vector
width (``retype``), its data layout (``layout``), its index space (``index_space``: a bounds
guard on a real count), its helper functions (``helpers``), its loop forms
(``loops``), where values are computed (``moves``) and what things are called (``names``),
and carries the seed's launch, edited by every mutation that touched a parameter (``launch``).
``unit`` holds one mutant in the making, ``source`` writes it back with the seed's comments,
``syntax`` and ``types`` answer what the AST says, and ``rebuild`` selects the seeds
(``python -m jit.code.synthesis.mutate --rebuild-seeds``).

What it leaves out: swapping operators or builtins, perturbing constants, and adding branches
or loops that gate nothing: each would make a bug or noise, not a variant; and the rewrites
reviewers flagged as a machine's (vectors split into component arrays, flattened grids,
reordered statements).
"""

from jit.code.synthesis.mutate.driver import (
    MAX_SIMILARITY,
    MUTATIONS,
    Mutant,
    MutationError,
    fingerprint,
    mutate,
    similarity,
)
from jit.code.synthesis.mutate.launch import Arg, Launch
from jit.code.synthesis.mutate.seed_list import (
    SEEDS_FILE,
    Seed,
    prepare,
    seed_base,
    seed_launch,
    seed_text,
    seed_weights,
    seeds,
    warm,
)
from jit.code.synthesis.mutate.unit import Unit


def rebuild_seeds(*args, **kwargs):
    from jit.code.synthesis.mutate.rebuild import rebuild_seeds as rebuild

    return rebuild(*args, **kwargs)


def mutate_seed(seed: Seed, rng, suffix: str, layout: bool = True) -> Mutant:
    """A mutant of one listed seed (laid out by black when ``layout``)."""
    return mutate(seed_text(seed), seed.kernel, seed_launch(seed), rng, suffix, seed.dtypes, seed_base(seed), layout)


__all__ = [
    "Arg",
    "Launch",
    "MAX_SIMILARITY",
    "MUTATIONS",
    "Mutant",
    "MutationError",
    "SEEDS_FILE",
    "Seed",
    "Unit",
    "fingerprint",
    "mutate",
    "mutate_seed",
    "prepare",
    "rebuild_seeds",
    "seed_base",
    "seed_launch",
    "seed_text",
    "seed_weights",
    "seeds",
    "similarity",
    "warm",
]
