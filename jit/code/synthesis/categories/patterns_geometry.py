"""Pattern families that query runtime objects: hash-grid neighbours, meshes and BVHs.

Discrete-element contacts, neighbour averages, boids, heat conduction and neighbour counts over
``wp.hash_grid_query`` (every candidate the query returns is tested against the radius; SPH is
in ``patterns_fluids``); particle-mesh collision and distances with ``wp.mesh_query_point*``;
ray casting a mesh with ``wp.mesh_query_ray``; counting overlaps with ``wp.bvh_query_aabb`` and
``wp.bvh_query_ray``. The kernels take ``wp.uint64`` ids; each id carries the recipe the launch
builds its object from (``checks.objects``: a hash grid over the kernel's own points, a sphere
mesh of radius 1, a lattice of boxes), so the kernels run and replay. What it leaves out:
volumes and textures.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.names import paired
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, Flavour, Pattern
from jit.code.synthesis.pieces.kit import PLAIN
from jit.code.synthesis.categories.patterns_fluids import GRID, neighbour_loop

MESH = {"object": "mesh", "radius": 1.0}  # the launch builds a closed sphere mesh of radius 1 around the origin


def velocities_of(x: str) -> str:
    """The velocities' name in the positions' convention: ``particle_x`` with ``particle_v``, ``x`` with
    ``v``, ``positions`` or ``points`` with ``velocities``."""
    return {"particle_x": "particle_v", "particle_q": "particle_qd", "x": "v"}.get(x, "velocities")


def _contact(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Discrete-element contact forces between overlapping particles."""
    rng = p.rng
    radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.05, hi=0.2)
    ke = p.scalar(rng.choice(("k_contact", "ke")), lo=100.0, hi=1.0e4)
    body = [f"d = xi - {x}[index]"]
    squared = not p.coin()
    if not squared:
        body += [f"dist = {p.length('d')}", f"overlap = 2.0 * {radius} - dist",
                 "if overlap > 0.0 and dist > 1.0e-6:"]
    else:  # the cheap squared test first, the square root only for contacts
        body += ["dist_sq = wp.dot(d, d)", "if dist_sq < contact_sq and dist_sq > 1.0e-12:",
                 f"{INDENT}dist = wp.sqrt(dist_sq)", f"{INDENT}overlap = 2.0 * {radius} - dist"]
    body.append(f"{INDENT}n = d / dist")
    law = p.pick("linear", "linear", "hertz")
    body.append(f"{INDENT}f += n * ({ke} * overlap)" if law == "linear" else
                f"{INDENT}f += n * ({ke} * overlap * wp.sqrt(overlap))")
    damped = p.chance(0.5)
    if damped:
        v = p.array(velocities_of(x), T.VEC3F)
        kd = p.scalar(rng.choice(("k_damp", "kd")), lo=0.0, hi=10.0)
        p.note("damps the normal velocity of approaching pairs")
        # vn < 0 while the pair closes; a separating pair is not held back (no sticky contacts);
        # the particle's own velocity is read once, before the loop (vi below)
        if p.coin():
            body.append(f"{INDENT}f -= n * ({kd} * wp.min(wp.dot(vi - {v}[index], n), 0.0))")
        else:
            body += [f"{INDENT}vrel = vi - {v}[index]", f"{INDENT}vn = wp.min(wp.dot(vrel, n), 0.0)",
                     f"{INDENT}f -= n * ({kd} * vn)"]
    count = p.chance(0.3)
    if count:
        body.append(f"{INDENT}contacts += 1")
    p.add(*p.pick(["f = wp.vec3()"], ["f = wp.vec3(0.0)"], ["f = wp.vec3(0.0, 0.0, 0.0)"]))
    if count:
        p.add("contacts = int(0)")
    if damped:
        p.add(f"vi = {v}[i]")
    if squared:  # the squared contact distance, once rather than for every neighbour
        p.add(f"contact_sq = 4.0 * {radius} * {radius}")
    neighbour_loop(p, grid, x, f"2.0 * {radius}", body)
    if p.chance(0.3):
        fmax = p.scalar(rng.choice(("max_force", "force_limit")), lo=10.0, hi=100.0)
        p.add(f"fn = {p.length('f')}", f"if fn > {fmax}:", f"{INDENT}f = f * ({fmax} / fn)")
        p.note(f"limits the force to {fmax}")
    if p.coin(0.35):  # added to the forces other kernels accumulate
        out = p.array(rng.choice(("particle_f", "forces")), T.VEC3F, "inout")
        p.add(f"{out}[i] += f")  # the thread's own particle: no other thread adds there
    else:
        out = p.array(rng.choice(("particle_f", "forces")), T.VEC3F, "out")
        p.add(f"{out}[i] = f")
    if count:
        p.add(f"{p.array(rng.choice(('contact_count', 'num_contacts')), T.INT32, 'out')}[i] = contacts")
        p.note("counts each particle's contacts")
    model = "linear spring" if law == "linear" else "Hertzian"
    p.purpose = f"Sum {model} contact forces on each particle from the overlapping neighbours a hash grid finds"
    return ("apply_contacts", "collide_particles", "eval_contacts")


def _average(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Boids alignment or velocity smoothing: blend towards the neighbours' (weighted) mean velocity."""
    rng = p.rng
    v = p.array(velocities_of(x), T.VEC3F)
    radius = p.scalar(rng.choice(("radius", "neighbor_radius")), lo=0.1, hi=0.5)
    name = rng.choice(("blend", "alignment"))
    if p.coin(0.35):  # a gain towards the neighbours' centre: named for it, not for velocity matching
        blend = p.scalar({"blend": "cohesion", "alignment": "k_cohesion"}[name], lo=0.0, hi=1.0)
        return _cohesion(p, x, grid, v, radius, blend)
    blend = p.scalar(name, lo=0.0, hi=1.0)
    weighted = p.pick(None, "linear", "quadratic")
    # the query returns every point of the cells the radius touches: keep those within it
    if weighted == "linear":  # a linear falloff, 1 at the particle and 0 at the radius
        p.add("vsum = wp.vec3()", "wsum = float(0.0)")
        body = [f"r = {p.length(f'xi - {x}[index]')}", f"if r < {radius}:", f"{INDENT}w = 1.0 - r / {radius}",
                f"{INDENT}vsum += {v}[index] * w", f"{INDENT}wsum += w"]
        cond, mean = "wsum > 0.0", "vsum / wsum"
    elif weighted:  # (1 - r^2 / R^2)^2: smooth at the radius, and no square root
        p.add(f"inv_r2 = 1.0 / ({radius} * {radius})", "vsum = wp.vec3()", "wsum = float(0.0)")
        body = [f"q = 1.0 - wp.length_sq(xi - {x}[index]) * inv_r2", "if q > 0.0:", f"{INDENT}w = q * q",
                f"{INDENT}vsum += {v}[index] * w", f"{INDENT}wsum += w"]
        cond, mean = "wsum > 0.0", "vsum / wsum"
    else:
        p.add(f"radius_sq = {radius} * {radius}", "vsum = wp.vec3()", "count = int(0)")
        body = [f"if wp.length_sq(xi - {x}[index]) < radius_sq:", f"{INDENT}vsum += {v}[index]",
                f"{INDENT}count += 1"]
        cond, mean = "count > 0", "vsum / float(count)"
    neighbour_loop(p, grid, x, radius, body)
    out = p.array(rng.choice(("v_out", "smoothed_v")), T.VEC3F, "out")
    p.add(f"vi = {v}[i]")
    p.why("a particle with no neighbours keeps its velocity")
    p.add(f"if {cond}:", f"{INDENT}vi = " + p.pick(f"vi + {blend} * ({mean} - vi)", f"wp.lerp(vi, {mean}, {blend})"))
    p.add(f"{out}[i] = vi")
    mean = "distance-weighted mean" if weighted else "mean"
    p.purpose = f"Blend each particle's velocity towards the {mean} velocity of its hash-grid neighbours within a radius"
    return ("smooth_velocities", "average_velocities", "align_velocities")


def _conduction(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Heat exchanged between particles within a radius, in proportion to their temperature difference."""
    rng = p.rng
    temp = p.array(rng.choice(("temperature", "particle_temp")), T.FLOAT32, lo=0.0, hi=1.0)
    radius = p.scalar(rng.choice(("radius", "conduction_radius")), lo=0.1, hi=0.5)
    k = p.scalar(rng.choice(("conductivity", "k_heat")), lo=0.0, hi=1.0)
    dt = p.scalar("dt", lo=0.001, hi=0.01)
    p.add(f"ti = {temp}[i]", "flux = float(0.0)")
    body = [f"r = {p.length(f'xi - {x}[index]')}", f"if r < {radius}:"]
    if p.coin():  # a linear falloff: neighbours at the radius exchange nothing
        body.append(f"{INDENT}flux += ({temp}[index] - ti) * (1.0 - r / {radius})")
        falloff = "weighting each neighbour by a linear falloff with distance"
    else:
        body.append(f"{INDENT}flux += {temp}[index] - ti")
        falloff = "every neighbour alike"
    neighbour_loop(p, grid, x, radius, body)
    out = p.array(rng.choice(("temperature_out", "temp_next")), T.FLOAT32, "out")
    if p.chance(0.3):  # the rate, for an adaptive step
        rate = p.array(rng.choice(("heat_rate", "dtemp_dt")), T.FLOAT32, "out")
        p.add(f"dtdt = {k} * flux", f"{out}[i] = ti + {dt} * dtdt", f"{rate}[i] = dtdt")
        p.note("writes the rate of change of each temperature")
    else:
        p.add(f"{out}[i] = ti + {dt} * {k} * flux")
    p.purpose = f"Conduct heat between particles within a radius found with a hash-grid query, {falloff}"
    return ("conduct_heat", "diffuse_temperature", "particle_conduction")


def _cohesion(p: Pattern, x: str, grid: str, v: str, radius: str, blend: str) -> tuple[str, ...]:
    """Boids cohesion (and maybe separation): steer towards the neighbours' centre."""
    rng = p.rng
    separate = p.chance(0.5)
    p.add(f"radius_sq = {radius} * {radius}", "centre = wp.vec3()", "count = int(0)")
    # the query returns every point of the cells the radius touches: keep those within it
    body = [f"xj = {x}[index]", "d = xi - xj", "r2 = wp.dot(d, d)", "if r2 < radius_sq:",
            f"{INDENT}centre += xj", f"{INDENT}count += 1"]
    if separate:  # a push falling off with distance, kept finite for coincident boids
        p.add("push = wp.vec3()")
        body.append(f"{INDENT}push += d / wp.max(r2, 1.0e-6)")
    neighbour_loop(p, grid, x, radius, body)
    out = p.array(rng.choice(("v_out", "steered_v")), T.VEC3F, "out")
    p.add(f"vi = {v}[i]", "if count > 0:", f"{INDENT}vi += {blend} * (centre / float(count) - xi)")
    if separate:
        k = p.scalar(rng.choice(("separation", "k_separation")), lo=0.0, hi=0.1)
        p.add(f"vi += {k} * push")
        p.note("pushes it away from every neighbour in the radius, harder the closer they are")
    if p.chance(0.4):
        vmax = p.scalar(rng.choice(("max_speed", "speed_limit")), lo=1.0, hi=5.0)
        p.add(f"speed = {p.length('vi')}", f"if speed > {vmax}:", f"{INDENT}vi = vi * ({vmax} / speed)")
        p.note(f"limits the speed to {vmax}")
    p.add(f"{out}[i] = vi")
    p.purpose = "Steer each boid towards the centre of its hash-grid neighbours within a radius (cohesion)"
    return ("flock", "boids_step", "steer_boids")


def _count(p: Pattern, x: str, grid: str) -> tuple[str, ...]:
    """Neighbours within a radius: their number, maybe a fixed-capacity list and the nearest distance."""
    rng = p.rng
    n = p.kb.dims[0]
    radius = p.scalar(rng.choice(("radius", "query_radius")), lo=0.1, hi=0.5)
    p.add("count = int(0)")
    closest = p.chance(0.3)  # and the nearest neighbour's distance
    form = p.pick("dist", "sq") if closest else p.pick("inline", "dist", "sq")
    dist = p.length(f"{x}[index] - xi")
    body = {"inline": [], "dist": [f"r = {dist}"], "sq": [f"d = {x}[index] - xi", "r2 = wp.dot(d, d)"]}[form]
    test = {"inline": f"{dist} < {radius}", "dist": f"r < {radius}", "sq": "r2 < radius_sq"}[form]
    if form == "sq":  # the squared radius, once rather than for every neighbour
        p.add(f"radius_sq = {radius} * {radius}")
    body.append(f"if {test}:")
    listed = p.chance(0.35)
    if listed:  # a neighbour list of fixed capacity per particle
        cap = rng.choice((8, 16, 32))
        nbrs = p.array(rng.choice(("neighbors", "neighbor_list")), T.INT32, "out", shape=(n, cap))
        body += [f"{INDENT}if count < {nbrs}.shape[1]:", f"{INDENT * 2}{nbrs}[i, count] = index"]
    body.append(f"{INDENT}count += 1")
    if closest:  # no neighbour is further than the radius: it bounds the search
        p.add(f"nearest = {radius}")
        body.append(f"{INDENT}nearest = wp.min(nearest, {'r' if form == 'dist' else 'wp.sqrt(r2)'})")
    skip_self = closest or p.coin(0.7)  # the particle itself would always be the nearest, at distance 0
    neighbour_loop(p, grid, x, radius, body, skip_self=skip_self)
    out = p.array(rng.choice(("neighbor_count", "counts")), T.INT32, "out")
    p.add(f"{out}[i] = count")
    if closest:
        nearest = p.array(rng.choice(("nearest_dist", "min_distance")), T.FLOAT32, "out")
        p.why("-1 marks a particle with no neighbour within the radius")
        p.add("if count == 0:", f"{INDENT}nearest = -1.0", f"{nearest}[i] = nearest")
    if p.chance(0.25):
        total = p.array(rng.choice(("total_count", "num_pairs")), T.INT32, "out", shape=(1,))
        p.add(f"wp.atomic_add({total}, 0, count)")
        p.note("sums the counts over all particles")
    if closest:
        p.note("writes the nearest neighbour's distance, or -1 for a particle with none")
    if listed:
        p.purpose = "Build a fixed-capacity neighbour list per particle from a hash-grid query, counting all neighbours"
        if not skip_self:
            p.purpose += " (the particle itself among them)"
        return ("build_neighbor_list", "find_neighbors")
    p.purpose = "Count each particle's neighbours within a radius, found with a hash-grid query"
    if not skip_self:
        p.purpose += ", the particle itself included"
    return ("count_neighbors", "neighbor_counts")


@register("grid_neighbors", 0.9, source="patterns")
def grid_neighbors(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < PLAIN))
    n = rng.choice((64, 128, 256))
    p.kb.dims = [n]
    x = rng.choice(("particle_x", "positions", "x"))
    # the query radii drawn below are at most 0.5 (contacts: twice a radius of at most 0.2)
    grid = p.handle(rng.choice(("grid", "grid_id")), {"object": "hash_grid", "points": x, "cell_size": 0.5})
    p.array(x, T.VEC3F, lo=-1.0, hi=1.0)
    sorted_order = rng.random() < 0.6  # threads ordered by grid cell, as Warp's examples do
    if sorted_order:
        p.add(f"i = wp.hash_grid_point_id({grid}, tid)")
    else:
        p.guard("i", x, ("num_particles", n))
    p.add(f"xi = {x}[i]")
    kind = rng.choice((_contact, _average, _count, _conduction))
    base = kind(p, x, grid)
    return p.finish(rng.choice(base), p.kb.dims, ["tid" if sorted_order else "i"], purpose=p.purpose,
                    differentiable=False, needs=f"needs {GRID}")


@register("mesh_queries", 0.9, source="patterns")
def mesh_queries(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < PLAIN))
    kind = rng.choice(("collide", "collide", "raycast", "sdf", "bvh"))
    if kind == "raycast":
        return _mesh_raycast(p)
    if kind == "bvh":
        return _bvh_overlaps(p)
    n = rng.choice((64, 128, 256))
    p.kb.dims = [n]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")), MESH)
    x = p.array(rng.choice(("positions", "particle_x", "points")), T.VEC3F)
    p.guard("tid", x, ("num_particles", n))
    # a distance field's query radius is its narrow band: farther points read the radius
    max_dist = p.scalar(rng.choice(("max_dist", "narrow_band") if kind == "sdf" else ("max_dist", "query_radius")),
                        lo=0.5, hi=2.0)
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
    if p.coin(0.15):  # the older output-argument form, still in Warp's tests
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
        # the caller inverts the mesh's pose once: every point maps with the same world-to-local transform
        xform = p.scalar(rng.choice(("world_to_mesh", "mesh_X_inv")), T.TRANSFORMF)
        p.add(f"x_local = wp.transform_point({xform}, x)")
        at = "x_local"
        p.note("queries in the frame of the posed mesh, given its world-to-local transform")
    p.add(f"d = {max_dist}")
    with_normals = p.chance(0.35)  # the surface normal at the closest point, for gradients of the field
    if with_normals:
        normals = p.array(rng.choice(("normals", "face_normals")), T.VEC3F, "out")
        p.add("n = wp.vec3()")
        p.note(f"writes the normal of the closest face (zero where none is within {max_dist})")
    test, sign = closest_point(p, mesh, at, max_dist, signed)
    face, u, v = query_fields(test)
    p.add(f"if {test}:", f"{INDENT}cp = wp.mesh_eval_position({mesh}, {face}, {u}, {v})")
    dist = p.length(f"{at} - cp")
    if signed and p.coin(0.3):
        p.add(f"{INDENT}dist = {dist}", f"{INDENT}d = wp.where({sign} < 0.0, -dist, dist)")
    else:
        p.add(f"{INDENT}d = {dist} * {sign}" if signed else f"{INDENT}d = {dist}")
    if with_normals:
        p.add(f"{INDENT}n = wp.mesh_eval_face_normal({mesh}, {face})", f"{normals}[tid] = n")
    if signed and p.chance(0.3):
        inside = p.array(rng.choice(("inside", "is_inside")), T.INT32, "out")
        p.add(f"{inside}[tid] = wp.where(d < 0.0, 1, 0)")
        p.note("flags points inside the mesh")
    p.add(f"{out}[tid] = d")
    what = "signed distance (negative inside)" if signed else "unsigned distance"
    names = ("sample_sdf", "mesh_distance", "compute_sdf") if signed else ("unsigned_distance", "mesh_distance")
    return p.finish(rng.choice(names), p.kb.dims,
                    purpose=f"Compute each point's {what} to a mesh, up to {max_dist}",
                    differentiable=False, needs="needs a wp.Mesh")


def _mesh_collide(p: Pattern, mesh: str, x: str, max_dist: str):
    """Push particles out of a mesh and remove their approaching normal velocity."""
    rng = p.rng
    in_place = p.coin(0.6)
    # the velocities named in the positions' convention (``particle_x`` with ``particle_v``)
    vel = p.array(velocities_of(x), T.VEC3F, "inout" if in_place else "in")
    radius = p.scalar(rng.choice(("radius", "particle_radius")), lo=0.01, hi=0.1)
    p.kb.params[[q.name for q in p.kb.params].index(x)].role = "inout" if in_place else "in"
    p.add(f"v = {vel}[tid]")
    test, sign = closest_point(p, mesh, "x", max_dist)
    face, u, v = query_fields(test)
    body = [f"cp = wp.mesh_eval_position({mesh}, {face}, {u}, {v})", "delta = x - cp"]
    normal = p.pick("delta", "delta", "face")
    if normal == "delta":  # a point on the surface has no direction from it: floor the length
        body += [f"d_len = {p.length('delta')}", f"dist = d_len * {sign}"]
        normal = "delta * ({s} / wp.max(d_len, 1.0e-6))"
    else:
        body.append(f"dist = {p.length('delta')} * {sign}")
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
        xo = p.array(paired(x)[0], T.VEC3F, "out")  # named as the inputs are, with one suffix for both
        vo = p.array(vel + xo[len(x):] if xo.startswith(x) else paired(vel)[0], T.VEC3F, "out")
        p.add(*p.pick([f"{xo}[tid] = x", f"{vo}[tid] = v"], [f"{vo}[tid] = v", f"{xo}[tid] = x"]))
    return p.finish(rng.choice(("collide_mesh", "particle_mesh_contact", "resolve_collisions")), p.kb.dims,
                    purpose=f"Push particles closer than {radius} to a mesh back out along the outward normal",
                    differentiable=False, needs="needs a wp.Mesh")


def _mesh_raycast(p: Pattern):
    rng = p.rng
    p.kb.dims = [rng.randint(8, 32), rng.randint(8, 32)]
    mesh = p.handle(rng.choice(("mesh", "mesh_id")), MESH)
    depth_only = p.coin(0.3)
    image = p.array(rng.choice(("depth", "depth_image")) if depth_only else rng.choice(("pixels", "image")),
                    T.FLOAT32 if depth_only else T.VEC3F, "out", ndim=2)
    w, h = (f"{image}.shape[1]", f"{image}.shape[0]")
    # pixel centres in [-1, 1], the horizontal one stretched by the aspect ratio so pixels stay square
    p.add(f"aspect = float({w}) / float({h})", f"sx = (2.0 * (float(j) + 0.5) / float({w}) - 1.0) * aspect",
          f"sy = 2.0 * (float(i) + 0.5) / float({h}) - 1.0")
    if p.coin():
        dist = p.scalar(rng.choice(("camera_distance", "cam_z")), lo=2.0, hi=5.0)
        p.add(f"ro = wp.vec3(0.0, 0.0, {dist})")
    else:  # the camera's place is the caller's, as in the branch above
        height = p.scalar(rng.choice(("camera_height", "cam_y")), lo=0.0, hi=1.0)
        dist = p.scalar(rng.choice(("camera_distance", "cam_z")), lo=2.0, hi=5.0)
        p.add(f"ro = wp.vec3(0.0, {height}, {dist})")
    if p.coin(0.4):
        fov = p.scalar("tan_half_fov", lo=0.3, hi=1.2)
        p.add(f"rd = wp.normalize(wp.vec3(sx * {fov}, sy * {fov}, -1.0))")
    else:
        p.add("rd = wp.normalize(wp.vec3(sx, sy, -1.0))")
    max_t = p.scalar("max_t", lo=10.0, hi=100.0) if p.coin(0.4) else rng.choice(("1.0e6", "100.0", "1000.0"))
    old_form = p.coin(0.1)
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
    depth = p.array(rng.choice(("depth", "hit_distance")), T.FLOAT32, "out", ndim=2) if p.chance(0.3) else None
    p.add(f"color = wp.vec3({rng.choice(('0.0', '0.1', '0.2'))})", "hit_t = float(0.0)" if depth else None, f"if {test}:")
    shade = p.pick("normal", "lambert", "lambert_pos")
    if shade == "normal":
        p.add(f"color = {normal} * 0.5 + wp.vec3(0.5)", indent=1)
    elif shade == "lambert":  # a fixed light direction, written as a unit vector
        light = rng.choice(("wp.vec3(0.5774, 0.5774, 0.5774)", "wp.vec3(-0.5774, 0.5774, 0.5774)",
                            "wp.vec3(0.3333, 0.6667, 0.6667)"))
        p.add(f"color = wp.vec3(wp.max(wp.dot({normal}, {light}), 0.0))", indent=1)
    else:  # a point light: the direction from the hit point
        light = p.scalar("light_pos", T.VEC3F)
        p.add(f"hit = ro + rd * {t}", f"l = wp.normalize({light} - hit)",
              f"color = wp.vec3(1.0) * wp.max(wp.dot({normal}, l), 0.0)", indent=1)
    if depth:
        p.add(f"hit_t = {t}", indent=1)
        p.note("writes the hit distance, 0 where the ray misses")
    p.add(f"{image}[i, j] = color", f"{depth}[i, j] = hit_t" if depth else None)
    look = {"normal": "coloured by its normals", "lambert": "lit by a directional light",
            "lambert_pos": "lit by a point light"}[shade]
    return p.finish(rng.choice(("render_mesh", "raycast_mesh", "draw_mesh")), p.kb.dims, ["i", "j"],
                    purpose=f"Ray cast an image of a mesh {look} through a pinhole camera, one thread per pixel",
                    differentiable=False, needs="needs a wp.Mesh")


def _bvh_overlaps(p: Pattern):
    rng = p.rng
    n = rng.choice((32, 64, 128))
    p.kb.dims = [n]
    bvh = p.handle(rng.choice(("bvh", "bvh_id")), {"object": "bvh", "count": n})
    by_ray = p.coin(0.35)
    if by_ray:
        origins = p.array(rng.choice(("ray_origins", "starts")), T.VEC3F)
        dirs = p.array(rng.choice(("ray_dirs", "directions")), T.VEC3F)
        p.guard("tid", origins, ("num_rays", n))
        p.add(f"query = wp.bvh_query_ray({bvh}, {origins}[tid], {p.pick(f'wp.normalize({dirs}[tid])', f'{dirs}[tid]')})")
    else:
        lo_name, hi_name = rng.choice((("lowers", "uppers"), ("box_lower", "box_upper")))
        lower = p.array(lo_name, T.VEC3F)
        upper = p.array(hi_name, T.VEC3F)
        p.guard("tid", lower, ("num_boxes", n))
        if p.coin(0.4):  # a query box grown by a margin
            margin = p.scalar(rng.choice(("margin", "thickness")), lo=0.0, hi=0.2)
            p.add(f"lo = {lower}[tid] - wp.vec3({margin})", f"hi = {upper}[tid] + wp.vec3({margin})",
                  f"query = wp.bvh_query_aabb({bvh}, lo, hi)")
        else:
            p.add(f"query = wp.bvh_query_aabb({bvh}, {lower}[tid], {upper}[tid])")
    p.add("index = int(0)", "count = int(0)")
    first = p.chance(0.3)  # one overlapping item, whichever the traversal meets first
    if first:
        p.add("hit = int(-1)")
    p.add("while wp.bvh_query_next(query, index):")
    body = ["count += 1"] + (["if hit < 0:", f"{INDENT}hit = index"] if first else [])
    p.add(*body, indent=1)
    out = p.array(rng.choice(("overlap_count", "counts", "hit_count")), T.INT32, "out")
    p.add(f"{out}[tid] = count")
    if first:
        out_first = p.array(rng.choice(("first_hit", "hit_index")), T.INT32, "out")  # an index, not a flag
        p.add(f"{out_first}[tid] = hit")
    if p.chance(0.3):
        total = p.array(rng.choice(("total_overlaps", "total_hits")), T.INT32, "out", shape=(1,))
        p.add(f"wp.atomic_add({total}, 0, count)")
        p.note("sums the counts over all queries")
    if first:
        p.note("records one overlapping item (in traversal order), -1 for none")
    query = "ray" if by_ray else "box"
    names = ("count_ray_hits", "bvh_ray_hits", "query_rays") if by_ray else ("count_overlaps", "broad_phase",
                                                                              "query_boxes")
    return p.finish(rng.choice(names), p.kb.dims,
                    purpose=f"Count the BVH items each {query} overlaps, as a broad phase does",
                    differentiable=False, needs="needs a wp.Bvh")
