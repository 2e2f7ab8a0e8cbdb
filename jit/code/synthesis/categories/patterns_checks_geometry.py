"""Property-check kinds of geometry, registered with the scalar kinds of ``patterns_checks``:

- vectors: cross and dot products, normalisation;
- matrices: inverses of well-conditioned matrices (the identity plus a small matrix built in the
  kernel), products, determinants and traces, outer products, 2D/3D rotations written from
  literals (Pythagorean cosines and sines, orthogonal to float32 rounding), and the 4x4 matrices
  of input poses applied to homogeneous points;
- quaternions: rotation round trips, axis-angle, composition, literal turns; transforms;
- points placed through (nested) ``@wp.struct`` frames.

Vectors and matrices are ranged, as the kernel's docstring states, so that the identities hold
within a tolerance chosen for the dtype, said next to it. What it leaves out: the writer and the registry (``patterns_checks``),
spatial vectors and matrices.
"""

from __future__ import annotations

import random

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.patterns import fmt
from jit.code.synthesis.categories.patterns_checks import (
    FLOATS,
    MATS,
    QUATS,
    TRANSFORMS,
    VECS,
    CheckKernel,
    Writer,
    kind,
    tolerance,
    typed,
)
from jit.code.synthesis.types import WType


def unit_length(w: Writer, expr: str, f: WType, tol: str) -> str:
    """``expect_near(length, 1)``: in float32 a unit length is off by a few ulps, within the default 1e-6."""
    if f.name == "float32" and w.rng.random() < 0.7:
        return f"wp.expect_near(wp.length({expr}), 1.0)"
    return f"wp.expect_near(wp.length({expr}), {typed(f, 1.0)}, {tol})"


# ---------------------------------------------------------------------------------------------
# vectors and matrices


@kind("vec_cross")
def _vec_cross(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    v, f = VECS[3, s], FLOATS[s]
    first, second = w.pick(("lhs", "rhs"), ("edges_a", "edges_b"), ("first", "second"))
    a = w.load("a", w.array(first, v))
    b = w.load("b", w.array(second, v))
    tol = tolerance(v, 10.0)
    w.add(f"c = wp.cross({a}, {b})",
          "# components in [-1, 1]: the products are at most 9 (|a|^2 |b|^2), a few roundings each")
    what = w.checks([("is orthogonal to both factors",
                      [f"wp.expect_near(wp.dot(c, {a}), {w.typed(f, 0.0)}, {tol})",
                       f"wp.expect_near(wp.dot(c, {b}), {w.typed(f, 0.0)}, {tol})"]),
                     ("obeys Lagrange's identity",
                      ["# Lagrange's identity", f"ab = wp.dot({a}, {b})",
                       f"wp.expect_near(wp.length_sq(c), wp.length_sq({a}) * wp.length_sq({b}) - ab * ab, {tol})"]),
                     ("changes sign with the order of the factors",
                      [f"wp.expect_near(wp.cross({b}, {a}), -c, {tolerance(v)})"])])
    w.add(f"{w.at(w.out(w.pick('normals', 'crossed'), v))} = c")
    names = ("test_cross_product", "test_vec_cross") + (("check_cross_orthogonal",) if "orthogonal" in what else ())
    return w.finish(w.pick(*names),
                    f"Check cross product identities for every input pair of {v.name} vectors with components in [-1, 1]",
                    f"The cross product {what}")


@kind("vec_normalize")
def _vec_normalize(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    v, f = VECS[n, s], FLOATS[s]
    x = w.load("v", w.array(w.pick("vectors", "directions", "dirs"), v, 0.25, 2.0))  # never the zero vector
    store = w.pick("unit", "length")
    w.add(f"unit = wp.normalize({x})", f"length = wp.length({x})",
          "# components in [0.25, 2]: lengths of at most 4, a few roundings each")
    what = w.checks([("have length 1", [unit_length(w, "unit", f, tolerance(f))]),
                     ("scale back to the input", [f"wp.expect_near(unit * length, {x}, {tolerance(f)})"]),
                     ("project the input onto its length", [f"wp.expect_near(wp.dot(unit, {x}), length, {tolerance(f)})"])])
    out = w.out("units" if store == "unit" else w.pick("lengths", "norms"), v if store == "unit" else f)
    w.add(f"{w.at(out)} = {store}")
    return w.finish(w.pick("test_normalize", "check_unit_vectors", "test_vec_normalize"),
                    f"Check wp.normalize of {v.name} vectors for every input vector with components in [0.25, 2]",
                    f"Normalized vectors {what}")


@kind("vec_dot")
def _vec_dot(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(3, 3, 4)
    v, f = VECS[n, s], FLOATS[s]
    first, second = w.pick(("lhs", "rhs"), ("x", "y"), ("u", "v"))
    a = w.load("a", w.array(first, v))
    b = w.load("b", w.array(second, v))
    tol = tolerance(f)
    attrs = rng.random() < 0.5
    comps = " + ".join(f"{a}.{c} * {b}.{c}" if attrs else f"{a}[{k}] * {b}[{k}]" for k, c in zip(range(n), "xyzw"))
    w.add(f"d = wp.dot({a}, {b})", f"# components in [-1, 1]: sums of {n} products of at most 1, a few roundings each")
    of_d = [("its component form", [f"wp.expect_near(d, {comps}, {tol})"]),  # the checks of the stored d
            ("the Cauchy-Schwarz bound",
             [f"wp.expect_eq(wp.abs(d) <= wp.length({a}) * wp.length({b}) + {tol}, True)"]),
            ("the sum of wp.cw_mul", [f"p = wp.cw_mul({a}, {b})",
                                      f"wp.expect_near({' + '.join(f'p[{k}]' for k in range(n))}, d, {tol})"])]
    options = [of_d.pop(rng.randrange(len(of_d))), *of_d,
               ("wp.length_sq", [f"wp.expect_near(wp.length_sq({a}), wp.dot({a}, {a}), {tol})"])]
    if s == "float32":  # a vector of literal weights
        weights = [fmt(w.pick(0.1, 0.25, 0.5, 0.75, 1.5, 2.0)) for _ in range(n)]
        options.append(("a weighted sum with literal weights",
                        [f"weights = wp.vec{n}({', '.join(weights)})",
                         (f"wp.expect_near(wp.dot(weights, {a}), "
                          f"{' + '.join(f'{x} * {a}[{k}]' for k, x in enumerate(weights))}, {tol})")]))
    what = w.checks(options, keep=1)
    w.add(f"{w.at(w.out(w.pick('dots', 'products'), f))} = d")
    return w.finish(w.pick("test_dot_product", "check_dot", "test_vec_dot"),
                    f"Check wp.dot of {v.name} vectors with components in [-1, 1] for every input pair",
                    f"It compares wp.dot with {what}")


@kind("mat_inverse")
def _mat_inverse(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    m, v, f = MATS[n, s], VECS[n, s], FLOATS[s]
    small = w.array(w.pick("perturbations", "offsets", "noise"), m)
    scale = {2: 0.25, 3: 0.15, 4: 0.1}[n]  # |scale * entries| summed over a row is at most 1/2
    eye_dtype = "float" if s == "float32" and rng.random() < 0.5 else f.py
    w.add(f"eye = wp.identity(n={n}, dtype={eye_dtype})",
          "# the identity plus a small matrix: singular values in [0.5, 1.5], condition number below 3",
          f"A = eye + {w.typed(f, scale)} * {w.at(small)}",
          "A_inv = wp.inverse(A)")
    tol = tolerance(f)
    options = [("the matrix times its inverse is the identity",
                [f"wp.expect_near(A @ A_inv, eye, {tol})"]),
               ("the inverse times the matrix is the identity", [f"wp.expect_near(A_inv @ A, eye, {tol})"]),
               ("the determinants multiply to 1",
                [f"wp.expect_near(wp.determinant(A) * wp.determinant(A_inv), {w.typed(f, 1.0)}, {tol})"])]
    if rng.random() < 0.5:
        b = w.load("b", w.array(w.pick("rhs", "loads", "targets"), v))
        options.insert(0, ("the inverse solves A x = b", [f"solution = A_inv @ {b}",
                                                          f"wp.expect_near(A @ solution, {b}, {tol})"]))
        what = w.checks(options, keep=1)
        w.add(f"{w.at(w.out(w.pick('solutions', 'x'), v))} = solution")
    else:
        what = w.checks(options)
        w.add(f"{w.at(w.out(w.pick('inverses', 'A_inv_out'), m))} = A_inv")
    return w.finish(w.pick("test_inverse", "check_mat_inverse", "test_inverse_identity"),
                    f"Check wp.inverse of the identity plus {fmt(scale)} times a {n}x{n} perturbation with entries in [-1, 1]",
                    f"It checks that {what}")


# (cos, sin) from Pythagorean triples: exact decimals, so the matrices are orthogonal to the last bit
ROTATIONS = ((0.6, 0.8), (0.8, 0.6), (0.28, 0.96), (0.96, 0.28), (0.352, 0.936), (0.936, 0.352), (0.6, -0.8),
             (0.28, -0.96))


@kind("mat_rotation")
def _mat_rotation(w: Writer, rng: random.Random) -> CheckKernel:
    c, s = w.pick(*ROTATIONS)
    n = w.pick(2, 3)
    v = VECS[n, "float32"]
    R = w.pick("R", "rot", "turn")
    x = w.load("p", w.array(w.pick("points", "positions"), v, -2.0, 2.0))
    axis = 2
    if n == 2:
        w.add(f"{R} = wp.mat22({fmt(c)}, {fmt(-s)}, {fmt(s)}, {fmt(c)})")
    else:  # about one of the axes: the plane of the other two turns
        axis = rng.randrange(3)
        j, k = [m for m in range(3) if m != axis]
        entries = [["0.0"] * 3 for _ in range(3)]
        entries[axis][axis], entries[j][j], entries[k][k] = "1.0", fmt(c), fmt(c)
        entries[j][k], entries[k][j] = fmt(-s), fmt(s)
        w.add(f"{R} = wp.mat33({', '.join(e for row in entries for e in row)})")
    w.add(f"rotated = {R} @ {x}", f"# points below {3 if n == 2 else 3.5} from the origin: a few float32 roundings")
    options = [("keeps lengths", [f"wp.expect_near(wp.length(rotated), wp.length({x}), 1.0e-5)"]),
               ("is undone by its transpose", ["# a row vector times R applies the transpose, which undoes R",
                                               f"wp.expect_near(rotated @ {R}, {x}, 1.0e-5)"])]
    if n == 3:
        options.append((f"leaves {'xyz'[axis]} unchanged", [f"# {'xyz'[axis]} is the rotation axis",
                                                            f"wp.expect_eq(rotated[{axis}], {x}[{axis}])"]))
    if rng.random() < 0.4:
        other = w.load("q", w.array(w.pick("others", "targets"), v, -2.0, 2.0))
        options.insert(0, ("keeps dot products",
                           [f"wp.expect_near(wp.dot(rotated, {R} @ {other}), wp.dot({x}, {other}), 1.0e-5)"]))
        what = w.checks(options, 1, 3, keep=1)
    else:
        what = w.checks(options)
    w.add(f"{w.at(w.out(w.pick('rotated_points', 'out', 'turned'), v))} = rotated")
    return w.finish(w.pick("test_rotation_matrix", "check_mat_rotation", "test_mat_rotate"),
                    f"Check a {n}D rotation matrix written from literals for every input point with components in [-2, 2]",
                    f"The rotation {what}")


@kind("mat_homogeneous")
def _mat_homogeneous(w: Writer, rng: random.Random) -> CheckKernel:
    """A rigid transform per input as a 4x4 matrix, applied to homogeneous points: the matrix comes from
    the caller's pose (a ``wp.transform``, or a unit quaternion and a translation), not from literals."""
    tt, v = TRANSFORMS["float32"], VECS[3, "float32"]
    M = w.pick("M", "pose_mat", "xform_mat")
    if rng.random() < 0.6:
        pose = w.load("pose", w.array(w.pick("poses", "transforms", "xforms"), tt, -2.0, 2.0))
        x = w.load("p", w.array(w.pick("points", "positions"), v, -2.0, 2.0))
        w.add(f"{M} = wp.transform_to_matrix({pose})")
        direct = f"wp.transform_point({pose}, {x})"
        given = "pose"
    else:
        q = w.load("q", w.array(w.pick("rotations", "orientations"), QUATS["float32"], -1.0, 1.0))
        t = w.load("t", w.array(w.pick("translations", "origins"), v, -2.0, 2.0))
        x = w.load("p", w.array(w.pick("points", "positions"), v, -2.0, 2.0))
        w.add(f"{M} = wp.transform_compose({t}, {q}, wp.vec3(1.0, 1.0, 1.0))")
        direct = f"wp.quat_rotate({q}, {x}) + {t}"
        given = "unit rotation and translation"
    w.add(f"h = {M} @ wp.vec4({x}[0], {x}[1], {x}[2], 1.0)",
          "moved = wp.vec3(h[0], h[1], h[2])",
          "# the last row is 0 0 0 1: a point stays a point")
    what = w.checks([
        ("keeps the homogeneous coordinate 1", ["wp.expect_eq(h[3], 1.0)"]),
        (f"moves points as its {given} does",
         ["# translations and points below 3.5 in length: a few float32 roundings of values below 7",
          f"wp.expect_near({direct}, moved, 1.0e-5)"]),
        ("matches wp.transform_point", [f"wp.expect_near(wp.transform_point({M}, {x}), moved, 1.0e-5)"]),
        ("keeps distances from the translation",
         [f"offset = wp.vec3({M}[0, 3], {M}[1, 3], {M}[2, 3])",
          "# points below 3.5 from the origin: a few float32 roundings",
          f"wp.expect_near(wp.length(moved - offset), wp.length({x}), 1.0e-5)"]),
        ("moves directions without the translation",
         [f"wp.expect_near(moved - wp.transform_vector({M}, {x}), wp.vec3({M}[0, 3], {M}[1, 3], {M}[2, 3]), 1.0e-5)"])],
        3, 4, keep=2)
    w.add(f"{w.at(w.out(w.pick('moved_points', 'out', 'world_points'), v))} = moved")
    inputs = "pose" if given == "pose" else "rotation and translation"
    return w.finish(w.pick("test_homogeneous_transform", "check_mat44_transform", "test_mat44_point"),
                    f"Check the 4x4 matrix of each input {inputs} on points: translations and points with "
                    "components in [-2, 2], unit rotations",
                    f"The matrix {what}")


@kind("mat_product")
def _mat_product(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    m, f = MATS[n, s], FLOATS[s]
    first, second = w.pick(("lhs", "rhs"), ("left", "right"), ("first", "second"))
    A = w.load("A", w.array(first, m, -0.5, 0.5))
    B = w.load("B", w.array(second, m, -0.5, 0.5))
    tol = tolerance(f)
    w.add(f"AB = {A} @ {B}", "# entries in [-1/2, 1/2]: entries of products and determinants are at most 1")
    keep_det = rng.random() < 0.5  # store the determinant of the product, or the product itself
    det = "det_ab" if keep_det else "wp.determinant(AB)"
    if keep_det:
        w.add("det_ab = wp.determinant(AB)")
    transpose = ("the transpose of a product is the product of transposes reversed",
                 [f"wp.expect_near(wp.transpose(AB), wp.transpose({B}) @ wp.transpose({A}), {tol})"])
    determinant = ("the determinant of a product is the product of determinants",
                   [f"wp.expect_near({det}, wp.determinant({A}) * wp.determinant({B}), {tol})"])
    # the stored value's check first, always drawn
    what = w.checks([*((determinant, transpose) if keep_det else (transpose, determinant)),
        ("the trace does not depend on the order", [f"wp.expect_near(wp.trace(AB), wp.trace({B} @ {A}), {tol})"]),
        ("wp.ddot is the trace of A^T B", [f"wp.expect_near(wp.ddot({A}, {B}), wp.trace(wp.transpose({A}) @ {B}), {tol})"])],
        keep=1)
    if keep_det:
        w.add(f"{w.at(w.out(w.pick('dets', 'determinants'), f))} = det_ab")
    else:
        w.add(f"{w.at(w.out(w.pick('products', 'AB_out'), m))} = AB")
    names = ["test_mat_product"]  # and the product identities it draws: the stored value's always
    names += [f"test_{fn}_product" for fn in w.called("transpose", "determinant") if f"{fn} of a product" in what]
    return w.finish(w.pick(*names),
                    f"Check identities of {m.name} matrix products for every input pair with entries in [-0.5, 0.5]",
                    f"It checks that {what}")


@kind("mat_outer")
def _mat_outer(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = w.pick("float32", "float32", "float64"), w.pick(2, 3, 3, 4)
    v, m, f = VECS[n, s], MATS[n, s], FLOATS[s]
    first, second = w.pick(("lhs", "rhs"), ("u", "v"), ("left", "right"))
    a = w.load("a", w.array(first, v))
    b = w.load("b", w.array(second, v))
    tol = tolerance(f)
    w.add(f"M = wp.outer({a}, {b})")
    r, c = rng.randrange(n), rng.randrange(n)
    options = [("its entries", ["# each entry is one product, so it is exact",
                                f"wp.expect_eq(M[{r}, {c}], {a}[{r}] * {b}[{c}])"]),
               ("its transpose", [f"wp.expect_eq(wp.transpose(M), wp.outer({b}, {a}))"]),
               ("its trace", [f"wp.expect_near(wp.trace(M), wp.dot({a}, {b}), {tol})"])]
    if rng.random() < 0.5:
        x = w.load("x", w.array(w.pick("vectors", "probes"), v))
        options.insert(0, ("its product with a vector", [f"applied = M @ {x}",
                                                          f"wp.expect_near(applied, {a} * wp.dot({b}, {x}), {tol})"]))
        what = w.checks(options, keep=1)
        w.add(f"{w.at(w.out(w.pick('applied_out', 'projected'), v))} = applied")
    else:
        what = w.checks(options)
        w.add(f"{w.at(w.out(w.pick('outers', 'M_out'), m))} = M")
    return w.finish(w.pick("test_outer_product", "check_outer"),
                    f"Check wp.outer of {v.name} vectors with components in [-1, 1] for every input pair",
                    f"It checks {what}")


# ---------------------------------------------------------------------------------------------
# quaternions and transforms


def literal_turn(w: Writer, q: str, v: str, tol: str) -> list[str]:
    """Lines checking that a unit quaternion written from literals, (0, 0, sin, cos) on some axis,
    composed with ``q`` rotates ``v`` like the two rotations in turn (``r`` is ``q`` applied to ``v``)."""
    sin, cos = w.pick(*ROTATIONS)
    xyz = ["0.0", "0.0", "0.0"]
    xyz[w.rng.randrange(3)] = fmt(sin)
    spelled = "wp.quat" if w.plain else "wp.quatf"
    parts = ", ".join(xyz + [fmt(cos)])
    return ["# sin^2 + cos^2 = 1 exactly in decimals: a unit rotation written out",
            f"turn = {spelled}({parts})",
            f"wp.expect_near(wp.quat_rotate(turn * {q}, {v}), wp.quat_rotate(turn, r), {tol})"]


@kind("quat_rotate")
def _quat_rotate(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    q = w.load("q", w.array(w.pick("rotations", "orientations"), QUATS[s]))  # drawn unit
    v = w.load("v", w.array(w.pick("vectors", "points"), VECS[3, s], -2.0, 2.0))
    tol = tolerance(FLOATS[s], 10.0)
    w.add(f"r = wp.quat_rotate({q}, {v})", "# unit rotations of vectors below 4: a few roundings of values below 4")
    what = w.checks([("wp.quat_rotate_inv undoes it", [f"wp.expect_near(wp.quat_rotate_inv({q}, r), {v}, {tol})"]),
                     ("it keeps lengths", [f"wp.expect_near(wp.length(r), wp.length({v}), {tol})"]),
                     ("it matches the rotation matrix", [f"wp.expect_near(wp.quat_to_matrix({q}) @ {v}, r, {tol})"]),
                     ("the inverse quaternion undoes it",
                      [f"wp.expect_near(wp.quat_rotate(wp.quat_inverse({q}), r), {v}, {tol})"]),
                     *([("a literal turn composes with it", literal_turn(w, q, v, tol))] if s == "float32" else [])])
    w.add(f"{w.at(w.out(w.pick('rotated', 'out'), VECS[3, s]))} = r")
    names = ["test_quat_rotate"]
    if w.called("quat_rotate_inv"):
        names.append("check_quat_rotate_inv")
    if "undoes it" in what:  # quat_rotate_inv or the inverse quaternion takes the vector back
        names.append("test_quat_roundtrip")
    return w.finish(w.pick(*names),
                    f"Check wp.quat_rotate of {VECS[3, s].name} vectors with components in [-2, 2] for every unit input rotation",
                    f"It checks that {what}")


@kind("quat_axis_angle")
def _quat_axis_angle(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    f = FLOATS[s]
    axes = w.array(w.pick("axes", "axis_dirs", "hinge_axes"), VECS[3, s], 0.2, 1.0)
    angles = w.array(w.pick("angles", "theta", "joint_angles"), f, 0.2, 3.0)
    w.add(f"axis = wp.normalize({w.at(axes)})", f"angle = {w.at(angles)}",
          "q = wp.quat_from_axis_angle(axis, angle)")
    loose, tight = tolerance(f, 10.0), tolerance(f)
    what = w.checks([("gives the axis and angle back",
                      ["recovered_axis, recovered_angle = wp.quat_to_axis_angle(q)",
                       "# angles in [0.2, 3]: sin(angle / 2), which divides the axis, is above 0.09",
                       f"wp.expect_near(recovered_angle, angle, {loose})",
                       f"wp.expect_near(recovered_axis, axis, {loose})"]),
                     ("is unit", [unit_length(w, "q", f, tight)]),
                     ("fixes its axis", ["# a rotation leaves its own axis in place",
                                         f"wp.expect_near(wp.quat_rotate(q, axis), axis, {tight})"]),
                     ("has a matrix that fixes the axis",
                      [f"wp.expect_near(wp.quat_to_matrix(q) @ axis, axis, {tight})"]),
                     ("has a real part of cos(angle / 2)",
                      [f"wp.expect_near(q[3], wp.cos({w.typed(f, 0.5)} * angle)"
                       + (")" if s == "float32" else f", {tight})")])], keep=1)  # float32: the default 1e-6
    if rng.random() < 0.7:
        w.add(f"{w.at(w.out(w.pick('quats', 'rotations'), QUATS[s]))} = q")
    else:
        w.add(f"{w.at(w.out(w.pick('recovered', 'angles_out'), f))} = recovered_angle")
    return w.finish(w.pick("test_quat_axis_angle", "check_axis_angle_roundtrip"),
                    "Check quaternions built from an axis with components in [0.2, 1] and an angle in [0.2, 3] for every "
                    "input pair", f"The quaternion {what}")


@kind("quat_compose")
def _quat_compose(w: Writer, rng: random.Random) -> CheckKernel:
    s = w.pick("float32", "float32", "float64")
    qt, f = QUATS[s], FLOATS[s]
    first, second = w.pick(("first", "second"), ("q_a", "q_b"), ("parent", "child"))  # one naming for the pair
    q1 = w.load("q1", w.array(first, qt))
    q2 = w.load("q2", w.array(second, qt))
    v = w.load("v", w.array(w.pick("vectors", "points"), VECS[3, s], -2.0, 2.0))
    w.add(f"q = {q1} * {q2}")
    what = w.checks([
        ("rotates like its factors in turn",
         [(f"wp.expect_near(wp.quat_rotate(q, {v}), wp.quat_rotate({q1}, wp.quat_rotate({q2}, {v})), "
           f"{tolerance(f, 10.0)})")]),
        ("is unit", [unit_length(w, "q", f, tolerance(f))]),
        ("times its inverse is the identity",
         [f"wp.expect_near(q * wp.quat_inverse(q), wp.quat_identity(dtype={f.py}), {tolerance(f)})"]),
        ("has the product of its factors' matrices",
         [f"wp.expect_near(wp.quat_to_matrix(q), wp.quat_to_matrix({q1}) @ wp.quat_to_matrix({q2}), {tolerance(f)})"])],
        keep=1)
    w.add(f"{w.at(w.out(w.pick('composed', 'products'), qt))} = q")
    return w.finish(w.pick("test_quat_compose", "check_quat_product"),
                    f"Check products of unit {qt.name} rotations for every input pair, applied to vectors with components "
                    "in [-2, 2]", f"The product {what}")


@kind("transform_roundtrip")
def _transform_roundtrip(w: Writer, rng: random.Random) -> CheckKernel:
    tt, v = TRANSFORMS["float32"], VECS[3, "float32"]
    t = w.load("xform", w.array(w.pick("transforms", "poses", "xforms"), tt, -2.0, 2.0))
    x = w.load("x", w.array(w.pick("points", "local_points"), v, -2.0, 2.0))
    w.add(f"p = wp.transform_point({t}, {x})",
          "# components in [-2, 2]: |t| and |x| below 3.5, so |p| below 7 (11 through two transforms)")
    of_p = [("the inverse transform takes points back",  # the checks of the stored p
             [f"wp.expect_near(wp.transform_point(wp.transform_inverse({t}), p), {x}, 1.0e-4)"]),
            ("a point is rotated then translated",
             [(f"wp.expect_near(p, wp.quat_rotate(wp.transform_get_rotation({t}), {x}) "
               f"+ wp.transform_get_translation({t}), 1.0e-4)")])]
    options = [of_p.pop(rng.randrange(2)), *of_p,
               ("vectors ignore the translation",
                [(f"wp.expect_near(wp.transform_vector({t}, {x}), "
                  f"wp.quat_rotate(wp.transform_get_rotation({t}), {x}), 1.0e-4)")])]
    if rng.random() < 0.5:
        other = w.load("other", w.array(w.pick("offsets", "parents"), tt, -2.0, 2.0))
        compose = w.pick(f"{t} * {other}", f"wp.transform_multiply({t}, {other})")
        options.insert(1, ("transforms compose",
                           [(f"wp.expect_near(wp.transform_point({compose}, {x}), "
                             f"wp.transform_point({t}, wp.transform_point({other}, {x})), 1.0e-4)")]))
        what = w.checks(options, 2, 3, keep=2)
    else:
        what = w.checks(options, keep=1)
    w.add(f"{w.at(w.out(w.pick('world_points', 'out'), v))} = p")
    names = ["test_transform_point", "test_transform_identities"]
    if w.called("transform_inverse"):  # the inverse takes points back
        names += ["check_transform_inverse", "test_transform_roundtrip"]
    return w.finish(w.pick(*names),
                    "Check wp.transform_point for every input transform and point: translations and points with "
                    "components in [-2, 2], unit rotations", f"It checks that {what}")


@kind("struct_frames", 1.25)
def _struct_frames(w: Writer, rng: random.Random) -> CheckKernel:
    origin, rotation, scale = w.pick("origin", "position", "translation"), w.pick("rotation", "orientation"), \
        w.pick("scale", "size")
    frame_fields = [(origin, VECS[3, "float32"]), (rotation, QUATS["float32"])]
    # the array and its element are named for the struct: bodies of Body, one body
    kind, many, b = w.pick(("Body", "bodies", "body"), ("Instance", "instances", "instance"), ("Shape", "shapes", "shape"))
    if rng.random() < 0.75:  # a frame nested in a body: body.frame.origin
        frame = w.struct(w.pick("Frame", "Pose", "Transform"), frame_fields)
        member = w.pick("frame", "pose")
        body = w.struct(kind, [(member, frame), (scale, T.FLOAT32)])
        nested = "nested "
    else:
        body = w.struct(kind, [*frame_fields, (scale, T.FLOAT32)])
        member, nested = "", ""
    at = f"{b}.{member}." if member else f"{b}."
    o, q, k = at + origin, at + rotation, f"{b}.{scale}"
    bodies = w.array(many, body, 0.5, 2.0)
    x = w.load("x", w.array(w.pick("points", "local_points", "vertices"), VECS[3, "float32"], -1.0, 1.0))
    w.add(f"{b} = {w.at(bodies)}",
          f"scaled = {x} * {k}",
          f"world = wp.quat_rotate({q}, scaled) + {o}",
          "# scales and origins in [0.5, 2]: world points below 7")
    what = w.checks([("matches wp.transform_point",
                      [f"xform = wp.transform({o}, {q})",
                       "wp.expect_near(wp.transform_point(xform, scaled), world, 1.0e-5)"]),
                     ("is undone by the inverse rotation and scale",
                      [f"local = wp.quat_rotate_inv({q}, world - {o}) / {k}", f"wp.expect_near(local, {x}, 1.0e-5)"]),
                     ("scales distances from the origin",
                      [f"wp.expect_near(wp.length(world - {o}), wp.length({x}) * {k}, 1.0e-5)"])], 1, 2)
    w.add(f"{w.at(w.out(w.pick('world_points', 'out', 'placed'), VECS[3, 'float32']))} = world")
    names = ("test_struct_frames", "check_nested_struct_transform" if nested else "check_struct_transform",
             "test_struct_placement")
    return w.finish(w.pick(*names),
                    f"Check points with components in [-1, 1] placed through a {nested}struct frame whose origin and "
                    "scale lie in [0.5, 2]",
                    f"The placement {what}")
