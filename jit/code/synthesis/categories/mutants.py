"""The mutant category: seeded, type-correct mutations of real kernels from Warp's examples and tests.

A builder draws a seed kernel from ``mutant_seeds.json`` (seed half of the reference corpus,
known to build; larger kernels more often, see ``seed_weights``) and lets ``mutate`` change it (see that module for the mutations). The record's
metadata names the seed kernel (distribution, version, module, file, line, licence) and lists
the mutations applied. Mutants are not run: their launch inputs (meshes, textures, array sizes)
are not modelled, so ``needs_runtime_objects`` is set with that reason. A mutant of a tile kernel
carries its seed's launch block_dim (``launch.block_dim`` in the metadata). What it leaves out:
``complexity`` (a mutant is as large as its seed) and describing the parameters.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

from jit.code.synthesis import mutate as M
from jit.code.analysis import reference
from jit.code.synthesis.categories import register

SEED_DRAWS = 8  # seeds tried before giving up on an item (a draw fails only for tiny seeds)
REASON = "mutant of a real kernel: launch inputs are not modelled"


@dataclass(slots=True)
class Mutant:
    """What ``generator.metadata`` reads of a finished kernel."""

    name: str
    text: str
    meta: dict
    budget: int
    funcs: list[str]
    structs: list[str]
    params: list = field(default_factory=list)
    dims: list[int] = field(default_factory=list)
    block_dim: int | None = None

    def source(self) -> str:
        return self.text


def seed_record(seed: M.Seed) -> dict:
    dist = reference.distribution()
    return {"distribution": dist["name"], "version": dist["version"], "module": seed.module,
            "file": seed.path, "line": seed.line, "name": seed.name, "license": dist["license"]}


def nondeterministic(tree: ast.Module) -> bool:
    """Float atomics (and ``+=`` into arrays, which Warp makes atomic) sum in launch order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (M.wp_attr(node) or "").startswith("atomic_"):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            return True
    return False


def mutant(rng: random.Random, suffix: str) -> Mutant:
    for _ in range(SEED_DRAWS):
        seed = rng.choices(M.seeds(), M.seed_weights())[0]
        try:
            source, name, applied = M.mutate(M.seed_kernel(seed), rng, suffix, seed.dtypes)
        except M.MutationError:
            continue
        tree = ast.parse(source)
        kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n is not kernel]
        structs = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        meta = {"needs_runtime_objects": True, "reason": REASON,
                "deterministic": not nondeterministic(tree), "differentiable": True,
                "record": {"seed_kernel": seed_record(seed), "mutations": applied}}
        statements = sum(isinstance(n, ast.stmt) for n in ast.walk(kernel)) - 1
        return Mutant(name, source, meta, statements, funcs, structs, block_dim=seed.block_dim)
    raise M.MutationError("-", f"no mutable seed in {SEED_DRAWS} draws")


@register("mutant", 1.0, source="mutants")
def build_mutant(rng: random.Random, name: str, suffix: str, complexity) -> Mutant:
    return mutant(rng, suffix)
