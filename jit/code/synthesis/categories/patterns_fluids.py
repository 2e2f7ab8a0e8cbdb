"""Pattern family of particle fluids: SPH density and forces over the neighbours a hash grid finds.

As in Warp's SPH example, each particle queries a ``wp.HashGrid`` built over the positions with
the smoothing length as radius, tests the distance of every candidate the query returns (the
query gives every point of the cells the radius touches) and sums the kernel terms of those
within it. The kernels' normalisation constants (315 / (64 pi h^9) for poly6, 45 / (pi h^6)
for the spiky gradient and the viscosity Laplacian) are computed once on the host and passed
in; their launch ranges are the constants' values over the smoothing length's range.

``poly6``, ``loop_body`` and ``neighbour_loop`` are shared with the neighbour-query families
(``patterns_geometry``). See ``patterns`` for how a pattern family is written. What it leaves
out: all-pairs loops (real code queries a grid) and grid-based fluids (``patterns_grid``).
"""

from __future__ import annotations

import math
import re

from jit.code.synthesis import types as T
from jit.code.synthesis.names import paired
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT
from jit.code.synthesis.categories.patterns import Flavour, Pattern
from jit.code.synthesis.pieces.kit import PLAIN

GRID = "a wp.HashGrid built over the positions array"
H_RANGE = (0.3, 0.6)  # the smoothing length's launch range


def poly6(p: Pattern) -> str:
    """The poly6 smoothing kernel's shape (h^2 - r^2)^3 as a ``@wp.func``, zero at and beyond h."""
    name = p.name(p.rng.choice(("poly6", "poly6_weight", "w_poly6")))
    p.func(f"""
@wp.func
def {name}(r2: float, h: float):
    if r2 >= h * h:
        return 0.0
    q = h * h - r2
    return q * q * q
""")
    return name


def coefficient_range(constant, lo: float, hi: float) -> tuple[float, float]:
    """The range of a normalisation constant that falls with h, over h in [lo, hi]."""
    return round(constant(hi), 3), round(constant(lo), 3)


def poly6_coefficient(p: Pattern) -> str:
    """A scalar parameter holding 315 / (64 pi h^9), computed by the caller."""
    lo, hi = coefficient_range(lambda h: 315.0 / (64.0 * math.pi * h ** 9), *H_RANGE)
    return p.scalar(p.pick("poly6_coeff", "density_normalization"), lo=lo, hi=hi)


def neighbour_loop(p: Pattern, grid: str, x: str, radius: str, body: list[str], skip_self: bool = True) -> None:
    """``for index in wp.hash_grid_query(...)``, or the explicit query / query_next form.

    With ``skip_self`` the particle itself is left out, by a ``continue`` or by a wrapping ``if``.
    """
    if p.rng.random() < 0.5:
        p.add(f"for index in wp.hash_grid_query({grid}, xi, {radius}):")
    else:
        p.add(f"query = wp.hash_grid_query({grid}, xi, {radius})", "index = int(0)",
              "while wp.hash_grid_query_next(query, index):")
    loop_body(p, body, "index", "i", skip_self)


def loop_body(p: Pattern, body: list[str], other: str, me: str, skip_self: bool) -> None:
    """A neighbour loop's body; with ``skip_self`` the item itself is left out, by a ``continue``
    or by a wrapping ``if``."""
    if skip_self and p.coin():
        p.add(f"if {other} == {me}:", f"{INDENT}continue", *body, indent=1)
    elif skip_self:
        p.add(f"if {other} != {me}:", indent=1)
        p.add(*body, indent=2)
    else:
        p.add(*body, indent=1)


def particle_start(p: Pattern, grid: str, x: str, n: int) -> None:
    """``i`` (the particle, in grid-cell order as Warp's examples launch, or the thread) and ``xi``."""
    if p.rng.random() < 0.6:
        p.add(f"i = wp.hash_grid_point_id({grid}, tid)")
        p.kb.meta["tid"] = "tid"
    else:
        p.guard("i", x, ("num_particles", n))
        p.kb.meta["tid"] = "i"
    p.add(f"xi = {x}[i]")


@register("sph", 1.0, source="patterns")
def sph(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < PLAIN))
    n = rng.choice((64, 128, 256))
    p.kb.dims = [n]
    x = rng.choice(("positions", "particle_x", "x"))
    grid = p.handle(rng.choice(("grid", "grid_id")), {"object": "hash_grid", "points": x, "cell_size": H_RANGE[1]})
    p.array(x, T.VEC3F, lo=-1.0, hi=1.0)
    h = p.scalar(rng.choice(("smoothing_length", "kernel_radius", "h")), lo=H_RANGE[0], hi=H_RANGE[1])
    if p.coin(0.3):
        masses = p.array(rng.choice(("masses", "particle_mass")), T.FLOAT32, lo=0.5, hi=2.0)
        mass = f"{masses}[index]"
    else:
        mass = p.scalar(rng.choice(("particle_mass", "mass")), lo=0.5, hi=2.0)
    particle_start(p, grid, x, n)
    draw = rng.random()
    build = _density if draw < 0.45 else _xsph if draw < 0.6 else _forces
    base, purpose = build(p, grid, x, h, mass)
    # Warp's adjoint of a hash-grid query loop is not checked against differences: no gradient check
    return p.finish(base, p.kb.dims, [p.kb.meta.pop("tid")], purpose=purpose, differentiable=False,
                    needs=f"needs {GRID}")


def _density(p: Pattern, grid: str, x: str, h: str, mass: str) -> tuple[str, str]:
    rng = p.rng
    # at most one output besides the density, derived from it: the pressure, the volume, or how
    # many neighbours lie within h (that one needs the inline kernel's distance test)
    extra = rng.choices((None, "pressure", "volume", "count"), (0.4, 0.3, 0.15, 0.15))[0]
    # one mass for all particles: multiplied once after the loop rather than per neighbour
    factored = "[index]" not in mass
    term = "" if factored else f"{mass} * "
    p.add("rho = float(0.0)")  # the particle itself is one of the query's candidates: its own share
    if extra != "count" and p.coin(0.6):
        kernel = poly6(p)
        r2 = p.pick("wp.dot(d, d)", "wp.length_sq(d)")
        body = [f"d = xi - {x}[index]", f"rho += {term}{kernel}({r2}, {h})"]
        p.why(("poly6 is zero beyond h: the query's candidates further away add nothing",
               "the poly6 helper is zero for r >= h: far candidates of the query drop out"))
    else:  # the kernel written inline, with its distance test (h squared once, before the loop)
        p.add(f"h_sq = {h} * {h}")
        body = [f"r2 = wp.length_sq(xi - {x}[index])", "if r2 < h_sq:", f"{INDENT}q = h_sq - r2",
                f"{INDENT}rho += {term}q * q * q"]
        if extra == "count":  # how many neighbours lie within h (the query returns more)
            body.append(f"{INDENT}neighbors += 1")
            p.add("neighbors = int(0)")
    neighbour_loop(p, grid, x, h, body, skip_self=False)
    p.add(f"rho *= {mass} * {poly6_coefficient(p)}" if factored else f"rho *= {poly6_coefficient(p)}")
    out = p.array(rng.choice(("particle_rho", "densities")), T.FLOAT32, "out")
    p.add(f"{out}[i] = rho")
    if extra == "count":
        counts = p.array(rng.choice(("neighbor_count", "num_neighbors")), T.INT32, "out")
        p.add(f"{counts}[i] = neighbors")
        p.note("counts the particles within h, itself included")
    elif extra == "volume":
        volumes = p.array(rng.choice(("volumes", "particle_volume")), T.FLOAT32, "out")
        p.why(("zero-mass neighbourhoods leave rho at zero: the floor keeps the volume finite",
               "rho is zero where all nearby masses are: keep the division finite"))
        p.add(f"{volumes}[i] = {mass.replace('[index]', '[i]')} / wp.max(rho, 1.0e-6)")
        p.note("writes each particle's volume m / rho")
    elif extra == "pressure":
        rest = p.scalar(rng.choice(("rest_density", "rho0")), lo=0.5, hi=2.0)
        stiffness = p.scalar(rng.choice(("stiffness", "gas_constant")), lo=1.0, hi=10.0)
        pressures = p.array(rng.choice(("pressures", "particle_p")), T.FLOAT32, "out")
        eos = p.pick("linear", "clamped", "tait")
        if eos == "tait":  # weakly compressible: k ((rho / rho0)^7 - 1)
            value = f"{stiffness} * (wp.pow(rho / {rest}, 7.0) - 1.0)"
        else:
            value = f"{stiffness} * (rho - {rest})"
            value = f"wp.max({value}, 0.0)" if eos == "clamped" else value
        p.add(f"{pressures}[i] = {value}")
        p.note("derives the pressure from a " + {"tait": "Tait", "linear": "linear",
                                                   "clamped": "linear, non-negative"}[eos] + " equation of state")
    return (rng.choice(("compute_density", "sph_density", "grid_density")),
            "Sum each particle's SPH density with the poly6 kernel over the neighbours within h that a hash grid "
            "finds")


def _xsph(p: Pattern, grid: str, x: str, h: str, mass: str) -> tuple[str, str]:
    """XSPH: each velocity moves towards the kernel-weighted average of its neighbours' (Monaghan 1989)."""
    rng = p.rng
    v = p.array(rng.choice(("velocities", "particle_v")), T.VEC3F)
    rho = p.array(rng.choice(("densities", "particle_rho")), T.FLOAT32, lo=0.5, hi=2.0)
    eps = p.scalar(rng.choice(("xsph_c", "xsph_epsilon")), lo=0.0, hi=0.5)
    p.add(f"vi = {v}[i]", "dv = wp.vec3()")
    averaged = p.coin()  # Monaghan's symmetric form divides by the mean density of the pair
    if averaged:
        p.add(f"rho_i = {rho}[i]")
        rho_j = f"(0.5 * (rho_i + {rho}[index]))"
    else:
        rho_j = f"{rho}[index]"
    # one mass for all particles: multiplied once after the loop rather than per neighbour
    factored = "[index]" not in mass
    term = "" if factored else f"{mass} * "
    if p.coin(0.6):
        kernel = poly6(p)
        p.why(("poly6 is zero beyond h: the query's candidates further away add nothing",
               "the poly6 helper is zero for r >= h: far candidates of the query drop out"))
        body = [f"w = {kernel}(wp.length_sq(xi - {x}[index]), {h})",
                f"dv += ({v}[index] - vi) * ({term}w / {rho_j})"]
    else:  # the kernel inline, with its distance test (h squared once, before the loop)
        p.add(f"h_sq = {h} * {h}")
        body = [f"r2 = wp.length_sq(xi - {x}[index])", "if r2 < h_sq:", f"{INDENT}q = h_sq - r2",
                f"{INDENT}dv += ({v}[index] - vi) * ({term}q * q * q / {rho_j})"]
    neighbour_loop(p, grid, x, h, body, skip_self=True)
    if factored:
        p.add(f"dv *= {mass}")
    if averaged:
        p.note("divides by the mean density of each pair")
    out = p.array(rng.choice((paired(v)[0], "v_smoothed")), T.VEC3F, "out")
    report = p.chance(0.3)  # how much the smoothing changed each velocity
    correction = f"dv * ({eps} * {poly6_coefficient(p)})"
    if report:  # the applied correction and its size: the same value, named once
        p.add(f"correction = {correction}")
        correction = "correction"
    if p.chance(0.35):  # and move the particle with the smoothed velocity
        dt = p.scalar("dt", lo=0.001, hi=0.01)
        x_out = p.array(paired(x)[0], T.VEC3F, "out")
        p.add(f"v_new = vi + {correction}", f"{out}[i] = v_new", f"{x_out}[i] = xi + v_new * {dt}")
        p.note("moves each particle with its smoothed velocity")
    else:
        p.add(f"{out}[i] = vi + {correction}")
    if report:
        change = p.array(rng.choice(("correction_norm", "smoothing_change")), T.FLOAT32, "out")
        p.add(f"{change}[i] = wp.length(correction)")
        p.note("writes the size of each correction")
    return (rng.choice(("xsph", "xsph_velocity", "smooth_velocities")),
            "Smooth each particle's velocity by XSPH, towards the poly6-weighted average of its neighbours' within h "
            "that a hash grid finds")


def force_kernels(p: Pattern, viscous: bool) -> dict[str, str]:
    """The spiky kernel's gradient (pressure) and, if wanted, the viscosity Laplacian as ``@wp.func``,
    without their common normalisation 45 / (pi h^6).

    The gradient is taken at particle i for ``d = x_i - x_j`` and ``r = |d|``, 0 < r < h (the caller
    tests it): the kernel falls off with distance, so the gradient points from i towards j (along ``-d``).
    """
    names = {k: p.name(k) for k in ("spiky_grad", "visc_laplacian")}
    body = p.pick(["q = h - r", "return d * (-q * q / r)"], ["return d * (-(h - r) * (h - r) / r)"])
    lines = "\n".join(INDENT + line for line in body)
    p.func(f"@wp.func\ndef {names['spiky_grad']}(d: wp.vec3, r: float, h: float):\n{lines}\n")
    if viscous:
        p.func(f"@wp.func\ndef {names['visc_laplacian']}(r: float, h: float):\n{INDENT}return h - r\n")
    return names


def _forces(p: Pattern, grid: str, x: str, h: str, mass: str) -> tuple[str, str]:
    rng = p.rng
    rho = p.array(rng.choice(("densities", "particle_rho")), T.FLOAT32, lo=0.5, hi=2.0)
    viscous = p.chance(0.6)
    k = force_kernels(p, viscous)
    if p.coin(0.6):
        pressures = p.array(rng.choice(("pressures", "particle_p")), T.FLOAT32, lo=0.0, hi=5.0)
        press = lambda at: f"{pressures}[{at}]"  # noqa: E731
    else:  # from the densities with a linear equation of state, as Warp's SPH example does
        stiffness = p.scalar(rng.choice(("stiffness", "gas_constant")), lo=1.0, hi=10.0)
        rest = p.scalar(rng.choice(("rest_density", "rho0")), lo=0.5, hi=2.0)
        eos = p.name(p.pick("pressure", "equation_of_state"))
        p.func(f"@wp.func\ndef {eos}(rho: float, k: float, rho0: float):\n{INDENT}return k * (rho - rho0)\n")
        press = lambda at: f"{eos}({rho}[{at}], {stiffness}, {rest})"  # noqa: E731
        p.note("derives the pressures from the densities with a linear equation of state")
    p.add(f"p_i = {press('i')}")
    p.add("f = wp.vec3()")
    symmetric = p.coin()  # p_i / rho_i^2 + p_j / rho_j^2 (momentum-conserving) or the averaged pressure
    if symmetric:
        p.add(f"rho_i = {rho}[i]", "p_term = p_i / (rho_i * rho_i)")
    if viscous:
        v = p.array(rng.choice(("velocities", "particle_v")), T.VEC3F)
        mu = p.scalar(rng.choice(("viscosity", "mu")), lo=0.0, hi=0.5)
        p.add(f"vi = {v}[i]")
    # the query returns candidates beyond h, and a coincident pair has no direction: keep 0 < r < h
    body = [f"d = xi - {x}[index]", f"r = {p.length('d')}", f"if r < {h} and r > 1.0e-6:"]
    grad = f"{k['spiky_grad']}(d, r, {h})"
    if viscous and p.coin(0.3):  # Monaghan's artificial viscosity only acts on approaching pairs
        body.append(f"{INDENT}grad = {grad}")
        grad = "grad"
    if symmetric:
        body.append(f"{INDENT}f -= {grad} * ({mass} * (p_term + {press('index')} / ({rho}[index] * {rho}[index])))")
    else:
        body.append(f"{INDENT}f -= {grad} * ({mass} * (p_i + {press('index')}) / (2.0 * {rho}[index]))")
    # in the symmetric form f is already an acceleration: the viscous term is divided by rho_i too
    rho_ij = f"(rho_i * {rho}[index])" if symmetric else f"{rho}[index]"
    if viscous and grad == "grad":
        p.why("Monaghan's 0.01 h^2 keeps the term finite as r -> 0")
        p.add(f"eta_sq = 0.01 * {h} * {h}")
        body += [f"{INDENT}vr = wp.dot(vi - {v}[index], d)", f"{INDENT}if vr < 0.0:",
                 f"{INDENT * 2}nu = {mu} * {h} * vr / (r * r + eta_sq)",
                 f"{INDENT * 2}f += grad * ({mass} * nu / {rho_ij})"]
        p.note("adds Monaghan's artificial viscosity for approaching pairs")
    elif viscous:
        body.append(f"{INDENT}f += ({v}[index] - vi) * ({mu} * {mass} * {k['visc_laplacian']}(r, {h}) / {rho_ij})")
        p.note("adds Mueller's viscosity force")
    split = viscous and p.coin(0.4)  # the pressure and viscous forces summed apart, as Warp's SPH example does
    if split:
        at = p.lines.index(f"{INDENT * 0}f = wp.vec3()")
        p.lines[at:at + 1] = ["f_pressure = wp.vec3()", "f_viscous = wp.vec3()"]
        body = [line.replace("f -= ", "f_pressure -= ").replace("f += ", "f_viscous += ") for line in body]
    neighbour_loop(p, grid, x, h, body, skip_self=False)  # r > 1.0e-6 leaves the particle itself out
    if split:
        p.add("f = f_pressure + f_viscous")
    total = "f"
    if symmetric:  # the sums are accelerations (per unit mass) up to the kernel's normalisation: named so
        named = re.compile(r"\bf(_pressure|_viscous)?\b")
        p.lines = [named.sub(r"acc\1", line) for line in p.lines]
        p.kb.comments = [(named.sub(r"acc\1", line), text) for line, text in p.kb.comments]
        total = "acc"
    lo, hi = coefficient_range(lambda r: 45.0 / (math.pi * r ** 6), *H_RANGE)
    coeff = p.scalar(p.pick("spiky_coeff", "kernel_norm"), lo=lo, hi=hi)
    p.why("the spiky gradient and the viscosity Laplacian share the normalisation 45 / (pi h^6)"
          if viscous and grad != "grad" else "the spiky gradient's normalisation 45 / (pi h^6)")
    acc = f"{total} * {coeff}" if symmetric else f"{total} * ({coeff} / {rho}[i])"
    if p.chance(0.5):
        acc += f" + wp.vec3(0.0, {p.scalar('gravity', lo=-9.8, hi=-1.0)}, 0.0)"
    form = "symmetric (momentum-conserving)" if symmetric else "averaged"
    if viscous and p.chance(0.35):  # integrate right away: symplectic Euler on the velocity
        dt = p.scalar("dt", lo=0.001, hi=0.01)
        v_out = p.array(paired(v)[0], T.VEC3F, "out")
        p.add(f"a = {acc}", f"{v_out}[i] = vi + a * {dt}")
        p.note("steps the velocity by the acceleration right away")
        return (rng.choice(("sph_step_velocities", "apply_sph_forces", "sph_kick")),
                f"Step each SPH particle's velocity by its acceleration from the {form} pressure gradient "
                "with the spiky kernel, over the neighbours within h that a hash grid finds")
    out = p.array(rng.choice(("accelerations", "particle_a")), T.VEC3F, "out")
    p.add(f"{out}[i] = {acc}")
    return (rng.choice(("compute_forces", "sph_forces", "pressure_and_viscosity") if viscous else
                       ("compute_forces", "sph_forces", "pressure_forces")),
            f"Compute each SPH particle's acceleration from the {form} pressure gradient with the spiky kernel, "
            "over the neighbours within h that a hash grid finds")
