"""Property-check kinds of Warp's math builtins, registered with the kinds of ``patterns_checks``:

- hyperbolic and inverse trigonometric functions against their definitions and inverses;
- ``log2``, ``log10`` against ``log``, and ``cbrt`` cubed back;
- the error functions and their inverses;
- float classes (``isnan``/``isinf``/``isfinite``) and, apart from them, sign builtins (``copysign``,
  ``sign``, ``step``, the oddness of ``trunc`` and ``frac``);
- vector norms (L1, L2, Huber, pseudo-Huber) against their formulas;
- small factorisations (``svd2``, ``qr3``, ``eig3``) that must reconstruct their matrix, with
  ``diag``/``get_diag``;
- rigid-body velocity: ``skew``, ``velocity_at_point`` and the twist's parts.

Every input range, stated in the kernel's docstring, keeps the identity well conditioned (no
inverse near a pole, matrices close to the identity), and the tolerance next to each check says why it is enough for the dtype. What it
leaves out: the writer and registry (``patterns_checks``), gradients and float16.
"""

from __future__ import annotations

import math
import random

from jit.code.synthesis.categories.patterns import fmt
from jit.code.synthesis.categories.patterns_checks import (
    FLOATS,
    MATS,
    QUATS,
    VECS,
    CheckKernel,
    Writer,
    clause,
    interval,
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
    x = w.load("x", w.array(w.pick("values", "samples"), f, -1.0, 1.0))
    w.add(f"c = wp.cosh({x})", f"s = wp.sinh({x})", f"t = wp.tanh({x})")
    options = [
        ("tanh is sinh over cosh", [f"wp.expect_near(t, s / c, {tolerance(f)})"]),  # the stored t
        ("cosh^2 - sinh^2 is 1", ["# |x| <= 1: cosh^2 is below 2.4, so the difference of squares cancels less than 2 bits",
                                  f"wp.expect_near(c * c - s * s, {one}, {tolerance(f)})"]),
        ("cosh + sinh is exp", ["# e is below 3: a few roundings of values below 3",
                                f"wp.expect_near(c + s, wp.exp({x}), {tolerance(f)})"])]
    keep, domain = 1, "values in [-1, 1]"
    if rng.random() < 0.7:  # angles inside (-pi/2, pi/2), off the poles of tan and the ends of asin
        # acos(cos(y)) is off by about eps / |y| near 0: angles stay away from 0 where acos is checked
        lo = 0.25 if s == "float64" else -1.2
        y = w.load("angle", w.array(w.pick("angles", "theta"), f, lo, 1.2))
        inverse = [("asin inverts sin",
                    ["# |angle| <= 1.2: asin's slope at sin(1.2) is below 3, so errors grow at most 3 times",
                     f"wp.expect_near(wp.asin(wp.sin({y})), {y}, {tolerance(f)})"]),
                   ("atan inverts tan", [f"wp.expect_near(wp.atan(wp.tan({y})), {y}, {tolerance(f)})"])]
        if s == "float64":  # float32 keeps too few digits of cos near 1
            inverse.append(("acos inverts cos",
                            ["# angles of at least 0.25: acos's slope there is below 5",
                             f"wp.expect_near(wp.acos(wp.cos({y})), {y}, {tolerance(f)})"]))
        first = inverse.pop(rng.randrange(len(inverse)))
        options, keep = [options[0], first, *options[1:], *inverse], 2
        domain += f" and angles in {interval(lo, 1.2)}"
    what = w.checks(options, 2, 4, keep=keep)
    w.add(f"{w.at(w.out(w.pick('tanh_out', 'squashed'), f))} = t")
    names = ("test_hyperbolic", "test_hyperbolic_identities") + \
        (("check_hyperbolic_inverse_trig", "test_trig_identities") if keep == 2 else ())
    return w.finish(w.pick(*names),
                    f"Check hyperbolic{' and inverse trigonometric' if keep == 2 else ''} identities of {s} "
                    f"{domain} and write tanh",
                    f"It checks that {what}")


@kind("logs_roots")
def _logs_roots(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    x = w.load("x", w.array(w.pick("values", "magnitudes", "samples"), f, 0.125, 8.0))  # positive, away from 0

    def ln(base: float) -> str:  # ln 2 and ln 10 as module constants, not recomputed per thread
        value = repr(math.log(base))
        return w.constant(f"LN{int(base)}", value if s == "float32" else f"wp.float64({value})")
    store = w.pick("log2", "log10", "cbrt")
    local = {"log2": "log2_x", "log10": "log10_x", "cbrt": "root"}[store]
    w.add(f"{local} = wp.{store}({x})")

    def call(fn: str) -> str:  # the stored function is computed once
        return local if fn == store else f"wp.{fn}({x})"
    tol = tolerance(f)
    w.add("# x in [1/8, 8]: every value compared is at most 8 in magnitude, a few roundings each")
    checks = {
        "log2": ("log2 is log over ln 2", [f"wp.expect_near({call('log2')} * {ln(2.0)}, wp.log({x}), {tol})"]),
        "log10": ("log10 is log over ln 10", [f"wp.expect_near({call('log10')} * {ln(10.0)}, wp.log({x}), {tol})"]),
        "cbrt": ("cbrt cubes back", [f"wp.expect_near(root * root * root, {x}, {tol})"] if store == "cbrt"
                 else [f"root = wp.cbrt({x})", f"wp.expect_near(root * root * root, {x}, {tol})"]),
        "square": ("log2 of a square doubles",
                   [f"wp.expect_near(wp.log2({x} * {x}), {w.typed(f, 2.0)} * {call('log2')}, {tol})"]),
        "odd": ("cbrt is odd", ["# the cube root is odd: cbrt of -x is exactly minus cbrt of x",
                                f"wp.expect_eq(wp.cbrt(-{x}), -{call('cbrt')})"]),
    }
    if store != "cbrt":  # cbrt computed once: the odd check reads the root when it comes after the cube
        checks["odd"] = ("cbrt is odd", ["# the cube root is odd: cbrt of -x is exactly minus cbrt of x",
                                         f"wp.expect_eq(wp.cbrt(-{x}), -wp.cbrt({x}))"])
    rest = [k for k in checks if k != store]
    what = w.checks([checks[store], *(checks[k] for k in rest)], 2, 3, keep=1)
    w.add(f"{w.at(w.out(w.pick(store + '_out', 'result'), f))} = {local}")
    bases = [b for b in ("2", "10") if f"log{b}" in what]
    logs = f"logarithms in base{'s' * (len(bases) > 1)} {' and '.join(bases)}" if bases else ""
    subject = " and ".join(part for part in (logs, "cube roots" if "cbrt" in what else "") if part)
    written = {"log2": "their log2", "log10": "their log10", "cbrt": "their cube roots"}[store]
    fns = w.called("log2", "log10", "cbrt")
    names = ["check_" + "_".join(fns)]  # named for the builtins the drawn checks call
    if bases and "cbrt" in fns:
        names.append("test_logs_and_roots")
    if w.called("log") and "cbrt" not in fns:  # log2 or log10 against the natural log, and nothing else
        names.append("check_log_bases")
    return w.finish(w.pick(*names),
                    f"Check {subject} of {s} values in [0.125, 8] and write {written}",
                    f"It checks that {what}")


@kind("error_functions")
def _error_functions(w: Writer, rng: random.Random) -> CheckKernel:
    s = precision(w)
    f = FLOATS[s]
    one = w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("z", "values", "samples"), f, -1.5, 1.5))
    w.add(f"e = wp.erf({x})")
    what = w.checks([
        ("erf + erfc is 1", [f"wp.expect_near(e + wp.erfc({x}), {one}, {tolerance(f)})"]),
        ("erf is odd", [f"wp.expect_near(wp.erf(-{x}), -e, {tolerance(f)})"]),
        # erfinv'(y) = sqrt(pi) / 2 * exp(erfinv(y)^2): at |x| = 1.5 that is 0.886 * exp(2.25) = 8.4, so
        # the rounding of erf (or erfc) grows at most 9 times back through the inverse
        ("erfinv inverts erf", [
            "# |x| <= 1.5: the inverse's slope there is below 9 in size, so errors grow at most 9 times",
            f"wp.expect_near(wp.erfinv(e), {x}, {tolerance(f, 10.0)})"]),
        ("erfcinv inverts erfc", [
            "# |x| <= 1.5: the inverse's slope there is below 9 in size, so errors grow at most 9 times",
            f"wp.expect_near(wp.erfcinv(wp.erfc({x})), {x}, {tolerance(f, 10.0)})"]),
    ], 2, 3)
    w.add(f"{w.at(w.out(w.pick('erf_out', 'erf_values'), f))} = e")
    inverses = [name for name in ("erfinv", "erfcinv") if f"{name} inverts" in what]
    also = f" and the inverse{'s' * (len(inverses) > 1)} {' and '.join(inverses)}" if inverses else ""
    if len(inverses) == 2:
        names = ("test_error_functions", "check_erf_inverses", "test_erf_inverses")
    elif inverses:  # named for the one inverse it checks
        names = ("test_error_functions", f"check_{inverses[0]}", f"test_{inverses[0]}")
    else:
        names = ("test_error_functions", "test_erf_identities") + (("check_erf_erfc",) if w.called("erfc") else ())
    return w.finish(w.pick(*names), f"Check the error functions{also} on {s} values in [-1.5, 1.5] and write erf",
                    f"It checks that {what}")


@kind("float_classes", 0.5)
def _float_classes(w: Writer, rng: random.Random) -> CheckKernel:
    """Classification only: finite inputs, and an infinity and a nan computed from them."""
    s = precision(w)
    f = FLOATS[s]
    one = w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("values", "samples"), f, -8.0, 8.0))
    inf = "wp.inf" if s == "float32" else "wp.float64(wp.inf)"
    what = w.checks([
        ("finite inputs are finite", [f"wp.expect_eq(wp.isfinite({x}), True)"]),
        ("finite inputs are neither infinite nor nan",
         [f"wp.expect_eq(wp.isinf({x}), False)", f"wp.expect_eq(wp.isnan({x}), False)"]),
        ("a computed infinity is infinite, neither finite nor nan",
         ["# 1 + x * x is at least 1: times infinity it is infinite", f"big = ({one} + {x} * {x}) * {inf}",
          "wp.expect_eq(wp.isinf(big), True)", "wp.expect_eq(wp.isfinite(big), False)",
          "wp.expect_eq(wp.isnan(big), False)"]),
        ("the square root of a negative number is nan, neither finite nor infinite",
         ["# -1 - x * x is at most -1: its square root is nan", f"root = wp.sqrt(-{one} - {x} * {x})",
          "wp.expect_eq(wp.isnan(root), True)", "wp.expect_eq(wp.isfinite(root), False)",
          "wp.expect_eq(wp.isinf(root), False)"]),
    ], 2, 3, keep=1)
    used = w.called("isfinite", "isinf", "isnan")
    names = ["test_float_classes", "test_float_classification"]
    if len(used) == 3:  # named for the builtins only when it calls every one of them
        names.append("test_isfinite_isinf_isnan")
    return w.finish(w.pick(*names), f"Check float classification with {clause([f'wp.{fn}' for fn in used])} "
                                     f"on {s} values in [-8, 8]",
                    f"It checks that {what}")


@kind("float_signs", 0.5)
def _float_signs(w: Writer, rng: random.Random) -> CheckKernel:
    """Sign builtins: copysign takes its magnitude from one value and its sign from another."""
    s = precision(w)
    f = FLOATS[s]
    zero, one = w.typed(f, 0.0), w.typed(f, 1.0)
    x = w.load("x", w.array(w.pick("values", "samples"), f, -8.0, 8.0))
    sign = w.load("s", w.array(w.pick("signs", "sign_sources"), f, -4.0, 4.0))
    w.add(f"signed = wp.copysign({x}, {sign})")
    what = w.checks([
        ("copysign takes the magnitude of the value and the sign of the other",
         [f"wp.expect_eq(signed, -wp.abs({x}) if {sign} < {zero} else wp.abs({x}))"]),
        ("copysign onto 1 is abs", [f"wp.expect_eq(wp.copysign({x}, {one}), wp.abs({x}))"]),
        ("copysign of 1 is sign", ["# wp.sign is -1 below zero and 1 otherwise: the sign copysign puts on 1",
                                   f"wp.expect_eq(wp.copysign({one}, {sign}), wp.sign({sign}))"]),
        ("step is 1 below zero and 0 elsewhere",
         [f"wp.expect_eq(wp.step({sign}), {one} if {sign} < {zero} else {zero})"]),
        ("trunc and frac are odd", ["# truncation rounds toward zero, the same on both sides of it",
                                    f"wp.expect_eq(wp.trunc(-{x}), -wp.trunc({x}))",
                                    f"wp.expect_eq(wp.frac(-{x}), -wp.frac({x}))"]),
    ], 2, 3, keep=1)
    w.add(f"{w.at(w.out(w.pick('signed_values', 'copysigned'), f))} = signed")
    used = [f"wp.{fn}" for fn in w.called("copysign", "sign", "step", "trunc", "frac")]
    names = ["check_float_signs"]  # a general name when several builtins are checked
    if set(used) <= {"wp.copysign", "wp.sign"}:  # copysign alone, or onto 1 against sign
        names = ["check_copysign", "check_copysign_identities"]
    elif len(used) == 2:  # copysign and one other
        names.append("check_" + "_".join(fn[3:] for fn in used))
    return w.finish(w.pick(*names),
                    f"Check {clause(used)} on {s} values in [-8, 8] with signs from [-4, 4], "
                    "and write the values with those signs",
                    f"It checks that {what}")


# ---------------------------------------------------------------------------------------------
# vectors and matrices


@kind("norms")
def _norms(w: Writer, rng: random.Random) -> CheckKernel:
    s, n = "float32", w.pick(2, 3, 3, 4)  # Warp's norm helpers are @wp.func written for float32
    v, f = VECS[n, s], FLOATS[s]
    tol = tolerance(f)
    x = w.load("v", w.array(w.pick("vectors", "residuals", "errors"), v))
    d = w.pick(0.5, 1.0)  # below the largest length, so that both of norm_huber's branches are reached
    delta = w.typed(f, d)
    store = w.pick("norm_l1", "norm_pseudo_huber")
    longest = "2" if n == 4 else f"sqrt({n})"
    w.add(f"r = wp.length({x})", f"# components in [-1, 1]: lengths of at most {longest}, L1 norms of at most {n}, "
          "a few roundings each")
    l1 = ("norm_l1 is the sum of magnitudes",
          [f"l1 = wp.norm_l1({x})",
           f"wp.expect_near(l1, {' + '.join(f'wp.abs({x}[{k}])' for k in range(n))}, {tol})"])
    pseudo = ("norm_pseudo_huber is the length of (v, delta)",
              [f"pseudo = wp.norm_pseudo_huber({x}, {delta})",
               "# Warp's pseudo-Huber norm is delta * sqrt(1 + |v|^2 / delta^2), with no - 1",
               f"wp.expect_near(pseudo, wp.sqrt({w.typed(f, d * d)} + r * r), {tol})"])
    stored, other = (l1, pseudo) if store == "norm_l1" else (pseudo, l1)
    what = w.checks([
        stored,
        ("norm_l2 is the length", [f"wp.expect_near(wp.norm_l2({x}), r, {tol})"]),
        other,
        ("norm_huber is quadratic inside delta and linear outside",
         [f"delta = {delta}",
          f"huber = {w.typed(f, 0.5)} * r * r if r <= delta else delta * (r - {w.typed(f, 0.5)} * delta)",
          f"wp.expect_near(wp.norm_huber({x}, delta), huber, {tol})"]),
        ("smooth_normalize divides by the pseudo-Huber norm",
         [f"wp.expect_near(wp.smooth_normalize({x}) * wp.norm_pseudo_huber({x}), {x}, {tol})"]),
    ], 2, 4, keep=1)
    w.add(f"{w.at(w.out(w.pick('norms_out', 'penalties'), f))} = {'l1' if store == 'norm_l1' else 'pseudo'}")
    written = "L1 norm" if store == "norm_l1" else f"pseudo-Huber norm (delta {fmt(d)})"
    huber = w.called("norm_huber", "norm_pseudo_huber")
    return w.finish(w.pick("test_vector_norms", "test_norms", *(("check_huber_norms",) if huber else ())),
                    f"Check vector norms of {v.name} vectors with components in [-1, 1] against their formulas "
                    f"and write the {written}",
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
              "# singular values come sorted, largest first: the larger of the two is sigma[0]",
              "wp.expect_eq(wp.max(sigma), sigma[0])")
        extra = [("U is orthogonal", [f"wp.expect_near(wp.transpose(U) @ U, eye, {tol})"]),
                 ("the product of singular values is |det A|",
                  [f"wp.expect_near(sigma[0] * sigma[1], wp.abs(wp.determinant(A)), {tol})"])]
        store, out_t, says = "sigma", VECS[2, s], "U diag(sigma) V^T rebuilds A"
        outs = ("sigma_out", "singular_values")
    elif which == "qr3":
        w.add("Q, R = wp.qr3(A)", f"wp.expect_near(Q @ R, A, {tol})")
        extra = [("Q is orthogonal", [f"wp.expect_near(wp.transpose(Q) @ Q, eye, {tol})"]),
                 ("R is upper triangular",
                  [f"below = {w.spell(VECS[3, s])}(R[1, 0], R[2, 0], R[2, 1])",
                   f"wp.expect_near(below, {w.spell(VECS[3, s])}(), {tol})"])]
        store, out_t, says = "R", m, "Q R rebuilds A"
        outs = ("R_out", "r_factors")
    else:
        w.add("# a symmetric matrix: real eigenvalues and orthogonal eigenvectors",
              "S = A + wp.transpose(A)", "Q, d = wp.eig3(S)")
        if s == "float32":
            tol = "5.0e-3"
            w.add("# eig3's float32 Jacobi sweeps stop early: entries below 3 come back within about 3e-3")
        w.add(f"wp.expect_near(Q @ wp.diag(d) @ wp.transpose(Q), S, {tol})")
        extra = [("the eigenvalues sum to the trace",
                  ["# eigenvalues come in no fixed order: their sum, the trace, is what is stored",
                   "total = d[0] + d[1] + d[2]", f"wp.expect_near(total, wp.trace(S), {tol})"]),
                 ("get_diag reads back the diagonal", ["wp.expect_eq(wp.get_diag(wp.diag(d)), d)"])]
        store, out_t, says = "d", VECS[3, s], "Q diag(d) Q^T rebuilds the symmetric part"
    what = w.checks(extra, 1, 2, keep=int(which == "eig3"))  # eig3 stores the eigenvalues' sum: check it
    if which == "eig3":
        w.add(f"{w.at(w.out(w.pick('traces', 'eig_sums'), f))} = total")
    else:
        w.add(f"{w.at(w.out(w.pick(*outs), out_t))} = {store}")  # named for what it holds
    matrix = "A + A^T" if which == "eig3" else "A"
    return w.finish(w.pick(f"test_{which}", f"check_{which}_reconstruct"),
                    f"Check that wp.{which} rebuilds {matrix}, A the identity plus 0.25 times a {m.name} perturbation "
                    f"with entries in [-1, 1]{', and write the sum of the eigenvalues' if which == 'eig3' else ''}",
                    f"{says}, and it checks that {what}")


@kind("spatial_velocity")
def _spatial_velocity(w: Writer, rng: random.Random) -> CheckKernel:
    s = "float32"  # wp.velocity_at_point takes a float32 spatial_vector and vec3
    v, f = VECS[3, s], FLOATS[s]
    tol = tolerance(f)
    spins, velocities = w.pick(("angular", "linear"), ("omegas", "velocities"), ("spins", "vels"))
    omega = w.load("omega", w.array(spins, v))
    vel = w.load("vel", w.array(velocities, v))
    r = w.load("r", w.array(w.pick("offsets", "arms", "points"), v))
    w.add(f"twist = wp.spatial_vector({omega}, {vel})", f"point_vel = wp.velocity_at_point(twist, {r})",
          "# components in [-1, 1]: the velocity is below 5, a few roundings each",
          f"wp.expect_near(point_vel, wp.cross({omega}, {r}) + {vel}, {tol})")
    options = [("the skew matrix applies the cross product",
                [f"wp.expect_near(wp.skew({omega}) @ {r}, wp.cross({omega}, {r}), {tol})"]),
               ("the arm does not change the velocity along the spin axis",
                [f"wp.expect_near(wp.dot(point_vel, {omega}), wp.dot({vel}, {omega}), {tol})"]),
               ("the twist splits back into its parts",
                [f"wp.expect_eq(wp.spatial_top(twist), {omega})", f"wp.expect_eq(wp.spatial_bottom(twist), {vel})"])]
    what = w.checks(options, 1, 2)
    w.add(f"{w.at(w.out(w.pick('point_velocities', 'v_out'), v))} = point_vel")
    return w.finish(w.pick("test_velocity_at_point", "check_rigid_point_velocity", "test_spatial_twist"),
                    "Check the velocity of an offset point on a rigid body for every input twist and arm with "
                    "components in [-1, 1]",
                    f"The point moves at omega x r + v, and it checks that {what}")
