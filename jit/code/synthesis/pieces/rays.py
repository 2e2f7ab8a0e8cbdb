"""Rays against simple shapes: hit distances, hit points, normals, shading and reflection.

A ray is an origin and a unit direction; a hit distance is the smallest ``t > eps`` where the
ray meets the shape, or the caller's far distance when it misses (so the nearest of several
shapes is a minimum). Everything here is 3D. What it leaves out: meshes and BVHs (they need
Warp runtime objects, which the generated kernels cannot be given on random input).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import BOX_LOWER, BOX_UPPER, CENTER, GROUND, SPHERE_RADIUS

ORIGIN = Role("ray origin", "vec3", -1.0, 1.0, ("origins", "ray_origins", "ray_o"))
DIRECTION = Role("ray direction", "vec3")  # derived: unit
HIT_T = Role("hit distance", "scalar")
FAR = Role("far distance", "scalar", 10.0, 100.0, ("t_max", "max_distance", "far"))
HIT_POINT = Role("hit point", "vec3")
SURFACE_NORMAL = Role("surface normal", "vec3")
LIGHT_DIR = Role("light direction", "vec3", -1.0, 1.0, ("light_dir", "to_light", "sun_dir"))  # unit, by contract
SHADE = Role("shade", "scalar")
EPS = 1.0e-4


@piece("ray_sphere", needs={"o": ORIGIN, "d": DIRECTION, "center": CENTER, "radius": SPHERE_RADIUS, "t_max": FAR},
       gives={"t": HIT_T}, says="ray-sphere intersection", dims=(3,))
def ray_sphere(w: Writer, o, d, center, radius, t_max):
    oc = w.let(("oc", "rel"), f"{o} - {center}")
    b = w.let(("b", "half_b"), f"wp.dot({oc}, {d})")
    w.comment("|o + t d - c|^2 = r^2 with |d| = 1: t = -b -+ sqrt(b^2 - (|oc|^2 - r^2))")
    disc = w.let(("disc", "discriminant"), f"{b} * {b} - (wp.dot({oc}, {oc}) - {radius} * {radius})")
    t = w.let(("t", "t_hit"), t_max)
    eps = w.lit(EPS)
    with w.block(f"if {disc} >= {w.lit(0.0)}"):
        root = w.let(("root", "s"), f"wp.sqrt({disc})")
        near = w.let(("t_near", "t0"), f"-{b} - {root}")
        far = w.let(("t_far", "t1"), f"-{b} + {root}")
        w.comment("the near root, or the far one from inside the sphere")
        with w.block(f"if {near} > {eps}"):
            w.rebind(t, near)
        with w.block(f"elif {far} > {eps}"):
            w.rebind(t, far)
    return {"t": t}


@piece("ray_ground", needs={"o": ORIGIN, "d": DIRECTION, "ground": GROUND, "t_max": FAR}, gives={"t": HIT_T},
       says="ray-ground-plane intersection", dims=(3,))
def ray_ground(w: Writer, o, d, ground, t_max):
    t = w.own(t_max, "t", "t_plane")  # a running nearest distance is updated in place
    w.comment("rays parallel to the plane never reach it")
    with w.block(f"if wp.abs({d}[1]) > {w.lit(1.0e-6)}"):
        t_hit = w.let(("t_hit", "t_cross"), f"({ground} - {o}[1]) / {d}[1]")
        with w.block(f"if {t_hit} > {w.lit(EPS)}"):
            w.rebind(t, f"wp.min({t_hit}, {t})")
    return {"t": t}


@piece("ray_box", needs={"o": ORIGIN, "d": DIRECTION, "lower": BOX_LOWER, "upper": BOX_UPPER, "t_max": FAR},
       gives={"t": HIT_T}, says="ray-box (slab) intersection", dims=(3,))
def ray_box(w: Writer, o, d, lower, upper, t_max):
    vec = w.style.type("vec3")
    tiny, one = w.lit(1.0e-9), w.lit(1.0)
    w.comment("slabs; zero components are nudged off zero, as 0 * inf is NaN on a slab plane")
    safe = [f"wp.where(wp.abs({d}[{a}]) > {tiny}, {d}[{a}], {tiny})" for a in range(3)]
    inv = w.let(("inv_d", "inv_dir"), f"{vec}({', '.join(f'{one} / {c}' for c in safe)})")
    t0 = w.let(("t_lo", "t0"), f"wp.cw_mul({lower} - {o}, {inv})")
    t1 = w.let(("t_hi", "t1"), f"wp.cw_mul({upper} - {o}, {inv})")
    t_enter = w.let(("t_enter", "t_in"), f"wp.max(wp.max(wp.min({t0}[0], {t1}[0]), wp.min({t0}[1], {t1}[1])), "
                                         f"wp.min({t0}[2], {t1}[2]))")
    t_exit = w.let(("t_exit", "t_out"), f"wp.min(wp.min(wp.max({t0}[0], {t1}[0]), wp.max({t0}[1], {t1}[1])), "
                                       f"wp.max({t0}[2], {t1}[2]))")
    t = w.own(t_max, "t", "t_box")  # a running nearest distance is updated in place
    with w.block(f"if {t_exit} >= {t_enter} and {t_exit} > {w.lit(EPS)}"):
        w.comment("from inside the box the ray leaves through the far slab")
        w.rebind(t, f"wp.min(wp.where({t_enter} > {w.lit(EPS)}, {t_enter}, {t_exit}), {t})")
    return {"t": t}


@piece("hit_point", needs={"o": ORIGIN, "d": DIRECTION, "t": HIT_T}, gives={"p": HIT_POINT},
       says="hit points", dims=(3,))
def hit_point(w: Writer, o, d, t):
    return {"p": w.let(("p", "hit", "x_hit"), f"{o} + {d} * {t}")}


@piece("sphere_normal", needs={"p": HIT_POINT, "center": CENTER, "radius": SPHERE_RADIUS},
       gives={"n": SURFACE_NORMAL}, says="sphere surface normals", dims=(3,))
def sphere_normal(w: Writer, p, center, radius):
    return {"n": w.let(("n", "normal"), f"({p} - {center}) / {radius}")}


@piece("lambert", needs={"n": SURFACE_NORMAL, "light": LIGHT_DIR}, gives={"shade": SHADE},
       says="Lambertian shading", dims=(3,))
def lambert(w: Writer, n, light):
    return {"shade": w.let(("shade", "diffuse", "ndotl"), f"wp.max(wp.dot({n}, {light}), {w.lit(0.0)})")}


@piece("reflect_direction", needs={"d": DIRECTION, "n": SURFACE_NORMAL}, gives={"d": DIRECTION},
       says="mirror-reflected directions", dims=(3,))
def reflect_direction(w: Writer, d, n):
    return {"d": w.let(("reflected", "d_reflect", "r"), f"{d} - {n} * ({w.lit(2.0)} * wp.dot({d}, {n}))")}
