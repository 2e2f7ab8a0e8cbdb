"""Pattern family of ray casting: one thread per pixel of a pinhole camera, against spheres, an
axis-aligned box and a ground plane, writing a depth image or a diffuse-shaded one.

The hit tests are ``@wp.func`` helpers (the half-b quadratic for spheres, as rays are unit, the
slab test for boxes); each gives the first hit ahead of the origin, the exit when the origin is
inside. A pixel that sees nothing gets the far distance, 0 or the sky. See ``patterns`` for
how a pattern family is written. What it leaves out: meshes (``patterns_geometry``), shadows
and reflections.
"""

from __future__ import annotations

import math

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, Pattern, flavour, fmt


def sphere_hit(p: Pattern) -> str:
    """A ``@wp.func`` ray-sphere test returning the distance to the first hit ahead of the origin, or a
    value <= 0 for none. The caller passes a unit ``rd``, so the quadratic is the half-b form (a = 1);
    from inside the sphere the near root is behind the origin and the ray leaves through the far one."""
    name = p.name(p.rng.choice(("intersect_sphere", "ray_sphere", "hit_sphere")))
    body = ["oc = ro - center", "b = wp.dot(oc, rd)",
            "c = " + p.pick("wp.dot(oc, oc)", "wp.length_sq(oc)") + " - radius * radius", "disc = b * b - c"]
    if p.coin():
        body += ["if disc < 0.0:", f"{INDENT}return -1.0", "h = wp.sqrt(disc)", "t = -b - h",
                 "# the origin inside the sphere: the near root is behind it, the ray leaves through the far one",
                 "if t < 0.0:", f"{INDENT}t = -b + h", "return t"]
    else:
        body += ["h = wp.sqrt(wp.max(disc, 0.0))", "t_near = -b - h",
                 "# from inside the sphere the near root is behind the origin: the far root is the hit",
                 "t = wp.where(t_near > 0.0, t_near, -b + h)", "return wp.where(disc < 0.0, -1.0, t)"]
    lines = "\n".join(INDENT + b for b in body)
    p.func(f"@wp.func\ndef {name}(ro: wp.vec3, rd: wp.vec3, center: wp.vec3, radius: float):\n{lines}\n")
    return name


def box_hit(p: Pattern) -> str:
    """A ``@wp.func`` slab test against an axis-aligned box, by loop over axes or per component: the
    distance to where the ray enters the box, or where it leaves it when the origin is inside; -1 for
    a miss, or a box beyond ``t_max``."""
    name = p.name(p.rng.choice(("intersect_box", "ray_aabb", "slab_test")))
    if p.coin():  # t1 starts at the far limit the caller passes
        body = ["# an entry behind the origin leaves t0 negative: the origin is inside the box",
                "t0 = -t_max", "t1 = t_max", "for axis in range(3):",
                f"{INDENT}# a direction parallel to the slab gets a tiny component of its own sign",
                f"{INDENT}d = wp.where(wp.abs(rd[axis]) > 1.0e-6, rd[axis], wp.where(rd[axis] < 0.0, -1.0e-6, 1.0e-6))",
                f"{INDENT}ta = (lower[axis] - ro[axis]) / d", f"{INDENT}tb = (upper[axis] - ro[axis]) / d",
                f"{INDENT}t0 = wp.max(t0, wp.min(ta, tb))", f"{INDENT}t1 = wp.min(t1, wp.max(ta, tb))"]
    else:  # all three slabs at once with component-wise vector operations
        body = ["# a zero component of rd gives an infinite inverse: that slab never limits t0 or t1",
                "inv = wp.cw_div(wp.vec3(1.0), rd)",
                "ta = wp.cw_mul(lower - ro, inv)", "tb = wp.cw_mul(upper - ro, inv)",
                "tmin = wp.min(ta, tb)", "tmax = wp.max(ta, tb)",
                "t0 = wp.max(wp.max(tmin[0], tmin[1]), tmin[2])",
                "t1 = wp.min(wp.min(wp.min(tmax[0], tmax[1]), tmax[2]), t_max)"]
    body += ["# no overlap of the slabs, or the whole box behind the origin", "if t0 > t1 or t1 < 0.0:",
             f"{INDENT}return -1.0"]
    body += p.pick(["# the origin inside the box: the entry is behind it, the ray leaves at t1",
                    "return wp.where(t0 > 0.0, t0, t1)"],
                   ["# the origin is inside the box: the hit is where the ray leaves it",
                    "if t0 < 0.0:", f"{INDENT}return t1", "return t0"])
    lines = "\n".join(INDENT + b for b in body)
    p.func(f"@wp.func\ndef {name}(ro: wp.vec3, rd: wp.vec3, lower: wp.vec3, upper: wp.vec3, t_max: float):\n{lines}\n")
    return name


def box_normal(p: Pattern) -> str:
    """A ``@wp.func`` giving the outward normal of the box face a surface point lies on."""
    name = p.name(p.rng.choice(("box_normal", "aabb_normal")))
    p.func(f"""
@wp.func
def {name}(x: wp.vec3, lower: wp.vec3, upper: wp.vec3):
    # the point relative to the centre, in units of the half extents: the face is the largest component
    q = wp.cw_div(x - 0.5 * (lower + upper), 0.5 * (upper - lower))
    a = wp.vec3(wp.abs(q[0]), wp.abs(q[1]), wp.abs(q[2]))
    if a[0] >= a[1] and a[0] >= a[2]:
        return wp.vec3(wp.sign(q[0]), 0.0, 0.0)
    if a[1] >= a[2]:
        return wp.vec3(0.0, wp.sign(q[1]), 0.0)
    return wp.vec3(0.0, 0.0, wp.sign(q[2]))
""")
    return name


def unit_literal(p: Pattern, x: float, y: float, z: float) -> str:
    """A unit vector written out as a constant (normalised here, not by every thread)."""
    n = math.sqrt(x * x + y * y + z * z)
    return f"wp.vec3({fmt(x / n)}, {fmt(y / n)}, {fmt(z / n)})"


def camera_ray(p: Pattern, image: str, width: int, height: int) -> str:
    """Lines computing the direction ``rd`` of pixel (i, j) of a pinhole camera looking down -z; returns
    the rays' origin. What is the same for every pixel (the camera's position, tan(fov / 2), the aspect
    ratio) the caller passes in."""
    rng = p.rng
    w, h = f"{image}.shape[1]", f"{image}.shape[0]"
    fov = p.scalar(p.pick("tan_half_fov", "fov_scale"), lo=0.3, hi=1.2)
    # width / height of the image the launch renders, as the caller computes it
    aspect = p.scalar(p.pick("aspect", "aspect_ratio"), lo=width / height, hi=width / height)
    # outside the scene (spheres and the box reach at most 1.8 from the origin along any axis), above the ground
    eye = p.scalar(rng.choice(("cam_pos", "camera_origin", "eye")), T.VEC3F, lo=2.0, hi=3.0)
    p.why(("the horizontal pixel coordinate is stretched by the aspect ratio so that pixels stay square",
           "pixel centres in [-1, 1], the horizontal one scaled by the aspect ratio (square pixels)"))
    p.add(f"sx = (2.0 * (float(j) + 0.5) / float({w}) - 1.0) * {aspect}")
    if p.coin():  # row 0 at the top of the image, as image files store it
        p.add(f"sy = 1.0 - 2.0 * (float(i) + 0.5) / float({h})")
        p.note("puts row 0 at the top of the image")
    else:
        p.add(f"sy = 2.0 * (float(i) + 0.5) / float({h}) - 1.0")
    p.add(f"rd = wp.normalize(wp.vec3(sx * {fov}, sy * {fov}, -1.0))")
    return eye


def shade(p: Pattern, normal: str) -> str:
    """Lines computing a diffuse ``shade`` from the normal; returns the colour expression."""
    rng = p.rng
    kind = p.pick("headlight", "directional", "directional", "two_lights")
    if kind == "headlight":
        p.add(f"shade = wp.max(-wp.dot({normal}, rd), 0.0)")
    elif kind == "directional":
        p.add(f"light = {unit_literal(p, *rng.choice(((1.0, 1.0, 1.0), (-1.0, 1.0, 1.0), (1.0, 2.0, 2.0), (0.0, 1.0, 1.0))))}",
              f"shade = wp.max(wp.dot({normal}, light), 0.0)")
    else:
        lights = p.array(rng.choice(("light_dirs", "lights")), T.VEC3F, lo=-1.0, hi=1.0, shape=(rng.randint(1, 4),))
        p.add("# the caller passes unit directions towards each light, normalised once for the frame",
              "shade = float(0.0)", f"for l in range({lights}.shape[0]):",
              f"{INDENT}shade += wp.max(wp.dot({normal}, {lights}[l]), 0.0)")
    if p.chance(0.3):
        ambient = p.scalar(rng.choice(("ambient", "ambient_light")), lo=0.0, hi=0.3)
        p.add(f"shade = {ambient} + (1.0 - {ambient}) * shade")
    albedo = rng.choice(("wp.vec3(0.8, 0.6, 0.4)", "wp.vec3(0.9, 0.9, 0.9)", "wp.vec3(0.2, 0.5, 0.8)", "wp.vec3(0.7)"))
    if p.coin(0.3):
        albedo = p.scalar(rng.choice(("albedo", "base_color")), T.VEC3F, lo=0.0, hi=1.0)
    value = f"{albedo} * shade"
    if p.chance(0.25):  # gamma correction
        value = f"{albedo} * wp.pow(shade, 1.0 / 2.2)" if p.coin() else f"{albedo} * wp.sqrt(shade)"
    return value


@register("ray_cast", 0.9, source="patterns")
def ray_cast(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, flavour(rng, f64=0.0))
    w, h = rng.randint(4, 16), rng.randint(4, 16)
    p.kb.dims = [h, w]
    is_depth = rng.random() < 0.35
    if is_depth:  # the distance along each (unit) ray to the first hit
        image = p.array(rng.choice(("hit_distance", "ray_depth", "distance_image")), T.FLOAT32, "out", ndim=2)
    else:
        image = p.array(rng.choice(("pixels", "image", "color")), T.VEC3F, "out", ndim=2)
    normal = None if is_depth else "n"  # a depth image needs no normals
    ro = camera_ray(p, image, w, h)
    # the far distance comes from the caller (no sentinel constant that a far scene could exceed):
    # a pixel whose nearest hit is still at it saw nothing
    far = p.scalar(p.pick("max_t", "t_max"), lo=50.0, hi=100.0)
    near = p.pick("t_hit", "closest", "nearest")  # the distance to the nearest hit so far
    p.add(f"{near} = {far}")
    if normal:
        p.add("n = wp.vec3(0.0)")
    if rng.random() < 0.75:
        hit = sphere_hit(p)
        n_spheres = rng.randint(1, 6)
        if p.coin(0.3):  # spheres packed as (center, radius) in a vec4
            spheres = p.array(rng.choice(("spheres", "sphere_data")), T.VEC4F, lo=0.2, hi=0.8, shape=(n_spheres,))
            p.add(f"for s in range({spheres}.shape[0]):", f"{INDENT}sphere = {spheres}[s]",
                  f"{INDENT}center = wp.vec3(sphere[0], sphere[1], sphere[2])",
                  f"{INDENT}radius = sphere[3]")
            center, radius = "center", "radius"
        else:
            centers = p.array(rng.choice(("centers", "sphere_pos")), T.VEC3F, lo=-1.0, hi=1.0, shape=(n_spheres,))
            radii = p.array(rng.choice(("radii", "sphere_radii")), T.FLOAT32, lo=0.2, hi=0.8, shape=(n_spheres,))
            p.add(f"for s in range({centers}.shape[0]):")
            center, radius = f"{centers}[s]", f"{radii}[s]"
        scene = "spheres"
        p.add(f"{INDENT}t = {hit}({ro}, rd, {center}, {radius})",
              f"{INDENT}if t > 0.0 and t < {near}:", f"{INDENT * 2}{near} = t",
              normal and f"{INDENT * 2}n = " + p.pick(f"wp.normalize({ro} + rd * t - {center})",
                                                       f"({ro} + rd * t - {center}) / {radius}"))
    else:
        scene = "an axis-aligned box"
        hit = box_hit(p)
        lower = p.scalar("box_lower", T.VEC3F, lo=-1.0, hi=-0.2)
        upper = p.scalar("box_upper", T.VEC3F, lo=0.2, hi=1.0)
        # only a hit nearer than the nearest so far counts: that is the slab test's far limit
        p.add(f"t = {hit}({ro}, rd, {lower}, {upper}, {near})", "if t > 0.0:", f"{INDENT}{near} = t")
        if normal:  # the normal of the face hit, not the direction from the centre
            p.add(f"{INDENT}n = {box_normal(p)}({ro} + rd * t, {lower}, {upper})")
    if p.chance(0.5):  # a ground plane below the objects
        ground = p.scalar(rng.choice(("ground_height", "floor_y")), lo=-2.0, hi=-1.0)
        scene += " over a ground plane"
        p.add("if rd[1] < 0.0:", f"{INDENT}tp = ({ground} - {ro}[1]) / rd[1]",
              f"{INDENT}if tp > 0.0 and tp < {near}:", f"{INDENT * 2}{near} = tp",
              normal and f"{INDENT * 2}n = wp.vec3(0.0, 1.0, 0.0)")
    hit_any = f"{near} < {far}"
    if is_depth:
        p.note("writes 0 where the ray hits nothing")
        if p.coin():
            p.add(f"{image}[i, j] = wp.where({hit_any}, {near}, 0.0)")
        else:
            p.add(f"if {hit_any}:", f"{INDENT}{image}[i, j] = {near}", "else:", f"{INDENT}{image}[i, j] = 0.0")
    else:
        value = shade(p, normal)
        if p.chance(0.4):
            sky = rng.choice(("wp.vec3(0.5, 0.7, 1.0)", "wp.vec3(0.4, 0.6, 0.9)", "wp.vec3(0.6, 0.8, 1.0)"))
            if p.coin():
                value = f"wp.where({hit_any}, {value}, {sky})"
            else:  # a vertical gradient for the sky: white at the horizon, blue overhead
                value = f"wp.where({hit_any}, {value}, wp.lerp(wp.vec3(1.0), {sky}, wp.max(rd[1], 0.0)))"
            p.note("fills missed pixels with the sky")
        p.add(f"{image}[i, j] = {value}")
        if p.chance(0.25):
            depth = p.array(rng.choice(("depth", "hit_distance")), T.FLOAT32, "out", ndim=2)
            p.add(f"{depth}[i, j] = {near}")
            p.note("writes the hit distance too")
    what = (p.pick("write the hit distance", "write the distance to the nearest hit") if is_depth
            else p.pick("write a diffuse-shaded image", "shade the nearest hit diffusely"))
    # renders are discontinuous at silhouettes: no gradient check
    return p.finish(rng.choice(("render", "raycast", "trace_rays", "draw")), p.kb.dims, ["i", "j"],
                    purpose=f"Cast a ray per pixel of a pinhole camera against {scene} and {what}",
                    differentiable=False)
