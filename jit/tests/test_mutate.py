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
from jit.code.analysis import reference
from jit.code.synthesis import types as T
from jit.code.synthesis.batch_generator import build_batch
from jit.code.synthesis.generator import generate

_modules = itertools.count()


class _Spec:  # what build_batch reads of a kernel
    def __init__(self, name: str, source: str, block_dim: int | None = None):
        self.name, self.source, self.block_dim = name, source, block_dim


def built(specs: list) -> set[str]:
    """Names of the specs Warp builds (forward and backward, CPU and CUDA code), one module per
    launch block_dim (tile kernels are built at theirs)."""
    groups: dict = {}
    for spec in specs:
        groups.setdefault(spec.block_dim, []).append(spec)
    ok = set()
    for block_dim, group in groups.items():
        items, _, handle, _ = build_batch(group, ("cpu", "cuda"), True, f"jit_test_mutants_{next(_modules)}", block_dim)
        if handle is not None:
            handle.release()
        ok |= {spec.name for spec, _, _ in items}
    return ok


def launch_block_dim(spec) -> int | None:
    return spec.metadata["launch"].get("block_dim")


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
    names = built([_Spec(s.name, s.source, launch_block_dim(s)) for s in mutants])
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


def kind_samples(kind: str, wanted: int = 3, tiled: bool = False) -> list[tuple[str, str, int | None]]:
    """(kernel name, source, launch block_dim) of seeds (tile seeds, or the others) changed by one
    mutation kind alone."""
    out = []
    for i, seed in enumerate(s for s in M.seeds()[::3] if (s.block_dim is not None) == tiled):
        unit = M.Unit(M.seed_kernel(seed), f"{kind}{i}")
        if kind == "dtype":
            desc = M.change_dtype(unit, seed.dtypes[0]) if seed.dtypes else None
        elif kind in ("rename", "constant"):
            fn = M.rename_by_role if kind == "rename" else M.perturb_constants
            desc = fn(unit, random.Random(i), p=1.0) or None
        else:
            desc = M.MUTATIONS[kind][0](unit, random.Random(i))
        if desc:
            out.append((unit.kernel_name, unit.render(), seed.block_dim))
        if len(out) == wanted:
            break
    return out


def test_every_mutation_kind_applies_keeps_the_source_parseable_and_builds():
    kinds = [*M.MUTATIONS, "dtype", "rename", "constant"]
    samples = {kind: kind_samples(kind) for kind in kinds}
    specs = []
    for kind, found in samples.items():
        assert len(found) == 3, kind
        for name, source, block_dim in found:
            ast.parse(source)
            specs.append(_Spec(f"{name}", source, block_dim))
    ok = built(specs)
    assert len(ok) >= 0.9 * len(specs), sorted({s.name for s in specs} - ok)
    for kind, found in samples.items():
        assert any(name in ok for name, _, _ in found), kind


def test_tile_mutants_build_at_their_launch_block_dim():
    """Mutations of tile kernels keep them buildable, for CPU and CUDA, at the seed's block_dim."""
    specs = []
    tiled = [s for s in M.seeds() if s.block_dim is not None]
    for i, seed in enumerate(tiled[::len(tiled) // 12]):
        kernel = M.seed_kernel(seed)
        assert M.uses_tiles(ast.parse(kernel.context)) and seed.block_dim == M.launch_block_dim(kernel)
        try:
            source, name, _ = M.mutate(kernel, random.Random(i), f"t{i}", seed.dtypes)
        except M.MutationError:
            continue
        specs.append(_Spec(name, source, seed.block_dim))
        if len(specs) == 8:
            break
    assert len(specs) == 8 and len({s.block_dim for s in specs}) >= 2
    ok = built(specs)
    assert len(ok) >= 7, sorted({s.name for s in specs} - ok)


def test_a_tile_mutant_carries_its_seed_launch_block_dim(mutants):
    tiled = [s for s in mutants if launch_block_dim(s) is not None]
    assert tiled, "no tile mutant among 40"
    by_key = {(s.path, s.name, s.line): s for s in M.seeds()}
    for spec in mutants:
        record = spec.metadata["seed_kernel"]
        seed = by_key[(record["file"], record["name"], record["line"])]
        assert launch_block_dim(spec) == seed.block_dim
        assert (seed.block_dim is not None) == ("wp.tile" in spec.source)


def test_block_dim_of_a_launch_is_read_from_literals_and_module_constants():
    text = """import warp as wp
TILE_THREADS = 128
OTHER = wp.constant(16)

wp.launch_tiled(first, dim=[4], inputs=[a], block_dim=TILE_THREADS)
wp.launch_tiled(kernel=second, dim=[4], inputs=[a], block_dim=32)
wp.launch(mod.third, dim=4, inputs=[a], block_dim=OTHER)
wp.launch_tiled(fourth, dim=[4], inputs=[a], block_dim=n)
"""
    tree = ast.parse(text)
    assert M.int_constants(tree) == {"TILE_THREADS": 128, "OTHER": 16}
    assert M.launched_block_dims(tree) == [("first", 128), ("second", 32), ("third", 16)]


def test_hoisting_leaves_tile_shapes_and_dtypes_alone():
    seed = hand_kernel(TILED, "tiled")
    for i in range(20):
        unit = M.Unit(seed, f"h{i}")
        for _ in range(8):
            M.hoist(unit, random.Random(i))
        text = unit.render()
        assert "shape=(TILE_M_h%d * 2, TILE_N_h%d)" % (i, i) in text and "dtype=float" in text, text
        assert M.guard(unit, random.Random(i)) is None


TILED = '''import warp as wp

TILE_M = wp.constant(8)
TILE_N = wp.constant(4)


@wp.kernel
def tiled(x: wp.array2d[float], out: wp.array2d[float], scale: float):
    i, j = wp.tid()
    a = wp.tile_load(x, shape=(TILE_M * 2, TILE_N), offset=(i * TILE_M * 2, j * TILE_N))
    b = wp.tile_zeros(shape=(TILE_M * 2, TILE_N), dtype=float)
    c = wp.tile_map(wp.sin, a) * (scale * 2.0) + b
    wp.tile_store(out, c, offset=(i * TILE_M * 2, j * TILE_N))
'''


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
