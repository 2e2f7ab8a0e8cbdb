"""Forces on particles and constraints between them.

Per-particle forces (gravity, drag, wind, tethers, buoyancy) read one particle's state; pair
terms read an edge's geometry (``edge_geometry``: its length and unit direction from ``i`` to
``j``) and give the force on particle ``i`` (the force on ``j`` is its negative), or the
position corrections of both ends (position-based dynamics). What it leaves out: contacts with
colliders (``collisions``) and elastic elements (``elasticity``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import (ANCHOR, ANCHOR_STIFFNESS, BUOYANCY, CONTACT_DAMPING,
                                             CONTACT_STIFFNESS, SCALED_COMPLIANCE,
                                             CORRECTION, DRAG, ENERGY, FORCE, GRAVITY, INV_MASS, MASS, POSITION,
                                             RELAXATION, REST_LENGTH, SPRING_DAMPING, STIFFNESS,
                                             VELOCITY, VOLUME, WIND)

EDGE_LENGTH = Role("edge length", "scalar", 0.1, 1.0)  # derived: never a kernel input
STRETCH = Role("stretch", "scalar")  # derived: length minus rest length
RELATIVE_VELOCITY = Role("relative velocity", "vec")  # derived: v_j - v_i
NORMAL_SPEED = Role("normal relative speed", "scalar")  # derived: dot(v_j - v_i, n), negative when closing
DIRECTION = Role("edge direction", "vec")
STRAIN = Role("strain", "scalar")
CONTACT_DISTANCE = Role("contact distance", "scalar", 0.1, 0.4, ("contact_distance", "collision_distance"))
CONTACT_FRICTION = Role("contact friction", "scalar", 0.0, 5.0, ("contact_kt", "k_friction", "contact_friction"),
                        family="contact")
EPS = 1.0e-6


# ---------------------------------------------------------------------------------------------
# one particle


@piece("gravity_force", needs={"mass": MASS, "gravity": GRAVITY}, gives={"f": FORCE}, says="gravity")
def gravity_force(w: Writer, mass, gravity):
    return {"f": w.let(("f_gravity", "weight"), f"{gravity} * {mass}")}


@piece("linear_drag", needs={"v": VELOCITY, "drag": DRAG}, gives={"f": FORCE}, says="linear drag", weight=1.5)
def linear_drag(w: Writer, v, drag):
    return {"f": w.let(("f_drag", "drag_force"), f"-{drag} * {v}")}


@piece("quadratic_drag", needs={"v": VELOCITY, "drag": DRAG}, gives={"f": FORCE}, says="quadratic air drag")
def quadratic_drag(w: Writer, v, drag):
    w.comment("opposes the motion, growing with the square of the speed", "quadratic drag: |v| v, against v")
    return {"f": w.let(("f_drag", "drag_force"), f"-{drag} * {w.length(v)} * {v}")}


@piece("wind_drag", needs={"v": VELOCITY, "wind": WIND, "drag": DRAG}, gives={"f": FORCE},
       says="drag towards a wind velocity")
def wind_drag(w: Writer, v, wind, drag):
    return {"f": w.let(("f_wind", "f_air"), f"{drag} * ({wind} - {v})")}


@piece("tether_force", needs={"x": POSITION, "anchor": ANCHOR, "k": ANCHOR_STIFFNESS}, gives={"f": FORCE},
       says="a spring tether to an anchor point")
def tether_force(w: Writer, x, anchor, k):
    return {"f": w.let(("f_tether", "f_anchor"), f"{k} * ({anchor} - {x})")}


@piece("buoyancy_force", needs={"volume": VOLUME, "rho_fluid": BUOYANCY, "gravity": GRAVITY}, gives={"f": FORCE},
       says="buoyancy of the displaced fluid")
def buoyancy_force(w: Writer, volume, rho_fluid, gravity):
    w.comment("Archimedes: the weight of the displaced fluid, pointing up",
              "buoyancy: density times displaced volume times g, against gravity")
    return {"f": w.let(("f_buoyancy", "f_lift"), f"-{rho_fluid} * {volume} * {gravity}")}


# ---------------------------------------------------------------------------------------------
# pairs: an edge's geometry, then forces or corrections along it


@piece("edge_geometry", needs={"x_i": POSITION, "x_j": POSITION}, gives={"length": EDGE_LENGTH, "n": DIRECTION},
       says="the length and direction of each pair")
def edge_geometry(w: Writer, x_i, x_j):
    d = w.let(("delta", "d", "x_ij"), f"{x_j} - {x_i}")
    length = w.let(("length", "l", "dist"), w.length(d))
    if w.coin(0.7):
        w.comment("coincident particles have no direction: leave it zero rather than divide by zero",
                  "guard the normalisation: two particles at one point have no direction",
                  "no division by a zero distance")
        direction = w.let(("n", "direction", "e_ij"), f"{d} / wp.max({length}, {w.lit(EPS)})")
    else:  # one division, shared by every component (wp.normalize would take the length again)
        inv = w.let(("inv_length", "l_inv"), f"{w.lit(1.0)} / wp.max({length}, {w.lit(EPS)})")
        direction = w.let(("n", "direction", "e_ij"), f"{d} * {inv}")
    return {"length": length, "n": direction}


@piece("edge_stretch", needs={"length": EDGE_LENGTH, "rest": REST_LENGTH}, gives={"stretch": STRETCH},
       says="how far each edge is from its rest length")
def edge_stretch(w: Writer, length, rest):
    return {"stretch": w.let(("stretch", "elongation", "c"), f"{length} - {rest}")}


@piece("hooke_force", needs={"n": DIRECTION, "stretch": STRETCH, "k": STIFFNESS},
       gives={"f": FORCE}, says="Hookean spring forces", weight=2.0)
def hooke_force(w: Writer, n, stretch, k):
    return {"f": w.let(("f_spring", "f_elastic"), f"{n} * ({k} * {stretch})")}


@piece("spring_damping_force", needs={"n": DIRECTION, "v_i": VELOCITY, "v_j": VELOCITY, "kd": SPRING_DAMPING},
       gives={"f": FORCE}, says="relative-velocity damping along the springs")
def spring_damping_force(w: Writer, n, v_i, v_j, kd):
    rate = w.let(("stretch_rate", "dldt"), f"wp.dot({v_j} - {v_i}, {n})")
    return {"f": w.let(("f_damp", "f_damping"), f"{n} * ({kd} * {rate})")}


@piece("spring_energy", needs={"stretch": STRETCH, "k": STIFFNESS}, gives={"e": ENERGY},
       says="the elastic energy stored in each spring")
def spring_energy(w: Writer, stretch, k):
    return {"e": w.let(("energy", "e_spring"), f"{w.lit(0.5)} * {k} * {stretch} * {stretch}")}


@piece("edge_strain", needs={"stretch": STRETCH, "rest": REST_LENGTH}, gives={"strain": STRAIN},
       says="the engineering strain of each edge")
def edge_strain(w: Writer, stretch, rest):
    w.comment("a zero rest length has no strain to speak of: guard the division")
    return {"strain": w.let(("strain", "eps"), f"{stretch} / wp.max({rest}, {w.lit(EPS)})")}


@piece("contact_penalty_force", needs={"n": DIRECTION, "length": EDGE_LENGTH, "reach": CONTACT_DISTANCE,
                                       "k": CONTACT_STIFFNESS},
       gives={"f": FORCE}, says="penalty forces that push overlapping particles apart")
def contact_penalty_force(w: Writer, n, length, reach, k):
    """For a touching pair (``length < reach``: the caller tests it once, for every contact force)."""
    overlap = w.let(("overlap", "penetration"), f"{reach} - {length}")
    w.comment("on particle i, away from j", "pushes i away from j")
    return {"f": w.let(("f_contact", "f_repulse"), f"-{n} * ({k} * {overlap})")}


@piece("distance_projection", needs={"n": DIRECTION, "c": STRETCH, "w_i": INV_MASS, "w_j": INV_MASS,
                                     "relaxation": RELAXATION},
       gives={"dx_i": CORRECTION, "dx_j": CORRECTION}, says="a position-based distance constraint projection")
def distance_projection(w: Writer, n, c, w_i, w_j, relaxation):
    w.comment("pinned pairs (both inverse masses zero) get no correction")
    return _pair_corrections(w, n, f"{relaxation} * {c}", w_i, w_j)


def _pair_corrections(w: Writer, n, c, w_i, w_j) -> dict[str, str]:
    """The two ends' corrections of a pair constraint with error ``c``, split by inverse mass."""
    s = w.let(("s", "scale"), f"{c} / wp.max({w_i} + {w_j}, {w.lit(EPS)})")
    dx_i = w.let(("dx_i", "corr_i"), f"{n} * ({s} * {w_i})")
    return {"dx_i": dx_i, "dx_j": w.let(("dx_j", "corr_j"), f"-{n} * ({s} * {w_j})")}


@piece("xpbd_distance", needs={"n": DIRECTION, "c": STRETCH, "w_i": INV_MASS, "w_j": INV_MASS,
                               "alpha_tilde": SCALED_COMPLIANCE},
       gives={"dx_i": CORRECTION, "dx_j": CORRECTION}, says="an XPBD distance constraint with compliance")
def xpbd_distance(w: Writer, n, c, w_i, w_j, alpha_tilde):
    w.comment(f"{alpha_tilde} is the compliance divided by the squared time step, once per step by the caller")
    dlambda = w.let(("dlambda", "delta_lambda"), f"-{c} / wp.max({w_i} + {w_j} + {alpha_tilde}, {w.lit(EPS)})")
    w.comment("the gradient of the constraint is -n at i and n at j")
    dx_i = w.let(("dx_i", "corr_i"), f"-{n} * ({dlambda} * {w_i})")
    return {"dx_i": dx_i, "dx_j": w.let(("dx_j", "corr_j"), f"{n} * ({dlambda} * {w_j})")}


CONSTRAINT_COUNT = Role("constraint count", "int")  # derived: read from the solver's counts


@piece("averaged_correction", needs={"delta": CORRECTION, "count": CONSTRAINT_COUNT, "relaxation": RELAXATION},
       gives={"dx": CORRECTION}, says="Jacobi-averaged corrections")
def averaged_correction(w: Writer, delta, count, relaxation):
    w.comment("average over the constraints that touched the particle (none: no correction)")
    return {"dx": w.let(("dx", "correction"), f"{delta} * ({relaxation} / {w.style.cast(f'wp.max({count}, 1)')})")}


@piece("tension_only_force", needs={"n": DIRECTION, "stretch": STRETCH, "k": STIFFNESS},
       gives={"f": FORCE}, says="tension-only (rope) spring forces")
def tension_only_force(w: Writer, n, stretch, k):
    w.comment("a rope pulls when stretched and goes slack when compressed")
    return {"f": w.let(("f_rope", "f_tension"), f"{n} * ({k} * wp.max({stretch}, {w.lit(0.0)}))")}


@piece("contact_damping_force", needs={"n": DIRECTION, "vn": NORMAL_SPEED, "kd": CONTACT_DAMPING},
       gives={"f": FORCE}, says="damping of approaching contacts")
def contact_damping_force(w: Writer, n, vn, kd):
    """For a touching pair, as ``contact_penalty_force``."""
    w.comment("only pairs that move closer (vn < 0) are damped, pushing i away from j",
              "damp approach only: a separating pair (vn > 0) feels nothing")
    return {"f": w.let(("f_damp", "f_damping"), f"{n} * ({kd} * wp.min({vn}, {w.lit(0.0)}))")}


@piece("contact_friction_force", needs={"v_rel": RELATIVE_VELOCITY, "n": DIRECTION, "vn": NORMAL_SPEED,
                                        "kt": CONTACT_FRICTION},
       gives={"f": FORCE}, says="viscous friction between touching particles")
def contact_friction_force(w: Writer, v_rel, n, vn, kt):
    """For a touching pair, as ``contact_penalty_force``; ``vn`` is the normal part of ``v_rel``, which
    the damping term needs too."""
    w.comment("the relative velocity less its normal part", "tangential slip")
    v_t = w.let(("v_t", "slip"), f"{v_rel} - {n} * {vn}")
    return {"f": w.let(("f_friction", "f_t"), f"{v_t} * {kt}")}


@piece("tether_projection", needs={"n": DIRECTION, "c": STRETCH, "w_i": INV_MASS, "w_j": INV_MASS,
                                   "relaxation": RELAXATION},
       gives={"dx_i": CORRECTION, "dx_j": CORRECTION}, says="a one-sided (tether) distance constraint projection")
def tether_projection(w: Writer, n, c, w_i, w_j, relaxation):
    w.comment("a tether only resists stretching: no correction while shorter than its rest length")
    taut = w.once(("excess", "taut_stretch"), f"wp.max({c}, {w.lit(0.0)})")  # a store of the violation reuses it
    return _pair_corrections(w, n, f"{relaxation} * {taut}", w_i, w_j)


# ---------------------------------------------------------------------------------------------
# triangles of a surface (3D)

AREA = Role("triangle area", "scalar")  # derived
UNIT_NORMAL = Role("unit normal", "vec")
VECTOR_AREA = Role("vector area", "vec")  # the unit normal times the area: half the edges' cross product
AIR_DRAG = Role("aerodynamic drag coefficient", "scalar", 0.0, 2.0, ("drag", "k_drag", "air_drag"))
INFLATION = Role("inflation pressure", "scalar", 0.0, 5.0, ("pressure", "inflation", "p_inside"))


@piece("triangle_vector_area", needs={"x0": POSITION, "x1": POSITION, "x2": POSITION}, gives={"a": VECTOR_AREA},
       says="the vector areas of triangles", dims=(3,))
def triangle_vector_area(w: Writer, x0, x1, x2):
    w.comment("half the cross product: the normal scaled by the triangle's area",
              "its length is the triangle's area, its direction the normal")
    return {"a": w.let(("area_normal", "vector_area", "a"), f"{w.lit(0.5)} * wp.cross({x1} - {x0}, {x2} - {x0})")}


@piece("triangle_normal", needs={"a": VECTOR_AREA}, gives={"n": UNIT_NORMAL}, says="triangle normals", dims=(3,))
def triangle_normal(w: Writer, a):
    w.comment("a degenerate triangle gets a zero normal")
    return {"n": w.let(("n", "normal"), f"wp.normalize({a})")}


@piece("triangle_normal_area", needs={"a": VECTOR_AREA}, gives={"n": UNIT_NORMAL, "area": AREA},
       says="triangle normals and areas", dims=(3,))
def triangle_normal_area(w: Writer, a):
    area = w.let(("area", "tri_area"), w.length(a))
    return {"n": w.let(("n", "normal"), f"{a} / wp.max({area}, {w.lit(EPS)})"), "area": area}


@piece("normal_drag_force", needs={"area": AREA, "n": UNIT_NORMAL, "v_rel": VELOCITY, "k": AIR_DRAG},
       gives={"f": FORCE}, says="aerodynamic drag", dims=(3,))
def normal_drag_force(w: Writer, area, n, v_rel, k):
    w.comment("the air resists the face moving along its normal, whichever side leads, in proportion to its area")
    vn = w.let(("vn", "v_normal"), f"wp.dot({v_rel}, {n})")
    return {"f": w.let(("f_drag", "f_air"), f"{n} * (-{k} * {area} * {vn} * wp.abs({vn}))")}


@piece("inflation_force", needs={"a": VECTOR_AREA, "p": INFLATION}, gives={"f": FORCE},
       says="an inflating pressure", dims=(3,))
def inflation_force(w: Writer, a, p):
    w.comment("pressure times area, along the normal")
    return {"f": w.let(("f_pressure", "f_inflate"), f"{a} * {p}")}


CORNER_ANGLE = Role("corner angle", "scalar")  # derived


TRIANGLE_EDGE = Role("triangle edge", "vec")  # derived: from the first corner to another


@piece("corner_angles", needs={"e1": TRIANGLE_EDGE, "e2": TRIANGLE_EDGE},
       gives={"a0": CORNER_ANGLE, "a1": CORNER_ANGLE, "a2": CORNER_ANGLE}, says="the interior angles of triangles",
       dims=(3,))
def corner_angles(w: Writer, e1, e2):
    one = w.lit(1.0)
    e01 = w.let(("u01", "e01_unit"), f"wp.normalize({e1})")
    e02 = w.let(("u02", "e02_unit"), f"wp.normalize({e2})")
    e12 = w.let(("u12", "e12_unit"), f"wp.normalize({e2} - {e1})")
    w.comment("clamped: rounding can push a cosine just past 1")
    a0 = w.let(("a0", "angle0"), f"wp.acos(wp.clamp(wp.dot({e01}, {e02}), -{one}, {one}))")
    a1 = w.let(("a1", "angle1"), f"wp.acos(wp.clamp(-wp.dot({e01}, {e12}), -{one}, {one}))")
    return {"a0": a0, "a1": a1, "a2": w.let(("a2", "angle2"), f"{w.lit('wp.pi')} - {a0} - {a1}")}
