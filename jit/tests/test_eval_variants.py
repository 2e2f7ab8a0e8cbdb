"""The benchmark's wider launches (``evaluation.variants``) and what they let an eval see.

A launch read from a kernel's code draws integers from 1 to 4 and runs a grid of 32 threads, so
a translation wrong only for ``op_type == 0`` or for the last cell of a 64-cell grid passes every
run on it. With the variants ``bench build`` keeps, the same translation fails; variants that
read out of bounds are left out; the oracle still scores 100%.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import warp as wp

from jit.code.checks import launch as L
from jit.code.commands import bench as bench_command
from jit.code.evaluation import baselines, bench, corruptions, running, score, variants

KERNELS = '''\
import warp as wp

N = 64


@wp.kernel
def select_op(a: wp.array(dtype=float), op_type: int, out: wp.array(dtype=float)):
    i = wp.tid()
    if op_type == 0:
        out[i] = a[i] * 2.0
    else:
        out[i] = a[i] + 1.0


@wp.kernel
def last_cell(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if i == N - 1:
        out[i] = 0.5 * a[i]
    else:
        out[i] = a[i]


@wp.kernel
def shifted(a: wp.array(dtype=float), k: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i + k]


@wp.kernel
def lens(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    x = float(i) * 0.05 - 4.0
    y = float(j) * 0.05 - 4.0
    r_sq = x * x + y * y
    gain = float(1.0)
    if r_sq < 1.0:
        gain = 2.0 - r_sq
    out[i, j] = gain * a[i, j]
'''

# each wrong only where the inferred launch never goes (the lens: cells 60 to 100 of each axis)
WRONG = {"select_op": ("a[i] * 2.0", "a[i] * 3.0"), "last_cell": ("0.5 * a[i]", "0.25 * a[i]"),
         "lens": ("2.0 - r_sq", "3.0 - r_sq")}
CPP = {"select_op": ("2.0", "3.0"), "last_cell": ("0.5", "0.25"), "lens": ("2.0", "3.0")}  # the same slips in C++


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("variantbench")
    (root / "kernels.py").write_text(KERNELS)
    out = root / "bench"
    assert bench_command.main(["build", str(root / "kernels.py"), "--output", str(out), "-q"]) == 0
    _, records = bench.read(str(out))
    return {r["kernel_name"]: r for r in records.values()}


def kinds(record):
    return [v["variant"] for v in running.variants_of(record)]


def test_the_variants_reach_a_selector_and_a_constant_the_launch_does_not(built):
    select, last = built["select_op"], built["last_cell"]
    assert select["metadata"]["launch"]["args"][1]["range"] == [1.0, 4.0]  # the inferred launch: never 0
    zero = next(v for v in running.variants_of(select) if v["variant"] == "zero")
    assert zero["args"][1]["range"][0] == 0.0
    assert last["metadata"]["launch"]["dim"] == [32]
    grid = next(v for v in running.variants_of(last) if v["variant"] == "grid")
    assert grid["dim"] == [64] and all(a["shape"] == [64] for a in grid["args"])


def test_a_span_reaches_the_middle_of_a_domain_a_thread_index_maps_to(built):
    lens = built["lens"]
    dims = lens["metadata"]["launch"]["dim"]
    assert len(dims) == 2 and max(dims) < 60  # the inferred launch stays in the domain's corner
    span = next(v for v in running.variants_of(lens) if v["variant"] == "span")
    assert span["dim"] == [362, 362] and math.prod(span["dim"]) <= variants.MAX_THREADS
    assert all(a["shape"] == [362, 362] for a in span["args"])
    assert "span" not in {n for n, _ in variants.candidates(built["last_cell"])}  # 1D, no coordinate


def test_variants_that_read_out_of_bounds_are_left_out(built):
    # out[i] = a[i + k] with a sized for k <= 4: k from 0 stays inside, k up to 16 does not
    shifted = built["shifted"]
    assert max(a.get("shape", [0])[0] for a in shifted["metadata"]["launch"]["args"]) == 32 + 4
    assert {n for n, _ in variants.candidates(shifted)} >= {"zero", "larger"}
    assert "zero" in kinds(shifted) and "larger" not in kinds(shifted)


@pytest.mark.parametrize("task", ["cuda2py", "py2cpp"])
def test_a_translation_wrong_only_off_the_inferred_launch_fails(built, task):
    for name, (right, wrong) in WRONG.items():
        record = built[name]
        answer = baselines.oracle({record["id"]: record}, task)[record["id"]][0]
        if task == "cuda2py":
            bad = answer.replace(right, wrong)
        else:
            old, new = CPP[name]
            bad = answer.replace(f" = {old};", f" = {new};", 1)
        assert bad != answer
        alone = dict(record, metadata=dict(record["metadata"], bench={
            k: v for k, v in record["metadata"]["bench"].items() if k != "launches"}))
        for rec, caught in ((alone, False), (record, True)):
            rows, _ = score.evaluate(task, {rec["id"]: rec}, {rec["id"]: [answer, bad]}, seed=3)
            assert rows[0]["matches"], rows[0]  # the oracle, on every set
            assert rows[1]["matches"] is not caught, (name, rows[1])


def test_variant_sets_take_every_value_of_a_small_integer_range():
    plan = L.Plan([4], None, [L.Arg("op_type", wp.int32, range=(0.0, 5.0)), L.Arg("n", wp.int32, range=(1.0, 16.0)),
                              L.Arg("a", wp.array(dtype=float), shape=(4,))])
    sets = variants.variant_sets(plan, 2, np.random.default_rng(0))
    assert len(sets) == variants.VARIANT_SETS and all(s[running.VARIANT] == 2 for s in sets)
    assert sorted(int(s["op_type"]) for s in sets) == list(range(6))  # 6 values in 6 sets
    assert all(1 <= int(s["n"]) <= 16 for s in sets)  # too many values to cycle: drawn


def test_the_oracle_still_scores_everything(built):
    records = {r["id"]: r for r in built.values()}
    for task in ("py2cpp", "cuda2py"):
        todo = score.applicable(records, task)
        rows, result = score.evaluate(task, todo, baselines.oracle(todo, task), 5)
        assert result["tiers"]["all"]["matches"] == 100.0, rows


def test_a_dropped_assignment_reads_a_poisoned_value(built, tmp_path, monkeypatch):
    # the poisoned py2cpp build fills an uninitialised float with a NaN pattern: a dropped
    # assignment cannot hold a harmless leftover
    record = built["last_cell"]
    answer = baselines.oracle({record["id"]: record}, "py2cpp")[record["id"]][0]
    store = next(line for line in answer.splitlines() if "wp::mul(" in line)  # 0.5 * a[i]
    bad = answer.replace(store + "\n", "", 1)
    monkeypatch.chdir(tmp_path)  # run_cpp builds in the working folder, as in its sandbox
    inputs, _, _ = score.reference_io(record, 1)
    grid = [s for s in inputs if s.get(running.VARIANT)]
    got = running.run_cpp(score.blind(record), bad, grid[:1])[0]["out"]
    assert math.isnan(float(got[63])) and not np.isnan(got[:63]).any()
    assert "-ftrivial-auto-var-init=pattern" in running.poisoned({"cpu_compiler_flags": "-w"})["cpu_compiler_flags"]


def test_a_default_construction_the_declaration_made_is_not_dropped():
    body = ("    wp::transform_t<wp::float32> var_1;\n    wp::float32 var_2;\n{loop}    var_1 = wp::transform_t<wp::float32>();\n"
            "    var_2 = wp::add(var_3, var_4);\n    wp::transform_set_translation(var_1, var_2);\n"
            "    wp::array_store(var_y, var_0, var_1);\n{back}")
    straight = "void f()\n{\n" + body.format(loop="", back="") + "}\n"
    looped = "void f()\n{\n" + body.format(loop="    start_for_0:;\n", back="    goto start_for_0;\n") + "}\n"
    dropped = {corruptions.corrupt(straight, "cpp", "statement", random.Random(n)) for n in range(20)}
    assert all("var_1 = wp::transform_t" in d for d in dropped)  # the same value as the declaration's
    dropped = {corruptions.corrupt(looped, "cpp", "statement", random.Random(n)) for n in range(20)}
    assert any("var_1 = wp::transform_t" not in d for d in dropped)  # resets what an iteration changed


def test_an_adjoint_call_that_reaches_no_compared_gradient_is_not_dropped():
    # adj_add moves integer adjoints only: nothing reaches a float array's gradient from it
    helper = ("static void adj_wrap_0(\n    wp::int32 var_idx,\n    wp::float32 var_s,\n    wp::int32 & adj_idx,\n"
              "    wp::float32 & adj_s,\n    wp::float32 & adj_ret)\n{\n    wp::int32 adj_0 = {};\n"
              "    wp::float32 adj_1 = {};\n    wp::float32 adj_2 = {};\n    adj_2 += adj_ret;\n"
              "    wp::adj_mul(var_s, var_1, adj_s, adj_1, adj_2);\n"
              "    wp::adj_add(var_idx, var_0, adj_idx, adj_0, adj_1);\n}\n")
    mul = "    wp::adj_mul(var_s, var_1, adj_s, adj_1, adj_2);\n"
    dropped = {corruptions.corrupt(helper, "cpp", "gradient", random.Random(n)) for n in range(20)}
    assert dropped == {helper.replace(mul, "\n")}  # the line emptied
    # a backward kernel that turns the integer adjoint into a float one that reaches the gradient of a
    back = ("void k_cpu_kernel_backward(\n    wp::array_t<wp::float32> var_a,\n    wp::array_t<wp::float32> adj_a)\n{\n"
            "    wp::int32 adj_i = {};\n    wp::float32 adj_x = {};\n    wp::float32 adj_s = {};\n"
            "    wp::float32 adj_r = {};\n    wp::int32 adj_j = {};\n"
            "    wp::adj_address(var_a, var_j, adj_a, adj_j, adj_x);\n    wp::adj_int32(var_x, adj_x, adj_i);\n"
            "    adj_wrap_0(var_i, var_s, adj_i, adj_s, adj_r);\n}\n")
    dropped = {corruptions.corrupt(helper, "cpp", "gradient", random.Random(n), context=back) for n in range(20)}
    assert dropped == {helper.replace(mul, "\n"), helper.replace("    wp::adj_add(var_idx, var_0, adj_idx, adj_0, adj_1);\n", "\n")}


def test_a_part_of_a_default_construction_is_not_dropped_where_the_declaration_gives_it():
    # var_5 = the translation of a zero transform: the vector's declaration already holds zero;
    # a float's declaration holds nothing, so the same statement into a float is dropped
    cpp = ("void f()\n{\n    wp::transform_t<wp::float32> var_1;\n    wp::vec_t<3, wp::float32> var_5;\n"
           "    wp::float32 var_6;\n    var_1 = wp::transform_t<wp::float32>();\n"
           "    var_5 = wp::transform_get_translation(var_1);\n    var_6 = wp::extract(var_5, var_2);\n"
           "    wp::array_store(var_y, var_0, var_5);\n    wp::array_store(var_z, var_0, var_6);\n}\n")
    dropped = {corruptions.corrupt(cpp, "cpp", "statement", random.Random(n)) for n in range(30)}
    assert all("var_5 = wp::transform_get_translation" in d for d in dropped)
    assert any("var_6 = wp::extract" not in d for d in dropped)


def test_a_block_warps_constants_rule_out_is_never_changed():
    # an unrolled iteration's ``if q == 2: continue``: for q == 2 the block after it never runs
    cpp = ("void f()\n{\n    const wp::int32 var_1 = 2;\n    const wp::int32 var_2 = 2;\n    const bool var_3 = false;\n"
           "    var_4 = (var_1 == var_2);\n    var_5 = wp::where(var_4, var_3, var_6);\n    if (var_5) {\n"
           "        var_7 = wp::load(var_8);\n        wp::array_store(var_a, var_0, var_7);\n    }\n"
           "    var_9 = wp::load(var_10);\n    wp::array_store(var_b, var_0, var_9);\n}\n")
    for kind in ("statement", "index"):
        changed = {corruptions.corrupt(cpp, "cpp", kind, random.Random(n)) for n in range(20)}
        assert all("wp::load(var_8);\n        wp::array_store(var_a, var_0, var_7);" in d for d in changed)
    live = cpp.replace("const wp::int32 var_2 = 2;", "const wp::int32 var_2 = 3;")  # now q != 2: it runs
    assert any("var_7 = wp::load(var_8);" not in corruptions.corrupt(live, "cpp", "statement", random.Random(n))
               for n in range(20))


def test_a_struct_fields_zero_store_after_its_construction_is_not_dropped():
    src = ("import warp as wp\n\n@wp.struct\nclass Box:\n    value: wp.float32\n\n@wp.kernel\n"
           "def k(x: wp.array[wp.float32], out: wp.array[wp.float32]):\n    i = wp.tid()\n    box = Box()\n"
           "    box.value = wp.float32(0.0)\n    box.value = box.value + x[i]\n    out[i] = box.value\n")
    assert all(corruptions.corrupt(src, "python", "statement", random.Random(n)).count("wp.float32(0.0)") == 1
               for n in range(20))
    one = src.replace("box.value = wp.float32(0.0)", "box.value = wp.float32(1.0)")  # not what Box() holds
    assert any("wp.float32(1.0)" not in corruptions.corrupt(one, "python", "statement", random.Random(n))
               for n in range(20))


def test_an_unused_structs_atomic_adjoint_is_not_dropped():
    struct = ("struct Box_a1704708\n{\n    wp::float32 value;\n};\n"
              "CUDA_CALLABLE void adj_atomic_add(Box_a1704708* p, Box_a1704708 t)\n{\n"
              "    wp::adj_atomic_add(&p->value, t.value);\n}\n")
    assert corruptions.corrupt(struct, "cpp", "gradient", random.Random(0)) is None  # no array of Box
    used = struct + "void k()\n{\n    wp::array_t<Box_a1704708> var_boxes;\n}\n"
    assert "&p->value" not in corruptions.corrupt(used, "cpp", "gradient", random.Random(0))


def test_a_sparse_variant_zeroes_most_of_a_float_array():
    plan = L.Plan([64], None, [L.Arg("c", wp.array(dtype=float), shape=(64,)), L.Arg("out", wp.array(dtype=float),
                                                                                    role="out", shape=(64,))])
    launch = {"dim": [64], "args": [{"name": "c", "range": [-2.0, 2.0], "role": "in", "shape": [64], "sparse": 0.75},
                                    {"name": "out", "range": [-2.0, 2.0], "role": "out", "shape": [64]}]}
    sets = variants.variant_sets(plan, 1, np.random.default_rng(0), launch)
    zeros = sum(int((s["c"] == 0).sum()) for s in sets) / (64 * len(sets))
    assert 0.6 < zeros < 0.9 and all((s["c"] != 0).any() for s in sets)


def test_a_value_an_adjoint_hands_back_to_callers_that_never_read_it_is_never_changed():
    helper = ("static void adj_pair_0(\n    wp::float32 var_x,\n    wp::float32 & ret_0,\n    wp::float32 & adj_x,\n"
              "    wp::float32 & adj_ret_0)\n{\n    wp::float32 var_1;\n    var_1 = wp::sin(var_x);\n    ret_0 = var_1;\n"
              "    wp::adj_sin(var_x, adj_x, adj_ret_0);\n}\n")
    caller = "void k_cpu_kernel_backward()\n{\n    adj_pair_0(var_5, var_3, adj_5, adj_3);\nAFTER}\n"
    never = {corruptions.corrupt(helper, "cpp", "statement", random.Random(n), context=caller.replace("AFTER", ""))
             for n in range(10)}
    assert never == {None}  # sin's value only goes back through ret_0, which the caller does not read
    read = caller.replace("AFTER", "    wp::array_store(var_out, var_0, var_3);\n")
    assert all("var_1 = wp::sin" not in corruptions.corrupt(helper, "cpp", "statement", random.Random(n), context=read)
               for n in range(10))
