"""Pattern families of particle fluids and reductions: SPH density and forces over all pairs, and
reductions with atomics (sums, extrema, histograms, grid-stride loops). ``poly6`` and the pair
loops are shared with the neighbour-query families (``patterns_geometry``). See ``patterns`` for
how a pattern family is written.
"""

from __future__ import annotations


from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder
from jit.code.synthesis.types import WType
from jit.code.synthesis.categories.patterns import Pattern, flavour, launch_size


# ---------------------------------------------------------------------------------------------
# SPH


def poly6(p: Pattern) -> str:
    """The poly6 smoothing kernel (density) as a ``@wp.func``; returns its name."""
    fl, s = p.fl, p.fl.s
    name = p.name(p.rng.choice(("poly6", "density_kernel", "w_poly6")))
    cube = p.rng.random() < 0.5
    body = "q = h * h - r2\n    return q * q * q" if cube else "return wp.pow(h * h - r2, " + fl.lit(3.0) + ")"
    p.func(f"""
@wp.func
def {name}(r2: {s}, h: {s}):
    if r2 >= h * h:
        return {fl.lit(0.0)}
    {body}
""")
    return name


def force_kernels(p: Pattern, viscous: bool) -> dict[str, str]:
    """Spiky gradient (pressure) and, if wanted, the viscosity Laplacian as ``@wp.func``.

    The gradient is taken at particle i for ``d = x_i - x_j``: the kernel falls off with distance,
    so the gradient points from i towards j (along ``-d``).
    """
    fl, s, v = p.fl, p.fl.s, p.fl.v
    names = {k: p.name(k) for k in ("spiky_grad", "visc_laplacian")}
    zero = f"{v}()" if p.coin() else f"{v}({', '.join([fl.lit(0.0)] * fl.dim)})"
    if p.coin():
        test = [f"if r >= h or r < {fl.lit(1.0e-6)}:", f"{INDENT}return {zero}"]
    else:
        test = ["if r >= h:", f"{INDENT}return {zero}", f"r = wp.max(r, {fl.lit(1.0e-6)})"]
    shape = p.pick(["q = h - r", "return d * (-q * q / r)"], ["return d * (-(h - r) * (h - r) / r)"],
                   ["q = h - r", "return wp.normalize(d) * (-q * q)" if not fl.f64 else "return d / r * (-q * q)"])
    if p.chance(0.3):  # with the normalisation constant 45 / (pi h^6)
        shape[-1] += f" * ({fl.lit(45.0)} / ({fl.lit('wp.pi')} * wp.pow(h, {fl.lit(6.0)})))"
    body = "\n".join(INDENT + line for line in test + shape)
    p.func(f"@wp.func\ndef {names['spiky_grad']}(d: {v}, r: {s}, h: {s}):\n{body}\n")
    if viscous:
        lap = p.pick(f"wp.max(h - r, {fl.lit(0.0)})", f"wp.where(r < h, h - r, {fl.lit(0.0)})")
        p.func(f"@wp.func\ndef {names['visc_laplacian']}(r: {s}, h: {s}):\n{INDENT}return {lap}\n")
    return names


@register("sph", 1.0, source="patterns")
def sph(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.15)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [rng.choice((16, 32, 64))]
    x = p.array(rng.choice(("positions", "particle_x", "x")), fl.vec, lo=-1.0, hi=1.0)
    h = p.scalar(rng.choice(("smoothing_length", "kernel_radius", "h")), lo=0.2, hi=0.8)
    if rng.random() < 0.5:
        n = f"{x}.shape[0]"
    else:
        n = p.count("num_particles", p.kb.dims[0])
        if p.chance(0.4):
            p.add(f"if tid >= {n}:", f"{INDENT}return")
    if p.coin(0.3):
        masses = p.array(rng.choice(("masses", "particle_mass")), fl.scalar, lo=0.5, hi=2.0)
        mass = f"{masses}[j]"
    else:
        mass = p.scalar(rng.choice(("particle_mass", "mass")), lo=0.5, hi=2.0)
    if rng.random() < 0.45:
        return _sph_density(p, x, h, n, mass)
    return _sph_forces(p, x, h, n, mass)


def pair_loop(p: Pattern, n: str, body: list[str], skip_self: bool) -> bool:
    """All-pairs loop over particles ``j``: ``for`` over a range, or ``while`` with a counter.

    Returns True for the ``while`` form (Warp does not differentiate it). A ``while`` body never
    uses ``continue`` (the counter would not advance) nor ``return``.
    """
    if p.coin(0.3):
        p.add("j = int(0)", f"while j < {n}:")
        if skip_self:
            p.add("if j != tid:", indent=1)
            p.add(*body, indent=2)
        else:
            p.add(*body, indent=1)
        p.add("j += 1", indent=1)
        return True
    p.add(f"for j in range({n}):")
    loop_body(p, body, "j", "tid", skip_self)
    return False


def loop_body(p: Pattern, body: list[str], other: str, me: str, skip_self: bool) -> None:
    """A neighbour loop's body; with ``skip_self`` the item itself is left out, by a ``continue``
    or by a wrapping ``if`` (only for ``for`` loops: a ``while`` counter must always advance)."""
    if skip_self and p.coin():
        p.add(f"if {other} == {me}:", f"{INDENT}continue", *body, indent=1)
    elif skip_self:
        p.add(f"if {other} != {me}:", indent=1)
        p.add(*body, indent=2)
    else:
        p.add(*body, indent=1)


def _sph_density(p: Pattern, x: str, h: str, n: str, mass: str) -> KernelBuilder:
    fl, rng = p.fl, p.rng
    p.add(f"xi = {x}[tid]", f"rho = {fl.lit(0.0) if fl.f64 else 'float(0.0)'}")
    if p.coin(0.6):
        kernel = poly6(p)
        body = [f"d = xi - {x}[j]", f"rho += {mass} * {kernel}(wp.dot(d, d), {h})"]
    else:  # the kernel inline, with its cutoff test
        body = [f"r2 = wp.length_sq(xi - {x}[j])", f"if r2 < {h} * {h}:", f"{INDENT}q = {h} * {h} - r2",
                f"{INDENT}rho += {mass} * q * q * q"]
    looped = pair_loop(p, n, body, skip_self=False)
    if p.chance(0.35):  # poly6 normalisation 315 / (64 pi h^9)
        p.add(f"rho = rho * {fl.lit(315.0)} / ({fl.lit(64.0)} * {fl.lit('wp.pi')} * wp.pow({h}, {fl.lit(9.0)}))")
        p.note("applies the poly6 normalisation 315 / (64 pi h^9)")
    densities = p.array(rng.choice(("densities", "particle_rho", "density")), fl.scalar, "out")
    if p.chance(0.5):
        rest = p.scalar(rng.choice(("rest_density", "rho0")), lo=0.5, hi=2.0)
        stiffness = p.scalar(rng.choice(("stiffness", "gas_constant")), lo=1.0, hi=10.0)
        pressures = p.array(rng.choice(("pressures", "particle_p")), fl.scalar, "out")
        eos = p.pick("linear", "clamped", "tait")
        if eos == "tait":  # weakly compressible: k ((rho / rho0)^7 - 1)
            value = f"{stiffness} * (wp.pow(rho / {rest}, {fl.lit(7.0)}) - {fl.lit(1.0)})"
        else:
            value = f"{stiffness} * (rho - {rest})"
            value = f"wp.max({value}, {fl.lit(0.0)})" if eos == "clamped" else value
        p.add(f"{pressures}[tid] = {value}")
        p.note("derives the pressure from a " + {"tait": "Tait", "linear": "linear",
                                                   "clamped": "linear, non-negative"}[eos] + " equation of state")
    p.add(f"{densities}[tid] = rho")
    return p.finish(rng.choice(("compute_density", "sph_density", "update_density")), p.kb.dims,
                    purpose="Sum the SPH density of each particle over all particles within the poly6 kernel radius",
                    differentiable=not looped)


def _sph_forces(p: Pattern, x: str, h: str, n: str, mass: str) -> KernelBuilder:
    rng, fl = p.rng, p.fl
    rho = p.array(rng.choice(("densities", "particle_rho")), fl.scalar, lo=0.5, hi=2.0)
    press = p.array(rng.choice(("pressures", "particle_p")), fl.scalar, lo=0.0, hi=5.0)
    viscous = p.chance(0.6)
    k = force_kernels(p, viscous)
    p.add(f"xi = {x}[tid]", f"pi = {press}[tid]", f"f = {fl.v}()")
    symmetric = p.coin()  # p_i / rho_i^2 + p_j / rho_j^2 (momentum-conserving) or the averaged pressure
    if symmetric:
        p.add(f"rhoi = {rho}[tid]", "pi_term = pi / (rhoi * rhoi)")
    if viscous:
        v = p.array(rng.choice(("velocities", "particle_v")), fl.vec)
        mu = p.scalar(rng.choice(("viscosity", "mu")), lo=0.0, hi=0.5)
        p.add(f"vi = {v}[tid]")
    body = [f"d = xi - {x}[j]", f"r = {p.length('d')}"]
    if symmetric:
        body.append(f"f -= {k['spiky_grad']}(d, r, {h}) * ({mass} * (pi_term + {press}[j] / ({rho}[j] * {rho}[j])))")
    else:
        body.append(f"f -= {k['spiky_grad']}(d, r, {h}) * ({mass} * (pi + {press}[j]) / ({fl.lit(2.0)} * {rho}[j]))")
    # in the symmetric form f is already an acceleration: the viscous term is divided by rho_i too
    rho_ij = f"(rhoi * {rho}[j])" if symmetric else f"{rho}[j]"
    if viscous and p.coin(0.3):  # Monaghan's artificial viscosity, only for approaching pairs
        p.why("Monaghan's 0.01 h^2 keeps the term finite as r -> 0")
        p.add(f"eta_sq = {fl.lit(0.01)} * {h} * {h}")
        body += [f"vij = vi - {v}[j]", "vr = wp.dot(vij, d)", f"if vr < {fl.lit(0.0)}:",
                 f"{INDENT}nu = {mu} * {h} * vr / (r * r + eta_sq)",
                 f"{INDENT}f += {k['spiky_grad']}(d, r, {h}) * ({mass} * nu / {rho_ij})"]
        p.note("adds Monaghan's artificial viscosity for approaching pairs")
    elif viscous:
        body.append(f"f += ({v}[j] - vi) * ({mu} * {mass} * {k['visc_laplacian']}(r, {h}) / {rho_ij})")
        p.note("adds Mueller's viscosity force")
    if p.coin(0.3):  # the cutoff in the loop, so far pairs cost one length
        body = body[:2] + [f"if r < {h}:"] + [INDENT + b for b in body[2:]]
    pair_loop(p, n, body, skip_self=True)
    acc = "f" if symmetric else f"f / {rho}[tid]"
    if p.chance(0.5):
        acc += " + " + fl.up("y", p.scalar("gravity", lo=-9.8, hi=-1.0))
    if viscous and p.chance(0.35):  # integrate right away: symplectic Euler on the velocity
        dt = p.scalar("dt", lo=0.001, hi=0.01)
        v_out = p.array(rng.choice(("velocities_out", "v_new")), fl.vec, "out")
        p.add(f"a = {acc}", f"{v_out}[tid] = vi + a * {dt}")
        p.note("steps the velocity by the acceleration right away")
    else:
        out = p.array(rng.choice(("accelerations", "particle_a")), fl.vec, "out")
        p.add(f"{out}[tid] = {acc}")
    form = "symmetric (momentum-conserving)" if symmetric else "averaged"
    # Warp's adjoint of this dynamic neighbour loop disagrees with finite differences: no gradient check
    return p.finish(rng.choice(("compute_forces", "sph_forces", "pressure_and_viscosity")), p.kb.dims,
                    purpose=f"Compute each SPH particle's acceleration from the {form} pressure gradient "
                            "with the spiky kernel, over all particles",
                    differentiable=False)


# ---------------------------------------------------------------------------------------------
# reductions with atomics


VALUE_WORDS = {"kinetic": "kinetic energies", "square": "squared values", "error": "errors against a target",
               "length": "vector lengths", "plain": "values", "distance": "distances from a reference point"}


def reduced_value(p: Pattern, two_d: bool) -> tuple[str, str]:
    """Lines computing ``value`` for thread ``tid`` (or ``i, j``); (expression, what it is in words)."""
    rng, fl = p.rng, p.fl
    at = "i, j" if two_d else "tid"
    nd = 2 if two_d else 1
    kind = rng.choice(("kinetic", "square", "error", "length", "plain") if not two_d else ("square", "error", "plain"))
    if kind == "kinetic":
        v = p.array(rng.choice(("velocities", "particle_v")), fl.vec)
        m = p.array(rng.choice(("masses", "particle_mass")), fl.scalar, lo=0.5, hi=2.0)
        p.add(f"v = {v}[tid]")
        p.add(f"value = {fl.lit(0.5)} * {m}[tid] * " + p.pick("wp.dot(v, v)", "wp.length_sq(v)"))
    elif kind == "length":
        x = p.array(rng.choice(("positions", "points")), fl.vec)
        if p.coin(0.4):  # distance from a reference point
            origin = p.array(rng.choice(("origin", "center")), fl.vec, shape=(1,))
            p.add(f"value = {p.length(f'{x}[tid] - {origin}[0]')}")
            kind = "distance"
        else:
            p.add(f"value = {p.length(f'{x}[tid]')}")
    elif kind == "error":
        a = p.array(rng.choice(("predicted", "values", "field")), fl.scalar, ndim=nd)
        b = p.array(rng.choice(("target", "reference", "expected")), fl.scalar, ndim=nd)
        p.add(f"diff = {a}[{at}] - {b}[{at}]", p.pick("value = diff * diff", "value = wp.abs(diff)"))
        kind = "error"
    elif kind == "square":
        a = p.array(rng.choice(("values", "field", "residual")), fl.scalar, ndim=nd)
        p.add(*p.pick([f"r = {a}[{at}]", "value = r * r"], [f"value = {a}[{at}] * {a}[{at}]"]))
    else:
        a = p.array(rng.choice(("values", "data", "weights")), fl.scalar, ndim=nd)
        p.add(f"value = {a}[{at}]")
    if not two_d and p.chance(0.2):  # a per-item weight
        w = p.array(rng.choice(("item_weights", "scale_factors")), fl.scalar, lo=0.0, hi=1.0)
        p.add(f"value = value * {w}[tid]")
        return "value", "weighted " + VALUE_WORDS[kind]
    return "value", VALUE_WORDS[kind]


@register("atomic_reduction", 1.0, source="patterns")
def atomic_reduction(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.3, dim2=0.2)
    p = Pattern(rng, name, suffix, complexity, fl)
    kind = rng.choice(("sum", "sum", "max", "histogram", "count", "segment", "rows", "bounds", "strided"))
    two_d = kind == "rows"
    p.kb.dims = [rng.randint(2, 8), rng.randint(4, 16)] if two_d else [launch_size(rng)]
    if kind == "strided":
        return _strided_sum(p)
    if not two_d:
        p.guard("tid", None, (rng.choice(("n", "count_total", "num_items")), p.kb.dims[0]), p=0.2)
    if kind not in ("histogram", "bounds") and p.chance(0.3) and not two_d:
        mask = p.array(rng.choice(("active", "mask", "flags")), T.INT32, lo=0, hi=1)
        p.add(f"if {mask}[tid] == 0:", f"{INDENT}return")
        p.note(f"skips items whose {mask} entry is 0")
    if kind == "histogram":
        return _histogram(p)
    if kind == "bounds":
        x = p.array(rng.choice(("positions", "points", "vertices")), T.VEC3F if not fl.f64 else T.VEC3D)
        lower = p.array(rng.choice(("lower", "bounds_min", "box_lower")), x_type(p), "inout", shape=(1,))
        upper = p.array(rng.choice(("upper", "bounds_max", "box_upper")), x_type(p), "inout", shape=(1,))
        p.add(f"x = {x}[tid]")
        if p.chance(0.35):  # particles have a size: grow the box by their radius
            if p.coin():
                r = f"{p.array(rng.choice(('radii', 'particle_radius')), fl.scalar, lo=0.0, hi=0.2)}[tid]"
            else:
                r = p.scalar(rng.choice(("radius", "margin")), lo=0.0, hi=0.2)
            ext = f"{p.fl.spell(x_type(p))}({r}, {r}, {r})"
            p.add(f"wp.atomic_min({lower}, 0, x - {ext})", f"wp.atomic_max({upper}, 0, x + {ext})")
            p.note("grows the box by each point's radius")
        else:
            p.add(*p.pick([f"wp.atomic_min({lower}, 0, x)", f"wp.atomic_max({upper}, 0, x)"],
                          [f"wp.atomic_max({upper}, 0, x)", f"wp.atomic_min({lower}, 0, x)"]))
        if p.chance(0.3):
            centre = p.array(rng.choice(("centroid_sum", "center_sum")), x_type(p), "out", shape=(1,))
            p.add(f"wp.atomic_add({centre}, 0, x)")
            p.note("sums the points for their centroid")
        return p.finish(rng.choice(("compute_bounds", "bounding_box", "reduce_bounds")), p.kb.dims,
                        purpose="Grow an axis-aligned bounding box over all points with atomic min and max",
                        differentiable=False)
    value, words = reduced_value(p, two_d)
    if kind == "max":
        fn = rng.choice(("atomic_max", "atomic_max", "atomic_min"))
        extreme = "max" if fn == "atomic_max" else "min"
        out = p.array(rng.choice((f"{extreme}_value", "result", "extreme")), fl.scalar, "inout", shape=(1,))
        p.add(f"wp.{fn}({out}, 0, {value})")
        return p.finish(rng.choice((f"reduce_{extreme}", "find_extreme", f"{extreme}_reduce")), p.kb.dims,
                        purpose=f"Reduce the {words} to their {'maximum' if extreme == 'max' else 'minimum'} "
                                "with an atomic, on top of what the output holds",
                        differentiable=False)
    if kind == "count":
        threshold = p.scalar(rng.choice(("threshold", "tolerance", "limit")), lo=0.0, hi=2.0)
        count = p.array(rng.choice(("count", "num_above", "counter")), T.INT32, "out", shape=(1,))
        signed = words.endswith(" values") and "squared" not in words  # the others are never negative
        test = f"{value} > {threshold}"
        if signed and p.coin():
            test = f"wp.abs({value}) > {threshold}"
        if test.startswith("wp.abs"):
            words = f"absolute {words}"
        if p.coin(0.4):  # stream compaction: the returned old count is this item's slot
            ids = p.array(rng.choice(("selected", "active_ids", "compacted")), T.INT32, "out",
                          shape=(p.kb.dims[0],))
            p.add(f"if {test}:", f"{INDENT}slot = wp.atomic_add({count}, 0, 1)", f"{INDENT}{ids}[slot] = tid")
            return p.finish(rng.choice(("compact", "select_active", "stream_compact")), p.kb.dims,
                            purpose=f"Stream-compact the indices of items whose {words} exceed {threshold}, "
                                    "taking slots from an atomic counter",
                            differentiable=False)
        p.add(f"if {test}:", f"{INDENT}wp.atomic_add({count}, 0, 1)")
        return p.finish(rng.choice(("count_above", "count_active", "threshold_count")), p.kb.dims,
                        purpose=f"Count the items whose {words} exceed {threshold}", differentiable=False)
    if kind == "segment":
        n_seg = rng.randint(2, 8)
        seg = p.array(rng.choice(("segment_ids", "body_index", "cluster")), T.INT32, lo=0, hi=n_seg - 1)
        sums = p.array(rng.choice(("segment_sums", "body_totals", "cluster_sums")), fl.scalar, "out", shape=(n_seg,))
        p.add(f"wp.atomic_add({sums}, {seg}[tid], {value})")
        return p.finish(rng.choice(("segmented_sum", "reduce_by_key", "accumulate_segments")), p.kb.dims,
                        purpose=f"Sum the {words} per segment, keyed by each item's segment id")
    if kind == "rows":
        sums = p.array(rng.choice(("row_sums", "row_norms", "totals")), fl.scalar, "out", shape=(p.kb.dims[0],))
        p.add(f"wp.atomic_add({sums}, i, {value})" if rng.random() < 0.5 else f"{sums}[i] += {value}")
        return p.finish(rng.choice(("sum_rows", "row_reduce", "reduce_rows")), p.kb.dims,
                        purpose=f"Sum the {words} of each row of a 2-D array into one entry per row")
    total = p.array(rng.choice(("total", "result", "energy", "loss")), fl.scalar, "out", shape=(1,))
    scale = p.scalar("scale", lo=0.1, hi=2.0) if p.chance(0.3) else None
    term = f"{value} * {scale}" if scale else value
    p.add(f"wp.atomic_add({total}, 0, {term})" if rng.random() < 0.6 else f"{total}[0] += {term}")
    scaled = f", scaled by {scale}," if scale else ""
    return p.finish(rng.choice(("reduce_sum", "sum_values", "accumulate")), p.kb.dims,
                    purpose=f"Sum the {words}{scaled} over all items into one value with an atomic add")


def _strided_sum(p: Pattern) -> KernelBuilder:
    """A grid-stride loop: each thread sums every ``num_threads``-th item, then one atomic add per thread."""
    rng, fl = p.rng, p.fl
    n = p.kb.dims[0]
    items = n * rng.choice((2, 4, 8))
    data = p.array(rng.choice(("values", "data", "samples")), fl.scalar, shape=(items,))
    threads = p.count(rng.choice(("num_threads", "stride")), n) if p.coin() else None
    zero = fl.lit(0.0) if fl.f64 else "float(0.0)"
    p.add(f"s = {zero}")
    kind = p.pick("sum", "sq", "abs", "max", "length")
    if kind == "length":  # vectors: the sum of their lengths (the scalar array above goes unused, and is dropped)
        data = p.array(rng.choice(("vectors", "displacements")), fl.vec, shape=(items,))
    term = {"sum": f"{data}[k]", "sq": f"{data}[k] * {data}[k]", "abs": f"wp.abs({data}[k])",
            "max": f"wp.abs({data}[k])", "length": p.length(f"{data}[k]")}[kind]
    accumulate = f"s = wp.max(s, {term})" if kind == "max" else f"s += {term}"
    if threads:
        p.add(f"for k in range(tid, {data}.shape[0], {threads}):", f"{INDENT}{accumulate}")
    else:  # the stride is the launch size: wp.tid() counts up to it
        count = p.count(rng.choice(("num_threads", "stride")), n)
        p.add("k = tid", f"while k < {data}.shape[0]:", f"{INDENT}{accumulate}", f"{INDENT}k += {count}")
    names = {"max": ("max_abs", "result"), "sq": ("norm_sq", "total", "result")}.get(kind, ("total", "result"))
    total = p.array(rng.choice(names), fl.scalar, "out", shape=(1,))
    what = {"sum": "values", "sq": "squared values", "abs": "absolute values", "max": "largest absolute value",
            "length": "vector lengths"}[kind]
    if kind == "max":  # absolute values are never negative: a zeroed output is a valid start
        p.add(f"wp.atomic_max({total}, 0, s)")
        purpose = f"Find the {what} of an array with a grid-stride loop and one atomic max per thread"
    elif p.coin(0.3):  # the mean: every thread adds its share
        p.add(f"wp.atomic_add({total}, 0, s / {fl.s}({data}.shape[0]))")
        purpose = f"Average the {what} of an array with a grid-stride loop and one atomic add per thread"
    else:
        p.add(f"wp.atomic_add({total}, 0, s)")
        purpose = f"Sum the {what} of an array with a grid-stride loop and one atomic add per thread"
    if p.chance(0.3):
        partial = p.array(rng.choice(("partial_sums", "per_thread")), fl.scalar, "out")
        p.add(f"{partial}[tid] = s")
        p.note("keeps each thread's partial result")
    return p.finish(rng.choice(("strided_sum", "grid_stride_reduce", "reduce_strided")), p.kb.dims, purpose=purpose,
                    differentiable=threads is not None and kind != "max")


def x_type(p: Pattern) -> WType:
    return T.VEC3D if p.fl.f64 else T.VEC3F


def _histogram(p: Pattern) -> KernelBuilder:
    rng, fl = p.rng, p.fl
    bins = rng.choice((4, 8, 16, 32))
    if p.coin(0.3):  # a histogram of speeds
        vel = p.array(rng.choice(("velocities", "particle_v")), fl.vec if fl.dim == 3 else x_type(p), lo=-1.0, hi=1.0)
        p.add(f"value = {p.length(f'{vel}[tid]')}")
        value = "value"
    else:
        value = f"{p.array(rng.choice(('values', 'samples', 'speeds')), fl.scalar, lo=-1.0, hi=3.0)}[tid]"
    counts = p.array(rng.choice(("histogram", "bin_counts", "counts")), T.INT32, "out", shape=(bins,))
    lo = p.scalar(rng.choice(("min_value", "lower")), lo=-1.0, hi=0.0)
    if p.coin():
        width = p.scalar(rng.choice(("bin_width", "bin_size")), lo=0.1, hi=0.5)
        p.why("floor, not int(): int() rounds towards zero and would put values just below the range in bin 0")
        p.add(f"b = int(wp.floor(({value} - {lo}) / {width}))")
    else:  # the range [lo, hi) split into as many bins as the histogram has
        hi = p.scalar(rng.choice(("max_value", "upper")), lo=3.0, hi=4.0)
        p.add(f"t = ({value} - {lo}) / ({hi} - {lo})", f"b = int(wp.floor(t * {fl.s}({counts}.shape[0])))")
    if rng.random() < 0.6:
        p.add(p.pick(f"b = wp.clamp(b, 0, {counts}.shape[0] - 1)", f"b = wp.min(wp.max(b, 0), {counts}.shape[0] - 1)"))
        p.note("puts values outside the range in the first or last bin")
    else:
        p.add(f"if b < 0 or b >= {counts}.shape[0]:", f"{INDENT}return")
        p.note("skips values outside the range")
    p.add(f"wp.atomic_add({counts}, b, 1)")
    if p.chance(0.3):  # and the per-bin sum, for bin means
        sums = p.array(rng.choice(("bin_sums", "bin_totals")), fl.scalar, "out", shape=(bins,))
        p.add(f"wp.atomic_add({sums}, b, {value})")
        p.note("sums the values per bin for bin means")
    what = "speeds" if value == "value" else "values"
    return p.finish(rng.choice(("histogram", "bin_values", "count_bins")), p.kb.dims,
                    purpose=f"Count {what} into the bins of a histogram with atomic adds", differentiable=False)
