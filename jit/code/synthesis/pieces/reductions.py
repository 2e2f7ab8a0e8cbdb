"""Per-item quantities that kernels sum or take the extreme of with atomics.

Each piece gives one particle's share of a global quantity (energy, momentum, mass moment); the
kernel adds it into a one-element array with ``wp.atomic_add`` (or per group, by an index), or
keeps the largest with ``wp.atomic_max``. Sums are differentiable; maxima are not (Warp gives
no adjoint for them). What it leaves out: reductions in tiles (block-wide sums).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import ENERGY, GRAVITY, MASS, POSITION, VELOCITY

MOMENTUM = Role("linear momentum", "vec")
ANGULAR_MOMENTUM = Role("angular momentum", "vec3")
MASS_MOMENT = Role("mass moment", "vec")
SPEED_VALUE = Role("speed", "scalar")


@piece("kinetic_energy", needs={"m": MASS, "v": VELOCITY}, gives={"e": ENERGY}, says="kinetic energy", weight=2.0)
def kinetic_energy(w: Writer, m, v):
    if w.uniform(m):  # one mass for all: no product of constants in every thread
        return {"e": w.let(("ke", "e_kin", "kinetic"), f"{w.lit(0.5)} * wp.dot({v}, {v}) * {m}")}
    return {"e": w.let(("ke", "e_kin", "kinetic"), f"{w.lit(0.5)} * {m} * wp.dot({v}, {v})")}


@piece("potential_energy", needs={"m": MASS, "x": POSITION, "gravity": GRAVITY}, gives={"e": ENERGY},
       says="gravitational potential energy")
def potential_energy(w: Writer, m, x, gravity):
    w.comment("gravity points down: the energy grows with height")
    return {"e": w.let(("pe", "e_pot", "potential"), f"-{m} * wp.dot({gravity}, {x})")}


@piece("linear_momentum", needs={"m": MASS, "v": VELOCITY}, gives={"p": MOMENTUM}, says="linear momentum")
def linear_momentum(w: Writer, m, v):
    return {"p": w.let(("p", "momentum"), f"{v} * {m}")}


@piece("angular_momentum", needs={"m": MASS, "x": POSITION, "v": VELOCITY}, gives={"L": ANGULAR_MOMENTUM},
       says="angular momentum about the origin", dims=(3,))
def angular_momentum(w: Writer, m, x, v):
    return {"L": w.let(("L", "ang_mom"), f"wp.cross({x}, {v}) * {m}")}


@piece("mass_moment", needs={"m": MASS, "x": POSITION}, gives={"mx": MASS_MOMENT},
       says="the mass moment for the center of mass")
def mass_moment(w: Writer, m, x):
    return {"mx": w.let(("mx", "weighted_x"), f"{x} * {m}")}


@piece("speed", needs={"v": VELOCITY}, gives={"s": SPEED_VALUE}, says="speed")
def speed(w: Writer, v):
    return {"s": w.let(("speed", "v_len"), w.length(v))}
