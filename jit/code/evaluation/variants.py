"""Wider launches of a benchmark kernel: inputs that reach the code one launch leaves alone.

The launch ``bench build`` reads from a kernel's code is made to run safely, not to reach every
line: integers drawn from 1 to 4 never pick ``op_type == 0`` nor test an element against 0, a
count fixed to the grid's extent never leaves a thread out, a tile grid of ``[2, 2, 1]`` never
offsets the last axis, a ``num_bodies`` below the tile size never enters the tile loop, a grid of
8 by 8 never reaches ``i == grid_width - 1``. A wrong translation that changes only such code
passes every run. ``candidates(record)`` makes, from the record's launch, the variants that
reach it (each changes one thing):

- ``zero``: integer scalars and the integer arrays drawn from 1 to 4 drawn from 0;
- ``negative``: the same drawn from -4 to 4;
- ``larger``: integer scalars drawn up to 16 (a loop's count, a selector's last branch);
- ``wide``: float scalars drawn from -16 to 16 (a radius that holds grid points);
- ``sparse``: float input arrays three quarters zero, where the kernel tests a value against 0;
- ``fewer``: integers fixed to a grid extent (a count, a row width) a quarter as large;
- ``divided``: an integer divided by a module constant C (``num_bodies / TILE_SIZE``) drawn
  from 2C to 4C, with one-dimensional arrays at least 4C long;
- ``grid``: a tile grid with no axis of 1 and arrays twice as long on every axis, or a grid
  whose thread index reaches the module constant it is compared with, arrays following it;
- ``span``: a 2D or 3D grid as wide as ``MAX_THREADS`` allows, arrays following it, when the
  kernel turns its thread index into a coordinate (the middle of the domain is reached).

``exercised(records)`` keeps the variants a kernel runs in bounds (Warp's debug mode), with
finite and repeatable outputs, on input sets drawn as an eval draws them, as
``metadata["bench"]["launches"]``; an eval draws ``VARIANT_SETS`` input sets from each
(``variant_sets``, also the prefilled output arrays of ``prefill``). The record's own
``metadata["launch"]`` is not changed. What it leaves out: scoring.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import math

import numpy as np

INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
FLOATS = {"float16", "float32", "float64"}
DEFAULT_INTS = (1.0, 4.0)  # what the launch inference draws an integer from when nothing bounds it
MAX_AXIS = 1024  # a grid axis a constant may ask for
MAX_THREADS = 1 << 17  # a grid reaching a point source at (63, 63, 19) of a 128^3 domain: 81,920 threads
MAX_ELEMENTS = 1 << 20
SPARSE = 0.75  # the share of a sparse array's elements that are zero
BATCH = 24  # kernels built together in debug mode
_modules = itertools.count()
CHECK_SEEDS = 3
VARIANT_SETS = 6  # input sets an eval draws from each variant kept for a kernel  # draws of an eval's input sets a variant must run cleanly on


def candidates(record: dict) -> list[tuple[str, dict]]:
    """(name, launch) of each variant of the record's launch that changes something."""
    launch = record["metadata"]["launch"]
    specs = record["io"]["inputs"]
    kernel, consts = _kernel_and_constants(record["python_source"], record["kernel_name"])
    out = []
    for name, make in (("zero", _zero), ("negative", _negative), ("larger", _larger), ("wide", _wide),
                       ("sparse", _sparse), ("fewer", _fewer), ("divided", _divided), ("grid", _grid), ("span", _span)):
        variant = copy.deepcopy(launch)
        if make(variant, specs, kernel, consts) and variant != launch and _sane(variant):
            out.append((name, variant))
    return out


def _args(launch: dict, specs: dict, dtypes: set[str], arrays: bool | None):
    for a in launch["args"]:
        spec = specs.get(a["name"]) or {}
        if spec.get("build") is not None or spec.get("dtype") not in dtypes:
            continue
        if arrays is None or ("shape" in spec) == arrays:
            yield a


def _drawn_ints(launch: dict, specs: dict):
    """Integer scalars drawn from a range, and integer input arrays drawn from the default one."""
    yield from (a for a in _args(launch, specs, INTS, False) if a["range"][0] < a["range"][1])
    yield from (a for a in _args(launch, specs, INTS, True)
                if a.get("role") == "in" and tuple(a["range"]) == DEFAULT_INTS)


def _zero(launch, specs, kernel, consts) -> bool:
    changed = False
    for a in _drawn_ints(launch, specs):
        if a["range"][0] > 0:
            a["range"] = [0.0, a["range"][1]]
            changed = True
    return changed


def _negative(launch, specs, kernel, consts) -> bool:
    changed = False
    for a in _drawn_ints(launch, specs):
        if not specs[a["name"]]["dtype"].startswith("uint"):
            a["range"] = [-4.0, 4.0]
            changed = True
    return changed


def _larger(launch, specs, kernel, consts) -> bool:
    changed = False
    for a in _args(launch, specs, INTS, False):
        if a["range"][0] < a["range"][1]:
            a["range"] = [a["range"][0], max(16.0, 4 * a["range"][1])]
            changed = True
    return changed


def _wide(launch, specs, kernel, consts) -> bool:
    changed = False
    for a in _args(launch, specs, FLOATS, False):
        a["range"] = [-16.0, 16.0] if a["range"][0] < 0 else [a["range"][0], 16.0]
        changed = True
    return changed


def _sparse(launch, specs, kernel, consts) -> bool:
    """Float input arrays mostly zero, where the kernel tests a value for being zero."""
    if kernel is None or not any(isinstance(n, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq)) for o in n.ops)
                                 and any(_value(x, {}) == 0 for x in [n.left, *n.comparators]) for n in ast.walk(kernel)):
        return False
    changed = False
    for a in launch["args"]:
        spec = specs.get(a["name"]) or {}
        if "shape" in spec and a.get("role") == "in" and spec.get("dtype") in FLOATS:
            a["sparse"] = SPARSE
            changed = True
    return changed


def _fewer(launch, specs, kernel, consts) -> bool:
    changed = False
    for a in _args(launch, specs, INTS, False):
        lo, hi = a["range"]
        if lo == hi and hi >= 4 and hi in launch["dim"]:
            a["range"] = [float(hi // 4)] * 2
            changed = True
    return changed


def _divided(launch, specs, kernel, consts) -> bool:
    if kernel is None:
        return False
    changed = False
    for a in _args(launch, specs, INTS, False):
        divisors = [c for node in ast.walk(kernel) if isinstance(node, ast.BinOp)
                    and isinstance(node.op, (ast.Div, ast.FloorDiv)) and _is_name(node.left, a["name"])
                    and (c := _value(node.right, consts)) is not None and c >= 2]
        if divisors and a["range"][0] < a["range"][1]:
            c = max(divisors)
            a["range"] = [float(2 * c), float(4 * c)]  # two to four passes: the second pass's offset shows
            changed = True
    if changed:
        longest = int(max(a["range"][1] for a in _args(launch, specs, INTS, False)))
        for a in launch["args"]:
            if len(a.get("shape") or ()) == 1:
                a["shape"] = [max(a["shape"][0], longest)]
    return changed


def _grid(launch, specs, kernel, consts) -> bool:
    dims = list(launch["dim"])
    if launch.get("block_dim"):  # a tile grid: every axis at least 2, arrays twice as long
        if all(d > 1 for d in dims):
            return False
        launch["dim"] = [max(d, 2) for d in dims]
        for a in launch["args"]:
            if a.get("shape"):
                a["shape"] = [2 * d for d in a["shape"]]
        return True
    tids = _tids(kernel)
    if not tids or len(tids) != len(dims):
        return False
    wanted = list(dims)
    for node in ast.walk(kernel):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            for side, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                if isinstance(side, ast.Name) and side.id in tids and (c := _value(other, consts)) is not None:
                    axis = tids.index(side.id)
                    if 0 <= c < MAX_AXIS:
                        wanted[axis] = max(wanted[axis], int(c) + 1)
    if wanted == dims or math.prod(wanted) > MAX_THREADS:
        return False
    _follow(launch, dims, wanted)
    return True


def _span(launch, specs, kernel, consts) -> bool:
    """A 2D or 3D grid as wide as ``MAX_THREADS`` allows, when the kernel turns its thread index
    into a coordinate (``float(i) * DX - HALF_WIDTH``): what sits in the middle of the domain (a
    lens, an obstacle, a source) is never reached by a few threads in its corner."""
    dims = list(launch["dim"])
    tids = _tids(kernel)
    if len(tids) not in (2, 3) or len(tids) != len(dims) or not _coordinates(kernel, set(tids)):
        return False
    side = int(round(MAX_THREADS ** (1.0 / len(dims))))
    while side ** len(dims) > MAX_THREADS:
        side -= 1
    wanted = [max(d, side) for d in dims]
    if wanted == dims:
        return False
    _follow(launch, dims, wanted)
    return True


def _coordinates(kernel: ast.FunctionDef, tids: set[str]) -> bool:
    """Does the kernel convert a thread index to a float?"""
    for node in ast.walk(kernel):
        if isinstance(node, ast.Call) and len(node.args) == 1 and getattr(node.args[0], "id", None) in tids:
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "float") or getattr(func, "attr", "") in ("float32", "float64"):
                return True
    return False


def _follow(launch: dict, dims: list[int], wanted: list[int]) -> None:
    """The launch on grid ``wanted``, with the arrays that cover the old grid (an axis at least its
    extent) grown by as much along each axis."""
    launch["dim"] = wanted
    for a in launch["args"]:
        shape = a.get("shape")
        if shape:
            a["shape"] = [d + wanted[k] - dims[k] if k < len(dims) and d >= dims[k] else d
                          for k, d in enumerate(shape)]


def _sane(launch: dict) -> bool:
    return all(math.prod(a.get("shape") or [1]) <= MAX_ELEMENTS for a in launch["args"])


# ---------------------------------------------------------------------------------------------
# input sets


def variant_sets(plan, k: int, rng, launch: dict | None = None) -> list[dict]:
    """``VARIANT_SETS`` input sets of a wider launch (``variants``; ``launch``, its description),
    marked with its number ``k``; every second one prefilled. An integer scalar drawn from a few
    values takes each in turn (from a drawn start), so that a selector's every branch is taken;
    an array described ``sparse`` has that share of its elements zero."""
    from jit.code.checks import launch as L
    from jit.code.evaluation import running

    sparse = {a["name"]: a["sparse"] for a in (launch or {}).get("args", []) if a.get("sparse")}
    sets = []
    for n in range(VARIANT_SETS):
        values = L.random_values(plan, rng)
        if n % 2:
            prefill(plan, values, rng)
        for name, share in sparse.items():
            values[name] = np.where(rng.random(values[name].shape) < share, 0, values[name]).astype(values[name].dtype)
        sets.append(dict(values, **{running.VARIANT: k}))
    for a in plan.args:
        lo, hi = math.ceil(a.range[0]), math.floor(a.range[1])
        dtype = sets[0][a.name].dtype
        if not a.is_array and a.build is None and dtype.kind in "iu" and 0 < hi - lo < VARIANT_SETS:
            start = int(rng.integers(0, hi - lo + 1))
            for n, one in enumerate(sets):
                one[a.name] = np.asarray(lo + (start + n) % (hi - lo + 1), dtype)
    return sets


def prefill(plan, values: dict, rng) -> None:
    """Output arrays holding values drawn like the inputs' instead of zeros: an element a kernel
    should leave alone, a store of zero, or a sum into the array's start then shows in the
    outputs. Every second fresh set is launched so; the others start from zeros, as launches do."""
    from jit.code.checks import launch as L

    for a in plan.args:
        if a.is_array and a.role == "out" and a.build is None:
            values[a.name] = L.random_value(rng, a.dtype, tuple(a.shape), *a.range, fields=a.field_ranges)


# ---------------------------------------------------------------------------------------------
# what the code says: the kernel, its module constants, its thread indices


def _kernel_and_constants(source: str, name: str) -> tuple[ast.FunctionDef | None, dict[str, float]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, {}
    consts: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "attr", "") == "constant" and value.args:
                value = value.args[0]
            v = _value(value, consts)
            if v is not None:
                consts[node.targets[0].id] = v
    kernel = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    return kernel, consts


def _value(node: ast.AST, consts: dict[str, float]) -> float | None:
    """The number an expression of literals and module constants stands for, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.func, (ast.Name, ast.Attribute)):
        return _value(node.args[0], consts)  # int(N), wp.int32(N)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a, b = _value(node.left, consts), _value(node.right, consts)
        if a is None or b is None or (isinstance(node.op, ast.FloorDiv) and b == 0):
            return None
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}.get(type(node.op), a // b if b else None)
    return None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _tids(kernel: ast.FunctionDef | None) -> list[str]:
    if kernel is None:
        return []
    for stmt in kernel.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
                getattr(stmt.value.func, "attr", "") == "tid":
            target = stmt.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            return [n.id if isinstance(n, ast.Name) else "" for n in names]
    return []


# ---------------------------------------------------------------------------------------------
# which variants run


def exercised(records: list[dict], seconds: float = 20.0) -> list[dict]:
    """The records, each with ``metadata["bench"]["launches"]``: the variants (``candidates``)
    its kernel runs in bounds, finitely and repeatably in Warp's debug mode (none: no key), on
    input sets drawn as an eval draws them (``variant_sets``) from a few
    seeds, each run twice in a bounded child (``sandbox``): a variant that crashes (a failed
    bounds check aborts), hangs or gives other outputs on a second run is left out."""
    from jit.code.evaluation import sandbox

    todo = {r["id"]: candidates(r) for r in records}
    group = [r for r in records if todo[r["id"]]]
    kept: dict[str, list[dict]] = {}
    for start in range(0, len(group), BATCH):
        live, handles = _debug_build(group[start:start + BATCH])
        try:
            for r in group[start:start + BATCH]:
                for name, variant in todo[r["id"]] if r["id"] in live else ():
                    ran = sandbox.contained(functools.partial(runs, live[r["id"]], variant), seconds)
                    if ran.status == "ok" and ran.value:
                        kept.setdefault(r["id"], []).append(dict(variant, variant=name))
        finally:
            for h in handles:
                h.release()
    out = []
    for r in records:
        if r["id"] in kept:
            meta = dict(r["metadata"])
            meta["bench"] = dict(meta.get("bench") or {}, launches=kept[r["id"]])
            r = dict(r, metadata=meta)
        out.append(r)
    return out


def _debug_build(records: list[dict]) -> tuple[dict, list]:
    """({record id: kernel}, module handles) of the records' kernels built together for the CPU
    in Warp's debug mode (every array access checked), halved around texts that do not build."""
    import os

    import warp as wp

    from jit.code.extraction import warp_backend as wb

    live, handles = {}, []
    try:
        handle = wb.define([r["python_source"] for r in records], f"jit_bench_variants_{next(_modules)}_{os.getpid()}")
    except Exception:  # noqa: BLE001  a text that does not define: the others on their own
        handle = None
    if handle is not None:
        handles.append(handle)
        wp.set_module_options({"mode": "debug", "enable_backward": False, "cpu_compiler_flags": "-w"}, handle.module)
        try:
            wp.load_module(handle.module, device="cpu", block_dim=1)  # what CPU launches resolve to
            return {r["id"]: handle.namespace[r["kernel_name"]] for r in records}, handles
        except Exception:  # noqa: BLE001  Warp's build failure: halve the batch
            handle = None
    if len(records) > 1:
        for half in (records[:len(records) // 2], records[len(records) // 2:]):
            more, made = _debug_build(half)
            live.update(more)
            handles += made
    return live, handles


def runs(kernel, variant: dict, seeds: int = CHECK_SEEDS) -> bool:
    """Whether ``kernel`` gives finite outputs, the same on a second run, on the input sets an
    eval draws from ``variant`` (``seeds`` times)."""
    from jit.code.checks import launch as L
    from jit.code.evaluation import running

    plan = L.plan_from_metadata(kernel, {"launch": variant})
    for seed in range(seeds):
        for values in variant_sets(plan, 1, np.random.default_rng(seed), variant):
            values.pop(running.VARIANT)
            first, second = running.arrays_after(kernel, plan, values), running.arrays_after(kernel, plan, values)
            for name, got in first.items():
                if not L.same_bits(got, second[name]):
                    return False
                if any(leaf.dtype.kind == "f" and not np.all(np.isfinite(leaf)) for leaf in L.leaves(got)):
                    return False
    return True
