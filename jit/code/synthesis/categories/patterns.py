"""The toolkit of the pattern families: skeletons of what simulation kernels do, randomised in
their details.

Each pattern family (a ``patterns_*`` module) writes one kind of kernel people write with Warp
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

A kernel's docstring, where its author writes one (``docs.docstring``), says what the drawn
variant computes (a summary of its purpose, then the optional parts it carries); the whole purpose
goes in the record (``meta["record"]``).
Kernels are written without dead code and keep their text and comments as written.

This module holds what the families share (``Flavour``, ``Pattern``, ``signature_order``) and
registers no category. The families: particles and springs (``patterns_particles``), SPH
(``patterns_fluids``), reductions with atomics (``patterns_reductions``), grids
(``patterns_grid``), ray casting (``patterns_rays``), dense solvers and FEM
(``patterns_solid``), rigid bodies (``patterns_rigid``), cloth (``patterns_cloth``), queries of
meshes and hash grids (``patterns_geometry``) and tiles (``patterns_tiles``).
"""

from __future__ import annotations

import ast
import random
import textwrap
from dataclasses import dataclass, field
from typing import Any

from jit.code.synthesis import types as T
from jit.code.synthesis.docs import docstring, sentence
from jit.code.synthesis.pieces.kit import GUARDS, PLAIN
from jit.code.synthesis.stmt import INDENT, KernelBuilder, Line, Param, Profile
from jit.code.synthesis.types import WType

VEC2D = WType("vec2d", "vec", "float64", (2,))
VEC4I = WType("vec4i", "vec", "int32", (4,))
MAT22D = WType("mat22d", "mat", "float64", (2, 2))
UINT64 = T.UINT64
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
        if t.scalar == "float32" and t.kind == "spatial":  # one spelling: the constructor of (w, v) is this one
            return t.py[:-1]  # wp.spatial_vectorf -> wp.spatial_vector
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
    """A float literal as an author writes it: ``0.25``, ``2.0``, ``1.0e-6`` (not ``1e-06``)."""
    text = f"{x:.4g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa if '.' in mantissa else mantissa + '.0'}e{int(exponent)}"
    return text if "." in text else text + ".0"


def flavour(rng: random.Random, f64: float = 0.25, dim2: float = 0.3) -> Flavour:
    return Flavour(rng.random() < f64, 2 if rng.random() < dim2 else 3, rng.random() < PLAIN)


@dataclass(slots=True)
class RoleParam(Param):
    """A parameter spelled as people write it (``dt: float``, ``wp.array(dtype=wp.vec3)``)."""

    spelled: str = ""
    field_ranges: dict[str, tuple[float, float]] | None = None  # a struct's fields that take their own range

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
    """A ``KernelBuilder`` whose kernel opens with its docstring (when it has one), and whose body keeps the comments its pattern gave (dead-code elimination drops comments)."""

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



@dataclass
class WrittenKernel:
    """A kernel a family writes out as text (tile and property-check kernels): its source, and what
    the generator's metadata reads of it."""

    name: str
    text: str
    params: list[Param]
    dims: list[int]
    block_dim: int | None = None
    budget: int = 0
    funcs: list[str] = field(default_factory=list)
    structs: list = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def source(self, eliminate: bool = True) -> str:
        return self.text


TERSE = 0.35  # kernels written without comments (authors differ in how much they comment)


# notes that say a kernel writes something more than its purpose does
OUTPUT_VERBS = frozenset({"writes", "computes", "counts", "stores", "records", "flags", "sums", "accumulates",
                          "rotates", "returns", "outputs", "emits", "also", "adds", "steps", "moves"})


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
        self.terse = rng.random() < TERSE  # an author who leaves the code to speak for itself
        # choices one author makes once per kernel, by the families that need them
        self.bilinear_spelling: tuple | None = None  # the random state a kernel's bilinear samplers are spelled from
        self.per_spring_arrays: bool | None = None  # spring coefficients per spring (arrays) or shared
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

    def struct(self, base: str, fields: list[tuple[str, WType]], arg: str, lo: float, hi: float,
               ranges: dict[str, tuple[float, float]] | None = None) -> str:
        """A ``@wp.struct`` parameter ``arg``; every field is drawn from [lo, hi] when run, or from its
        own range in ``ranges``."""
        t = WType(self.name(base), "struct", fields=tuple(fields))
        body = "\n".join(f"{INDENT}{n}: {self.fl.spell(ft)}" for n, ft in fields)
        self.kb.structs.append((t, f"@wp.struct\nclass {t.name}:\n{body}"))
        self.kb.params.append(RoleParam(arg, "struct", t, 0, "in", (lo, hi), None, spelled=t.name,
                                        field_ranges=dict(ranges) if ranges else None))
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

    def guard(self, tid: str, extent: str | None, count: tuple[str, int] | None = None, p: float = 0.15) -> None:
        """Sometimes an early exit for threads past the end (launches are often rounded up).

        The guard compares with ``count``, a count parameter (name, value): a launch rounded up past
        the items needs the real count, while a test against ``extent.shape[0]`` (an array the launch
        is sized to) could never fire. ``extent`` names that array; without a count there is no guard.
        """
        if not count or not self.chance(p * GUARDS):
            return
        self.add(f"if {tid} >= {self.count(*count)}:", f"{INDENT}return")

    def add(self, *lines: str | None, indent: int = 0) -> None:
        """Body lines (``None`` entries are skipped), indented ``indent`` levels deeper."""
        for text in lines:
            if text is not None:
                if self.pending:
                    self.kb.comments.append((text.splitlines()[0].strip(), self.pending))
                    self.pending = None
                self.lines += [INDENT * indent + line for line in text.splitlines()]

    def why(self, comment: str | tuple[str, ...], line: str | None = None) -> None:
        """A comment to put above ``line`` (a body line, as written), or above the next line added;
        one of several that say the same thing in other words when given a tuple."""
        if isinstance(comment, tuple):
            comment = self.rng.choice(comment)
        if self.terse:
            return
        if line is None:
            self.pending = comment
        else:
            self.kb.comments.append((line.strip(), comment))

    def note(self, clause: str) -> None:
        """A detail of the drawn variant for the docstring ("clamps the speed to ``max_speed``")."""
        self.notes.append(clause)

    def detail(self) -> str:
        """What the docstring says after the purpose: the main notes (a docstring is a summary, not a
        listing), as authors write them: one sentence of clauses, a sentence each, or nothing more."""
        notes = self.notes[:3]
        if not notes:
            return ""
        form = self.rng.choices(("clauses", "sentences", "none"), (0.4, 0.15, 0.45))[0]
        if form == "none" and (len(notes) > 1 or any(note.split()[0] in OUTPUT_VERBS for note in notes)):
            form = "sentences"  # another output, or two more things done: the docstring must not hide them
        if form == "clauses":
            return sentence("It " + ", ".join(notes[:-1]) + (" and " if len(notes) > 1 else "") + notes[-1])
        if form == "sentences":
            return " ".join(sentence(note[0].upper() + note[1:]) for note in notes)
        return ""

    def finish(self, kernel_base: str, dims: list[int], tids: list[str] | None = None, *, purpose: str,
               differentiable: bool = True, needs: str | None = None) -> KernelBuilder:
        """The finished kernel; ``purpose`` (one sentence) opens its docstring and goes in the record."""
        kb = self.kb
        purpose = sentence(purpose)
        kb.doc = docstring(purpose, self.detail(), self.rng)
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
