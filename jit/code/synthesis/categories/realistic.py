"""The realistic source: small data-flow directed kernels, the shape and vocabulary of real Warp code.

Each category is the shared statement builder in its realistic mode (``Profile.realistic``):
the thread reads its own elements of a few inputs into locals named after them
(``pos = positions[tid]``), computes from the values it has not used yet (leaves prefer
them), with builtins drawn as often as real code calls them (the census) and guards real
code writes (positive inputs, ``wp.max(d, eps)``, ``if d > 0.0:``), and writes what it
computed to one or two outputs. Statement kinds follow real code too: assignments far ahead
of updates, then branches, then loops. The categories differ by the types they work in:
scalar fields, vector math, rotations and frames, and control-heavy kernels.

What it leaves out: skeletons of whole algorithms (the patterns source) and real kernels
changed (the mutants source).
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import Assign, If, KernelBuilder, Profile, read_array
from jit.code.synthesis.types import WType

# statement mix of real kernels (census: Assign >> AugAssign > If > For > While)
WEIGHTS = {"decl": 6.0, "assign": 0.6, "aug": 1.2, "if": 0.9, "for": 0.45, "while": 0.06, "comp": 0.15,
           "return": 0.15, "continue": 0.1, "break": 0.05}
SIZES = {"small": (1, 3), "medium": (3, 7), "large": (10, 20)}


def budget(kb: KernelBuilder, complexity) -> int:
    """Realistic kernels are short: a few statements after the reads, whatever the complexity name."""
    if isinstance(complexity, int):
        return max(1, complexity)
    lo, hi = SIZES.get(complexity, SIZES["medium"])
    return kb.rng.randint(lo, hi)


def load(kb: KernelBuilder, t: WType) -> list:
    """``x = inputs[tid]``: a local named after the array it comes from."""
    e = read_array(kb.ctx, t)
    if e is None or any(isinstance(s, Assign) and s.value.text == e.text for s in kb.body):
        return []
    name = kb.name_for(e)
    kb.declare(name, e)
    return [Assign(name, e)]


def guarded(kb: KernelBuilder, depth: int) -> list:
    """``if d > eps: n = v / d`` and the like: a test on a computed magnitude, then its use."""
    rng = kb.rng
    vecs = [v for v in kb.ctx.variables(T.VEC3F)]
    if not vecs:
        return kb.s_decl(1, depth)[0]
    v = E.pick_variable(kb.ctx, vecs)
    d = kb.names.local("float32", rng.choice(("length", "length_sq")))
    length = E.call("length", [v], T.FLOAT32) if "sq" not in d else E.call("length_sq", [v], T.FLOAT32)
    kb.declare(d, length)
    eps = E.const(T.FLOAT32, rng.choice((0.0, 1.0e-6, 1.0e-4)))
    cond = E.compare(">", E.var(d, T.FLOAT32, length.bound), eps)
    kb.ctx.scope.append({})
    kb.ctx.unread.discard(d)
    try:
        n = kb.names.local("vec3f", "normalize")
        body = [Assign(n, E.Expr(f"{v.name} / {d}", T.VEC3F, 1.0, "bin", "div"))]
        kb.declare(n, body[0].value)
        body += kb.block(rng.randint(1, 2), depth + 1, new_scope=False)
    finally:
        kb.ctx.scope.pop()
    return [Assign(d, length), If(cond, body)]


def realistic(kb: KernelBuilder, complexity, loads: tuple[WType, ...]) -> KernelBuilder:
    """Reads of the thread's elements, a short body, then outputs of what it computed."""
    rng = kb.rng
    pre: list = []
    for t in rng.sample(loads, rng.randint(1, min(3, len(loads)))):
        kb.body = pre
        pre += load(kb, t)
    body = kb.block(budget(kb, complexity), 0, new_scope=False)
    kb.body = pre + body
    kb.body += kb.write_outputs()
    return kb


def profile(types: dict, out_types: tuple, extras=(), **weights) -> Profile:
    return Profile(types, out_types, weights={**WEIGHTS, **weights}, extra=list(extras), outputs=(1, 2), realistic=True)


@register("scalar_fields", 1.0, source="realistic")
def scalar_fields(rng, name, suffix, complexity):
    p = profile({T.FLOAT32: 6, T.INT32: 0.7, T.VEC3F: 1.0, T.FLOAT64: 0.2}, (T.FLOAT32,))
    kb = KernelBuilder(rng, name, suffix, p, complexity)
    return realistic(kb, complexity, (T.FLOAT32, T.FLOAT32, T.VEC3F, T.INT32))


@register("vector_math", 1.3, source="realistic")
def vector_math(rng, name, suffix, complexity):
    p = profile({T.VEC3F: 6, T.FLOAT32: 3, T.VEC2F: 0.4, T.VEC4F: 0.2, T.MAT33F: 0.3}, (T.VEC3F, T.FLOAT32),
                extras=[guarded], extra=0.7)
    kb = KernelBuilder(rng, name, suffix, p, complexity)
    return realistic(kb, complexity, (T.VEC3F, T.VEC3F, T.FLOAT32))


@register("rotations", 0.8, source="realistic")
def rotations(rng, name, suffix, complexity):
    p = profile({T.VEC3F: 4, T.QUATF: 2, T.MAT33F: 1.5, T.TRANSFORMF: 1.0, T.FLOAT32: 1.5},
                (T.VEC3F, T.QUATF, T.TRANSFORMF, T.MAT33F))
    kb = KernelBuilder(rng, name, suffix, p, complexity)
    return realistic(kb, complexity, (T.VEC3F, T.QUATF, T.TRANSFORMF, T.MAT33F))


@register("control", 0.8, source="realistic")
def control(rng, name, suffix, complexity):
    p = profile({T.FLOAT32: 4, T.INT32: 2, T.VEC3F: 2}, (T.FLOAT32, T.INT32, T.VEC3F),
                **{"if": 2.0, "for": 1.0, "while": 0.2, "return": 0.4, "continue": 0.3})
    kb = KernelBuilder(rng, name, suffix, p, complexity)
    return realistic(kb, complexity, (T.FLOAT32, T.INT32, T.VEC3F))
