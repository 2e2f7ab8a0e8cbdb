"""Random emission of particles: points in a box or a ball, directions on the unit sphere.

Randomness is Warp's counter-based generator, seeded per launch and thread
(``wp.rand_init(seed, tid)``), so a kernel gives the same particles for the same seed whatever
the thread order. What it leaves out: deciding which particles to emit (the kernel's test).
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
    w.comment("uniform on the sphere: a uniform height and a uniform angle around the axis")
    z = w.let(("z", "cos_theta"), f"wp.randf({state}, {w.lit(-1.0)}, {w.lit(1.0)})")
    phi = w.let(("phi", "azimuth"), f"wp.randf({state}) * {w.lit(2.0)} * wp.pi")
    r = w.let(("r", "ring"), f"wp.sqrt(wp.max({w.lit(1.0)} - {z} * {z}, {w.lit(0.0)}))")
    return {"d": w.let(("direction", "d_rand"), f"{w.style.type('vec3')}({r} * wp.cos({phi}), {r} * wp.sin({phi}), {z})")}


@piece("random_point_in_ball", needs={"state": RNG_STATE, "center": CENTER, "radius": SPHERE_RADIUS},
       gives={"p": POSITION}, says="uniform random points in a ball", dims=(3,))
def random_point_in_ball(w: Writer, state, center, radius):
    direction = random_unit_vector(w, state)["d"]
    w.comment("the cube root makes the points uniform in volume, not crowded at the center")
    s = w.let(("s", "r_scale"), f"{radius} * wp.pow(wp.randf({state}), {w.lit(1.0)} / {w.lit(3.0)})")
    return {"p": w.let(("p_spawn", "spawn"), f"{center} + {direction} * {s}")}
