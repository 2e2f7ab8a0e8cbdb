"""Random emission of particles: points in a box or a ball, directions on the unit sphere.

Randomness is Warp's counter-based generator, seeded per launch and thread
(``wp.rand_init(seed, tid)``), so a kernel gives the same particles for the same seed whatever
the thread order; directions and points in a ball come from Warp's own samplers
(``wp.sample_unit_sphere_surface``, ``wp.sample_unit_sphere``), as authors call them. What it leaves out: deciding which particles to emit (the kernel's test).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import BOX_LOWER, BOX_UPPER, CENTER, POSITION, SPHERE_RADIUS

RNG_STATE = Role("random state", "uint32")  # derived: wp.rand_init(seed, tid)
UNIT_DIRECTION = Role("random unit direction", "vec3")


@piece("random_point_in_box", needs={"state": RNG_STATE, "lower": BOX_LOWER, "upper": BOX_UPPER},
       gives={"p": POSITION}, says="uniform random points in a box")
def random_point_in_box(w: Writer, state, lower, upper):
    parts = [f"wp.randf({state}, {lower}[{a}], {upper}[{a}])" for a in range(w.style.dim)]
    return {"p": w.let(("p_spawn", "spawn"), w.style.vec(*parts))}


@piece("random_unit_vector", needs={"state": RNG_STATE}, gives={"d": UNIT_DIRECTION},
       says="uniform random directions", dims=(3,))
def random_unit_vector(w: Writer, state):
    return {"d": w.let(("direction", "d_rand"), f"wp.sample_unit_sphere_surface({state})")}


@piece("random_point_in_ball", needs={"state": RNG_STATE, "center": CENTER, "radius": SPHERE_RADIUS},
       gives={"p": POSITION}, says="uniform random points in a ball", dims=(3,))
def random_point_in_ball(w: Writer, state, center, radius):
    return {"p": w.let(("p_spawn", "spawn"), f"{center} + wp.sample_unit_sphere({state}) * {radius}")}
