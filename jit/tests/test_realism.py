"""Realism figures on hand-made kernels with known answers; the reference corpus and its census."""

from __future__ import annotations

import ast
import collections
import math
import textwrap

import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many
from jit.code.synthesis import census
from jit.code.analysis import realism
from jit.code.analysis import reference
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles


def src(text: str) -> str:
    return "import warp as wp\n\n" + textwrap.dedent(text)


ONE_DEAD_OF_FOUR = src("""
    @wp.kernel
    def scale(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        a = x[i]
        b = a * 2.0
        c = 1.0
        out[i] = b
""")

LOOPS_AND_TUPLES = src("""
    @wp.kernel(enable_backward=False)
    def total(out: wp.array(dtype=float), n: int):
        s = 0.0
        for j in range(3):
            s += 1.0
        lo, hi = 0, n
        _ = lo
        n = 2
        out[0] = s
""")


def test_dead_names_pool_stored_locals_over_kernels():
    assert realism.figures([ONE_DEAD_OF_FOUR], [ONE_DEAD_OF_FOUR])["dead_names"] == 0.25
    # total: s, j, lo, hi stored (n is a parameter, _ is ignored); j and hi never loaded
    pooled = realism.figures([ONE_DEAD_OF_FOUR, LOOPS_AND_TUPLES], [ONE_DEAD_OF_FOUR])
    assert pooled["dead_names"] == round((1 + 2) / (4 + 4), 4)
    assert pooled["kernels"] == 2 and pooled["reference_kernels"] == 1


def test_constant_tests_read_no_variable():
    tests = src("""
        @wp.kernel
        def branches(x: wp.array(dtype=float)):
            i = wp.tid()
            if 1.0 > 2.0:
                x[i] = 0.0
            elif False:
                x[i] = 1.0
            if x[i] > 0.0:
                x[i] = 2.0
            while wp.pi < 3.0:
                x[i] = 3.0
            x[i] = 1.0 if i > 0 else 2.0
    """)
    # five tests (if, elif, if, while, ternary); the first, the elif and the while read no variable
    assert realism.figures([tests], [tests])["constant_tests"] == 0.6


def test_generator_style_identifiers_are_letters_then_digits():
    named = src("""
        @wp.kernel
        def k(a1: wp.array(dtype=float), out: wp.array(dtype=float)):
            i = wp.tid()
            v2 = a1[i]
            pos = v2 + 1.0
            out[i] = pos
    """)
    # defined: a1, out, i, v2, pos; generator-style: a1, v2
    assert realism.figures([named], [named])["generator_style_identifiers"] == 0.4


def test_js_divergence_known_answers():
    same = collections.Counter(sin=3, cos=1)
    assert realism.js_divergence(same, collections.Counter(sin=6, cos=2)) == pytest.approx(0.0)
    assert realism.js_divergence(collections.Counter(sin=1), collections.Counter(cos=5)) == pytest.approx(1.0)
    # p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4)
    expected = 0.5 * math.log2(1 / 0.75) + 0.5 * (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25))
    assert realism.js_divergence(collections.Counter(a=2), collections.Counter(a=1, b=1)) == pytest.approx(expected)


def test_builtin_divergence_is_zero_for_the_same_calls_in_other_words():
    a = src("""
        @wp.kernel
        def k(x: wp.array(dtype=float)):
            i = wp.tid()
            x[i] = wp.sin(x[i]) + wp.cos(x[i])
    """)
    b = a.replace("def k", "def other").replace("x", "y")
    assert realism.figures([b], [a])["builtin_js_divergence"] == 0.0


def _kernel_text(source: str) -> str:
    return ast.get_source_segment(source, realism.kernel_defs(ast.parse(source))[0])


def test_nearest_neighbour_is_one_for_identical_kernels_and_the_mean_of_best_jaccards():
    assert realism.figures([ONE_DEAD_OF_FOUR], [ONE_DEAD_OF_FOUR])["nearest_neighbour_similarity"] == 1.0
    a, b = (frozenset(shingles(norm_tokens(_kernel_text(s)), 4)) for s in (ONE_DEAD_OF_FOUR, LOOPS_AND_TUPLES))
    got = realism.figures([ONE_DEAD_OF_FOUR], [ONE_DEAD_OF_FOUR, LOOPS_AND_TUPLES])["nearest_neighbour_similarity"]
    assert got == round((1.0 + jaccard(b, a)) / 2, 4)


def test_nearest_neighbour_index_matches_brute_force_on_real_kernels():
    seed = [frozenset(shingles(norm_tokens(k.source), 4)) for k in reference.kernels("seed")[:80]]
    measure = [frozenset(shingles(norm_tokens(k.source), 4)) for k in reference.kernels("measure")[:40]]
    brute = sum(max(jaccard(r, m) for m in seed) for r in measure) / len(measure)
    assert realism.nearest_neighbour(measure, seed) == pytest.approx(brute)


def test_idiom_labels_and_coverage():
    ref = src("""
        @wp.kernel
        def k(out: wp.array(dtype=float)):
            out[0] = wp.sin(1.0)
    """)
    fn = realism.kernel_defs(ast.parse(ref))[0]
    assert sorted(realism.idiom_pairs(fn)) == sorted(["Assign>Subscript", "Assign>wp.sin/1", "Subscript>Name",
                                                      "Subscript>Constant", "wp.sin/1>Constant"])
    call = ast.parse("wp.vec3(1.0, 2.0, z=3.0)").body[0].value
    assert realism.label(call) == "wp.vec3/3"
    assert realism.figures([ref], [ref])["idiom_coverage"] == 1.0
    literal = ref.replace("wp.sin(1.0)", "1.0")  # keeps Assign>Subscript, Subscript>Name, Subscript>Constant
    assert realism.figures([literal], [ref])["idiom_coverage"] == 0.6
    counts = collections.Counter({"If>Compare": 3, "For>Call": 1})
    assert realism.idiom_coverage(counts, collections.Counter({"If>Compare": 1})) == 0.75


def test_sampler_keeps_evenly_spaced_records_within_the_limit():
    records = [{"python_source": str(i)} for i in range(100)]
    sampler = realism.Sampler(limit=10)
    for r in records:
        sampler.add(r)
    kept = [int(s) for s in sampler.sources()]
    assert len(kept) <= 10 and kept == sorted(kept) and kept[0] == 0
    assert len({b - a for a, b in zip(kept, kept[1:])}) == 1  # one stride
    again = realism.Sampler(limit=10)
    assert list(again.watch(records)) == records and again.sources() == sampler.sources()


# ---------------------------------------------------------------------------------------------
# the reference corpus


def test_split_is_by_file_and_deterministic():
    files = reference.reference_files()
    halves = collections.Counter(reference.half_of(rel) for rel, _ in files)
    assert set(halves) == {"seed", "measure"} and min(halves.values()) > 0.35 * len(files)
    assert all(reference.half_of(rel) == reference.half_of(str(rel)) for rel, _ in files[:20])
    by_path = collections.defaultdict(set)
    for k in reference.kernels():
        by_path[k.path].add(k.half)
        assert k.half == reference.half_of(k.path)
    assert all(len(h) == 1 for h in by_path.values())
    assert len(reference.kernels("seed")) + len(reference.kernels("measure")) == len(reference.kernels())


def test_reference_sources_and_contexts_parse():
    ks = reference.kernels()
    assert len(ks) > 1000 and ks == sorted(ks, key=lambda k: (k.path, k.line))
    for k in ks:
        tree = ast.parse(k.context)
        assert realism.kernel_defs(ast.parse(k.source))[0].name == k.name
        assert tree.body[-1].name == k.name if k.self_contained else True
    assert reference.distribution()["license"] == reference.WARP_LICENSE != "unknown"


MODULE = '''
import math
import numpy as np
import warp as wp
from warp.tests.unittest_utils import helper

N = 4
SCALE = wp.constant(2.0 * N)
devices = helper()


@wp.struct
class Particle:
    x: wp.vec3


@wp.func
def twice(v: float):
    return v * SCALE


@wp.func
def unused(v: float):
    return v


@wp.kernel
def move(ps: wp.array(dtype=Particle), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = twice(ps[i].x[0]) + float(math.pi)


@wp.kernel
def leaks(out: wp.array(dtype=float)):
    out[0] = float(len(devices))


def make(k: float):
    @wp.kernel
    def closure(out: wp.array(dtype=float)):
        out[0] = k

    return closure
'''


def test_context_holds_what_the_kernel_uses_in_dependency_order():
    move, leaks, closure = reference.kernels_of(MODULE, "warp/tests/test_made_up.py")
    def_line = next(n for n, line in enumerate(MODULE.splitlines(), 1) if line.startswith("def move"))
    assert (move.name, move.module, move.line) == ("move", "warp.tests.test_made_up", def_line)
    assert move.self_contained and move.reason is None and not move.generic
    expected = ["import warp as wp", "import math", "N = 4", "SCALE = wp.constant(2.0 * N)",
                "class Particle", "def twice", "def move"]
    positions = [move.context.index(part) for part in expected]
    assert positions == sorted(positions)
    assert "unused" not in move.context and "numpy" not in move.context and "helper" not in move.context
    assert not leaks.self_contained and "devices" in leaks.reason
    assert not closure.self_contained and closure.reason.startswith("defined inside a function")


def test_self_contained_examples_build_with_warp():
    chosen = [k for k in reference.kernels() if k.self_contained and not k.generic
              and k.path.startswith("warp/examples/core")][:4]
    assert chosen
    for i, k in enumerate(chosen):
        handle = wb.define([k.context], f"jit_test_realism_{i}")
        try:
            irs = extract_many([handle.kernels()[k.name]], ("cpu",), backward=False)
            assert irs and irs[0]["cpu"]
        finally:
            handle.release()


# ---------------------------------------------------------------------------------------------
# the census


def test_census_totals_are_consistent_and_match_a_fresh_count():
    table = census.load_census()
    assert table["kernels"] == len(reference.kernels("seed"))
    assert sum(table["params_per_kernel"].values()) == table["kernels"]
    assert sum(table["statements_per_kernel"].values()) == table["kernels"]
    assert sum(int(k) * n for k, n in table["statements_per_kernel"].items()) == sum(table["statements"].values())
    assert sum(table["dtypes"].values()) == sum(table["array_ndim"].values())
    if table["warp_version"] != reference.distribution()["version"]:
        pytest.skip("census.json was counted on another Warp version")
    assert census.count(census.seed_files()) == table


def test_census_counts_a_known_file(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(src("""
        @wp.func
        def f(v: float):
            return wp.sin(v)

        @wp.kernel
        def k(x: wp.array2d(dtype=wp.vec3), y: wp.array[float], n: int):
            i, j = wp.tid()
            if n > 0:
                x[i, j] = wp.vec3(wp.sin(1.0), 0.0, f(2.0))
    """))
    table = census.count([("k.py", path)])
    assert table["kernels"] == 1 and table["files"] == 1
    assert table["builtins"] == {"sin": 2, "tid": 1, "vec3": 1}
    assert table["statements"] == {"Assign": 2, "If": 1}
    assert table["dtypes"] == {"vec3": 1, "float": 1} and table["array_ndim"] == {"2": 1, "1": 1}
    assert table["params_per_kernel"] == {"3": 1} and table["idioms"]["If>Compare"] == 1


def test_cached_values_are_computed_once_and_read_back(tmp_path, monkeypatch):
    from jit.code.analysis import cache

    monkeypatch.setenv("JIT_SYNTH_CACHE", str(tmp_path))
    calls = []

    def make():
        calls.append(1)
        return realism.profile(["import warp as wp\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = 1.0\n"])

    first = cache.cached("profile", "abc", make)
    second = cache.cached("profile", "abc", make)
    assert len(calls) == 1 and second == first and second.kernels == 1
    assert cache.cached("profile", "other", make) == first and len(calls) == 2  # another key computes again
    assert cache.key(realism) != cache.key(realism, cache)  # the modules' text is in the key
