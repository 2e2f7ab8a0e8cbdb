"""The geometry-query category: meshes, BVHs, hash grids and volumes through ``wp.uint64`` ids.

Kernels take handles (``mesh: wp.uint64`` ...) and query them: closest points, rays,
AABB/sphere overlaps iterated with ``*_query_next``, hash-grid neighbourhoods, volume
samples, lookups and gradients; results feed the shared expression builder. They build for
every device but need runtime objects to run, so ``launch.runnable`` is False with the
reason. What it leaves out: tiled queries and textures.
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.names import HANDLES
from jit.code.synthesis.stmt import INDENT, KernelBuilder, Line, Profile
from jit.code.synthesis.types import WType

UINT64 = WType("uint64", "uint", "uint64")
NEEDS = {"mesh": "a wp.Mesh", "bvh": "a wp.Bvh", "grid": "a wp.HashGrid (built over the points array)",
         "volume": "a wp.Volume"}


def handle(kb: KernelBuilder, kind: str) -> str:
    handles = kb.meta.setdefault("handles", {})
    if kind not in handles:
        handles[kind] = kb.param("handle", UINT64, "in", ndim=0, value_range=(0.0, 0.0),
                                 name=kb.names.take(*HANDLES[kind], spread=1)).name
        kb.meta["needs"].add(kind)
    return handles[kind]


def point(kb: KernelBuilder, bound: float = 10.0) -> str:
    return E.fit(kb.rng, E.gen(kb.ctx, T.VEC3F), bound).text


def result(kb: KernelBuilder, name: str, t: WType, bound: float) -> None:
    kb.declare(name, E.var(name, t, bound))


def mesh_point(kb: KernelBuilder, depth: int) -> list:
    rng = kb.rng
    mesh = handle(kb, "mesh")
    q, hit = kb.fresh("q"), kb.fresh("hit")
    fn = rng.choice(("mesh_query_point", "mesh_query_point_no_sign", "mesh_query_furthest_point_no_sign",
                     "mesh_query_point_sign_normal", "mesh_query_point_sign_winding_number"))
    dist = E.lit(rng, T.FLOAT32, 0.5, 100.0).text
    lines = [f"{q} = wp.{fn}({mesh}, {point(kb)}, {dist})", f"{hit} = wp.vec3f(0.0)", f"if {q}.result:"]
    roll = rng.random()
    if roll < 0.5:
        lines.append(f"{INDENT}{hit} = wp.mesh_eval_position({mesh}, {q}.face, {q}.u, {q}.v)")
    elif roll < 0.75:
        lines.append(f"{INDENT}{hit} = wp.mesh_eval_face_normal({mesh}, {q}.face)")
    else:
        lines.append(f"{INDENT}{hit} = wp.mesh_eval_velocity({mesh}, {q}.face, {q}.u, {q}.v)")
    if "sign" in fn and "no_sign" not in fn and rng.random() < 0.5:
        lines.append(f"{INDENT}{hit} = {hit} * {q}.sign")
    result(kb, hit, T.VEC3F, 1.0e3)
    return [Line("\n".join(lines))]


def mesh_ray(kb: KernelBuilder, depth: int) -> list:
    mesh = handle(kb, "mesh")
    q, t = kb.fresh("ray"), kb.fresh("tt")
    direction = f"wp.normalize({point(kb)} + wp.vec3f(0.0, 0.0, 1.5))"
    field = kb.rng.choice(("t", "u", "v", "sign"))
    lines = [f"{q} = wp.mesh_query_ray({mesh}, {point(kb)}, {direction}, {E.lit(kb.rng, T.FLOAT32, 1.0, 100.0).text})",
             f"{t} = float(0.0)", f"if {q}.result:", f"{INDENT}{t} = {q}.{field}"]
    if kb.rng.random() < 0.5:
        n = kb.fresh("nrm")
        lines[1:1] = [f"{n} = wp.vec3f(0.0)"]
        lines.append(f"{INDENT}{n} = {q}.normal")
        result(kb, n, T.VEC3F, 1.0)
    result(kb, t, T.FLOAT32, 1.0e3)
    return [Line("\n".join(lines))]


OVERLAP_KINDS = ("mesh_aabb", "bvh_aabb", "bvh_ray", "mesh_sphere", "bvh_sphere")


def overlap_loop(kb: KernelBuilder, depth: int) -> list:
    """An AABB / sphere / ray overlap query iterated to exhaustion, counting and summing."""
    rng = kb.rng
    # On CUDA, mesh and BVH overlap queries each reserve a 32 KB shared-memory stack per block
    # (32 ints x 256 threads); both in one kernel exceed the 48 KB of static shared memory a
    # kernel may use, and the kernel would not load. So a kernel keeps to one of the two.
    kinds = [k for k in OVERLAP_KINDS if kb.meta.get("stack_owner") in (None, k.split("_")[0])]
    kind = rng.choice(kinds)
    owner = kind.split("_")[0]
    kb.meta["stack_owner"] = owner
    h = handle(kb, owner)
    q, idx, count = kb.fresh("ov"), kb.fresh("idx"), kb.fresh("n")
    c = point(kb)
    ext = E.lit(rng, T.FLOAT32, 0.1, 2.0).text
    if kind.endswith("aabb"):
        start = f"wp.{owner}_query_aabb({h}, {c} - wp.vec3f({ext}), {c} + wp.vec3f({ext}))"
    elif kind.endswith("sphere"):
        start = f"wp.{owner}_query_sphere({h}, {c}, {ext})"
    else:
        start = f"wp.bvh_query_ray({h}, {c}, wp.normalize({point(kb)} + wp.vec3f(1.5, 0.0, 0.0)))"
    nxt = "mesh_query_aabb_next" if owner == "mesh" else "bvh_query_next"
    lines = [f"{q} = {start}", f"{idx} = int(0)", f"{count} = int(0)", f"while wp.{nxt}({q}, {idx}):",
             f"{INDENT}{count} += 1"]
    if owner == "mesh" and rng.random() < 0.5:
        acc = kb.fresh("acc")
        lines[1:1] = [f"{acc} = wp.vec3f(0.0)"]
        lines.append(f"{INDENT}{acc} += wp.mesh_eval_face_normal({h}, {idx})")
        result(kb, acc, T.VEC3F, 1.0e6)
    result(kb, count, T.INT32, 1.0e6)
    return [Line("\n".join(lines))]


def grid_neighbours(kb: KernelBuilder, depth: int) -> list:
    rng = kb.rng
    grid = handle(kb, "grid")
    pts = kb.param("array", T.VEC3F, "in", ndim=1)
    q, idx, acc = kb.fresh("nb"), kb.fresh("j"), kb.fresh("acc")
    tid = kb.tids[0]
    me = kb.fresh("pid")
    d = kb.names.take("d", "delta", "rel_pos")
    lines = [f"{me} = wp.hash_grid_point_id({grid}, {tid})" if rng.random() < 0.5 else f"{me} = {tid}",
             f"{acc} = wp.vec3f(0.0)",
             f"{q} = wp.hash_grid_query({grid}, {pts.name}[{me}], {E.lit(rng, T.FLOAT32, 0.1, 1.0).text})",
             f"{idx} = int(0)",
             f"while wp.hash_grid_query_next({q}, {idx}):",
             f"{INDENT}{d} = {pts.name}[{idx}] - {pts.name}[{me}]",
             f"{INDENT}{acc} += {d} * {rng.choice((f'wp.length({d})', '1.0', f'wp.exp(-wp.length_sq({d}))'))}"]
    result(kb, acc, T.VEC3F, 1.0e6)
    return [Line("\n".join(lines))]


def volume(kb: KernelBuilder, depth: int) -> list:
    rng = kb.rng
    vol = handle(kb, "volume")
    out = kb.fresh("vs")
    p = point(kb)
    mode = rng.choice(("wp.Volume.LINEAR", "wp.Volume.CLOSEST"))
    roll = rng.randrange(7)
    if roll == 0:
        lines, t = [f"{out} = wp.volume_sample_f({vol}, {p}, {mode})"], T.FLOAT32
    elif roll == 1:
        lines, t = [f"{out} = wp.volume_sample({vol}, {p}, {mode}, dtype=wp.float32)"], T.FLOAT32
    elif roll == 2:
        lines, t = [f"{out} = wp.volume_sample_v({vol}, wp.volume_world_to_index({vol}, {p}), {mode})"], T.VEC3F
    elif roll == 3:
        g = kb.fresh("grad")
        lines = [f"{g} = wp.vec3f(0.0)", f"{out} = wp.volume_sample_grad_f({vol}, {p}, {mode}, {g})"]
        result(kb, g, T.VEC3F, 1.0e6)
        t = T.FLOAT32
    elif roll == 4:
        ijk = [f"wp.clamp({E.gen(kb.ctx, T.INT32, kb.ctx.max_depth - 1).text}, -8, 8)" for _ in range(3)]
        lines, t = [f"{out} = wp.volume_lookup_f({vol}, {', '.join(ijk)})"], T.FLOAT32
    elif roll == 5:
        lines, t = [f"{out} = wp.volume_index_to_world({vol}, {p})"], T.VEC3F
    else:
        lines, t = [f"{out} = wp.volume_world_to_index_dir({vol}, {p})"], T.VEC3F
    result(kb, out, t, 1.0e6)
    return [Line("\n".join(lines))]


@register("geometry", 1.0)
def geometry(rng, name, suffix, complexity):
    profile = Profile({T.VEC3F: 4, T.FLOAT32: 2, T.INT32: 1}, (T.VEC3F, T.FLOAT32),
                      extra=[mesh_point, mesh_ray, overlap_loop, grid_neighbours, volume],
                      weights={"extra": 2.5, "for": 0.2, "while": 0.0})
    kb = KernelBuilder(rng, name, suffix, profile, complexity)
    kb.meta["needs"] = set()
    kb.budget = max(3, kb.budget // 2)
    kb.body = rng.choice(profile.extra)(kb, 0)
    kb.body += kb.block(kb.budget, 0, new_scope=False)
    kb.body += kb.write_outputs()
    needs = sorted(kb.meta.pop("needs"))
    kb.meta.pop("handles", None)
    kb.meta["needs_runtime_objects"] = True
    kb.meta["reason"] = "needs " + ", ".join(NEEDS[n] for n in needs)
    return kb
