"""Tile kernels of the ``tile_blocks`` family compute what their docstrings say: every kind, run on
the CPU with seeded inputs from its launch description, against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jit.code.checks.execute import set_cpu_options
from jit.code.checks.launch import (
    item_rng,
    plan_from_metadata,
    random_values,
    run_outputs,
)
from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.categories import patterns_tiles as PT
from jit.code.synthesis.generator import generate

ITEMS = 220  # enough draws that every kind and its main variants appear


def reference(spec, plan, values: dict) -> dict[str, np.ndarray]:
    """What the kernel should write, from its kind (by name) and its arguments by role."""
    kind = next(k for k, names in PT.NAMES.items() if spec.name.rsplit("_", 1)[0] in names)
    ins = [a for a in plan.args if a.role != "out" and a.is_array]
    scalars = [a for a in plan.args if not a.is_array]
    outs = [a for a in plan.args if a.role in ("out", "inout")]
    v = {k: np.asarray(x, np.float64) for k, x in values.items()}
    if kind in ("sum", "dot", "norm", "l1"):
        a = v[ins[0].name]
        terms = {"sum": a, "dot": a * v[ins[1].name] if len(ins) > 1 else a,
                 "norm": a * a, "l1": np.abs(a)}[kind]
        if len(ins) > (2 if kind == "dot" else 1):  # the weights: one more input
            assert "weighted" in spec.name and "weighted elementwise by" in spec.source, spec.source
            terms = terms * v[ins[-1].name]
        scale = 1.0 / a.size if "Mean of" in spec.source else 1.0
        if outs[0].shape[0] > 1:  # one partial sum per block
            return {outs[0].name: terms.reshape(outs[0].shape[0], -1).sum(1)}
        return {outs[0].name: np.array([np.sum(terms) * scale])}
    if kind in ("softmax", "log_softmax"):
        x = v[ins[0].name] / (v[scalars[0].name] if scalars else 1.0)
        e = np.exp(x - x.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        return {outs[0].name: np.log(p) if kind == "log_softmax" else p}
    if kind == "rms_norm":
        x = v[ins[0].name]
        eps = v[scalars[0].name] if scalars else 1.0e-5
        return {outs[0].name: x / np.sqrt((x * x).mean(1, keepdims=True) + eps) * v[ins[1].name]}
    if kind == "layer_norm":
        x = v[ins[0].name]
        eps = v[scalars[0].name] if scalars else 1.0e-5
        y = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps)
        if len(ins) == 3:
            y = y * v[ins[1].name] + v[ins[2].name]
        return {outs[0].name: y}
    if kind in ("matvec", "dense"):
        y = v[ins[0].name] @ v[ins[1].name] * (v[scalars[0].name] if scalars else 1.0)
        y = y + (v[ins[2].name] if len(ins) == 3 else 0.0)
        if kind == "dense":
            y = np.tanh(y) if "wp.tanh" in spec.source else np.maximum(y, 0.0)
        return {outs[0].name: y}
    if kind == "axpy":
        beta = v.get("beta", 1.0)
        return {outs[-1].name: v[scalars[0].name] * v["x"] + beta * v["y"]}
    if kind in ("argmax", "argmin"):
        x = v[ins[0].name]
        want = {outs[0].name: x.argmax(1) if kind == "argmax" else x.argmin(1)}
        if len(outs) == 2:
            want[outs[1].name] = x.max(1) - x.min(1)
        return want
    if kind == "symmetrize":
        a = v[ins[0].name]
        return {outs[0].name: 0.5 * (a + a.T)}
    if kind == "running":
        x = v[ins[0].name].reshape(plan.dim[0], -1)
        acc = np.maximum.accumulate if "maximum" in spec.source else np.minimum.accumulate
        want = {outs[0].name: acc(x, axis=1).ravel()}
        if len(outs) == 2:
            want[outs[1].name] = acc(x, axis=1)[:, -1]
        return want
    if kind == "transpose":
        return {outs[0].name: v[ins[0].name].T * (v[scalars[0].name] if scalars else 1.0)}
    if kind in ("lerp", "fma", "clip"):
        a, b, c = (v[p.name] for p in ins[:3])
        y = {"lerp": a + c * (b - a), "fma": a * b + c, "clip": np.minimum(np.maximum(a, b), c)}[kind]
        return {outs[0].name: y + (v[ins[3].name][None, :] if len(ins) == 4 else 0.0)}
    if kind in ("complex_mul", "correlate"):
        a_re, a_im, b_re, b_im = (v[p.name] for p in ins)
        c = (a_re + 1j * a_im) * (b_re - 1j * b_im if kind == "correlate" else b_re + 1j * b_im)
        return {outs[0].name: c.real, outs[1].name: c.imag}
    if kind in ("batch_mean", "batch_sum"):
        stack = v[ins[0].name]
        count = stack.shape[0] // outs[0].shape[0]
        frames = stack.reshape(count, -1, stack.shape[1])
        total = frames.sum(0) / (count if kind == "batch_mean" else 1)
        want = {outs[0].name: total}
        if len(outs) == 2:
            want[outs[1].name] = frames[0] - total
        return want
    x = v[ins[0].name].reshape(len(plan.dim) and plan.dim[0], -1)
    inclusive = np.cumsum(x, axis=1)
    want = {outs[0].name: (inclusive if "Inclusive" in spec.source else inclusive - x).ravel()}
    if len(outs) == 2:
        want[outs[1].name] = inclusive[:, -1]
    return want


def test_every_tile_kind_matches_numpy():
    specs = [generate(3, i, ["tile_blocks"]) for i in range(ITEMS)]
    kinds = {next(k for k, names in PT.NAMES.items() if s.name.rsplit("_", 1)[0] in names) for s in specs}
    assert kinds == set(PT.NAMES)
    handle = wb.define([s.source for s in specs], "jit_synth_test_tiles")
    try:
        set_cpu_options(handle.module, backward=False)
        for spec in specs:
            kernel = handle.namespace[spec.name]
            plan = plan_from_metadata(kernel, spec.metadata)
            assert plan.block_dim in PT.BLOCK_DIMS
            values = random_values(plan, item_rng(spec))
            got = run_outputs(kernel, plan, values)
            want = reference(spec, plan, values)
            assert set(want) <= set(got), spec.name
            for name, expected in want.items():
                tol = 1e-4 if "float64" not in spec.source else 1e-9
                if got[name].dtype.kind == "i":
                    tol = 0
                np.testing.assert_allclose(got[name].astype(np.float64), expected, rtol=tol, atol=tol * 10,
                                           err_msg=f"{spec.name}: {name}\n{spec.source}")
    finally:
        handle.release()


def test_tile_kernels_state_a_purpose():
    for i in range(ITEMS):
        spec = generate(5, i, ["tile_blocks"])
        assert spec.metadata["purpose"] and spec.metadata["launch"]["block_dim"] in PT.BLOCK_DIMS
        assert '"""' in spec.source and "wp.tile_load" in spec.source


@pytest.mark.parametrize("kind", sorted(PT.KINDS))
def test_kinds_are_reproducible(kind):
    import random

    a = PT.build(kind, random.Random(1), "00ff00ff")
    b = PT.build(kind, random.Random(1), "00ff00ff")
    assert a.source() == b.source() and a.dims == b.dims and a.block_dim == b.block_dim


def test_reductions_compute_each_offset_once_and_are_named_for_what_they_sum():
    """A block's offset, read by several loads, is computed once under a name; products of module constants
    need no ``wp.static``; a sum weighted by a second array is named as weighted, not as a plain sum."""
    weighted = 0
    for i in range(ITEMS):
        spec = generate(3, i, ["tile_blocks"])
        base = spec.name.rsplit("_", 1)[0]
        if base not in PT.NAMES["sum"] + PT.NAMES["dot"] + PT.NAMES["norm"]:
            continue
        assert "wp.static" not in spec.source, spec.source
        offsets = [o for o in re.findall(r"wp\.tile_load\(\w+, shape=\w+, offset=([^)]+)\)", spec.source)]
        computed = [o for o in offsets if not re.fullmatch(r"\w+", o)]
        assert len(computed) == len(set(computed)), spec.source
        arrays = [p for p in spec.metadata["launch"]["args"] if p["role"] == "in"]
        plain = 2 if base in PT.NAMES["dot"] else 1
        if len(arrays) > plain:  # the weights
            weighted += 1
            assert "weighted" in base and base not in ("block_sum", "sum_blocks", "reduce_sum"), spec.source
        else:
            assert "weighted" not in base, spec.source
    assert weighted, "no weighted reduction drawn"


def test_a_tiled_reduction_reads_each_blocks_own_tiles():
    """Every block loads at an offset of its own index: a reduction that reads only the first tiles
    would be right for a one-block launch alone, and race into its total on any other."""
    from jit.code.synthesis.generator import generate

    seen = 0
    for i in range(300):
        spec = generate(3, i, categories=["tile_blocks"])
        if "wp.tile_sum(" not in spec.source and "wp.tile_dot(" not in spec.source:
            continue
        if "partial" not in spec.source:
            continue
        seen += 1
        assert spec.metadata["launch"]["dim"][0] > 1, spec.source
        for load in re.findall(r"wp\.tile_load\([^\n]*\)", spec.source):
            assert "offset=" in load, spec.source
    assert seen >= 10


def test_no_sentence_of_a_docstring_opens_with_a_capitalized_parameter_name():
    """``out starts at zero`` must not read ``Out starts at zero``: a sentence opens with a word."""
    import ast

    from jit.code.synthesis.generator import generate

    for i in range(200):
        spec = generate(5, i, categories=["tile_blocks"])
        fn = next(n for n in ast.parse(spec.source).body if isinstance(n, ast.FunctionDef))
        doc = ast.get_docstring(fn) or ""
        for arg in fn.args.args:
            name = arg.arg
            if name[0].islower() and name.capitalize() != name:
                # a parameter as a sentence's subject ("Out starts at zero"), not a word that names it ("Mean of ...")
                assert not re.search(rf"(^|\.\s+){re.escape(name.capitalize())} (starts|is|holds|must)\b", doc, re.MULTILINE), spec.source
