"""The mutant category: real kernels from Warp's examples, library code and tests, changed in ways
that keep what they compute.

A builder draws a seed from ``mutant_seeds.json`` (by its weight, see ``mutate.rebuild``) and
lets ``mutate`` change it. The record names the seed kernel (distribution, version, module,
file, line, licence), lists the mutations applied, and describes the launch the seed's code
implies, carried through the mutations: grid, and per parameter its shape, value range and
role, in the form every builder gives ``metadata["launch"]``, so the execute check runs
mutants like any other kernel. A seed that needs a mesh, hash grid, BVH or volume gives
mutants marked ``needs_runtime_objects`` with the reason. ``purpose`` is the seed author's
docstring, when there is one, else what the kernel's name and launch say it computes. What it leaves out: ``complexity`` (a mutant is as large as its
seed).
"""

from __future__ import annotations

import ast
import functools
import random
from dataclasses import dataclass, field

from jit.code.analysis import reference
from jit.code.analysis.purpose import purpose_of
from jit.code.synthesis import mutate as M
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.mutate import launch as L
from jit.code.synthesis.mutate.infer import differentiable
from jit.code.synthesis.mutate.syntax import walk

SEED_DRAWS = 32  # seeds tried before giving up on an item (about half the draws cannot get far enough from their seed)


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


@functools.cache
def distribution() -> tuple[str, str, str]:
    """Name, version and licence of the seeds' distribution: its installed metadata is read once
    per process (reading it for every mutant was 40% of building the mutant's record)."""
    dist = reference.distribution()
    return dist["name"], dist["version"], dist["license"]


def seed_record(seed: M.Seed) -> dict:
    name, version, license_ = distribution()
    return {
        "distribution": name,
        "version": version,
        "module": seed.module,
        "file": seed.path,
        "line": seed.line,
        "name": seed.name,
        "license": license_,
    }


# how a mutation changes what a reader is told, from its kind and detail (the others change
# nothing a purpose says, or show in the launch: a layout's new arrays, a guard's count)
def change(kind: str, detail: str) -> str | None:
    if kind == "precision":
        return f"in {detail}"
    if kind == "width":
        return f"on {detail.split('->')[-1]} vectors"
    return None


MIN_COMMENT_WORDS = 5  # a shorter leading comment names the first line ("output tile index")
ACRONYMS = {"bsr", "csr", "sph", "fft", "cfl", "bvh", "fem", "pic", "apic", "mpm", "sdf", "rgb", "aabb", "nccl", "fdtd"}
MAX_LISTED = 4


def authored(mutant: M.Mutant) -> str | None:
    """What the seed's author said the kernel does: its docstring, or a leading comment long
    enough to be about the kernel rather than its first line."""
    said = purpose_of(mutant.source, mutant.kernel_name)
    if not said:
        return None
    kernel = mutant.unit.kernel
    if ast.get_docstring(kernel) or len(said.split()) >= MIN_COMMENT_WORDS:
        return said
    return None


def listed(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names[:MAX_LISTED]]
    if len(names) > MAX_LISTED:
        return ", ".join(quoted) + f" and {len(names) - MAX_LISTED} more"
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def title(name: str, suffix: str) -> str:
    """``_compute_environment_spans_1a2b`` -> ``Compute environment spans``."""
    stem = name.removesuffix(f"_{suffix}") if suffix else name
    words = [w for w in stem.strip("_").split("_") if w and w != "kernel"]
    words = [w.upper() if w.lower() in ACRONYMS else w for w in words]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def dataflow(mutant: M.Mutant) -> str:
    """What the kernel writes and from what, read from its launch roles (``writes `spans` from
    `cell_counts` and `min_x```)."""
    args = [a for a in mutant.launch.args if not (a.origin and a.origin[0] == "count")]
    outs = [a.name for a in args if a.role == "out"]
    inouts = [a.name for a in args if a.role == "inout"]
    ins = [a.name for a in args if a.role == "in"]
    parts = []
    if outs:
        parts.append(f"writes {listed(outs)}")
    if inouts:
        parts.append(f"updates {listed(inouts)} in place")
    said = " and ".join(parts)
    if said and ins:
        said += f" from {listed(ins)}"
    return said


def purpose(mutant: M.Mutant, seed: M.Seed) -> str:
    """What the seed's author said the kernel does (its docstring or a leading comment: a mutant
    does the same), else what its name and its launch say: ``Compute environment spans: writes
    `spans` from `cell_counts`, `min_x`, `max_x` and 2 more``, and in which precision or width
    when a mutation changed it."""
    said = authored(mutant)
    if said:
        return said
    changes = []
    for applied in mutant.applied:
        told = change(*applied.partition(":")[::2])
        if told and told not in changes:
            changes.append(told)
    flow = dataflow(mutant) if mutant.launch.args else ""
    text = title(mutant.kernel_name, mutant.unit.suffix)
    if flow:
        text += f": {flow}"
    if changes:
        text += ", " + ", ".join(changes)
    return text + "."


def nondeterministic(tree: ast.Module) -> bool:
    """Float atomics (and ``+=`` into arrays, which Warp makes atomic) sum in launch order."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("atomic_"):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            return True
    return False


def build(mutant: M.Mutant, seed: M.Seed) -> Mutant:
    unit = mutant.unit
    launch = unit.launch
    kernel = unit.kernel
    reason = launch.reason if seed.launch else "the seed has no launch description"
    meta = {
        "needs_runtime_objects": bool(reason),
        "reason": reason,
        "deterministic": not nondeterministic(unit.tree),
        "differentiable": differentiable(kernel),
        "record": {"seed_kernel": seed_record(seed), "mutations": mutant.applied},
    }
    meta["record"]["purpose"] = purpose(mutant, seed)
    statements = sum(isinstance(n, ast.stmt) for n in walk(kernel)) - 1
    funcs = [n.name for n in unit.functions if n is not kernel]
    return Mutant(
        mutant.kernel_name,
        mutant.source,
        meta,
        statements,
        funcs,
        list(unit.structs),
        L.params(kernel, launch, unit.structs),
        list(launch.dim),
        seed.block_dim,
    )


def mutant(rng: random.Random, suffix: str) -> Mutant:
    for _ in range(SEED_DRAWS):
        seed = rng.choices(M.seeds(), M.seed_weights())[0]
        try:
            return build(M.mutate_seed(seed, rng, suffix, layout=False), seed)  # the generator lays it out
        except M.MutationError:
            continue
    raise M.MutationError("-", f"no mutable seed in {SEED_DRAWS} draws")


@register("mutant", 1.0, source="mutants")
def build_mutant(rng: random.Random, name: str, suffix: str, complexity) -> Mutant:
    return mutant(rng, suffix)
