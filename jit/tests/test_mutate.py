"""Mutants of real kernels: Warp builds them, the seed is recorded, they are not near-copies.

Truth comes from Warp itself (its builtin registry for the builtin swaps, its code generator for
builds, a CPU launch for the mutations that must not change what a kernel computes) and from the
reference corpus (the seed a record names must exist in the seed half).
"""

from __future__ import annotations

import ast
import itertools
import random

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis import mutate as M
from jit.code.synthesis import reference
from jit.code.synthesis import types as T
from jit.code.synthesis.batch_generator import build_batch
from jit.code.synthesis.generator import generate

_modules = itertools.count()


class _Spec:  # what build_batch reads of a kernel
    def __init__(self, name: str, source: str):
        self.name, self.source = name, source


def built(specs: list) -> set[str]:
    """Names of the specs Warp builds (forward and backward, CPU and CUDA code), in one module."""
    items, _, handle, _ = build_batch(specs, ("cpu", "cuda"), True, f"jit_test_mutants_{next(_modules)}")
    if handle is not None:
        handle.release()
    return {spec.name for spec, _, _ in items}


def hand_kernel(context: str, name: str) -> reference.RealKernel:
    return reference.RealKernel(name, "hand", "hand.py", 1, context, context, True, None, "seed")


def test_builtin_swaps_accept_the_same_arguments_and_return_the_same_type():
    candidates = [T.warp_type(t) for t in T.VALUE_TYPES]
    candidates += [wp.array(dtype=wp.float32), wp.array(dtype=wp.int32), wp.array(dtype=wp.vec3)]

    def signatures(name):
        return {(tuple(map(str, args)), str(ret)) for args, ret in wb.builtin_signatures(name, candidates)}

    for old, news in M.SWAPS.items():
        assert signatures(old), old
        for new in news:
            assert signatures(old) <= signatures(new), (old, new)


@pytest.fixture(scope="module")
def mutants():
    return [generate(11, i, categories=["mutant"]) for i in range(40)]


def test_mutants_build_and_name_their_seed_and_licence(mutants):
    names = built([_Spec(s.name, s.source) for s in mutants])
    assert len(names) >= 0.9 * len(mutants), sorted({s.name for s in mutants} - names)
    seeds = {(k.path, k.name, k.line): k for k in reference.kernels("seed")}
    licence = reference.distribution()["license"]
    for spec in mutants:
        record = spec.metadata["seed_kernel"]
        kernel = seeds[(record["file"], record["name"], record["line"])]
        assert record["license"] == licence and record["distribution"] == "warp-lang"
        assert spec.name == f"{kernel.name}_{spec.name.rsplit('_', 1)[1]}"
        assert spec.metadata["mutations"] and spec.metadata["source"] == "mutants"
        assert M.similarity(spec.source, kernel.context) < M.MAX_SIMILARITY


def test_module_level_names_end_with_the_suffix(mutants):
    for spec in mutants:
        suffix = spec.name.rsplit("_", 1)[1]
        for node in ast.parse(spec.source).body:
            names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
                [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            assert all(n.endswith(f"_{suffix}") for n in names), (names, suffix)


def test_same_seed_and_index_give_the_same_mutant(mutants):
    again = [generate(11, i, categories=["mutant"]) for i in range(0, 40, 5)]
    assert [s.source for s in again] == [s.source for s in mutants[::5]]
    assert [s.metadata for s in again] == [s.metadata for s in mutants[::5]]
    assert len({s.source for s in mutants}) == len(mutants)


def kind_samples(kind: str, wanted: int = 3) -> list[tuple[str, str]]:
    """(kernel name, source) of seeds changed by one mutation kind alone."""
    out = []
    for i, seed in enumerate(M.seeds()[::5]):
        unit = M.Unit(M.seed_kernel(seed), f"{kind}{i}")
        if kind == "dtype":
            desc = M.change_dtype(unit, seed.dtypes[0]) if seed.dtypes else None
        elif kind in ("rename", "constant"):
            fn = M.rename_by_role if kind == "rename" else M.perturb_constants
            desc = fn(unit, random.Random(i), p=1.0) or None
        else:
            desc = M.MUTATIONS[kind][0](unit, random.Random(i))
        if desc:
            out.append((unit.kernel_name, unit.render()))
        if len(out) == wanted:
            break
    return out


def test_every_mutation_kind_applies_keeps_the_source_parseable_and_builds():
    kinds = [*M.MUTATIONS, "dtype", "rename", "constant"]
    samples = {kind: kind_samples(kind) for kind in kinds}
    specs = []
    for kind, found in samples.items():
        assert len(found) == 3, kind
        for name, source in found:
            ast.parse(source)
            specs.append(_Spec(f"{name}", source))
    ok = built(specs)
    assert len(ok) >= 0.9 * len(specs), sorted({s.name for s in specs} - ok)
    for kind, found in samples.items():
        assert any(name in ok for name, _ in found), kind


SPRING = '''import warp as wp

SCALE = wp.constant(0.5)


@wp.func
def spring(x: wp.vec3, k: float):
    d = wp.length(x)
    return x * (k * (d - 1.0))


@wp.kernel
def integrate(x: wp.array[wp.vec3], v: wp.array[wp.vec3], out: wp.array[wp.vec3], dt: float):
    tid = wp.tid()
    p = x[tid]
    vel = v[tid]
    f = spring(p, 2.0) * SCALE
    a = wp.vec3(0.0, -9.8, 0.0) - f
    vel_new = vel + a * dt
    speed = wp.length(vel_new)
    if speed > 10.0:
        vel_new = vel_new * (10.0 / speed)
    out[tid] = p + vel_new * dt + wp.normalize(p) * wp.min(speed, 1.0)
'''


def test_hoist_inline_reorder_and_rename_keep_what_a_kernel_computes(define):
    """These mutations only move and name code: a CPU launch gives the seed's outputs."""
    seed = hand_kernel(SPRING, "integrate")
    variants = [M.Unit(seed, "orig")]
    for i in range(4):
        unit, rng = M.Unit(seed, f"v{i}"), random.Random(i)
        for kind in rng.choices(["hoist", "inline", "reorder"], k=5):
            M.MUTATIONS[kind][0](unit, rng)
        M.rename_by_role(unit, rng, p=1.0)
        variants.append(unit)
    assert len({u.render().replace(u.kernel_name, "") for u in variants}) > 3  # they did change
    names = define("\n".join(u.render() for u in variants))
    rng = np.random.default_rng(0)
    x, v = rng.normal(size=(64, 3)).astype(np.float32), rng.normal(size=(64, 3)).astype(np.float32)
    results = []
    for unit in variants:
        out = wp.zeros(64, dtype=wp.vec3, device="cpu")
        wp.launch(names[unit.kernel_name], dim=64, device="cpu",
                  inputs=[wp.array(x, dtype=wp.vec3, device="cpu"), wp.array(v, dtype=wp.vec3, device="cpu"), out, 0.1])
        results.append(out.numpy())
    for other in results[1:]:
        np.testing.assert_allclose(other, results[0], rtol=1e-5, atol=1e-6)


def test_known_answers_of_single_mutations():
    seed = hand_kernel(SPRING, "integrate")
    unit = M.Unit(seed, "s")
    assert "def integrate_s(" in unit.render() and "SCALE_s" in unit.render() and "spring_s(p" in unit.render()
    desc = M.swap_builtin(unit, random.Random(0))
    assert desc in ("swap_builtin:length->length_sq", "swap_builtin:min->max")
    assert M.swap_builtin(unit, random.Random(0)) != desc  # a swapped call is not swapped back
    unit = M.Unit(seed, "s")
    assert M.guard(unit, random.Random(0)).startswith("guard:")
    assert "if tid >= " in unit.render() and M.guard(unit, random.Random(1)) is None
    unit = M.Unit(seed, "s")
    M.change_dtype(unit, "float64")
    text = unit.render()
    assert "wp.vec3d" in text and "wp.float64(10.0)" in text and "float" not in text.replace("float64", "")


def test_a_seed_that_cannot_move_far_enough_is_refused():
    still = hand_kernel("import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array[float]):\n    return\n", "k")
    with pytest.raises(M.MutationError):
        M.mutate(still, random.Random(0), "x")


def test_committed_seeds_are_eligible_kernels_of_the_seed_half():
    seeds = M.seeds()
    assert len(seeds) >= 300
    for seed in seeds[::10]:
        kernel = M.seed_kernel(seed)
        assert kernel.half == "seed" and M.eligible(kernel)
        assert kernel.module == seed.module
