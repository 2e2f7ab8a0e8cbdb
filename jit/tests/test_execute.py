"""CPU execution: io examples against NumPy, replay from python_source alone, determinism,
gradient checks that pass on a correct backward and fail on a wrong one, rejected outputs."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from jit.code.extraction import warp_backend as wb
from jit.code.checks import execute
from jit.code.checks.base import Batch
from jit.code.synthesis.batch_generator import RunSpec, build_batch, make_record
from jit.code.synthesis.generator import CATEGORIES, KernelSpec, generate
from jit.code.records import Pair, content_id

SOURCES = {
    "known": '''
import warp as wp


@wp.kernel
def known(a: wp.array(dtype=wp.vec3f), m: wp.mat33f, s: wp.float32, v: wp.array(dtype=wp.vec3f),
          out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y = m * a[i]
    v[i] = y * s
    out[i] = wp.dot(y, a[i])
''',
    "smooth": '''
import warp as wp


@wp.kernel
def smooth(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float32),
           acc: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.sin(x[i]) * x[(i + 1) % x.shape[0]] + x[i] * x[i]
    wp.atomic_add(acc, 0, wp.exp(y[i] * wp.float64(0.5)))
''',
    "wrong_grad": '''
import warp as wp


@wp.func
def cube(x: float):
    return x * x * x


@wp.func_grad(cube)
def adj_cube(x: float, adj_ret: float):
    wp.adjoint[x] += 2.0 * x * adj_ret  # deliberately wrong: d(x^3)/dx is 3x^2


@wp.kernel
def wrong_grad(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = cube(x[i])
''',
    "nan_out": '''
import warp as wp


@wp.kernel
def nan_out(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = wp.sqrt(-1.0 - x[i] * x[i])
''',
    "with_struct": '''
import warp as wp


@wp.struct
class Body:
    pos: wp.vec3f
    rot: wp.quatf
    mass: wp.float32


@wp.kernel
def with_struct(b: Body, bodies: wp.array(dtype=Body), n: wp.int32, out: wp.array(dtype=wp.vec3f),
                flags: wp.array(dtype=wp.int32)):
    i = wp.tid()
    p = wp.quat_rotate(bodies[i].rot, bodies[i].pos) * b.mass + b.pos
    out[i] = p
    flags[i] = (i * n) % 7
''',
    "tiled": '''
import warp as wp


@wp.kernel
def tiled(a: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32), total: wp.array(dtype=wp.float32)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(8,), offset=(i * 8,))
    wp.tile_store(out, wp.tile_map(wp.sin, t), offset=(i * 8,))
    wp.tile_atomic_add(total, wp.tile_sum(t))
''',
    "forever": '''
import warp as wp


@wp.kernel
def forever(x: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    k = int(0)
    while k < 1:
        k = k * 1
    out[i] = x[i]
''',
    "uses_mesh": '''
import warp as wp


@wp.kernel
def uses_mesh(mesh: wp.uint64, p: wp.array(dtype=wp.vec3f), out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, p[i], 10.0)
    out[i] = wp.where(q.result, q.u, 0.0)
''',
}


def arr(name, dtype, shape, role="in", lo=-2.0, hi=2.0):
    return {"name": name, "kind": "array", "dtype": dtype, "shape": list(shape), "role": role, "range": [lo, hi]}


def val(name, dtype, kind="scalar", lo=-2.0, hi=2.0):
    return {"name": name, "kind": kind, "dtype": dtype, "role": "in", "range": [lo, hi]}


LAUNCH = {
    "known": ([8], [arr("a", "vec3f", [8]), val("m", "mat33f"), val("s", "float32"),
                    arr("v", "vec3f", [8], "out"), arr("out", "float32", [8], "out")], ["v", "out"]),
    "smooth": ([16], [arr("x", "float32", [16]), arr("y", "float64", [16]), arr("out", "float32", [16], "out"),
                      arr("acc", "float64", [1], "inout")], ["out", "acc"]),
    "wrong_grad": ([8], [arr("x", "float32", [8], lo=0.5, hi=2.0), arr("out", "float32", [8], "out")], ["out"]),
    "nan_out": ([4], [arr("x", "float32", [4]), arr("out", "float32", [4], "out")], ["out"]),
    "with_struct": ([6], [val("b", "Body", "struct"), arr("bodies", "Body", [6]), val("n", "int32", lo=-8, hi=8),
                          arr("out", "vec3f", [6], "out"), arr("flags", "int32", [6], "out")], ["out"]),
    "tiled": ([2], [arr("a", "float32", [16]), arr("out", "float32", [16], "out"),
                    arr("total", "float32", [1], "inout")], []),
    "forever": ([4], [arr("x", "float32", [4]), arr("out", "float32", [4], "out")], ["out"]),
    "uses_mesh": ([4], [{"name": "mesh", "kind": "handle", "dtype": "uint64", "role": "in", "range": [0, 0]},
                        arr("p", "vec3f", [4]), arr("out", "float32", [4], "out")], ["out"]),
}
RUNTIME_REASON = "needs a wp.Mesh built at run time"


def spec_of(name: str, index: int) -> KernelSpec:
    dim, args, differentiable = LAUNCH[name]
    launch = {"dim": dim, "args": args, "runnable": name != "uses_mesh",
              "reason": RUNTIME_REASON if name == "uses_mesh" else None}
    if name == "tiled":
        launch["block_dim"] = 16
    return KernelSpec(name, "test", SOURCES[name].lstrip(), 3, index, 0,
                      {"launch": launch, "differentiable_outputs": differentiable})


def pair_of(spec: KernelSpec) -> Pair:
    return Pair(id=content_id(spec.source), kernel_name=spec.name, category=spec.category,
                python_source=spec.source, validation={"cpu": "compiled"},
                metadata={**spec.metadata, "seed": spec.seed, "index": spec.index, "attempt": spec.attempt})


def execute_items(run, items, records):
    """The execute check on (spec, kernel, irs) items and their records (keyed by kernel name)."""
    return execute.execute_check(run, Batch(records, {s.name: k for s, k, _ in items if s.name in records}))


@pytest.fixture(scope="module")
def batch():
    """All hand-written kernels in one Warp module, executed once: (specs, records, dropped)."""
    specs = [spec_of(name, i) for i, name in enumerate(SOURCES)]
    handle = wb.define([s.source for s in specs], "jit_test_execute_batch")
    try:
        items = [(s, handle.namespace[s.name], {}) for s in specs]
        records = {s.name: pair_of(s) for s in specs}
        bound, execute.EXECUTE_SECONDS = execute.EXECUTE_SECONDS, 3.0  # "forever" never ends
        try:
            dropped = execute_items(RunSpec(out="unused", count=1, devices=("cpu",)), items, records)
        finally:
            execute.EXECUTE_SECONDS = bound
        yield {s.name: s for s in specs}, records, dropped
    finally:
        handle.release()


def test_a_kernel_that_never_ends_is_dropped_as_timeout_and_the_batch_goes_on(batch):
    _, records, dropped = batch
    assert dropped["forever"] == "timeout"
    assert records["forever"].io is None
    after = list(SOURCES).index("forever") + 1  # kernels after it ran in a new child
    assert records[list(SOURCES)[after]].validation["cpu"] == "compiled"  # uses_mesh: not runnable
    assert "known" not in dropped and records["known"].validation["cpu"] == "executed"


def data(spec: dict) -> np.ndarray:
    return np.asarray(spec["data"], dtype=np.float64)


def test_io_matches_numpy(batch):
    _, records, dropped = batch
    assert "known" not in dropped
    io = records["known"].io
    assert io["device"] == "cpu" and io["dim"] == [8]
    assert io["inputs"]["a"]["dtype"] == "vec3f" and io["inputs"]["a"]["shape"] == [8]
    assert io["inputs"]["m"]["dtype"] == "mat33f" and np.shape(io["inputs"]["m"]["data"]) == (3, 3)
    assert io["inputs"]["s"]["dtype"] == "float32" and isinstance(io["inputs"]["s"]["data"], float)
    assert set(io["outputs"]) == {"v", "out"}
    a, m, s = data(io["inputs"]["a"]), data(io["inputs"]["m"]), data(io["inputs"]["s"])
    y = a @ m.T
    np.testing.assert_allclose(data(io["outputs"]["v"]), y * s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(data(io["outputs"]["out"]), np.sum(y * a, axis=1), rtol=1e-5, atol=1e-5)
    assert records["known"].validation["cpu"] == "executed"


def test_io_is_json_and_replays_from_source_alone(batch):
    specs, records, dropped = batch
    executed = [r.to_dict() for name, r in records.items() if r.io is not None]
    assert {r["kernel_name"] for r in executed} >= {"known", "smooth", "with_struct", "tiled"}
    executed = json.loads(json.dumps(executed))  # as a dataset stores them
    assert execute.replay_records(executed) == {}


def test_replay_detects_a_changed_output_and_a_broken_source(batch):
    _, records, _ = batch
    changed = copy.deepcopy(records["smooth"].to_dict())
    changed["io"]["outputs"]["out"]["data"][3] += 1e-6
    broken = copy.deepcopy(records["known"].to_dict())
    broken["python_source"] = broken["python_source"].replace("def known(", "def renamed(")
    bad = execute.replay_records([changed, broken])
    assert bad[changed["id"]] == "io replay mismatch"
    assert bad[broken["id"]].startswith("io replay failed")


def test_struct_and_tile_kernels_run(batch):
    _, records, _ = batch
    io = records["with_struct"].io
    assert io["inputs"]["b"]["dtype"] == "Body" and set(io["inputs"]["b"]["data"]) == {"pos", "rot", "mass"}
    assert io["inputs"]["bodies"]["shape"] == [6] and len(io["inputs"]["bodies"]["data"]["pos"]) == 6
    n = io["inputs"]["n"]["data"]
    assert io["outputs"]["flags"]["data"] == [(i * n) % 7 if i * n >= 0 else -((-i * n) % 7) for i in range(6)]
    tiled = records["tiled"].io
    a = data(tiled["inputs"]["a"])
    assert tiled["block_dim"] == 16
    np.testing.assert_allclose(data(tiled["outputs"]["out"]), np.sin(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(data(tiled["outputs"]["total"])[0], data(tiled["inputs"]["total"])[0] + a.sum(),
                               rtol=1e-5, atol=1e-5)


def test_gradient_check_passes_on_a_correct_backward(batch):
    _, records, dropped = batch
    assert "smooth" not in dropped and "known" not in dropped
    assert records["smooth"].validation["gradient"] == "passed"
    assert records["known"].validation["gradient"] == "passed"


def test_gradient_check_fails_on_a_wrong_backward(batch):
    _, records, dropped = batch
    assert dropped["wrong_grad"] == "gradient check failed"
    assert records["wrong_grad"].validation["gradient"] == "failed"


def test_non_finite_output_is_rejected(batch):
    _, records, dropped = batch
    assert dropped["nan_out"] == "non-finite output"
    assert records["nan_out"].io is None


def test_runtime_object_kernels_are_compiled_not_executed(batch):
    _, records, dropped = batch
    record = records["uses_mesh"]
    assert "uses_mesh" not in dropped
    assert record.io is None
    assert record.validation["cpu"] == "compiled"
    assert record.validation["cpu_reason"] == RUNTIME_REASON


def test_inputs_are_seeded_per_item():
    spec = spec_of("known", 5)
    handle = wb.define([spec.source], "jit_test_execute_seed")
    try:
        plan = execute.plan_from_metadata(handle.namespace["known"], spec.metadata)
        first = execute.random_values(plan, execute.item_rng(spec))
        again = execute.random_values(plan, execute.item_rng(spec))
        other = execute.random_values(plan, execute.item_rng(spec_of("known", 6)))
    finally:
        handle.release()
    assert all(execute.same_bits(first[k], again[k]) for k in first)
    assert not execute.same_bits(first["a"], other["a"])
    assert np.all(np.abs(first["a"]) <= 2.0) and not first["out"].any()


def test_kernels_the_build_dropped_do_not_stop_the_batch():
    """A kernel left in the module that Warp cannot build: the others still execute (bisected)."""
    good = spec_of("smooth", 0)
    bad = "import warp as wp\n\n\n@wp.kernel\ndef bad(x: wp.array(dtype=float)):\n    x[0] = wp.no_such_builtin(1.0)\n"
    handle = wb.define([good.source, bad], "jit_test_execute_dropped")
    try:
        records = {"smooth": pair_of(good)}
        dropped = execute_items(RunSpec(out="unused", count=1, devices=("cpu",)),
                                        [(good, handle.namespace["smooth"], {})], records)
    finally:
        handle.release()
    assert dropped == {}
    assert records["smooth"].validation["cpu"] == "executed" and records["smooth"].io is not None


@pytest.fixture(scope="module")
def generated():
    """One generated kernel per category, built, validated by execution, as records."""
    specs = [generate(11, i, [category], "small") for i, category in enumerate(sorted(CATEGORIES))]
    items, rejected, handle, _ = build_batch(specs, ("cpu",), True, "jit_test_execute_generated")
    run = RunSpec(out="unused", count=len(specs), devices=("cpu",), validate="execute")
    try:
        records = {spec.name: make_record(spec, irs, run) for spec, _, irs in items}
        dropped = execute_items(run, items, records)
    finally:
        if handle is not None:
            handle.release()
    return specs, records, dropped


def test_generated_kernels_execute_and_replay(generated):
    specs, records, dropped = generated
    kept = {name: r for name, r in records.items() if name not in dropped}
    assert len(kept) >= len(specs) * 0.7, dropped
    for r in kept.values():
        assert r.validation["cpu"] == "executed" or r.validation.get("cpu_reason"), r.kernel_name
        assert (r.io is not None) == (r.validation["cpu"] == "executed")
        if r.io is not None:
            assert r.validation["gradient"] in ("passed", "skipped")
    with_io = [r.to_dict() for r in kept.values() if r.io is not None]
    assert len(with_io) >= len(kept) * 0.8
    assert execute.replay_records(with_io) == {}


def test_generated_io_is_deterministic(generated):
    specs, records, dropped = generated
    spec = next(s for s in specs if s.name in records and records[s.name].io is not None)
    items, _, handle, _ = build_batch([spec], ("cpu",), True, "jit_test_execute_again")
    record = make_record(spec, items[0][2], RunSpec(out="unused", count=1))
    try:
        execute_items(RunSpec(out="unused", count=1, devices=("cpu",)), items, {spec.name: record})
    finally:
        handle.release()
    assert json.dumps(record.io, sort_keys=True) == json.dumps(records[spec.name].io, sort_keys=True)


def test_python_scalar_annotations_run_as_warp_scalars():
    source = '''import warp as wp


@wp.kernel
def py_scalars(x: wp.array(dtype=float), s: float, n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * s + float(n)
'''
    handle = wb.define([source], "jit_test_execute_py_scalars")
    try:
        kernel = handle.namespace["py_scalars"]
        plan = execute.plan_from_metadata(kernel, {"launch": {"dim": [5], "args": [
            arr("x", "float32", [5]), val("s", "float32"), val("n", "int32", lo=0, hi=3), arr("out", "float32", [5], "out")]}})
        values = execute.random_values(plan, np.random.default_rng(1))
        got = execute.run_outputs(kernel, plan, values)
        np.testing.assert_allclose(got["out"], values["x"] * values["s"] + values["n"], rtol=1e-6)
    finally:
        handle.release()


def test_the_bounds_check_catches_an_access_past_the_end():
    """Known answer: a kernel that reads a[i + 1] for every i aborts in debug mode; its fixed twin does not."""
    from jit.code.checks.bounds import OUT_OF_BOUNDS, replay_in_debug_mode

    def record(name: str, index: str) -> dict:
        source = (f"import warp as wp\n\n\n@wp.kernel\ndef {name}(a: wp.array(dtype=float), b: wp.array(dtype=float)):\n"
                  f"    i = wp.tid()\n    b[i] = a[{index}]\n")
        data = {"dtype": "float32", "shape": [4], "data": [1.0, 2.0, 3.0, 4.0]}
        return {"id": name, "kernel_name": name, "python_source": source,
                "io": {"device": "cpu", "dim": [4], "inputs": {"a": data, "b": data}, "outputs": {"b": data}}}

    assert replay_in_debug_mode([record("shifted_read", "i + 1"), record("same_read", "i")]) == {
        "shifted_read": OUT_OF_BOUNDS}
