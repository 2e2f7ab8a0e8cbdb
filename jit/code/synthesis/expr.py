"""Typed random expressions over Warp's builtins, well-defined by construction.

``gen(ctx, t)`` returns an ``Expr`` of WType ``t``: a tree that renders to Python source and
keeps what a checker needs (operation, builtin name, argument nodes, types). Which builtins
and operators may produce a type is read from Warp's own builtin registry (``signatures``),
not hand-listed; a few builtins with a restricted domain get their arguments guarded
(``sqrt(abs(x))``, ``log(abs(x) + 1)``, divisors ``abs(y) + 1``...).

Builtins are drawn as often as real Warp code calls them (the census, ``census.json``), with
a floor so the long tail stays; in realistic mode guards are those real code writes
(``x / wp.max(d, eps)``, positive inputs) and tests always read a variable.

Every node carries ``bound``, an upper bound on the magnitude of any component of its value
(YARPGen keeps value ranges the same way). A node whose bound exceeds ``LIMIT`` is squashed
(``sin``, ``tanh``, ``clamp``, ``normalize``, masking ...) so any kernel stays finite and free
of integer overflow on inputs in [-2, 2]. What it leaves out: statements, variables'
lifetimes and kernels (``stmt``).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field
from typing import Any

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis import types as T
from jit.code.synthesis.types import WType

LIMIT = {"float": 1.0e5, "int": 1.0e3}  # squash above these bounds
OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "floordiv": "//",
             "bit_and": "&", "bit_or": "|", "bit_xor": "^", "lshift": "<<", "rshift": ">>"}
UNARY = {"neg": "-", "invert": "~"}
CASTS = ("int32", "uint32", "float32", "float64", "bool")
VALUE_GROUPS = ("Scalar Math", "Vector Math", "Quaternion Math", "Transformations", "Spatial Math",
                "Operators", "Utility")
# builtins handled elsewhere (statements, arrays, casts) or not meaningful as pure values
EXCLUDED = {"assign_copy", "extract", "copy", "load", "pos", "where", "select", "div_approx",
            "inverse_approx", "print", "printf", "breakpoint", "tid", "len", "cast", "tuple", "slice",
            "block_dim", "index", "indexref", "address", "view", "store", "array_store", "range",
            "iter_next", "reversed", "zeros", "array", "bool"}
# results bounded by a constant, whatever the arguments
CONST_BOUND = {"sin": 1, "cos": 1, "tanh": 1, "erf": 1, "erfc": 2, "sign": 1, "step": 1, "nonzero": 1,
               "normalize": 1, "smooth_normalize": 1, "atan": 1.6, "atan2": 3.2, "acos": 3.2, "asin": 1.6,
               "frac": 1, "bit_count": 32, "argmin": 4, "argmax": 4, "isfinite": 1, "isnan": 1, "isinf": 1,
               "erfinv": 2, "erfcinv": 2, "tan": 6, "smoothstep": 1, 
               "quat_twist_angle": 6.3, "quat_twist_angle_signed": 6.3, "intersect_tri_tri": 1}
# results bounded by the largest argument (plus a little)
MAX_BOUND = {"abs", "neg", "floor", "ceil", "round", "rint", "trunc", "min", "max", "clamp", "copysign",
             "transpose", "get_diag", "diag", "spatial_top", "spatial_bottom", "transform_get_translation",
             "transform_get_rotation", "quat_inverse", "int32", "uint32", "float32", "float64",
             "invert", "mod", "rshift", "radians", "skew", "where"}


@dataclass(slots=True)
class Expr:
    text: str
    type: WType
    bound: float
    op: str = "raw"  # lit | var | call | bin | un | cmp | bool | ctor | cast | index | attr | arr | helper | raw
    name: str = ""  # builtin, operator, variable, field or helper name
    args: tuple = ()

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Sig:
    name: str
    args: tuple[WType, ...]
    ret: WType


@functools.cache
def signatures() -> dict[WType, tuple[Sig, ...]]:
    """Return type -> the builtin signatures producing it, from Warp's registry, over VALUE_TYPES."""
    candidates = [T.warp_type(t) for t in T.VALUE_TYPES]
    table: dict[WType, list[Sig]] = {}
    for name in wb.builtin_names():
        if wb.builtin_group(name) not in VALUE_GROUPS or name in EXCLUDED:
            continue
        if "inplace" in name or name.startswith(("expect", "atomic", "dense", "tile")):
            continue
        for combo, ret in wb.builtin_signatures(name, candidates):
            rt = T.from_warp(ret) if isinstance(ret, type) else None
            args = tuple(T.from_warp(c) for c in combo)
            if rt is None or not args or not _acceptable(name, args, rt):
                continue
            table.setdefault(rt, []).append(Sig(name, args, rt))
    for sig in _extra_signatures():
        if sig not in table.get(sig.ret, ()):
            table.setdefault(sig.ret, []).append(sig)
    return {t: tuple(sigs) for t, sigs in table.items()}


# Warp builtins written as generic Python functions (no value_func to ask): their signatures
# are listed here by hand, and the build tests check every one of them compiles.
EXTRA_SIGNATURES = (
    ("transform_compose", ("vec3f", "quatf", "vec3f"), "mat44f"), ("transform_from_matrix", ("mat44f",), "transformf"),
    ("transform_to_matrix", ("transformf",), "mat44f"), ("spatial_adjoint", ("mat33f", "mat33f"), "spatial_matrixf"),
    ("quat_twist_angle", ("vec3f", "quatf"), "float32"), ("quat_twist_angle_signed", ("vec3f", "quatf"), "float32"),
    ("norm_l1", ("vec3f",), "float32"), ("norm_l2", ("vec3f",), "float32"), ("norm_l1", ("vec4f",), "float32"),
    ("norm_l2", ("vec2f",), "float32"), ("norm_huber", ("vec3f",), "float32"),
    ("norm_pseudo_huber", ("vec3f",), "float32"), ("smooth_normalize", ("vec3f",), "vec3f"),
    ("intersect_tri_tri", ("vec3f", "vec3f", "vec3f", "vec3f", "vec3f", "vec3f"), "int32"),
)


def _extra_signatures() -> list[Sig]:
    known = set(wb.builtin_names())
    return [Sig(name, tuple(T.BY_NAME[n] for n in args), T.BY_NAME[ret])
            for name, args, ret in EXTRA_SIGNATURES if name in known]


def _acceptable(name: str, args: tuple[WType, ...], ret: WType) -> bool:
    if name in ("div", "mod", "floordiv"):  # guarded divisors are scalars
        return args[1].is_scalar and args[1].kind != "bool" and args[0].kind != "bool"
    if name in ("lshift", "rshift") and (args[0].kind != args[1].kind or not args[0].is_scalar):
        return False
    if name in ("inverse", "determinant") and args[0].kind == "smat":
        return False
    if name in ("bit_and", "bit_or", "bit_xor", "invert", "lshift", "rshift") and args[0].kind == "bool":
        return False
    if any(a.kind == "bool" for a in args) and name not in CASTS:
        return False
    if ret.kind == "uint" and name in ("sub", "neg", "invert"):  # no wrap-around below zero
        return False
    return True


# ---------------------------------------------------------------------------------------------
# node constructors


def lit(rng: random.Random, t: WType, lo: float = -2.0, hi: float = 2.0) -> Expr:
    """A literal of any value type; vectors and matrices as constructor calls of literals."""
    if t.is_scalar:
        text = T.scalar_literal(rng, t, lo, hi)
        return Expr(text, t, max(1.0, abs(float(_literal_value(text)))), "lit")
    if t.kind == "quat":
        angle = lit(rng, T.FLOAT32, -3.0, 3.0)
        axis = call("normalize", [ctor(T.VEC3F, [lit(rng, T.FLOAT32, 0.1, 1.0) for _ in range(3)])], T.VEC3F)
        return call("quat_from_axis_angle", [axis, angle], t, bound=1.0)
    if t.kind == "transform":
        return ctor(t, [lit(rng, T.VEC3F), lit(rng, T.QUATF)])
    comp = T.component_type(t)
    if t.kind in ("mat", "smat") and rng.random() < 0.2:
        return identity(t)
    if rng.random() < 0.25:
        return ctor(t, [lit(rng, comp, lo, hi)])
    return ctor(t, [lit(rng, comp, lo, hi) for _ in range(t.size)])


def _literal_value(text: str):
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("wp."):
        text = text[text.index("(") + 1:-1]
    return float(text) if "." in text else int(text)


def identity(t: WType) -> Expr:
    """The identity matrix of (square matrix) type ``t``."""
    return Expr(f"wp.identity(n={t.shape[0]}, dtype=wp.{t.scalar})", t, 1.0, "call", "identity")


def zero(t: WType) -> Expr:
    """The zero value of ``t`` (a default-constructed vector, matrix or struct)."""
    return Expr(f"{t.py}()", t, 0.0, "ctor", t.name)


def var(name: str, t: WType, bound: float) -> Expr:
    return Expr(name, t, bound, "var", name)


def call(name: str, args: list[Expr], ret: WType, bound: float | None = None) -> Expr:
    text = f"wp.{name}({', '.join(a.text for a in args)})"
    b = bound if bound is not None else call_bound(name, args, ret)
    return Expr(text, ret, b, "call", name, tuple(args))


def binop(name: str, a: Expr, b: Expr, ret: WType) -> Expr:
    text = f"({a.text} {OPERATORS[name]} {b.text})"
    return Expr(text, ret, call_bound(name, [a, b], ret), "bin", name, (a, b))


def unop(name: str, a: Expr) -> Expr:
    sym = UNARY[name]
    return Expr(f"({sym}{a.text})", a.type, a.bound + 1, "un", name, (a,))


def ctor(t: WType, args: list[Expr]) -> Expr:
    text = f"{t.py}({', '.join(a.text for a in args)})"
    return Expr(text, t, max(a.bound for a in args), "ctor", t.name, tuple(args))


def cast(t: WType, a: Expr) -> Expr:
    return Expr(f"wp.{t.name}({a.text})", t, a.bound + 1, "cast", t.name, (a,))


def compare(op: str, a: Expr, b: Expr) -> Expr:
    return Expr(f"({a.text} {op} {b.text})", T.BOOL, 1.0, "cmp", op, (a, b))


def boolop(op: str, args: list[Expr]) -> Expr:
    if op == "not":
        return Expr(f"(not {args[0].text})", T.BOOL, 1.0, "bool", "not", tuple(args))
    return Expr("(" + f" {op} ".join(a.text for a in args) + ")", T.BOOL, 1.0, "bool", op, tuple(args))


def index(a: Expr, idx: tuple[int, ...], ret: WType) -> Expr:
    text = f"{a.text}[{', '.join(map(str, idx))}]"
    return Expr(text, ret, a.bound, "index", "", (a,))


def attr(a: Expr, name: str, ret: WType, bound: float) -> Expr:
    return Expr(f"{a.text}.{name}", ret, bound, "attr", name, (a,))


def where(c: Expr, a: Expr, b: Expr) -> Expr:
    return Expr(f"wp.where({c.text}, {a.text}, {b.text})", a.type, max(a.bound, b.bound), "call", "where", (c, a, b))


def call_bound(name: str, args: list[Expr], ret: WType) -> float:
    bounds = [a.bound for a in args] or [1.0]
    big = max(1.0, max(bounds))
    if name in CONST_BOUND:
        return float(CONST_BOUND[name])
    if name in MAX_BOUND:
        return big + 1.0
    if name == "lerp":  # a (1 - t) + b t
        return (bounds[0] + bounds[1]) * (1.0 + bounds[2]) + 1.0
    if name == "degrees":
        return big * 57.3 + 1.0
    if name == "quat_slerp":  # q0 times a unit quaternion
        return 2.0 * bounds[0] + 1.0
    if name in ("add", "sub", "bit_or", "bit_xor", "bit_and", "lshift"):
        return 2.0 * big * (128.0 if name == "lshift" else 1.0)
    if name in ("div", "floordiv", "cw_div"):
        return bounds[0] + 1.0
    if name in ("sqrt", "cbrt"):
        return math.sqrt(big) + 1.0
    if name in ("log", "log2", "log10"):
        return math.log(big + 1.0) * 1.5 + 1.0
    if name in ("exp", "sinh", "cosh"):
        return 2.3e4
    if name == "pow":
        return (bounds[0] + 1.0) ** 3 + 1.0
    if name == "inverse":
        return float(ret.shape[0]) + 1.0
    if name == "determinant":
        n = args[0].type.shape[0]
        return math.factorial(n) * big ** n
    dim = max([a.type.shape[-1] if a.type.shape else 1 for a in args] + [1])
    if name in ("mul", "cw_mul", "dot", "ddot", "outer", "cross", "spatial_dot", "spatial_cross",
                "spatial_cross_dual", "length_sq", "trace"):
        prod = 1.0
        for b in bounds:
            prod *= max(1.0, b)
        return prod * dim * (dim if name == "ddot" else 1)
    if name in ("length", "norm_l1", "norm_l2", "norm_huber", "norm_pseudo_huber"):
        return big * dim
    return big ** max(2, len(args) + 2) * 24.0  # conservative for anything else


# ---------------------------------------------------------------------------------------------
# squashing and guards


def limit_of(t: WType) -> float:
    return LIMIT["int"] if t.scalar in ("int32", "uint32") else LIMIT["float"]


def one(t: WType) -> Expr:
    """The literal 1 of scalar type ``t``."""
    text = {"int32": "1", "uint32": "wp.uint32(1)", "float32": "1.0", "float64": "wp.float64(1.0)"}[t.scalar]
    return Expr(text, T.SCALARS[t.scalar], 1.0, "lit")


def const(t: WType, value: float) -> Expr:
    """A literal of scalar type ``t`` with a given value."""
    s = T.SCALARS[t.scalar]
    if s.kind in ("int", "uint"):
        v = int(value)
        text = str(v) if s.kind == "int" else f"wp.uint32({v})"
    else:
        v = float(value)
        text = repr(v) if s.scalar == "float32" else f"wp.float64({v!r})"
    return Expr(text, s, max(1.0, abs(v)), "lit")


def squash(rng: random.Random, e: Expr, cap: float = 1.0) -> Expr:
    """``e`` mapped into [-cap', cap'] with cap' <= max(cap, 1): a bounded rewrite for its type."""
    t = e.type
    if t.kind == "bool":
        return e
    if t.scalar in ("int32", "uint32") and t.is_scalar:
        c = max(1, int(cap))
        mask = (1 << max(0, int(math.log2(c + 1)))) - 1
        pick = 2 if t.kind == "uint" else rng.randrange(3)
        if pick == 0:
            out = binop("mod", e, const(t, c + 1), t)  # |x % (c+1)| <= c
        elif pick == 1:
            out = call("clamp", [e, const(t, -c), const(t, c)], t)
        else:
            out = binop("bit_and", e, const(t, mask), t)  # in [0, mask]
        out.bound = float(c)
        return out
    if t.is_scalar:
        pick = rng.randrange(4)
        if pick == 3 and cap >= 1.0:
            return call("clamp", [e, const(t, -cap), const(t, cap)], t, bound=cap)
        return call(("sin", "cos", "tanh", "sin")[pick], [e], t)
    if t.scalar in ("int32",):
        return call("min", [call("max", [e, ctor(t, [const(T.INT32, -3)])], t), ctor(t, [const(T.INT32, 3)])], t, bound=3.0)
    if t.kind in ("vec", "quat", "spatial"):
        return call("normalize", [e], t)
    if t.kind == "transform":
        p = call("normalize", [call("transform_get_translation", [e], T.VEC3F)], T.VEC3F)
        q = call("normalize", [call("transform_get_rotation", [e], T.QUATF)], T.QUATF)
        return Expr(f"wp.transformf({p.text}, {q.text})", t, 1.0, "ctor", t.name, (p, q))
    # matrices: scale by a literal 1/bound (bounds stay far inside float range)
    scale = const(T.SCALARS[t.scalar], float(f"{1.0 / max(1.0, e.bound):.3g}"))
    out = binop("mul", e, scale, t)
    out.bound = 1.0
    return out


def fit(rng: random.Random, e: Expr, cap: float | None = None) -> Expr:
    """``e`` itself if its bound is within the type's limit (or ``cap``), else squashed."""
    if e.type.kind == "struct":
        return e
    limit = limit_of(e.type) if cap is None else cap
    return e if e.bound <= limit else squash(rng, e, min(limit, 4.0 if e.type.scalar.startswith(("int", "uint")) else limit))


def guard_args(rng: random.Random, sig: Sig, args: list[Expr]) -> list[Expr]:
    """Arguments rewritten so the call is well-defined (domain guards)."""
    name, t0 = sig.name, sig.args[0]
    a = list(args)
    if name in ("div", "mod", "floordiv"):
        a[1] = binop("add", call("abs", [a[1]], a[1].type), one(a[1].type), a[1].type)
    elif name in ("lshift", "rshift"):
        a[0] = binop("bit_and", a[0], const(a[0].type, 255), a[0].type)
        a[1] = binop("bit_and", a[1], const(a[1].type, 7), a[1].type)
    elif name in ("sqrt",):
        a[0] = call("abs", [a[0]], t0)
    elif name in ("log", "log2", "log10"):
        a[0] = binop("add", call("abs", [a[0]], t0), one(t0), t0)
    elif name in ("acos", "asin"):
        a[0] = call("clamp", [a[0], const(t0, -1.0), const(t0, 1.0)], t0, bound=1.0)
    elif name in ("exp", "sinh", "cosh"):
        a[0] = call("clamp", [a[0], const(t0, -10.0), const(t0, 10.0)], t0, bound=10.0)
    elif name == "tan":
        a[0] = call("clamp", [a[0], const(t0, -1.4), const(t0, 1.4)], t0, bound=1.4)
    elif name == "erfinv":
        a[0] = call("clamp", [a[0], const(t0, -0.9), const(t0, 0.9)], t0, bound=1.0)
    elif name == "erfcinv":
        a[0] = call("clamp", [a[0], const(t0, 0.1), const(t0, 1.9)], t0, bound=1.9)
    elif name == "pow":
        a[0] = binop("add", call("abs", [a[0]], t0), const(t0, 0.5), t0)
        a[1] = call("clamp", [a[1], const(sig.args[1], -3.0), const(sig.args[1], 3.0)], sig.args[1], bound=3.0)
    elif name == "cw_div":  # b*b + 1 elementwise: at least 1
        t1 = sig.args[1]
        b = fit(rng, a[1], 1.0e3)
        a[1] = binop("add", call("cw_mul", [b, b], t1), ctor(t1, [one(T.component_type(t1))]), t1)
    elif name == "inverse":  # m m^T + I is symmetric positive definite with eigenvalues >= 1
        m = fit(rng, a[0], 100.0)
        a[0] = binop("add", binop("mul", m, call("transpose", [m], t0), t0), identity(t0), t0)
    elif name == "uint32" and t0.kind in ("int", "float"):  # float -> unsigned of a negative value is undefined
        a[0] = call("abs", [a[0]], t0)
    elif name in ("quat_from_euler", "quat_to_euler"):  # axis indices: a permutation-like constant triple
        axes = rng.choice(((0, 1, 2), (2, 1, 0), (0, 1, 0), (2, 0, 2), (1, 2, 0)))
        a[1:4] = [const(T.INT32, x) for x in axes]
    elif name == "closest_point_edge_edge":
        a[4] = const(T.FLOAT32, 1.0e-6)
    elif name == "smoothstep":
        lo = rng.uniform(-2.0, 0.0)
        a[0], a[1] = const(t0, round(lo, 2)), const(t0, round(lo + rng.uniform(0.5, 2.0), 2))
    return a


def apply(rng: random.Random, sig: Sig, args: list[Expr]) -> Expr:
    """The call or operator ``sig`` applied to (guarded) ``args``."""
    args = guard_args(rng, sig, args)
    if sig.name in OPERATORS and len(args) == 2:
        return binop(sig.name, args[0], args[1], sig.ret)
    if sig.name in UNARY and len(args) == 1:
        return unop(sig.name, args[0])
    return call(sig.name, args, sig.ret)


# ---------------------------------------------------------------------------------------------
# the recursive generator


@dataclass
class Context:
    """What an expression may use: variables in scope, readable arrays, helpers, preferences."""

    rng: random.Random
    max_depth: int = 3
    leaf_p: float = 0.3
    scope: list[dict[str, Expr]] = field(default_factory=lambda: [{}])
    readers: list = field(default_factory=list)  # callables (ctx, t) -> Expr | None: arrays, struct fields
    helpers: list = field(default_factory=list)  # (name, arg types, ret type, ret bound); args bounded by 4
    builder: Any = None  # the KernelBuilder readers create parameters on
    var_p: float = 0.55  # how often a leaf is a variable in scope (outputs raise it)
    prefer: frozenset[str] | None = None  # builtin names to favour
    unread: set[str] = field(default_factory=set)  # locals declared and not read yet: leaves prefer them
    unread_p: float = 0.75
    census_floor: float = 6.0  # weight of a builtin real code never calls (keeps the long tail)
    realistic: bool = False  # guards real code uses (``wp.max(d, eps)``, positive inputs) over ``abs(x) + 1``
    positive: Any = None  # realistic mode: callable (ctx, t) -> a positive scalar Expr (a parameter, an input)
    allowed: frozenset | None = None  # realistic mode: the value types builtins' arguments may take

    def variables(self, t: WType | None = None) -> list[Expr]:
        out = {}
        for frame in self.scope:
            out.update(frame)
        return [v for v in out.values() if t is None or v.type == t]


def gen(ctx: Context, t: WType, depth: int = 0) -> Expr:
    """A random expression of type ``t`` whose bound is within the type's limit."""
    rng = ctx.rng
    if t.kind == "bool":  # a test reads at least one variable: no branching on literals
        e = leaf(ctx, t) if depth >= ctx.max_depth or rng.random() < ctx.leaf_p * (1 + depth) else _bool(ctx, depth)
        return e if reads(e) else _bool(ctx, ctx.max_depth)
    if t.kind == "struct" or depth >= ctx.max_depth or rng.random() < ctx.leaf_p * (1 + depth):
        return leaf(ctx, t)
    roll = rng.random()
    if ctx.realistic:  # mostly builtins and operators; few selects and casts
        roll = rng.choices((0.0 if ctx.helpers else 0.5, 0.1, 0.2, 0.26, 0.5), (3, 3, 6, 8, 80))[0]
    if roll < 0.08 and ctx.helpers:
        helpers = [h for h in ctx.helpers if h[2] == t]
        if helpers:
            return helper_call(ctx, rng.choice(helpers), depth + 1)
    if roll < 0.14:
        return where(_bool(ctx, depth + 1), gen(ctx, t, depth + 1), gen(ctx, t, depth + 1))
    if roll < 0.24 and t.is_scalar:
        return _scalar_from(ctx, t, depth)
    if roll < 0.3 and not t.is_scalar and t.kind not in ("transform", "quat", "smat"):
        comp = T.component_type(t)
        n = t.size if t.kind != "mat" or rng.random() < 0.5 else 1
        return fit(rng, ctor(t, [gen(ctx, comp, depth + 1) for _ in range(n)]))
    sig = pick_signature(ctx, t)
    if sig is None:
        return leaf(ctx, t)
    args = [gen(ctx, a, depth + 1) for a in sig.args]
    if ctx.realistic:
        return fit(rng, realistic_apply(ctx, sig, args))
    return fit(rng, apply(rng, sig, args))


def realistic_apply(ctx: Context, sig: Sig, args: list[Expr]) -> Expr:
    """``apply`` with the guards real code writes: divide by something positive (an input whose
    range is positive, or ``wp.max(d, eps)``), ``sqrt`` of ``wp.max(x, 0.0)``."""
    rng, name, t0 = ctx.rng, sig.name, sig.args[0]
    a = list(args)
    if name in ("div", "mod", "floordiv") and a[1].type.kind in ("float", "int"):
        b = ctx.positive(ctx, a[1].type) if ctx.positive is not None and rng.random() < 0.6 else None
        if b is None:
            low = 1 if a[1].type.kind == "int" else rng.choice((1.0e-3, 0.01, 0.1, 0.5))
            b = call("max", [a[1], const(a[1].type, low)], a[1].type, bound=a[1].bound)
            out = binop(name, a[0], b, sig.ret)
            out.bound = a[0].bound / low + 1.0 if name == "div" else a[0].bound + 1.0
            return out
        out = binop(name, a[0], b, sig.ret)
        out.bound = a[0].bound * 10.0 + 1.0  # positive inputs are at least 0.1
        return out
    if name == "sqrt":
        return call("sqrt", [call("max", [a[0], const(t0, 0.0)], t0, bound=a[0].bound)], t0)
    for _ in range(3):  # x - x, x * x: say something
        if len(a) == 2 and a[0].text == a[1].text and name in OPERATORS:
            a[1] = leaf(ctx, a[1].type) if rng.random() < 0.5 else lit(rng, a[1].type, 0.1, 2.0)
    return apply(rng, sig, a)


def helper_call(ctx: Context, helper: tuple, depth: int = 0) -> Expr:
    """A call of ``helper`` (an entry of ``ctx.helpers``) on generated arguments bounded by 4."""
    name, arg_types, ret, bound = helper
    args = [fit(ctx.rng, gen(ctx, a, depth), 4.0) for a in arg_types]
    return Expr(f"{name}({', '.join(a.text for a in args)})", ret, bound, "helper", name, tuple(args))


# how often real code reaches a builtin through an operator (the census counts ``wp.NAME(...)`` calls only)
OPERATOR_WEIGHTS = {"add": 160.0, "sub": 120.0, "mul": 200.0, "div": 60.0, "mod": 12.0, "floordiv": 6.0,
                    "neg": 20.0, "bit_and": 4.0, "bit_or": 3.0, "bit_xor": 2.0, "lshift": 2.0, "rshift": 2.0,
                    "invert": 1.0}


@functools.cache
def census_counts() -> dict[str, float]:
    """``wp.NAME(...)`` call counts of real Warp code (the committed census); empty if there is none."""
    try:
        from jit.code.synthesis.census import load_census
        return {k: float(v) for k, v in load_census().get("builtins", {}).items()}
    except (ImportError, OSError, ValueError):
        return {}


def name_weights(names: list[str], floor: float) -> list[float]:
    """Draw weights of builtin ``names``: their census counts, at least ``floor``."""
    counts = census_counts()
    return [max(floor, OPERATOR_WEIGHTS.get(n, counts.get(n, 0.0))) for n in names]


def pick_signature(ctx: Context, t: WType) -> Sig | None:
    sigs = signatures().get(t, ())
    if not sigs:
        return None
    if ctx.allowed is not None:  # calls over the kernel's own types, not literals of others
        sigs = tuple(s for s in sigs if all(a in ctx.allowed for a in s.args)) or sigs
    names = sorted({s.name for s in sigs})
    if ctx.prefer and ctx.rng.random() < 0.6:
        preferred = [n for n in names if n in ctx.prefer]
        names = preferred or names
    # as often as real code calls them, with a floor so the rarely used ones still appear
    name = ctx.rng.choices(names, name_weights(names, ctx.census_floor))[0]
    return ctx.rng.choice([s for s in sigs if s.name == name])


def _bool(ctx: Context, depth: int) -> Expr:
    """A test that reads at least one variable (a test of literals only says nothing)."""
    e = _any_bool(ctx, depth)
    if reads(e):
        return e
    return compare(ctx.rng.choice(("<", ">", "<=", ">=")), anchor(ctx, T.FLOAT32), lit(ctx.rng, T.FLOAT32))


def _any_bool(ctx: Context, depth: int) -> Expr:
    rng = ctx.rng
    roll = rng.random()
    if depth >= ctx.max_depth or roll < 0.55 or (ctx.realistic and roll < 0.9):
        t = rng.choice((T.FLOAT32, T.INT32, T.FLOAT32) if ctx.realistic else (T.FLOAT32, T.INT32, T.FLOAT32, T.FLOAT64))
        a, b = gen(ctx, t, depth + 1), gen(ctx, t, depth + 1)
        if a.text == b.text:  # x < x says nothing
            b = lit(rng, t)
        return compare(rng.choice(("<", "<=", ">", ">=", "==", "!=")), a, b)
    if roll < 0.7:
        t = rng.choice((T.FLOAT32, T.FLOAT64))
        return call(rng.choice(("isfinite", "isnan", "isinf")), [gen(ctx, t, depth + 1)], T.BOOL)
    if roll < 0.8:
        return boolop("not", [_bool(ctx, depth + 1)])
    return boolop(rng.choice(("and", "or")), [_bool(ctx, depth + 1), _bool(ctx, depth + 1)])


def _scalar_from(ctx: Context, t: WType, depth: int) -> Expr:
    """A scalar taken out of a bigger value (component, element) or converted from another scalar."""
    rng = ctx.rng
    if rng.random() < 0.5 and t.kind in ("int", "float"):
        src_t = rng.choice((T.INT32, T.FLOAT32, T.FLOAT64, T.UINT32))
        if src_t != t:
            src = fit(rng, gen(ctx, src_t, depth + 1), 1000.0)
            if t.kind == "uint" and src_t.kind != "uint":
                src = call("abs", [src], src_t)
            return cast(t, src)
    bigger = [b for b in T.VALUE_TYPES if not b.is_scalar and b.scalar == t.scalar and b.kind != "transform"
              and (ctx.allowed is None or b in ctx.allowed)]
    if not bigger:
        return leaf(ctx, t)
    b = rng.choice(bigger)
    src = gen(ctx, b, depth + 1)
    if b.kind in ("mat", "smat"):
        return index(src, (rng.randrange(b.shape[0]), rng.randrange(b.shape[1])), t)
    k = rng.randrange(b.shape[0])
    if b.kind == "vec" and b.shape[0] <= 4 and rng.random() < 0.4 and src.op in ("var", "arr"):
        return attr(src, "xyzw"[k], t, src.bound)
    return index(src, (k,), t)


def leaf(ctx: Context, t: WType) -> Expr:
    """A variable, array element, struct field or literal of type ``t``."""
    rng = ctx.rng
    roll = rng.random()
    if t.kind == "struct":  # only existing struct values (all fields written); else a zeroed one
        vs = ctx.variables(t)
        return rng.choice(vs) if vs else zero(t)
    if roll < ctx.var_p:
        vs = ctx.variables(t)
        if vs:
            return pick_variable(ctx, vs)
    if roll < max(0.85, ctx.var_p + 0.1) and ctx.readers:
        for reader in rng.sample(ctx.readers, len(ctx.readers)):
            e = reader(ctx, t)
            if e is not None:
                return e
    if t.kind == "bool":
        return compare(rng.choice(("<", ">")), leaf(ctx, T.FLOAT32), lit(rng, T.FLOAT32))
    if ctx.realistic and t.kind in ("mat", "smat") and t.shape[0] == t.shape[1]:
        return identity(t)
    if ctx.realistic and t.kind == "vec" and rng.random() < 0.6:
        return ctor(t, [lit(rng, T.component_type(t), -1.0, 1.0)])
    return lit(rng, t)


def pick_variable(ctx: Context, vs: list[Expr]) -> Expr:
    """One of ``vs``, preferring values nothing has read yet (so computed values flow on)."""
    fresh = [v for v in vs if v.name in ctx.unread]
    v = ctx.rng.choice(fresh if fresh and ctx.rng.random() < ctx.unread_p else vs)
    ctx.unread.discard(v.name)
    return v


def reads(e: Expr) -> bool:
    """True if ``e`` reads a variable or an array (not only literals)."""
    if e.op in ("var", "arr", "helper", "attr") or (e.op == "raw" and any(ch.isalpha() for ch in e.text)):
        return True
    return any(reads(a) for a in e.args if isinstance(a, Expr))


def anchor(ctx: Context, t: WType) -> Expr:
    """An expression of scalar type ``t`` that reads a variable: one in scope, an input, or a
    conversion of another scalar (or of a vector's component)."""
    rng = ctx.rng
    vs = ctx.variables(t)
    if vs:
        return pick_variable(ctx, vs)
    for reader in rng.sample(ctx.readers, len(ctx.readers)):
        e = reader(ctx, t)
        if e is not None:
            return e
    scalars = [v for v in ctx.variables() if v.type.kind in ("int", "float", "uint")]
    if scalars:
        return cast(t, pick_variable(ctx, scalars))
    vectors = [v for v in ctx.variables() if v.type.kind in ("vec", "quat", "spatial") and v.type.scalar == t.scalar]
    if vectors:
        return index(pick_variable(ctx, vectors), (0,), t)
    return lit(rng, t)  # nothing to read at all (a helper on structs only)


def reading(ctx: Context, t: WType, depth: int = 0) -> Expr:
    """``gen`` of type ``t`` that reads at least one variable (outputs are never bare literals)."""
    e = gen(ctx, t, depth)
    if reads(e) or t.kind == "struct":
        return e
    vs = ctx.variables(t)
    if vs:
        return pick_variable(ctx, vs)
    if t.is_scalar:
        return anchor(ctx, t)
    if t.kind in ("vec",) and t.scalar in ("float32", "float64", "int32"):
        return fit(ctx.rng, binop("add", e, ctor(t, [anchor(ctx, T.SCALARS[t.scalar])]), t))
    return e
