"""Pattern family of reductions with atomics: sums, extrema, counts and stream compaction,
histograms, bounding boxes, per-segment and per-row sums, and grid-stride loops. See
``patterns`` for how a pattern family is written. What it leaves out: reductions with tiles
(``tile``) and neighbour sums over particles (``patterns_fluids``, ``patterns_geometry``).
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder
from jit.code.synthesis.types import WType
from jit.code.synthesis.categories.patterns import Pattern, flavour, launch_size


VALUE_WORDS = {"kinetic": "kinetic energies", "square": "squared values", "error": "squared errors against a target",
               "abs_error": "absolute errors against a target", "length": "vector lengths", "plain": "values",
               "distance": "distances from a reference point"}
LOCALS = {"kinetic": "energy", "square": "sq", "error": "err_sq", "abs_error": "abs_err", "length": "length",
          "plain": "value", "distance": "dist"}  # each item's value, named for what it holds


def reduced_value(p: Pattern, two_d: bool) -> tuple[str, str]:
    """Lines computing each thread's value (``tid`` or ``i, j``); (its local, what it is in words)."""
    rng, fl = p.rng, p.fl
    at = "i, j" if two_d else "tid"
    nd = 2 if two_d else 1
    kind = rng.choice(("kinetic", "square", "error", "length", "plain") if not two_d else ("square", "error", "plain"))
    if kind == "kinetic":
        v = p.array(rng.choice(("velocities", "particle_v")), fl.vec)
        m = p.array(rng.choice(("masses", "particle_mass")), fl.scalar, lo=0.5, hi=2.0)
        p.add(f"v = {v}[tid]")
        p.add(f"energy = {fl.lit(0.5)} * {m}[tid] * " + p.pick("wp.dot(v, v)", "wp.length_sq(v)"))
    elif kind == "length":
        x = p.array(rng.choice(("positions", "points")), fl.vec)
        if p.coin(0.4):  # distance from a reference point
            origin = p.scalar(rng.choice(("origin", "center")), fl.vec)
            kind = "distance"
            p.add(f"dist = {p.length(f'{x}[tid] - {origin}')}")
        else:
            p.add(f"length = {p.length(f'{x}[tid]')}")
    elif kind == "error":
        a = p.array(rng.choice(("predicted", "values", "field")), fl.scalar, ndim=nd)
        b = p.array(rng.choice(("target", "reference", "expected")), fl.scalar, ndim=nd)
        if p.coin():
            p.add(f"diff = {a}[{at}] - {b}[{at}]", "err_sq = diff * diff")
        else:
            kind = "abs_error"
            p.add(f"abs_err = wp.abs({a}[{at}] - {b}[{at}])")
    elif kind == "square":
        a = p.array(rng.choice(("values", "field", "residual")), fl.scalar, ndim=nd)
        p.add(*p.pick([f"value = {a}[{at}]", "sq = value * value"], [f"sq = {a}[{at}] * {a}[{at}]"]))
    else:
        a = p.array(rng.choice(("values", "data", "samples")), fl.scalar, ndim=nd)
        p.add(f"value = {a}[{at}]")
    local = LOCALS[kind]
    if not two_d and kind != "kinetic" and p.chance(0.2):  # a per-sample weight (a kinetic energy has its mass)
        w = p.array(rng.choice(("weights", "sample_weights")), fl.scalar, lo=0.0, hi=1.0)
        p.add(f"{local} = {local} * {w}[tid]")
        return local, "weighted " + VALUE_WORDS[kind]
    return local, VALUE_WORDS[kind]


# what an extreme of one kind of value is called (plain values: reduce_max, find_max)
EXTREME_NOUNS = {"energy": ("kinetic_energy", "energy"), "sq": ("squared", "magnitude_sq", "square"),
                 "err_sq": ("squared_error", "sq_error"), "abs_err": ("abs_error", "absolute_error"),
                 "length": ("length", "vector_length"), "dist": ("distance", "dist")}


# what a sum of one kind of value is called: its kernel's names and its output's
SUM_NAMES = {"energy": (("sum_kinetic_energy", "total_kinetic_energy", "compute_kinetic_energy"),
                        ("kinetic_energy", "total_energy", "energy_sum")),
             "sq": (("sum_squares", "sum_of_squares", "squared_norm"), ("sum_sq", "norm_sq", "total")),
             "length": (("sum_lengths", "sum_vector_lengths"), ("total_length", "length_sum")),
             "dist": (("sum_distances", "accumulate_distances"), ("total_distance", "distance_sum")),
             "value": (("reduce_sum", "sum_values", "sum_array"), ("total", "result", "total_sum"))}


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
        p.guard("tid", None, (rng.choice(("n", "num_values", "num_items")), p.kb.dims[0]), p=0.1)
    masked = ""  # which items count, for the purpose: all of them, or those the mask keeps
    if kind not in ("histogram", "bounds") and p.chance(0.3) and not two_d:
        mask = p.array(rng.choice(("active", "mask", "flags")), T.INT32, lo=0, hi=1)
        p.add(f"if {mask}[tid] == 0:", f"{INDENT}return")
        masked = f"whose {mask} entry is nonzero"
    if kind == "histogram":
        return _histogram(p)
    if kind == "bounds":
        x = p.array(rng.choice(("positions", "points", "vertices")), T.VEC3F if not fl.f64 else T.VEC3D)
        lo_name, hi_name = rng.choice((("lower", "upper"), ("bounds_min", "bounds_max"), ("box_lower", "box_upper")))
        lower = p.array(lo_name, x_type(p), "inout", shape=(1,))
        upper = p.array(hi_name, x_type(p), "inout", shape=(1,))
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
        # named for the values it reduces: a plain find_max holds the maximum of the values themselves
        nouns = EXTREME_NOUNS.get(value)
        if words.startswith("weighted"):
            nouns = tuple(f"weighted_{noun}" for noun in nouns or ("value",))
        outs = (f"{extreme}_{nouns[0]}", "result", f"global_{extreme}") if nouns else \
            (f"{extreme}_value", "result", f"global_{extreme}")
        out = p.array(rng.choice(outs), fl.scalar, "inout", shape=(1,))
        p.add(f"wp.{fn}({out}, 0, {value})")
        of = f" of the items {masked}" if masked else ""
        bases = tuple(f"{extreme}_{noun}" for noun in nouns) + (f"find_{extreme}_{nouns[0]}",) if nouns else \
            (f"reduce_{extreme}", f"find_{extreme}", f"{extreme}_reduce")
        return p.finish(rng.choice(bases), p.kb.dims,
                        purpose=f"Reduce the {words}{of} to their {'maximum' if extreme == 'max' else 'minimum'} "
                                "with an atomic, on top of what the output holds",
                        differentiable=False)
    if kind == "count":
        names = ("threshold", "cutoff", "limit")  # a cut-off, not a tolerance
        if "squared" in words:  # compared with a square: the threshold is one too
            names = tuple(f"{n}_sq" for n in names)
        threshold = p.scalar(rng.choice(names), lo=0.0, hi=2.0)
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
            also = f"{masked} and " if masked else ""
            return p.finish(rng.choice(("compact", "select_active", "stream_compact")), p.kb.dims,
                            purpose=f"Stream-compact the indices of items {also}whose {words} exceed {threshold}, "
                                    "taking slots from an atomic counter",
                            differentiable=False)
        p.add(f"if {test}:", f"{INDENT}wp.atomic_add({count}, 0, 1)")
        also = f"{masked} and " if masked else ""
        return p.finish(rng.choice(("count_above", "count_active", "threshold_count")), p.kb.dims,
                        purpose=f"Count the items {also}whose {words} exceed {threshold}", differentiable=False)
    if kind == "segment":
        n_seg = rng.randint(2, 8)
        key, total, owner, bases = rng.choice((
            ("segment_ids", "segment_sums", "segment", ("segmented_sum", "reduce_by_key", "accumulate_segments")),
            ("body_index", "body_totals", "body", ("sum_per_body", "accumulate_body_totals")),
            ("cluster_ids", "cluster_sums", "cluster", ("sum_per_cluster", "accumulate_clusters"))))
        seg = p.array(key, T.INT32, lo=0, hi=n_seg - 1)
        sums = p.array(total, fl.scalar, "out", shape=(n_seg,))
        p.add(f"wp.atomic_add({sums}, {seg}[tid], {value})")
        of = f" of the items {masked}" if masked else ""
        return p.finish(rng.choice(bases), p.kb.dims,
                        purpose=f"Sum the {words}{of} per {owner}, keyed by each item's {owner} id")
    if kind == "rows":
        sums = p.array(rng.choice(("row_sums", "totals")), fl.scalar, "out", shape=(p.kb.dims[0],))
        p.add(f"wp.atomic_add({sums}, i, {value})" if rng.random() < 0.5 else f"{sums}[i] += {value}")
        return p.finish(rng.choice(("sum_rows", "row_reduce", "reduce_rows")), p.kb.dims,
                        purpose=f"Sum the {words} of each row of a 2-D array into one entry per row")
    if "error" in words:  # named for the errors it sums: squared or absolute
        names, totals = (("sum_squared_error", "squared_error_sum", "compute_sse"), ("sse", "sum_sq_error", "loss")) \
            if "squared" in words else \
            (("sum_abs_error", "sum_absolute_errors", "l1_error_sum"), ("abs_error_sum", "total_abs_error", "loss"))
    else:
        names, totals = SUM_NAMES[value]
    if value == "value" and masked:  # a sum of plain values says the mask that picks them
        names = ("masked_sum", "sum_masked", "masked_reduce_sum")
    elif value == "value" and words.startswith("weighted"):
        names = ("weighted_sum", "sum_weighted")
    total = p.array(rng.choice(totals), fl.scalar, "out", shape=(1,))
    p.add(f"wp.atomic_add({total}, 0, {value})" if rng.random() < 0.6 else f"{total}[0] += {value}")
    return p.finish(rng.choice(names), p.kb.dims,
                    purpose=f"Sum the {words} over {f'the items {masked}' if masked else 'all items'} into one value "
                            "with an atomic add")


def _strided_sum(p: Pattern) -> KernelBuilder:
    """A grid-stride loop: each thread sums every ``num_threads``-th item, then one atomic add per thread."""
    rng, fl = p.rng, p.fl
    n = p.kb.dims[0]
    items = n * rng.choice((2, 4, 8))
    data = p.array(rng.choice(("values", "data", "samples")), fl.scalar, shape=(items,))
    threads = p.count(rng.choice(("num_threads", "stride")), n)  # the launch size: wp.tid() counts up to it
    zero = fl.lit(0.0) if fl.f64 else "float(0.0)"
    p.add(f"s = {zero}")
    kind = p.pick("sum", "sq", "abs", "max", "length")
    if kind == "length":  # vectors: the sum of their lengths (the scalar array above goes unused, and is dropped)
        data = p.array(rng.choice(("vectors", "displacements")), fl.vec, shape=(items,))
    term = {"sum": f"{data}[k]", "sq": f"{data}[k] * {data}[k]", "abs": f"wp.abs({data}[k])",
            "max": f"wp.abs({data}[k])", "length": p.length(f"{data}[k]")}[kind]
    accumulate = f"s = wp.max(s, {term})" if kind == "max" else f"s += {term}"
    p.add(f"for k in range(tid, {data}.shape[0], {threads}):", f"{INDENT}{accumulate}")
    mean = kind != "max" and p.coin(0.3)  # the mean: every thread adds its share
    names = {"max": ("max_abs", "result"), "sq": ("norm_sq", "total", "result")}.get(kind, ("total", "result"))
    means = {"sum": ("mean", "average"), "sq": ("mean_square", "mean_sq"), "abs": ("mean_abs", "mean_magnitude"),
             "length": ("mean_length", "average_length")}
    total = p.array(rng.choice(means[kind] if mean else names), fl.scalar, "out", shape=(1,))
    what = {"sum": "values", "sq": "squared values", "abs": "absolute values", "max": "largest absolute value",
            "length": "vector lengths"}[kind]
    if kind == "max":  # absolute values are never negative: a zeroed output is a valid start
        p.add(f"wp.atomic_max({total}, 0, s)")
        purpose = f"Find the {what} of an array with a grid-stride loop and one atomic max per thread"
    elif mean:
        p.add(f"wp.atomic_add({total}, 0, s / {fl.s}({data}.shape[0]))")
        purpose = f"Average the {what} of an array with a grid-stride loop and one atomic add per thread"
    else:
        p.add(f"wp.atomic_add({total}, 0, s)")
        purpose = f"Sum the {what} of an array with a grid-stride loop and one atomic add per thread"
    if p.chance(0.3):
        partial = p.array(rng.choice(("partial_max", "per_thread_max") if kind == "max" else ("partial_sums", "per_thread")),
                          fl.scalar, "out")
        p.add(f"{partial}[tid] = s")
        p.note("writes each thread's partial result too")  # another output: always said
    if kind == "max":
        base = ("strided_max_abs", "grid_stride_max", "reduce_max_strided")
    elif mean:  # named for what it averages
        base = (f"strided_{means[kind][0]}", f"grid_stride_{means[kind][0]}")
    else:  # named for what it sums
        base = {"sum": ("strided_sum", "grid_stride_reduce", "reduce_strided"),
                "sq": ("sum_of_squares", "strided_sum_squares", "grid_stride_norm_sq"),
                "abs": ("sum_abs", "strided_abs_sum"), "length": ("sum_lengths", "strided_length_sum")}[kind]
    return p.finish(rng.choice(base), p.kb.dims, purpose=purpose,
                    differentiable=kind != "max")


def x_type(p: Pattern) -> WType:
    return T.VEC3D if p.fl.f64 else T.VEC3F


def _histogram(p: Pattern) -> KernelBuilder:
    rng, fl = p.rng, p.fl
    bins = rng.choice((4, 8, 16, 32))
    if p.coin(0.3):  # a histogram of speeds
        vel = p.array(rng.choice(("velocities", "particle_v")), fl.vec if fl.dim == 3 else x_type(p), lo=-1.0, hi=1.0)
        p.add(f"speed = {p.length(f'{vel}[tid]')}")
        value = "speed"
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
    what = "speeds" if value == "speed" else "values"
    return p.finish(rng.choice(("histogram", "bin_values", "count_bins")), p.kb.dims,
                    purpose=f"Count {what} into the bins of a histogram with atomic adds", differentiable=False)
