"""Smoothed-particle hydrodynamics: smoothing kernels, equations of state, pair terms.

The smoothing kernels are written without their normalisation constants, which depend only on
the smoothing length: the host computes them once and passes them in (as Warp's own SPH
example does), so no thread recomputes ``315 / (64 pi h^9)``. Each kernel has its own constant
(``NORMS``): the spiky gradient's and the viscosity Laplacian's are equal in 3D (Mueller et al.
2003) but not in 2D. Pair terms are evaluated for a
neighbour ``j`` of particle ``i`` with offset ``d = x_i - x_j`` and distance ``r``. What it
leaves out: finding neighbours (the kernel loops over a list or all particles).
"""

from __future__ import annotations

import math

from jit.code.synthesis.pieces.base import INDENT, Role, Writer, piece
from jit.code.synthesis.pieces.roles import (DENSITY, GAS_CONSTANT, MASS, PRESSURE, REST_DENSITY, SMOOTHING_LENGTH,
                                             VELOCITY, VISCOSITY)

OFFSET = Role("pair offset", "vec")  # derived: x_i - x_j
DIST = Role("pair distance", "scalar")
DIST_SQ = Role("squared pair distance", "scalar")
WEIGHT = Role("kernel weight", "scalar")
PAIR_ACCELERATION = Role("pair acceleration", "vec")
VELOCITY_TERM = Role("pair velocity correction", "vec")
XSPH = Role("XSPH coefficient", "scalar", 0.0, 0.5, ("xsph", "xsph_c", "smoothing"))
EPS = 1.0e-6
# the normalisation constants of the pair terms' kernels, by dimension, as the host computes them from h:
# the 3D ones of Mueller et al. 2003; in 2D those of the spiky kernel 10 / (pi h^5) (h - r)^3 and of the
# viscosity kernel whose Laplacian is C (h - r), normalised over the disk (C = 40 / (pi h^5))
NORMS = {("spiky_grad", 2): (30.0, 5), ("spiky_grad", 3): (45.0, 6),
         ("visc_lap", 2): (40.0, 5), ("visc_lap", 3): (45.0, 6)}  # (c, k): c / (pi h^k)


def norm_text(kind: str, dim: int, h: str = "h") -> str:
    c, k = NORMS[kind, dim]
    return f"{c:g} / (pi {h}^{k})"


def norm_range(kind: str, dim: int) -> tuple[float, float]:
    """The values a kernel's normalisation takes over the smoothing lengths the launch draws."""
    c, k = NORMS[kind, dim]
    lo, hi = c / (math.pi * SMOOTHING_LENGTH.hi ** k), c / (math.pi * SMOOTHING_LENGTH.lo ** k)
    return float(f"{lo * 0.9999:.4g}"), float(f"{hi * 1.0001:.4g}")  # four digits, the range still covering


def poly6(w: Writer) -> str:
    s, zero = w.style.s, w.lit(0.0)
    return w.func("poly6", f"""
@wp.func
def {{name}}(r2: {s}, h: {s}):
{INDENT}\"\"\"The poly6 smoothing kernel without its normalisation: (h^2 - r^2)^3 inside the support.\"\"\"
{INDENT}q = h * h - r2
{INDENT}if q <= {zero}:
{INDENT}{INDENT}return {zero}
{INDENT}return q * q * q
""")


def spiky_gradient(w: Writer) -> str:
    s, v = w.style.s, w.style.v
    return w.func("spiky_grad", f"""
@wp.func
def {{name}}(d: {v}, r: {s}, h: {s}):
{INDENT}\"\"\"The spiky kernel's gradient at x_i without its normalisation, for d = x_i - x_j: the kernel
{INDENT}falls off with distance, so the gradient points from i towards j.\"\"\"
{INDENT}if r >= h or r < {w.lit(EPS)}:
{INDENT}{INDENT}return {v}()
{INDENT}q = h - r
{INDENT}return d * (-q * q / r)
""")


@piece("poly6_density", needs={"r2": DIST_SQ, "mass": MASS, "h": SMOOTHING_LENGTH}, gives={"rho": DENSITY},
       says="poly6 density contributions")
def poly6_density(w: Writer, r2, mass, h):
    return {"rho": w.let(("w_ij", "contrib"), f"{mass} * {poly6(w)}({r2}, {h})")}


@piece("poly6_weight", needs={"r2": DIST_SQ, "h": SMOOTHING_LENGTH}, gives={"w": WEIGHT},
       says="poly6 kernel weights")
def poly6_weight(w: Writer, r2, h):
    return {"w": w.let(("w_ij", "weight"), f"{poly6(w)}({r2}, {h})")}


@piece("tait_pressure", needs={"rho": DENSITY, "rho0": REST_DENSITY, "k": GAS_CONSTANT}, gives={"p": PRESSURE},
       says="the Tait equation of state")
def tait_pressure(w: Writer, rho, rho0, k):
    w.comment("weakly compressible: stiff in the density ratio")
    return {"p": w.let(("p", "pressure"), f"{k} * (wp.pow({rho} / {rho0}, {w.lit(7.0)}) - {w.lit(1.0)})")}


@piece("clamped_linear_pressure", needs={"rho": DENSITY, "rho0": REST_DENSITY, "k": GAS_CONSTANT},
       gives={"p": PRESSURE}, says="a linear equation of state without tension")
def clamped_linear_pressure(w: Writer, rho, rho0, k):
    return {"p": w.let(("p", "pressure"), f"{k} * wp.max({rho} - {rho0}, {w.lit(0.0)})")}


@piece("pressure_pair_acceleration", needs={"d": OFFSET, "r": DIST, "h": SMOOTHING_LENGTH, "mass": MASS,
                                            "p_i": PRESSURE, "rho_i": DENSITY, "p_j": PRESSURE, "rho_j": DENSITY},
       gives={"a": PAIR_ACCELERATION}, says="symmetric pressure accelerations")
def pressure_pair_acceleration(w: Writer, d, r, h, mass, p_i, rho_i, p_j, rho_j):
    w.comment("p_i / rho_i^2 + p_j / rho_j^2 conserves momentum pair by pair")
    term = w.let(("term", "p_term"), f"{p_i} / ({rho_i} * {rho_i}) + {p_j} / ({rho_j} * {rho_j})")
    # -m_j (p_i / rho_i^2 + p_j / rho_j^2) grad W: per unit mass (divided by the densities), an
    # acceleration, up to the spiky gradient's normalisation
    return {"a": w.let(("a_pressure", "acc_p"), f"{spiky_gradient(w)}({d}, {r}, {h}) * (-{mass} * {term})")}


@piece("viscosity_pair_acceleration", needs={"r": DIST, "h": SMOOTHING_LENGTH, "mass": MASS, "mu": VISCOSITY,
                                             "v_i": VELOCITY, "v_j": VELOCITY, "rho_i": DENSITY, "rho_j": DENSITY},
       gives={"a": PAIR_ACCELERATION}, says="viscous accelerations")
def viscosity_pair_acceleration(w: Writer, r, h, mass, mu, v_i, v_j, rho_i, rho_j):
    w.comment("the viscosity kernel's Laplacian is h - r inside the support")
    lap = w.let(("lap_w", "visc_w"), f"wp.max({h} - {r}, {w.lit(0.0)})")
    # Mueller et al.'s viscous force density mu m_j (v_j - v_i) / rho_j lap W over rho_i: an acceleration,
    # up to the viscosity Laplacian's normalisation
    return {"a": w.let(("a_visc", "acc_v"), f"({v_j} - {v_i}) * ({mu} * {mass} * {lap} / ({rho_i} * {rho_j}))")}


@piece("xsph_pair", needs={"r2": DIST_SQ, "h": SMOOTHING_LENGTH, "mass": MASS, "v_i": VELOCITY,
                           "v_j": VELOCITY, "rho_j": DENSITY},
       gives={"dv": VELOCITY_TERM}, says="XSPH velocity smoothing")
def xsph_pair(w: Writer, r2, h, mass, v_i, v_j, rho_j):
    return {"dv": w.let(("dv", "v_avg"), f"({v_j} - {v_i}) * ({mass} / {rho_j} * {poly6(w)}({r2}, {h}))")}
