"""Memory-pattern categories: atomics, reductions and multi-dimensional stencils.

``atomic`` kernels update small shared buffers with ``wp.atomic_*`` and ``buf[k] += x``;
integer and min/max updates are order-independent, float sums, exchanges and used return
values are not, and ``metadata["deterministic"]`` says so. ``reduction`` kernels loop over
a row of an input and fold it (sum, product-free min/max, counting, dot products).
``multidim`` kernels launch in 2 or 3 dimensions and read neighbours with clamped
indices, plus 4D arrays. What it leaves out: tile-based reductions (``tile``).
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.basic import standard
from jit.code.synthesis.expr import Expr
from jit.code.synthesis.stmt import Assign, For, KernelBuilder, Line, Profile, Store

INT_OPS = ("add", "sub", "min", "max", "and", "or", "xor")
FLOAT_OPS = ("add", "sub", "min", "max")


def shared_buffer(kb: KernelBuilder, t) -> object:
    existing = [p for p in kb.params if p.role == "inout" and p.dtype == t]
    if existing and kb.rng.random() < 0.6:
        return kb.rng.choice(existing)
    n = kb.rng.choice((1, 2, 4, 8, 16))
    return kb.param("array", t, "inout", ndim=1, shape=(n,), value_range=(-2.0, 2.0) if t.kind != "uint" else (0.0, 2.0))


def atomic_update(kb: KernelBuilder, depth: int) -> list:
    rng = kb.rng
    t = rng.choice((T.INT32, T.INT32, T.FLOAT32, T.FLOAT32, T.VEC3F, T.UINT32))
    buf = shared_buffer(kb, t)
    tid = kb.tids[0]
    idx = rng.choice((f"{tid} % {buf.name}.shape[0]", f"({tid} + {rng.randint(1, 7)}) % {buf.name}.shape[0]", "0"))
    if idx == "0" or rng.random() < 0.2:
        idx = f"wp.clamp({E.gen(kb.ctx, T.INT32, kb.ctx.max_depth - 1).text}, 0, {buf.name}.shape[0] - 1)"
    ops = INT_OPS if t.kind in ("int", "uint") else FLOAT_OPS
    op = rng.choice(ops + (("exch",) if t.is_scalar else ()) + (("cas",) if t.kind == "int" else ()))
    value = E.fit(rng, E.gen(kb.ctx, t), 4.0)
    if t.kind == "float" and op in ("add", "sub") or op in ("exch", "cas"):
        kb.meta["deterministic"] = False
    if op == "cas":
        expected = E.fit(rng, E.gen(kb.ctx, t), 4.0)
        call = f"wp.atomic_cas({buf.name}, {idx}, {expected.text}, {value.text})"
    elif op in ("add", "sub") and rng.random() < 0.3:
        return [Line(f"{buf.name}[{idx}] {'+' if op == 'add' else '-'}= {value.text}")]
    else:
        call = f"wp.atomic_{op}({buf.name}, {idx}, {value.text})"
    if rng.random() < 0.25:  # use the value before the update
        old = kb.fresh("old")
        kb.meta["deterministic"] = False
        cap = 1.0e3 if t.kind in ("int", "uint") else 1.0e4
        kb.declare(old, E.var(old, t, cap))
        fitted = E.fit(rng, E.var(old, t, 1.0e9), cap)  # a bound of 1e9 is always squashed
        kb.readonly.add(old)
        return [Assign(old, Expr(call, t, 1.0e9, "call", f"atomic_{op}")), Line(f"{old} = {fitted.text}")]
    return [Line(call)]


@register("atomic", 1.0)
def atomic(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 3, T.INT32: 3, T.VEC3F: 1, T.UINT32: 0.5}, (T.FLOAT32, T.INT32),
                      extra=[atomic_update], weights={"extra": 3.0, "for": 0.5}, outputs=(0, 1))
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    kb.body = kb.block(kb.budget, 0, new_scope=False)
    if not any(p.role == "inout" for p in kb.params):
        kb.body += atomic_update(kb, 0)
    kb.body += kb.write_outputs()
    kb.meta["differentiable"] = False
    return kb


# ---------------------------------------------------------------------------------------------
# reductions


def fold(kb: KernelBuilder, acc: str, t, x: Expr) -> list:
    """One update of accumulator ``acc`` with element ``x``, bounded inside the loop."""
    rng = kb.rng
    kind = rng.choice(("sum", "max", "min", "count", "sumsq", "dot") if t == T.FLOAT32 else ("sum", "max", "min"))
    step = E.fit(rng, x, 4.0)
    if kind == "sum":
        return [Assign(acc, step, "+")]
    if kind == "max":
        return [Assign(acc, E.call("max", [E.var(acc, t, 1e3), step], t))]
    if kind == "min":
        return [Assign(acc, E.call("min", [E.var(acc, t, 1e3), step], t))]
    if kind == "count":
        cond = E.compare(rng.choice(("<", ">")), step, E.lit(rng, T.FLOAT32, -1.0, 1.0))
        return [Line(f"if {cond.text}:\n    {acc} += 1.0")]
    if kind == "sumsq":
        return [Assign(acc, E.binop("mul", step, step, t), "+")]
    vec = E.fit(rng, E.gen(kb.ctx, T.VEC3F), 1.0)
    return [Assign(acc, E.call("dot", [vec, E.ctor(T.VEC3F, [step, step, E.lit(rng, T.FLOAT32)])], t), "+")]


@register("reduction", 1.0)
def reduction(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 4, T.INT32: 1, T.VEC3F: 1}, (T.FLOAT32,), weights={"for": 0.0, "while": 0.0}, outputs=(0, 1))
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    t = rng.choice((T.FLOAT32, T.FLOAT32, T.INT32, T.VEC3F))
    width = rng.choice((4, 8, 16))
    src = kb.param("array", t, "in", ndim=2, shape=(kb.dims[0], width))
    acc = kb.fresh("acc")
    init = {"float32": "float(0.0)", "int32": "int(0)"}.get(t.name, "wp.vec3f(0.0)")
    pre = kb.block(max(1, kb.budget // 3), 0, new_scope=False)
    kb.declare(acc, E.var(acc, t, 0.0))
    loop_var = kb.fresh("t")
    with kb.loop(loop_var, width, width):
        x = kb.fresh("x")
        element = Expr(f"{src.name}[{kb.tids[0]}, {loop_var}]", t, 2.0, "arr", src.name)
        kb.declare(x, element)
        kb.readonly.add(x)
        body = [Assign(x, element)]
        body += kb.block(max(1, kb.budget // 3), 1, new_scope=False)
        body += fold(kb, acc, t, E.var(x, t, 2.0) if rng.random() < 0.6 else E.gen(kb.ctx, t))
    kb.raise_bound(acc, width * 16.0 + 4.0)
    loop = For(loop_var, (f"{src.name}.shape[1]",), body)
    kb.body = pre + [Assign(acc, Expr(init, t, 0.0, "raw"))] + [loop]
    out = kb.param("array", t, "out")
    kb.body.append(Store(out.name, tuple(kb.tids), E.var(acc, t, 1e3)))
    if rng.random() < 0.5:  # a grid-wide total as well
        total = kb.param("array", t, "inout", ndim=1, shape=(1,))
        op = "add" if t != T.INT32 or rng.random() < 0.5 else rng.choice(("max", "min"))
        if op == "add" and t.kind == "float" or t == T.VEC3F:
            kb.meta["deterministic"] = False
        kb.body.append(Line(f"wp.atomic_{op}({total.name}, 0, {acc})"))
    kb.body += kb.write_outputs()
    return kb


# ---------------------------------------------------------------------------------------------
# multi-dimensional launches and stencils


def stencil(kb: KernelBuilder, depth: int) -> list:
    """A weighted sum of neighbours of an input field, indices clamped to the array."""
    rng = kb.rng
    t = rng.choice((T.FLOAT32, T.FLOAT32, T.VEC3F))
    arrays = kb.inputs(t) or [kb.param("array", t, "in")]
    a = rng.choice(arrays)
    terms = []
    for _ in range(rng.randint(2, 2 * kb.ndim + 1)):
        idx = []
        for d, tid in enumerate(kb.tids):
            off = rng.choice((-1, 0, 0, 1, 2))
            idx.append(tid if off == 0 else f"wp.clamp({tid} {'+' if off > 0 else '-'} {abs(off)}, 0, {a.name}.shape[{d}] - 1)")
        w = E.lit(rng, T.FLOAT32, -1.0, 1.0)
        terms.append(f"{w.text} * {a.name}[{', '.join(idx)}]")
    name = kb.fresh("st")
    value = Expr(" + ".join(terms), t, 2.0 * len(terms), "raw")
    kb.declare(name, value)
    return [Assign(name, value)]


def block4d(kb: KernelBuilder, depth: int) -> list:
    """A read from a small 4D array with indices folded from the thread ids."""
    rng = kb.rng
    existing = [p for p in kb.params if p.ndim == 4]
    a = existing[0] if existing else kb.param("array", T.FLOAT32, "in", ndim=4, shape=(2, 3, 2, 2))
    idx = []
    for d in range(4):
        tid = kb.tids[d % kb.ndim]
        idx.append(rng.choice((f"{tid} % {a.name}.shape[{d}]", f"wp.min({tid}, {a.name}.shape[{d}] - 1)")))
    name = kb.fresh("w")
    value = Expr(f"{a.name}[{', '.join(idx)}]", T.FLOAT32, 2.0, "arr", a.name)
    kb.declare(name, value)
    return [Assign(name, value)]


@register("multidim", 1.0)
def multidim(rng, name, suffix, complexity):
    ndim = rng.choice((2, 2, 3))
    profile = Profile({T.FLOAT32: 4, T.VEC3F: 1, T.INT32: 1}, (T.FLOAT32, T.VEC3F), extra=[stencil, block4d],
                      weights={"extra": 2.0, "for": 0.4}, ndim=ndim)
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))
