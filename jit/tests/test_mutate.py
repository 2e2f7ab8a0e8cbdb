"""Mutants of real kernels compute what their seeds compute, carry launches, and read like real code.

Truth comes from running: for every mutation kind, seed and mutant are built on the CPU and
launched on the same inputs (mapped through each launch argument's ``origin`` where the
mutation moved data around), and their outputs must agree to NumPy tolerance. The rest checks
what a reviewer would: no test scaffolding left, every mutant's source rebuilds alone, the same
(seed, index) gives the same mutant, and the launch is in the form the execute check reads.
"""

from __future__ import annotations

import ast
import itertools
import random
import re

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis import mutate as M
from jit.code.synthesis.generator import generate
from jit.code.synthesis.mutate import driver, names, rebuild, retype, scaffolding
from jit.code.synthesis.mutate.infer import differentiable, infer
from jit.code.synthesis.mutate.verify import draw, numpy_dtype, to_value, zeros

_modules = itertools.count()

PARTICLES = """import warp as wp

GRAVITY = wp.constant(wp.vec3(0.0, -9.8, 0.0))


@wp.func
def spring_force(x: wp.vec3, rest: float, k: float):
    return x * (k * (wp.length(x) - rest))


@wp.kernel
def integrate(x: wp.array[wp.vec3], v: wp.array[wp.vec3], out: wp.array[wp.vec3], dt: float):
    tid = wp.tid()
    p = x[tid]
    vel = v[tid]
    # pull towards the rest length
    f = spring_force(p, 1.0, 2.0)
    acc = GRAVITY - f
    vel_new = vel + acc * dt
    speed = wp.length(vel_new)
    if speed > 10.0:
        vel_new = vel_new * (10.0 / speed)
    out[tid] = p + vel_new * dt + wp.normalize(p) * wp.min(speed, 1.0)
"""

STENCIL = """import warp as wp


@wp.kernel
def diffuse(u: wp.array2d[float], u_new: wp.array2d[float], alpha: float):
    i, j = wp.tid()
    nx = u.shape[0]
    ny = u.shape[1]
    left = u[wp.max(i - 1, 0), j]
    right = u[wp.min(i + 1, nx - 1), j]
    down = u[i, wp.max(j - 1, 0)]
    up = u[i, wp.min(j + 1, ny - 1)]
    u_new[i, j] = u[i, j] + alpha * (left + right + down + up - 4.0 * u[i, j])
"""

BLEND = """import warp as wp


@wp.kernel
def blend(a: wp.array[wp.vec3], b: wp.array[wp.vec3], w: wp.array[float], out: wp.array[wp.vec3],
          proj: wp.array[float]):
    i = wp.tid()
    d = b[i] - a[i]
    mixed = a[i] + d * w[i]
    out[i] = wp.normalize(mixed) * wp.length(d)
    proj[i] = wp.dot(mixed, d)
"""

ROWS = """import warp as wp


@wp.kernel
def scale_rows(m: wp.array2d[float], out: wp.array2d[float], scale: wp.array[float]):
    i = wp.tid()
    out[0, i] = m[i, 0] * scale[0]
    out[1, i] = m[i, 1] * scale[1]
    out[2, i] = m[i, 2] * scale[2]
    total = float(0.0)
    for k in range(3):
        total += m[i, k]
    out[3, i] = total
"""

BODIES = """import warp as wp


@wp.struct
class Body:
    pos: wp.vec3
    vel: wp.vec3
    mass: float


@wp.kernel
def advance(bodies: wp.array[Body], dt: float, energy: wp.array[float]):
    i = wp.tid()
    bodies[i].pos = bodies[i].pos + bodies[i].vel * dt
    energy[i] = 0.5 * bodies[i].mass * wp.dot(bodies[i].vel, bodies[i].vel)
"""

DRIFT = """import warp as wp


@wp.kernel
def drift(
    particle_x: wp.array[wp.vec3], particle_v: wp.array[wp.vec3], particle_radius: wp.array[float], dt: float,
    out: wp.array[wp.vec3],
):
    i = wp.tid()
    out[i] = particle_x[i] + particle_v[i] * (dt * particle_radius[i])
"""

HAND = {
    "integrate": PARTICLES,
    "diffuse": STENCIL,
    "blend": BLEND,
    "scale_rows": ROWS,
    "advance": BODIES,
    "drift": DRIFT,
}
KINDS = [*M.MUTATIONS, "rename"]
PAIRS_PER_KIND = 3


# ---------------------------------------------------------------------------------------------
# seed and mutant on the same inputs


def apply_kind(unit: M.Unit, kind: str, rng: random.Random) -> str | None:
    if kind == "rename":
        return ", ".join(names.rename(unit, rng, p=1.0)) or None
    return driver.run(unit, kind, rng, retype.precision_options(unit.tree))


def pairs_for(kind: str, sources: list[tuple[str, str, M.Launch]], wanted: int) -> list[tuple]:
    """(seed unit, mutant unit, description) of ``kind`` alone applied to the first sources it fits."""
    out = []
    for n, (name, text, launch) in enumerate(sources):
        for attempt in range(6):
            unit = M.Unit(text, name, f"{kind}m{n}_{attempt}", launch)
            desc = apply_kind(unit, kind, random.Random(attempt))
            if desc:
                out.append((M.Unit(text, name, f"{kind}s{n}_{attempt}", launch), unit, desc))
                break
        if len(out) == wanted:
            break
    return out


def real_sources() -> list[tuple[str, str, M.Launch]]:
    """Runnable, untiled committed seeds, every other one."""
    chosen = [s for s in M.seeds() if s.runnable and s.block_dim is None][::2]
    return [(s.kernel, M.seed_text(s), M.seed_launch(s)) for s in chosen]


def hand_sources() -> list[tuple[str, str, M.Launch]]:
    return [(name, text, infer(M.Unit(text, name))) for name, text in HAND.items()]


@pytest.fixture(scope="module")
def all_pairs():
    hand, real = hand_sources(), real_sources()
    found = {}
    for kind in KINDS:
        pairs = pairs_for(kind, hand, 2 if kind == "layout" else 1)  # a struct split and a pack
        found[kind] = pairs + pairs_for(kind, real, PAIRS_PER_KIND - len(pairs))
    units = [u for pairs in found.values() for s, m, _ in pairs for u in (s, m)]
    handle = wb.define([u.render() for u in units], f"jit_test_mutants_{next(_modules)}")
    wp.set_module_options({"enable_backward": False, "fuse_fp": False, "cpu_compiler_flags": "-w"}, handle.module)
    yield found, handle.namespace
    handle.release()


def convert(value: np.ndarray, t) -> np.ndarray:
    """``value`` as numpy data of Warp type ``t`` (a precision change casts, field by field)."""
    if value.dtype.names is None:
        return np.asarray(value).astype(numpy_dtype(t))
    out = zeros(t, value.shape)
    for name, var in t.vars.items():
        out[name] = convert(value[name], var.type)
    return out


def element_type(t):
    return t.dtype if wp.types.is_array(t) else t


def mutant_inputs(seed_values: dict, seed_launch: M.Launch, mutant, types: dict) -> dict:
    out = {}
    for arg in mutant.launch.args:
        t = element_type(types[arg.name])
        kind, source = arg.origin[0], arg.origin[1]
        if kind == "count":
            out[arg.name] = np.asarray(seed_launch.dim[source])
        elif kind == "component":
            out[arg.name] = convert(seed_values[source][..., arg.origin[2]], t)
        elif kind == "field":
            out[arg.name] = convert(seed_values[source][arg.origin[2]], t)
        elif kind == "packed":
            first = seed_values[source[0][1]]
            value = zeros(t, first.shape[:1])
            for field, name in source:
                value[field] = convert(seed_values[name], t.vars[field].type)
            out[arg.name] = value
        elif kind == "padded":
            out[arg.name] = resize(seed_values[source], getattr(t, "_length_", 0), t)
        else:
            out[arg.name] = convert(seed_values[source], t)
    return out


def resize(value: np.ndarray, width: int, t) -> np.ndarray:
    have = value.shape[-1]
    if width <= have:
        return convert(value[..., :width], t)
    pad = np.zeros(value.shape[:-1] + (width - have,), value.dtype)
    return convert(np.concatenate([value, pad], axis=-1), t)


def launch(kernel, lnch: M.Launch, values: dict, types: dict) -> dict[str, np.ndarray]:
    bound = []
    for a in lnch.args:
        t = types[a.name]
        bound.append(
            wp.array(values[a.name], dtype=t.dtype, device="cpu")
            if wp.types.is_array(t)
            else to_value(t, values[a.name])
        )
    wp.launch(kernel, dim=lnch.dim, inputs=bound, device="cpu")
    return {a.name: b.numpy() for a, b in zip(lnch.args, bound) if wp.types.is_array(types[a.name])}


def seed_inputs(seed, mutant, types: dict, mutant_types: dict, rng: np.random.Generator) -> dict:
    values = {}
    for a in seed.launch.args:
        t = types[a.name]
        shape = tuple(a.shape) if wp.types.is_array(t) else ()
        values[a.name] = (
            zeros(element_type(t), shape) if a.role == "out" and shape else draw(rng, element_type(t), shape, *a.range)
        )
    for arg in mutant.launch.args:  # a narrower mutant sees only what the seed's extra components do not hold
        if arg.origin[0] == "padded":
            width = getattr(element_type(mutant_types[arg.name]), "_length_", 0)
            values[arg.origin[1]][..., width:] = 0
    return values


def leaves(value: np.ndarray) -> list[np.ndarray]:
    if value.dtype.names is None:
        return [np.asarray(value, dtype=np.float64)]
    return [leaf for n in value.dtype.names for leaf in leaves(value[n])]


def compare(seed_out: dict, mutant_out: dict, mutant, desc: str, tol: float) -> None:
    for arg in mutant.launch.args:
        if arg.role == "in" or arg.name not in mutant_out or arg.origin[0] in ("count", "packed"):
            continue
        kind, source = arg.origin[0], arg.origin[1]
        want = seed_out[source]
        if kind == "component":
            want = want[..., arg.origin[2]]
        elif kind == "field":
            want = want[arg.origin[2]]
        got = mutant_out[arg.name]
        if kind == "padded":
            width = min(want.shape[-1], got.shape[-1])
            assert not np.any(got[..., width:]), desc
            want, got = want[..., :width], got[..., :width]
        for w, g in zip(leaves(want), leaves(got)):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{desc}: {arg.name}")


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_keeps_what_the_kernel_computes(all_pairs, kind):
    found, namespace = all_pairs
    pairs = found[kind]
    assert pairs, f"{kind} applies to none of the hand-written and sampled seeds"
    assert len(pairs) == PAIRS_PER_KIND or kind in ("width", "unroll", "roll"), kind
    rng = np.random.default_rng(0)
    for seed, mutant, desc in pairs:
        sk, mk = namespace[seed.kernel_name], namespace[mutant.kernel_name]
        stypes, mtypes = dict(wb.argument_type_objects(sk)), dict(wb.argument_type_objects(mk))
        values = seed_inputs(seed, mutant, stypes, mtypes, rng)
        seed_out = launch(sk, seed.launch, values, stypes)
        mutant_out = launch(mk, mutant.launch, mutant_inputs(values, seed.launch, mutant, mtypes), mtypes)
        tol = 2e-3 if desc.startswith("precision") else 1e-6
        compare(seed_out, mutant_out, mutant, f"{seed.kernel_name} {desc}", tol)


# ---------------------------------------------------------------------------------------------
# known answers


def test_precision_wraps_literals_and_module_constants():
    unit = M.Unit(PARTICLES, "integrate", "p")
    retype.change_precision(unit, "float64")
    text = unit.render()
    assert "wp.array[wp.vec3d]" in text and "dt: wp.float64" in text and "wp.float64(10.0)" in text
    assert "wp.vec3d(0.0, -9.8, 0.0)" in text and "float" not in text.replace("float64", "")


def test_guard_counts_real_elements_and_rounds_the_launch_up():
    launch = infer(M.Unit(PARTICLES, "integrate"))
    for attempt in range(8):
        unit = M.Unit(PARTICLES, "integrate", "g", launch)
        desc = driver.run(unit, "guard", random.Random(attempt), ())
        count = desc.split(":")[1]
        assert f"if tid >= {count}:" in unit.render()
        assert unit.launch.dim[0] % 64 == 0 and unit.launch.dim[0] >= launch.dim[0]
        if "." not in count:
            assert unit.launch.arg(count).range == (launch.dim[0],) * 2


OFFSET = """
import warp as wp


@wp.kernel
def offset_vertices(
    vertices: wp.array(dtype=wp.vec3),
    normals: wp.array(dtype=wp.vec3),
    faces_per_vertex: wp.array(dtype=int),
    offset: float,
    out: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    if faces_per_vertex[tid] > 0:
        out[tid] = vertices[tid] + normals[tid] * offset
"""

SCATTER = """
import warp as wp


@wp.kernel
def scatter(data: wp.array(dtype=float), rows: wp.array(dtype=int), cols: wp.array(dtype=int),
            out: wp.array2d(dtype=float)):
    tid = wp.tid()
    wp.atomic_add(out, rows[tid], cols[tid], data[tid])
"""


def guard_params(source: str, name: str) -> list[tuple[str, list[str]]]:
    """The counts the guard gave a kernel over its attempts, with the parameter order after it."""
    found = []
    for attempt in range(12):
        unit = M.Unit(source, name, "g", infer(M.Unit(source, name)))
        count = driver.run(unit, "guard", random.Random(attempt), ()).split(":")[1]
        if "." not in count:
            found.append((count, [a.arg for a in unit.kernel.args.args]))
    return found


def test_guard_names_the_count_by_the_items_and_puts_it_with_the_inputs():
    offsets = guard_params(OFFSET, "offset_vertices")
    assert offsets and {c for c, _ in offsets} == {"num_vertices"}  # not num_faces of faces_per_vertex
    for count, order in offsets:
        assert order.index(count) == order.index("out") - 1  # before the output, after the inputs
    scatters = guard_params(SCATTER, "scatter")  # rows and cols say where each entry goes
    assert scatters and {c for c, _ in scatters} <= {"count", "n", "num_elements"}


SAXPY = """
import warp as wp


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    yi = y[i]
    y[i] = a * x[i] + yi
"""


def test_a_count_goes_last_when_an_input_follows_an_output():
    """``y`` is updated in place between ``x`` and ``a``: the count does not split the arrays."""
    found = guard_params(SAXPY, "saxpy")
    assert found
    for count, order in found:
        assert order[-1] == count and order[:3] == ["x", "y", "a"], order


def test_an_element_local_is_spelled_as_the_kernels_others_are():
    """``x[i]`` named by a move beside ``yi`` is ``xi``, never ``x_i``."""
    names = set()
    for attempt in range(40):
        unit = M.Unit(SAXPY, "saxpy", "h", infer(M.Unit(SAXPY, "saxpy")))
        if driver.run(unit, "hoist", random.Random(attempt), ()) is None:
            continue
        text = unit.render()
        names |= set(re.findall(r"^\s+(x_?i) = x\[i\]$", text, re.MULTILINE))
    assert names == {"xi"}, names

WEIGH = """
import warp as wp


@wp.kernel
def weigh(input: wp.array(dtype=float), w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(w.shape[0]):
        s += input[i] * w[j]
    out[i] = s
"""


def test_a_value_no_iteration_changes_is_not_named_inside_the_loop():
    """``input_i = input[i]`` inside the ``j`` loop would be read again in every iteration: a read
    that varies with ``j`` may be named there, one that does not is left as it is."""
    drawn = set()
    for attempt in range(40):
        unit = M.Unit(WEIGH, "weigh", "h", infer(M.Unit(WEIGH, "weigh")))
        desc = driver.run(unit, "hoist", random.Random(attempt), ())
        if desc:
            drawn.add(desc)
    assert drawn and all("input" not in d for d in drawn), drawn
    assert any(d.startswith("hoist:w") for d in drawn), drawn

PACK = """
import warp as wp


@wp.kernel
def pack(points: wp.array(dtype=wp.vec3), normals: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    tid = wp.tid()
    p = points[tid]
    n = normals[tid]
    out[tid, 0] = p[0]
    out[tid, 1] = p[1]
    out[tid, 2] = p[2]
    out[tid, 3] = n[0]
    out[tid, 4] = n[1]
    out[tid, 5] = n[2]
"""


def test_roll_rolls_every_run_so_the_kernel_is_written_one_way():
    unit = M.Unit(PACK, "pack", "r", infer(M.Unit(PACK, "pack")))
    assert driver.run(unit, "roll", random.Random(0), ()) == "roll:3,3"
    text = unit.render()
    loops = [line.strip() for line in text.splitlines() if line.strip().startswith("for ")]
    assert len(loops) == 1, text  # the two runs' loops, one range: one loop storing both
    assert "out[tid, 3]" not in text and "out[tid, 0]" not in text, text


ROWS3 = """
import warp as wp


@wp.kernel
def rows3(v: wp.array(dtype=wp.vec3), scale: float, out: wp.array2d(dtype=float)):
    tid = wp.tid()
    i = tid * 3
    j = i + 1
    k = i + 2
    a = v[tid]
    b = a * scale
    out[i, 0] = a[0]
    out[i, 1] = a[1]
    out[i, 2] = a[2]
    out[j, 0] = b[0]
    out[j, 1] = b[1]
    out[j, 2] = b[2]
    out[k, 0] = out[i, 0] + b[0]
    out[k, 1] = out[i, 1] + b[1]
    out[k, 2] = out[i, 2] + b[2]
"""


def test_rolled_loops_fuse_only_where_the_stores_stay_the_same():
    """The rows ``i`` and ``j`` fuse into one loop; the row ``k`` reads what the first loop stores and
    stays its own loop; the fused kernel computes what the original does (Warp, CPU)."""
    unit = M.Unit(ROWS3, "rows3", "f", infer(M.Unit(ROWS3, "rows3")))
    assert driver.run(unit, "roll", random.Random(0), ()) == "roll:3,3,3"
    text = unit.render()
    assert [line.strip() for line in text.splitlines()].count(f"for {text.split('for ')[1].split()[0]} in range(3):") == 2
    handle = wb.define([ROWS3, text], "test_mutate_fuse")
    try:
        v = wp.array(np.random.default_rng(0).uniform(-1, 1, (4, 3)).astype(np.float32), dtype=wp.vec3, device="cpu")
        outs = []
        for name in ("rows3", "rows3_f"):
            out = wp.zeros((12, 3), dtype=float, device="cpu")
            wp.launch(handle.namespace[name], 4, inputs=[v, 2.0, out], device="cpu")
            outs.append(out.numpy())
        np.testing.assert_array_equal(outs[0], outs[1])
    finally:
        handle.release()


def test_layout_packs_arrays_of_one_owner_into_a_struct_and_never_splits_vectors():
    unit = M.Unit(DRIFT, "drift", "l", infer(M.Unit(DRIFT, "drift")))
    assert driver.run(unit, "layout", random.Random(0), ()) == "layout:pack particle_x,particle_v,particle_radius"
    text = unit.render()
    assert "class Particle_l:" in text and "particles: wp.array[Particle_l]" in text
    assert "particles[i].x + particles[i].v * (dt * particles[i].radius)" in text
    for name, source in HAND.items():  # a vector array stays one array of vectors
        for attempt in range(4):
            unit = M.Unit(source, name, f"v{attempt}", infer(M.Unit(source, name)))
            driver.run(unit, "layout", random.Random(attempt), ())
            assert not any(a.origin and a.origin[0] == "component" for a in unit.launch.args), name
    blend = M.Unit(BLEND, "blend", "b", infer(M.Unit(BLEND, "blend")))
    assert driver.run(blend, "layout", random.Random(0), ()) is None  # ``a``, ``b``, ``w`` share no owner


def test_inferred_launch_bounds_indices_by_the_code():
    launch = infer(M.Unit(ROWS, "scale_rows"))
    shapes = {a.name: a.shape for a in launch.args}
    assert launch.dim == [32] and shapes == {"m": (32, 3), "out": (4, 32), "scale": (3,)}
    assert launch.arg("out").role == "out" and launch.arg("m").role == "in"
    scatter = """import warp as wp


@wp.kernel
def gather(src: wp.array[float], idx: wp.array[int], dst: wp.array[float]):
    i = wp.tid()
    dst[i] = src[idx[i]] * 2.0
"""
    launch = infer(M.Unit(scatter, "gather"))
    assert launch.arg("idx").range == (0.0, launch.arg("src").shape[0] - 1)


@pytest.mark.parametrize(
    "body, expected",
    [
        ("    s = float(0.0)\n    for k in range(n):\n        s += x[k]\n    out[i] = s\n", True),
        ("    out[idx[i]] = x[i]\n", False),  # two threads may store into one element
        ("    out[i] = x[i]\n    x[i] = out[i] * 2.0\n    out[i] = x[i]\n", False),  # read after write
        (
            "    best = float(0.0)\n    for k in range(n):\n        if x[k] > best:\n            best = x[k]\n"
            "    out[i] = best\n",
            False,
        ),  # a running maximum
    ],
)
def test_backward_is_claimed_only_where_warp_gets_it_right(body, expected):
    text = (
        "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array[float], idx: wp.array[int], out: wp.array[float], "
        "n: int):\n    i = wp.tid()\n" + body
    )
    assert differentiable(M.Unit(text, "k").kernel) is expected


def test_scaffolding_is_stripped_and_flags_go_with_it():
    test_kernel = '''import warp as wp


@wp.kernel
def test_double(x: wp.array[float], y: wp.array[float], check: int):
    """Test that doubling works."""
    i = wp.tid()
    expected = x[i] * 2.0
    y[i] = x[i] + x[i]
    if check == 1:
        wp.expect_eq(y[i], expected)
    assert y[i] >= -4.0
'''
    unit = M.Unit(test_kernel, "test_double")
    assert scaffolding.strip(unit.tree, unit.kernel) is None
    text = unit.render()
    assert "def double(x: wp.array[float], y: wp.array[float]):" in text
    assert not any(w in text for w in ("expect", "assert", "check", "Test", "expected"))


def test_a_seed_that_cannot_move_far_enough_is_refused():
    still = "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array[float]):\n    a[0] = 1.0\n"
    with pytest.raises(M.MutationError):
        M.mutate(still, "k", None, random.Random(0), "x")


def test_block_dim_of_a_launch_is_read_from_literals_and_module_constants():
    text = """import warp as wp
TILE_THREADS = 128
OTHER = wp.constant(16)

wp.launch_tiled(first, dim=[4], inputs=[a], block_dim=TILE_THREADS)
wp.launch_tiled(kernel=second, dim=[4], inputs=[a], block_dim=32)
wp.launch(mod.third, dim=4, inputs=[a], block_dim=OTHER)
wp.launch_tiled(fourth, dim=[4], inputs=[a], block_dim=n)
"""
    tree = ast.parse(text)
    assert rebuild.int_constants(tree) == {"TILE_THREADS": 128, "OTHER": 16}
    assert rebuild.launched_block_dims(tree) == [("first", 128), ("second", 32), ("third", 16)]


# ---------------------------------------------------------------------------------------------
# generated mutants


@pytest.fixture(scope="module")
def mutants():
    return [generate(11, i, categories=["mutant"]) for i in range(60)]


def test_no_mutant_or_seed_keeps_test_scaffolding(mutants):
    texts = [s.source for s in mutants] + [M.seed_text(s) for s in M.seeds()]
    for text in texts:
        tree = ast.parse(text)
        assert not any(scaffolding.is_check(n) for n in ast.walk(tree) if isinstance(n, ast.stmt)), text
        assert "expect_" not in text and "wp.printf" not in text
        kernel = next(
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.decorator_list and "kernel" in ast.unparse(n.decorator_list[0])
        )
        assert not kernel.name.startswith("test_"), kernel.name
        comments = [line for line in text.splitlines() if line.strip().startswith("#")]
        assert not any(scaffolding.testing_comment(c) for c in comments), comments


def test_mutants_rebuild_from_their_source_alone(mutants):
    for spec in mutants[::3]:
        handle, names_ = wb.define_one(spec.source, f"jit_test_alone_{next(_modules)}")
        try:
            kernel = names_[spec.name]
            options = wb.resolve_options(handle.module, "cpu", spec.metadata["launch"].get("block_dim"))
            assert wb.Build(handle.module, [kernel], options, "cpu").module_source("cpu")
        finally:
            handle.release()


def test_same_seed_and_index_give_the_same_mutant(mutants):
    again = [generate(11, i, categories=["mutant"]) for i in range(0, 60, 6)]
    assert [s.source for s in again] == [s.source for s in mutants[::6]]
    assert [s.metadata for s in again] == [s.metadata for s in mutants[::6]]
    assert len({s.source for s in mutants}) == len(mutants)


def test_mutants_carry_launches_the_execute_check_reads(mutants):
    from jit.code.checks import execute, launch as plans

    runnable = [s for s in mutants if s.metadata["launch"]["runnable"]]
    assert len(runnable) >= 0.9 * len(mutants)
    for spec in mutants:
        launch = spec.metadata["launch"]
        kernel = next(n for n in ast.parse(spec.source).body if isinstance(n, ast.FunctionDef) and n.name == spec.name)
        assert [a["name"] for a in launch["args"]] == [a.arg for a in kernel.args.args]
        assert not launch["runnable"] or all(a["kind"] != "array" or a["shape"] for a in launch["args"])
        assert spec.metadata["mutations"] and spec.metadata["seed_kernel"]["license"]
        assert M.similarity(spec.source, M.seed_text(seed_of(spec))) < M.MAX_SIMILARITY
    handle = wb.define([s.source for s in runnable[:12]], f"jit_test_exec_{next(_modules)}")
    try:
        execute.set_cpu_options(handle.module, backward=False)
        for spec in runnable[:12]:
            kernel = handle.namespace[spec.name]
            plan = plans.plan_from_metadata(kernel, spec.metadata)
            outputs = plans.run_outputs(kernel, plan, plans.random_values(plan, np.random.default_rng(1)))
            assert all(
                np.all(np.isfinite(leaf))
                for out in outputs.values()
                for leaf in plans.leaves(out)
                if leaf.dtype.kind == "f"
            ), spec.name
    finally:
        handle.release()


def seed_of(spec) -> M.Seed:
    record = spec.metadata["seed_kernel"]
    return next(s for s in M.seeds() if (s.path, s.line) == (record["file"], record["line"]))


def test_committed_seeds_come_from_the_seed_half_or_the_library():
    found = M.seeds()
    assert len(found) >= 300
    assert sum(s.weight for s in found if s.runnable) >= 0.9 * sum(M.seed_weights())
    for seed in found:
        assert seed.path.startswith(("warp/examples", "warp/tests", "warp/_src"))
        assert (
            not seed.path.startswith(("warp/examples", "warp/tests")) or rebuild.reference.half_of(seed.path) == "seed"
        )


def test_precision_renames_what_names_the_old_precision_and_unused_imports_go():
    text = '''import warp as wp
from typing import Any


@wp.kernel
def scale_float32(values: wp.array[wp.float32], out: wp.array[wp.float32]):
    """Scale float32 values."""
    i = wp.tid()
    out[i] = values[i] * 2.0
'''
    unit = M.Unit(text, "scale_float32", "p")
    retype.change_precision(unit, "float64")
    out = unit.render()
    assert unit.kernel_name == "scale_float64_p" and "def scale_float64_p(" in out
    assert "float32" not in out and "Scale float64 values." in out
    assert "typing" not in out and "import warp as wp" in out


SYMMETRIC = """import warp as wp


@wp.kernel
def cells_of(points: wp.array[wp.vec3], cells: wp.array[wp.vec3i], origin: wp.vec3, height: int, rows: wp.array[int]):
    i = wp.tid()
    uvw = points[i] - origin
    cells[i] = wp.vec3i(int(wp.floor(uvw[0])), int(wp.floor(uvw[1])), int(wp.floor(uvw[2])))
    rows[i] = height - i - 1
"""


def test_no_hoist_singles_out_one_term_and_no_helper_for_a_one_liner():
    from jit.code.synthesis.mutate import helpers, moves

    for attempt in range(12):
        unit = M.Unit(SYMMETRIC, "cells_of", f"h{attempt}")
        desc = moves.hoist(unit, random.Random(attempt))
        assert desc is None or "floor" not in desc, desc
        assert "wp.vec3i(int(wp.floor(uvw[0])), int(wp.floor(uvw[1])), int(wp.floor(uvw[2])))" in unit.render()
        assert helpers.extract(M.Unit(SYMMETRIC, "cells_of", f"e{attempt}"), random.Random(attempt)) is None


def test_test_probes_are_no_seeds_and_test_kernels_lose_their_suffix():
    probe = "@wp.kernel\ndef read_kernel(a: wp.array[float], out: wp.array[float]):\n    out[0] = a[0] * 2.0\n"
    copy = "@wp.kernel\ndef copy_kernel(a: wp.array[float], out: wp.array[float]):\n    i = wp.tid()\n    out[i] = a[i]\n"
    real = "@wp.kernel\ndef axpy_kernel(a: wp.array[float], out: wp.array[float]):\n    i = wp.tid()\n    out[i] += 2.0 * a[i]\n"
    for text, reason in ((probe, "fixed slots"), (copy, "nothing")):
        unit = M.Unit("import warp as wp\n\n\n" + text, text.split("(")[0].split()[-1])
        assert reason in scaffolding.probe(unit.kernel)
    unit = M.Unit("import warp as wp\n\n\n" + real, "axpy_kernel")
    assert scaffolding.probe(unit.kernel) is None and scaffolding.test_name("axpy_kernel") == "axpy"
    for seed in M.seeds():
        if seed.path.startswith("warp/tests/"):
            assert seed.kernel in (scaffolding.test_name(seed.name.removeprefix("test_")), seed.name.removeprefix("test_"))


def test_a_warp_subpackage_the_source_reads_is_imported():
    """``import warp`` does not load ``warp.geometry``: a mutant reading it imports it, and builds alone."""
    from jit.code.synthesis.mutate.unit import Unit

    text = ("import warp as wp\n\nOFFSETS = wp.geometry.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS\n\n\n"
            "@wp.kernel\ndef corner_x(out: wp.array(dtype=int)):\n    i = wp.tid()\n"
            "    out[i] = wp.static(OFFSETS[1][0])\n")
    rendered = Unit(text, "corner_x", "ab12cd34").render()
    assert "import warp.geometry" in rendered
    wb.init()
    handle = wb.define([rendered], "subpackage_import_test")
    assert handle.namespace["corner_x_ab12cd34"] is not None


def test_a_render_drops_formatter_directives_whose_hand_layout_it_does_not_keep():
    from jit.code.synthesis.mutate import source

    text = ("def f(s: float):\n    # transposed definition\n    # fmt: off\n    m = (s, 0.0,\n         0.0, s)\n"
            "    # fmt: on\n    return m  # yapf: disable\n")
    tree = ast.parse(text)
    out = source.render(tree, source.notes(tree, text))
    assert "# transposed definition" in out and "m = (s, 0.0, 0.0, s)" in out, out
    assert "fmt:" not in out and "yapf" not in out, out


NODES = """
import warp as wp


@wp.kernel
def nodes(padding: int, out: wp.array(dtype=int)):
    cell, i, j, k = wp.tid()
    nodes_per_dim = 2 * padding + 2
    node_index = ((cell * nodes_per_dim + i) * nodes_per_dim + j) * nodes_per_dim + k
    out[node_index] = 1
"""


def test_an_extracted_helper_takes_its_arguments_in_the_order_they_are_written():
    from jit.code.synthesis.mutate import helpers

    unit = M.Unit(NODES, "nodes", "h", infer(M.Unit(NODES, "nodes")))
    assert helpers.extract(unit, random.Random(0))
    text = unit.render()
    lines = text.splitlines()
    header = lines[lines.index("@wp.func") + 1]
    names = [a.split(":")[0].strip() for a in header[header.index("(") + 1:header.rindex(")")].split(",")]
    assert names == ["cell", "nodes_per_dim", "i", "j", "k"], text


EDGES3 = """
import warp as wp


@wp.kernel
def edges3(tris: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    t = wp.tid()
    for k in range(3):
        a = tris[t, k]
        b = tris[t, (k + 1) % 3]
        wp.atomic_add(counts, wp.min(a, b), 1)
"""


def test_an_unrolled_loop_writes_its_indices_as_numbers():
    unit = M.Unit(EDGES3, "edges3", "u", infer(M.Unit(EDGES3, "edges3")))
    assert driver.run(unit, "unroll", random.Random(0), ()) == "unroll:3"
    text = unit.render()
    assert "tris[t, 1]" in text and "tris[t, 0]" in text and "% 3" not in text and "0 + 1" not in text, text
