"""Statements, helper functions and whole kernels, built recursively over ``expr``.

A ``KernelBuilder`` owns one kernel being generated: its parameters (created lazily, only
when an expression reads them, so no parameter is ever unused), its ``@wp.struct`` and
``@wp.func`` helpers, its launch dimensions and its statement tree. Statements are small
node classes that render themselves; categories add their own statements through
``Profile.extra`` hooks.

Loops stay bounded (literal or clamped trip counts, ``while`` counters incremented first)
and keep values bounded: on entering a loop, variables in scope have their bound raised by
the most any increments inside can add (64 iterations x ``AUG_BUDGET`` statements x
``STEP``), and inside loops increments are squashed to ``STEP`` and assignments to the raised
bound.

Locals, parameters and helpers are named by type and role (``names``); leaves prefer values
nothing has read yet, so what the body computes flows on to outputs, and ``source()`` runs
dead-code elimination (``dataflow``) before rendering. A realistic profile
(``Profile.realistic``) keeps kernels short, reads the thread's own elements and divides by
inputs whose range is positive. What it leaves out: choosing categories (``generator``).
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from jit.code.synthesis import dataflow
from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.expr import Context, Expr
from jit.code.synthesis.layout import merge_twins
from jit.code.synthesis.names import Namer
from jit.code.synthesis.types import WType

MAX_TRIPS = 64  # product of trip counts of nested loops
AUG_BUDGET = 4  # increments of one variable allowed inside one loop nest
STEP = 4.0  # bound on one increment inside a loop
INDENT = "    "

# the prefixes categories pass to ``fresh`` -> a role ("local", "loop", ...) or candidate names
LEGACY_ROLES: dict[str, Any] = {
    "v": "local", "t": "loop", "c": "counter", "acc": "acc", "x": ("x", "elem", "val"), "m": ("m", "A", "mat"),
    "d": ("U", "sigma", "V", "Q", "R", "evals", "evecs", "d"), "q": ("item", "state", "rec", "q"),
    "old": ("old", "prev", "before"), "st": ("lap", "smooth", "avg", "blur"), "w": ("w", "weight", "cell_val"),
    "rng": ("rng", "state", "rstate"), "r": ("r", "u", "noise", "sample", "jitter"),
    "ax": ("axis", "rot_axis"), "ang": ("angle", "theta"), "hit": ("hit", "closest", "surface_pt"),
    "ray": ("ray", "ray_hit"), "tt": ("t_hit", "dist"), "nrm": ("normal", "n"), "ov": ("query", "overlap"),
    "idx": ("face", "index", "elem"), "n": ("count", "num_hits", "hits"), "nb": ("query", "neighbors"),
    "j": ("index", "nbr"), "pid": ("pid", "p"), "vs": ("sample", "sdf", "phi"), "grad": ("grad", "gradient"),
    "e": ("elem", "entry", "val"),
}
GLOBAL_ROLES = {"f": "helper", "S": "struct", "g": "fetch", "tf": "tile_fn"}
STRUCT_NAMES = ("Particle", "Body", "Material", "Contact", "Params", "State", "Cell", "Spring", "Joint",
                "Sample", "Segment", "Emitter")


# ---------------------------------------------------------------------------------------------
# statement nodes


@dataclass(slots=True)
class Assign:
    target: str
    value: Expr
    aug: str = ""  # "", "+", "-", "*", "/", "%", "&", "|", "^"

    def render(self, pad: str) -> list[str]:
        return [f"{pad}{self.target} {self.aug}= {self.value.text}"]


@dataclass(slots=True)
class Store:  # out[idx] = value (also component/field stores: v[0] = x, s.a = x)
    target: str
    index: tuple[str, ...]
    value: Expr

    def render(self, pad: str) -> list[str]:
        sub = f"[{', '.join(self.index)}]" if self.index else ""
        return [f"{pad}{self.target}{sub} = {self.value.text}"]


@dataclass(slots=True)
class If:
    cond: Expr
    body: list
    orelse: list = field(default_factory=list)

    def render(self, pad: str, keyword: str = "if") -> list[str]:
        out = [f"{pad}{keyword} {self.cond.text}:", *render_block(self.body, pad + INDENT)]
        if len(self.orelse) == 1 and isinstance(self.orelse[0], If):
            out += self.orelse[0].render(pad, "elif")
        elif self.orelse:
            out += [f"{pad}else:", *render_block(self.orelse, pad + INDENT)]
        return out


@dataclass(slots=True)
class For:
    var: str
    bounds: tuple[str, ...]  # the range(...) arguments
    body: list

    def render(self, pad: str) -> list[str]:
        return [f"{pad}for {self.var} in range({', '.join(self.bounds)}):", *render_block(self.body, pad + INDENT)]


@dataclass(slots=True)
class While:
    counter: str
    limit: int
    body: list  # the counter increment is the body's first statement

    def render(self, pad: str) -> list[str]:
        return [f"{pad}{self.counter} = int(0)", f"{pad}while {self.counter} < {self.limit}:",
                f"{pad}{INDENT}{self.counter} += 1", *render_block(self.body, pad + INDENT)]


@dataclass(slots=True)
class Line:  # a statement with no tree: break, continue, return, calls for effect
    text: str

    def render(self, pad: str) -> list[str]:
        return [pad + line for line in self.text.splitlines()]


def render_block(stmts: list, pad: str) -> list[str]:
    out: list[str] = []
    for s in stmts:
        out += s.render(pad)
    return out or [f"{pad}pass"]


# ---------------------------------------------------------------------------------------------
# kernel parameters, structs, helpers


@dataclass(slots=True)
class Param:
    name: str
    kind: str  # array | scalar | struct | handle
    dtype: WType
    ndim: int = 1
    role: str = "in"
    value_range: tuple[float, float] = (-2.0, 2.0)
    shape: tuple[int, ...] | None = None  # None: the launch dims

    def annotation(self) -> str:
        if self.kind == "array":
            return f"wp.array(dtype={self.dtype.py}" + (f", ndim={self.ndim})" if self.ndim > 1 else ")")
        if self.kind == "handle":
            return "wp.uint64"
        return self.dtype.py


@dataclass(slots=True)
class Profile:
    """How a category shapes a kernel: types it favours, builtins, statement mix, extra statements."""

    types: dict[WType, float]
    out_types: tuple[WType, ...] = (T.FLOAT32,)
    prefer: frozenset[str] | None = None
    weights: dict[str, float] = field(default_factory=dict)
    extra: list[Callable] = field(default_factory=list)  # fn(builder, depth) -> list of statements
    ndim: int = 1
    outputs: tuple[int, int] = (1, 2)
    realistic: bool = False  # small kernels of tid-indexed reads, census builtins, guards real code uses


BASE_WEIGHTS = {"decl": 5.0, "assign": 1.5, "aug": 2.0, "if": 1.2, "for": 0.8, "while": 0.3, "comp": 0.4,
                "return": 0.15, "continue": 0.3, "break": 0.15, "extra": 0.0}
COMPLEXITY = {"small": (3, 6, 2), "medium": (6, 12, 3), "large": (16, 32, 4)}


def complexity_of(complexity: str | int, rng: random.Random) -> tuple[int, int]:
    """(statement budget, expression depth) for a complexity name or statement count."""
    if isinstance(complexity, int):
        return max(1, complexity), 2 + min(3, complexity // 8)
    if complexity == "mixed":
        complexity = rng.choice(("small", "medium", "medium", "large"))
    if complexity not in COMPLEXITY:
        raise ValueError(f"unknown complexity {complexity!r}; choose from small, medium, large, mixed or an int")
    lo, hi, depth = COMPLEXITY[complexity]
    return rng.randint(lo, hi), depth


class KernelBuilder:
    """One kernel in the making: parameters, helpers, statements; ``source()`` renders it."""

    def __init__(self, rng: random.Random, name: str, suffix: str, profile: Profile, complexity: str | int = "medium"):
        self.rng = rng
        self.name = name
        self.suffix = suffix
        self.profile = profile
        self.budget, depth = complexity_of(complexity, rng)
        self.ctx = Context(rng, max_depth=depth, prefer=profile.prefer)
        self.params: list[Param] = []
        self.structs: list[tuple[WType, str]] = []  # (type, source)
        self.funcs: list[str] = []
        self.body: list = []
        self.readonly: set[str] = set()
        self.loop_depth = 0
        self.trips = 1
        self.aug_left: dict[str, int] = {}
        self.counter = 0
        self.ndim = profile.ndim
        self.dims = launch_dims(rng, self.ndim)
        self.tids = ["i", "j", "k"][: self.ndim]
        if profile.realistic and self.ndim == 1:
            self.tids = [rng.choice(("tid", "tid", "i"))]
        self.block_dim: int | None = None
        self.pre: list = []  # statements every later one may rely on (index reads), put first
        self.meta: dict[str, Any] = {"deterministic": True, "needs_runtime_objects": False, "reason": None}
        self.ctx.builder = self
        self.ctx.readers.append(read_array)
        self.ctx.readers.append(read_scalar_param)
        self.names = Namer(rng, set(self.tids))
        if profile.realistic:
            self.ctx.realistic = True
            self.ctx.max_depth = min(depth, 2)
            self.ctx.leaf_p = 0.4
            self.ctx.var_p = 0.75
            self.ctx.census_floor = 1.0
            self.ctx.positive = read_positive
            self.ctx.allowed = frozenset(profile.types) | frozenset(profile.out_types) | {T.FLOAT32, T.INT32}
        for t, n in zip(self.tids, self.dims):
            self.ctx.scope[0][t] = E.var(t, T.INT32, float(n))
            self.readonly.add(t)

    # -- names -------------------------------------------------------------------------------

    def fresh(self, prefix: str, t: WType | None = None) -> str:
        """A local name unique in the kernel: by role for the builder's own prefixes, else ``prefix``
        itself (compounded when taken: ``hit``, ``prev_hit``)."""
        role = LEGACY_ROLES.get(prefix)
        if role == "local" or (role is None and t is not None and prefix == ""):
            return self.names.local(t.name if t is not None else "float32")
        if role == "loop":
            return self.names.loop_var()
        if role == "counter":
            return self.names.counter()
        if role == "acc":
            return self.names.accumulator()
        return self.names.take(*(role or (prefix,)))

    def name_for(self, value: Expr) -> str:
        """A local name for ``value`` from what computed it (``dist`` for a length, ``pos`` for positions[i])."""
        op = value.name if value.op in ("call", "bin", "arr") else ""
        if value.op == "arr":
            op = "arr"
        return self.names.local(value.type.name, op, value.name if value.op == "arr" else "")

    def global_name(self, prefix: str, ret: WType | None = None) -> str:
        """A module-level name unique to this kernel (the pipeline shares one namespace)."""
        base = GLOBAL_ROLES.get(prefix, prefix)
        if base == "struct":
            base = self.names.take(*self.rng.sample(STRUCT_NAMES, len(STRUCT_NAMES)), spread=1)
        elif base == "helper":
            base = self.names.take(*(self.names.helper(ret.name if ret else "float32") for _ in range(3)), spread=1)
        else:
            base = self.names.take(base)
        return f"{base}_{self.suffix}"

    # -- parameters --------------------------------------------------------------------------

    def param(self, kind: str, dtype: WType, role: str = "in", ndim: int | None = None, name: str | None = None,
              **kw) -> Param:
        if name is not None:
            pass
        elif kind == "array":
            name = self.names.array(dtype.name, role, struct=dtype.kind == "struct")
        elif kind == "scalar":
            name = self.names.scalar(dtype.name)
        elif kind == "struct":
            name = self.names.take("params", "config", "state", "settings", "material", spread=2)
        else:
            name = self.names.take("handle")
        p = Param(name, kind, dtype, ndim if ndim is not None else self.ndim, role, **kw)
        self.params.append(p)
        return p

    def inputs(self, t: WType) -> list[Param]:
        return [p for p in self.params if p.kind == "array" and p.dtype == t and p.role == "in" and p.shape is None]

    def index_exprs(self, p: Param, depth: int = 1) -> list[str]:
        """Indices into ``p`` that are in bounds by construction, one per dimension."""
        rng = self.rng
        if self.profile.realistic:
            return self.realistic_index(p)
        out = []
        for d in range(p.ndim):
            tid = self.tids[d] if d < self.ndim else None
            size = f"{p.name}.shape[{d}]"
            roll = rng.random()
            if tid is not None and roll < 0.6:
                out.append(tid)
            elif tid is not None and roll < 0.75:
                out.append(f"({tid} + {rng.randint(1, 5)}) % {size}")
            elif tid is not None and roll < 0.82:
                out.append(f"{size} - 1 - {tid}")
            else:
                e = E.gen(self.ctx, T.INT32, self.ctx.max_depth - 1)
                out.append(f"wp.clamp({e.text}, 0, {size} - 1)")
        return out

    def realistic_index(self, p: Param) -> list[str]:
        """The thread's own element, now and then a neighbour or an element an index array names."""
        rng = self.rng
        if p.ndim != self.ndim or p.shape is not None:  # not launch-shaped: the first dims wrap
            return [f"{self.tids[d % self.ndim]} % {p.name}.shape[{d}]" for d in range(p.ndim)]
        roll = rng.random()
        if self.ndim == 1 and roll < 0.08 and p.dtype != T.INT32:
            return [self.index_local()]
        if roll < 0.12:
            d = rng.randrange(self.ndim)
            idx = list(self.tids)
            idx[d] = f"({idx[d]} + 1) % {p.name}.shape[{d}]"
            return idx
        return list(self.tids)

    def index_local(self) -> str:
        """A local index read from an int array whose values are in range (``idx = indices[tid]``)."""
        existing = self.meta.setdefault("index_locals", [])
        if existing and self.rng.random() < 0.7:
            return self.rng.choice(existing)
        src = [p for p in self.params if p.role == "in" and p.dtype == T.INT32 and p.value_range[0] >= 0
               and p.value_range[1] <= self.dims[0] - 1 and p.kind == "array"]
        p = src[0] if src else self.param("array", T.INT32, "in", value_range=(0.0, float(self.dims[0] - 1)))
        name = self.names.take("idx", "j", "nbr", "other", "src")
        self.pre.append(Assign(name, Expr(f"{p.name}[{self.tids[0]}]", T.INT32, float(self.dims[0]), "arr", p.name)))
        self.readonly.add(name)
        existing.append(name)
        return name

    # -- statements --------------------------------------------------------------------------

    def block(self, budget: int, depth: int = 0, new_scope: bool = True) -> list:
        """A list of statements using about ``budget`` statements in all (nested ones included)."""
        if new_scope:
            self.ctx.scope.append({})
        out: list = []
        try:
            while budget > 0:
                stmts, cost = self.statement(budget, depth)
                out += stmts
                budget -= max(1, cost)
        finally:
            if new_scope:
                self.ctx.scope.pop()
        return out

    def statement(self, budget: int, depth: int) -> tuple[list, int]:
        weights = dict(BASE_WEIGHTS)
        weights.update(self.profile.weights)
        if self.profile.extra:
            weights["extra"] = weights.get("extra") or 1.5
        if depth >= 3 or budget < 3:
            for k in ("if", "for", "while"):
                weights[k] = 0.0
        if self.loop_depth == 0:
            weights["continue"] = weights["break"] = 0.0
        if self.trips * 2 > MAX_TRIPS:
            weights["for"] = weights["while"] = 0.0
        kind = self.rng.choices(list(weights), list(weights.values()))[0]
        return getattr(self, f"s_{kind}")(budget, depth)

    def local_type(self) -> WType:
        types = self.profile.types
        return self.rng.choices(list(types), list(types.values()))[0]

    def declare(self, name: str, value: Expr) -> None:
        self.ctx.scope[-1][name] = E.var(name, value.type, value.bound)
        self.ctx.unread.add(name)

    def s_decl(self, budget: int, depth: int) -> tuple[list, int]:
        value = typed(E.gen(self.ctx, self.local_type()))
        for _ in range(3):  # real code does not copy a variable or a literal into a new name
            if not self.profile.realistic or value.op not in ("var", "lit", "cast", "raw"):
                break
            value = typed(E.gen(self.ctx, self.local_type(), -1))
        name = self.name_for(value)
        self.declare(name, value)
        return [Assign(name, value)], 1

    def assignable(self, t: WType | None = None) -> list[Expr]:
        return [v for v in self.ctx.variables(t) if v.name not in self.readonly and v.type.kind not in ("struct",)]

    def s_assign(self, budget: int, depth: int) -> tuple[list, int]:
        targets = self.assignable()
        if not targets:
            return self.s_decl(budget, depth)
        v = self.rng.choice(targets)
        value = E.gen(self.ctx, v.type)
        if self.profile.realistic and (value.op in ("lit", "var") or not E.reads(value)):
            value = E.gen(self.ctx, v.type, -1)
        if value.text == v.name:  # x = x
            value = E.lit(self.rng, v.type)
        value = typed(value)
        if self.loop_depth:
            value = E.fit(self.rng, value, max(1.0, v.bound)) if value.bound > v.bound else value
        self.raise_bound(v.name, value.bound)
        return [Assign(v.name, value)], 1

    def s_aug(self, budget: int, depth: int) -> tuple[list, int]:
        targets = [v for v in self.assignable() if v.type.kind not in ("bool", "transform")]
        if not targets:
            return self.s_decl(budget, depth)
        v = self.rng.choice(targets)
        t = v.type
        ops = ["+", "-"]
        if t.is_scalar:
            ops += ["/", "*"] if t.kind == "float" else ["%", "&", "|", "^", "*"]
        elif t.kind in ("vec", "mat", "spatial", "quat", "smat"):
            ops += ["*"]
        op = self.rng.choice(ops)
        if self.loop_depth and (self.aug_left.get(v.name, 0) <= 0 or op in ("*", "|", "^")):
            return self.s_assign(budget, depth)
        rng = self.rng
        if op == "*":
            value = E.gen(self.ctx, t.scalar and T.SCALARS[t.scalar] if not t.is_scalar else t)
            value = E.fit(rng, value, 2.0) if v.bound * value.bound > E.limit_of(t) else value
            new_bound = v.bound * max(1.0, value.bound)
        elif op in ("/", "%"):
            value = read_positive(self.ctx, t) if self.profile.realistic else None
            if value is None:
                raw = E.gen(self.ctx, t)
                value = E.binop("add", E.call("abs", [raw], t), E.one(t), t)
            new_bound = v.bound * (10.0 if self.profile.realistic else 1.0)
        elif op in ("&", "|", "^"):
            value = E.fit(rng, E.gen(self.ctx, t), 255.0)
            new_bound = max(v.bound, value.bound) * 2 + 1 if op != "&" else v.bound
        else:
            value = E.gen(self.ctx, t)
            if self.profile.realistic and (value.text == v.name or not E.reads(value)):
                value = E.gen(self.ctx, t, -1)
            if self.loop_depth:
                value = E.fit(rng, value, STEP)
                self.aug_left[v.name] -= 1
                new_bound = v.bound  # already raised on loop entry
            else:
                new_bound = v.bound + value.bound
        if new_bound > E.limit_of(t) and not self.loop_depth:
            return self.s_assign(budget, depth)
        self.raise_bound(v.name, new_bound)
        return [Assign(v.name, value, op)], 1

    def raise_bound(self, name: str, bound: float) -> None:
        for frame in reversed(self.ctx.scope):
            if name in frame:
                old = frame[name]
                frame[name] = E.var(name, old.type, max(old.bound, bound))
                return

    def s_comp(self, budget: int, depth: int) -> tuple[list, int]:
        targets = [v for v in self.assignable() if v.type.kind in ("vec", "mat")]
        if not targets:
            return self.s_decl(budget, depth)
        v = self.rng.choice(targets)
        comp = T.component_type(v.type)
        idx = tuple(str(self.rng.randrange(n)) for n in v.type.shape)
        value = E.fit(self.rng, E.gen(self.ctx, comp), max(1.0, v.bound))
        self.raise_bound(v.name, value.bound)
        return [Store(v.name, idx, value)], 1

    def s_if(self, budget: int, depth: int) -> tuple[list, int]:
        inner = max(1, (budget - 1) // 2)
        cond = E.gen(self.ctx, T.BOOL)
        body = self.block(self.rng.randint(1, inner), depth + 1)
        orelse: list = []
        roll = self.rng.random()
        if roll < 0.3:
            orelse = [self.s_if(max(2, inner), depth + 1)[0][0]]
        elif roll < 0.7:
            orelse = self.block(self.rng.randint(1, inner), depth + 1)
        return [If(cond, body, orelse)], 1 + count(body) + count(orelse)

    @contextmanager
    def loop(self, var: str, trips: int, top: float) -> Iterator[None]:
        """The body of a loop of ``trips`` iterations over the read-only int ``var`` (in [0, top]).

        On entry, every variable in scope has its bound raised by what the loop's increments can
        add; on exit, the loop variable goes out of scope."""
        saved_trips = self.trips
        self.trips *= trips
        self.loop_depth += 1
        for v in self.assignable():
            if v.name in self.aug_left:
                continue
            self.aug_left[v.name] = AUG_BUDGET
            if v.type.kind != "bool":
                self.raise_bound(v.name, v.bound + MAX_TRIPS * AUG_BUDGET * STEP)
        self.ctx.scope.append({var: E.var(var, T.INT32, float(top))})
        self.ctx.unread.add(var)
        self.readonly.add(var)
        try:
            yield
        finally:
            self.ctx.scope.pop()
            self.trips = saved_trips
            self.loop_depth -= 1
            if self.loop_depth == 0:
                self.aug_left = {}

    def s_for(self, budget: int, depth: int) -> tuple[list, int]:
        rng = self.rng
        limit = max(2, min(8, MAX_TRIPS // self.trips))
        roll = rng.random()
        if roll < 0.45:
            n = rng.randint(2, limit)
            bounds, trips, top = (str(n),), n, n
        elif roll < 0.7:
            lo = rng.randint(0, 3)
            n = rng.randint(2, limit)
            step = rng.choice((1, 1, 2))
            bounds = (str(lo), str(lo + n * step)) + ((str(step),) if step > 1 else ())
            trips, top = n, lo + n * step
        else:  # a trip count computed at run time, clamped
            e = E.gen(self.ctx, T.INT32, self.ctx.max_depth - 1)
            n = rng.randint(2, limit)
            bounds, trips, top = (f"wp.clamp({e.text}, 0, {n})",), n, n
        var = self.names.loop_var()
        with self.loop(var, trips, top):
            body = self.block(rng.randint(1, max(1, budget - 1)), depth + 1)
        return [For(var, bounds, body)], 1 + count(body)

    def s_while(self, budget: int, depth: int) -> tuple[list, int]:
        n = self.rng.randint(2, max(2, min(6, MAX_TRIPS // self.trips)))
        var = self.names.counter()
        with self.loop(var, n, n):
            body = self.block(self.rng.randint(1, max(1, budget - 2)), depth + 1)
        self.ctx.scope[-1][var] = E.var(var, T.INT32, float(n))
        return [While(var, n, body)], 2 + count(body)

    def s_return(self, budget: int, depth: int) -> tuple[list, int]:
        return [If(E.gen(self.ctx, T.BOOL), [Line("return")])], 1

    def s_continue(self, budget: int, depth: int) -> tuple[list, int]:
        return [If(E.gen(self.ctx, T.BOOL), [Line("continue")])], 1

    def s_break(self, budget: int, depth: int) -> tuple[list, int]:
        return [If(E.gen(self.ctx, T.BOOL), [Line("break")])], 1

    def s_extra(self, budget: int, depth: int) -> tuple[list, int]:
        fn = self.rng.choice(self.profile.extra)
        stmts = fn(self, depth)
        return stmts, max(1, count(stmts))

    # -- helpers -----------------------------------------------------------------------------

    def add_helper(self, ret: WType | None = None, arg_types: list[WType] | None = None) -> None:
        """A ``@wp.func`` of a few typed parameters, callable from later expressions."""
        rng = self.rng
        ret = ret or self.local_type()
        if arg_types is None:
            arg_types = [self.local_type() for _ in range(rng.randint(1, 3))]
        name = self.global_name("f", ret)
        args = [self.names.take(a) for a in self.names.helper_args([t.name for t in arg_types])]
        saved = (self.ctx.scope, self.readonly, self.params, self.ctx.readers, self.loop_depth, self.trips, self.aug_left)
        self.ctx.scope = [{a: E.var(a, t, 4.0) for a, t in zip(args, arg_types)}]
        self.readonly = set(args)
        self.ctx.readers = [r for r in self.ctx.readers if getattr(r, "pure", False)]
        self.params = []
        self.loop_depth, self.trips, self.aug_left = 0, 1, {}
        weights = self.profile.weights
        self.profile.weights = {**weights, "return": 0.0, "extra": 0.0}
        extra = self.profile.extra
        self.profile.extra = []
        try:
            early = None
            if rng.random() < 0.3:
                early = (E.gen(self.ctx, T.BOOL), E.fit(rng, E.gen(self.ctx, ret)))
            body = self.block(rng.randint(1, 4), 1, new_scope=False)
            result = E.fit(rng, E.gen(self.ctx, ret))
        finally:
            self.ctx.scope, self.readonly, self.params, self.ctx.readers, self.loop_depth, self.trips, self.aug_left = saved
            self.profile.weights = weights
            self.profile.extra = extra
        sig = ", ".join(f"{a}: {t.py}" for a, t in zip(args, arg_types))
        lines = ["@wp.func", f"def {name}({sig}) -> {ret.py}:", *render_block(body, INDENT)]
        if early is not None:
            lines[2:2] = [f"{INDENT}if {early[0].text}:", f"{INDENT}{INDENT}return {early[1].text}"]
        lines.append(f"{INDENT}return {result.text}")
        self.funcs.append("\n".join(lines))
        bound = max(result.bound, early[1].bound if early else 0.0)
        self.ctx.helpers.append((name, tuple(arg_types), ret, bound))

    # -- assembly ----------------------------------------------------------------------------

    def write_outputs(self) -> list:
        lo, hi = self.profile.outputs
        out = []
        saved = self.ctx.var_p
        self.ctx.var_p = 0.9  # outputs are made of what the body computed
        for _ in range(self.rng.randint(lo, hi)):
            t = self.rng.choice(self.profile.out_types)
            if self.profile.realistic:  # the type of a value nothing has read yet, if any
                fresh = [v.type for v in self.ctx.variables() if v.name in self.ctx.unread
                         and v.type.kind not in ("bool", "struct") and v.name not in self.readonly]
                t = self.rng.choice(fresh) if fresh else t
            p = self.param("array", t, "out")
            value = self.consume(t) if self.profile.realistic else None
            value = E.fit(self.rng, value or E.reading(self.ctx, t), E.limit_of(t))
            out.append(Store(p.name, tuple(self.tids), value))
        self.ctx.var_p = saved
        return out

    def consume(self, t: WType) -> Expr | None:
        """An expression of type ``t`` over the values nothing has read yet (so they reach an output)."""
        rng = self.rng
        fresh = [v for v in self.ctx.variables() if v.name in self.ctx.unread and v.name not in self.readonly]
        same = [v for v in fresh if v.type == t][:3]
        if not same:
            return None
        out = same[0]
        for v in same[1:]:
            if t.kind not in ("float", "vec", "int", "mat", "spatial"):
                break
            op = rng.choice(("add", "add", "sub", "mul") if t.is_scalar else ("add", "add", "sub"))
            out = E.binop(op, out, v, t)
        comp = T.SCALARS.get(t.scalar)
        scalars = [v for v in fresh if v.type == comp and t.kind == "vec"]
        if scalars:  # a vector scaled by a scalar computed alongside it
            out = E.binop("mul", out, scalars[0], t)
        for v in [out, *same, *scalars]:
            if v.op == "var":
                self.ctx.unread.discard(v.name)
        return out if E.reads(out) else None

    def source(self, eliminate: bool = True) -> str:
        """The module source: structs, helpers, kernel. With ``eliminate``, dead code is removed
        first (``dataflow``), then parameters, helpers and structs nothing uses are dropped."""
        tid = f"{INDENT}{', '.join(self.tids)} = wp.tid()"
        body = render_block(self.pre + self.body, INDENT)
        funcs = list(self.funcs)
        if eliminate:
            impure = self.impure_helpers()
            params = {p.name: p.annotation() for p in self.params}
            body = dataflow.eliminate_body([tid, *body], params, impure)[1:]
            funcs = [dataflow.eliminate(f, impure) for f in funcs]
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(body)))
        self.params = [p for p in self.params if p.name in words]  # no unused parameters
        self.funcs = used_definitions(funcs, words)
        sig = ", ".join(f"{p.name}: {p.annotation()}" for p in self.params)
        words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sig + "\n".join(self.funcs)))
        kept = []
        for t, src in reversed(self.structs):  # an outer struct comes after the structs it nests
            if t.name in words:
                kept.append((t, src))
                words |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", src))
        self.structs = kept[::-1]
        kernel = "\n".join(["@wp.kernel", f"def {self.name}({sig}):", tid, *body])
        self.funcs, kernel, generic = merge_twins(self.funcs, kernel)
        parts = ["from typing import Any\n\nimport warp as wp" if generic else "import warp as wp"]
        parts += [src for _, src in self.structs]
        parts += self.funcs
        parts.append(kernel)
        return plain_types("\n\n\n".join(parts) + "\n")

    def impure_helpers(self) -> set[str]:
        """Helpers whose calls have effects (they write memory, or call such a helper)."""
        impure: set[str] = set()
        for src in self.funcs:  # helpers only call helpers defined before them
            name = re.search(r"def (\w+)\(", src).group(1)
            fn = ast.parse(src).body[0]
            args = {a.arg for a in fn.args.args}
            stores = any(isinstance(t, (ast.Subscript, ast.Attribute)) and dataflow.root_name(t) in args
                         for n in ast.walk(fn) for t in getattr(n, "targets", [getattr(n, "target", None)])
                         if t is not None)
            if stores or any(dataflow.has_effect(s, frozenset(impure)) for s in fn.body):
                impure.add(name)
        return impure


FLOAT32_ALIAS = re.compile(r"\bwp\.(vec2|vec3|vec4|mat22|mat33|mat44|quat|transform)f\b")  # spatial ones build differently
SCALAR_ANNOTATION = re.compile(r"(dtype=|: )wp\.(float32|int32)\b")


# ``dtype=float`` and ``n: int`` as real code writes them: off until the execute step maps Python's
# float/int annotations to Warp's scalar types
PLAIN_SCALARS = False


def plain_types(source: str) -> str:
    """Float32 types spelled the way real code spells them: ``wp.vec3``, ``wp.quat`` (the same classes)."""
    source = FLOAT32_ALIAS.sub(r"wp.\1", source)
    if not PLAIN_SCALARS:
        return source
    return SCALAR_ANNOTATION.sub(lambda m: m.group(1) + {"float32": "float", "int32": "int"}[m.group(2)], source)


def used_definitions(funcs: list[str], words: set[str]) -> list[str]:
    """The helpers (in order) that the kernel's ``words`` reach, directly or through other helpers."""
    names = [re.search(r"def (\w+)\(", src).group(1) for src in funcs]
    keep: set[str] = set()
    frontier = [n for n in names if n in words]
    while frontier:
        n = frontier.pop()
        if n in keep:
            continue
        keep.add(n)
        src = funcs[names.index(n)]
        frontier += [m for m in names if m != n and re.search(rf"\b{m}\(", src)]
    return [src for n, src in zip(names, funcs) if n in keep]


def constant(e: Expr) -> bool:
    """True for literals and operators over literals only (``-3``, ``~-7``): Warp folds them."""
    return e.op == "lit" or (e.op in ("un", "bin") and all(constant(a) for a in e.args))


def typed(value: Expr) -> Expr:
    """A constant wrapped in its type: Warp wants ``float(1.0)`` for a variable loops may change."""
    if constant(value) and value.type.is_scalar and value.type.scalar in ("int32", "float32", "bool"):
        out = E.cast(value.type, value)
        out.bound = value.bound
        return out
    return value


def count(stmts: list) -> int:
    n = 0
    for s in stmts:
        n += 1
        if isinstance(s, If):
            n += count(s.body) + count(s.orelse)
        elif isinstance(s, (For, While)):
            n += count(s.body)
    return n


def launch_dims(rng: random.Random, ndim: int) -> list[int]:
    if ndim == 1:
        return [rng.choice((4, 8, 16, 32, 64))]
    if ndim == 2:
        return [rng.randint(2, 8), rng.randint(2, 8)]
    return [rng.randint(2, 4), rng.randint(2, 4), rng.randint(2, 4)]


# ---------------------------------------------------------------------------------------------
# readers: how expressions reach kernel inputs


MAX_INPUTS = 5


def read_array(ctx: Context, t: WType) -> Expr | None:
    """An element of an input array of dtype ``t`` (created on first use), at a safe index."""
    kb: KernelBuilder = ctx.builder
    if t.kind == "bool":
        return None
    arrays = kb.inputs(t)
    n_inputs = sum(1 for p in kb.params if p.role == "in")
    if not arrays or (n_inputs < MAX_INPUTS and kb.rng.random() < 0.15):
        if n_inputs >= MAX_INPUTS or t.kind in ("smat",):
            return None
        kind_ok = t in kb.profile.types or t in kb.profile.out_types or \
            kb.rng.random() < (0.05 if kb.profile.realistic else 0.3)
        if not kind_ok:
            return None
        arrays = [kb.param("array", t, "in")]
    p = kb.rng.choice(arrays)
    idx = kb.index_exprs(p)
    return Expr(f"{p.name}[{', '.join(idx)}]", t, 2.0, "arr", p.name)


def read_scalar_param(ctx: Context, t: WType) -> Expr | None:
    kb: KernelBuilder = ctx.builder
    realistic = kb.profile.realistic
    if t not in (T.FLOAT32, T.INT32) or kb.rng.random() < (0.55 if realistic else 0.7):
        return None
    existing = [p for p in kb.params if p.kind == "scalar" and p.dtype == t]
    if existing and kb.rng.random() < 0.7:
        p = kb.rng.choice(existing)
    else:
        if sum(1 for p in kb.params if p.role == "in") >= MAX_INPUTS:
            return None
        if realistic:  # what real kernels take as scalars (dt, stiffness, counts) is positive
            span = (0.1, 2.0) if t.kind == "float" else (1.0, 8.0)
        else:
            span = (-2.0, 2.0) if t.kind == "float" else (-8.0, 8.0)
        p = kb.param("scalar", t, "in", ndim=0, value_range=span)
    return Expr(p.name, t, 8.0 if t.kind == "int" else 2.0, "var", p.name)


def read_positive(ctx: Context, t: WType) -> Expr | None:
    """A positive scalar of type ``t``: a parameter or input whose range is positive (created on
    first use): what real code divides by (masses, dt, rest lengths, counts)."""
    kb: KernelBuilder = ctx.builder
    if kb is None or t not in (T.FLOAT32, T.INT32):
        return None
    lo = 0.5 if t.kind == "float" else 1.0
    found = [p for p in kb.params if p.dtype == t and p.role == "in" and p.value_range[0] >= lo
             and (p.kind == "scalar" or (p.kind == "array" and p.shape is None and p.ndim == kb.ndim))]
    if found and kb.rng.random() < 0.8:
        p = kb.rng.choice(found)
    elif sum(1 for p in kb.params if p.role == "in") >= MAX_INPUTS:
        return None
    else:
        kind = "scalar" if kb.rng.random() < 0.5 or kb.loop_depth else "array"
        p = kb.param(kind, t, "in", ndim=0 if kind == "scalar" else None,
                     value_range=(lo, 2.0) if t.kind == "float" else (1.0, 8.0))
    text = p.name if p.kind == "scalar" else f"{p.name}[{', '.join(kb.tids)}]"
    return Expr(text, t, 2.0 if t.kind == "float" else 8.0, "var" if p.kind == "scalar" else "arr", p.name)
