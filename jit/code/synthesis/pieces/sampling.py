"""Interpolation on grids: bilinear and trilinear sampling and splatting, grid coordinates, falloffs.

Points are in grid units (cell ``i`` sits at ``i``); samples outside the grid are clamped to
its border, the way texture lookups clamp. A splat distributes a value to the surrounding
nodes with the same weights (particle-to-grid transfer), so the weights sum to one and the
total is conserved; a point outside the grid splats nothing (clamped, it would pile its value
onto the border nodes). What it leaves out: stencils (``stencils``) and backtracing (``advection``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import INDENT, Role, Writer, piece
from jit.code.synthesis.pieces.roles import GRID_POINT, GRID_VALUE, GRID_VECTOR, POSITION

SCALAR_GRID = Role("scalar grid", "grid")  # an array bound by the kernel, never resolved
VECTOR_GRID = Role("vector grid", "grid")
GRID_ORIGIN = Role("grid origin", "vec", -1.0, -0.5, ("origin", "grid_origin", "grid_lower"))
WEIGHT = Role("weight", "scalar")
DISTANCE = Role("distance", "scalar")
# grids that particles live in: a few cells across the particles' extent, so they fall inside
GRID_INV_DX = Role("inverse cell size", "scalar", 2.0, 4.0, ("inv_dx", "inv_cell_size", "inv_cell_width"))
FALLOFF_RADIUS = Role("falloff radius", "scalar", 0.2, 1.0, ("radius", "brush_radius", "falloff_radius"))
AXES = "xyz"


def sampler(w: Writer, dim: int, kind: str) -> str:
    """The ``@wp.func`` that samples a ``dim``-D grid of ``kind`` (scalar or vec) values; its name."""
    st, t = w.style, w.style.type(kind)
    s = st.s
    axes = AXES[:dim]
    lines = [f'"""{("Bi", "Tri")[dim - 2]}linear interpolation at a point in grid units, clamped to the grid."""']
    for a, c in enumerate(axes):
        lines += [f"{c} = wp.clamp(p[{a}], {st.lit(0.0)}, {s}(f.shape[{a}] - 1))",
                  f"{c}0 = wp.min(int({c}), f.shape[{a}] - 2)",
                  f"t{c} = {c} - {s}({c}0)"]

    def at(offsets: tuple[int, ...]) -> str:
        return "f[" + ", ".join(f"{c}0 + 1" if o else f"{c}0" for c, o in zip(axes, offsets)) + "]"

    if dim == 2:
        lines += [f"a = wp.lerp({at((0, 0))}, {at((1, 0))}, tx)", f"b = wp.lerp({at((0, 1))}, {at((1, 1))}, tx)",
                  "return wp.lerp(a, b, ty)"]
    else:
        for j in (0, 1):
            for k in (0, 1):
                lines.append(f"c{j}{k} = wp.lerp({at((0, j, k))}, {at((1, j, k))}, tx)")
        lines += ["c0 = wp.lerp(c00, c10, ty)", "c1 = wp.lerp(c01, c11, ty)", "return wp.lerp(c0, c1, tz)"]
    body = "\n".join(INDENT + line for line in lines)
    base = f"sample_{'scalar' if kind == 'scalar' else 'vector'}"
    return w.func(base, f"@wp.func\ndef {{name}}(f: wp.array{dim}d(dtype={t}), p: {st.v}):\n{body}\n")


def splatter(w: Writer, dim: int, kind: str) -> str:
    """The ``@wp.func`` that adds a value to the 2^dim nodes around a point, by (multi)linear weights."""
    st, t = w.style, w.style.type(kind)
    s, one = st.s, st.lit(1.0)
    axes = AXES[:dim]
    lines = ['"""Add a value to the nodes around a point in grid units, weighted as linear interpolation;',
             'a point outside the grid adds nothing."""']
    outside = " or ".join(f"p[{a}] < {st.lit(0.0)} or p[{a}] > {s}(f.shape[{a}] - 1)" for a in range(dim))
    lines += [f"if {outside}:", f"{INDENT}return"]
    for a, c in enumerate(axes):  # p is not negative here: int() floors it
        lines += [f"{c}0 = wp.min(int(p[{a}]), f.shape[{a}] - 2)",
                  f"t{c} = p[{a}] - {s}({c}0)"]
    steps = dict(zip(axes, "ijk"))  # di, dj, dk: the corner's offset along x, y, z
    loops = [f"for d{steps[c]} in range(2):" for c in axes]
    weight = " * ".join(f"wp.where(d{steps[c]} == 0, {one} - t{c}, t{c})" for c in axes)
    index = ", ".join(f"{c}0 + d{steps[c]}" for c in axes)
    for depth, loop in enumerate(loops):
        lines.append(INDENT * depth + loop)
    lines.append(INDENT * dim + f"wp.atomic_add(f, {index}, value * ({weight}))")
    body = "\n".join(INDENT + line for line in lines)
    base = f"splat_{'scalar' if kind == 'scalar' else 'vector'}"
    return w.func(base, f"@wp.func\ndef {{name}}(f: wp.array{dim}d(dtype={t}), p: {st.v}, value: {t}):\n{body}\n")


def _register(dim: int) -> None:
    name = ("bilinear", "trilinear")[dim - 2]
    for kind, grid, value, what in (("scalar", SCALAR_GRID, GRID_VALUE, "field"),
                                    ("vec", VECTOR_GRID, GRID_VECTOR, "vector field")):
        tag = "" if kind == "scalar" else "_vector"

        def sample(w: Writer, field, p, kind=kind):
            fn = sampler(w, dim, kind)
            names = ("value", "sample", "s") if kind == "scalar" else ("u", "vel", "sample")
            if "old" in field or "prev" in field:  # the field before the grid update
                names = tuple(f"{n}_old" for n in names)
            return {"value": w.let(names, f"{fn}({field}, {p})")}

        def splat(w: Writer, field, p, value, kind=kind):
            w.add(f"{splatter(w, dim, kind)}({field}, {p}, {value})")
            return {}

        piece(f"{name}_sample{tag}", needs={"field": grid, "p": GRID_POINT}, gives={"value": value},
              says=f"{name} interpolation of a {what}", dims=(dim,))(sample)
        piece(f"{name}_splat{tag}", needs={"field": grid, "p": GRID_POINT, "value": value}, gives={},
              says=f"a {name} splat into a {what}", dims=(dim,))(splat)


_register(2)
_register(3)


@piece("world_to_grid", needs={"x": POSITION, "origin": GRID_ORIGIN, "inv_dx": GRID_INV_DX},
       gives={"p": GRID_POINT}, says="grid coordinates of a world position")
def world_to_grid(w: Writer, x, origin, inv_dx):
    return {"p": w.let(("p", "grid_pos", "local"), f"({x} - {origin}) * {inv_dx}")}


@piece("smooth_falloff", needs={"dist": DISTANCE, "radius": FALLOFF_RADIUS}, gives={"weight": WEIGHT},
       says="a smoothstep falloff")
def smooth_falloff(w: Writer, dist, radius):
    w.comment("one at the center, easing to zero at the radius")
    return {"weight": w.let(("weight", "falloff"), f"{w.lit(1.0)} - wp.smoothstep({w.lit(0.0)}, {radius}, {dist})")}
