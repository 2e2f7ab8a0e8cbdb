"""Pattern families on regular grids: finite-difference stencils and advection.

Finite-difference stencils (diffusion, wave, Jacobi pressure, gradient, divergence) on 2-D or
3-D arrays or on a flat array indexed by width; semi-Lagrangian and upwind advection with a
bilinear sampling helper. Boundaries are handled the ways people do (clamped lookups, early
return at the border, periodic wrap), so every index stays in bounds; an output a cell owns is
written on every path, the border's included. What it leaves out: ray casting
(``patterns_rays``), particle and solid patterns (``patterns``, ``patterns_solid``) and sparse
grids (volumes need runtime objects).
"""

from __future__ import annotations


from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
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
    if op in ("gradient", "divergence") and boundary == "clamp":
        # a central difference over clamped neighbours spans one cell at the border but still divides
        # by two: first derivatives wrap around or leave the border out
        boundary = rng.choice(("skip", "periodic"))
    at = ", ".join(["i", "j", "k"][:dims])
    vec = {2: T.VEC2F, 3: T.VEC3F}[dims] if not fl.f64 else {2: None, 3: T.VEC3D}[dims]
    if op in ("gradient", "divergence") and vec is None:
        op = "diffusion"
    project = op == "gradient" and p.chance(0.4)  # pressure projection: subtract the gradient from a velocity
    field_name = {"diffusion": ("temperature", "u", "concentration", "field"), "wave": ("height", "h", "u") if dims == 2 else ("u", "amplitude"),
                  "jacobi": ("pressure", "p"),
                  # the field whose gradient a projection subtracts is a pressure, named as one
                  "gradient": ("pressure", "p") if project else ("pressure", "phi", "potential"),
                  "divergence": ("velocity", "vel", "u")}[op]
    f = p.array(rng.choice(field_name), vec if op == "divergence" else fl.scalar, ndim=dims)
    lookup = clamped_lookup(p, dims, p.fl.spell(vec if op == "divergence" else fl.scalar)) if boundary == "clamp" else None
    out_type = vec if op == "gradient" else fl.scalar
    if project:
        out_name = rng.choice(("velocity_out", "vel_new"))
    else:
        # named by what it holds: a divergence is no velocity, whatever field it is taken of
        out_name = {"diffusion": "out", "wave": f"{f}_next", "jacobi": "pressure_out", "gradient": "grad",
                    "divergence": "div"}[op] if rng.random() < 0.5 else \
            {"gradient": "gradient", "divergence": "divergence"}.get(op, f"{f}_new")
    out = p.array(out_name, out_type, "out", ndim=dims)
    if boundary == "skip":
        keep = f"{f}[{at}]" if op in ("diffusion", "wave") else f"{p.fl.spell(out_type)}()" if op == "gradient" else fl.lit(0.0)
        p.add(f"if {border_test(f, dims)}:", f"{INDENT}{out}[{at}] = {keep}", f"{INDENT}return")
        p.early_exit = True  # a per-cell output added later would stay stale on the border
        p.note("keeps border cells " + ("as they are" if op in ("diffusion", "wave") else "at zero"))
    elif boundary == "periodic":
        p.note("wraps around the grid's edges (periodic boundaries)")
    else:
        p.note("clamps neighbour reads at the edges (zero-flux boundaries)")
    nb = neighbours(p, f, dims, boundary, lookup)
    if p.coin(0.4):  # neighbours read into named locals first
        labels = ("left", "right", "down", "up", "back", "front")[: 2 * dims]
        p.add(*(f"{name_} = {e}" for name_, e in zip(labels, nb)))
        nb = list(labels)
    # a Jacobi pressure step multiplies the right-hand side by h^2: it takes the cell size
    inv_dx = p.scalar(rng.choice(("inv_dx", "inv_cell_size")), lo=0.5, hi=2.0) \
        if op != "jacobi" and rng.random() < 0.5 else None
    dx = None if inv_dx else p.scalar(rng.choice(("dx", "cell_size", "h")) if op != "wave" else "dx", lo=0.5, hi=2.0)
    # a central difference spans two cells
    central = f" * ({fl.lit(0.5)} * {inv_dx})" if inv_dx else f" / ({fl.lit(2.0)} * {dx})"
    if op in ("diffusion", "wave"):
        scale = f"/ ({dx} * {dx})" if dx else f"* {inv_dx} * {inv_dx}"
        p.add(f"c = {f}[{at}]", f"lap = ({' + '.join(nb)} - {fl.lit(fmt(2.0 * dims))} * c) {scale}")
        dt = p.scalar("dt", lo=0.001, hi=0.05)
        if op == "diffusion":
            kappa = p.scalar(rng.choice(("diffusivity", "kappa", "alpha")), lo=0.0, hi=1.0)
            value = f"c + {dt} * {kappa} * lap"
            if p.chance(0.35):  # a source term
                src = p.array(rng.choice(("source", "heat_source", "rhs")), fl.scalar, ndim=dims)
                value = f"c + {dt} * ({kappa} * lap + {src}[{at}])"
                p.note("adds a source term")
            store(p, out, at, value, "c")
            purpose = f"Take one explicit Euler step of the diffusion equation on a {dims}-D grid"
        else:
            prev = p.array(f"{f}_prev", fl.scalar, ndim=dims)
            value = wave_update(p, f"{prev}[{at}]", dt)
            store(p, out, at, value, "c")
            purpose = f"Take one leapfrog step of the wave equation on a {dims}-D grid"
    elif op == "jacobi":
        div = p.array(rng.choice(("divergence", "rhs", "b")), fl.scalar, ndim=dims)
        p.add(f"s = {' + '.join(nb)}")
        if dx:
            value = f"(s - {dx} * {dx} * {div}[{at}]) / {fl.lit(fmt(2.0 * dims))}"
        else:  # divide the right-hand side by 1/dx^2 rather than rebuild dx^2 in every thread
            value = f"(s - {div}[{at}] / ({inv_dx} * {inv_dx})) / {fl.lit(fmt(2.0 * dims))}"
        if p.chance(0.3):  # weighted Jacobi
            omega = p.scalar(rng.choice(("omega", "relaxation")), lo=0.5, hi=1.0)
            p.add(f"c = {f}[{at}]")
            value = f"c + {omega} * ({value} - c)"
            store(p, out, at, value, "c")
            p.note(f"relaxes the update by {omega} (weighted Jacobi)")
        else:
            p.add(f"{out}[{at}] = {value}")
        purpose = f"Take one Jacobi iteration of the pressure Poisson equation on a {dims}-D grid"
    elif op == "gradient":
        comps = [f"{nb[2 * a + 1]} - {nb[2 * a]}" for a in range(dims)]
        p.add(f"g = {p.fl.spell(vec)}({', '.join(comps)}){central}")
        if project:
            vel = p.array(rng.choice(("velocity", "vel")), vec, ndim=dims)
            p.add(f"{out}[{at}] = {vel}[{at}] - g")
            purpose = (f"Project a velocity field by subtracting the central-difference pressure gradient, "
                       f"on a {dims}-D grid")
        else:
            p.add(f"{out}[{at}] = g")
            purpose = f"Compute the central-difference gradient of a scalar field on a {dims}-D grid"
    else:
        if p.coin():
            terms = " + ".join(f"{nb[2 * a + 1]}[{a}] - {nb[2 * a]}[{a}]" for a in range(dims))
            p.add(f"div_u = ({terms}){central}")
        else:  # one central difference per axis
            axes = ("dudx", "dvdy", "dwdz")[:dims]
            p.add(*(f"{d} = ({nb[2 * a + 1]}[{a}] - {nb[2 * a]}[{a}]){central}" for a, d in enumerate(axes)),
                  f"div_u = {' + '.join(axes)}")
        if p.chance(0.35):  # the right-hand side of the pressure Poisson equation: -rho / dt * div
            rng.choice(("density", "rho"))  # the draw version 25's density name took: the later draws stay as they were
            scale = p.scalar(rng.choice(("rhs_scale", "pressure_scale")), lo=-200.0, hi=-10.0)
            p.why(f"{scale} = -rho / dt, one value for the whole grid, from the caller")
            p.add(f"div_u = {scale} * div_u")
            p.note(f"scales it to the pressure equation's right-hand side by {scale} = -rho / dt")
        p.add(f"{out}[{at}] = div_u")
        purpose = f"Compute the central-difference divergence of a velocity field on a {dims}-D grid"
    # a kernel that subtracts the gradient from a velocity is named for the projection, not the gradient;
    # a plain gradient is a pressure gradient only when the field is a pressure
    gradient = ("subtract_pressure_gradient", "project_velocity", "apply_pressure") if project else \
        ("compute_gradient", "grad_field") + (("pressure_gradient",) if f == "pressure" else ())
    base = {"diffusion": ("diffuse", "heat_step", "diffusion_step"), "wave": ("wave_solve", "wave_step"),
            "jacobi": ("pressure_jacobi", "jacobi_iteration", "solve_pressure"), "gradient": gradient,
            "divergence": ("compute_divergence", "velocity_divergence")}[op]  # not the output's name
    return p.finish(rng.choice(base), p.kb.dims, purpose=purpose)


def wave_update(p: Pattern, previous: str, dt: str) -> str:
    """The leapfrog value 2 c - c_prev + dt^2 c^2 lap, maybe damped; the previous value read once."""
    fl = p.fl
    c2 = wave_speed_sq(p)
    if not p.chance(0.4):
        return f"{fl.lit(2.0)} * c - {previous} + {dt} * {dt} * {c2} * lap"
    # the velocity is (c - c_prev) / dt: the damping term carries one dt, not two
    damp = p.scalar(p.pick("damping", "k_damp"), lo=0.0, hi=0.5)
    p.add(f"c_prev = {previous}")
    p.note("damps the motion in proportion to its velocity")
    return f"{fl.lit(2.0)} * c - c_prev + {dt} * {dt} * {c2} * lap - {damp} * {dt} * (c - c_prev)"


def wave_speed_sq(p: Pattern) -> str:
    """The squared wave speed c^2 of the wave equation: a parameter of its own, or a speed squared."""
    if p.coin():
        return p.scalar(p.pick("c2", "wave_speed_sq"), lo=0.01, hi=1.0)
    speed = p.scalar(p.pick("wave_speed", "speed"), lo=0.1, hi=1.0)
    return f"{speed} * {speed}"


def store(p: Pattern, out: str, at: str, value: str, old: str) -> None:
    """``out[at] = value``, sometimes with the change recorded: per cell, or its maximum for a convergence test.

    After an early exit at the border only the maximum is kept (a per-cell change would stay stale there).
    """
    early = p.early_exit
    if not p.chance(0.35) or (early and p.fl.f64):  # no atomic max of doubles
        p.add(f"{out}[{at}] = {value}")
        return
    p.add(f"new_value = {value}", f"{out}[{at}] = new_value")
    ndim = at.count(",") + 1
    if not early and (p.fl.f64 or p.coin()):
        delta = p.array(p.pick("delta", "change"), p.fl.scalar, "out", ndim=ndim)
        p.add(f"{delta}[{at}] = new_value - {old}")
        p.note("writes each cell's change")
    else:
        worst = p.array(p.pick("max_change", "max_delta"), p.fl.scalar, "inout", lo=0.0, hi=0.0, shape=(1,))
        p.add(f"wp.atomic_max({worst}, 0, wp.abs(new_value - {old}))")
        p.note("tracks the largest change of any cell")
        p.no_grad = True


def _flat_stencil(p: Pattern, op: str):
    """A 2-D grid stored in a flat array: ``x = tid % width``, neighbours read with clamped coordinates."""
    rng, fl = p.rng, p.fl
    w, h = rng.randint(4, 12), rng.randint(4, 12)
    p.kb.dims = [w * h]
    # the arrays of one step named alike: hcurrent / hprevious / hnext as in Warp's wave example
    f, prev_name, next_name = rng.choice((("hcurrent", "hprevious", "hnext"), ("u", "u_prev", "u_next"),
                                          ("h", "h_prev", "h_next"))) if op == "wave" else \
        rng.choice((("field", None, "field_out"), ("u", None, "u_new"), ("temperature", None, "temperature_new")))
    f = p.array(f, fl.scalar)
    width = p.scalar("width", T.INT32, lo=w, hi=w)
    height = p.scalar("height", T.INT32, lo=h, hi=h)
    if p.chance(0.3):
        p.add(f"if tid >= {width} * {height}:", f"{INDENT}return")
    p.note("reads neighbours with coordinates clamped to the grid (zero-flux boundaries)")
    p.add(*p.pick([f"x = tid % {width}", f"y = tid // {width}"], [f"y = tid // {width}", f"x = tid - y * {width}"]))
    steps = ((1, 0), (-1, 0), (0, 1), (0, -1))
    if p.coin():
        sample = p.name(rng.choice(("sample", "read_cell")))
        p.func(f"""
@wp.func
def {sample}(f: wp.array(dtype={fl.s}), x: int, y: int, width: int, height: int):
    x = wp.clamp(x, 0, width - 1)
    y = wp.clamp(y, 0, height - 1)
    return f[y * width + x]
""")
        reads = [f"{sample}({f}, {step('x', dx)}, {step('y', dy)}, {width}, {height})" for dx, dy in steps]
    else:  # clamped neighbour coordinates inline
        p.add("xl = wp.max(x - 1, 0)", f"xr = wp.min(x + 1, {width} - 1)",
              "yd = wp.max(y - 1, 0)", f"yu = wp.min(y + 1, {height} - 1)")
        reads = [f"{f}[y * {width} + xr]", f"{f}[y * {width} + xl]", f"{f}[yu * {width} + x]", f"{f}[yd * {width} + x]"]
    p.add(f"c = {f}[tid]", f"lap = ({' + '.join(reads)} - {fl.lit(4.0)} * c)")
    dt = p.scalar("dt", lo=0.001, hi=0.05)
    inv = p.scalar(rng.choice(("inv_cell", "inv_dx")), lo=0.5, hi=2.0)
    p.add(f"lap = lap * {inv} * {inv}")
    if op == "wave":
        prev = p.array(prev_name, fl.scalar)
        out = p.array(next_name, fl.scalar, "out")
        store(p, out, "tid", wave_update(p, f"{prev}[tid]", dt), "c")
        return p.finish(rng.choice(("wave_solve", "wave_step")), p.kb.dims,
                        purpose="Take one leapfrog step of the wave equation on a 2-D grid stored row by row "
                                "in a flat array")
    kappa = p.scalar(rng.choice(("diffusivity", "kappa")), lo=0.0, hi=1.0)
    out = p.array(next_name, fl.scalar, "out")
    value = f"c + {dt} * {kappa} * lap"
    if p.chance(0.3):
        src = p.array(rng.choice(("source", "heat_source")), fl.scalar)
        value = f"{value} + {dt} * {src}[tid]"
        p.note("adds a source term")
    store(p, out, "tid", value, "c")
    return p.finish(rng.choice(("diffuse", "heat_step")), p.kb.dims,
                    purpose="Take one explicit Euler step of the diffusion equation on a 2-D grid stored row by row "
                            "in a flat array")


def step(axis: str, d: int) -> str:
    return axis if d == 0 else f"{axis} + 1" if d > 0 else f"{axis} - 1"


# ---------------------------------------------------------------------------------------------
# advection


def bilinear(p: Pattern, dtype: str, names: tuple[str, ...] = ("sample_bilinear", "interpolate", "sample_field")) -> str:
    """A ``@wp.func`` sampling a 2-D grid bilinearly at a clamped point, spelled one of several ways.
    A kernel's second sampler (of another dtype) is spelled as its first: one author, one way."""
    name = p.name(p.rng.choice(names))
    state = p.rng.getstate()
    spelling = p.bilinear_spelling
    if spelling is not None:
        p.rng.setstate(spelling)
    else:
        p.bilinear_spelling = state
    by_vec = p.coin(0.4)
    args = "pos: wp.vec2" if by_vec else "x: float, y: float"
    head = []
    for a, n in (("x", 0), ("y", 1)):
        head.append(f"{a} = wp.clamp({f'pos[{n}]' if by_vec else a}, 0.0, float(f.shape[{n}] - 1))")
    # x and y are clamped non-negative: int() truncation is the floor, and i0 + 1 needs no lower bound
    head += ["i0 = int(x)", "j0 = int(y)",
             "i1 = wp.min(i0 + 1, f.shape[0] - 1)", "j1 = wp.min(j0 + 1, f.shape[1] - 1)"]
    head += ["tx = x - float(i0)", "ty = y - float(j0)"]
    form = p.pick("nested", "rows", "weights")
    if form == "nested":
        tail = ["return wp.lerp(wp.lerp(f[i0, j0], f[i1, j0], tx), wp.lerp(f[i0, j1], f[i1, j1], tx), ty)"]
    elif form == "rows":
        tail = ["a = wp.lerp(f[i0, j0], f[i1, j0], tx)", "b = wp.lerp(f[i0, j1], f[i1, j1], tx)",
                "return wp.lerp(a, b, ty)"]
    else:
        tail = ["return (f[i0, j0] * ((1.0 - tx) * (1.0 - ty)) + f[i1, j0] * (tx * (1.0 - ty))",
                "        + f[i0, j1] * ((1.0 - tx) * ty) + f[i1, j1] * (tx * ty))"]
    body = "\n".join(INDENT + line for line in head + tail)
    if spelling is not None:  # the kernel's own draws go on where they were
        p.rng.setstate(state)
    p.func(f"@wp.func\ndef {name}(f: wp.array2d(dtype={dtype}), {args}):\n{body}\n")
    return f"{name}:vec" if by_vec else name


def sample_call(sample: str, field: str, x: str, y: str) -> str:
    """A call of a ``bilinear`` helper, by point or by coordinates as the helper takes them."""
    if sample.endswith(":vec"):
        point = "pos" if (x, y) == ("pos[0]", "pos[1]") else f"wp.vec2({x}, {y})"
        return f"{sample[:-4]}({field}, {point})"
    return f"{sample}({field}, {x}, {y})"


def departure(p: Pattern, vel: str, dt: str, vsample: str | None) -> tuple[str, str, str]:
    """Lines backtracing cell (i, j) along the velocity; returns the departure point's coordinates
    and the time step. Velocities in world units are turned into cells per unit time as they are
    read (``* inv_dx`` or ``/ dx``): no per-thread ``dt / dx``, the same for every cell."""
    inv_dx = p.scalar(p.pick("inv_dx", "inv_cell_size"), lo=0.5, hi=2.0) if p.chance(0.4) else None
    scale = f" * {inv_dx}" if inv_dx else ""
    if p.coin(0.45) and inv_dx is None:  # lengths in world units: positions scaled by the cell size
        h = p.scalar(p.pick("dx", "cell_size"), lo=0.5, hi=2.0)
        scale = f" / {h}"
    step = dt
    if not scale:
        p.note("takes velocities in cells per unit time")
    p.add(f"v = {vel}[i, j]{scale}")
    back = "v"
    if vsample:  # second-order backtrace: the velocity half a step back (midpoint rule)
        mid = sample_call(vsample, vel, f'float(i) - 0.5 * {step} * v[0]', f'float(j) - 0.5 * {step} * v[1]')
        p.add(f"v_mid = {mid}{scale}")
        back = "v_mid"
        p.note("traces back with the midpoint rule")
    if p.coin():
        p.add(f"pos = wp.vec2(float(i), float(j)) - {back} * " + (f"({step})" if " " in step else step))
        return "pos[0]", "pos[1]", step
    p.add(f"x = float(i) - {back}[0] * {step}", f"y = float(j) - {back}[1] * {step}")
    return "x", "y", step


@register("advection", 0.9, source="patterns")
def advection(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, flavour(rng, f64=0.0))
    p.kb.dims = [rng.randint(4, 12), rng.randint(4, 12)]
    vel = p.array(rng.choice(("velocity", "vel")), T.VEC2F, lo=-1.0, hi=1.0, ndim=2)
    dt = p.scalar("dt", lo=0.01, hi=0.5)
    if rng.random() < 0.35:
        return _upwind(p, vel, dt)
    self_advect = rng.random() < 0.35
    q_type = T.VEC2F if self_advect else T.FLOAT32
    q = vel if self_advect else p.array(rng.choice(("density", "dye", "smoke", "temperature")), T.FLOAT32, ndim=2)
    out = p.array(f"{q}_out" if rng.random() < 0.5 else f"{q}_next", q_type, "out", ndim=2)
    sample = bilinear(p, p.fl.spell(q_type))
    if p.chance(0.3):  # a closed box: border cells keep a fixed value
        keep = f"{q}[i, j]" if p.coin() else ("wp.vec2()" if self_advect else "0.0")
        p.add(f"if i == 0 or j == 0 or i == {q}.shape[0] - 1 or j == {q}.shape[1] - 1:",
              f"{INDENT}{out}[i, j] = {keep}", f"{INDENT}return")
        p.note("keeps border cells " + ("as they are" if keep.endswith("[i, j]") else "at zero"))
        p.early_exit = True
    vsample = None
    if p.chance(0.4):
        vsample = sample if self_advect else bilinear(p, "wp.vec2", ("sample_velocity", "interpolate_velocity"))
    x, y, _ = departure(p, vel, dt, vsample)
    value = p.let("value", sample_call(sample, q, x, y), inline=0.5)
    if p.chance(0.35):  # exp(-k dt) is one value for the whole grid: the caller computes it once per step
        decay = p.scalar(rng.choice(("decay_factor", "dissipation_factor")), lo=0.8, hi=1.0)
        value = f"{value} * {decay}"
        p.note(f"lets the advected quantity decay by {decay} per step (exp(-rate * dt), from the caller)")
    if not self_advect and p.chance(0.3):  # an emitter adds density where it injects
        src = p.array(rng.choice(("source", "emitter", "inflow")), T.FLOAT32, lo=0.0, hi=1.0, ndim=2)
        value = f"{value} + {dt} * {src}[i, j]"
        p.note("adds what an emitter injects")
    elif self_advect and p.chance(0.3):  # gravity on the advected velocity (uniform: not a buoyancy)
        g = p.scalar(rng.choice(("gravity", "g")), lo=-9.8, hi=9.8)
        value = f"{value} + wp.vec2(0.0, {g} * {dt})"
        p.note(f"adds a vertical acceleration {g}")
    if not self_advect and p.chance(0.25):  # interpolation and sources must not make density negative
        value = f"wp.max({value}, 0.0)"
    p.add(f"{out}[i, j] = {value}")
    what = "the velocity field along itself" if self_advect else f"the {q} field through a velocity field"
    return p.finish(rng.choice(("advect", "semi_lagrangian", "advect_field")), p.kb.dims,
                    purpose=f"Advect {what} by one semi-Lagrangian step, sampling bilinearly at the departure point")


def _upwind(p: Pattern, vel: str, dt: str):
    """First-order upwind differences of a scalar field, one-sided by the sign of the velocity."""
    rng = p.rng
    q = p.array(rng.choice(("density", "phi", "concentration")), T.FLOAT32, ndim=2)
    inv_dx = p.scalar(rng.choice(("inv_dx", "inv_h")), lo=0.5, hi=2.0)
    named = p.coin()
    if named:
        p.add(f"ni = {q}.shape[0]", f"nj = {q}.shape[1]")
    last = ("ni - 1", "nj - 1") if named else (f"{q}.shape[0] - 1", f"{q}.shape[1] - 1")
    p.add(f"v = {vel}[i, j]", f"c = {q}[i, j]")
    p.why("differences on the upwind side; at the border they read the cell itself (no inflow)")
    select = p.coin(0.4)  # wp.where or if / else, the same for both axes
    for axis, (d, idx, at) in enumerate((("dqdx", "i", "{}, j"), ("dqdy", "j", "i, {}"))):
        lo, hi = f"wp.max({idx} - 1, 0)", f"wp.min({idx} + 1, {last[axis]})"
        back, fwd = f"c - {q}[{at.format(lo)}]", f"{q}[{at.format(hi)}] - c"
        if select:
            p.add(f"{d} = wp.where(v[{axis}] > 0.0, {back}, {fwd})")
        else:
            p.add(f"if v[{axis}] > 0.0:", f"{INDENT}{d} = {back}", "else:", f"{INDENT}{d} = {fwd}")
    rate = p.pick("v[0] * dqdx + v[1] * dqdy", "wp.dot(v, wp.vec2(dqdx, dqdy))")
    rate_out = p.chance(0.25)  # the local rate of change, for an adaptive step: computed once, used twice
    if rate_out:
        p.add(f"dqdt = -{inv_dx} * ({rate})")
        value = f"c + {dt} * dqdt"
    else:
        value = f"c - {dt} * {inv_dx} * ({rate})"
    if p.chance(0.3):  # a per-step factor, exp(-k dt) or 1 - k dt, computed once by the caller
        decay = p.scalar(rng.choice(("decay_factor", "dissipation_factor")), lo=0.8, hi=1.0)
        p.add(f"c_new = {value}", f"c_new = c_new * {decay}")
        value = "c_new"
        p.note(f"lets the field decay by {decay} per step (exp(-rate * dt), from the caller)")
    if p.chance(0.3):
        src = p.array(rng.choice(("source", "emitter")), T.FLOAT32, lo=0.0, hi=1.0, ndim=2)
        value = f"{value} + {dt} * {src}[i, j]"
        p.note("adds a source term")
    out = p.array(f"{q}_out" if p.coin() else f"{q}_next", T.FLOAT32, "out", ndim=2)
    p.add(f"{out}[i, j] = {value}")
    if rate_out:
        rates = p.array(rng.choice(("advection_rate", "dqdt_out")), T.FLOAT32, "out", ndim=2)
        p.add(f"{rates}[i, j] = dqdt")
        p.note("writes the advective rate of change -u . grad q (before any decay or source)")
    # the one-sided difference switches with the sign of the velocity: the result has a kink there,
    # where finite differences and the adjoint disagree, so no gradient check
    return p.finish(rng.choice(("advect_upwind", "upwind_step")), p.kb.dims,
                    purpose=f"Advect the {q} field through a velocity field by one first-order upwind step",
                    differentiable=False)
