"""What a piece is: typed roles, the registry, the style a kernel is spelled in, and a writer.

A *piece* is a small computation with a purpose (a spring force, a semi-Lagrangian backtrace,
a neo-Hookean stress): it names the roles of the values it reads (``needs``) and of those it
gives (``gives``), says in a few words what it computes, and writes its Warp lines through a
``Writer`` when given the names of its inputs. ``@piece`` registers one in ``PIECES``.

A ``Style`` is how one kernel spells its types and literals (float32 or float64, 2D or 3D,
``wp.vec3`` or ``wp.vec3f``); Warp does not mix float widths, so every literal in arithmetic
goes through ``Style.lit``. What it leaves out: the pieces themselves (one module per domain)
and putting pieces together into kernels (``draft``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from jit.code.synthesis import types as T
from jit.code.synthesis.types import WType

INDENT = "    "

VEC2D = WType("vec2d", "vec", "float64", (2,))
MAT22D = WType("mat22d", "mat", "float64", (2, 2))
QUATD = WType("quatd", "quat", "float64", (4,))
TRANSFORMD = WType("transformd", "transform", "float64", (7,))


# ---------------------------------------------------------------------------------------------
# roles


@dataclass(frozen=True, slots=True)
class Role:
    """What a value means, its shape and the range a random input of it may take.

    ``kind`` is ``scalar``, ``vec`` (the kernel's dimension), ``vec3`` (always 3D), ``mat``,
    ``mat33``, ``quat``, ``transform`` or ``int``. ``names`` are what an author calls an input of
    this role; ``per_item`` is how often such an input is an array read per item rather than
    one value for all. A role without names is derived inside kernels, never an input.
    """

    name: str
    kind: str
    lo: float = -1.0
    hi: float = 1.0
    names: tuple[str, ...] = ()
    per_item: float = 0.0
    axis: int = -1  # >= 0: often given as a magnitude along this axis (gravity along -y)
    family: str = ""  # roles of one family take names of the same position (box_lower with box_upper)

    def __repr__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------------------------
# pieces and their registry


@dataclass(frozen=True, slots=True)
class Piece:
    name: str
    needs: dict[str, Role]
    gives: dict[str, Role]
    says: str  # a noun phrase: "a Hookean spring force"
    emit: Callable  # (writer, **inputs) -> {give: name}
    weight: float = 1.0
    dims: tuple[int, ...] = (2, 3)  # the kernel dimensions it is written for
    smooth: bool = True  # Warp's adjoint of it agrees with finite differences
    domain: str = ""

    def __call__(self, w: "Writer", **inputs: str) -> dict[str, str]:
        missing = set(self.needs) - set(inputs)
        if missing:
            raise TypeError(f"piece {self.name} misses inputs {sorted(missing)}")
        out = self.emit(w, **inputs)
        if set(out) != set(self.gives):
            raise TypeError(f"piece {self.name} gave {sorted(out)}, declares {sorted(self.gives)}")
        return out


PIECES: dict[str, Piece] = {}


def piece(name: str, needs: dict[str, Role], gives: dict[str, Role], says: str, weight: float = 1.0,
          dims: tuple[int, ...] = (2, 3), smooth: bool = True):
    """Register the decorated emitter as piece ``name``."""

    def wrap(emit: Callable) -> Callable:
        if name in PIECES:
            raise ValueError(f"piece {name!r} registered twice")
        domain = emit.__module__.rsplit(".", 1)[-1]
        PIECES[name] = Piece(name, dict(needs), dict(gives), says, emit, weight, dims, smooth, domain)
        return emit

    return wrap


def giving(role: Role, dim: int | None = None) -> list[Piece]:
    """The pieces that give a value of ``role`` (and work in ``dim`` dimensions, if given)."""
    return [p for p in PIECES.values() if role in p.gives.values() and (dim is None or dim in p.dims)]


# ---------------------------------------------------------------------------------------------
# how a kernel spells its types and literals


@dataclass(frozen=True, slots=True)
class Style:
    f64: bool = False
    dim: int = 3
    plain: bool = True  # `float`, `wp.vec3` rather than `wp.float32`, `wp.vec3f`

    def wtype(self, kind: str) -> WType:
        """The Warp type of a role kind in this style."""
        d = self.f64
        table = {
            "scalar": T.FLOAT64 if d else T.FLOAT32,
            "vec": {2: VEC2D if d else T.VEC2F, 3: T.VEC3D if d else T.VEC3F}[self.dim],
            "vec3": T.VEC3D if d else T.VEC3F,
            "mat": {2: MAT22D if d else T.MAT22F, 3: T.MAT33D if d else T.MAT33F}[self.dim],
            "mat33": T.MAT33D if d else T.MAT33F,
            "quat": QUATD if d else T.QUATF,
            "transform": TRANSFORMD if d else T.TRANSFORMF,
            "int": T.INT32,
            "uint32": T.UINT32,
            "vec2i": T.VEC2I,
        }
        return table[kind]

    def spell(self, t: WType) -> str:
        """How a type is written in a signature or a constructor call."""
        if t.kind == "struct":
            return t.name
        if self.plain and t == T.FLOAT32:
            return "float"
        if self.plain and t == T.INT32:
            return "int"
        if self.plain and t.scalar == "float32" and t.kind in ("vec", "mat", "quat", "transform"):
            return t.py[:-1]  # wp.vec3f -> wp.vec3
        return t.py

    def type(self, kind: str) -> str:
        return self.spell(self.wtype(kind))

    @property
    def s(self) -> str:
        return self.type("scalar")

    @property
    def v(self) -> str:
        return self.type("vec")

    @property
    def m(self) -> str:
        return self.type("mat")

    def lit(self, x: float | str) -> str:
        """A float literal for arithmetic in this precision (``2.0`` or ``wp.float64(2.0)``)."""
        text = x if isinstance(x, str) else number(x)
        return f"wp.float64({text})" if self.f64 else text

    def cast(self, expr: str) -> str:
        """An int expression as this precision's float."""
        return f"{self.s}({expr})"

    def vec(self, *parts: str, kind: str = "vec") -> str:
        return f"{self.type(kind)}({', '.join(parts)})"

    def zero(self, kind: str = "vec") -> str:
        return f"{self.type(kind)}()"

    def axis(self, axis: int, value: str = "1.0", kind: str = "vec") -> str:
        """A vector along one axis, ``wp.vec3(0.0, g, 0.0)``."""
        n = 3 if kind == "vec3" else self.dim
        parts = [self.lit("0.0")] * n  # wp.float64(0.0) in a float64 vector, as its other component
        parts[axis] = value
        return self.vec(*parts, kind=kind)


def plural(name: str) -> bool:
    """True for a name of many things (``masses``, ``radii``, ``rest_positions``), not of one
    (``mass``, ``radius``, ``rhs``, ``axis``): a uniform value takes a singular name."""
    word = name.rsplit("_", 1)[-1]
    if word.endswith("ii") or word in ("data",):
        return True
    return word.endswith("s") and not word.endswith(("ss", "us", "is")) and word not in ("rhs",)


def number(x: float) -> str:
    """A float spelled as an author writes it: ``0.5``, ``9.81``, ``1.0e-6``, ``100.0``."""
    if x != 0.0 and (abs(x) < 1.0e-3 or abs(x) >= 1.0e5):
        mantissa, exponent = f"{x:.3e}".split("e")
        mantissa = mantissa.rstrip("0")
        mantissa += "0" if mantissa.endswith(".") else ""
        return f"{mantissa}e{int(exponent)}"
    text = f"{x:.6g}"
    return text if "." in text else text + ".0"


# ---------------------------------------------------------------------------------------------
# the writer pieces emit through


@dataclass(slots=True)
class Writer:
    """Lines of one kernel or helper body, with fresh local names and the kernel's style.

    ``chatty`` writers keep the comments pieces offer (authors differ in how much they comment);
    ``funcs`` collects ``@wp.func`` helpers by name, shared with the kernel being drafted.
    """

    style: Style
    rng: random.Random
    taken: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    depth: int = 0
    chatty: bool = True
    suffix: str = ""
    funcs: dict[str, str] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)  # locals this body assigned
    pinned: set[str] = field(default_factory=set)  # locals a later step reads as they are now
    in_place: bool = True  # this author updates a state (``v = v + a * dt``) rather than naming the new one
    reserved: set[str] = field(default_factory=set)  # helper names: no value may take one
    memo: dict[str, str] = field(default_factory=dict)  # values computed once for the whole body
    nonzero: set[str] = field(default_factory=set)  # values the body has already tested for zero
    shared: set[str] = field(default_factory=set)  # helper arguments the caller passes one value for
    top: int = 0  # the depth of the body's own statements (1 in a helper, whose lines are indented)

    # names and lines

    def fresh(self, *names: str) -> str:
        """The first of ``names`` not yet taken (else the first with a number), now taken."""
        for n in names:
            if n not in self.taken and n not in self.reserved:
                self.taken.add(n)
                return n
        k = 2
        while f"{names[0]}{k}" in self.taken or f"{names[0]}{k}" in self.reserved:
            k += 1
        self.taken.add(f"{names[0]}{k}")
        return f"{names[0]}{k}"

    def let(self, names: str | tuple[str, ...], expr: str) -> str:
        """``name = expr`` with a fresh name; returns the name."""
        name = self.fresh(*((names,) if isinstance(names, str) else names))
        self.add(f"{name} = {expr}")
        self.owned.add(name)
        return name

    def once(self, names: str | tuple[str, ...], expr: str) -> str:
        """A value several pieces use (the identity, a trace): named at its first use, reused after.
        Inside a branch it is written where it is used, since the name would not reach past it."""
        if expr in self.memo:
            return self.memo[expr]
        if self.depth > self.top:
            return expr
        self.memo[expr] = self.let(names, expr)
        self.pinned.add(self.memo[expr])
        return self.memo[expr]

    def uniform(self, expr: str) -> bool:
        """True if ``expr`` is one value for every item (a setting, not a per-item value)."""
        return expr.startswith("__uniform_") or expr in self.shared

    def mutable(self, name: str) -> bool:
        """True if ``name`` is a local this body may rebind."""
        return name in self.owned and name not in self.pinned

    def update(self, name: str, expr: str, *names: str) -> str:
        """The new value of a state: ``name`` rebound when the author updates in place, else a new local."""
        if self.in_place and self.mutable(name):
            self.add(f"{name} = {expr}")
            return name
        return self.let(names or (f"{name}_new",), expr)

    def rebind(self, name: str, expr: str) -> str:
        """Assign a local this piece owns again (inside a branch that updates it)."""
        self.add(f"{name} = {expr}")
        return name

    def own(self, expr: str, *names: str) -> str:
        """``expr`` as a local a branch may rebind: itself if it is one, else a copy."""
        return expr if self.mutable(expr) else self.let(names or ("value",), expr)

    def add(self, *lines: str) -> None:
        for text in lines:
            self.lines += [INDENT * self.depth + line for line in text.splitlines()]

    def comment(self, *texts: str) -> None:
        """A comment, for chatty authors: one of ``texts``, which say the same thing in other words."""
        if self.chatty:
            self.add(f"# {texts[0] if len(texts) == 1 else self.rng.choice(texts)}")

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header:`` and the lines written inside the ``with``, one level deeper."""
        self.add(header + ":")
        self.depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.add("pass")
            self.depth -= 1

    # spelling

    def lit(self, x: float | str) -> str:
        return self.style.lit(x)

    def pick(self, *options):
        return self.rng.choice(options)

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def length(self, d: str) -> str:
        """The length of vector ``d`` (``wp.length``: reviewers read ``wp.sqrt(wp.dot(d, d))`` as a slip)."""
        return f"wp.length({d})"

    def func(self, base: str, source: str) -> str:
        """Add a ``@wp.func`` helper ``base_<suffix>`` (once per kernel); returns its name."""
        name = f"{base}_{self.suffix}" if self.suffix else base
        self.reserved.add(base)
        if name not in self.funcs:
            self.funcs[name] = source.replace("{name}", name).strip("\n")
        return name

    def sub(self, taken: set[str]) -> "Writer":
        """A writer for a helper's body: same style and helpers, its own names and lines."""
        return Writer(self.style, self.rng, set(taken), [], 1, self.chatty, self.suffix, self.funcs,
                      in_place=self.in_place, reserved=self.reserved, top=1)
