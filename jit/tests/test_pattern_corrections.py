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
from jit.code.synthesis.categories import patterns_tiles as Tiles
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


# ---------------------------------------------------------------------------------------------
# 7: float classification and sign checks


def _float_check_kinds() -> list[str]:
    return sorted(k for k in Checks.KINDS if k.startswith("float_"))


CLASSES = ("isfinite", "isinf", "isnan")
BUILTINS = (*CLASSES, "copysign", "frac", "trunc", "step", "sign")


def _code(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))


def test_float_check_names_and_inputs_say_what_the_checks_use():
    """A kernel named for a builtin calls it; an input is named for its role (``values``, ``signs``), never
    ``offsets`` or ``scales``; a range that may be negative is not called a magnitude."""
    seen = 0
    for kind in _float_check_kinds():
        for kernel in _checks(kind, 200):
            seen += 1
            text, code = kernel.source(), _code(kernel.source())
            base = kernel.name.rsplit("_", 1)[0]
            for fn in BUILTINS:
                if re.search(rf"(^|_){fn}(_|$)", base):
                    assert f"wp.{fn}(" in code, text
            assert not {p.name for p in kernel.params} & {"offsets", "scales", "magnitudes"}, text
            assert not re.search(r"magnitudes? in \[-", _docstring(text)), text
    assert seen >= 200


def test_float_checks_keep_one_theme():
    """Classification (``isfinite``/``isinf``/``isnan``) and the sign builtins (``copysign``, ``frac``,
    ``trunc``, ``step``) are checked by different kernels, never mixed in one."""
    themes = set()
    for kind in _float_check_kinds():
        for kernel in _checks(kind, 200):
            code = _code(kernel.source())
            classes = any(f"wp.{fn}(" in code for fn in CLASSES)
            signs = any(f"wp.{fn}(" in code for fn in ("copysign", "frac", "trunc", "step"))
            assert not (classes and signs), kernel.source()
            themes.add("classes" if classes else "signs")
    assert themes == {"classes", "signs"}


# ---------------------------------------------------------------------------------------------
# 8: the 4x4 homogeneous matrix


def test_homogeneous_matrix_comes_from_the_inputs():
    """No 4x4 matrix of literals rebuilt in every thread (and so no literal "rotation" that is orthonormal
    only to rounding): the matrix is built from each input pose; the point is read back by component."""
    for kernel in _checks("mat_homogeneous", 200):
        text = kernel.source()
        assert "wp.mat44(" not in text, text
        assert not re.search(r"\*\s*h\[", text), text
        assert re.search(r"wp\.transform_(to_matrix|compose)\(", text), text
        assert "moved = wp.vec3(h[0], h[1], h[2])" in text, text
        assert any(p.dtype.kind in ("transform", "quat") for p in kernel.params), text


# ---------------------------------------------------------------------------------------------
# 9: nearest rotations and the regularised moment matrix


WP_TYPES = {"vec3f": wp.vec3, "vec3d": wp.vec3d, "mat33f": wp.mat33, "mat33d": wp.mat33d, "float32": wp.float32,
            "float64": wp.float64, "int32": wp.int32}
MIRROR = np.diag([1.0, 1.0, -1.0])


def _covariance_inputs(spec, rng: np.random.Generator, reg: float = 0.75) -> tuple[list, dict]:
    """Launch values of a covariance kernel: rest points, current points mirrored through z = 0, distinct
    neighbours (never the point itself), weights in [0.5, 1], the count and regulariser. Returns the values
    and the NumPy arrays by name."""
    n = spec.launch["dim"][0]
    points = rng.uniform(-1.0, 1.0, (n, 3))
    arrays, values = {}, []
    for arg in spec.launch["args"]:
        name, dtype = arg["name"], arg["dtype"]
        if arg["kind"] == "scalar":
            value = arg["range"][0] if dtype == "int32" else reg
            arrays[name] = value
            values.append(value)
            continue
        shape = tuple(arg["shape"])
        if arg["role"] == "out":
            data = np.zeros(shape + ((3,) if dtype.startswith("vec") else (3, 3) if dtype.startswith("mat") else ()))
        elif dtype == "int32":
            data = np.array([rng.choice([j for j in range(n) if j != i], shape[1], replace=False) for i in range(n)])
        elif dtype.startswith("vec") and name in ("rest_positions", "x_rest"):
            data = points
        elif dtype.startswith("vec") and len(shape) == 1 and any(a["name"] in ("rest_positions", "x_rest")
                                                                 for a in spec.launch["args"]):
            data = points @ MIRROR.T  # the current positions: the rest shape mirrored
        elif dtype.startswith("vec"):
            data = points if not arrays.get("_points_used") else rng.uniform(-1.0, 1.0, shape + (3,))
            arrays["_points_used"] = True
        else:
            data = rng.uniform(0.5, 1.0, shape)
        arrays[name] = data
        np_dtype = np.float64 if dtype.endswith("d") or dtype == "float64" else np.int32 if dtype == "int32" else np.float32
        values.append(wp.array(data.astype(np_dtype), dtype=WP_TYPES[dtype], device="cpu"))
    return values, arrays


def _launch_dense(spec, values: list, tag: str) -> None:
    handle = wb.define([spec.source], f"test_pattern_corrections_{tag}")
    try:
        handle.module.options["enable_backward"] = False
        wp.launch(handle.namespace[spec.name], dim=spec.launch["dim"], inputs=values, device="cpu")
    finally:
        handle.release()


def _moment(spec, arrays: dict, cross: bool) -> np.ndarray:
    """Sum over each point's neighbours of (weighted) outer products of the offsets, as NumPy computes it."""
    names = [a["name"] for a in spec.launch["args"]]
    nbr = next(arrays[n] for n in names if n in ("neighbors", "neighbor_indices"))
    weights = next((arrays[n] for n in names if n in ("weights", "neighbor_weights")), np.ones(nbr.shape))
    rest = next((arrays[n] for n in names if n in ("rest_positions", "x_rest")), None)
    x = arrays[names[0]]
    d = x[nbr] - x[:, None, :]
    d0 = (rest[nbr] - rest[:, None, :]) if cross else d
    return np.einsum("ik,ika,ikb->iab", weights, d, d0)


POLAR = [s for s in DENSE if "wp.svd3(" in s.source]


def test_polar_rotations_are_proper_for_mirrored_neighbourhoods():
    """With every neighbourhood mirrored from its rest shape, the best orthogonal fit is a reflection: the
    kernel still writes the nearest proper rotation (det +1), as NumPy's Kabsch solution gives. Warp's
    ``svd3`` returns U and V with det +1, so ``U V^T`` needs no sign correction: no dead branch testing
    for a reflection, and the kernel (comment or docstring) says why."""
    assert len(POLAR) > 30
    for spec in POLAR:
        assert "wp.determinant" not in spec.source, spec.source
        said = re.search(r"#.*\bsvd3\b.*(det|rotation|reflection)", spec.source) or "never a reflection" in spec.purpose
        assert said, spec.source
    rng = np.random.default_rng(5)
    for k, spec in enumerate(POLAR[:6]):
        values, arrays = _covariance_inputs(spec, rng)
        _launch_dense(spec, values, f"polar_{k}")
        out = next(a for a in spec.launch["args"] if a["dtype"].startswith("mat"))
        count = next((a["range"][0] for a in spec.launch["args"] if a["name"] == "num_points"), spec.launch["dim"][0])
        got = values[spec.launch["args"].index(out)].numpy()[:count].astype(np.float64)
        A = _moment(spec, arrays, cross=True)[:count]
        U, _, Vt = np.linalg.svd(A)
        D = np.ones((count, 3))
        D[:, 2] = np.sign(np.linalg.det(U @ Vt))
        assert (D[:, 2] < 0).all()  # the inputs do make the orthogonal fit a reflection
        want = (U * D[:, None, :]) @ Vt
        np.testing.assert_allclose(np.linalg.det(got), 1.0, atol=1e-4, err_msg=spec.source)
        np.testing.assert_allclose(got @ np.swapaxes(got, 1, 2), np.broadcast_to(np.eye(3), got.shape), atol=1e-4)
        # as good a fit as the best rotation: tr(R^T A) is flat at its maximum, so it is compared, not R
        fit = lambda R: np.einsum("iab,iab->i", R, A)  # noqa: E731
        np.testing.assert_allclose(fit(got), fit(want), rtol=1e-4, err_msg=spec.source)


def test_moment_regulariser_is_added_to_the_diagonal():
    """The regulariser is added to A's diagonal entries (no ``identity * epsilon`` built in every thread),
    and the determinant written is NumPy's of the regularised moment matrix."""
    moments = [s for s in DENSE if "A = wp.mat33" in s.source and "wp.svd3(" not in s.source]
    assert len(moments) > 60
    for spec in moments:
        assert "wp.identity(" not in spec.source, spec.source
        assert re.search(r"A\[2, 2\] \+= \w+", spec.source), spec.source
    spreads = [s for s in moments if re.search(r"\[tid\] = wp\.determinant\(A\)", s.source)]
    rng = np.random.default_rng(9)
    for k, spec in enumerate(spreads[:4]):
        values, arrays = _covariance_inputs(spec, rng)
        _launch_dense(spec, values, f"spread_{k}")
        count = next((a["range"][0] for a in spec.launch["args"] if a["name"] == "num_points"), spec.launch["dim"][0])
        got = values[-1].numpy()[:count]
        want = np.linalg.det(_moment(spec, arrays, cross=False)[:count] + 0.75 * np.eye(3))
        np.testing.assert_allclose(got, want, rtol=1e-4, err_msg=spec.source)


# ---------------------------------------------------------------------------------------------
# 10: tile kernels


TILES = _draw(Tiles.tile_blocks, 400)


def test_tile_sizes_are_mostly_wp_constants():
    """Most kernels declare their tile sizes with ``wp.constant`` (a plain module int now and then)."""
    plain = [s for s in TILES if re.search(r"^[A-Z_0-9]+_\w+ = \d+$", s.source, re.MULTILINE)]
    wrapped = [s for s in TILES if re.search(r"^[A-Z_0-9]+_\w+ = wp\.constant\(\d+\)$", s.source, re.MULTILINE)]
    assert len(plain) + len(wrapped) == len(TILES)
    assert len(plain) <= 0.25 * len(TILES), len(plain)
    assert plain  # now and then


def test_stacked_matrix_height_is_not_a_copy_of_the_tile_size():
    """The stride between stacked matrices is the output's height (or a constant of its own where it
    differs from the tile): never a second constant equal to the tile size."""
    stacks = [s for s in TILES if "for k in range(" in s.source and "acc += wp.tile_load(" in s.source]
    assert len(stacks) > 20
    for spec in stacks:
        consts = dict(re.findall(r"^(\w+) = (?:wp\.constant\()?(\d+)\)?$", spec.source, re.MULTILINE))
        height = re.search(r"offset=\(k \* (\w+) \+", spec.source).group(1)
        tile = re.search(r"wp\.tile_zeros\(shape=\((\w+),", spec.source).group(1)
        out = next(a for a in spec.launch["args"] if a["role"] == "out")
        if height == "height":
            assert re.search(rf"height = {out['name']}\.shape\[0\]", spec.source), spec.source
        else:
            assert consts[height] != consts[tile] and int(consts[height]) == out["shape"][0], spec.source


def test_tile_locals_do_not_shadow_builtin_names():
    """A local holding a tile is named for what it holds, not ``dot`` (reassigned, and named like ``wp.dot``)."""
    rows = [s for s in TILES if "wp.tile_map(wp.mul, row," in s.source]
    assert len(rows) > 20
    for spec in TILES:
        assert not re.search(r"^\s+dot = ", spec.source, re.MULTILINE), spec.source
