"""Pattern families that query runtime objects: hash-grid neighbours, meshes and BVHs.

Discrete-element contacts, SPH densities and neighbour averages over ``wp.hash_grid_query``;
particle-mesh collision with ``wp.mesh_query_point*``; ray casting a mesh with
``wp.mesh_query_ray``; counting overlaps with ``wp.bvh_query_aabb``. The kernels take
``wp.uint64`` ids, so they build for every device but need the objects to run: their metadata
says so (``needs_runtime_objects`` with the reason). What it leaves out: volumes and textures.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, Flavour, Pattern
from jit.code.synthesis.categories.patterns_fluids import loop_body, poly6

GRID = "a wp.HashGrid built over the positions array"


def neighbour_loop(p: Pattern, grid: str, x: str, radius: str, body: list[str], skip_self: bool = True) -> None:
    """``for index in wp.hash_grid_query(...)``, or the explicit query / query_next form.

    With ``skip_self`` the particle itself is left out, by a ``continue`` or by a wrapping ``if``.
    """
    if p.rng.random() < 0.5:
        p.add(f"for index in wp.hash_grid_query({grid}, xi, {radius}):")
    else:
        p.add(f"query = wp.hash_grid_query({grid}, xi, {radius})", "index = int(0)",
              "while wp.hash_grid_query_next(query, index):")
    loop_body(p, body, "index", "i", skip_self)


def _contact(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Discrete-element contact forces between overlapping particles."""
    rng = p.rng
    radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.05, hi=0.2)
    ke = p.scalar(rng.choice(("k_contact", "ke")), lo=100.0, hi=1.0e4)
    body = [f"d = xi - {x}[index]"]
    if p.coin():
        body += [f"dist = {p.length('d')}", f"overlap = 2.0 * {radius} - dist",
                 "if overlap > 0.0 and dist > 1.0e-6:"]
    else:  # the cheap squared test first, the square root only for contacts
        body += ["dist_sq = wp.dot(d, d)", f"if dist_sq < 4.0 * {radius} * {radius} and dist_sq > 1.0e-12:",
                 f"{INDENT}dist = wp.sqrt(dist_sq)", f"{INDENT}overlap = 2.0 * {radius} - dist"]
    body.append(f"{INDENT}n = " + p.pick("d / dist", "wp.normalize(d)"))
    law = p.pick("linear", "linear", "hertz")
    body.append(f"{INDENT}f += n * ({ke} * overlap)" if law == "linear" else
                f"{INDENT}f += n * ({ke} * overlap * wp.sqrt(overlap))")
    if p.chance(0.5):
        v = p.array(rng.choice(("particle_v", "velocities", "v")), T.VEC3F)
        kd = p.scalar(rng.choice(("k_damp", "kd")), lo=0.0, hi=10.0)
        p.note("damps the normal relative velocity")
        if p.coin():
            body.append(f"{INDENT}f -= n * ({kd} * wp.dot({v}[i] - {v}[index], n))")
        else:
            body += [f"{INDENT}vrel = {v}[i] - {v}[index]", f"{INDENT}vn = wp.dot(vrel, n)",
                     f"{INDENT}f -= n * ({kd} * vn)"]
    count = p.chance(0.3)
    if count:
        body.append(f"{INDENT}contacts += 1")
    p.add(*p.pick(["f = wp.vec3()"], ["f = wp.vec3(0.0)"], ["f = wp.vec3(0.0, 0.0, 0.0)"]))
    if count:
        p.add("contacts = int(0)")
    neighbour_loop(p, grid, x, f"2.0 * {radius}", body)
    if p.chance(0.3):
        fmax = p.scalar(rng.choice(("max_force", "force_limit")), lo=10.0, hi=100.0)
        p.add(f"fn = {p.length('f')}", f"if fn > {fmax}:", f"{INDENT}f = f * ({fmax} / fn)")
        p.note(f"limits the force to {fmax}")
    if p.coin(0.35):  # added to the forces other kernels accumulate
        out = p.array(rng.choice(("particle_f", "forces")), T.VEC3F, "inout")
        p.add(p.pick(f"{out}[i] += f", f"wp.atomic_add({out}, i, f)"))
    else:
        out = p.array(rng.choice(("particle_f", "forces")), T.VEC3F, "out")
        p.add(f"{out}[i] = f")
    if count:
        p.add(f"{p.array(rng.choice(('contact_count', 'num_contacts')), T.INT32, 'out')}[i] = contacts")
        p.note("counts each particle's contacts")
    model = "linear spring" if law == "linear" else "Hertzian"
    p.purpose = f"Sum {model} contact forces on each particle from the overlapping neighbours a hash grid finds"
    return ("apply_contacts", "collide_particles", "eval_contacts")


def _density(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    rng = p.rng
    h = p.scalar(rng.choice(("smoothing_length", "h")), lo=0.1, hi=0.5)
    if p.coin(0.3):
        masses = p.array(rng.choice(("particle_mass", "masses")), T.FLOAT32, lo=0.5, hi=2.0)
        mass = f"{masses}[index]"
    else:
        mass = p.scalar(rng.choice(("particle_mass", "mass")), lo=0.5, hi=2.0)
    if p.coin(0.6):
        kernel = poly6(p)
        if p.coin(0.3) and "[index]" not in mass:  # the particle's own contribution first, the loop skips it
            p.add(f"rho = {mass} * {kernel}(0.0, {h})")
            body = [f"if index != i:", f"{INDENT}d = xi - {x}[index]",
                    f"{INDENT}rho += {mass} * {kernel}(wp.dot(d, d), {h})"]
        else:
            p.add("rho = float(0.0)")
            body = [f"d = xi - {x}[index]", f"rho += {mass} * {kernel}(" + p.pick("wp.dot(d, d)", "wp.length_sq(d)") + f", {h})"]
    else:  # the kernel written inline
        p.add("rho = float(0.0)")
        body = [f"r2 = wp.length_sq(xi - {x}[index])", f"if r2 < {h} * {h}:", f"{INDENT}w = {h} * {h} - r2",
                f"{INDENT}rho += {mass} * w * w * w"]
    if body[1].startswith("if r2 <") and p.chance(0.4):  # the query's candidates include particles beyond h
        body.append(f"{INDENT}neighbors += 1")
        p.add("neighbors = int(0)")
        counts = p.array(rng.choice(("neighbor_count", "num_neighbors")), T.INT32, "out")
    else:
        counts = None
    neighbour_loop(p, grid, x, h, body, skip_self=False)
    norm = p.pick(None, "param", "computed")
    if norm == "param":
        p.add(f"rho *= {p.scalar(rng.choice(('poly6_coeff', 'kernel_norm')), lo=1.0, hi=10.0)}")
        p.note("scales by the kernel's normalisation constant")
    elif norm == "computed":  # poly6 normalisation 315 / (64 pi h^9)
        p.add(f"rho *= 315.0 / (64.0 * wp.pi * wp.pow({h}, 9.0))")
        p.note("applies the poly6 normalisation 315 / (64 pi h^9)")
    out = p.array(rng.choice(("particle_rho", "densities")), T.FLOAT32, "out")
    p.add(f"{out}[i] = rho")
    if counts:
        p.add(f"{counts}[i] = neighbors")
    if p.chance(0.35):  # an equation of state for the pressure
        rho0 = p.scalar(rng.choice(("rest_density", "rho0")), lo=0.5, hi=2.0)
        k = p.scalar(rng.choice(("stiffness", "gas_constant")), lo=1.0, hi=10.0)
        press = p.array(rng.choice(("particle_p", "pressures")), T.FLOAT32, "out")
        p.add(f"{press}[i] = " + p.pick(f"{k} * (rho - {rho0})", f"wp.max({k} * (rho - {rho0}), 0.0)"))
        p.note("derives the pressure from a linear equation of state")
    if counts:
        p.note("counts the neighbours within h")
    p.purpose = "Sum each particle's SPH density with the poly6 kernel over the neighbours a hash grid finds"
    return ("compute_density", "grid_density")


def _average(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """XSPH / boids: blend towards the neighbours' (weighted) mean velocity."""
    rng = p.rng
    v = p.array(rng.choice(("particle_v", "velocities")), T.VEC3F)
    radius = p.scalar(rng.choice(("radius", "neighbor_radius")), lo=0.1, hi=0.5)
    blend = p.scalar(rng.choice(("xsph_c", "alignment")), lo=0.0, hi=1.0)
    if p.coin(0.35):
        return _cohesion(p, x, grid, v, radius, blend)
    weighted = p.coin(0.4)
    if weighted:
        p.add("vsum = wp.vec3()", "wsum = float(0.0)")
        body = [f"r = {p.length(f'xi - {x}[index]')}", f"w = wp.max(1.0 - r / {radius}, 0.0)",
                f"vsum += {v}[index] * w", "wsum += w"]
        cond, mean = "wsum > 0.0", "vsum / wsum"
    else:
        p.add("vsum = wp.vec3()", "count = int(0)")
        # the query returns every point of the cells the radius touches: keep those within it
        body = [f"if wp.length_sq(xi - {x}[index]) < {radius} * {radius}:", f"{INDENT}vsum += {v}[index]",
                f"{INDENT}count += 1"]
        cond, mean = "count > 0", "vsum / float(count)"
    neighbour_loop(p, grid, x, radius, body)
    out = p.array(rng.choice(("v_out", "smoothed_v")), T.VEC3F, "out")
    p.add(f"vi = {v}[i]")
    if p.coin():
        p.add(f"if {cond}:", f"{INDENT}vi = vi + {blend} * ({mean} - vi)")
    else:
        p.add(f"vi = wp.where({cond}, vi + {blend} * ({mean} - vi), vi)")
    p.add(f"{out}[i] = vi")
    mean = "distance-weighted mean" if weighted else "mean"
    p.purpose = f"Blend each particle's velocity towards the {mean} velocity of its hash-grid neighbours (XSPH)"
    return ("smooth_velocities", "xsph_viscosity", "align_velocities")


def _cohesion(p: Pattern, x: str, grid: str, v: str, radius: str, blend: str) -> tuple[str, ...]:
    """Boids cohesion (and maybe separation): steer towards the neighbours' centre."""
    rng = p.rng
    separate = p.chance(0.5)
    p.add("centre = wp.vec3()", "count = int(0)")
    body = [f"xj = {x}[index]", "centre += xj", "count += 1"]
    if separate:
        p.add("push = wp.vec3()")
        body += ["d = xi - xj", f"push += d / wp.max(wp.dot(d, d), 1.0e-6)"]
    neighbour_loop(p, grid, x, radius, body)
    out = p.array(rng.choice(("v_out", "steered_v")), T.VEC3F, "out")
    p.add(f"vi = {v}[i]", "if count > 0:", f"{INDENT}vi += {blend} * (centre / float(count) - xi)")
    if separate:
        k = p.scalar(rng.choice(("separation", "k_separation")), lo=0.0, hi=0.1)
        p.add(f"vi += {k} * push")
        p.note("pushes apart neighbours that come close")
    if p.chance(0.4):
        vmax = p.scalar(rng.choice(("max_speed", "speed_limit")), lo=1.0, hi=5.0)
        p.add(f"speed = {p.length('vi')}", f"if speed > {vmax}:", f"{INDENT}vi = vi * ({vmax} / speed)")
        p.note(f"limits the speed to {vmax}")
    p.add(f"{out}[i] = vi")
    p.purpose = "Steer each boid towards the centre of its hash-grid neighbours (cohesion)"
    return ("flock", "boids_step", "steer_boids")


def _count(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Neighbours within a radius: their number, maybe a fixed-capacity list and the nearest distance."""
    rng = p.rng
    n = p.kb.dims[0]
    radius = p.scalar(rng.choice(("radius", "query_radius")), lo=0.1, hi=0.5)
    p.add("count = int(0)")
    form = p.pick("inline", "dist", "sq")
    dist = p.length(f"{x}[index] - xi")
    body = {"inline": [], "dist": [f"r = {dist}"], "sq": [f"d = {x}[index] - xi", "r2 = wp.dot(d, d)"]}[form]
    test = {"inline": f"{dist} < {radius}", "dist": f"r < {radius}", "sq": f"r2 < {radius} * {radius}"}[form]
    body.append(f"if {test}:")
    listed = p.chance(0.35)
    if listed:  # a neighbour list of fixed capacity per particle
        cap = rng.choice((8, 16, 32))
        nbrs = p.array(rng.choice(("neighbors", "neighbor_list")), T.INT32, "out", shape=(n, cap))
        body += [f"{INDENT}if count < {nbrs}.shape[1]:", f"{INDENT * 2}{nbrs}[i, count] = index"]
    body.append(f"{INDENT}count += 1")
    closest = p.chance(0.3)
    if closest:  # and the nearest neighbour's distance
        p.add(f"nearest = float({radius})")
        body.append(f"{INDENT}nearest = wp.min(nearest, {'r' if form == 'dist' else dist})")
    neighbour_loop(p, grid, x, radius, body, skip_self=p.coin(0.7))
    out = p.array(rng.choice(("neighbor_count", "counts")), T.INT32, "out")
    if p.chance(0.3) and not listed:  # neighbour lists have a fixed capacity
        cap = p.scalar(rng.choice(("max_neighbors", "capacity")), T.INT32, lo=8, hi=64)
        p.add(f"{out}[i] = wp.min(count, {cap})")
    else:
        p.add(f"{out}[i] = count")
    if closest:
        p.add(f"{p.array(rng.choice(('nearest_dist', 'min_distance')), T.FLOAT32, 'out')}[i] = nearest")
    if p.chance(0.25):
        total = p.array(rng.choice(("total_count", "num_pairs")), T.INT32, "out", shape=(1,))
        p.add(f"wp.atomic_add({total}, 0, count)")
        p.note("sums the counts over all particles")
    if closest:
        p.note("finds the nearest neighbour's distance")
    if listed:
        p.purpose = "Build a fixed-capacity neighbour list per particle from a hash-grid query, counting all neighbours"
        return ("build_neighbor_list", "find_neighbors")
    p.purpose = f"Count each particle's neighbours within a radius, found with a hash-grid query"
    return ("count_neighbors", "neighbor_counts")


@register("grid_neighbors", 0.9, source="patterns")
def grid_neighbors(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    n = rng.choice((64, 128, 256))
    p.kb.dims = [n]
    grid = p.handle(rng.choice(("grid", "grid_id")))
    x = p.array(rng.choice(("particle_x", "positions", "x")), T.VEC3F)
    sorted_order = rng.random() < 0.6  # threads ordered by grid cell, as Warp's examples do
    if sorted_order:
        p.add(f"i = wp.hash_grid_point_id({grid}, tid)")
    else:
        p.guard("i", x, ("num_particles", n))
    p.add(f"xi = {x}[i]")
    kind = rng.choice((_contact, _density, _average, _count))
    base = kind(p, x, grid)
    return p.finish(rng.choice(base), p.kb.dims, ["tid" if sorted_order else "i"], purpose=p.purpose,
                    differentiable=False, needs=f"needs {GRID}")


@register("mesh_queries", 0.9, source="patterns")
def mesh_queries(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    kind = rng.choice(("collide", "collide", "raycast", "sdf", "bvh"))
    if kind == "raycast":
        return _mesh_raycast(p)
    if kind == "bvh":
        return _bvh_overlaps(p)
    n = rng.choice((64, 128, 256))
    p.kb.dims = [n]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")))
    x = p.array(rng.choice(("positions", "particle_x", "points")), T.VEC3F)
    p.guard("tid", x, ("num_particles", n))
    max_dist = p.scalar(rng.choice(("max_dist", "query_radius")), lo=0.5, hi=2.0)
    p.add(f"x = {x}[tid]")
    if kind == "sdf":
        return _mesh_sdf(p, mesh, x, max_dist)
    return _mesh_collide(p, mesh, x, max_dist)


def closest_point(p: Pattern, mesh: str, at: str, max_dist: str, signed: bool = True) -> tuple[str, str]:
    """Lines querying the closest point of ``mesh`` to ``at``; returns (hit test, sign expression).

    Either the query object (``q = wp.mesh_query_point(...)``, ``q.result``) or the older form
    with output arguments (``wp.mesh_query_point(mesh, x, d, inside, face, u, v)`` as the test);
    after the test, ``face``, ``u``, ``v`` name the closest point's face and barycentrics.
    """
    fn = p.pick("mesh_query_point", "mesh_query_point_sign_normal", "mesh_query_point_sign_winding_number")
    if not signed:
        fn = "mesh_query_point_no_sign"
    if p.coin(0.4):
        p.add("face = int(0)", "bary_u = float(0.0)", "bary_v = float(0.0)")
        if signed:
            p.add("sign = float(0.0)")
        outs = "sign, face, bary_u, bary_v" if signed else "face, bary_u, bary_v"
        return f"wp.{fn}({mesh}, {at}, {max_dist}, {outs})", "sign"
    p.add(f"q = wp.{fn}({mesh}, {at}, {max_dist})")
    return "q.result", "q.sign"


def query_fields(test: str) -> tuple[str, str, str]:
    return ("q.face", "q.u", "q.v") if test == "q.result" else ("face", "bary_u", "bary_v")


def _mesh_sdf(p: Pattern, mesh: str, x: str, max_dist: str):
    """Signed (or unsigned) distance to a mesh per point, with optional normals and inside flags."""
    rng = p.rng
    signed = p.coin(0.75)
    out = p.array(rng.choice(("sdf", "distances")), T.FLOAT32, "out")
    at = "x"
    if p.chance(0.3):  # the mesh is posed by a transform: query in its local frame
        xform = p.array(rng.choice(("mesh_transform", "shape_X")), T.TRANSFORMF, shape=(1,))
        p.add(f"x_local = wp.transform_point(wp.transform_inverse({xform}[0]), x)")
        at = "x_local"
        p.note("queries in the frame of the posed mesh")
    p.add(f"d = {max_dist}")
    test, sign = closest_point(p, mesh, at, max_dist, signed)
    face, u, v = query_fields(test)
    p.add(f"if {test}:", f"{INDENT}cp = wp.mesh_eval_position({mesh}, {face}, {u}, {v})")
    dist = p.length(f"{at} - cp")
    if signed and p.coin(0.3):
        p.add(f"{INDENT}dist = {dist}", f"{INDENT}d = wp.where({sign} < 0.0, -dist, dist)")
    else:
        p.add(f"{INDENT}d = {dist} * {sign}" if signed else f"{INDENT}d = {dist}")
    if p.chance(0.35):  # the surface normal at the closest point, for gradients of the field
        normals = p.array(rng.choice(("normals", "face_normals")), T.VEC3F, "out")
        p.add(f"{INDENT}{normals}[tid] = wp.mesh_eval_face_normal({mesh}, {face})")
        p.note("writes the normal of the closest face")
    if signed and p.chance(0.3):
        inside = p.array(rng.choice(("inside", "is_inside")), T.INT32, "out")
        p.add(f"{inside}[tid] = wp.where(d < 0.0, 1, 0)")
        p.note("flags points inside the mesh")
    if p.chance(0.3):  # a narrow band: distances beyond the band are clamped
        band = p.scalar(rng.choice(("band_width", "narrow_band")), lo=0.1, hi=1.0)
        p.add(f"d = wp.clamp(d, -{band}, {band})")
        p.note(f"clamps distances to a narrow band of width {band}")
    p.add(f"{out}[tid] = d")
    what = "signed distance (negative inside)" if signed else "unsigned distance"
    return p.finish(rng.choice(("sample_sdf", "mesh_distance", "compute_sdf")), p.kb.dims,
                    purpose=f"Compute each point's {what} to a mesh, up to {max_dist}",
                    differentiable=False, needs="needs a wp.Mesh")


def _mesh_collide(p: Pattern, mesh: str, x: str, max_dist: str):
    """Push particles out of a mesh and remove their approaching normal velocity."""
    rng = p.rng
    in_place = p.coin(0.6)
    vel = p.array(rng.choice(("velocities", "particle_v")), T.VEC3F, "inout" if in_place else "in")
    radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.01, hi=0.1)
    p.kb.params[[q.name for q in p.kb.params].index(x)].role = "inout" if in_place else "in"
    p.add(f"v = {vel}[tid]")
    test, sign = closest_point(p, mesh, "x", max_dist)
    face, u, v = query_fields(test)
    body = [f"cp = wp.mesh_eval_position({mesh}, {face}, {u}, {v})", "delta = x - cp",
            f"dist = {p.length('delta')} * {sign}"]
    normal = p.pick("wp.normalize(delta) * {s}", "delta * ({s} / wp.max(wp.abs(dist), 1.0e-6))", "face")
    if normal == "face":
        normal = f"wp.mesh_eval_face_normal({mesh}, {face})"
    push = p.pick(f"x = x + n * ({radius} - dist)", f"x = cp + n * {radius}")
    body += [f"if dist < {radius}:", f"{INDENT}n = {normal.format(s=sign)}", f"{INDENT}{push}"]
    if "delta" in normal:
        p.why("delta points into the mesh from inside: the sign turns it outwards", f"n = {normal.format(s=sign)}")
    rel = "v"
    if p.chance(0.3):  # a moving mesh: the response uses the velocity relative to the surface
        body.append(f"{INDENT}v_rel = v - wp.mesh_eval_velocity({mesh}, {face}, {u}, {v})")
        rel = "v_rel"
        p.note("responds to the velocity relative to the moving mesh")
    body += [f"{INDENT}vn = wp.dot({rel}, n)", f"{INDENT}if vn < 0.0:"]
    response = p.pick("stop", "friction", "restitution")
    p.note({"stop": "removes the approaching normal velocity", "friction": "removes the approaching normal "
            "velocity and scales the tangential one by 1 - friction",
            "restitution": "reflects the approaching normal velocity with restitution"}[response])
    if response == "friction":
        mu = p.scalar(rng.choice(("friction", "mu")), lo=0.0, hi=1.0)
        body += [f"{INDENT * 2}vt = v - n * vn", f"{INDENT * 2}v = vt * (1.0 - {mu})"]
    elif response == "restitution":
        e = p.scalar(rng.choice(("restitution", "bounce")), lo=0.0, hi=1.0)
        body.append(f"{INDENT * 2}v = v - n * ((1.0 + {e}) * vn)")
    else:
        body.append(f"{INDENT * 2}v = v - n * vn")
    if p.chance(0.3):
        contacts = p.array(rng.choice(("contact_count", "num_contacts")), T.INT32, "out", shape=(1,))
        body.append(f"{INDENT}wp.atomic_add({contacts}, 0, 1)")
    if in_place and test == "q.result" and p.coin(0.4):  # nothing to do away from the mesh
        p.add("if not q.result:", f"{INDENT}return", *body)
    else:
        p.add(f"if {test}:")
        p.add(*body, indent=1)
    if in_place:
        p.add(f"{x}[tid] = x", f"{vel}[tid] = v")
    else:
        xo = p.array(rng.choice(("positions_out", "x_new")), T.VEC3F, "out")
        vo = p.array(rng.choice(("velocities_out", "v_new")), T.VEC3F, "out")
        p.add(*p.pick([f"{xo}[tid] = x", f"{vo}[tid] = v"], [f"{vo}[tid] = v", f"{xo}[tid] = x"]))
    return p.finish(rng.choice(("collide_mesh", "particle_mesh_contact", "resolve_collisions")), p.kb.dims,
                    purpose=f"Push particles closer than {radius} to a mesh back out along the outward normal",
                    differentiable=False, needs="needs a wp.Mesh")


def _mesh_raycast(p: Pattern):
    rng = p.rng
    p.kb.dims = [rng.randint(8, 32), rng.randint(8, 32)]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")))
    depth_only = p.coin(0.3)
    image = p.array(rng.choice(("depth", "depth_image")) if depth_only else rng.choice(("pixels", "image")),
                    T.FLOAT32 if depth_only else T.VEC3F, "out", ndim=2)
    w, h = (f"{image}.shape[1]", f"{image}.shape[0]")
    if p.coin(0.3):
        w, h = p.count("width", p.kb.dims[1]), p.count("height", p.kb.dims[0])
    p.add(f"sx = 2.0 * (float(j) + 0.5) / float({w}) - 1.0", f"sy = 2.0 * (float(i) + 0.5) / float({h}) - 1.0")
    if p.coin():
        cam = p.array(rng.choice(("cam_pos", "camera_origin")), T.VEC3F, shape=(1,))
        p.add(f"ro = {cam}[0]")
    else:
        p.add(f"ro = wp.vec3(0.0, {rng.choice(('0.0', '0.5', '1.0'))}, {rng.choice(('2.0', '4.0', '5.0'))})")
    if p.coin(0.4):
        fov = p.scalar("tan_half_fov", lo=0.3, hi=1.2)
        p.add(f"rd = wp.normalize(wp.vec3(sx * {fov}, sy * {fov}, -1.0))")
    else:
        p.add("rd = wp.normalize(wp.vec3(sx, sy, -1.0))")
    max_t = p.scalar("max_t", lo=10.0, hi=100.0) if p.coin(0.4) else rng.choice(("1.0e6", "100.0", "1000.0"))
    old_form = p.coin(0.35)
    if old_form:  # output arguments, as older Warp code writes it
        p.add("t = float(0.0)", "u = float(0.0)", "v = float(0.0)", "sign = float(0.0)", "n = wp.vec3()",
              "f = int(0)")
        test, t, normal = f"wp.mesh_query_ray({mesh}, ro, rd, {max_t}, t, u, v, sign, n, f)", "t", "n"
    else:
        p.add(f"q = wp.mesh_query_ray({mesh}, ro, rd, {max_t})")
        test, t, normal = "q.result", "q.t", "q.normal"
    if depth_only:
        p.add("d = float(0.0)", f"if {test}:", f"{INDENT}d = {t}", f"{image}[i, j] = d")
        return p.finish(rng.choice(("render_depth", "raycast_depth")), p.kb.dims, ["i", "j"],
                        purpose="Ray cast a depth image of a mesh through a pinhole camera, 0 where nothing is hit",
                        differentiable=False, needs="needs a wp.Mesh")
    p.add(f"color = wp.vec3({rng.choice(('0.0', '0.1', '0.2'))})", f"if {test}:")
    shade = p.pick("normal", "lambert", "lambert_pos")
    if shade == "normal":
        p.add(f"color = {normal} * 0.5 + wp.vec3(0.5)", indent=1)
    elif shade == "lambert":  # a fixed light direction, written as a unit vector
        light = rng.choice(("wp.vec3(0.5774, 0.5774, 0.5774)", "wp.vec3(-0.5774, 0.5774, 0.5774)",
                            "wp.vec3(0.3333, 0.6667, 0.6667)"))
        p.add(f"color = wp.vec3(wp.max(wp.dot({normal}, {light}), 0.0))", indent=1)
    else:  # a point light: the direction from the hit point
        light = p.array(rng.choice(("light_pos", "lights")), T.VEC3F, shape=(1,))
        p.add(f"hit = ro + rd * {t}", f"l = wp.normalize({light}[0] - hit)",
              f"color = wp.vec3(1.0) * wp.max(wp.dot({normal}, l), 0.0)", indent=1)
    if p.chance(0.3):
        depth = p.array(rng.choice(("depth", "hit_t")), T.FLOAT32, "out", ndim=2)
        p.add(f"{depth}[i, j] = {t}", indent=1)
    p.add(f"{image}[i, j] = color")
    look = {"normal": "coloured by its normals", "lambert": "lit by a directional light",
            "lambert_pos": "lit by a point light"}[shade]
    return p.finish(rng.choice(("render_mesh", "raycast_mesh", "draw_mesh")), p.kb.dims, ["i", "j"],
                    purpose=f"Ray cast an image of a mesh {look} through a pinhole camera, one thread per pixel",
                    differentiable=False, needs="needs a wp.Mesh")


def _bvh_overlaps(p: Pattern):
    rng = p.rng
    n = rng.choice((32, 64, 128))
    p.kb.dims = [n]
    bvh = p.handle(rng.choice(("bvh", "bvh_id")))
    by_ray = p.coin(0.35)
    if by_ray:
        origins = p.array(rng.choice(("ray_origins", "starts")), T.VEC3F)
        dirs = p.array(rng.choice(("ray_dirs", "directions")), T.VEC3F)
        p.guard("tid", origins, ("num_rays", n))
        p.add(f"query = wp.bvh_query_ray({bvh}, {origins}[tid], {p.pick(f'wp.normalize({dirs}[tid])', f'{dirs}[tid]')})")
    else:
        lower = p.array(rng.choice(("lowers", "box_lower")), T.VEC3F)
        upper = p.array(rng.choice(("uppers", "box_upper")), T.VEC3F)
        p.guard("tid", lower, ("num_boxes", n))
        if p.coin(0.4):  # a query box grown by a margin
            margin = p.scalar(rng.choice(("margin", "thickness")), lo=0.0, hi=0.2)
            p.add(f"lo = {lower}[tid] - wp.vec3({margin})", f"hi = {upper}[tid] + wp.vec3({margin})",
                  f"query = wp.bvh_query_aabb({bvh}, lo, hi)")
        else:
            p.add(f"query = wp.bvh_query_aabb({bvh}, {lower}[tid], {upper}[tid])")
    p.add("index = int(0)", "count = int(0)")
    first = p.chance(0.3)
    if first:
        p.add("first = int(-1)")
    p.add("while wp.bvh_query_next(query, index):")
    body = ["count += 1"] + (["if first < 0:", f"{INDENT}first = index"] if first else [])
    if not by_ray and p.coin():
        p.add("if index != tid:", *(INDENT + b for b in body), indent=1)
    else:
        p.add(*body, indent=1)
    out = p.array(rng.choice(("overlap_count", "counts", "hit_count")), T.INT32, "out")
    p.add(f"{out}[tid] = count")
    if first:
        out_first = p.array(rng.choice(("first_hit", "first_overlap")), T.INT32, "out")
        p.add(f"{out_first}[tid] = first")
    if p.chance(0.3):
        total = p.array(rng.choice(("total_pairs", "pair_count")), T.INT32, "out", shape=(1,))
        p.add(f"wp.atomic_add({total}, 0, count)")
        p.note("sums the counts over all queries")
    if first:
        p.note("records the first item found")
    query = "ray" if by_ray else "box"
    return p.finish(rng.choice(("count_overlaps", "broad_phase", "query_boxes")), p.kb.dims,
                    purpose=f"Count the BVH items each {query} overlaps, as a broad phase does",
                    differentiable=False, needs="needs a wp.Bvh")
