"""Pattern kernels, read as a Warp engineer reads them: each property over many drawn variants.

Ray hits from inside a sphere or a box and the caller's far distance; names, comments and purposes
that say what the code does (property checks named by the builtins they call, reductions by what
they sum, no doubled words); one job per kernel (cloth normals, SPH densities, stacked means);
guards only where they can fire and divisions guarded or stated; polar rotations that stay proper;
tile sizes, offsets and loads written once; springs ordered as Warp's own; neighbor loops that
square no radius of their own. Where behaviour matters, kernels run in Warp on the CPU against NumPy.
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
    assert seen > 150  # most checks keep their expects only (EXPECT_ONLY)


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
        tile = re.search(r"wp\.tile_load\(\w+, shape=\((\w+),", spec.source).group(1)
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


# ---------------------------------------------------------------------------------------------
# 11: property-check names and the factorisations' outputs


# words of a kernel's name that are Warp builtins but name a concept there, not a call: "inverse" (an
# inverse trigonometric function), "matrix" and "vector" (shapes), "int", "float", "bool" (types)
PLAIN_WORDS = {"inverse", "matrix", "vector", "int", "float", "bool"}
# builtins a kernel calls as operators: % is wp.mod, // wp.floordiv, + wp.add
OPERATORS = {"mod": " % ", "floordiv": " // ", "add": " + "}


def _named_builtins(name: str) -> list[str]:
    """The builtins a kernel's name names, longest first: ``check_transform_inverse_0001`` ->
    ``["transform_inverse"]``, ``check_floor_ceil_trunc_0001`` -> ``["floor", "ceil", "trunc"]``;
    words that are no builtin (``check``, ``roundtrip``, ``identities``) or plain words name none."""
    builtins = set(wb.builtin_names())
    words = name.rsplit("_", 1)[0].split("_")
    named, k = [], 0
    while k < len(words):
        for j in range(len(words), k, -1):
            word = "_".join(words[k:j])
            if word in builtins and (j - k > 1 or word not in PLAIN_WORDS):
                named.append(word)
                k = j
                break
        else:
            k += 1
    return named


def test_property_check_names_call_the_builtins_they_name():
    """Every builtin a kernel's name names is called by the checks it drew: no ``check_log_cbrt`` without
    ``wp.cbrt``, no ``check_transform_inverse`` without ``wp.transform_inverse``."""
    seen = set()
    for which in sorted(Checks.KINDS):
        for kernel in _checks(which, 150):
            code = _code(kernel.source())
            for fn in _named_builtins(kernel.name):
                seen.add(fn)
                assert f"wp.{fn}(" in code or OPERATORS.get(fn, "@@") in code, f"{fn}\n{kernel.source()}"
    assert {"cbrt", "transform_inverse", "copysign", "quat_rotate_inv", "determinant"} <= seen, seen


def test_sign_check_names_cover_every_builtin_checked():
    """A kernel named for copysign checks nothing but copysign (and sign, which copysign onto 1 is);
    one that also checks step, trunc or frac has a general name or names both builtins."""
    names = set()
    for kernel in _checks("float_signs", 200):
        code = _code(kernel.source())
        used = {fn for fn in ("copysign", "sign", "step", "trunc", "frac") if f"wp.{fn}(" in code}
        base = kernel.name.rsplit("_", 1)[0]
        names.add(base)
        if base in ("check_copysign", "check_copysign_identities"):
            assert used <= {"copysign", "sign"}, kernel.source()
        else:
            assert base == "check_float_signs" or set(base.split("_")[1:]) == used, kernel.source()
    assert {"check_copysign", "check_float_signs"} <= names, names


PROMISES = {  # (kind, a word of the name): what the source shows when the drawn checks keep that promise
    ("vec_cross", "orthogonal"): r"wp\.dot\(c, ",
    ("shifts", "roundtrip"): r"shifted >> ",
    ("quat_rotate", "roundtrip"): r"wp\.quat_rotate_inv\(|wp\.quat_inverse\(",
    ("transform_roundtrip", "roundtrip"): r"wp\.transform_inverse\(",
    ("norms", "huber"): r"wp\.norm_(pseudo_)?huber\(",
    ("hyperbolic_trig", "trig"): r"wp\.(asin|atan|acos)\(",
    ("logs_roots", "roots"): r"wp\.cbrt\(",
    ("logs_roots", "bases"): r"wp\.log\(",
}


def test_property_words_of_names_are_checked():
    """A property a name promises (orthogonal, roundtrip, huber, inverse trig) is among the drawn checks."""
    kept = set()
    for (which, word), shown in PROMISES.items():
        for kernel in _checks(which, 150):
            if word in kernel.name.rsplit("_", 1)[0].split("_"):
                kept.add((which, word))
                assert re.search(shown, _code(kernel.source())), kernel.source()
    assert kept == set(PROMISES), set(PROMISES) - kept


def test_factorisations_check_order_on_values_and_name_outputs_for_what_they_hold():
    """svd2's ordering is checked on the values (the larger singular value is the first), not as a
    comparison expected to equal True; the stored singular values or R factors are named as such."""
    kinds = set()
    for kernel in _checks("mat_factor", 120):
        text = kernel.source()
        assert not re.search(r"wp\.expect_eq\(.*[<>]=?.*, True\)", text), text
        outs = [p.name for p in kernel.params if p.role == "out"]
        assert "factor" not in outs, text
        if "wp.svd2(" in text:
            kinds.add("svd2")
            assert "wp.expect_eq(wp.max(sigma), sigma[0])" in text, text
            assert set(outs) <= {"sigma_out", "singular_values"}, text
        elif "wp.qr3(" in text:
            kinds.add("qr3")
            assert set(outs) <= {"R_out", "r_factors"}, text
    assert kinds == {"svd2", "qr3"}


# ---------------------------------------------------------------------------------------------
# 12: ray casting's purpose and far distance, springs' signature, pressure projection and the
# bilinear sampler, reductions' names, tile offsets, stacked means and layer-norm parameters

from jit.code.synthesis.categories import patterns_grid as G  # noqa: E402
from jit.code.synthesis.categories import patterns_particles as P  # noqa: E402


def test_ray_cast_purpose_reads_as_a_sentence_and_takes_the_far_distance_from_the_caller():
    """"Cast a ray per pixel of a pinhole camera against spheres and write the hit distance", not "Ray
    cast the hit distance along each ray of spheres"; the nearest hit starts at a far distance the
    caller passes (no ``no_hit = 1.0e6`` sentinel that drops farther hits)."""
    for spec in RAYS:
        for said in (spec.purpose, _docstring(spec.source) or spec.purpose):  # a kernel may have no docstring
            assert said.startswith("Cast a ray per pixel of a pinhole camera against "), spec.source
            assert "Ray cast" not in said and " of spheres" not in said, spec.source
        assert "no_hit" not in spec.source and not re.search(r"\b1\.0e6\b", spec.source), spec.source
        start = re.search(r"^\s+(t_hit|closest|nearest) = (\w+)$", spec.source, re.MULTILINE)
        assert start, spec.source
        far = _arg(spec, start.group(2))
        assert far["kind"] == "scalar" and far["name"] in ("max_t", "t_max"), spec.source


SPRINGS = _draw(P.spring_forces, 300)
PARTICLE_ARRAYS = {"positions", "particle_q", "x", "velocities", "particle_qd", "v",
                   "inv_mass", "particle_inv_mass", "inv_masses"}


def test_spring_signature_puts_particle_arrays_first_and_purpose_names_damping():
    """As in Warp's eval_springs: the particles' arrays (positions, then velocities) before the per-spring
    arrays, scalars after them; a damped spring's purpose says it is damped, an undamped one's does not."""
    damped = undamped = 0
    for spec in SPRINGS:
        inputs = [a for a in spec.launch["args"] if a["kind"] == "array" and a["role"] == "in"]
        first = [a["name"] in PARTICLE_ARRAYS for a in inputs]
        assert first[0] and first == sorted(first, reverse=True), spec.source
        kinds = [a["kind"] for a in spec.launch["args"] if a["role"] == "in"]
        assert kinds == sorted(kinds), spec.source  # arrays, then scalars
        if "length - " in spec.source and "lam = " in spec.source:
            continue  # a distance constraint: no spring force
        velocity = [a["name"] for a in inputs if a["name"] in ("velocities", "particle_qd", "v")]
        if velocity:
            damped += 1
            assert inputs[1]["name"] == velocity[0], spec.source
            assert "damp" in spec.purpose.lower() and "Hookean" not in spec.purpose, spec.source
        else:
            undamped += 1
            assert "damp" not in spec.purpose.lower(), spec.source
    assert damped > 60 and undamped > 30, (damped, undamped)


STENCILS = _draw(G.grid_stencil, 500)


def test_pressure_projection_is_named_for_the_projection_and_its_pressure():
    """A kernel subtracting the pressure gradient from a velocity reads ``pressure`` (or ``p``), not ``phi``,
    and is named for the projection (``subtract_pressure_gradient``, ``project_velocity``), not as a gradient;
    a kernel named ``pressure_gradient`` takes the gradient of a pressure."""
    projections = 0
    for spec in STENCILS:
        base = spec.name.rsplit("_", 1)[0]
        field = next(a["name"] for a in spec.launch["args"] if a["kind"] == "array" and a["role"] == "in")
        if re.search(r"\] = \w+\[[ijk, ]+\] - g$", spec.source, re.MULTILINE):
            projections += 1
            assert field in ("pressure", "p") and "phi" not in spec.source, spec.source
            assert base in ("subtract_pressure_gradient", "project_velocity", "apply_pressure"), spec.source
        elif base == "pressure_gradient":
            assert field == "pressure", spec.source
    assert projections > 20, projections


def test_bilinear_sampler_bounds_only_what_can_go_out_of_range():
    """After ``x`` is clamped to [0, n - 1], ``int(x)`` is its floor and ``i0 + 1`` only needs an upper bound:
    no ``wp.floor`` before ``int()``, no ``wp.clamp(i0 + 1, 0, ...)``."""
    samplers = 0
    for spec in _draw(G.advection, 300):
        for name, func in _funcs(spec.source).items():
            text = ast.unparse(func)
            if "i0" not in text:
                continue
            samplers += 1
            assert "wp.floor" not in text and "wp.clamp(i0 + 1" not in text and "wp.clamp(j0 + 1" not in text, text
            assert "wp.min(i0 + 1, f.shape[0] - 1)" in text and "wp.min(j0 + 1, f.shape[1] - 1)" in text, text
    assert samplers > 150, samplers


def test_reduction_names_say_the_mask_and_the_squared_errors():
    """A masked sum of plain values is named as masked (not ``sum_array``); a sum of squared errors says
    squared (``sum_squared_error``, ``sse``), not ``total_error``; one of absolute errors says absolute."""
    masked = squared = absolute = 0
    for spec in REDUCTIONS:
        base = spec.name.rsplit("_", 1)[0]
        total = re.search(r"wp\.atomic_add\((\w+), 0, (\w+)\)$|^\s+(\w+)\[0\] \+= (\w+)$", spec.source, re.MULTILINE)
        if not total:
            continue
        out, value = (total.group(1), total.group(2)) if total.group(1) else (total.group(3), total.group(4))
        if value == "value" and re.search(r"if \w+\[tid\] == 0:\n\s+return", spec.source):
            masked += 1
            assert "masked" in base and base not in ("sum_array", "sum_values", "reduce_sum"), spec.source
        if value == "err_sq":
            squared += 1
            assert "squared" in base or "sse" in base, spec.source
            assert out != "total_error" and "total_error" not in spec.source, spec.source
        if value == "abs_err":
            absolute += 1
            assert "abs" in base or "l1" in base, spec.source
    assert masked > 5 and squared > 10 and absolute > 10, (masked, squared, absolute)


MORE_TILES = [_built(Tiles.tile_blocks, i) for i in range(400, 1400)]


def test_elementwise_tiles_compute_their_offset_once():
    """Three loads and a store at one block offset: ``i * TILE`` is computed once (row and column locals,
    or one tuple), not in every call."""
    elementwise = [s for s in MORE_TILES if s.name.rsplit("_", 1)[0] in Tiles.NAMES["fma"] + Tiles.NAMES["lerp"]
                   + Tiles.NAMES["clip"]]
    assert len(elementwise) > 40
    for spec in elementwise:
        assert len(re.findall(r"\bi \* \w+", spec.source)) == 1, spec.source
        assert len(re.findall(r"\bj \* \w+", spec.source)) == 1, spec.source
    axpy = [s for s in MORE_TILES if s.name.rsplit("_", 1)[0] in Tiles.NAMES["axpy"] and "j = wp.tid()" in s.source]
    assert axpy
    for spec in axpy:
        assert len(re.findall(r"\bi \* \w+", spec.source)) == 1, spec.source


def test_stacked_mean_loads_each_matrix_once_and_leaves_sizes_to_the_constants():
    """The first matrix is loaded once, starting the sum, which goes on from it (the loop from 1);
    the docstring gives no sizes that belong to the module constants."""
    stacks = [s for s in MORE_TILES if s.name.rsplit("_", 1)[0] in Tiles.NAMES["batch_mean"] + Tiles.NAMES["batch_sum"]]
    for spec in stacks:
        assert not re.search(r"\d", _docstring(spec.source)), spec.source
        loads = len(re.findall(r"wp\.tile_load\(", spec.source))
        assert loads == 2 and re.search(r"for k in range\(1, \w+\):", spec.source), spec.source
    assert len(stacks) > 30, len(stacks)


def test_layer_norm_scale_and_shift_share_one_convention():
    """``gamma`` goes with ``beta``, ``weight`` with ``bias``: never ``weight`` with ``beta``."""
    norms = [s for s in MORE_TILES if s.name.rsplit("_", 1)[0] in Tiles.NAMES["layer_norm"] + Tiles.NAMES["rms_norm"]]
    pairs = 0
    for spec in norms:
        names = {a["name"] for a in spec.launch["args"]}
        assert not {"weight", "beta"} <= names and not {"gamma", "bias"} <= names, spec.source
        pairs += {"gamma", "beta"} <= names or {"weight", "bias"} <= names
    assert pairs > 5, pairs


# ---------------------------------------------------------------------------------------------
# round 25: stacked-matrix sums, atomic extremes, hash-grid counts, SPH density, integer division,
# and doubled words in purposes and docstrings

from jit.code.synthesis.categories import patterns_fluids as Fluids  # noqa: E402
from jit.code.synthesis.categories import patterns_geometry as Geo  # noqa: E402
from jit.code.synthesis.categories.registry import CATEGORIES  # noqa: E402


def test_stacked_matrices_sum_from_the_first_load_into_one_output():
    """The sum starts from the first matrix's tile (no zeroed tile it is then added to), and an
    averaging kernel writes the average only: no deviation of the first matrix beside it."""
    stacks = [s for s in MORE_TILES if s.name.rsplit("_", 1)[0] in Tiles.NAMES["batch_mean"] + Tiles.NAMES["batch_sum"]]
    assert len(stacks) > 30
    for spec in stacks:
        assert "tile_zeros" not in spec.source, spec.source
        assert re.search(r"^\s+acc = wp\.tile_load\(", spec.source, re.MULTILINE), spec.source
        assert [a["role"] for a in spec.launch["args"]].count("out") == 1, spec.source


def test_an_atomic_extreme_is_named_for_the_values_it_reduces():
    """``find_max`` (``reduce_min``, ...) holds the extreme of the values themselves; the extreme of
    squares, errors, lengths or weighted values says which in its name. No value is called ``r``."""
    plain = named = 0
    for spec in REDUCTIONS:
        assert not re.search(r"^\s+r = ", spec.source, re.MULTILINE), spec.source
        extreme = re.search(r"wp\.atomic_(max|min)\(\w+, 0, (\w+)\)$", spec.source, re.MULTILINE)
        if not extreme or extreme.group(2) == "x" or "for k in range(" in spec.source:  # boxes, grid strides
            continue
        base = spec.name.rsplit("_", 1)[0]
        if extreme.group(2) == "value" and not re.search(r"value = value \*", spec.source):
            plain += 1
            continue
        named += 1
        assert base not in {f"{v}_{e}" for e in ("max", "min") for v in ("reduce", "find")} | {"max_reduce", "min_reduce"}, \
            spec.source
        assert base.startswith((f"{extreme.group(1)}_", f"find_{extreme.group(1)}_")), spec.source
    assert plain > 3 and named > 10, (plain, named)


NEIGHBOURS = _draw(Geo.grid_neighbors)
SPH = _draw(Fluids.sph)


def _loop_lines(source: str) -> list[str]:
    """The lines inside the kernel's neighbour loops (``for index in`` or ``while ..._next``)."""
    lines, inside, depth = [], False, 0
    for line in source.splitlines():
        indent = len(line) - len(line.lstrip())
        if inside and line.strip() and indent <= depth:
            inside = False
        if inside:
            lines.append(line)
        if re.match(r"\s+(for \w+ in wp\.hash_grid_query|while wp\.hash_grid_query_next)", line):
            inside, depth = True, indent
    return lines


def test_a_neighbour_loop_squares_no_radius_of_its_own():
    """A radius or smoothing length squared is one value for the whole loop: computed once before
    it, not again for every neighbour the query returns."""
    loops = 0
    for spec in NEIGHBOURS + SPH:
        scalars = {a["name"] for a in spec.launch["args"] if a["kind"] == "scalar"}
        body = _loop_lines(spec.source)
        loops += bool(body)
        for line in body:
            squared = {a for a, b in re.findall(r"(?=\b(\w+) \* (\w+)\b)", line) if a == b}
            assert not squared & scalars, spec.source
    assert loops > 500, loops


def test_a_neighbour_count_marks_a_particle_without_neighbours_and_clamps_only_a_list():
    """The nearest distance of a particle with no neighbour is -1 (said in the docstring), not the
    query radius a neighbour exactly at the radius would give too; the radius, a float already, is
    not converted again; a count is clamped only where a list of that capacity is written."""
    nearest = 0
    for spec in NEIGHBOURS:
        assert not re.search(r"float\((radius|query_radius)\)", spec.source), spec.source
        assert "wp.min(count," not in spec.source, spec.source
        if re.search(r"(nearest_dist|min_distance)\[i\] = ", spec.source):
            nearest += 1
            assert re.search(r"if count == 0:\n\s+nearest = -1\.0\n", spec.source), spec.source
            doc = _docstring(spec.source)
            assert not doc or "-1 for a particle with none" in doc, spec.source  # a docstring says the -1
            assert "index == i" in spec.source or "index != i" in spec.source, spec.source  # not itself, at 0
    assert nearest > 10, nearest


def test_a_neighbour_count_and_its_nearest_distance_match_numpy():
    """Counts within the radius and the nearest distance (-1 for none), against all pairs in NumPy."""
    spec = next(s for s in NEIGHBOURS if "nearest = -1.0" in s.source and "num_particles" not in s.source
                and len([a for a in s.launch["args"] if a["role"] == "out"]) == 2)
    n = spec.launch["dim"][0]
    x = np.random.default_rng(25).uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    radius = 0.3
    grid = wp.HashGrid(16, 16, 16, device="cpu")
    points = wp.array(x, dtype=wp.vec3, device="cpu")
    grid.build(points, 0.5)
    outs, values = {}, []
    for arg in spec.launch["args"]:
        if arg["kind"] == "handle":
            values.append(grid.id)
        elif arg["kind"] == "scalar":
            values.append(radius)
        elif arg["role"] == "in":
            values.append(points)
        else:
            outs[arg["name"]] = wp.zeros(n, dtype=int if arg["dtype"] == "int32" else float, device="cpu")
            values.append(outs[arg["name"]])
    handle = wb.define([spec.source], "test_pattern_corrections_neighbour_count")
    try:
        handle.module.options["enable_backward"] = False
        wp.launch(handle.namespace[spec.name], dim=n, inputs=values, device="cpu")
    finally:
        handle.release()
    dist = np.linalg.norm(x[:, None, :].astype(np.float64) - x[None, :, :], axis=-1)
    np.fill_diagonal(dist, np.inf)
    near = np.where(dist < radius, dist, np.inf)
    count = (dist < radius).sum(axis=1)
    got_count = next(v.numpy() for k, v in outs.items() if k in ("neighbor_count", "counts"))
    got_near = next(v.numpy() for k, v in outs.items() if k in ("nearest_dist", "min_distance"))
    assert (count == 0).any() and (count > 0).any()
    np.testing.assert_array_equal(got_count, count, err_msg=spec.source)
    np.testing.assert_allclose(got_near, np.where(count > 0, near.min(axis=1), -1.0), rtol=1e-5, err_msg=spec.source)


def test_an_sph_density_writes_one_related_output_and_a_finite_volume():
    """A density kernel writes the density and at most one more output (the pressure, the volume or the
    neighbour count); a volume m / rho is divided by a floored rho, finite for a zero-mass neighbourhood."""
    densities = volumes = 0
    for spec in SPH:
        if not re.search(r"^\s+rho \*= ", spec.source, re.MULTILINE):
            continue
        densities += 1
        assert [a["role"] for a in spec.launch["args"]].count("out") <= 2, spec.source
        volume = re.search(r"^\s+(volumes|particle_volume)\[i\] = (.+)$", spec.source, re.MULTILINE)
        if volume:
            volumes += 1
            assert volume.group(2).endswith("/ wp.max(rho, 1.0e-6)"), spec.source
    assert densities > 80 and volumes > 5, (densities, volumes)


def test_integer_division_comments_use_the_kernels_divisor_and_say_warp_floors():
    """A worked example in a comment divides by the kernel's own divisor (an array of divisors gets
    none), and the comment says plainly that Warp's // floors as Python's does."""
    examples = 0
    for n in range(100):
        source = Checks.build("int_division", random.Random(f"division:{n}"), "00000000").source()
        comments = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
        assert any("Warp's // floors, as Python's does" in c for c in comments), source
        divisor = re.search(r"\bq = .+ / (?:wp\.int\d+\()?(\d+)\)?$", source, re.MULTILINE)
        for comment in comments:
            for used in re.findall(r"(?://|/|%) (\d+)", comment):
                examples += 1
                assert divisor and used == divisor.group(1), source
            if not divisor:
                assert not re.search(r"\d", comment), source
    assert examples > 20, examples


DOUBLED = re.compile(r"\b(\w+) \1\b(?![\^_])", re.IGNORECASE)  # J J^T is a product, not a doubled word


@pytest.mark.parametrize("category", sorted(c for c, v in CATEGORIES.items() if v.source == "patterns"))
def test_no_purpose_or_docstring_doubles_a_word(category):
    """Names spliced into phrases ("the capacity {cap}" with cap = capacity) must not double a word."""
    for i in range(40):
        kb = CATEGORIES[category].build(random.Random(f"doubled:{category}:{i}"), category, f"{i:08x}", "mixed")
        source = format_source(kb.source())
        texts = [kb.meta.get("record", {}).get("purpose", "")]
        texts += [ast.get_docstring(n) or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
        for text in texts:
            assert not DOUBLED.search(" ".join(text.split())), (DOUBLED.search(" ".join(text.split())), source)


def test_a_rigid_step_writes_only_the_velocities_it_changes():
    """Round 30: a body's linear velocity copied to its output unchanged (no force, no damping). Every
    velocity output of the rigid-body step is assigned in the kernel before it is stored."""
    from jit.code.synthesis.categories.patterns_rigid import rigid_body

    steps = bare = 0
    for i in range(200):
        source = rigid_body(random.Random(f"rigid:{i}"), "rigid_body", f"{i:08x}", "mixed").source()
        if "semi-implicit" not in source and "wp.transform(x, r)" not in source:
            continue
        steps += 1
        lines = [line.strip() for line in source.splitlines()]
        for at, line in enumerate(lines):
            stored = re.fullmatch(r"\w+\[tid\] = ([vw])", line)
            if stored:
                var = stored.group(1)
                assert any(re.match(rf"{var} \+= |{var} = .*\b{var}\b", earlier) for earlier in lines[:at]), source
        bare += not any(re.fullmatch(r"\w+\[tid\] = v", line) for line in lines)
    assert steps >= 40 and bare >= 5, (steps, bare)


def test_a_spring_reads_each_of_its_own_values_once():
    """Round 31: ``spring_stiffness[tid]`` read for the force and again for the energy. Every input
    array a spring kernel indexes by its own spring is read there once."""
    from jit.code.synthesis.categories import CATEGORIES

    energies = 0
    for i in range(120):
        kb = CATEGORIES["spring_forces"].build(random.Random(f"springs:{i}"), "spring_forces", f"{i:08x}", "mixed")
        source = kb.source()
        for p in kb.params:
            if p.kind == "array" and p.role == "in":
                assert len(re.findall(rf"\b{p.name}\[tid\]", source)) <= 1, (p.name, source)
        energies += "energ" in source
    assert energies >= 5


@pytest.mark.parametrize("category", ["spring_network", "fem_forces", "triangle_forces"])
def test_composed_inputs_of_one_index_space_stay_together(category):
    """Round 31: a velocity array between a spring's arrays. The arrays read by index (particles)
    come before the arrays of the launch's own items (springs, elements, faces), none interleaved."""
    from jit.code.synthesis.generator import generate

    mixed = 0
    for i in range(60):
        spec = generate(SEED, i, categories=[category])
        args = spec.metadata["launch"]["args"]
        arrays = [a["name"] for a in args if a["kind"] == "array" and a["role"] == "in"]
        flags = [re.search(rf"\b{name}\[tid\b", spec.source) is not None for name in arrays]
        assert flags == sorted(flags), (arrays, spec.source)
        mixed += len(set(flags)) == 2
    assert mixed >= 10, mixed


def test_round_32_findings_stay_fixed():
    """A bool-logic check with a float min check bolted on, a sum of squares named ``strided_sum``,
    and a rigid body's force divided by an unguarded mass."""
    from jit.code.synthesis.generator import generate

    squares = bodies = 0
    for n in range(60):
        source = Checks.build("bool_logic", random.Random(f"bools:{n}"), "00000000").source()
        assert "wp.min(" not in source, source
        spec = generate(SEED, n, categories=["atomic_reduction"])
        if re.search(r"s \+= (\w+)\[k\] \* \1\[k\]", spec.source):
            squares += 1
            assert re.search(r"def (strided_sum|grid_stride_reduce|reduce_strided)_[0-9a-f]{8}\(", spec.source) is None, spec.source
        spec = generate(SEED, n, categories=["integrate_bodies"])
        bodies += "[tid] * " in spec.source
        assert not re.search(r"\]\s*/\s*(body_mass|mass|masses)\b", spec.source), spec.source
    assert squares >= 2 and bodies >= 10, (squares, bodies)


def test_round_34_findings_stay_fixed():
    """Composed helpers with a fragment of the kernel's purpose as their docstring, one inverse mass
    for all bodies beside per-body moments, a clamp check between arbitrary bounds (-31, -29) named
    for min and max, and a hit index called ``any_hit``."""
    from jit.code.synthesis.generator import generate

    from jit.code.synthesis.pieces.base import PIECES

    phrases = {piece.says.lower() for piece in PIECES.values()}
    helpers = bodies = clamps = 0
    for n in range(80):
        spec = generate(SEED, n, sources=["composed"])
        for fn in ast.parse(spec.source).body:
            if isinstance(fn, ast.FunctionDef) and not any("kernel" in ast.unparse(d) for d in fn.decorator_list):
                helpers += 1
                doc = ast.get_docstring(fn)
                assert doc is None or doc.rstrip(".").lower() not in phrases, spec.source
        spec = generate(SEED, n, categories=["integrate_bodies"])
        args = {a["name"]: a for a in spec.metadata["launch"]["args"]}
        for name in ("body_inv_mass", "inv_mass"):
            if name in args:
                bodies += 1
                assert args[name]["kind"] == "array", spec.source
        source = Checks.build("minmax", random.Random(f"clamp:{n}"), "00000000").source()
        bounds = re.search(r"wp\.clamp\(\w+, (?:wp\.\w+\()?(-?\d+)\)?, (?:wp\.\w+\()?(-?\d+)\)?\)", source)
        if bounds:
            clamps += 1
            lower, upper = int(bounds.group(1)), int(bounds.group(2))
            assert lower % 10 == 0 and upper % 10 == 0 and upper - lower >= 20, source
        if not re.search(r"wp\.(min|max)\(\w+, b\)", source):
            assert not re.search(r"def test_(min_max|clamp_minmax)", source), source
        spec = generate(SEED, n, categories=["mesh_queries"])
        assert "any_hit" not in spec.source, spec.source
    assert helpers >= 10 and bodies >= 10 and clamps >= 20, (helpers, bodies, clamps)


def test_round_37_findings_stay_fixed():
    """An SPH density adding the particle's own share and then skipping it in the loop; a force loop
    skipping the particle that its r > 1.0e-6 test leaves out already; mesh-collision outputs named
    two ways (``points_out`` beside ``particle_v_new``); and a float64 mutant of a kernel named for
    float32 (``adam_step_kernel_float``)."""
    from jit.code.synthesis.generator import generate
    from jit.code.synthesis.mutate import retype

    forces = collides = 0
    for n in range(120):
        source = generate(SEED, n, categories=["sph"]).source
        assert "(0.0, " not in source.split("for index")[0] or "poly6" not in source, source
        if "r > 1.0e-6" in source:
            forces += 1
            assert "index != i" not in source and "index == i" not in source, source
        spec = generate(SEED, n, categories=["mesh_queries"])
        outs = [a["name"] for a in spec.metadata["launch"]["args"] if a["role"] == "out" and a["kind"] == "array"
                and a["dtype"] == "vec3f"]
        if "mesh_eval_position" in spec.source and len(outs) == 2:
            collides += 1
            assert len({re.sub(r"^(new_)?\w*?(_out|_new)?$", r"\1\2", o) for o in outs}) == 1, outs
    named = "import warp as wp\n\n@wp.kernel\ndef adam_step_kernel_float(x: wp.array(dtype=float)):\n    x[0] = 1.0\n"
    plain = named.replace("adam_step_kernel_float", "adam_step")
    assert retype.precision_options(ast.parse(named)) == () and retype.precision_options(ast.parse(plain)) == ("float64",)
    assert forces >= 5 and collides >= 3, (forces, collides)


def test_round_38_findings_stay_fixed():
    """A kinetic energy summed without the mass, a small strain taken from F = I + grad_u (adding the
    identity only to subtract it), and a grid-stride mean of absolute values named ``mean``."""
    from jit.code.synthesis.generator import generate

    energies = means = 0
    for n in range(150):
        spec = generate(SEED, n, categories=["integrate_particles"])
        for line in spec.source.splitlines():
            if "wp.atomic_add(" in line and "0.5" in line and "wp.dot(" in line:
                energies += 1
                assert re.search(r"0\.5\)? \* \w+ \* wp\.dot", line), spec.source
        spec = generate(SEED, n, categories=["material_stress"])
        assert not re.search(r"0\.5\)? \* \(F \+ F_?[tT]\) -", spec.source), spec.source
        spec = generate(SEED, n, categories=["atomic_reduction"])
        if "grid-stride" in spec.metadata["purpose"] and "Average" in spec.metadata["purpose"]:
            means += 1
            what = re.search(r"Average the (.+?) of", spec.metadata["purpose"]).group(1)
            if what != "values":
                assert not re.search(r"def (strided_mean|grid_stride_mean)_[0-9a-f]{8}\(", spec.source), spec.source
    assert energies >= 3 and means >= 3, (energies, means)


def test_round_39_findings_stay_fixed():
    """An anchor read into ``anchors_i``, velocities named ``particle_v`` beside positions ``x``, and a
    rigid body's two damping factors named two ways (``angular_damping_factor``, ``linear_decay``)."""
    from jit.code.synthesis.generator import generate

    anchors = pairs = damped = 0
    for n in range(120):
        spec = generate(SEED, n, categories=["integrate_particles"])
        if "anchor" in spec.source:
            anchors += 1
            assert "anchors_i" not in spec.source and "_positions_i" not in spec.source, spec.source
        spec = generate(SEED, n, categories=["grid_neighbors"])
        args = [a["name"] for a in spec.metadata["launch"]["args"]]
        for x, v in (("x", "v"), ("particle_x", "particle_v"), ("positions", "velocities")):
            if x in args and any(a in args for a in ("x", "v", "particle_x", "particle_v", "positions", "velocities")
                                 if a not in (x,)) and any("v" in a for a in args if a in ("v", "particle_v", "velocities")):
                pairs += 1
                assert v in args, args
        spec = generate(SEED, n, categories=["rigid_body"])
        factors = re.findall(r"\b(angular|linear)(_damping_factor|_decay)\b", spec.source)
        if len({kind for kind, _ in factors}) == 2:
            damped += 1
            assert len({style for _, style in factors}) == 1, spec.source
    assert anchors >= 5 and pairs >= 5 and damped >= 2, (anchors, pairs, damped)
