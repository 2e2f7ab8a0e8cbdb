"""The base categories: arithmetic, math, vector, matrix and control flow.

Each is the shared statement builder with a profile: the types its locals take, the
builtins it favours and its mix of statements. What it leaves out: categories that need
special statements (atomics, structs, tiles, ...), which live in their own modules.
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import Assign, KernelBuilder, Line, Profile

SCALAR_MATH = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "sqrt", "cbrt", "exp",
    "log", "log2", "log10", "pow", "erf", "erfc", "erfinv", "erfcinv", "degrees", "radians", "floor", "ceil",
    "round", "rint", "trunc", "frac", "copysign", "sign", "step", "nonzero", "abs", "min", "max", "clamp",
    "lerp", "smoothstep", "isfinite", "isnan", "isinf"})
ARITH = frozenset({"add", "sub", "mul", "div", "mod", "floordiv", "neg", "bit_and", "bit_or", "bit_xor",
                   "lshift", "rshift", "invert", "abs", "min", "max", "clamp", "sign", "bit_count",
                   "int32", "uint32", "float32", "float64"})
VECTOR = frozenset({"dot", "cross", "length", "length_sq", "normalize", "cw_mul", "cw_div", "outer",
                    "argmin", "argmax", "min", "max", "abs", "lerp", "norm_l1", "norm_l2", "norm_huber",
                    "norm_pseudo_huber", "smooth_normalize", "skew", "add", "sub", "mul", "neg"})
MATRIX = frozenset({"mul", "transpose", "determinant", "inverse", "trace", "diag", "get_diag", "outer",
                    "ddot", "skew", "add", "sub", "cw_mul", "quat_to_matrix", "quat_from_matrix"})


def standard(kb: KernelBuilder) -> KernelBuilder:
    """A body within the statement budget, then the output writes."""
    kb.body = kb.block(kb.budget, 0, new_scope=False)
    kb.body += kb.write_outputs()
    return kb


@register("arithmetic", 1.2)
def arithmetic(rng, name, suffix, complexity):
    profile = Profile({T.INT32: 3, T.FLOAT32: 3, T.FLOAT64: 1, T.UINT32: 1}, (T.FLOAT32, T.INT32, T.FLOAT64),
                      prefer=ARITH, weights={"for": 0.3, "while": 0.1})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


@register("math", 1.2)
def math(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 5, T.FLOAT64: 1, T.INT32: 0.5}, (T.FLOAT32, T.FLOAT64), prefer=SCALAR_MATH,
                      weights={"for": 0.3, "while": 0.1})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


@register("vector", 1.2)
def vector(rng, name, suffix, complexity):
    profile = Profile({T.VEC3F: 4, T.VEC2F: 1.5, T.VEC4F: 1.5, T.FLOAT32: 2, T.VEC3D: 0.5, T.VEC2I: 0.3, T.VEC3I: 0.5},
                      (T.VEC3F, T.FLOAT32, T.VEC2F, T.VEC4F), prefer=VECTOR, weights={"for": 0.3, "while": 0.1})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


def decomposition(kb: KernelBuilder, depth: int) -> list:
    """svd3 / qr3 / eig3 / svd2: Warp returns the factors through output variables."""
    rng = kb.rng
    kind = rng.choice(("svd3", "qr3", "eig3", "svd2"))
    n = 2 if kind == "svd2" else 3
    mt, vt = (T.MAT22F, T.VEC2F) if n == 2 else (T.MAT33F, T.VEC3F)
    m = E.fit(rng, E.gen(kb.ctx, mt), 100.0)
    if kind == "eig3":  # symmetric input: m + m^T
        m = E.binop("add", m, E.call("transpose", [m], mt), mt)
    src = kb.names.take("A", "m", "mat", "M")
    outs = {"svd3": (mt, vt, mt), "svd2": (mt, vt, mt), "qr3": (mt, mt), "eig3": (mt, vt)}[kind]
    words = {"svd3": ("U", "sigma", "V"), "svd2": ("U", "sigma", "V"), "qr3": ("Q", "R"), "eig3": ("evecs", "evals")}[kind]
    names = [kb.names.take(w, spread=1) for w in words]
    stmts = [Assign(src, m)]
    stmts += [Assign(nm, E.zero(t)) for nm, t in zip(names, outs)]
    stmts.append(Line(f"wp.{kind}({src}, {', '.join(names)})"))
    for nm, t in zip(names, outs):  # factors of a bounded matrix are bounded (orthogonal or singular values)
        kb.declare(nm, E.var(nm, t, 2.0 * 100.0 * n))
    kb.declare(src, m)
    return stmts


@register("matrix", 1.2)
def matrix(rng, name, suffix, complexity):
    profile = Profile({T.MAT33F: 4, T.MAT22F: 1.5, T.MAT44F: 1.5, T.VEC3F: 2, T.FLOAT32: 1, T.MAT33D: 0.5},
                      (T.MAT33F, T.VEC3F, T.FLOAT32, T.MAT22F), prefer=MATRIX, extra=[decomposition],
                      weights={"for": 0.3, "while": 0.1, "extra": 0.6})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


@register("control_flow", 1.2)
def control_flow(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 4, T.INT32: 3, T.VEC3F: 1, T.BOOL: 0.5}, (T.FLOAT32, T.INT32),
                      weights={"decl": 3.0, "if": 3.0, "for": 2.0, "while": 1.0, "return": 0.5,
                               "continue": 1.0, "break": 0.5})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))
