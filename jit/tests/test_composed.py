"""Composed kernels: they say what they do, read like code, build, run in bounds, and keep physics.

A fixed sample of the ``composed`` source is built once in Warp's debug mode (every array access
bounds-checked: an out-of-range index aborts the launch) and run through the package's execute
path on the CPU with inputs drawn from each kernel's launch description; a second, ordinary
build runs the gradient check. Launches run in a forked child (``bounded``), so an abort fails
the kernel and not the test session.
"""

from __future__ import annotations

import ast
import builtins
import collections
import functools
import re
import types

import numpy as np
import pytest
import warp as wp

from jit.code.checks import bounded
from jit.code.checks import execute as ex
from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.docs import summary
from jit.code.synthesis.generator import CATEGORIES, generate
from jit.code.synthesis.layout import format_source
from jit.code.synthesis.pieces.base import plural

SEED = 11
SAMPLE = 40
COMPOSED = sorted(n for n, c in CATEGORIES.items() if c.source == "composed")


@pytest.fixture(scope="module")
def specs():
    return [generate(SEED, i, sources=["composed"]) for i in range(SAMPLE)]


def kernel_def(source: str) -> ast.FunctionDef:
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
                and any("kernel" in ast.unparse(d) for d in n.decorator_list))


# ---------------------------------------------------------------------------------------------
# text


def test_every_category_draws(specs):
    for name in COMPOSED:
        for i in range(4):  # a composition bug raises (unread parameter or local)
            spec = generate(SEED, i, categories=[name])
            assert spec.metadata["purpose"], name


def test_kernels_say_what_they_do(specs):
    """Every record has its purpose; a docstring, where the author wrote one, opens with its summary."""
    documented = 0
    for spec in specs:
        doc = ast.get_docstring(kernel_def(spec.source))
        purpose = spec.metadata["purpose"]
        assert purpose and len(purpose) > 30, spec.source
        if doc:
            documented += 1
            assert " ".join(doc.split()).startswith(summary(purpose)[0]), (doc, purpose)
        assert spec.metadata["pieces"], spec.name
    assert 0.2 * len(specs) <= documented <= 0.7 * len(specs)  # some: most authors write none


def test_sources_are_laid_out_and_replayable(specs):
    for spec in specs:
        assert format_source(spec.source) == spec.source, spec.name
        assert generate(SEED, spec.index, sources=["composed"]).source == spec.source
        suffix = spec.name.rsplit("_", 1)[1]
        top = [n.name for n in ast.parse(spec.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert all(n.endswith(suffix) for n in top), top


def test_no_dead_values_or_programmatic_spellings(specs):
    for spec in specs:
        tree = ast.parse(spec.source)
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            stores = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            assert stores - {"_"} <= loads, (stores - loads, spec.source)
            params = {a.arg for a in fn.args.args}
            assert params <= loads, (params - loads, spec.source)
        body = "\n".join(line for line in spec.source.splitlines() if not line.strip().startswith(("#", '"')))
        assert not re.search(r"\d[eE][+-]?0\d", body), spec.source  # 1e-06: how repr, not an author, writes
        assert not re.search(r"\b(\w+) - \1\b(?!\[)", body), spec.source  # x - x
        assert not re.search(r"wp\.(max|min)\((\w+), \2\)", body), spec.source


def _kernel_arrays(k: ast.FunctionDef) -> tuple[dict[str, str], set[str], set[str]]:
    """Parameter annotations, the arrays the kernel reads (indexes or asks the shape of), and those it
    only hands to helpers (which may read or write them)."""
    params = {a.arg: ast.unparse(a.annotation) for a in k.args.args}
    read, passed = set(), set()
    for n in ast.walk(k):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name):
            read.add(n.value.id)
        if isinstance(n, ast.Attribute) and n.attr == "shape" and isinstance(n.value, ast.Name):
            read.add(n.value.id)
        if isinstance(n, ast.Call) and not ast.unparse(n.func).startswith("wp.atomic"):
            passed |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return params, read, passed - read


def _straight_line(k: ast.FunctionDef) -> ast.FunctionDef:
    """The kernel without its early exits (a border cell copying its input, then returning)."""
    k = ast.parse(ast.unparse(k)).body[0]
    for node in ast.walk(k):
        for name in ("body", "orelse"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                kept = [b for b in block if not (isinstance(b, ast.If) and isinstance(b.body[-1], ast.Return))]
                setattr(node, name, kept or [ast.Pass()])
    return k


REUSABLE = {f"wp.{f}" for f in ("dot", "length", "length_sq", "cross", "normalize", "trace", "identity", "transpose",
                                  "determinant", "inverse", "outer")}


def slips(source: str, roles: dict | None = None) -> list[str]:
    """What a reviewer of Warp code flags, found in the text: see ``test_no_reviewer_slips``
    (``roles``: the launch's role of each argument, where known)."""
    tree = ast.parse(source)
    k = kernel_def(source)
    suffix = k.name.rsplit("_", 1)[1]
    helpers = {n.name.rsplit("_", 1)[0] for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    found = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        stores = collections.Counter(t.id for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign))
                                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                                     if isinstance(t, ast.Name))
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and isinstance(n.targets[0], ast.Name) \
                    and stores[n.targets[0].id] == 1:
                found.append(f"alias {n.targets[0].id} = {n.value.id}")
        names = set(stores) | {a.arg for a in fn.args.args}
        found += [f"{n} named as a helper" for n in sorted(names & helpers)]
        found += [f"{n} hides a builtin" for n in sorted(names & set(dir(builtins)))]
    params, read, passed = _kernel_arrays(k)
    for name, ann in params.items():
        if not ann.startswith("wp.array") and not ann.endswith(suffix) and "int" not in ann and plural(name):
            found.append(f"one value named as many: {name}")
    # inputs, values, outputs; a state overwritten in place (``roles``: the launch's, "inout"; a
    # respawned particle's ``v`` beside its ``x``) is an input, unless it is only accumulated into
    rank = []
    for name, ann in params.items():
        if name in passed:
            continue
        array = ann.startswith("wp.array")
        state = array and (roles or {}).get(name) == "inout" and not re.search(
            rf"wp\.atomic_\w+\({name},|\b{name}\[[^\]]*\] [-+]=", source)
        rank.append(0 if array and (name in read or state) else 2 if array else 1)
    if rank != sorted(rank):
        found.append(f"parameters not ordered inputs, values, outputs: {list(params)}")
    seen = collections.Counter()
    for n in ast.walk(_straight_line(k)):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name) \
                and n.value.id in params:
            seen[ast.unparse(n)] += 1
        if isinstance(n, ast.Call) and re.match(r"wp\.vec\d", ast.unparse(n.func)) and \
                any(isinstance(a, ast.Name) for a in n.args):
            seen[ast.unparse(n)] += 1
        if isinstance(n, ast.BinOp) and all(isinstance(s, (ast.Name, ast.Subscript)) for s in (n.left, n.right)):
            seen[ast.unparse(n)] += 1
        if isinstance(n, ast.Call) and ast.unparse(n.func) in REUSABLE and \
                all(isinstance(a, (ast.Name, ast.Subscript, ast.Constant)) for a in n.args):
            seen[ast.unparse(n)] += 1
    found += [f"computed {c} times: {e}" for e, c in seen.items() if c > 1]
    return found


def test_slips_are_found():
    """The finder catches each kind of slip it looks for (so a clean sample means something)."""
    bad = '''import warp as wp


@wp.func
def damp_00000000(v: wp.vec3, rate: float):
    return v * rate


@wp.kernel
def k_00000000(out: wp.array(dtype=wp.vec3), x: wp.array(dtype=wp.vec3), masses: float, damp: float, g: float):
    tid = wp.tid()
    m = masses
    dir = wp.vec3(0.0, g, 0.0) + wp.vec3(0.0, g, 0.0)
    s = wp.length(dir) / wp.length(dir)
    out[tid] = damp_00000000(x[tid] - x[tid - 1], damp) * m + (x[tid] - x[tid - 1]) + dir * s
'''
    found = " | ".join(slips(bad))
    for kind in ("alias m = masses", "damp named as a helper", "dir hides a builtin", "one value named as many: masses",
                 "not ordered", "computed 2 times: wp.vec3(0.0, g, 0.0)", "computed 2 times: x[tid]",
                 "computed 2 times: wp.length(dir)"):
        assert kind in found, (kind, found)


def test_no_reviewer_slips():
    """No alias of a value, no value named as a helper, singular names for one value, inputs before
    values before outputs, nothing computed or read twice on one path."""
    for i in range(150):
        spec = generate(SEED + 1, i, sources=["composed"])
        roles = {a["name"]: a["role"] for a in spec.metadata["launch"]["args"]}
        assert not slips(spec.source, roles), (slips(spec.source, roles), spec.source)


EFFECTS = {"linear_drag", "quadratic_drag", "wind_drag", "tether_force", "buoyancy_force", "ground_penalty_force",
           "velocity_damping", "clamp_speed", "ground_contact", "sphere_contact",
           "box_container", "sdf_contact"}
DISSIPATION = {"linear_drag", "quadratic_drag", "wind_drag", "velocity_damping"}


def test_particle_steps_do_one_job():
    """Besides the integrator, at most three effects, and at most one way of losing energy to drag."""
    for i in range(80):
        spec = generate(SEED, i, categories=["integrate_particles"])
        used = set(spec.metadata["pieces"])
        effects = used & EFFECTS
        assert len(effects) + ("external_forces" in spec.source) <= 3, (effects, spec.source)
        assert len(used & DISSIPATION) <= 1, spec.source


def test_purposes_vary():
    purposes = {generate(3, i, sources=["composed"]).metadata["purpose"] for i in range(300)}
    assert len(purposes) >= 150, len(purposes)


# ---------------------------------------------------------------------------------------------
# build and run


def _build(specs, name: str, debug: bool, backward: bool):
    handle = wb.define([s.source for s in specs], f"{name}_{SEED}")
    ex.set_cpu_options(handle.module, backward)
    if debug:
        wp.set_module_options({"mode": "debug"}, handle.module)
    wp.load_module(handle.module, device="cpu", block_dim=1)
    return handle


def _execute(job, spec, backward):
    reason = ex.execute_one(job, ex.item_rng(spec), spec.metadata, backward)
    return reason, dict(job.record.validation)


def _run_all(specs, handle, backward: bool) -> dict:
    jobs = []
    for spec in specs:
        kernel = handle.namespace[spec.name]
        record = types.SimpleNamespace(io=None, validation={})
        jobs.append(ex.Job(spec.name, kernel, ex.plan_from_metadata(kernel, spec.metadata), record))
    calls = [functools.partial(_execute, job, spec, backward) for job, spec in zip(jobs, specs)]
    return {s.name: r for s, r in zip(specs, bounded.run_bounded(calls, ex.EXECUTE_SECONDS))}


def test_build_and_run_in_bounds(specs):
    """Debug build: any out-of-bounds index aborts the child and fails its kernel."""
    handle = _build(specs, "test_composed_debug", debug=True, backward=False)
    try:
        results = _run_all(specs, handle, backward=False)
    finally:
        handle.release()
    bad = {name: r for name, r in results.items() if r[0] != "ok" or r[1][0] is not None}
    assert not bad, bad
    assert all(r[1][1]["cpu"] == "executed" for r in results.values())


def test_gradients_agree_with_finite_differences(specs):
    handle = _build(specs, "test_composed_grad", debug=False, backward=True)
    try:
        results = _run_all(specs, handle, backward=True)
    finally:
        handle.release()
    verdicts = [r[1][1].get("gradient") for r in results.values() if r[0] == "ok"]
    assert len(verdicts) == len(specs)
    # contacts and walls make outputs jump; a difference quotient across a jump can disagree
    assert verdicts.count("failed") <= 1, results
    assert verdicts.count("passed") >= len(specs) // 2, verdicts


# ---------------------------------------------------------------------------------------------
# physics of whole kernels


def _first(category: str, ok) -> object:
    for i in range(200):
        spec = generate(SEED, i, categories=[category])
        if ok(spec):
            return spec
    raise AssertionError(f"no {category} kernel of the wanted shape")


def _force_output(spec) -> str | None:
    outs = [a for a in spec.metadata["launch"]["args"] if a["kind"] == "array" and a["role"] in ("out", "inout")
            and a["dtype"].startswith("vec") and a["dtype"][-1] == "f"]
    return outs[0]["name"] if len(outs) == 1 else None


def _run_once(spec, tag: str, seed: int, adjust=None) -> tuple[dict, dict]:
    """(the inputs, the outputs) of one CPU launch of ``spec`` on random values of its launch plan;
    ``adjust`` may change the values before the launch."""
    handle = wb.define([spec.source], tag)
    try:
        ex.set_cpu_options(handle.module, backward=False)
        kernel = handle.namespace[spec.name]
        plan = ex.plan_from_metadata(kernel, spec.metadata)
        values = ex.random_values(plan, np.random.default_rng(seed))
        if adjust is not None:
            adjust(values)
        inputs = {name: np.array(value, copy=True) for name, value in values.items()}
        return inputs, ex.run_outputs(kernel, plan, values)
    finally:
        handle.release()


@pytest.mark.parametrize("category", ["spring_network", "particle_contacts", "fem_forces"])
def test_internal_forces_sum_to_zero(category):
    """Whatever the composition, the forces a kernel scatters onto particles balance out."""
    spec = _first(category, lambda s: "float64" not in s.source and _force_output(s) is not None)
    out = _force_output(spec)
    values, outputs = _run_once(spec, f"test_composed_forces_{category}", 5)
    before, after = values[out].astype(np.float64), outputs[out].astype(np.float64)
    # float32 atomics round each addition: the tolerance scales with the forces added, not their sum
    scale = max(1.0, float(np.abs(after - before).max()))
    np.testing.assert_allclose(after.sum(axis=0), before.sum(axis=0), atol=1e-5 * scale * len(after))


def test_speed_limit_holds_before_the_position_moves():
    """Clamped before the drift, no particle moves farther in a step than the speed limit allows."""
    def plain(s):  # a limit, no colliders or substeps to move particles further, values as plain arguments
        used = set(s.metadata["pieces"])
        return "clamp_speed" in used and not used & {"ground_contact", "sphere_contact", "box_container",
                                                     "sdf_contact"} and "range(" not in s.source \
            and "params." not in s.source and "wp.struct" not in s.source
    spec = _first("integrate_particles", plain)
    args = {a["name"]: a for a in spec.metadata["launch"]["args"]}
    limit = next(n for n in args if n in ("max_speed", "speed_limit", "max_velocity"))
    dt = next(n for n in args if n in ("dt", "delta_time", "time_step"))
    x_in = next(n for n in args if n in ("positions", "particle_x", "x"))
    x_out = next((n for n in (f"{x_in}_out", f"new_{x_in}") if n in args), x_in)
    def slow(values):  # a limit below the speeds the inputs start with
        values[limit] = np.asarray(0.5, values[limit].dtype)

    values, outputs = _run_once(spec, "test_composed_speed_limit", 7, slow)
    before, after = values[x_in].astype(np.float64), outputs[x_out].astype(np.float64)
    step = np.linalg.norm(after - before, axis=1)
    assert np.all(step <= 0.5 * float(values[dt]) * (1 + 1e-4)), (step.max(), spec.source)
    assert np.any(step > 0.4 * float(values[dt])), spec.source  # the limit binds for some


# ---------------------------------------------------------------------------------------------
# values the same for every thread are the caller's


DAMPED = ["wave_grid", "diffuse_grid", "advect_grid", "integrate_particles", "pbd_update", "integrate_bodies"]


def uniform_exps(source: str, spec) -> list[str]:
    """``wp.exp`` calls of the kernel whose argument reads only values that are one for the whole launch
    (scalar and struct parameters, literals), and any ``wp.exp`` in a helper of these jobs (none of them
    takes the exponential of a per-item value)."""
    uniform = {a["name"] for a in spec.metadata["launch"]["args"] if a["kind"] != "array"}
    found = []
    for fn in (n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)):
        is_kernel = any("kernel" in ast.unparse(d) for d in fn.decorator_list)
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and ast.unparse(n.func) == "wp.exp"):
            names = {n.id for n in ast.walk(call) if isinstance(n, ast.Name) and n.id != "wp"}
            if not is_kernel or names <= uniform:
                found.append(ast.unparse(call))
    return found


@pytest.mark.parametrize("category", DAMPED)
def test_per_step_decay_factors_come_from_the_caller(category):
    """exp(-k dt) of a damping or decay rate is one value per step: passed in, never computed per thread,
    with a launch range of factors in (0, 1]."""
    seen = 0
    for i in range(60):
        spec = generate(SEED, i, categories=[category])
        assert not uniform_exps(spec.source, spec), spec.source
        args = spec.metadata["launch"]["args"]
        ranges = [r for a in args for n, r in ([(a["name"], a["range"])] + list((a.get("field_ranges") or {}).items()))
                  if n.endswith(("_factor", "_decay"))]
        for lo, hi in ranges:
            assert 0.0 < lo <= hi <= 1.0, (ranges, spec.source)
        seen += bool(ranges)
    assert seen, category  # some kernels of the job damp or decay


def test_sph_forces_normalise_each_kernel_by_its_own_constant():
    """The spiky gradient and the viscosity Laplacian each take their normalisation (Mueller et al. 2003 in
    3D, the planar kernels' in 2D), over the smoothing lengths the launch draws; all-pairs loops run over
    the positions array, with no particle count passed beside it."""
    from jit.code.synthesis.pieces.sph import norm_range

    kinds = collections.Counter()
    for i in range(120):
        spec = generate(SEED, i, categories=["sph_fluid"])
        source = spec.source
        # every value's range by name, a parameter struct's fields included
        ranges = {n: tuple(r) for a in spec.metadata["launch"]["args"]
                  for n, r in [(a["name"], a["range"]), *(a.get("field_ranges") or {}).items()]}
        for loop in re.findall(r"for j in range\(([^)]*)\)", source):
            assert loop.endswith(".shape[0]"), source
        assert not {"num_particles", "n"} & set(ranges), source
        if "pressure_pair_acceleration" not in spec.metadata["pieces"]:
            continue
        dim = 2 if "vec2" in source else 3
        viscous = "viscosity_pair_acceleration" in spec.metadata["pieces"]
        if viscous and dim == 3:  # the two 3D constants are one, 45 / (pi h^6): one parameter, one product
            norm = next(n for n in ranges if n in ("kernel_norm", "pair_norm"))
            assert ranges[norm] == norm_range("spiky_grad", 3) == norm_range("visc_lap", 3), source
            assert re.search(rf"\(\w+ \+ \w+\) \* (\w+\.)?{norm}\b", source), source
            assert not {"spiky_grad_norm", "spiky_norm", "visc_lap_norm", "viscosity_norm"} & set(ranges), source
            kinds[dim, True] += 1
            continue
        spiky = next(n for n in ranges if n in ("spiky_grad_norm", "spiky_norm"))
        assert ranges[spiky] == norm_range("spiky_grad", dim), source
        visc = next((n for n in ranges if n in ("visc_lap_norm", "viscosity_norm")), None)
        if viscous:
            assert visc and ranges[visc] == norm_range("visc_lap", dim), source
            assert re.search(rf"\* (\w+\.)?{spiky} \+ \w+ \* (\w+\.)?{visc}\b", source), source
        kinds[dim, visc is not None] += 1
    assert len(kinds) >= 3, kinds  # 2D and 3D, with and without viscosity


def test_position_prediction_writes_only_its_outputs():
    """A PBD prediction reads positions and velocities and writes the predicted positions (and, if so
    drawn, the predicted velocities) to their own arrays: no input is updated in place."""
    forms = set()
    for i in range(80):
        spec = generate(SEED, i, categories=["pbd_update"])
        if "symplectic_euler" not in spec.metadata["pieces"]:
            continue
        args = spec.metadata["launch"]["args"]
        ins = [a["name"] for a in args if a["kind"] == "array" and a["role"] == "in"]
        outs = [a["name"] for a in args if a["role"] in ("out", "inout")]
        assert all(a["role"] == "out" for a in args if a["name"] in outs), spec.source
        for name in ins:
            assert not re.search(rf"\b{name}\[[^]]*\] =", spec.source), spec.source
        forms.add(len(outs))
        assert ("velocities" in spec.metadata["purpose"]) and (len(outs) in (1, 2)), spec.source
    assert forms == {1, 2}, forms


def test_a_substep_loop_reads_no_array_and_repeats_no_steady_force():
    """Inside a substep loop nothing is read from an array (a particle's inputs do not change during
    its step) and no force that depends on neither position nor velocity (buoyancy) is computed
    again: both happen once, before the loop."""
    seen = 0
    for i in range(400):
        spec = generate(SEED, i, categories=["integrate_particles"])
        loops = [n for n in ast.walk(ast.parse(spec.source)) if isinstance(n, ast.For)]
        if not loops:
            continue
        seen += 1
        inside = [n for stmt in loops[0].body for n in ast.walk(stmt)]
        reads = [ast.unparse(n) for n in inside if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                 and isinstance(n.slice, ast.Name) and n.slice.id == "tid"]
        assert not reads, (reads, spec.source)
        assigned = {t.id for n in inside if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert not {"f_buoyancy", "f_lift"} & assigned, spec.source
        if seen >= 12:
            break
    assert seen >= 6


def overwritten_stores(statements: list[ast.stmt]) -> list[str]:
    """Array elements stored and then stored again later in the same block (or a block nested in
    it) with no read of that array in between: the first store is a no-op on every path."""
    found = []
    for i, s in enumerate(statements):
        target = s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else None
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            text, array = ast.unparse(target), target.value.id
            for later in statements[i + 1:]:
                read = any(isinstance(n, ast.Name) and n.id == array and not (
                    isinstance(p, ast.Subscript) and isinstance(p.ctx, ast.Store) and p.value is n)
                    for p in ast.walk(later) for n in ast.iter_child_nodes(p))
                again = any(isinstance(n, ast.Assign) and any(ast.unparse(t) == text for t in n.targets)
                            for n in ast.walk(later))
                if again and not read:
                    found.append(text)
                if again or read:
                    break
        for field in ("body", "orelse"):
            found += overwritten_stores(getattr(s, field, None) or [])
    return found


def test_no_array_element_is_stored_and_then_overwritten():
    emitted = '''
def emit(age, x, dt, life):
    tid = wp.tid()
    a = age[tid] + dt
    age[tid] = a
    if a > life:
        x[tid] = wp.vec3()
        age[tid] = 0.0
'''
    assert overwritten_stores(ast.parse(emitted).body[0].body) == ["age[tid]"]  # the check finds it
    for spec in [generate(SEED, i, categories=["emit_particles"]) for i in range(40)] + [
            generate(SEED, i, sources=[source]) for source in ("composed", "patterns") for i in range(150)]:
        assert not overwritten_stores(kernel_def(spec.source).body), spec.source


def test_a_loop_builds_no_vector_that_is_the_same_in_every_iteration():
    """A constant vector (an up axis, gravity as a vector) is built once, before a substep loop."""
    looped = 0
    for i in range(300):
        spec = generate(SEED, i, categories=["integrate_particles"])
        loops = [n for n in ast.walk(kernel_def(spec.source)) if isinstance(n, ast.For)]
        looped += bool(loops)
        for loop in loops:
            assigned = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            built = [n.value for n in ast.walk(loop) if isinstance(n, ast.Assign)]  # assigned whole: up = wp.vec3(...)
            built += [n for n in ast.walk(loop) if isinstance(n, ast.Call) and any(  # from a caller's value: gravity
                isinstance(a, (ast.Name, ast.Attribute)) for a in n.args)]
            for node in built:
                if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("wp.vec"):
                    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {"wp"}
                    assert names & assigned, (ast.unparse(node), spec.source)  # something of the loop's own
    assert looped >= 20


def test_first_derivatives_are_central_differences_everywhere_they_are_written():
    """A clamped neighbour would make the border's central difference span one cell over 2 dx (half
    the one-sided slope): first derivatives wrap around or leave the border out."""
    boundaries = collections.Counter()
    for i in range(80):
        spec = generate(SEED, i, categories=["grid_derivatives"])
        assert not re.search(r"wp\.(max|min)\([ijk] [-+] 1, ", spec.source), spec.source
        boundaries["periodic" if "%" in spec.source else "interior"] += 1
    assert len(boundaries) == 2, boundaries


def test_a_ray_caster_reports_sphere_ids_only_where_every_hit_is_a_sphere():
    """Ids, normals and shading of the sphere hit come only from scenes of spheres alone: a plane or box
    hit would shorten the depth and leave the other outputs at their miss values."""
    tracked = 0
    for i in range(200):
        spec = generate(SEED, i, categories=["cast_rays", "body_points"])
        purpose = spec.metadata["purpose"]
        if spec.category == "cast_rays" and re.search(r"which sphere|of the spheres hit|off the spheres", purpose):
            tracked += 1
            assert "plane" not in purpose and "box" not in purpose, purpose
        if spec.category == "body_points" and "contact" in purpose:
            assert "normals rotated" not in purpose, purpose  # a contact test and a normal transform: two jobs
    assert tracked >= 5


def test_contact_kernels_normalise_only_pairs_that_touch():
    """The pair's direction is computed inside the touching test, not for every candidate pair."""
    checked = 0
    for i in range(120):
        spec = generate(SEED, i, categories=["particle_contacts", "granular_contacts"])
        fn = kernel_def(spec.source)
        touching = [n for n in ast.walk(fn) if isinstance(n, ast.If) and re.fullmatch(r"\w+ < \w+", ast.unparse(n.test))
                    and ast.unparse(n.test).startswith(("length", "dist"))]
        assert len(touching) == 1, spec.source
        inside = {id(n) for n in ast.walk(touching[0])}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and "wp.max(" in ast.unparse(node.value) and "/" in ast.unparse(node.value):
                assert id(node) in inside, spec.source
                checked += 1
    assert checked >= 60


def test_a_center_of_mass_weights_each_particle_by_its_own_mass():
    """With one mass for all the weighting cancels (the mean position) and every thread adds the same
    constant to the total mass: a center of mass reads a mass per particle."""
    seen = 0
    for i in range(200):
        spec = generate(SEED, i, categories=["reduce_particles"])
        if "mass_moment" not in spec.metadata["pieces"]:
            continue
        seen += 1
        masses = [a for a in spec.metadata["launch"]["args"] if "mass" in a["name"] and a["role"] == "in"]
        assert masses and all(a["kind"] == "array" for a in masses), spec.source
    assert seen >= 5


def test_a_hash_grid_neighbor_loop_sums_what_all_pairs_sum():
    """SPH densities over the neighbors a wp.HashGrid finds (built from the launch's recipe) equal
    NumPy's sum of poly6 weights (h^2 - r^2)^3 over every pair within h."""
    def wanted(s):
        return ("hash_grid_query" in s.source and "poly6_weight" in s.metadata["pieces"]
                and "poly6_density" not in s.metadata["pieces"] and "params." not in s.source)
    spec = _first("sph_fluid", wanted)
    args = {a["name"]: a for a in spec.metadata["launch"]["args"]}
    grid = next(a for a in args.values() if a["kind"] == "handle")
    assert grid["build"]["object"] == "hash_grid"
    x, h = grid["build"]["points"], next(n for n in args if n in ("h", "smoothing_length", "kernel_radius"))
    mass = next(n for n in args if n in ("mass", "particle_mass"))
    norm = next(n for n in args if n in ("density_normalization", "poly6_norm"))
    rho = next(n for n in args if n in ("densities", "particle_rho", "rho_out"))
    values, outputs = _run_once(spec, "test_composed_hash_grid", 3)
    got = outputs[rho].astype(np.float64)
    p = values[x].astype(np.float64)
    r2 = ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1)
    support = float(values[h]) ** 2
    weights = np.where(r2 < support, (support - r2) ** 3, 0.0)
    want = weights.sum(axis=1) * float(values[mass]) * float(values[norm])
    assert (weights > 0).sum() > len(p)  # some pairs other than each particle with itself
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * float(np.abs(want).max()))
