"""The tile category: block-level ``wp.tile_*`` programs, launched with ``wp.launch_tiled``.

A small typed tile program: tiles are loaded from arrays (or made by ``tile_zeros``,
``tile_full``, ``tile_arange``...), transformed (``tile_map`` with builtins or a generated
``@wp.func``, arithmetic, scans, transpose, matmul, broadcast, views), reduced
(``tile_sum``, ``tile_max``, ``tile_reduce``...) and stored. Shapes are tracked so every
operation gets operands it accepts; bounds are tracked as for scalars. ``wp.tid()`` is the
block index; ``metadata["launch"]["block_dim"]`` gives the block size. What it leaves out:
tile linear algebra (Cholesky, FFT) and tile queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder, Line, Profile

TILE_NAMES = ("tile", "block", "vals", "rows", "data", "chunk", "lanes", "scan", "part", "buf", "cols", "w_tile")
REDUCED_NAMES = ("total", "block_sum", "peak", "reduced", "partial")
SAFE_UNARY = ("sin", "cos", "tanh", "abs", "floor", "ceil", "sign", "erf", "atan")
BINARY = ("add", "sub", "mul", "min", "max")


@dataclass
class Tile:
    name: str
    shape: tuple[int, ...]
    bound: float


class TileProgram:
    """Tiles in scope by shape, and the statements that made them."""

    def __init__(self, kb: KernelBuilder):
        self.kb = kb
        self.rng = kb.rng
        self.tiles: list[Tile] = []
        self.stmts: list = []
        self.blocks = kb.dims[0]
        self.n = self.rng.choice((8, 16, 32))
        self.m, self.k = self.rng.choice((2, 4, 8)), self.rng.choice((2, 4, 8))
        self.helper: str | None = None
        # one block working on whole arrays (no offsets), as many of Warp's own tile kernels do
        self.whole = self.blocks == 1
        self.storage = ', storage="shared"' if self.rng.random() < 0.15 else ""

    def offset(self, rows: int, two_d: bool) -> str:
        """The ``offset=`` argument of this block's part of an array ("" for a whole array)."""
        if self.whole:
            return ""
        tid = self.kb.tids[0]
        return f", offset=({tid} * {rows}, 0)" if two_d else f", offset={tid} * {rows}"  # an int shape takes an int offset

    def emit(self, text: str, shape: tuple[int, ...], bound: float, prefix: str = "t") -> Tile:
        name = self.kb.names.take(*(TILE_NAMES if prefix == "t" else REDUCED_NAMES))
        self.stmts.append(Line(f"{name} = {text}"))
        tile = Tile(name, shape, bound)
        self.tiles.append(tile)
        return tile

    def of_shape(self, shape) -> Tile:
        same = [t for t in self.tiles if t.shape == shape]
        if same and self.rng.random() < 0.8:
            return self.rng.choice(same)
        return self.source(shape)

    def bounded(self, t: Tile, cap: float = 1.0e4) -> Tile:
        if t.bound <= cap:
            return t
        return self.emit(f"wp.tile_map(wp.{self.rng.choice(('tanh', 'sin', 'cos'))}, {t.name})", t.shape, 1.0)

    def source(self, shape) -> Tile:
        """A new tile of ``shape``: loaded from an input array or constructed."""
        rng, kb = self.rng, self.kb
        roll = rng.random()
        dims = ", ".join(map(str, shape))
        if roll < 0.5:
            if len(shape) == 1:
                a = kb.param("array", T.FLOAT32, "in", ndim=1, shape=(self.blocks * shape[0],))
                return self.emit(f"wp.tile_load({a.name}, shape={shape[0]}{self.offset(shape[0], False)}{self.storage})", shape, 2.0)
            a = kb.param("array", T.FLOAT32, "in", ndim=2, shape=(self.blocks * shape[0], shape[1]))
            return self.emit(f"wp.tile_load({a.name}, shape=({dims}){self.offset(shape[0], True)}{self.storage})", shape, 2.0)
        if roll < 0.65:
            return self.emit(f"wp.tile_{rng.choice(('zeros', 'ones'))}(shape=({dims}{',' if len(shape) == 1 else ''}), dtype=wp.float32)", shape, 1.0)
        if roll < 0.85 or len(shape) > 1:
            value = E.fit(rng, E.gen(kb.ctx, T.FLOAT32), 4.0)
            return self.emit(f"wp.tile_full(shape=({dims}{',' if len(shape) == 1 else ''}), value={value.text}, dtype=wp.float32)", shape, value.bound)
        return self.emit(f"wp.tile_arange({shape[0]}, dtype=wp.float32)", shape, float(shape[0]))

    def transform(self) -> None:
        rng = self.rng
        shape = rng.choice(((self.n,), (self.n,), (self.m, self.k)))
        a = self.of_shape(shape)
        roll = rng.random()
        if roll < 0.2:
            fn = rng.choice(SAFE_UNARY)
            self.emit(f"wp.tile_map(wp.{fn}, {a.name})", shape, a.bound + 1 if fn in ("abs", "floor", "ceil") else 2.0)
        elif roll < 0.35:
            b = self.of_shape(shape)
            if self.helper and rng.random() < 0.5:
                self.emit(f"wp.tile_map({self.helper}, {a.name}, {b.name})", shape, 1.0)
            else:
                op = rng.choice(BINARY)
                a, b = self.bounded(a, 100.0), self.bounded(b, 100.0)
                self.emit(f"wp.tile_map(wp.{op}, {a.name}, {b.name})", shape, a.bound * b.bound + a.bound + b.bound)
        elif roll < 0.5:
            b = self.of_shape(shape)
            a, b = self.bounded(a), self.bounded(b)
            scale = E.lit(rng, T.FLOAT32, -2.0, 2.0)
            form = rng.choice((f"{a.name} + {b.name}", f"{a.name} - {b.name}", f"{a.name} * {scale.text}",
                               f"-{a.name}", f"{a.name} + {b.name} * {scale.text}"))
            self.emit(form, shape, 2 * (a.bound + b.bound) + 1)
        elif roll < 0.62 and len(shape) == 1:
            scan = rng.choice(("tile_scan_inclusive", "tile_scan_exclusive", "tile_scan_max_inclusive", "tile_scan_min_inclusive"))
            a = self.bounded(a, 100.0)
            self.emit(f"wp.{scan}({a.name})", shape, a.bound * shape[0])
        elif roll < 0.75 and len(shape) == 2:
            a = self.bounded(a, 100.0)
            at = self.emit(f"wp.tile_transpose({a.name})", (shape[1], shape[0]), a.bound)
            if rng.random() < 0.6:
                self.emit(f"wp.tile_matmul({a.name}, {at.name})", (shape[0], shape[0]), a.bound * a.bound * shape[1])
        elif roll < 0.85 and len(shape) == 2:
            row = self.emit(f"wp.tile_view({a.name}, offset=(0, 0), shape=(1, {shape[1]}))", (1, shape[1]), a.bound)
            self.emit(f"wp.tile_broadcast({row.name}, shape=({shape[0]}, {shape[1]}))", shape, a.bound)
        else:
            a = self.bounded(a)
            self.emit(f"wp.tile_astype(wp.tile_astype({a.name}, wp.float64), wp.float32)", shape, a.bound)

    def reduce(self) -> Tile:
        rng = self.rng
        a = self.bounded(rng.choice(self.tiles) if self.tiles else self.source((self.n,)), 1.0e3)
        op = rng.choice(("tile_sum", "tile_max", "tile_min", "reduce"))
        size = 1
        for d in a.shape:
            size *= d
        if op == "reduce":
            return self.emit(f"wp.tile_reduce(wp.{rng.choice(('add', 'max', 'min'))}, {a.name})", (1,), a.bound * size, "r")
        return self.emit(f"wp.{op}({a.name})", (1,), a.bound * size, "r")


def tile_helper(kb: KernelBuilder) -> str:
    """A float(float, float) ``@wp.func`` for ``tile_map``; bounded by construction."""
    name = kb.global_name("tf")
    rng = kb.rng
    body = rng.choice(("wp.tanh(a * {c} + b)", "wp.sin(a) * wp.cos(b * {c})", "wp.clamp(a - b * {c}, -1.0, 1.0)",
                       "wp.where(a > b, wp.sin(a), wp.cos(b)) * {c}"))
    c = E.lit(rng, T.FLOAT32, 0.1, 1.0).text
    kb.funcs.append("\n".join(["@wp.func", f"def {name}(a: wp.float32, b: wp.float32) -> wp.float32:",
                               f"{INDENT}return {body.format(c=c)}"]))
    return name


@register("tile", 1.0)
def tile(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 1}, (T.FLOAT32,))
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    kb.dims = [rng.choice((1, 1, 2, 3, 4))]
    kb.ctx.scope[0]["i"] = E.var("i", T.INT32, float(kb.dims[0]))
    kb.block_dim = rng.choice((32, 64, 128))
    kb.meta["differentiable"] = False
    prog = TileProgram(kb)
    if rng.random() < 0.4:
        prog.helper = tile_helper(kb)
    prog.source((prog.n,))
    for _ in range(max(2, kb.budget)):
        prog.transform()
    stmts = prog.stmts
    # outputs: one stored tile, and sometimes a reduction added into a total
    final = prog.bounded([t for t in prog.tiles if t.shape == (prog.n,)][-1])  # the latest: it carries the transforms
    out = kb.param("array", T.FLOAT32, "out", ndim=1, shape=(prog.blocks * prog.n,))
    stmts.append(Line(f"wp.tile_store({out.name}, {final.name}{prog.offset(prog.n, False)})"))
    if rng.random() < 0.6:
        r = prog.reduce()
        total = kb.param("array", T.FLOAT32, "inout", ndim=1, shape=(1,))
        kb.meta["deterministic"] = False  # block totals are added in any order
        stmts.append(Line(f"wp.tile_atomic_add({total.name}, {r.name})"))
    for t in [t for t in prog.tiles if t.shape[0] == prog.m and len(t.shape) == 2][:1]:
        out2 = kb.param("array", T.FLOAT32, "out", ndim=2, shape=(prog.blocks * t.shape[0], t.shape[1]))
        stmts.append(Line(f"wp.tile_store({out2.name}, {prog.bounded(t).name}{prog.offset(t.shape[0], True)})"))
    if rng.random() < 0.3:  # a per-thread value folded through the block
        x = E.fit(rng, E.gen(kb.ctx, T.FLOAT32), 100.0)
        s = prog.emit(f"wp.tile_sum(wp.tile(wp.float32({x.text})))", (1,), 1e4, "r")
        tot = kb.param("array", T.FLOAT32, "inout", ndim=1, shape=(1,))
        kb.meta["deterministic"] = False
        stmts.append(Line(f"wp.tile_atomic_add({tot.name}, {s.name})"))
    if rng.random() < 0.3 and prog.tiles:
        t = rng.choice([t for t in prog.tiles if len(t.shape) == 1 and t.shape[0] > 1] or [final])
        name_e = kb.names.take("first", "elem", "entry", "lane_val")
        stmts.append(Line(f"{name_e} = wp.tile_extract({t.name}, {rng.randrange(t.shape[0])})"))
        out3 = kb.param("array", T.FLOAT32, "out", ndim=1, shape=(kb.dims[0],))
        stmts.append(Line(f"{out3.name}[{kb.tids[0]}] = wp.tanh({name_e})"))
    kb.body = stmts
    return kb
