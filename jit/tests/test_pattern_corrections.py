"""Defects reviewers found in pattern kernels, each checked over many drawn variants.

Ray hits from inside a sphere or a box, names and comments that must say what the code does
(property checks, atomic reductions), a cloth-normal kernel limited to one extra output, and the
ELL Jacobi step's guard and division.
"""

from __future__ import annotations

import ast
import random
import re
from types import SimpleNamespace

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.categories import patterns_checks as Checks
from jit.code.synthesis.categories import patterns_cloth as C
from jit.code.synthesis.categories import patterns_rays as Rays
from jit.code.synthesis.categories import patterns_reductions as R
from jit.code.synthesis.categories import patterns_solid as S
from jit.code.synthesis.generator import arg_info  # registers every check kind too
from jit.code.synthesis.layout import format_source

SEED = 23
DRAWS = 300


def _built(family, i: int) -> SimpleNamespace:
    """Item ``i`` of a pattern family: name, formatted source, launch description and purpose."""
    kb = family(random.Random(f"{SEED}:{family.__name__}:{i}"), family.__name__, f"{i:08x}", "mixed")
    launch = {"dim": list(kb.dims), "args": [arg_info(q, kb.dims, None) for q in kb.params]}
    return SimpleNamespace(name=kb.name, source=format_source(kb.source()), launch=launch,
                           purpose=kb.meta.get("record", {}).get("purpose", ""))


def _draw(family, n: int = DRAWS) -> list[SimpleNamespace]:
    return [_built(family, i) for i in range(n)]


def _kernel(source: str) -> ast.FunctionDef:
    return [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)][-1]


def _docstring(source: str) -> str:
    return " ".join((ast.get_docstring(_kernel(source)) or "").split())


def _funcs(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef) and any(ast.unparse(d) == "wp.func" for d in n.decorator_list)}


def _arg(spec, name: str) -> dict:
    return next(a for a in spec.launch["args"] if a["name"] == name)


# ---------------------------------------------------------------------------------------------
# 1, 2: ray casting


RAYS = _draw(Rays.ray_cast)


def _box_helper(spec) -> str | None:
    return next((n for n, f in _funcs(spec.source).items() if "lower" in [a.arg for a in f.args.args]), None)


def _sphere_helper(spec) -> str | None:
    return next((n for n, f in _funcs(spec.source).items() if "radius" in [a.arg for a in f.args.args]), None)


def test_sphere_hits_use_the_unit_direction_form_and_the_far_root():
    """The caller normalises ``rd``: no ``wp.dot(rd, rd)``; a root behind the origin falls back to the far one."""
    spheres = [s for s in RAYS if _sphere_helper(s)]
    assert len(spheres) > 100
    for spec in spheres:
        helper = ast.unparse(_funcs(spec.source)[_sphere_helper(spec)])
        assert "wp.dot(rd, rd)" not in helper and "4.0 * a" not in helper, spec.source
        assert re.search(r"-b \+ ", helper), spec.source  # the far root, for an origin inside the sphere


def test_box_call_names_its_far_limit_as_such():
    """The value passed as the slab test's ``t_max`` is not a variable named like a minimum."""
    boxes = [s for s in RAYS if _box_helper(s)]
    assert len(boxes) > 30
    for spec in boxes:
        helper = _box_helper(spec)
        calls = [n for n in ast.walk(_kernel(spec.source))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == helper]
        assert len(calls) == 1, spec.source
        last = ast.unparse(calls[0].args[-1])
        assert "min" not in last, spec.source
        assert "t_min" not in spec.source, spec.source  # the nearest hit so far is not called a minimum bound


def _pixel_directions(spec, shape, fov: float, aspect: float) -> np.ndarray:
    """The unit ray of every pixel, as the kernel's camera lines compute it."""
    h, w = shape
    i, j = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    sx = (2.0 * (j + 0.5) / w - 1.0) * aspect
    sy = 1.0 - 2.0 * (i + 0.5) / h if "sy = 1.0 - 2.0" in spec.source else 2.0 * (i + 0.5) / h - 1.0
    d = np.stack([sx * fov, sy * fov, -np.ones_like(sx)], axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


EYE = np.array([0.1, -0.2, 0.05])
CENTER, RADIUS = np.array([0.0, 0.1, -0.1]), 0.9
LOWER, UPPER = np.array([-0.7, -0.9, -1.1]), np.array([0.8, 1.0, 0.6])


def _inside_reference(kind: str, rd: np.ndarray) -> np.ndarray:
    """The exit distance of every ray from ``EYE``, inside the sphere or the box."""
    if kind == "sphere":
        oc = EYE - CENTER
        b = rd @ oc
        c = oc @ oc - RADIUS * RADIUS
        return -b + np.sqrt(b * b - c)
    with np.errstate(divide="ignore"):
        ta, tb = (LOWER - EYE) / rd, (UPPER - EYE) / rd
    return np.maximum(ta, tb).min(axis=-1)


def _depth_kernel(kind: str, k: int) -> SimpleNamespace:
    """The ``k``-th drawn ray-cast kernel against ``kind`` that writes a hit distance image."""
    found = [s for s in RAYS if (_sphere_helper(s) if kind == "sphere" else _box_helper(s))
             and any(a["role"] == "out" and a["dtype"] == "float32" for a in s.launch["args"])]
    return found[k % len(found)]


@pytest.mark.parametrize("kind,k", [("sphere", 0), ("sphere", 1), ("sphere", 2), ("box", 0), ("box", 1), ("box", 2)])
def test_camera_inside_an_object_sees_its_inside(kind, k):
    """With the eye inside the one sphere (or box), every pixel's depth is the exit distance NumPy gives."""
    spec = _depth_kernel(kind, k)
    fov = 0.8
    values, depth = [], None
    for arg in spec.launch["args"]:
        name, dtype = arg["name"], arg["dtype"]
        if arg["role"] == "out":
            shape = tuple(arg["shape"])
            values.append(wp.zeros(shape, dtype=getattr(wp, dtype), device="cpu"))
            depth = values[-1] if dtype == "float32" else depth
            if dtype == "float32":
                depth_shape = shape
        elif arg["kind"] == "array":
            n = arg["shape"][0]
            data = {"vec4f": np.array([[*CENTER, RADIUS]] * n), "vec3f": np.array([CENTER] * n),
                    "float32": np.full(n, RADIUS)}[dtype]
            if name in ("light_dirs", "lights"):
                data = np.array([[0.0, 1.0, 0.0]] * n)
            values.append(wp.array(data.astype(np.float32), dtype=getattr(wp, dtype), device="cpu"))
        elif dtype == "vec3f":
            values.append(wp.vec3(*{"box_lower": LOWER, "box_upper": UPPER}.get(name, EYE if arg["range"][0] >= 2.0
                                                                                      else np.full(3, 0.5))))
        else:
            lo = arg["range"][0]
            values.append({"tan_half_fov": fov, "fov_scale": fov, "ground_height": -1.0e4,
                           "floor_y": -1.0e4}.get(name, lo))
    aspect = next(a["range"][0] for a in spec.launch["args"] if a["name"] in ("aspect", "aspect_ratio"))
    handle = wb.define([spec.source], f"test_pattern_corrections_{kind}_{k}")
    try:
        handle.module.options["enable_backward"] = False
        wp.launch(handle.namespace[spec.name], dim=spec.launch["dim"], inputs=values, device="cpu")
        got = depth.numpy()
    finally:
        handle.release()
    want = _inside_reference(kind, _pixel_directions(spec, depth_shape, fov, aspect))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=spec.source)


# ---------------------------------------------------------------------------------------------
# 3: property checks


def _checks(kind: str, n: int = 120) -> list:
    return [Checks.build(kind, random.Random(f"{SEED}:{kind}:{i}"), f"{i:08x}") for i in range(n)]


def test_comment_arithmetic_matches_the_values():
    """"|h| <= 4 scaled by 2.0 stays at most 8": the bound in the comment is the product it names."""
    seen = 0
    for kernel in _checks("type_roundtrip", 600):
        text = kernel.source()
        for bound, scale, most in re.findall(r"\|h\| <= (\d+) scaled by ([\d.]+) stays at most ([\d.]+)", text):
            seen += 1
            assert float(bound) * float(scale) == float(most), text
    assert seen > 30


def test_range_named_only_where_the_check_depends_on_it():
    """An exact float64 product of two float32 values holds for any input: no range in its docstring."""
    seen = 0
    for kernel in _checks("precision", 400):
        text = kernel.source()
        if "exact = wp.float64(" in text:
            seen += 1
            assert not re.search(r"\[-?\d", _docstring(text)), text
    assert seen > 20


def test_checks_that_write_outputs_are_not_named_as_tests():
    """A kernel named ``test_...`` only checks; one that also stores results is a ``check_...``."""
    seen = 0
    for which in sorted(Checks.KINDS):
        for kernel in _checks(which, 40):
            if any(p.role != "in" for p in kernel.params):
                seen += 1
                assert not kernel.name.startswith("test_"), kernel.source()
    assert seen > 500


# ---------------------------------------------------------------------------------------------
# 4: atomic reductions


REDUCTIONS = _draw(R.atomic_reduction, 600)
VAGUE = {"sum_values", "accumulate", "reduce_sum"}


def test_reductions_are_named_for_what_they_sum():
    kinetic = [s for s in REDUCTIONS if "energy = " in s.source]
    assert len(kinetic) > 20
    for spec in kinetic:
        base = spec.name.rsplit("_", 1)[0]
        assert base not in VAGUE, spec.source
        if re.search(r"wp\.atomic_add\(\w+, 0, energy\)|\w+\[0\] \+= energy", spec.source):
            assert "energy" in base, spec.source
    for spec in REDUCTIONS:
        assert "item_weights" not in spec.source, spec.source


def test_masked_reductions_say_the_mask():
    masked = 0
    for spec in REDUCTIONS:
        mask = re.search(r"if (\w+)\[tid\] == 0:\n\s+return", spec.source)
        if mask:
            masked += 1
            for said in (spec.purpose, _docstring(spec.source) or spec.purpose):  # a kernel may have no docstring
                assert mask.group(1) in said and "all items" not in said, spec.source
    assert masked > 30


# ---------------------------------------------------------------------------------------------
# 5: cloth normals


def test_vertex_normal_kernels_write_at_most_one_extra_output():
    normals = [s for s in _draw(C.cloth, 500) if "normals" in s.name]
    assert len(normals) > 60
    for spec in normals:
        outs = [a["name"] for a in spec.launch["args"] if a["role"] != "in"]
        assert 1 <= len(outs) <= 2, spec.source
        assert len(re.findall(r"\b(Writes|Gives)\b", _docstring(spec.source))) <= 1, spec.source


# ---------------------------------------------------------------------------------------------
# 6: the ELL Jacobi step


DENSE = _draw(S.dense_linalg, 500)


def test_row_and_block_guards_only_where_the_launch_is_rounded_up():
    """``if tid >= num_rows`` (or ``num_blocks``, in the block Jacobi solver) only when the launch covers
    more threads than there are rows: a count equal to the launch size makes the guard dead code."""
    guarded = 0
    for spec in DENSE:
        guard = re.search(r"if tid >= (\w+):", spec.source)
        if guard and guard.group(1) in ("num_rows", "num_blocks"):
            guarded += 1
            assert _arg(spec, guard.group(1))["range"][0] < spec.launch["dim"][0], spec.source
    assert guarded > 5


def test_jacobi_step_division_by_the_diagonal_is_guarded_or_documented():
    """Either a zero diagonal entry is skipped, or the kernel says the caller's matrix has none."""
    steps = [s for s in DENSE if re.search(r"(diag|diagonal)\[tid\]", s.source)]
    assert len(steps) > 10
    for spec in steps:
        guarded = re.search(r"if d != (0\.0|wp\.float64\(0\.0\)):", spec.source)
        comment = re.search(r"#.*\bzero\b", spec.source)
        documented = comment and re.search(r"\bno zero\b", spec.purpose)
        assert guarded or documented, spec.source
