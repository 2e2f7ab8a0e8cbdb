"""Pattern families: skeletons of what simulation kernels do, randomised in their details.

Each category here writes one kind of kernel people write with Warp (particle integration,
spring forces; SPH is in ``patterns_fluids``, reductions with atomics in ``patterns_reductions``)
as Python text, with names by role, and draws its details from ``rng``: precision
(float32/float64), vector width, extra force and damping terms, optional branches, ``@wp.func``
helpers and ``@wp.struct`` parameters. Every input a kernel reads is described in its metadata
(ranges, shapes, index arrays in bounds), so the kernels run on random input without NaN, inf
or out-of-bounds access.

What every family keeps, as real Warp code does: parameters ordered inputs (arrays, then
scalars), then outputs (``signature_order``); no value computed twice (``wp.length`` once, then
``d / length`` rather than ``wp.normalize(d)``); every division by a quantity that can be zero
guarded; every output element a thread owns written on every path (an early ``return`` only
before outputs accumulated with atomics); neighbour queries test the distance.

Besides the physics, each template varies its code the ways people do, so that two kernels of
one category rarely share 90% of their normalised token 4-grams (the near-duplicate threshold):
a named local or the inline expression, early-exit guards, helpers or inline code, in-place or
separate outputs and optional diagnostic outputs (energy, counts, changes).

Every kernel opens with a docstring saying what the drawn variant computes (its purpose, then
the optional parts it carries), and the same purpose goes in the record (``meta["record"]``).
Kernels are written without dead code and keep their text and comments as written.

This module also holds the small toolkit the other pattern modules share (``Flavour``,
``Pattern``). What it leaves out: grids and ray casting (``patterns_grid``), solids and
rigid bodies (``patterns_solid``), cloth (``patterns_cloth``) and queries of meshes and hash
grids (``patterns_geometry``).
"""

from __future__ import annotations

import ast
import random
import textwrap
from dataclasses import dataclass
from typing import Any

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder, Line, Param, Profile
from jit.code.synthesis.types import WType

VEC2D = WType("vec2d", "vec", "float64", (2,))
VEC4I = WType("vec4i", "vec", "int32", (4,))
MAT22D = WType("mat22d", "mat", "float64", (2, 2))
UINT64 = WType("uint64", "uint", "uint64")
LEVELS = {"small": 0, "medium": 1, "large": 2}
DOC_WIDTH = 96  # docstring text columns (black leaves docstrings as written)


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
        if self.plain and t.scalar == "float32" and t.kind in ("vec", "mat", "spatial"):
            return t.py[:-1]  # wp.vec3f -> wp.vec3, wp.spatial_vectorf -> wp.spatial_vector
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
    """A float literal as an author writes it: ``0.25``, ``2.0``, ``1.0e-6`` (not ``1e-06``)."""
    text = f"{x:.4g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}e{int(exponent)}"
    return text if "." in text else text + ".0"


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


class PatternKernel(KernelBuilder):
    """A ``KernelBuilder`` whose kernel opens with a docstring saying what it computes, and
    whose body keeps the comments its pattern gave (dead-code elimination drops comments)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.doc = ""
        self.comments: list[tuple[str, str]] = []  # (a body line, stripped; the comment above it)

    def source(self, eliminate: bool = True) -> str:
        # written without dead code, a pattern keeps its text as written: elimination would re-print it
        # with ``ast.unparse`` (``1e-06``, no comments). Parameters nothing reads are still dropped.
        text = super().source(eliminate=False)
        head = text.index(f"\ndef {self.name}(") + 1
        end = text.index("\n", head) + 1  # the signature is one line until the layout wraps it
        lines = text[end:].split("\n")
        for code, comment in self.comments:
            at = next((n for n, line in enumerate(lines) if line.strip() == code), None)
            if at is not None:  # the line survived elimination
                pad = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
                lines.insert(at, f"{pad}# {comment}")
        doc = self.doc + "\n" if self.doc else ""
        return text[:end] + doc + "\n".join(lines)


def docstring(purpose: str, detail: str = "") -> str:
    """A kernel docstring: the purpose, then a sentence of detail, wrapped as a person would."""
    text = " ".join(part.strip() for part in (purpose, detail) if part.strip())
    lines = textwrap.wrap(text, DOC_WIDTH)
    if len(lines) == 1:
        return f'{INDENT}"""{lines[0]}"""'
    return "\n".join([f'{INDENT}"""{lines[0]}', *(INDENT + line for line in lines[1:]), f'{INDENT}"""'])


def sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


class Pattern:
    """A kernel being written: parameters by role, helpers, structs and body lines.

    Parts that add behaviour say so with ``note`` (a clause such as "bounces off the ground"),
    so the docstring describes the variant that was drawn.
    """

    def __init__(self, rng: random.Random, name: str, suffix: str, complexity, fl: Flavour | None = None):
        self.rng = rng
        self.suffix = suffix
        self.fl = fl or Flavour()
        self.level = level(complexity if complexity != "mixed" else rng.choice(("small", "medium", "large")))
        self.kb = PatternKernel(rng, name, suffix, Profile({T.FLOAT32: 1.0}), "small")
        self.notes: list[str] = []
        self.purpose = ""  # for families whose parts choose it before ``finish``
        self.pending: str | None = None  # a comment for the next body line
        self.kb.params = []
        self.lines: list[str] = []
        self.no_grad = False  # set by a part whose adjoint Warp does not give (atomic min/max)
        self.early_exit = False  # set by a part that returns before the outputs are written

    def chance(self, p: float) -> bool:
        """True with probability ``p``, more often for larger complexities."""
        return self.rng.random() < min(0.95, p * (0.6, 1.0, 1.4)[self.level])

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def array(self, name: str, dtype: WType, role: str = "in", lo: float = -2.0, hi: float = 2.0,
              shape: tuple[int, ...] | None = None, ndim: int | None = None) -> str:
        ndim = ndim if ndim is not None else len(shape) if shape else len(self.kb.dims)
        self.kb.params.append(RoleParam(name, "array", dtype, ndim, role, (lo, hi), shape, spelled=self.fl.spell(dtype)))
        return name

    def scalar(self, name: str, dtype: WType | None = None, lo: float = -2.0, hi: float = 2.0) -> str:
        dtype = dtype or self.fl.scalar
        # `dt: float` and `n: int` in plain kernels: the executor reads them as float32 and int32
        self.kb.params.append(RoleParam(name, "scalar", dtype, 0, "in", (lo, hi), None, spelled=self.fl.spell(dtype)))
        return name

    def count(self, name: str, n: int) -> str:
        """An ``int`` count parameter whose value is always ``n`` (the launch size, a vertex count)."""
        return self.scalar(name, T.INT32, lo=n, hi=n)

    def handle(self, name: str, build: dict | None = None) -> str:
        """A ``wp.uint64`` id of a runtime object (mesh, BVH, hash grid); ``build`` is the recipe the
        launch builds it from (``checks.objects``), so the kernel runs."""
        self.kb.params.append(RoleParam(name, "handle", UINT64, 0, "in", (0.0, 0.0), None, spelled="wp.uint64"))
        if build:
            self.kb.meta.setdefault("objects", {})[name] = dict(build)
        return name

    def struct(self, base: str, fields: list[tuple[str, WType]], arg: str, lo: float, hi: float) -> str:
        """A ``@wp.struct`` parameter ``arg``; every field is drawn from [lo, hi] when run."""
        t = WType(self.name(base), "struct", fields=tuple(fields))
        body = "\n".join(f"{INDENT}{n}: {self.fl.spell(ft)}" for n, ft in fields)
        self.kb.structs.append((t, f"@wp.struct\nclass {t.name}:\n{body}"))
        self.kb.params.append(RoleParam(arg, "struct", t, 0, "in", (lo, hi), None, spelled=t.name))
        return arg

    def func(self, source: str) -> None:
        self.kb.funcs.append(source.strip("\n"))

    def coin(self, p: float = 0.5) -> bool:
        """True with probability ``p`` whatever the complexity (a choice of spelling, not of size)."""
        return self.rng.random() < p

    def pick(self, *options):
        return self.rng.choice(options)

    def length(self, d: str) -> str:
        """The length of vector ``d`` (``wp.length``, as real code spells it; draws nothing)."""
        return f"wp.length({d})"

    def let(self, name: str, expr: str, inline: float = 0.35, indent: int = 0) -> str:
        """``name = expr`` as a named local (returns ``name``), or the expression itself, bracketed.

        Only for values read once: inlining a value read twice would compute it twice.
        """
        if self.coin(inline):  # brackets only where precedence needs them
            atom = isinstance(ast.parse(expr, mode="eval").body, (ast.Call, ast.Name, ast.Attribute, ast.Subscript))
            return expr if atom else f"({expr})"
        self.add(f"{name} = {expr}", indent=indent)
        return name

    def guard(self, tid: str, extent: str | None, count: tuple[str, int] | None = None, p: float = 0.3) -> None:
        """Sometimes an early exit for threads past the end (launches are often rounded up).

        ``extent`` is an array whose first dimension is the launch size; ``count`` a count
        parameter (name, value) that may stand for it instead.
        """
        if not self.chance(p):
            return
        n = self.count(*count) if count and (extent is None or self.coin()) else f"{extent}.shape[0]"
        self.add(f"if {tid} >= {n}:", f"{INDENT}return")

    def add(self, *lines: str | None, indent: int = 0) -> None:
        """Body lines (``None`` entries are skipped), indented ``indent`` levels deeper."""
        for text in lines:
            if text is not None:
                if self.pending:
                    self.kb.comments.append((text.splitlines()[0].strip(), self.pending))
                    self.pending = None
                self.lines += [INDENT * indent + line for line in text.splitlines()]

    def why(self, comment: str, line: str | None = None) -> None:
        """A comment to put above ``line`` (a body line, as written), or above the next line added."""
        if line is None:
            self.pending = comment
        else:
            self.kb.comments.append((line.strip(), comment))

    def note(self, clause: str) -> None:
        """A detail of the drawn variant for the docstring ("clamps the speed to ``max_speed``")."""
        self.notes.append(clause)

    def finish(self, kernel_base: str, dims: list[int], tids: list[str] | None = None, *, purpose: str,
               differentiable: bool = True, needs: str | None = None) -> KernelBuilder:
        """The finished kernel; ``purpose`` (one sentence) opens its docstring and goes in the record."""
        kb = self.kb
        purpose = sentence(purpose)
        notes = self.notes[:3]  # the main ones: a docstring is a summary, not a listing
        detail = sentence("It " + ", ".join(notes[:-1]) + (" and " if len(notes) > 1 else "") + notes[-1]) \
            if notes else ""
        kb.doc = docstring(purpose, detail)
        kb.meta["record"] = {"purpose": purpose}
        kb.name = self.name(kernel_base)
        kb.dims, kb.ndim = list(dims), len(dims)
        kb.tids = tids or (["tid"] if len(dims) == 1 else ["i", "j", "k"][: len(dims)])
        kb.body = [Line("\n".join(self.lines))]
        names = [q.name for q in kb.params]
        if len(set(names)) < len(names):  # two parameters of one name: a bug in the pattern
            raise ValueError(f"{kb.name}: parameter names repeat: {sorted(n for n in names if names.count(n) > 1)}")
        clash = assigned_names(self.lines) & {q.name for q in kb.params}
        if clash:  # a local shadowing a parameter: a bug in the pattern, not a random event
            raise ValueError(f"{kb.name}: locals {sorted(clash)} shadow parameters")
        kb.params = signature_order(kb.params, self.lines)
        kb.budget = len(self.lines)
        kb.meta["differentiable"] = differentiable and not self.no_grad
        if needs:
            kb.meta["needs_runtime_objects"] = True
            kb.meta["reason"] = needs
        return kb


def signature_order(params: list[Param], lines: list[str]) -> list[Param]:
    """Parameters as real kernels order them: runtime object ids, input arrays (arrays updated in
    place among them), then scalars and structs, then outputs (arrays written only, and arrays
    only accumulated into with atomics or ``+=``). The order within each group is kept."""
    tree = ast.parse(textwrap.dedent("\n".join(lines)))
    read = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name)}

    def group(q: Param) -> int:
        if q.kind == "handle":
            return 0
        if q.kind == "array":
            return 1 if q.role == "in" or (q.role == "inout" and q.name in read) else 3
        return 2

    return sorted(params, key=group)


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
        # the launch fills every field from one range: a small step, damping rate and gravity vector
        params = p.struct("SimParams", [("dt", fl.scalar), ("gravity", fl.vec), ("damping", fl.scalar)],
                          "params", 0.0, 0.05)
        dt, gravity, damping = f"{params}.dt", f"{params}.gravity", f"{params}.damping"
    else:
        dt = p.scalar("dt", lo=0.001, hi=0.02)
        gravity = fl.up("y", p.scalar("gravity", lo=-9.8, hi=-1.0))
        damping = p.scalar(rng.choice(("damping", "drag", "k_damp")), lo=0.0, hi=0.5)
    p.guard("tid", x, ("num_particles", n), p=0.3)
    p.add(*p.pick([f"x = {x}[tid]", f"v = {v}[tid]"], [f"v = {v}[tid]", f"x = {x}[tid]"]))
    forced = rng.random() < 0.75
    mass = rng.choice(("inv_mass", "inv_mass", "mass", "scalar")) if forced else "none"
    # a per-particle diagnostic: the kinetic energy where the mass is known, else the speed
    diagnostic = "energy" if mass == "mass" and p.chance(0.3) else "speed" if p.chance(0.2) else None
    w = "w"  # the inverse mass: a local read from an array, or the scalar parameter itself
    if mass == "inv_mass":
        w = p.array("inv_mass" if rng.random() < 0.5 else "particle_inv_mass", fl.scalar, lo=0.0, hi=2.0)
        p.add(f"w = {w}[tid]")
        w = "w"
        if in_place and diagnostic is None and p.chance(0.4):  # nothing to write for them
            p.add(f"if w == {fl.lit(0.0)}:", f"{INDENT}return")
            p.note("leaves kinematic particles (zero inverse mass) where they are")
        else:  # as Warp's integrator does: gravity moves only particles with mass
            gravity = f"{gravity} * wp.nonzero(w)"
            p.note("keeps gravity off kinematic particles (zero inverse mass)")
    elif mass == "mass":
        m = p.array("masses" if rng.random() < 0.5 else "particle_mass", fl.scalar, lo=0.5, hi=2.0)
        if diagnostic == "energy":
            p.add(f"m = {m}[tid]", f"w = {fl.lit(1.0)} / m")
        else:
            p.add(f"w = {fl.lit(1.0)} / {m}[tid]")
    elif mass == "scalar":
        w = p.scalar("inv_mass", lo=0.5, hi=2.0)
    if forced:
        f = p.array(rng.choice(("forces", "particle_f", "f_ext")), fl.vec)
        p.add(f"f = {f}[tid]")
        if p.chance(0.35):  # linear drag on top of the external forces
            p.add(f"f = f - {damping} * v")
            damping = None
            p.note("adds linear drag to the external forces")
        p.add(f"v = v + (f * {w} + {gravity}) * {dt}" if rng.random() < 0.5 else
              f"a = f * {w} + {gravity}\nv = v + a * {dt}")
    else:
        p.add(f"v = v + {gravity} * {dt}")
    if damping is not None:
        p.add(rng.choice((f"v = v * ({fl.lit(1.0)} - {damping} * {dt})", f"v = v * wp.exp(-{damping} * {dt})")))
        p.note("damps the velocity")
    if p.chance(0.3):
        vmax = p.scalar("max_speed", lo=1.0, hi=10.0)
        p.note("clamps the speed to max_speed")
        if p.coin(0.7):
            p.add(f"speed = {p.length('v')}", f"if speed > {vmax}:", f"{INDENT}v = v * ({vmax} / speed)")
        else:  # compare squared speeds: one square root only when clamping
            p.add("speed_sq = wp.dot(v, v)", f"if speed_sq > {vmax} * {vmax}:",
                  f"{INDENT}v = v * ({vmax} / wp.sqrt(speed_sq))")
    p.add("x = x + v * " + dt)
    boundary = rng.choice(("none", "ground", "ground", "box", "sphere"))
    if boundary == "ground":
        restitution = p.scalar("restitution", lo=0.0, hi=1.0)
        vx = "v[0]"
        if p.chance(0.4):
            vx = f"v[0] * ({fl.lit(1.0)} - {p.scalar('friction', lo=0.0, hi=1.0)})"
        # rebuilt rather than assigned by component: Warp's adjoint of component stores in branches is unreliable
        zero = fl.lit(0.0)
        p.note("bounces particles off the ground plane y = 0")
        p.add(f"if x[1] < {zero}:",
              f"{INDENT}x = {fl.v}(x[0], {zero}{', x[2]' if fl.dim == 3 else ''})",
              f"{INDENT}v = {fl.v}({vx}, -v[1] * {restitution}{', v[2]' if fl.dim == 3 else ''})")
    elif boundary == "box":
        reflect = p.name(rng.choice(("reflect", "bounce", "wall_velocity")))
        half = p.scalar(rng.choice(("box_size", "half_extent", "bound")), lo=0.5, hi=4.0)
        # only a velocity heading out of the box flips: one already heading back in is left alone
        p.func(f"""
@wp.func
def {reflect}(x: {fl.s}, v: {fl.s}, half: {fl.s}):
    if (x > half and v > {fl.lit(0.0)}) or (x < -half and v < {fl.lit(0.0)}):
        return -v
    return v
""")
        parts = ", ".join(f"{reflect}(x[{a}], v[{a}], {half})" for a in range(fl.dim))
        p.add(f"v = {fl.v}({parts})", f"x = wp.min(wp.max(x, {fl.v}(-{half})), {fl.v}({half}))")
        p.note(f"keeps particles inside the box [-{half}, {half}], reflecting the velocity at its walls")
    elif boundary == "sphere":
        center = p.array("collider_center", fl.vec, shape=(1,))
        radius = p.scalar("collider_radius", lo=0.1, hi=1.0)
        # n points out of the sphere; only the inward part of the velocity is removed
        p.add(f"d = x - {center}[0]", "dist = wp.length(d)", f"if dist < {radius} and dist > {fl.lit(0.0)}:",
              f"{INDENT}n = d / dist", f"{INDENT}x = {center}[0] + n * {radius}",
              f"{INDENT}v = v - n * wp.min(wp.dot(v, n), {fl.lit(0.0)})")
        p.note("pushes particles out of a spherical collider")
    if in_place:
        p.add(f"{x}[tid] = x", f"{v}[tid] = v")
    else:
        xo = p.array(x + "_out" if "_" in x else "new_positions", fl.vec, "out")
        vo = p.array(v + "_out" if "_" in v else "new_velocities", fl.vec, "out")
        p.add(f"{xo}[tid] = x", f"{vo}[tid] = v")
    if diagnostic == "energy":
        ke = p.array(rng.choice(("kinetic_energy", "particle_energy")), fl.scalar, "out")
        p.add(f"{ke}[tid] = {fl.lit(0.5)} * m * wp.dot(v, v)")
        p.note("writes each particle's kinetic energy")
    elif diagnostic == "speed":
        speeds = p.array(rng.choice(("speeds", "particle_speed")), fl.scalar, "out")
        p.add(f"{speeds}[tid] = {p.length('v')}")
        p.note("writes each particle's speed")
    base = rng.choice(("integrate_particles", "integrate", "step_particles", "advance_particles"))
    pushed = "external forces and gravity" if forced else "gravity"
    return p.finish(base, [n], purpose=f"Advance particles one symplectic Euler step under {pushed}")


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


VELOCITY_OF = {"positions": "velocities", "particle_q": "particle_qd", "x": "v"}  # one naming convention


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
    p.guard("tid", None, (rng.choice(("num_springs", "spring_count")), p.kb.dims[0]), p=0.25)
    i, j = endpoints(p, n_particles)
    x = p.array(rng.choice(("positions", "particle_q", "x")), fl.vec, lo=-1.0, hi=1.0, shape=pshape)
    if rng.random() < 0.4:
        return _distance_constraint(p, x, i, j, pshape)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]")
    rest = per_spring(p, "rest_lengths" if rng.random() < 0.5 else "spring_rest_length", "rest_length", 0.1, 1.0)
    ke = per_spring(p, "spring_stiffness", "ke", 10.0, 100.0)
    damped = p.chance(0.6)
    helper = p.chance(0.35)
    eps = fl.lit(1.0e-6)
    if helper:
        force = p.name(rng.choice(("spring_force", "eval_spring")))
        args = "xi: {v}, xj: {v}, rest: {s}, ke: {s}".format(v=fl.v, s=fl.s)
        zero = p.pick(f"{fl.v}()", f"{fl.v}({', '.join([fl.lit(0.0)] * fl.dim)})")
        tail = p.pick([f"if l < {eps}:", f"{INDENT}return {zero}", "return d * (ke * (l - rest) / l)"],
                      ["return d * (ke * (l - rest) / wp.max(l, " + eps + "))"])
        body = "\n".join(INDENT + line for line in ["d = xj - xi", f"l = {p.length('d')}", *tail])
        p.func(f"@wp.func\ndef {force}({args}):\n{body}\n")
        p.add(f"f = {force}(xi, xj, {rest}, {ke})")
        if damped:
            v = p.array(VELOCITY_OF[x], fl.vec, shape=pshape)
            kd = per_spring(p, "spring_damping", "kd", 0.0, 1.0)
            p.add(f"dv = {v}[{j}] - {v}[{i}]", f"f = f + dv * {kd}")
            p.note("damps the relative velocity of the two ends")
    else:
        p.add("d = xj - xi", f"l = {p.length('d')}")
        # a spring of zero length has no direction: skip it, or divide by a floor on the length
        form = p.pick("return", "max")
        if form == "return":
            p.add(f"if l < {eps}:", f"{INDENT}return", "dir = d / l")
        else:
            p.add(f"dir = d / wp.max(l, {eps})")
        p.add(f"c = l - {rest}")
        if damped:
            v = p.array(VELOCITY_OF[x], fl.vec, shape=pshape)
            kd = per_spring(p, "spring_damping", "kd", 0.0, 1.0)
            if p.coin():
                p.add(f"dcdt = wp.dot(dir, {v}[{j}] - {v}[{i}])", f"f = dir * ({ke} * c + {kd} * dcdt)")
            else:
                p.add(f"vrel = {v}[{j}] - {v}[{i}]", f"fs = {ke} * c + {kd} * wp.dot(vrel, dir)", "f = fs * dir")
            p.note("damps the rate of stretch along the spring")
        else:
            p.add(f"f = dir * ({ke} * c)")
        if form == "max" and p.chance(0.3):  # every spring writes its entry: no early return
            energy = p.array(rng.choice(("spring_energy", "energies")), fl.scalar, "out")
            p.add(f"{energy}[tid] = {fl.lit(0.5)} * {ke} * c * c")
            p.note("writes each spring's elastic energy")
    forces = p.array(rng.choice(("forces", "particle_f", "f_total")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    style = rng.random()
    if style < 0.5:
        p.add(f"wp.atomic_add({forces}, {i}, f)", f"wp.atomic_sub({forces}, {j}, f)")
    elif style < 0.7:
        p.add(f"wp.atomic_add({forces}, {i}, f)", f"wp.atomic_add({forces}, {j}, -f)")
    else:
        p.add(f"{forces}[{i}] += f", f"{forces}[{j}] -= f")
    return p.finish(rng.choice(("eval_springs", "spring_forces", "accumulate_spring_forces")), p.kb.dims,
                    purpose="Accumulate Hookean spring forces, equal and opposite on the two particles of each spring")


def _distance_constraint(p: Pattern, x: str, i: str, j: str, pshape: tuple[int, ...]) -> KernelBuilder:
    """Position-based dynamics: project one distance constraint, accumulate the corrections."""
    rng, fl = p.rng, p.fl
    w = p.array(rng.choice(("inv_mass", "particle_inv_mass", "inv_masses")), fl.scalar, lo=0.0, hi=2.0, shape=pshape)
    rest = per_spring(p, "rest_lengths", "rest_length", 0.1, 1.0)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]", f"wi = {w}[{i}]", f"wj = {w}[{j}]", "w_sum = wi + wj")
    zero = fl.lit(0.0)
    # the corrections are accumulated with atomics: a constraint that cannot move returns early,
    # but a per-constraint output is written before that
    error = p.chance(0.25)
    early = p.coin() and not error
    if early:
        p.add(f"if w_sum == {zero}:", f"{INDENT}return")
    p.add("d = xi - xj", f"l = {p.length('d')}")
    if error:  # the constraint error, for a convergence test
        err = p.array(rng.choice(("constraint_error", "violation")), fl.scalar, "out")
        p.add(f"{err}[tid] = wp.abs({l_minus(rest)})")
        p.note("writes each constraint's violation")
    if early:
        p.add(f"if l < {fl.lit(1.0e-6)}:", f"{INDENT}return")
    else:
        p.add(f"if l < {fl.lit(1.0e-6)} or w_sum == {zero}:", f"{INDENT}return")
    xpbd = p.chance(0.5)
    if xpbd:  # XPBD: a compliance softens the constraint
        alpha = p.scalar("compliance", lo=0.0, hi=0.01)
        dt = p.scalar("dt", lo=0.001, hi=0.02)
        p.add(*p.pick([f"alpha = {alpha} / ({dt} * {dt})", f"lam = ({l_minus(rest)}) / (w_sum + alpha)"],
                      [f"lam = ({l_minus(rest)}) / (w_sum + {alpha} / ({dt} * {dt}))"]))
    else:
        stiffness = p.scalar(rng.choice(("stiffness", "relaxation")), lo=0.1, hi=1.0)
        p.add(f"lam = {stiffness} * ({l_minus(rest)}) / w_sum")
    p.add("n = d / l")
    deltas = p.array(rng.choice(("deltas", "delta_x", "corrections")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    style = rng.random()
    if style < 0.4:
        p.add(f"wp.atomic_sub({deltas}, {i}, n * (lam * wi))", f"wp.atomic_add({deltas}, {j}, n * (lam * wj))")
    elif style < 0.7:
        p.add("corr = n * lam", f"wp.atomic_add({deltas}, {i}, -corr * wi)", f"wp.atomic_add({deltas}, {j}, corr * wj)")
    else:
        p.add(f"{deltas}[{i}] -= n * (lam * wi)", f"{deltas}[{j}] += n * (lam * wj)")
    if p.chance(0.3):  # Jacobi-style solvers average the corrections by how many constraints touch a particle
        counts = p.array("constraint_count", T.INT32, "out", shape=pshape)
        p.add(f"wp.atomic_add({counts}, {i}, 1)", f"wp.atomic_add({counts}, {j}, 1)")
        p.note("counts the constraints per particle for averaging")
    kind = "compliant (XPBD) distance constraint" if xpbd else "distance constraint"
    return p.finish(rng.choice(("solve_distance_constraints", "solve_springs", "project_edges")), p.kb.dims,
                    purpose=f"Project each {kind} and accumulate the position corrections, weighted by inverse mass")


def l_minus(rest: str) -> str:
    return f"l - {rest}"
