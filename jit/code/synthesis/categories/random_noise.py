"""The random category: per-thread random streams and procedural noise.

Each kernel seeds a stream with ``wp.rand_init(seed, tid)`` (a seed parameter or literal,
sometimes with an offset), and expressions may then draw from it: ``randf``, ``randi``,
``randn``, ``randu``, ``poisson``, the ``sample_unit_*`` shapes, and ``noise``, ``pnoise``
and ``curlnoise`` of generated coordinates. Draws are deterministic given the seed. What it
leaves out: ``sample_cdf`` (needs a sorted CDF array) and tile-level random numbers.
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.basic import standard
from jit.code.synthesis.expr import Expr
from jit.code.synthesis.stmt import Assign, KernelBuilder, Profile

SAMPLES = {T.VEC2F: ("sample_unit_square", "sample_unit_disk", "sample_unit_ring", "sample_triangle"),
           T.VEC3F: ("sample_unit_sphere", "sample_unit_sphere_surface", "sample_unit_hemisphere",
                     "sample_unit_hemisphere_surface", "sample_unit_cube")}
NOISE_POS = (T.FLOAT32, T.VEC2F, T.VEC3F, T.VEC4F)


def draw(ctx, t, force: bool = False) -> Expr | None:
    """A draw of type ``t`` from the kernel's random stream (its variable is ``ctx.rand_state``)."""
    state = getattr(ctx, "rand_state", None)
    rng = ctx.rng
    if state is None or (rng.random() < 0.3 and not force):
        return None
    if t == T.FLOAT32:
        kind = rng.choice(("randf", "randf2", "randn", "noise", "pnoise", "noise"))
        if kind == "randf":
            return E.call("randf", [state], t, bound=1.0)
        if kind == "randf2":
            lo = E.lit(rng, t, -2.0, 0.0)
            hi = E.lit(rng, t, 0.5, 2.0)
            return E.call("randf", [state, lo, hi], t, bound=2.0)
        if kind == "randn":
            return E.call("randn", [state], t, bound=8.0)
        if kind == "noise":
            pos = E.fit(rng, E.gen(ctx, rng.choice(NOISE_POS), ctx.max_depth - 1), 100.0)
            return E.call("noise", [state, pos], t, bound=2.0)
        pos = E.fit(rng, E.gen(ctx, T.VEC2F, ctx.max_depth - 1), 100.0)
        periods = [E.const(T.INT32, rng.randint(1, 8)) for _ in range(2)]
        return E.call("pnoise", [state, pos, *periods], t, bound=2.0)
    if t == T.INT32:
        lo = rng.randint(-8, 0)
        return E.call("randi", [state, E.const(t, lo), E.const(t, lo + rng.randint(1, 16))], t, bound=24.0)
    if t == T.UINT32:
        if rng.random() < 0.5:
            return E.call("randu", [state], t, bound=4.3e9)
        lam = E.fit(rng, E.call("abs", [E.gen(ctx, T.FLOAT32, ctx.max_depth - 1)], T.FLOAT32), 10.0)
        return E.call("poisson", [state, lam], t, bound=100.0)
    if t in SAMPLES:
        if t == T.VEC3F and rng.random() < 0.3:
            pos = E.fit(rng, E.gen(ctx, rng.choice((T.VEC2F, T.VEC3F, T.VEC4F)), ctx.max_depth - 1), 100.0)
            ret = T.VEC2F if pos.type == T.VEC2F else T.VEC3F
            if ret == t:
                return E.call("curlnoise", [state, pos], t, bound=50.0)
        return E.call(rng.choice(SAMPLES[t]), [state], t, bound=1.0)
    return None


@register("random", 1.0)
def random_kernel(rng, name, suffix, complexity):
    profile = Profile({T.FLOAT32: 4, T.VEC3F: 2, T.VEC2F: 1, T.INT32: 1, T.UINT32: 0.3}, (T.FLOAT32, T.VEC3F, T.VEC2F),
                      weights={"for": 0.5})
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    if rng.random() < 0.6:
        seed = kb.param("scalar", T.INT32, "in", ndim=0, value_range=(0.0, 1000.0)).name
    else:
        seed = str(rng.randint(0, 10000))
    offset = kb.tids[0] if kb.ndim == 1 else " + ".join(kb.tids)
    roll = rng.random()
    if roll < 0.6:
        args = [seed, offset]
    elif roll < 0.8:
        args = [seed, f"{offset} * {rng.randint(2, 9)} + {rng.randint(1, 64)}"]
    else:  # one stream per thread from a single seed
        args = [f"{seed} + {offset} * {rng.randint(1000, 9999)}"]
    state = kb.fresh("rng")
    init = Expr(f"wp.rand_init({', '.join(args)})", T.UINT32, 4.3e9, "call", "rand_init")
    kb.readonly.add(state)
    kb.ctx.rand_state = E.var(state, T.UINT32, 4.3e9)
    kb.ctx.readers += [draw, draw]
    pre = [Assign(state, init)]
    for _ in range(rng.randint(1, 2)):  # the stream is always drawn from
        t = rng.choice((T.FLOAT32, T.FLOAT32, T.VEC3F, T.VEC2F, T.INT32))
        value = draw(kb.ctx, t, force=True)
        name = kb.fresh("r")
        kb.declare(name, value)
        pre.append(Assign(name, value))
    standard(kb)
    kb.body = pre + kb.body
    return kb
