"""Composition categories: ``@wp.func`` helpers calling each other, and ``@wp.struct`` values.

``function`` kernels get several helpers, each free to call the ones before it, and some
helpers that take an array and an index. ``struct`` kernels get one or two structs (one may
nest the other) as parameters, arrays of structs, locals built field by field, struct
outputs and helpers taking a struct. What it leaves out: everything else about the body,
which is the shared builder's.
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.expr import Expr
from jit.code.synthesis.stmt import INDENT, Assign, KernelBuilder, Profile, Store
from jit.code.synthesis.types import WType

FIELD_TYPES = (T.FLOAT32, T.FLOAT32, T.INT32, T.VEC3F, T.VEC2F, T.MAT22F, T.QUATF, T.FLOAT64, T.MAT33F, T.VEC4F)
FIELD_BOUND = 100.0


def array_helper(kb: KernelBuilder) -> None:
    """A helper reading an array at a clamped index: ``f(a, k) -> a[clamp(k)] op ...``."""
    rng = kb.rng
    t = rng.choice((T.FLOAT32, T.VEC3F, T.FLOAT32))
    name = kb.global_name("g")
    p = kb.param("array", t, "in")
    scale = E.lit(rng, T.FLOAT32, 0.5, 2.0)
    body = ["@wp.func", f"def {name}(arr: wp.array(dtype={t.py}), k: wp.int32) -> {t.py}:",
            f"{INDENT}n = arr.shape[0]",
            f"{INDENT}lo = arr[wp.clamp(k, 0, n - 1)]",
            f"{INDENT}hi = arr[wp.clamp(k + {rng.randint(1, 3)}, 0, n - 1)]",
            f"{INDENT}return {rng.choice(['lo + hi', 'lo - hi', 'wp.lerp(lo, hi, ' + scale.text + ')', 'lo * ' + scale.text])}"]
    kb.funcs.append("\n".join(body))

    def reader(ctx, want: WType, p=p, name=name, t=t):
        if want != t or rng.random() < 0.6:
            return None
        k = E.fit(rng, E.gen(ctx, T.INT32, ctx.max_depth - 1), 1000.0)
        return Expr(f"{name}({p.name}, {k.text})", t, 9.0, "helper", name, (k,))

    kb.ctx.readers.append(reader)


@register("function", 1.2)
def function(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 4, T.VEC3F: 2, T.INT32: 1, T.MAT22F: 0.5, T.QUATF: 0.3}, (T.FLOAT32, T.VEC3F),
                      weights={"for": 0.4})
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    for _ in range(rng.randint(1, 4)):
        kb.add_helper()
    if rng.random() < 0.4:
        array_helper(kb)
    kb.body = kb.block(kb.budget, 0, new_scope=False)
    # make sure the kernel calls its helpers: an output from the last helper
    call = E.helper_call(kb.ctx, kb.ctx.helpers[-1])
    out = kb.param("array", call.type, "out")
    kb.body.append(Store(out.name, tuple(kb.tids), E.fit(rng, call)))
    kb.body += kb.write_outputs()
    return kb


# ---------------------------------------------------------------------------------------------
# structs


def make_struct(kb: KernelBuilder, nested: WType | None = None) -> WType:
    rng = kb.rng
    name = kb.global_name("S")
    names = rng.sample(["pos", "vel", "mass", "scale", "count", "rot", "weight", "offset", "axis", "m", "k", "flag"],
                       rng.randint(2, 4))
    fields = [(n, rng.choice(FIELD_TYPES)) for n in names]
    if nested is not None:
        fields.append(("inner", nested))
    t = WType(name, "struct", fields=tuple(fields))
    src = "\n".join(["@wp.struct", f"class {name}:", *(f"{INDENT}{n}: {ft.py}" for n, ft in fields)])
    kb.structs.append((t, src))
    return t


def field_paths(t: WType, prefix: str = "") -> list[tuple[str, WType]]:
    out = []
    for n, ft in t.fields:
        if ft.kind == "struct":
            out += field_paths(ft, f"{prefix}{n}.")
        else:
            out.append((f"{prefix}{n}", ft))
    return out


def read_field(ctx, want: WType) -> Expr | None:
    """A field (possibly nested) of a struct variable in scope, or of an array-of-struct element."""
    kb: KernelBuilder = ctx.builder
    rng = ctx.rng
    options = []
    for v in ctx.variables():
        if v.type.kind == "struct":
            options += [(v.text, path, v.bound) for path, ft in field_paths(v.type) if ft == want]
    if kb is not None:
        for p in kb.params:
            if p.kind == "array" and p.dtype.kind == "struct" and p.role == "in":
                for path, ft in field_paths(p.dtype):
                    if ft == want:
                        options.append((f"{p.name}[{', '.join(kb.index_exprs(p))}]", path, 2.0))
    if not options:
        return None
    base, path, bound = rng.choice(options)
    return Expr(f"{base}.{path}", want, bound, "attr", path)


read_field.pure = True  # reads variables only: usable inside helpers


def struct_local(kb: KernelBuilder, t: WType) -> list:
    """``q = S()`` and every field assigned, so no field is read before it is written."""
    name = kb.fresh("q")
    stmts: list = [Assign(name, E.zero(t))]
    for path, ft in field_paths(t):
        stmts.append(Store(f"{name}.{path}", (), E.fit(kb.rng, E.gen(kb.ctx, ft), FIELD_BOUND)))
    kb.declare(name, E.var(name, t, FIELD_BOUND))
    kb.readonly.add(name)
    return stmts


@register("struct", 1.0)
def struct(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 3, T.VEC3F: 2, T.INT32: 1, T.QUATF: 0.5}, (T.FLOAT32, T.VEC3F), weights={"for": 0.3})
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    kb.ctx.readers.append(read_field)
    inner = make_struct(kb) if rng.random() < 0.3 else None
    st = make_struct(kb, inner)
    roll = rng.random()
    if roll < 0.5:
        p = kb.param("struct", st, "in", ndim=0)
        kb.ctx.scope[0][p.name] = E.var(p.name, st, 2.0)
        kb.readonly.add(p.name)
    if roll > 0.3:
        kb.param("array", st, "in")
    pre = struct_local(kb, st) if rng.random() < 0.6 else []
    if pre and rng.random() < 0.5:  # a helper that takes the struct
        kb.add_helper(ret=T.FLOAT32, arg_types=[st] + [kb.local_type() for _ in range(rng.randint(0, 2))])
    body = kb.block(kb.budget, 0, new_scope=False)
    kb.body = pre + body
    if pre and rng.random() < 0.6:
        q = pre[0].target
        if rng.random() < 0.5:  # update a field, then store the struct
            path, ft = rng.choice(field_paths(st))
            kb.body.append(Store(f"{q}.{path}", (), E.fit(rng, E.gen(kb.ctx, ft), FIELD_BOUND)))
        out = kb.param("array", st, "out")
        kb.body.append(Store(out.name, tuple(kb.tids), E.var(q, st, FIELD_BOUND)))
    kb.body += kb.write_outputs()
    return kb
