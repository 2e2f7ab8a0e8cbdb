"""Contacts of particles with colliders: detection, position projection, velocity response.

A detection piece gives the contact normal, pointing out of the collider into free space, and
the penetration depth (positive when the particle is inside); the responses run where the depth
is positive: push the particle back to the surface, reflect the approaching normal velocity with
a restitution, and bound the tangential change by Coulomb friction. Penalty forces (a smooth
alternative) give a force instead. What it leaves out: contacts between particles (``forces``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import INDENT, Role, Writer, piece
from jit.code.synthesis.pieces.roles import (BOX_LOWER, BOX_UPPER, CENTER, CONTACT_DAMPING, CONTACT_STIFFNESS,
                                             FORCE, FRICTION, GROUND, POSITION, RADIUS, RESTITUTION,
                                             SPHERE_RADIUS, VELOCITY)
from jit.code.synthesis.pieces.sampling import GRID_INV_DX, GRID_ORIGIN, SCALAR_GRID, sampler

NORMAL = Role("contact normal", "vec")  # derived: unit, out of the collider
DEPTH = Role("penetration depth", "scalar")
EPS = 1.0e-6


@piece("ground_contact", needs={"x": POSITION, "ground": GROUND}, gives={"n": NORMAL, "depth": DEPTH},
       says="a ground plane", weight=2.0)
def ground_contact(w: Writer, x, ground):
    n = w.let(("up", "normal", "n"), w.style.axis(1))
    return {"n": n, "depth": w.let(("depth", "penetration"), f"{ground} - {x}[1]")}


@piece("sphere_contact", needs={"x": POSITION, "center": CENTER, "radius": SPHERE_RADIUS},
       gives={"n": NORMAL, "depth": DEPTH}, says="a sphere collider")
def sphere_contact(w: Writer, x, center, radius):
    d = w.let(("offset", "r", "d"), f"{x} - {center}")
    dist = w.let(("dist", "distance"), w.length(d))
    w.comment("the outward normal (zero for a particle at the very center, which is not pushed)",
                  "outward direction; a particle exactly at the center gets none")
    n = w.let(("normal", "n"), f"{d} / wp.max({dist}, {w.lit(EPS)})")
    return {"n": n, "depth": w.let(("depth", "penetration"), f"{radius} - {dist}")}


@piece("project_out", needs={"x": POSITION, "n": NORMAL, "depth": DEPTH}, gives={"x": POSITION},
       says="projection back onto the surface")
def project_out(w: Writer, x, n, depth):
    x = w.own(x, "x")
    return {"x": w.rebind(x, f"{x} + {n} * {depth}")}


@piece("reflect_velocity", needs={"v": VELOCITY, "n": NORMAL, "e": RESTITUTION}, gives={"v": VELOCITY},
       says="restitution")
def reflect_velocity(w: Writer, v, n, e):
    v = w.own(v, "v")
    vn = w.let(("vn", "v_normal"), f"wp.dot({v}, {n})")
    with w.block(f"if {vn} < {w.lit(0.0)}"):
        w.comment("only an approaching particle bounces")
        w.rebind(v, f"{v} - {n} * (({w.lit(1.0)} + {e}) * {vn})")
    return {"v": v}


@piece("coulomb_response", needs={"v": VELOCITY, "n": NORMAL, "e": RESTITUTION, "mu": FRICTION},
       gives={"v": VELOCITY}, says="restitution and Coulomb friction")
def coulomb_response(w: Writer, v, n, e, mu):
    v = w.own(v, "v")
    vn = w.let(("vn", "v_normal"), f"wp.dot({v}, {n})")
    with w.block(f"if {vn} < {w.lit(0.0)}"):
        vt = w.let(("vt", "v_tangent"), f"{v} - {n} * {vn}")
        vt_len = w.let(("vt_len", "slip"), w.length(vt))
        w.comment("friction removes at most mu times the normal velocity change from the slip",
                  "Coulomb: the slip shrinks by at most mu times the normal impulse")
        dvn = w.let(("dvn", "normal_change"), f"-({w.lit(1.0)} + {e}) * {vn}")
        scale = w.let(("scale", "keep"),
                      f"wp.max({w.lit(1.0)} - {mu} * {dvn} / wp.max({vt_len}, {w.lit(EPS)}), {w.lit(0.0)})")
        w.rebind(v, f"{vt} * {scale} - {n} * ({e} * {vn})")
    return {"v": v}


@piece("inelastic_response", needs={"v": VELOCITY, "n": NORMAL}, gives={"v": VELOCITY},
       says="an inelastic stop")
def inelastic_response(w: Writer, v, n):
    v = w.own(v, "v")
    w.comment("remove the velocity into the surface, keep the rest", "cancel the normal approach; tangential motion stays")
    return {"v": w.rebind(v, f"{v} - {n} * wp.min(wp.dot({v}, {n}), {w.lit(0.0)})")}


@piece("box_container", needs={"x": POSITION, "v": VELOCITY, "lower": BOX_LOWER, "upper": BOX_UPPER,
                               "e": RESTITUTION},
       gives={"x": POSITION, "v": VELOCITY}, says="the walls of a box container")
def box_container(w: Writer, x, v, lower, upper, e):
    s = w.style.s
    zero = w.lit(0.0)
    reflect = w.func("reflect_wall", f"""
@wp.func
def {{name}}(x: {s}, v: {s}, lower: {s}, upper: {s}, restitution: {s}):
{INDENT}# a velocity leaving through a wall comes back, scaled by the restitution
{INDENT}if (x < lower and v < {zero}) or (x > upper and v > {zero}):
{INDENT}{INDENT}return -v * restitution
{INDENT}return v
""")
    parts = ", ".join(f"{reflect}({x}[{a}], {v}[{a}], {lower}[{a}], {upper}[{a}], {e})" for a in range(w.style.dim))
    v_new = w.update(v, w.style.vec(parts), "v_new", "v_walls", "v_reflected")
    return {"v": v_new, "x": w.update(x, f"wp.min(wp.max({x}, {lower}), {upper})", "x_new", "x_inside", "x_clamped")}


@piece("ground_penalty_force", needs={"x": POSITION, "v": VELOCITY, "ground": GROUND, "ke": CONTACT_STIFFNESS,
                                      "kd": CONTACT_DAMPING},
       gives={"f": FORCE}, says="a Hunt-Crossley ground contact force")
def ground_penalty_force(w: Writer, x, v, ground, ke, kd):
    depth = w.let(("depth", "penetration"), f"wp.max({ground} - {x}[1], {w.lit(0.0)})")
    w.comment("damping grows with the depth, and the ground never pulls", "Hunt-Crossley: depth-scaled damping, clamped so the ground only pushes")
    fn = w.let(("fn", "f_normal"), f"wp.max({depth} * ({ke} - {kd} * {v}[1]), {w.lit(0.0)})")
    return {"f": w.let(("f_ground", "f_contact"), w.style.axis(1, fn))}


@piece("sdf_contact", needs={"x": POSITION, "sdf": SCALAR_GRID, "origin": GRID_ORIGIN, "inv_dx": GRID_INV_DX,
                             "radius": RADIUS},
       gives={"n": NORMAL, "depth": DEPTH}, says="a signed distance field on a grid")
def sdf_contact(w: Writer, x, sdf, origin, inv_dx, radius):
    sample = sampler(w, w.style.dim, "scalar")
    p = w.let(("p", "grid_pos"), f"({x} - {origin}) * {inv_dx}")
    phi = w.let(("phi", "dist"), f"{sample}({sdf}, {p})")
    w.comment("the normal is the field's gradient, by central differences of the interpolated field")
    parts = [f"{sample}({sdf}, {p} + {w.style.axis(a, '0.5')}) - {sample}({sdf}, {p} - {w.style.axis(a, '0.5')})"
             for a in range(w.style.dim)]
    grad = w.let(("grad", "grad_phi"), w.style.vec(*parts))
    n = w.let(("n", "normal"), f"{grad} / wp.max({w.length(grad)}, {w.lit(EPS)})")
    return {"n": n, "depth": w.let(("depth", "penetration"), f"{radius} - {phi}")}
