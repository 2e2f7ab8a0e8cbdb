"""Dead-code elimination: removes what nothing reads, keeps every effect, never changes outputs."""

from __future__ import annotations

import ast
import random

import numpy as np
import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis import dataflow
from jit.code.checks import execute
from jit.code.synthesis.categories import CATEGORIES
from jit.code.synthesis.generator import item_hash, metadata


def _kernel(body: str, sig: str = "a: wp.array(dtype=float), out: wp.array(dtype=float)") -> str:
    return f"@wp.kernel\ndef k({sig}):\n" + "\n".join("    " + line for line in body.strip().splitlines())


def _body(source: str) -> list[str]:
    fn = ast.parse(source).body[0]
    return [ast.unparse(s) for s in fn.body]


def test_removes_a_dead_assignment_and_what_only_it_read():
    src = _kernel("""
i = wp.tid()
x = a[i] * 2.0
unused = wp.sin(x) + 1.0
twice = unused * unused
out[i] = x
""")
    assert _body(dataflow.eliminate(src)) == ["i = wp.tid()", "x = a[i] * 2.0", "out[i] = x"]


def test_keeps_side_effects_and_drops_only_their_dead_targets():
    src = _kernel("""
i = wp.tid()
old = wp.atomic_add(out, 0, a[i])
m = wp.mat33f()
U = wp.mat33f()
s = wp.vec3f()
V = wp.mat33f()
wp.svd3(m, U, s, V)
state = wp.rand_init(7, i)
r = wp.randf(state)
u = wp.randf(state)
out[i] = u
""")
    body = _body(dataflow.eliminate(src))
    assert "wp.atomic_add(out, 0, a[i])" in body  # kept, without its unread result
    assert "wp.svd3(m, U, s, V)" in body and "U = wp.mat33f()" in body
    assert "wp.randf(state)" in body  # the first draw advances the state the output reads
    assert body[-1] == "out[i] = u"


def test_removes_branches_and_loops_that_compute_nothing_used():
    src = _kernel("""
i = wp.tid()
x = a[i]
acc = float(0.0)
for j in range(4):
    acc += x
if x > 0.0:
    y = x * 2.0
else:
    out[i] = x
n = int(0)
while n < 3:
    n += 1
out[i] = out[i] + x
""")
    body = _body(dataflow.eliminate(src))
    assert not any(line.startswith(("for", "while", "acc", "n =")) for line in body)
    assert body[2].startswith("if not x > 0.0:")


def test_stores_through_views_and_parameters_are_kept():
    src = _kernel("""
i = wp.tid()
row = grid[i]
row[0] = 1.0
v = wp.vec3f(0.0)
v[1] = 2.0
""", sig="grid: wp.array(dtype=float, ndim=2)")
    body = _body(dataflow.eliminate(src))
    assert "row[0] = 1.0" in body and not any(line.startswith("v") for line in body)


# kernels of runnable categories, before and after, run on the CPU with the same inputs
EXEC_CATEGORIES = ("arithmetic", "math", "vector", "matrix", "control_flow", "function", "struct", "atomic",
                   "reduction", "multidim", "random", "quaternion", "transform")
PER_CATEGORY = 3


def _pair(category: str, index: int):
    """(name, source without DCE, its metadata, source with DCE, its metadata) of one generated kernel."""
    seed = 91
    out = []
    for eliminate in (False, True):
        rng = random.Random(f"{seed}:{index}:0")
        rng.random()  # the draw ``generate`` spends on the category
        suffix = item_hash(seed, index, 0)
        kb = CATEGORIES[category].build(rng, f"{category}_{suffix}", suffix, "medium")
        source = kb.source(eliminate=eliminate)
        out.append((source, metadata(kb, source, category, seed, index, 0, "medium")))
    return kb.name, out


@pytest.fixture(scope="module")
def pairs():
    items = [_pair(c, i) for c in EXEC_CATEGORIES if c in CATEGORIES for i in range(PER_CATEGORY)]
    before = wb.define([b[0] for _, (b, _) in items], "test_dataflow_before")
    after = wb.define([a[0] for _, (_, a) in items], "test_dataflow_after")
    for h in (before, after):
        h.module.options["enable_backward"] = False
    yield items, before.namespace, after.namespace
    before.release()
    after.release()


def test_elimination_does_not_change_outputs_on_the_cpu(pairs):
    items, ns_before, ns_after = pairs
    removed = 0
    for name, ((src_b, meta_b), (src_a, meta_a)) in items:
        plan_b = execute.plan_from_metadata(ns_before[name], meta_b)
        plan_a = execute.plan_from_metadata(ns_after[name], meta_a)
        values = execute.random_values(plan_b, np.random.default_rng(3))
        want = execute.run_outputs(ns_before[name], plan_b, values)
        got = execute.run_outputs(ns_after[name], plan_a, {a.name: values[a.name] for a in plan_a.args})
        assert sorted(got) == sorted(want), name
        for arg in want:
            assert execute.same_bits(want[arg], got[arg]), (name, arg, src_b, src_a)
        removed += src_b.count("\n") - src_a.count("\n")
    assert removed > 0  # the pass had something to do


def test_an_unread_loop_variable_becomes_underscore():
    src = _kernel("""
i = wp.tid()
x = a[i]
for j in range(3):
    x = x * 2.0
for k in range(2):
    x = x + a[k]
out[i] = x
""")
    body = _body(dataflow.eliminate(src))
    assert body[2].startswith("for _ in range(3):") and body[3].startswith("for k in range(2):")


def test_a_value_overwritten_before_any_read_is_removed_and_other_paths_keep_theirs():
    source = """def k(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    x = b[i] * 2.0
    y = a[i]
    if x > 0.0:
        y = b[i]
    z = a[i]
    z = z + 1.0
    out[i] = x + y + z
"""
    body = ast.unparse(ast.parse(dataflow.eliminate(source)).body[0])
    assert "x = a[i]" not in body and "x = b[i] * 2.0" in body  # overwritten unread
    assert "y = a[i]" in body  # the branch may not run: kept
    assert "z = a[i]" in body  # read by its own overwrite: kept


def test_an_assignment_nothing_after_it_reads_is_removed():
    source = """def k(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    w = a[i] * 2.0
    if w > 0.5:
        return
    c = a[i]
    if c > 0.0:
        w *= 0.5
    total = float(0.0)
    for t in range(3):
        total += c
        tmp = total * 2.0
    out[i] = total
"""
    body = ast.unparse(ast.parse(dataflow.eliminate(source)).body[0])
    assert "w *= 0.5" not in body and "tmp" not in body  # never read afterwards
    assert "if w > 0.5" in body and "total += c" in body  # a decision and a loop-carried sum stay
