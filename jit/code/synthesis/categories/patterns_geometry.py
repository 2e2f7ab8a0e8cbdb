"""Pattern families that query runtime objects: hash-grid neighbours, meshes and BVHs.

Discrete-element contacts, SPH densities and neighbour averages over ``wp.hash_grid_query``;
particle-mesh collision with ``wp.mesh_query_point*``; ray casting a mesh with
``wp.mesh_query_ray``; counting overlaps with ``wp.bvh_query_aabb``. The kernels take
``wp.uint64`` ids, so they build for every device but need the objects to run: their metadata
says so (``needs_runtime_objects`` with the reason). What it leaves out: volumes and textures.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories import register
from jit.code.synthesis.categories.patterns import INDENT, Flavour, Pattern, poly6

GRID = "a wp.HashGrid built over the positions array"


def neighbour_loop(p: Pattern, grid: str, x: str, radius: str, body: list[str]) -> None:
    """``for index in wp.hash_grid_query(...)``, or the explicit query / query_next form."""
    if p.rng.random() < 0.5:
        p.add(f"for index in wp.hash_grid_query({grid}, xi, {radius}):")
    else:
        p.add(f"query = wp.hash_grid_query({grid}, xi, {radius})", "index = int(0)",
              "while wp.hash_grid_query_next(query, index):")
    p.add(*body, indent=1)


@register("grid_neighbors", 0.9, source="patterns")
def grid_neighbors(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    p.kb.dims = [rng.choice((64, 128, 256))]
    grid = p.handle(rng.choice(("grid", "grid_id")))
    x = p.array(rng.choice(("particle_x", "positions", "x")), T.VEC3F)
    sorted_order = rng.random() < 0.6  # threads ordered by grid cell, as Warp's examples do
    if sorted_order:
        p.add(f"i = wp.hash_grid_point_id({grid}, tid)")
    p.add(f"xi = {x}[i]")
    kind = rng.choice(("contact", "density", "average", "count"))
    if kind == "contact":
        radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.05, hi=0.2)
        ke = p.scalar(rng.choice(("k_contact", "ke")), lo=100.0, hi=1.0e4)
        body = [f"if index != i:", f"{INDENT}d = xi - {x}[index]", f"{INDENT}dist = wp.length(d)",
                f"{INDENT}overlap = 2.0 * {radius} - dist", f"{INDENT}if overlap > 0.0 and dist > 1.0e-6:",
                f"{INDENT * 2}n = d / dist", f"{INDENT * 2}f += n * ({ke} * overlap)"]
        if p.chance(0.5):
            v = p.array(rng.choice(("particle_v", "velocities", "v")), T.VEC3F)
            kd = p.scalar(rng.choice(("k_damp", "kd")), lo=0.0, hi=10.0)
            body.append(f"{INDENT * 2}f -= n * ({kd} * wp.dot({v}[i] - {v}[index], n))")
        p.add("f = wp.vec3()")
        neighbour_loop(p, grid, x, f"2.0 * {radius}", body)
        out = p.array(rng.choice(("particle_f", "forces")), T.VEC3F, "out")
        p.add(f"{out}[i] = f")
        base = ("apply_contacts", "collide_particles", "eval_contacts")
    elif kind == "density":
        h = p.scalar(rng.choice(("smoothing_length", "h")), lo=0.1, hi=0.5)
        mass = p.scalar(rng.choice(("particle_mass", "mass")), lo=0.5, hi=2.0)
        kernel = poly6(p)
        p.add("rho = float(0.0)")
        neighbour_loop(p, grid, x, h, [f"d = xi - {x}[index]", f"rho += {mass} * {kernel}(wp.dot(d, d), {h})"])
        out = p.array(rng.choice(("particle_rho", "densities")), T.FLOAT32, "out")
        p.add(f"{out}[i] = rho")
        base = ("compute_density", "grid_density")
    elif kind == "average":  # XSPH / boids: blend towards the neighbours' mean velocity
        v = p.array(rng.choice(("particle_v", "velocities")), T.VEC3F)
        radius = p.scalar(rng.choice(("radius", "neighbor_radius")), lo=0.1, hi=0.5)
        blend = p.scalar(rng.choice(("xsph_c", "alignment")), lo=0.0, hi=1.0)
        p.add("vsum = wp.vec3()", "count = int(0)")
        neighbour_loop(p, grid, x, radius, ["if index != i:", f"{INDENT}vsum += {v}[index]", f"{INDENT}count += 1"])
        out = p.array(rng.choice(("v_out", "smoothed_v")), T.VEC3F, "out")
        p.add(f"vi = {v}[i]", "if count > 0:", f"{INDENT}vi = vi + {blend} * (vsum / float(count) - vi)",
              f"{out}[i] = vi")
        base = ("smooth_velocities", "xsph_viscosity", "align_velocities")
    else:
        radius = p.scalar(rng.choice(("radius", "query_radius")), lo=0.1, hi=0.5)
        p.add("count = int(0)")
        neighbour_loop(p, grid, x, radius, [f"if wp.length({x}[index] - xi) < {radius}:", f"{INDENT}count += 1"])
        out = p.array(rng.choice(("neighbor_count", "counts")), T.INT32, "out")
        p.add(f"{out}[i] = count")
        base = ("count_neighbors", "neighbor_counts")
    return p.finish(rng.choice(base), p.kb.dims, ["tid" if sorted_order else "i"], differentiable=False,
                    needs=f"needs {GRID}")


@register("mesh_queries", 0.9, source="patterns")
def mesh_queries(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    kind = rng.choice(("collide", "collide", "raycast", "sdf", "bvh"))
    if kind == "raycast":
        return _mesh_raycast(p)
    if kind == "bvh":
        return _bvh_overlaps(p)
    p.kb.dims = [rng.choice((64, 128, 256))]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")))
    x = p.array(rng.choice(("positions", "particle_x", "points")), T.VEC3F)
    max_dist = p.scalar(rng.choice(("max_dist", "query_radius")), lo=0.5, hi=2.0)
    p.add(f"x = {x}[tid]")
    if kind == "sdf":
        fn = rng.choice(("mesh_query_point_sign_normal", "mesh_query_point", "mesh_query_point_sign_winding_number"))
        out = p.array(rng.choice(("sdf", "distances")), T.FLOAT32, "out")
        p.add(f"d = {max_dist}", f"q = wp.{fn}({mesh}, x, {max_dist})", "if q.result:",
              f"{INDENT}p = wp.mesh_eval_position({mesh}, q.face, q.u, q.v)", f"{INDENT}d = wp.length(x - p) * q.sign",
              f"{out}[tid] = d")
        return p.finish(rng.choice(("sample_sdf", "mesh_distance")), p.kb.dims, differentiable=False,
                        needs="needs a wp.Mesh")
    v = p.array(rng.choice(("velocities", "particle_v")), T.VEC3F, "inout")
    radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.01, hi=0.1)
    p.add(f"v = {v}[tid]", f"q = wp.mesh_query_point_sign_normal({mesh}, x, {max_dist})", "if q.result:",
          f"{INDENT}p = wp.mesh_eval_position({mesh}, q.face, q.u, q.v)", f"{INDENT}delta = x - p",
          f"{INDENT}dist = wp.length(delta) * q.sign", f"{INDENT}if dist < {radius}:",
          f"{INDENT * 2}n = wp.normalize(delta) * q.sign",
          f"{INDENT * 2}x = x + n * ({radius} - dist)", f"{INDENT * 2}vn = wp.dot(v, n)",
          f"{INDENT * 2}if vn < 0.0:")
    if p.chance(0.5):
        mu = p.scalar(rng.choice(("friction", "mu")), lo=0.0, hi=1.0)
        p.add(f"vt = v - n * vn", f"v = vt * (1.0 - {mu})", indent=3)
    else:
        p.add("v = v - n * vn", indent=3)
    p.add(f"{x}[tid] = x", f"{v}[tid] = v")
    p.kb.params[1].role = "inout"
    return p.finish(rng.choice(("collide_mesh", "particle_mesh_contact", "resolve_collisions")), p.kb.dims,
                    differentiable=False, needs="needs a wp.Mesh")


def _mesh_raycast(p: Pattern):
    rng = p.rng
    p.kb.dims = [rng.randint(8, 32), rng.randint(8, 32)]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")))
    cam = p.array(rng.choice(("cam_pos", "camera_origin")), T.VEC3F, shape=(1,))
    image = p.array(rng.choice(("pixels", "image")), T.VEC3F, "out", ndim=2)
    p.add(f"sx = 2.0 * (float(j) + 0.5) / float({image}.shape[1]) - 1.0",
          f"sy = 2.0 * (float(i) + 0.5) / float({image}.shape[0]) - 1.0",
          f"ro = {cam}[0]", "rd = wp.normalize(wp.vec3(sx, sy, -1.0))", "color = wp.vec3(0.0)",
          f"q = wp.mesh_query_ray({mesh}, ro, rd, {rng.choice(('1.0e6', '100.0', '1000.0'))})", "if q.result:")
    if rng.random() < 0.5:
        p.add("color = q.normal * 0.5 + wp.vec3(0.5)", indent=1)
    else:
        p.add(f"color = wp.vec3(wp.max(wp.dot(q.normal, wp.normalize(wp.vec3({rng.choice(('1.0', '-1.0'))}, 1.0, 1.0))), 0.0))",
              indent=1)
    p.add(f"{image}[i, j] = color")
    return p.finish(rng.choice(("render_mesh", "raycast_mesh", "draw_mesh")), p.kb.dims, ["i", "j"],
                    differentiable=False, needs="needs a wp.Mesh")


def _bvh_overlaps(p: Pattern):
    rng = p.rng
    p.kb.dims = [rng.choice((32, 64, 128))]
    bvh = p.handle(rng.choice(("bvh", "bvh_id")))
    lower = p.array(rng.choice(("lowers", "box_lower")), T.VEC3F)
    upper = p.array(rng.choice(("uppers", "box_upper")), T.VEC3F)
    p.add(f"query = wp.bvh_query_aabb({bvh}, {lower}[tid], {upper}[tid])", "index = int(0)", "count = int(0)",
          "while wp.bvh_query_next(query, index):")
    if rng.random() < 0.5:
        p.add("if index != tid:", f"{INDENT}count += 1", indent=1)
    else:
        p.add("count += 1", indent=1)
    out = p.array(rng.choice(("overlap_count", "counts")), T.INT32, "out")
    p.add(f"{out}[tid] = count")
    return p.finish(rng.choice(("count_overlaps", "broad_phase", "query_boxes")), p.kb.dims,
                    differentiable=False, needs="needs a wp.Bvh")
