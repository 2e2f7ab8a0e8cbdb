"""Pattern families on regular grids and images: stencils, advection and ray casting.

Finite-difference stencils (diffusion, wave, Jacobi pressure, gradient, divergence) on 2-D or
3-D arrays or on a flat array indexed by width; semi-Lagrangian and upwind advection with a
bilinear sampling helper; per-pixel ray casting against spheres, a ground plane and boxes.
Boundaries are handled the ways people do (clamped lookups, early return at the border,
periodic wrap), so every index stays in bounds. What it leaves out: particle and solid
patterns (``patterns``, ``patterns_solid``) and sparse grids (volumes need runtime objects).
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories import register
from jit.code.synthesis.categories.patterns import INDENT, Pattern, flavour, fmt

OPERATIONS = ("diffusion", "diffusion", "wave", "jacobi", "gradient", "divergence")


def neighbours(p: Pattern, f: str, dims: int, boundary: str, lookup: str | None) -> list[str]:
    """Reads of the 2*dims axis neighbours of the current cell of ``f``."""
    axes = ["i", "j", "k"][:dims]
    out = []
    for a, axis in enumerate(axes):
        for step in (-1, 1):
            idx = list(axes)
            if boundary == "periodic":
                size = f"{f}.shape[{a}]"
                idx[a] = f"({axis} + 1) % {size}" if step > 0 else f"({axis} - 1 + {size}) % {size}"
            else:
                idx[a] = f"{axis} + 1" if step > 0 else f"{axis} - 1"
            out.append(f"{lookup}({f}, {', '.join(idx)})" if lookup else f"{f}[{', '.join(idx)}]")
    return out


def clamped_lookup(p: Pattern, dims: int, dtype: str) -> str:
    """A ``@wp.func`` reading a grid with indices clamped to its edges (zero-flux boundary)."""
    name = p.name(p.rng.choice(("lookup", "sample", "fetch")))
    axes = ["x", "y", "z"][:dims]
    clamps = "\n".join(f"    {a} = wp.clamp({a}, 0, f.shape[{n}] - 1)" for n, a in enumerate(axes))
    args = ", ".join(f"{a}: int" for a in axes)
    p.func(f"""
@wp.func
def {name}(f: wp.array{dims}d(dtype={dtype}), {args}):
{clamps}
    return f[{', '.join(axes)}]
""")
    return name


def border_test(f: str, dims: int) -> str:
    axes = ["i", "j", "k"][:dims]
    parts = [f"{a} == 0 or {a} == {f}.shape[{n}] - 1" for n, a in enumerate(axes)]
    return " or ".join(parts)


@register("grid_stencil", 1.2, source="patterns")
def grid_stencil(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.25, dim2=0.0)
    p = Pattern(rng, name, suffix, complexity, fl)
    dims = 3 if rng.random() < 0.3 else 2
    op = rng.choice(OPERATIONS)
    if dims == 2 and op in ("diffusion", "wave") and rng.random() < 0.3:
        return _flat_stencil(p, op)
    p.kb.dims = [rng.randint(4, 12) for _ in range(dims)] if dims == 2 else [rng.randint(3, 6) for _ in range(3)]
    boundary = rng.choice(("clamp", "skip", "periodic"))
    at = ", ".join(["i", "j", "k"][:dims])
    s = fl.s
    vec = {2: T.VEC2F, 3: T.VEC3F}[dims] if not fl.f64 else {2: None, 3: T.VEC3D}[dims]
    if op in ("gradient", "divergence") and vec is None:
        op = "diffusion"
    field_name = {"diffusion": ("temperature", "u", "concentration", "field"), "wave": ("height", "h", "u"),
                  "jacobi": ("pressure", "p"), "gradient": ("pressure", "phi", "potential"),
                  "divergence": ("velocity", "vel", "u")}[op]
    f = p.array(rng.choice(field_name), vec if op == "divergence" else fl.scalar, ndim=dims)
    lookup = clamped_lookup(p, dims, p.fl.spell(vec if op == "divergence" else fl.scalar)) if boundary == "clamp" else None
    out_type = vec if op == "gradient" else fl.scalar
    out = p.array({"diffusion": "out", "wave": "h_next", "jacobi": "pressure_out", "gradient": "grad",
                   "divergence": "div"}[op] if rng.random() < 0.5 else f"{f}_new" if op != "gradient" else "gradient",
                  out_type, "out", ndim=dims)
    if boundary == "skip":
        keep = f"{f}[{at}]" if op in ("diffusion", "wave") else f"{p.fl.spell(out_type)}()" if op == "gradient" else fl.lit(0.0)
        p.add(f"if {border_test(f, dims)}:", f"{INDENT}{out}[{at}] = {keep}", f"{INDENT}return")
    nb = neighbours(p, f, dims, boundary, lookup)
    inv_dx = p.scalar(rng.choice(("inv_dx", "inv_cell_size")), lo=0.5, hi=2.0) if rng.random() < 0.5 else None
    dx = None if inv_dx else p.scalar(rng.choice(("dx", "cell_size", "h")) if op != "wave" else "dx", lo=0.5, hi=2.0)
    inv = inv_dx or f"({fl.lit(1.0)} / {dx})"
    if op in ("diffusion", "wave"):
        p.add(f"c = {f}[{at}]", f"lap = ({' + '.join(nb)} - {fl.lit(fmt(2.0 * dims))} * c) * {inv} * {inv}")
        dt = p.scalar("dt", lo=0.001, hi=0.05)
        if op == "diffusion":
            kappa = p.scalar(rng.choice(("diffusivity", "kappa", "alpha")), lo=0.0, hi=1.0)
            value = f"c + {dt} * {kappa} * lap"
            if p.chance(0.35):  # a source term
                src = p.array(rng.choice(("source", "heat_source", "rhs")), fl.scalar, ndim=dims)
                value = f"c + {dt} * ({kappa} * lap + {src}[{at}])"
            p.add(f"{out}[{at}] = {value}")
        else:
            prev = p.array(rng.choice(("h_prev", "previous", "u_prev")), fl.scalar, ndim=dims)
            speed = p.scalar(rng.choice(("wave_speed", "c2", "k_speed")), lo=0.1, hi=1.0)
            value = f"{fl.lit(2.0)} * c - {prev}[{at}] + {dt} * {dt} * {speed} * lap"
            if p.chance(0.4):
                damp = p.scalar(rng.choice(("damping", "k_damp")), lo=0.0, hi=0.5)
                value = f"{fl.lit(2.0)} * c - {prev}[{at}] + {dt} * {dt} * ({speed} * lap - {damp} * (c - {prev}[{at}]))"
            p.add(f"{out}[{at}] = {value}")
    elif op == "jacobi":
        div = p.array(rng.choice(("divergence", "rhs", "b")), fl.scalar, ndim=dims)
        h2 = f"{dx} * {dx}" if dx else f"{fl.lit(1.0)} / ({inv_dx} * {inv_dx})"
        p.add(f"s = {' + '.join(nb)}", f"{out}[{at}] = (s - {h2} * {div}[{at}]) / {fl.lit(fmt(2.0 * dims))}")
    elif op == "gradient":
        comps = [f"{nb[2 * a + 1]} - {nb[2 * a]}" for a in range(dims)]
        p.add(f"g = {p.fl.spell(vec)}({', '.join(comps)}) * ({fl.lit(0.5)} * {inv})")
        if p.chance(0.4):  # pressure projection: subtract the gradient from a velocity field
            vel = p.array(rng.choice(("velocity", "vel")), vec, ndim=dims)
            p.add(f"{out}[{at}] = {vel}[{at}] - g")
        else:
            p.add(f"{out}[{at}] = g")
    else:
        terms = " + ".join(f"{nb[2 * a + 1]}[{a}] - {nb[2 * a]}[{a}]" for a in range(dims))
        p.add(f"{out}[{at}] = ({terms}) * ({fl.lit(0.5)} * {inv})")
    base = {"diffusion": ("diffuse", "heat_step", "apply_laplacian"), "wave": ("wave_solve", "wave_step"),
            "jacobi": ("pressure_jacobi", "jacobi_iteration", "solve_pressure"),
            "gradient": ("compute_gradient", "pressure_gradient", "grad_field"),
            "divergence": ("compute_divergence", "divergence", "velocity_divergence")}[op]
    return p.finish(rng.choice(base), p.kb.dims)


def _flat_stencil(p: Pattern, op: str):
    """A 2-D grid stored in a flat array: ``x = tid % width``, a helper with clamped coordinates."""
    rng, fl = p.rng, p.fl
    w, h = rng.randint(4, 12), rng.randint(4, 12)
    p.kb.dims = [w * h]
    f = p.array(rng.choice(("hcurrent", "field", "u")), fl.scalar)
    width = p.scalar("width", T.INT32, lo=w, hi=w)
    height = p.scalar("height", T.INT32, lo=h, hi=h)
    sample = p.name(rng.choice(("sample", "read_cell")))
    p.func(f"""
@wp.func
def {sample}(f: wp.array(dtype={fl.s}), x: int, y: int, width: int, height: int):
    x = wp.clamp(x, 0, width - 1)
    y = wp.clamp(y, 0, height - 1)
    return f[y * width + x]
""")
    args = f"{width}, {height}"
    p.add(f"x = tid % {width}", f"y = tid // {width}",
          f"lap = ({sample}({f}, x + 1, y, {args}) + {sample}({f}, x - 1, y, {args}) + "
          f"{sample}({f}, x, y + 1, {args}) + {sample}({f}, x, y - 1, {args}) - {fl.lit(4.0)} * {f}[tid])")
    dt = p.scalar("dt", lo=0.001, hi=0.05)
    inv = p.scalar(rng.choice(("inv_cell", "inv_dx")), lo=0.5, hi=2.0)
    p.add(f"lap = lap * {inv} * {inv}")
    if op == "wave":
        prev = p.array(rng.choice(("hprevious", "h_prev")), fl.scalar)
        speed = p.scalar(rng.choice(("k_speed", "wave_speed")), lo=0.1, hi=1.0)
        out = p.array(rng.choice(("hnext", "h_out")), fl.scalar, "out")
        p.add(f"{out}[tid] = {fl.lit(2.0)} * {f}[tid] - {prev}[tid] + {dt} * {dt} * {speed} * lap")
        return p.finish(rng.choice(("wave_solve", "wave_step")), p.kb.dims)
    kappa = p.scalar(rng.choice(("diffusivity", "kappa")), lo=0.0, hi=1.0)
    out = p.array(rng.choice(("out", "field_out")), fl.scalar, "out")
    p.add(f"{out}[tid] = {f}[tid] + {dt} * {kappa} * lap")
    return p.finish(rng.choice(("diffuse", "heat_step")), p.kb.dims)


# ---------------------------------------------------------------------------------------------
# advection


def bilinear(p: Pattern, dtype: str, names: tuple[str, ...] = ("sample_bilinear", "interpolate", "sample_field")) -> str:
    name = p.name(p.rng.choice(names))
    p.func(f"""
@wp.func
def {name}(f: wp.array2d(dtype={dtype}), x: float, y: float):
    x = wp.clamp(x, 0.0, float(f.shape[0] - 1))
    y = wp.clamp(y, 0.0, float(f.shape[1] - 1))
    i0 = int(wp.floor(x))
    j0 = int(wp.floor(y))
    i1 = wp.min(i0 + 1, f.shape[0] - 1)
    j1 = wp.min(j0 + 1, f.shape[1] - 1)
    tx = x - float(i0)
    ty = y - float(j0)
    return wp.lerp(wp.lerp(f[i0, j0], f[i1, j0], tx), wp.lerp(f[i0, j1], f[i1, j1], tx), ty)
""")
    return name


@register("advection", 0.9, source="patterns")
def advection(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, flavour(rng, f64=0.0))
    p.kb.dims = [rng.randint(4, 12), rng.randint(4, 12)]
    vel = p.array(rng.choice(("velocity", "vel", "u")), T.VEC2F, lo=-1.0, hi=1.0, ndim=2)
    dt = p.scalar("dt", lo=0.01, hi=0.5)
    if rng.random() < 0.35:
        return _upwind(p, vel, dt)
    self_advect = rng.random() < 0.35
    q_type = T.VEC2F if self_advect else T.FLOAT32
    q = vel if self_advect else p.array(rng.choice(("density", "dye", "smoke", "temperature")), T.FLOAT32, ndim=2)
    sample = bilinear(p, p.fl.spell(q_type))
    scale = f" * {p.scalar('inv_dx', lo=0.5, hi=2.0)}" if p.chance(0.4) else ""
    p.add(f"v = {vel}[i, j]")
    if p.chance(0.4):  # second-order backtrace (midpoint)
        vsample = sample if self_advect else bilinear(p, "wp.vec2", ("sample_velocity", "interpolate_velocity"))
        p.add(f"v = {vsample}({vel}, float(i) - 0.5 * v[0] * {dt}{scale}, float(j) - 0.5 * v[1] * {dt}{scale})")
    p.add(f"x = float(i) - v[0] * {dt}{scale}", f"y = float(j) - v[1] * {dt}{scale}")
    value = f"{sample}({q}, x, y)"
    if p.chance(0.35):
        decay = p.scalar(rng.choice(("dissipation", "decay")), lo=0.0, hi=0.5)
        value = f"{value} * (1.0 - {decay} * {dt})"
    out = p.array(f"{q}_out" if rng.random() < 0.5 else f"{q}_next", q_type, "out", ndim=2)
    p.add(f"{out}[i, j] = {value}")
    return p.finish(rng.choice(("advect", "semi_lagrangian", "advect_field")), p.kb.dims)


def _upwind(p: Pattern, vel: str, dt: str):
    """First-order upwind differences of a scalar field, one-sided by the sign of the velocity."""
    rng = p.rng
    q = p.array(rng.choice(("density", "phi", "concentration")), T.FLOAT32, ndim=2)
    inv_dx = p.scalar(rng.choice(("inv_dx", "inv_h")), lo=0.5, hi=2.0)
    p.add(f"ni = {q}.shape[0]", f"nj = {q}.shape[1]", f"v = {vel}[i, j]", f"c = {q}[i, j]",
          f"if v[0] > 0.0:", f"{INDENT}dqdx = c - {q}[wp.max(i - 1, 0), j]", "else:",
          f"{INDENT}dqdx = {q}[wp.min(i + 1, ni - 1), j] - c",
          f"if v[1] > 0.0:", f"{INDENT}dqdy = c - {q}[i, wp.max(j - 1, 0)]", "else:",
          f"{INDENT}dqdy = {q}[i, wp.min(j + 1, nj - 1)] - c")
    out = p.array(f"{q}_out", T.FLOAT32, "out", ndim=2)
    p.add(f"{out}[i, j] = c - {dt} * {inv_dx} * (v[0] * dqdx + v[1] * dqdy)")
    return p.finish(rng.choice(("advect_upwind", "upwind_step")), p.kb.dims)


# ---------------------------------------------------------------------------------------------
# ray casting


def sphere_hit(p: Pattern) -> str:
    name = p.name(p.rng.choice(("intersect_sphere", "ray_sphere", "hit_sphere")))
    p.func(f"""
@wp.func
def {name}(ro: wp.vec3, rd: wp.vec3, center: wp.vec3, radius: float):
    oc = ro - center
    b = wp.dot(oc, rd)
    c = wp.dot(oc, oc) - radius * radius
    disc = b * b - c
    if disc < 0.0:
        return -1.0
    return -b - wp.sqrt(disc)
""")
    return name


def box_hit(p: Pattern) -> str:
    name = p.name(p.rng.choice(("intersect_box", "ray_aabb", "slab_test")))
    p.func(f"""
@wp.func
def {name}(ro: wp.vec3, rd: wp.vec3, lower: wp.vec3, upper: wp.vec3):
    t0 = float(0.0)
    t1 = float(1.0e6)
    for axis in range(3):
        inv = 1.0 / wp.where(wp.abs(rd[axis]) > 1.0e-6, rd[axis], 1.0e-6)
        ta = (lower[axis] - ro[axis]) * inv
        tb = (upper[axis] - ro[axis]) * inv
        t0 = wp.max(t0, wp.min(ta, tb))
        t1 = wp.min(t1, wp.max(ta, tb))
    if t0 > t1:
        return -1.0
    return t0
""")
    return name


@register("ray_cast", 0.9, source="patterns")
def ray_cast(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, flavour(rng, f64=0.0))
    w, h = rng.randint(4, 16), rng.randint(4, 16)
    p.kb.dims = [h, w]
    is_depth = rng.random() < 0.35
    if is_depth:
        image = p.array(rng.choice(("depth", "depth_image")), T.FLOAT32, "out", ndim=2)
    else:
        image = p.array(rng.choice(("pixels", "image", "color")), T.VEC3F, "out", ndim=2)
    normal = None if is_depth else "n"  # a depth image needs no normals
    fov = p.scalar(rng.choice(("fov", "tan_half_fov")), lo=0.3, hi=1.2)
    p.add("sx = (float(j) + 0.5) / float(" + image + ".shape[1]) * 2.0 - 1.0",
          "sy = (float(i) + 0.5) / float(" + image + ".shape[0]) * 2.0 - 1.0")
    if rng.random() < 0.5:
        cam = p.array(rng.choice(("camera_pos", "eye")), T.VEC3F, lo=-0.5, hi=0.5, shape=(1,))
        p.add(f"ro = {cam}[0] + wp.vec3(0.0, 0.0, 4.0)")
    else:
        p.add(f"ro = wp.vec3(0.0, {fmt(rng.uniform(0.0, 1.0))}, {fmt(rng.uniform(3.0, 6.0))})")
    p.add(f"rd = wp.normalize(wp.vec3(sx * {fov}, sy * {fov}, -1.0))", "t_min = float(1.0e6)")
    if normal:
        p.add("n = wp.vec3(0.0)")
    if rng.random() < 0.75:
        hit = sphere_hit(p)
        n_spheres = rng.randint(1, 6)
        centers = p.array(rng.choice(("centers", "sphere_pos")), T.VEC3F, lo=-1.0, hi=1.0, shape=(n_spheres,))
        radii = p.array(rng.choice(("radii", "sphere_radius")), T.FLOAT32, lo=0.2, hi=0.8, shape=(n_spheres,))
        p.add(f"for s in range({centers}.shape[0]):", f"{INDENT}t = {hit}(ro, rd, {centers}[s], {radii}[s])",
              f"{INDENT}if t > 0.0 and t < t_min:", f"{INDENT * 2}t_min = t",
              normal and f"{INDENT * 2}n = wp.normalize(ro + rd * t - {centers}[s])")
    else:
        hit = box_hit(p)
        lower = p.array("box_lower", T.VEC3F, lo=-1.0, hi=-0.2, shape=(1,))
        upper = p.array("box_upper", T.VEC3F, lo=0.2, hi=1.0, shape=(1,))
        p.add(f"t = {hit}(ro, rd, {lower}[0], {upper}[0])", "if t > 0.0:", f"{INDENT}t_min = t",
              normal and f"{INDENT}n = wp.normalize(ro + rd * t - 0.5 * ({lower}[0] + {upper}[0]))")
    if p.chance(0.5):  # a ground plane below the objects
        ground = p.scalar(rng.choice(("ground_height", "floor_y")), lo=-2.0, hi=-1.0)
        p.add("if rd[1] < -1.0e-4:", f"{INDENT}tp = ({ground} - ro[1]) / rd[1]",
              f"{INDENT}if tp > 0.0 and tp < t_min:", f"{INDENT * 2}t_min = tp",
              normal and f"{INDENT * 2}n = wp.vec3(0.0, 1.0, 0.0)")
    if is_depth:
        p.add(f"{image}[i, j] = wp.where(t_min < 1.0e6, t_min, 0.0)")
    else:
        if rng.random() < 0.5:
            p.add(f"light = wp.normalize(wp.vec3({fmt(rng.uniform(-1, 1))}, 1.0, {fmt(rng.uniform(-1, 1))}))",
                  "shade = wp.max(wp.dot(n, light), 0.0)")
        else:
            p.add("shade = wp.max(-wp.dot(n, rd), 0.0)")
        albedo = f"wp.vec3({', '.join(fmt(rng.uniform(0.3, 1.0)) for _ in range(3))})"
        value = f"{albedo} * shade"
        if p.chance(0.4):
            sky = f"wp.vec3({fmt(rng.uniform(0.3, 0.6))}, {fmt(rng.uniform(0.5, 0.8))}, 1.0)"
            value = f"wp.where(t_min < 1.0e6, {value}, {sky})"
        p.add(f"{image}[i, j] = {value}")
    # renders are discontinuous at silhouettes: no gradient check
    return p.finish(rng.choice(("render", "raycast", "trace_rays", "draw")), p.kb.dims, ["i", "j"], differentiable=False)
