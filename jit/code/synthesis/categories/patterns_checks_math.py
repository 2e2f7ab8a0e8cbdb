"""Property-check kinds of Warp's math builtins, registered with the kinds of ``patterns_checks``:

- hyperbolic and inverse trigonometric functions against their definitions and inverses;
- ``log2``, ``log10`` against ``log``, and ``cbrt`` cubed back;
- the error functions and their inverses;
- float classes and signs: ``isnan``/``isinf``/``isfinite``, ``copysign``, ``frac``, ``step``,
  ``degrees``/``radians``;
- vector norms (L1, L2, Huber, pseudo-Huber) against their formulas;
- small factorisations (``svd2``, ``qr3``, ``eig3``) that must reconstruct their matrix, with
  ``diag``/``get_diag``;
- rigid-body velocity: ``skew``, ``velocity_at_point`` and ``quat_slerp`` endpoints.

Every input range keeps the identity well conditioned (no inverse near a pole, matrices close to
the identity), and the tolerance next to each check says why it is enough for the dtype. What it
leaves out: the writer and registry (``patterns_checks``), gradients and float16.
"""

from __future__ import annotations

import math
import random

from jit.code.synthesis.categories.patterns_checks import (
    FLOATS,
    MATS,
    QUATS,
    VECS,
    CheckKernel,
    Writer,
    kind,
    tolerance,
)


def precision(w: Writer) -> str:
    return w.pick("float32", "float32", "float64")


# ---------------------------------------------------------------------------------------------
# scalar functions


@kind("hyperbolic_trig")
def _hyperbolic_trig(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    one = w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("x", "values", "samples"), f, -2.0, 2.0))
    options = [
        ("cosh^2 - sinh^2 is 1", ["# x in [-2, 2]: cosh^2 stays below 15, so the difference loses about 4 bits",
                                  f"wp.expect_near(c * c - s * s, {one}, {tolerance(f, 10.0)})"]),
        ("tanh is sinh over cosh", [f"wp.expect_near(wp.tanh({x}), s / c, {tolerance(f)})"]),
        ("cosh + sinh is exp", ["# e**2 is below 8: a few roundings of values below 8",
                                f"wp.expect_near(c + s, wp.exp({x}), {tolerance(f, 10.0)})"])]
    keep = 1
    if rng.random() < 0.7:  # angles inside (-pi/2, pi/2), off the poles of tan and the ends of asin
        y = w.load("angle", w.array(w.pick("angles", "theta"), f, -1.2, 1.2))
        inverse = [("asin inverts sin",
                    ["# |angle| <= 1.2: asin's slope at sin(1.2) is below 3, so errors grow at most 3 times",
                     f"wp.expect_near(wp.asin(wp.sin({y})), {y}, {tolerance(f)})"]),
                   ("atan inverts tan", [f"wp.expect_near(wp.atan(wp.tan({y})), {y}, {tolerance(f)})"])]
        if s == "float64":  # near 0, acos(cos(y)) loses half the digits: float32 keeps too few of them
            inverse.append(("acos inverts cos up to the sign",
                            [f"wp.expect_near(wp.acos(wp.cos({y})), wp.abs({y}), {tolerance(f, 1.0e3)})"]))
        first = inverse.pop(rng.randrange(len(inverse)))
        options, keep = [options[0], first, *options[1:], *inverse], 2
    w.add(f"c = wp.cosh({x})", f"s = wp.sinh({x})")
    what = w.checks(options, 2, 4, keep=keep)
    w.add(f"{w.at(w.out(w.pick('tanh_out', 'squashed'), f))} = wp.tanh({x})")
    return w.finish(w.pick("test_hyperbolic", "check_hyperbolic_inverse_trig", "test_trig_identities"),
                    f"Check hyperbolic{' and inverse trigonometric' if keep == 2 else ''} identities of {s} values "
                    "for every input",
                    f"It checks that {what}")


@kind("logs_roots")
def _logs_roots(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    x = w.load("x", w.array(w.pick("x", "values", "magnitudes"), f, 0.125, 8.0))  # positive, away from 0

    def ln(base: float) -> str:  # ln 2 and ln 10 as module constants, not recomputed per thread
        value = repr(math.log(base))
        return w.constant(f"LN{int(base)}", value if s == "float32" else f"wp.float64({value})")
    tol = tolerance(f)
    w.add("# x in [1/8, 8]: logs below 3 and cubes below 8, a few roundings of each")
    what = w.checks([
        ("log2 is log over ln 2", [f"wp.expect_near(wp.log2({x}) * {ln(2.0)}, wp.log({x}), {tol})"]),
        ("log10 is log over ln 10", [f"wp.expect_near(wp.log10({x}) * {ln(10.0)}, wp.log({x}), {tol})"]),
        ("log2 of a square doubles", [f"wp.expect_near(wp.log2({x} * {x}), {w.typed(f, 2.0)} * wp.log2({x}), {tol})"]),
        ("cbrt cubes back", ["r = wp.cbrt(" + x + ")", f"wp.expect_near(r * r * r, {x}, {tol})"]),
        ("cbrt is odd", ["# cbrt is computed on the magnitude: the sign comes back exactly",
                         f"wp.expect_eq(wp.cbrt(-{x}), -wp.cbrt({x}))"]),
    ], 2, 3)
    logs, roots = "log" in what, "cbrt" in what
    store = w.pick("log2", "log10") if logs and (not roots or rng.random() < 0.5) else "cbrt"
    w.add(f"{w.at(w.out(w.pick(store + '_out', 'result'), f))} = wp.{store}({x})")
    subject = " and ".join(["logarithms in bases 2 and 10"] * logs + ["cube roots"] * roots)
    return w.finish(w.pick("test_logs_and_roots", "check_log_bases", "test_log_cbrt"),
                    f"Check {subject} of positive {s} values",
                    f"It checks that {what}")


@kind("error_functions")
def _error_functions(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    one = w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("x", "z", "values"), f, -1.5, 1.5))
    w.add(f"e = wp.erf({x})")
    what = w.checks([
        ("erf + erfc is 1", [f"wp.expect_near(e + wp.erfc({x}), {one}, {tolerance(f)})"]),
        ("erf is odd", [f"wp.expect_near(wp.erf(-{x}), -e, {tolerance(f)})"]),
        ("erfinv inverts erf", [
            "# |x| <= 1.5: erfinv's slope at erf(1.5) is below 9, so errors grow at most 9 times",
            f"wp.expect_near(wp.erfinv(e), {x}, {tolerance(f, 10.0)})"]),
        ("erfcinv inverts erfc", [f"wp.expect_near(wp.erfcinv(wp.erfc({x})), {x}, {tolerance(f, 10.0)})"]),
    ], 2, 3)
    w.add(f"{w.at(w.out(w.pick('erf_out', 'cdf'), f))} = e")
    return w.finish(w.pick("test_error_functions", "check_erf_inverse", "test_erf_identities"),
                    f"Check the error functions of {s} values{' and their inverses' if 'inv' in what else ''} "
                    "for every input",
                    f"It checks that {what}")


@kind("float_classes")
def _float_classes(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    zero, one = w.typed(f, 0.0), w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("x", "values", "offsets"), f, -8.0, 8.0))
    signs = []
    if rng.random() < 0.5:
        y = w.load("y", w.array(w.pick("magnitudes", "y", "scales"), f, -4.0, 4.0))
        signs = [("copysign takes the magnitude of one and the sign of the other",
                  [f"wp.expect_eq(wp.copysign({y}, {x}), -wp.abs({y}) if {x} < {zero} else wp.abs({y}))"])]
    w.add("# finite inputs are neither nan nor inf",
          f"wp.expect_eq(wp.isfinite({x}), True)", f"wp.expect_eq(wp.isnan({x}) or wp.isinf({x}), False)")
    what = w.checks([
        *signs,
        ("a computed infinity and nan are classified",
         [f"wp.expect_eq(wp.isinf({x} * {'wp.inf' if s == 'float32' else 'wp.float64(wp.inf)'}), True)",
          "# the square root of a negative number is nan",
          f"wp.expect_eq(wp.isnan(wp.sqrt(-{one} - {x} * {x})), True)"]),
        ("frac is x less its truncation",
         ["# below 2**23 the difference of x and its truncation is exact",
          f"wp.expect_eq(wp.frac({x}), {x} - wp.trunc({x}))"]),
        ("step is 1 below zero and 0 elsewhere", [f"wp.expect_eq(wp.step({x}), {one} if {x} < {zero} else {zero})"]),
        ("radians undoes degrees", ["# |x| <= 8: a few roundings of values below 500, scaled back",
                                    f"wp.expect_near(wp.radians(wp.degrees({x})), {x}, {tolerance(f)})"]),
    ], 2, 3, keep=len(signs))
    w.add(f"{w.at(w.out(w.pick('fraction_out', 'fractions'), f))} = wp.frac({x})")
    return w.finish(w.pick("test_float_classes", "check_float_sign_ops", "test_isfinite_copysign"),
                    f"Check float classification and sign builtins on {s} values for every input",
                    f"Finite inputs are finite, and it checks that {what}")


# ---------------------------------------------------------------------------------------------
# vectors and matrices


@kind("norms")
def _norms(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = "float32", w.pick(2, 3, 3, 4)  # Warp's norm helpers are @wp.func written for float32
    v, f = VECS[n, s], FLOATS[s]
    tol = tolerance(f)
    x = w.load("v", w.array(w.pick("v", "residuals", "errors"), v))
    d = w.pick(0.5, 1.0, 2.0)
    delta = w.typed(f, d)
    w.add(f"r = wp.length({x})", "# components in [-1, 1]: norms below 2, a few roundings each")
    what = w.checks([
        ("norm_l2 is the length", [f"wp.expect_near(wp.norm_l2({x}), r, {tol})"]),
        ("norm_l1 is the sum of magnitudes",
         [f"wp.expect_near(wp.norm_l1({x}), {' + '.join(f'wp.abs({x}[{k}])' for k in range(n))}, {tol})"]),
        ("norm_huber is quadratic inside delta and linear outside",
         [f"delta = {delta}",
          f"huber = {w.typed(f, 0.5)} * r * r if r <= delta else delta * (r - {w.typed(f, 0.5)} * delta)",
          f"wp.expect_near(wp.norm_huber({x}, delta), huber, {tol})"]),
        ("norm_pseudo_huber is the length of (v, delta)",
         [f"wp.expect_near(wp.norm_pseudo_huber({x}, {delta}), wp.sqrt({w.typed(f, d * d)} + r * r), {tol})"]),
        ("smooth_normalize divides by the pseudo-Huber norm",
         [f"wp.expect_near(wp.smooth_normalize({x}) * wp.norm_pseudo_huber({x}), {x}, {tol})"]),
    ], 2, 4, keep=1)
    store = w.pick("norm_l1", "norm_pseudo_huber")
    w.add(f"{w.at(w.out(w.pick('norms_out', 'penalties'), f))} = wp.{store}({x})")
    return w.finish(w.pick("test_vector_norms", "check_huber_norms", "test_norms"),
                    f"Check vector norms of {v.name} vectors against their formulas for every input vector",
                    f"It checks that {what}")


@kind("mat_factor")
def _mat_factor(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    which = w.pick("svd2", "qr3", "eig3")
    n = 2 if which == "svd2" else 3
    m = MATS[n, s]
    tol = tolerance(f, 10.0)
    small = w.array(w.pick("perturbations", "noise", "offsets"), m)
    w.add(f"eye = wp.identity(n={n}, dtype={f.py})",
          "# the identity plus a small matrix: well conditioned, entries below 1.5;",
          "# rebuilding it through a few rotations takes tens of roundings",
          f"A = eye + {w.typed(f, 0.25)} * {w.at(small)}")
    if which == "svd2":
        w.add("U, sigma, V = wp.svd2(A)",
              "wp.expect_near(U @ wp.diag(sigma) @ wp.transpose(V), A, " + tol + ")",
              "# singular values come sorted, largest first",
              "wp.expect_eq(sigma[0] >= sigma[1], True)")
        extra = [("U is orthogonal", [f"wp.expect_near(wp.transpose(U) @ U, eye, {tol})"]),
                 ("the product of singular values is |det A|",
                  [f"wp.expect_near(sigma[0] * sigma[1], wp.abs(wp.determinant(A)), {tol})"])]
        store, out_t, says = "sigma", VECS[2, s], "U diag(sigma) V^T rebuilds A"
    elif which == "qr3":
        w.add("Q, R = wp.qr3(A)", f"wp.expect_near(Q @ R, A, {tol})")
        extra = [("Q is orthogonal", [f"wp.expect_near(wp.transpose(Q) @ Q, eye, {tol})"]),
                 ("R is upper triangular",
                  [f"below = {w.spell(VECS[3, s])}(R[1, 0], R[2, 0], R[2, 1])",
                   f"wp.expect_near(below, {w.spell(VECS[3, s])}(), {tol})"])]
        store, out_t, says = "R", m, "Q R rebuilds A"
    else:
        w.add("# a symmetric matrix: real eigenvalues and orthogonal eigenvectors",
              "S = A + wp.transpose(A)", "Q, d = wp.eig3(S)")
        if s == "float32":
            tol = "5.0e-3"
            w.add("# eig3's float32 Jacobi sweeps stop early: entries below 3 come back within about 2e-3")
        w.add(f"wp.expect_near(Q @ wp.diag(d) @ wp.transpose(Q), S, {tol})")
        extra = [("the eigenvalues sum to the trace", [f"wp.expect_near(d[0] + d[1] + d[2], wp.trace(S), {tol})"]),
                 ("get_diag reads back the diagonal", ["wp.expect_eq(wp.get_diag(wp.diag(d)), d)"])]
        store, out_t, says = "d", VECS[3, s], "Q diag(d) Q^T rebuilds the symmetric part"
    what = w.checks(extra, 1, 2)
    if which == "eig3":
        w.add("# eigenvalues come in no fixed order: store their sum, the trace")
        w.add(f"{w.at(w.out(w.pick('traces', 'eig_sums'), f))} = d[0] + d[1] + d[2]")
    else:
        w.add(f"{w.at(w.out(w.pick(store + '_out', 'factor'), out_t))} = {store}")
    return w.finish(w.pick(f"test_{which}", f"check_{which}_reconstruct"),
                    f"Check that wp.{which} of a {m.name} matrix rebuilds it for every input",
                    f"{says}, and it checks that {what}")


@kind("spatial_velocity")
def _spatial_velocity(w: Writer, rng: random.Random) -> CheckKernel:
    s = "float32"  # wp.velocity_at_point takes a float32 spatial_vector and vec3
    v, f = VECS[3, s], FLOATS[s]
    tol = tolerance(f)
    omega = w.load("omega", w.array(w.pick("angular", "omegas", "spin"), v))
    vel = w.load("vel", w.array(w.pick("linear", "velocities", "vels"), v))
    r = w.load("r", w.array(w.pick("offsets", "arms", "points"), v))
    slerp = rng.random() < 0.5
    if slerp:
        a = w.load("qa", w.array(w.pick("start", "rot_a"), QUATS[s]))
        b = w.load("qb", w.array(w.pick("end", "rot_b"), QUATS[s]))
    w.add(f"twist = wp.spatial_vector({omega}, {vel})", f"point_vel = wp.velocity_at_point(twist, {r})",
          "# components in [-1, 1]: the velocity is below 3, a few roundings each",
          f"wp.expect_near(point_vel, wp.cross({omega}, {r}) + {vel}, {tol})")
    options = [("the skew matrix applies the cross product",
                [f"wp.expect_near(wp.skew({omega}) @ {r}, wp.cross({omega}, {r}), {tol})"]),
               ("the arm does not change the velocity along the spin axis",
                [f"wp.expect_near(wp.dot(point_vel, {omega}), wp.dot({vel}, {omega}), {tol})"]),
               ("the twist splits back into its parts",
                [f"wp.expect_eq(wp.spatial_top(twist), {omega})", f"wp.expect_eq(wp.spatial_bottom(twist), {vel})"])]
    if slerp:
        options.insert(0, ("slerp starts at one rotation and ends at the other", [
            f"start_rot = wp.quat_slerp({a}, {b}, {w.typed(f, 0.0)})",
            f"end_rot = wp.quat_slerp({a}, {b}, {w.typed(f, 1.0)})",
            "# slerp may flip the quaternion's sign for the shorter arc: compare rotated arms",
            f"wp.expect_near(wp.quat_rotate(start_rot, {r}), wp.quat_rotate({a}, {r}), {tol})",
            f"wp.expect_near(wp.quat_rotate(end_rot, {r}), wp.quat_rotate({b}, {r}), {tol})"]))
    what = w.checks(options, 1, 2, keep=int(slerp))
    w.add(f"{w.at(w.out(w.pick('point_velocities', 'v_out'), v))} = point_vel")
    return w.finish(w.pick("test_velocity_at_point", "check_rigid_point_velocity", "test_spatial_twist"),
                    "Check the velocity of an offset point on a rigid body for every input twist",
                    f"The point moves at omega x r + v, and it checks that {what}")
