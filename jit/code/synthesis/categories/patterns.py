"""Pattern families: skeletons of what simulation kernels do, randomised in their details.

Each category here writes one kind of kernel people write with Warp (particle integration,
spring forces, SPH, reductions with atomics) as Python text, with names by role, and draws its
details from ``rng``: precision (float32/float64), vector width, extra force and damping terms,
optional branches, ``@wp.func`` helpers and ``@wp.struct`` parameters. Every input a kernel reads
is described in its metadata (ranges, shapes, index arrays in bounds), so the kernels run on
random input without NaN, inf or out-of-bounds access.

This module also holds the small toolkit the other pattern modules share (``Flavour``,
``Pattern``). What it leaves out: grids and ray casting (``patterns_grid``), solids and
rigid bodies (``patterns_solid``) and queries of meshes and hash grids (``patterns_geometry``).
"""

from __future__ import annotations

import ast
import random
import textwrap
from dataclasses import dataclass

from jit.code.synthesis import types as T
from jit.code.synthesis.categories import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder, Line, Param, Profile
from jit.code.synthesis.types import WType

VEC2D = WType("vec2d", "vec", "float64", (2,))
VEC4I = WType("vec4i", "vec", "int32", (4,))
MAT22D = WType("mat22d", "mat", "float64", (2, 2))
UINT64 = WType("uint64", "uint", "uint64")
LEVELS = {"small": 0, "medium": 1, "large": 2}


# ---------------------------------------------------------------------------------------------
# the toolkit


@dataclass(frozen=True, slots=True)
class Flavour:
    """Precision and vector width of one kernel, and how it spells its types and literals."""

    f64: bool = False
    dim: int = 3
    plain: bool = True  # `float` / `wp.vec3` rather than `wp.float32` / `wp.vec3f`

    @property
    def scalar(self) -> WType:
        return T.FLOAT64 if self.f64 else T.FLOAT32

    @property
    def vec(self) -> WType:
        return {(2, False): T.VEC2F, (3, False): T.VEC3F, (2, True): VEC2D, (3, True): T.VEC3D}[self.dim, self.f64]

    @property
    def mat(self) -> WType:
        return {(2, False): T.MAT22F, (3, False): T.MAT33F, (2, True): MAT22D, (3, True): T.MAT33D}[self.dim, self.f64]

    def spell(self, t: WType) -> str:
        """How a type is written in a signature or constructor."""
        if self.plain and t == T.FLOAT32:
            return "float"
        if self.plain and t == T.INT32:
            return "int"
        if self.plain and t.scalar == "float32" and t.kind in ("vec", "mat"):
            return t.py[:-1]  # wp.vec3f -> wp.vec3
        return t.py

    @property
    def s(self) -> str:  # the scalar type's name
        return self.spell(self.scalar)

    @property
    def v(self) -> str:  # the vector type's name
        return self.spell(self.vec)

    @property
    def m(self) -> str:
        return self.spell(self.mat)

    def lit(self, x: float | str) -> str:
        """A float literal usable in arithmetic with this precision (Warp does not mix float widths)."""
        text = x if isinstance(x, str) else fmt(x)
        return f"wp.float64({text})" if self.f64 else text

    def up(self, y: str = "y", value: str = "1.0") -> str:
        """A vector along one axis (``wp.vec3(0.0, g, 0.0)``); constructors take literals of any width."""
        parts = ["0.0"] * self.dim
        parts[1 if y == "y" else 0] = value
        return f"{self.v}({', '.join(parts)})"


def fmt(x: float) -> str:
    text = f"{x:.4g}"
    return text if any(c in text for c in ".e") else text + ".0"


def flavour(rng: random.Random, f64: float = 0.25, dim2: float = 0.3) -> Flavour:
    return Flavour(rng.random() < f64, 2 if rng.random() < dim2 else 3, rng.random() < 0.7)


@dataclass(slots=True)
class RoleParam(Param):
    """A parameter spelled as people write it (``dt: float``, ``wp.array(dtype=wp.vec3)``)."""

    spelled: str = ""

    def annotation(self) -> str:
        if self.kind == "array":
            ndim = f", ndim={self.ndim}" if self.ndim > 1 else ""
            return f"wp.array(dtype={self.spelled or self.dtype.py}{ndim})"
        return self.spelled or self.dtype.py


def level(complexity) -> int:
    """0, 1 or 2: how many optional parts a kernel tends to carry."""
    if isinstance(complexity, int):
        return 0 if complexity < 6 else 1 if complexity < 14 else 2
    return LEVELS.get(complexity, 1)


class Pattern:
    """A kernel being written: parameters by role, helpers, structs and body lines."""

    def __init__(self, rng: random.Random, name: str, suffix: str, complexity, fl: Flavour | None = None):
        self.rng = rng
        self.suffix = suffix
        self.fl = fl or Flavour()
        self.level = level(complexity if complexity != "mixed" else rng.choice(("small", "medium", "large")))
        self.kb = KernelBuilder(rng, name, suffix, Profile({T.FLOAT32: 1.0}), "small")
        self.kb.params = []
        self.lines: list[str] = []

    def chance(self, p: float) -> bool:
        """True with probability ``p``, more often for larger complexities."""
        return self.rng.random() < min(0.95, p * (0.6, 1.0, 1.4)[self.level])

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def array(self, name: str, dtype: WType, role: str = "in", lo: float = -2.0, hi: float = 2.0,
              shape: tuple[int, ...] | None = None, ndim: int | None = None) -> str:
        ndim = ndim if ndim is not None else len(shape) if shape else len(self.kb.dims)
        self.kb.params.append(RoleParam(name, "array", dtype, ndim, role, (lo, hi), shape, self.fl.spell(dtype)))
        return name

    def scalar(self, name: str, dtype: WType | None = None, lo: float = -2.0, hi: float = 2.0) -> str:
        dtype = dtype or self.fl.scalar
        # kernel scalars keep Warp's spelling: the executor reads annotations as Warp types
        self.kb.params.append(RoleParam(name, "scalar", dtype, 0, "in", (lo, hi), None, dtype.py))
        return name

    def handle(self, name: str) -> str:
        """A ``wp.uint64`` id of a runtime object (mesh, BVH, hash grid)."""
        self.kb.params.append(RoleParam(name, "handle", UINT64, 0, "in", (0.0, 0.0), None, "wp.uint64"))
        return name

    def struct(self, base: str, fields: list[tuple[str, WType]], arg: str, lo: float, hi: float) -> str:
        """A ``@wp.struct`` parameter ``arg``; every field is drawn from [lo, hi] when run."""
        t = WType(self.name(base), "struct", fields=tuple(fields))
        body = "\n".join(f"{INDENT}{n}: {self.fl.spell(ft)}" for n, ft in fields)
        self.kb.structs.append((t, f"@wp.struct\nclass {t.name}:\n{body}"))
        self.kb.params.append(RoleParam(arg, "struct", t, 0, "in", (lo, hi), None, t.name))
        return arg

    def func(self, source: str) -> None:
        self.kb.funcs.append(source.strip("\n"))

    def add(self, *lines: str | None, indent: int = 0) -> None:
        """Body lines (``None`` entries are skipped), indented ``indent`` levels deeper."""
        for text in lines:
            if text is not None:
                self.lines += [INDENT * indent + line for line in text.splitlines()]

    def finish(self, kernel_base: str, dims: list[int], tids: list[str] | None = None, *,
               differentiable: bool = True, needs: str | None = None) -> KernelBuilder:
        kb = self.kb
        kb.name = self.name(kernel_base)
        kb.dims, kb.ndim = list(dims), len(dims)
        kb.tids = tids or (["tid"] if len(dims) == 1 else ["i", "j", "k"][: len(dims)])
        kb.body = [Line("\n".join(self.lines))]
        clash = assigned_names(self.lines) & {q.name for q in kb.params}
        if clash:  # a local shadowing a parameter: a bug in the pattern, not a random event
            raise ValueError(f"{kb.name}: locals {sorted(clash)} shadow parameters")
        kb.budget = len(self.lines)
        kb.meta["differentiable"] = differentiable
        if needs:
            kb.meta["needs_runtime_objects"] = True
            kb.meta["reason"] = needs
        return kb


def assigned_names(lines: list[str]) -> set[str]:
    tree = ast.parse(textwrap.dedent("\n".join(lines)))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def launch_size(rng: random.Random) -> int:
    return rng.choice((16, 32, 64, 128))


# ---------------------------------------------------------------------------------------------
# particle integration


@register("particle_integration", 1.2, source="patterns")
def particle_integration(rng, name, suffix, complexity):
    fl = flavour(rng)
    p = Pattern(rng, name, suffix, complexity, fl)
    n = launch_size(rng)
    in_place = rng.random() < 0.5
    x = p.array("positions" if rng.random() < 0.5 else "particle_x", fl.vec, "inout" if in_place else "in")
    v = p.array("velocities" if x == "positions" else "particle_v", fl.vec, "inout" if in_place else "in")
    use_struct = rng.random() < 0.3
    if use_struct:
        params = p.struct("SimParams", [("dt", fl.scalar), ("gravity", fl.vec), ("damping", fl.scalar)],
                          "params", 0.0, 0.05)
        dt, gravity, damping = f"{params}.dt", f"{params}.gravity", f"{params}.damping"
    else:
        dt = p.scalar("dt", lo=0.001, hi=0.02)
        gravity = fl.up("y", p.scalar("gravity", lo=-9.8, hi=-1.0))
        damping = p.scalar(rng.choice(("damping", "drag", "k_damp")), lo=0.0, hi=0.5)
    p.add(f"x = {x}[tid]", f"v = {v}[tid]")
    forced = rng.random() < 0.75
    mass = rng.choice(("inv_mass", "inv_mass", "mass", "scalar")) if forced else "none"
    if mass == "inv_mass":
        w = p.array("inv_mass" if rng.random() < 0.5 else "particle_inv_mass", fl.scalar, lo=0.0, hi=2.0)
        p.add(f"w = {w}[tid]")
        if p.chance(0.4):  # kinematic particles (zero inverse mass) do not move
            p.add("if w == 0.0:", f"{INDENT}return")
    elif mass == "mass":
        m = p.array("masses" if rng.random() < 0.5 else "particle_mass", fl.scalar, lo=0.5, hi=2.0)
        p.add(f"w = {fl.lit(1.0)} / {m}[tid]")
    elif mass == "scalar":
        p.add(f"w = {p.scalar('inv_mass', lo=0.5, hi=2.0)}")
    if forced:
        f = p.array(rng.choice(("forces", "particle_f", "f_ext")), fl.vec)
        p.add(f"f = {f}[tid]")
        if p.chance(0.35):  # linear drag on top of the external forces
            p.add(f"f = f - {damping} * v")
            damping = None
        p.add(f"v = v + (f * w + {gravity}) * {dt}" if rng.random() < 0.5 else
              f"a = f * w + {gravity}\nv = v + a * {dt}")
    else:
        p.add(f"v = v + {gravity} * {dt}")
    if damping is not None:
        p.add(rng.choice((f"v = v * ({fl.lit(1.0)} - {damping} * {dt})",
                          f"v = v * wp.exp(-{damping} * {dt})" if not use_struct else f"v = v * ({fl.lit(1.0)} - {damping})")))
    if p.chance(0.3):
        vmax = p.scalar("max_speed", lo=1.0, hi=10.0)
        p.add("speed = wp.length(v)", f"if speed > {vmax}:", f"{INDENT}v = v * ({vmax} / speed)")
    p.add("x = x + v * " + dt)
    boundary = rng.choice(("none", "ground", "ground", "box", "sphere"))
    if boundary == "ground":
        restitution = p.scalar("restitution", lo=0.0, hi=1.0)
        vx = "v[0]"
        if p.chance(0.4):
            vx = f"v[0] * ({fl.lit(1.0)} - {p.scalar('friction', lo=0.0, hi=1.0)})"
        # rebuilt rather than assigned by component: Warp's adjoint of component stores in branches is unreliable
        zero = fl.lit(0.0)
        p.add("if x[1] < 0.0:",
              f"{INDENT}x = {fl.v}(x[0], {zero}{', x[2]' if fl.dim == 3 else ''})",
              f"{INDENT}v = {fl.v}({vx}, -v[1] * {restitution}{', v[2]' if fl.dim == 3 else ''})")
    elif boundary == "box":
        reflect = p.name(rng.choice(("reflect", "bounce", "wall_velocity")))
        half = p.scalar(rng.choice(("box_size", "half_extent", "bound")), lo=0.5, hi=4.0)
        p.func(f"""
@wp.func
def {reflect}(x: {fl.s}, v: {fl.s}, half: {fl.s}):
    if x > half or x < -half:
        return -v
    return v
""")
        parts = ", ".join(f"{reflect}(x[{a}], v[{a}], {half})" for a in range(fl.dim))
        p.add(f"v = {fl.v}({parts})", f"x = wp.min(wp.max(x, {fl.v}(-{half})), {fl.v}({half}))")
    elif boundary == "sphere":
        center = p.array("collider_center", fl.vec, shape=(1,))
        radius = p.scalar("collider_radius", lo=0.1, hi=1.0)
        p.add(f"d = x - {center}[0]", "dist = wp.length(d)", f"if dist < {radius} and dist > 0.0:",
              f"{INDENT}n = d / dist", f"{INDENT}x = {center}[0] + n * {radius}",
              f"{INDENT}v = v - n * wp.min(wp.dot(v, n), {fl.lit(0.0)})")
    if in_place:
        p.add(f"{x}[tid] = x", f"{v}[tid] = v")
    else:
        xo = p.array(x + "_out" if "_" in x else "new_positions", fl.vec, "out")
        vo = p.array(v + "_out" if "_" in v else "new_velocities", fl.vec, "out")
        p.add(f"{xo}[tid] = x", f"{vo}[tid] = v")
    base = rng.choice(("integrate_particles", "integrate", "step_particles", "advance_particles"))
    return p.finish(base, [n])


# ---------------------------------------------------------------------------------------------
# springs and distance constraints


def endpoints(p: Pattern, n_particles: int) -> tuple[str, str]:
    """Lines reading the two particle indices of spring ``tid``, in one of the layouts people use."""
    layout = p.rng.choice(("flat", "vec2i", "pair"))
    hi = n_particles - 1
    if layout == "flat":  # [i0, j0, i1, j1, ...] as in Warp's cloth example
        idx = p.array(p.rng.choice(("spring_indices", "edge_indices")), T.INT32, lo=0, hi=hi,
                      shape=(2 * p.kb.dims[0],))
        p.add(f"i = {idx}[tid * 2 + 0]", f"j = {idx}[tid * 2 + 1]")
    elif layout == "vec2i":
        edges = p.array(p.rng.choice(("edges", "springs")), T.VEC2I, lo=0, hi=hi)
        p.add(f"e = {edges}[tid]", "i = e[0]", "j = e[1]")
    else:
        p.add(f"i = {p.array('spring_i', T.INT32, lo=0, hi=hi)}[tid]",
              f"j = {p.array('spring_j', T.INT32, lo=0, hi=hi)}[tid]")
    return "i", "j"


def per_spring(p: Pattern, array: str, scalar: str, lo: float, hi: float) -> str:
    """A per-spring coefficient read from an array, or one value for all springs."""
    if p.rng.random() < 0.5:
        return f"{p.array(array, p.fl.scalar, lo=lo, hi=hi)}[tid]"
    return p.scalar(scalar, lo=lo, hi=hi)


@register("spring_forces", 1.2, source="patterns")
def spring_forces(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.2)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [launch_size(rng)]
    n_particles = rng.choice((8, 16, 32))
    pshape = (n_particles,)
    i, j = endpoints(p, n_particles)
    x = p.array(rng.choice(("positions", "particle_q", "x")), fl.vec, lo=-1.0, hi=1.0, shape=pshape)
    if rng.random() < 0.4:
        return _distance_constraint(p, x, i, j, pshape)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]")
    rest = per_spring(p, "rest_lengths" if rng.random() < 0.5 else "spring_rest_length", "rest_length", 0.1, 1.0)
    ke = per_spring(p, "stiffness" if rng.random() < 0.5 else "spring_stiffness", "ke", 10.0, 100.0)
    damped = p.chance(0.6)
    helper = p.chance(0.35)
    eps = fl.lit(1.0e-6)
    if helper:
        force = p.name(rng.choice(("spring_force", "eval_spring")))
        args = "xi: {v}, xj: {v}, rest: {s}, ke: {s}".format(v=fl.v, s=fl.s)
        p.func(f"""
@wp.func
def {force}({args}):
    d = xj - xi
    l = wp.length(d)
    if l < {eps}:
        return {fl.v}()
    return d / l * (ke * (l - rest))
""")
        p.add(f"f = {force}(xi, xj, {rest}, {ke})")
        if damped:
            v = p.array(rng.choice(("velocities", "particle_qd", "v")), fl.vec, shape=pshape)
            kd = per_spring(p, "damping", "kd", 0.0, 1.0)
            p.add(f"dv = {v}[{j}] - {v}[{i}]", f"f = f + dv * {kd}")
    else:
        p.add("d = xj - xi", "l = wp.length(d)")
        if rng.random() < 0.5:
            p.add(f"if l < {eps}:", f"{INDENT}return", "dir = d / l")
        else:
            p.add(f"dir = d / wp.max(l, {eps})")
        p.add(f"c = l - {rest}")
        if damped:
            v = p.array(rng.choice(("velocities", "particle_qd", "v")), fl.vec, shape=pshape)
            kd = per_spring(p, "damping", "kd", 0.0, 1.0)
            p.add(f"dcdt = wp.dot(dir, {v}[{j}] - {v}[{i}])", f"f = dir * ({ke} * c + {kd} * dcdt)")
        else:
            p.add(f"f = dir * ({ke} * c)")
        if p.chance(0.3):
            energy = p.array(rng.choice(("spring_energy", "energies")), fl.scalar, "out")
            p.add(f"{energy}[tid] = {fl.lit(0.5)} * {ke} * c * c")
    forces = p.array(rng.choice(("forces", "particle_f", "f_total")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    if rng.random() < 0.7:
        p.add(f"wp.atomic_add({forces}, {i}, f)", f"wp.atomic_sub({forces}, {j}, f)")
    else:
        p.add(f"{forces}[{i}] += f", f"{forces}[{j}] -= f")
    return p.finish(rng.choice(("eval_springs", "spring_forces", "accumulate_spring_forces")), p.kb.dims)


def _distance_constraint(p: Pattern, x: str, i: str, j: str, pshape: tuple[int, ...]) -> KernelBuilder:
    """Position-based dynamics: project one distance constraint, accumulate the corrections."""
    rng, fl = p.rng, p.fl
    w = p.array(rng.choice(("inv_mass", "particle_inv_mass", "inv_masses")), fl.scalar, lo=0.0, hi=2.0, shape=pshape)
    rest = per_spring(p, "rest_lengths", "rest_length", 0.1, 1.0)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]", f"wi = {w}[{i}]", f"wj = {w}[{j}]",
          "w_sum = wi + wj", "if w_sum == 0.0:", f"{INDENT}return",
          "d = xi - xj", "l = wp.length(d)", f"if l < {fl.lit(1.0e-6)}:", f"{INDENT}return")
    if p.chance(0.5):  # XPBD: a compliance softens the constraint
        alpha = p.scalar("compliance", lo=0.0, hi=0.01)
        dt = p.scalar("dt", lo=0.001, hi=0.02)
        p.add(f"alpha = {alpha} / ({dt} * {dt})", f"lam = ({l_minus(rest)}) / (w_sum + alpha)")
    else:
        stiffness = p.scalar(rng.choice(("stiffness", "relaxation")), lo=0.1, hi=1.0)
        p.add(f"lam = {stiffness} * ({l_minus(rest)}) / w_sum")
    p.add("n = d / l")
    deltas = p.array(rng.choice(("deltas", "delta_x", "corrections")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    if rng.random() < 0.6:
        p.add(f"wp.atomic_sub({deltas}, {i}, n * (lam * wi))", f"wp.atomic_add({deltas}, {j}, n * (lam * wj))")
    else:
        p.add(f"{deltas}[{i}] -= n * (lam * wi)", f"{deltas}[{j}] += n * (lam * wj)")
    if p.chance(0.3):
        counts = p.array("constraint_count", T.INT32, "out", shape=pshape)
        p.add(f"wp.atomic_add({counts}, {i}, 1)", f"wp.atomic_add({counts}, {j}, 1)")
    return p.finish(rng.choice(("solve_distance_constraints", "solve_springs", "project_edges")), p.kb.dims)


def l_minus(rest: str) -> str:
    return f"l - {rest}"


# ---------------------------------------------------------------------------------------------
# SPH


def poly6(p: Pattern) -> str:
    """The poly6 smoothing kernel (density) as a ``@wp.func``; returns its name."""
    fl, s = p.fl, p.fl.s
    name = p.name(p.rng.choice(("poly6", "density_kernel", "w_poly6")))
    cube = p.rng.random() < 0.5
    body = "q = h * h - r2\n    return q * q * q" if cube else "return wp.pow(h * h - r2, " + fl.lit(3.0) + ")"
    p.func(f"""
@wp.func
def {name}(r2: {s}, h: {s}):
    if r2 >= h * h:
        return {fl.lit(0.0)}
    {body}
""")
    return name


def force_kernels(p: Pattern, viscous: bool) -> dict[str, str]:
    """Spiky gradient (pressure) and, if wanted, the viscosity Laplacian as ``@wp.func``."""
    fl, s, v = p.fl, p.fl.s, p.fl.v
    names = {k: p.name(k) for k in ("spiky_grad", "visc_laplacian")}
    p.func(f"""
@wp.func
def {names['spiky_grad']}(d: {v}, r: {s}, h: {s}):
    if r >= h or r < {fl.lit(1.0e-6)}:
        return {v}()
    q = h - r
    return d * (q * q / r)
""")
    if viscous:
        p.func(f"""
@wp.func
def {names['visc_laplacian']}(r: {s}, h: {s}):
    return wp.max(h - r, {fl.lit(0.0)})
""")
    return names


@register("sph", 1.0, source="patterns")
def sph(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.15)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [rng.choice((16, 32, 64))]
    x = p.array(rng.choice(("positions", "particle_x", "x")), fl.vec, lo=-1.0, hi=1.0)
    h = p.scalar(rng.choice(("smoothing_length", "kernel_radius", "h")), lo=0.2, hi=0.8)
    if rng.random() < 0.5:
        n = f"{x}.shape[0]"
    else:
        n = p.scalar("num_particles", T.INT32, lo=p.kb.dims[0], hi=p.kb.dims[0])
    mass = p.scalar(rng.choice(("particle_mass", "mass")), lo=0.5, hi=2.0)
    if rng.random() < 0.45:
        return _sph_density(p, x, h, n, mass, poly6(p))
    return _sph_forces(p, x, h, n, mass)


def _sph_density(p: Pattern, x: str, h: str, n: str, mass: str, kernel: str) -> KernelBuilder:
    fl = p.fl
    p.add(f"xi = {x}[tid]", f"rho = {fl.lit(0.0) if fl.f64 else 'float(0.0)'}", f"for j in range({n}):",
          f"{INDENT}d = xi - {x}[j]", f"{INDENT}rho += {mass} * {kernel}(wp.dot(d, d), {h})")
    densities = p.array(p.rng.choice(("densities", "particle_rho", "density")), fl.scalar, "out")
    if p.chance(0.5):
        rest = p.scalar(p.rng.choice(("rest_density", "rho0")), lo=0.5, hi=2.0)
        stiffness = p.scalar(p.rng.choice(("stiffness", "gas_constant")), lo=1.0, hi=10.0)
        pressures = p.array(p.rng.choice(("pressures", "particle_p")), fl.scalar, "out")
        clamp = p.chance(0.5)  # clamped equation of state: no attraction
        value = f"wp.max({stiffness} * (rho - {rest}), {fl.lit(0.0)})" if clamp else f"{stiffness} * (rho - {rest})"
        p.add(f"{pressures}[tid] = {value}")
    p.add(f"{densities}[tid] = rho")
    return p.finish(p.rng.choice(("compute_density", "sph_density", "update_density")), p.kb.dims)


def _sph_forces(p: Pattern, x: str, h: str, n: str, mass: str) -> KernelBuilder:
    rng, fl = p.rng, p.fl
    rho = p.array(rng.choice(("densities", "particle_rho")), fl.scalar, lo=0.5, hi=2.0)
    press = p.array(rng.choice(("pressures", "particle_p")), fl.scalar, lo=0.0, hi=5.0)
    viscous = p.chance(0.6)
    k = force_kernels(p, viscous)
    p.add(f"xi = {x}[tid]", f"pi = {press}[tid]", f"f = {fl.v}()")
    if viscous:
        v = p.array(rng.choice(("velocities", "particle_v")), fl.vec)
        mu = p.scalar(rng.choice(("viscosity", "mu")), lo=0.0, hi=0.5)
        p.add(f"vi = {v}[tid]")
    p.add(f"for j in range({n}):", f"{INDENT}if j == tid:", f"{INDENT * 2}continue",
          f"{INDENT}d = xi - {x}[j]", f"{INDENT}r = wp.length(d)",
          f"{INDENT}f -= {k['spiky_grad']}(d, r, {h}) * ({mass} * (pi + {press}[j]) / ({fl.lit(2.0)} * {rho}[j]))")
    if viscous:
        p.add(f"{INDENT}f += ({v}[j] - vi) * ({mu} * {mass} * {k['visc_laplacian']}(r, {h}) / {rho}[j])")
    acc = f"f / {rho}[tid]"
    if p.chance(0.5):
        acc += " + " + fl.up("y", p.scalar("gravity", lo=-9.8, hi=-1.0))
    out = p.array(rng.choice(("accelerations", "particle_a", "forces_out")), fl.vec, "out")
    p.add(f"{out}[tid] = {acc}")
    # Warp's adjoint of this dynamic neighbour loop disagrees with finite differences: no gradient check
    return p.finish(rng.choice(("compute_forces", "sph_forces", "pressure_and_viscosity")), p.kb.dims,
                    differentiable=False)


# ---------------------------------------------------------------------------------------------
# reductions with atomics


def reduced_value(p: Pattern, two_d: bool) -> tuple[str, bool]:
    """Lines computing ``value`` for thread ``tid`` (or ``i, j``); (expression, reads a float input)."""
    rng, fl = p.rng, p.fl
    at = "i, j" if two_d else "tid"
    kind = rng.choice(("kinetic", "square", "error", "length", "plain") if not two_d else ("square", "error", "plain"))
    if kind == "kinetic":
        v = p.array(rng.choice(("velocities", "particle_v")), fl.vec)
        m = p.array(rng.choice(("masses", "particle_mass")), fl.scalar, lo=0.5, hi=2.0)
        p.add(f"v = {v}[tid]", f"value = {fl.lit(0.5)} * {m}[tid] * wp.dot(v, v)")
    elif kind == "length":
        x = p.array(rng.choice(("positions", "points")), fl.vec)
        p.add(f"value = wp.length({x}[tid])")
    elif kind == "error":
        a = p.array(rng.choice(("predicted", "values", "field")), fl.scalar, ndim=2 if two_d else 1)
        b = p.array(rng.choice(("target", "reference", "expected")), fl.scalar, ndim=2 if two_d else 1)
        p.add(f"diff = {a}[{at}] - {b}[{at}]", "value = diff * diff")
    elif kind == "square":
        a = p.array(rng.choice(("values", "field", "residual")), fl.scalar, ndim=2 if two_d else 1)
        p.add(f"r = {a}[{at}]", "value = r * r")
    else:
        a = p.array(rng.choice(("values", "data", "weights")), fl.scalar, ndim=2 if two_d else 1)
        p.add(f"value = {a}[{at}]")
    return "value", True


@register("atomic_reduction", 1.0, source="patterns")
def atomic_reduction(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.3, dim2=0.2)
    p = Pattern(rng, name, suffix, complexity, fl)
    kind = rng.choice(("sum", "sum", "max", "histogram", "count", "segment", "rows", "bounds"))
    two_d = kind == "rows"
    p.kb.dims = [rng.randint(2, 8), rng.randint(4, 16)] if two_d else [launch_size(rng)]
    if kind not in ("histogram", "bounds") and p.chance(0.3) and not two_d:
        mask = p.array(rng.choice(("active", "mask", "flags")), T.INT32, lo=0, hi=1)
        p.add(f"if {mask}[tid] == 0:", f"{INDENT}return")
    if kind == "histogram":
        return _histogram(p)
    if kind == "bounds":
        x = p.array(rng.choice(("positions", "points", "vertices")), T.VEC3F if not fl.f64 else T.VEC3D)
        lower = p.array(rng.choice(("lower", "bounds_min", "box_lower")), x_type(p), "inout", shape=(1,))
        upper = p.array(rng.choice(("upper", "bounds_max", "box_upper")), x_type(p), "inout", shape=(1,))
        p.add(f"x = {x}[tid]", f"wp.atomic_min({lower}, 0, x)", f"wp.atomic_max({upper}, 0, x)")
        return p.finish(rng.choice(("compute_bounds", "bounding_box", "reduce_bounds")), p.kb.dims, differentiable=False)
    value, _ = reduced_value(p, two_d)
    if kind == "max":
        out = p.array(rng.choice(("max_value", "max_speed", "result")), fl.scalar, "inout", shape=(1,))
        fn = rng.choice(("atomic_max", "atomic_max", "atomic_min"))
        p.add(f"wp.{fn}({out}, 0, {value})")
        return p.finish(rng.choice(("reduce_max", "find_extreme", "max_reduce")), p.kb.dims, differentiable=False)
    if kind == "count":
        threshold = p.scalar(rng.choice(("threshold", "tolerance", "limit")), lo=0.0, hi=2.0)
        count = p.array(rng.choice(("count", "num_above", "counter")), T.INT32, "out", shape=(1,))
        p.add(f"if {value} > {threshold}:", f"{INDENT}wp.atomic_add({count}, 0, 1)")
        return p.finish(rng.choice(("count_above", "count_active", "threshold_count")), p.kb.dims, differentiable=False)
    if kind == "segment":
        n_seg = rng.randint(2, 8)
        seg = p.array(rng.choice(("segment_ids", "body_index", "cluster")), T.INT32, lo=0, hi=n_seg - 1)
        sums = p.array(rng.choice(("segment_sums", "body_totals", "cluster_sums")), fl.scalar, "out", shape=(n_seg,))
        p.add(f"wp.atomic_add({sums}, {seg}[tid], {value})")
        return p.finish(rng.choice(("segmented_sum", "reduce_by_key", "accumulate_segments")), p.kb.dims)
    if kind == "rows":
        sums = p.array(rng.choice(("row_sums", "row_norms", "totals")), fl.scalar, "out", shape=(p.kb.dims[0],))
        p.add(f"wp.atomic_add({sums}, i, {value})" if rng.random() < 0.5 else f"{sums}[i] += {value}")
        return p.finish(rng.choice(("sum_rows", "row_reduce", "reduce_rows")), p.kb.dims)
    total = p.array(rng.choice(("total", "result", "energy", "loss")), fl.scalar, "out", shape=(1,))
    scale = p.scalar("scale", lo=0.1, hi=2.0) if p.chance(0.3) else None
    term = f"{value} * {scale}" if scale else value
    p.add(f"wp.atomic_add({total}, 0, {term})" if rng.random() < 0.6 else f"{total}[0] += {term}")
    return p.finish(rng.choice(("reduce_sum", "compute_energy", "sum_values", "accumulate")), p.kb.dims)


def x_type(p: Pattern) -> WType:
    return T.VEC3D if p.fl.f64 else T.VEC3F


def _histogram(p: Pattern) -> KernelBuilder:
    rng, fl = p.rng, p.fl
    bins = rng.choice((4, 8, 16, 32))
    values = p.array(rng.choice(("values", "samples", "speeds")), fl.scalar, lo=-1.0, hi=3.0)
    counts = p.array(rng.choice(("histogram", "bin_counts", "counts")), T.INT32, "out", shape=(bins,))
    lo = p.scalar(rng.choice(("min_value", "lower")), lo=-1.0, hi=0.0)
    width = p.scalar(rng.choice(("bin_width", "bin_size")), lo=0.1, hi=0.5)
    p.add(f"b = int(({values}[tid] - {lo}) / {width})")
    if rng.random() < 0.6:
        p.add(f"b = wp.clamp(b, 0, {counts}.shape[0] - 1)")
    else:
        p.add(f"if b < 0 or b >= {counts}.shape[0]:", f"{INDENT}return")
    p.add(f"wp.atomic_add({counts}, b, 1)")
    return p.finish(rng.choice(("histogram", "bin_values", "count_bins")), p.kb.dims, differentiable=False)
