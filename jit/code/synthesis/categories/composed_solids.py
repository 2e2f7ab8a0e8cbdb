"""Composed kernels over rigid bodies, small matrices, elastic elements, rays and meshes.

A job is composed from pieces as ``composed_particles`` describes.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.pieces import Draft
from jit.code.synthesis.pieces import roles as R
from jit.code.synthesis.pieces.kit import (STRESS_MODELS, VEC4I, corner, draft, items, join, material, says, stress, style)


SOURCE = "composed"


# ---------------------------------------------------------------------------------------------
# rigid bodies and transforms


def rigid_draft(rng, suffix, groups: tuple[str, ...]) -> Draft:
    return draft(rng, suffix, style(rng, f64=0.15, dims=(3,)), groups)


@register("integrate_bodies", 1.0, source=SOURCE)
def integrate_bodies(rng, name, suffix, complexity):
    d = rigid_draft(rng, suffix, ("BodyParams", "StepParams"))
    w, st = d.w, d.style
    its = items(d, "bodies", (4, 8, 16, 32), ("num_bodies", "body_count"), guard=0.15)
    packed = rng.random() < 0.5
    in_place = rng.random() < 0.5
    role = "inout" if in_place else "in"
    if packed:
        body_q = d.array(("body_q", "body_transforms", "transforms"), "transform", role)
        X = w.let(("X", "tf", "pose"), f"{body_q}[tid]")
        x = w.let(("x", "pos", "com"), f"wp.transform_get_translation({X})")
        q = w.let(("q", "rot", "r"), f"wp.transform_get_rotation({X})")
    else:
        body_x = d.array(("body_x", "body_pos", "positions"), "vec3", role)
        body_r = d.array(("body_rot", "orientations", "body_quat"), "quat", role)
        x, q = w.let(("x", "pos"), f"{body_x}[tid]"), w.let(("q", "rot"), f"{body_r}[tid]")
    body_v = d.array(("body_v", "linear_velocity", "velocities"), "vec3", role)
    body_w = d.array(("body_w", "angular_velocity", "omegas"), "vec3", role)
    v, omega = w.let(("v", "vel"), f"{body_v}[tid]"), w.let(("omega", "w"), f"{body_w}[tid]")
    d.gather_here()
    phrases = []
    if rng.random() < 0.6:
        # by the inverse mass, zero for a static body, as Warp's rigid integrators take it: a division by
        # the mass would have to be guarded against that zero
        acc = "acceleration_from_inverse_mass"
        d.resolve(R.INV_MASS, names=("body_inv_mass", "inv_mass"), per_item=True)  # per body, as its moments
        f = d.array(("body_f", "forces", "body_force"), "vec3")
        a = d.use(acc, f=f"{f}[tid]")["a"]
        phrases.append("applied forces")
    else:
        a = d.resolve(R.GRAVITY)
    if rng.random() < 0.3:
        d.resolve(R.DAMPING_FACTOR, names=("linear_damping_factor", "linear_decay"))
        v = d.use("velocity_damping", v=v)["v"]
        phrases.append("linear damping")
    out = d.use("symplectic_euler", x=x, v=v, a=a)
    x, v = out["x"], out["v"]
    if rng.random() < 0.5:
        torque = d.array(("body_torque", "torques", "tau"), "vec3")
        omega = d.use("euler_rotation_step", q=q, omega=omega, torque=f"{torque}[tid]")["omega"]
        phrases.append(says("euler_rotation_step"))
    if rng.random() < 0.4:
        omega = d.use("angular_damping", omega=omega)["omega"]
        phrases.append(says("angular_damping"))
    if rng.random() < 0.2:
        d.resolved[R.MAX_SPEED] = d.scalar(("max_angular_speed", "omega_max"), lo=5.0, hi=20.0)
        omega = d.use("clamp_speed", v=omega)["v"]
        phrases.append("an angular speed limit")
    linear = ("applied forces", "linear damping")
    spun = any(p not in linear for p in phrases)  # omega changed: store it
    q_new = d.use("integrate_quaternion", q=q, omega=omega)["q"]
    suffix_out = "" if in_place else "_out"
    if packed:
        target = body_q if in_place else d.array((f"{body_q}_out", "body_q_next"), "transform", "out")
        w.add(f"{target}[tid] = {st.type('transform')}({x}, {q_new})")
    else:
        tx = body_x if in_place else d.array((f"{body_x}{suffix_out}", "x_next"), "vec3", "out")
        tr = body_r if in_place else d.array((f"{body_r}{suffix_out}", "q_next"), "quat", "out")
        w.add(f"{tx}[tid] = {x}", f"{tr}[tid] = {q_new}")
    tv = body_v if in_place else d.array((f"{body_v}{suffix_out}", "v_next"), "vec3", "out")
    w.add(f"{tv}[tid] = {v}")
    if spun:  # an unchanged angular velocity is not copied to a second array
        tw = body_w if in_place else d.array((f"{body_w}{suffix_out}", "w_next"), "vec3", "out")
        w.add(f"{tw}[tid] = {omega}")
    loads = join(["gravity", *[p for p in phrases if p == "applied forces"]])
    purpose = f"Advance rigid bodies by {says('symplectic_euler')} of their centers under {loads}"
    if "linear damping" in phrases:
        purpose += " with linear damping"
    rot = [p for p in phrases if p not in linear]
    purpose += f", and their {says('integrate_quaternion')}" + (f" after {join(rot)}" if rot else "")
    return d.finish(rng.choice(("integrate_bodies", "step_bodies", "advance_bodies")), [its.launch], purpose)


@register("body_points", 1.0, source=SOURCE)
def body_points(rng, name, suffix, complexity):
    d = rigid_draft(rng, suffix, ())
    w = d.w
    its = items(d, "points", (16, 32, 64, 100), ("num_points", "point_count"), guard=0.12)
    n_bodies = rng.choice((1, 4, 8))
    inverse = rng.random() < 0.25
    if inverse:
        local = d.array(("points", "world_points", "x_world"), "vec3", lo=-1.0, hi=1.0)
    else:
        local = d.array(("local_points", "body_points", "offsets"), "vec3", lo=-0.5, hi=0.5)
    if n_bodies > 1:
        body_q = d.array(("body_q", "body_transforms", "transforms"), "transform", shape=(n_bodies,))
        owner = d.array(("point_body", "body_index"), T.INT32, lo=0, hi=n_bodies - 1)
        b = w.let(("b", "body"), f"{owner}[tid]")
        X = w.let(("X", "tf", "pose"), f"{body_q}[{b}]")
    else:  # one body: its pose and velocities are values, not arrays of one
        b, X = "", d.scalar(("body_transform", "xform", "pose"), "transform")
    if inverse:
        p = d.use("inverse_transform_point", inline=True, xform=X, p=f"{local}[tid]")["p"]
        out = d.array(("local_out", "points_local", "body_frame_points"), "vec3", "out")
        w.add(f"{out}[tid] = {p}")
        frames = "the frames of their bodies" if b else "the frame of a body"
        purpose = f"Express world points in {frames} (the inverse rigid transform)"
        return d.finish(rng.choice(("world_to_body", "to_local_frame")), [its.launch], purpose)
    p = d.use("transform_point", xform=X, p=f"{local}[tid]")["p"]
    out = d.array(("world_points", "points_world", "x_world"), "vec3", "out")
    w.add(f"{out}[tid] = {p}")
    purpose = f"Compute {says('transform_point')}"
    if rng.random() < 0.5:
        if b:
            body_v = d.array(("body_v", "linear_velocity"), "vec3", shape=(n_bodies,))
            body_w = d.array(("body_w", "angular_velocity"), "vec3", shape=(n_bodies,))
            v_b, w_b = f"{body_v}[{b}]", f"{body_w}[{b}]"
        else:
            v_b = d.scalar(("body_v", "linear_velocity"), "vec3")
            w_b = d.scalar(("body_w", "angular_velocity"), "vec3")
        w.comment("the body origin is its center of mass")
        r = w.let(("r", "arm", "lever"), f"{p} - wp.transform_get_translation({X})")
        vp = d.use("rigid_point_velocity", v=v_b, omega=w_b, r=r)["v"]
        vout = d.array(("point_velocities", "v_world", "world_velocities"), "vec3", "out")
        w.add(f"{vout}[tid] = {vp}")
        purpose += " and their velocities"
    contact = rng.choice(("none", "none", "sphere", "ground"))
    if contact == "sphere":
        hit = d.use("sphere_contact", inline=True, x=p)
        depths = d.array(("contact_depth", "penetration"), "scalar", "out")
        normals_out = d.array(("contact_normal", "contact_normals"), "vec3", "out")
        w.comment("positive where the point is inside the sphere")
        w.add(f"{depths}[tid] = {hit['depth']}", f"{normals_out}[tid] = {hit['n']}")
        purpose += ", with their contact depths and normals against a sphere collider"
    elif contact == "ground":
        depths = d.array(("contact_depth", "penetration"), "scalar", "out")
        w.comment("how far below the ground each point is; zero when above it")
        w.add(f"{depths}[tid] = wp.max({d.resolve(R.GROUND)} - {p}[1], {d.style.lit(0.0)})")
        purpose += ", with their penetration depths below a ground plane"
    if contact == "none" and rng.random() < 0.3:  # a shape's points with its normals, not beside a contact test
        normals = d.array(("local_normals", "body_normals"), "vec3")
        n = d.use("transform_vector", xform=X, d=f"{normals}[tid]")["d"]
        nout = d.array(("world_normals", "normals_world"), "vec3", "out")
        w.add(f"{nout}[tid] = {n}")
        purpose += ", with their normals rotated along"
    names = ("transform_points", "body_points_to_world", "update_shape_points") if contact == "none" else \
        ("shape_point_contacts", "body_point_contacts", "update_contact_points")
    return d.finish(rng.choice(names), [its.launch], purpose)


@register("rotate_vectors", 0.6, source=SOURCE)
def rotate_vectors(rng, name, suffix, complexity):
    d = rigid_draft(rng, suffix, ())
    w = d.w
    its = items(d, "vectors", (16, 32, 64), ("num_vectors", "count"), guard=0.2)
    vecs = d.array(("vectors", "directions", "normals"), "vec3")
    how = rng.choice(("quat_rotate", "quat_rotate_inv", "axis_angle_rotation", "spin_rotation"))
    if how.startswith("quat"):
        q = d.array(("rotations", "orientations", "q"), "quat")
        r = d.use(how, q=f"{q}[tid]", d=f"{vecs}[tid]")["d"]
    elif how == "spin_rotation":
        omega = d.array(("angular_velocity", "omegas", "spin"), "vec3", lo=-2.0, hi=2.0)
        w_i = w.let(("w", "omega_i"), f"{omega}[tid]")  # its length and its direction: read once
        r = d.use(how, omega=w_i, d=f"{vecs}[tid]")["d"]
    else:  # each vector its own axis and angle: one rotation for all would be built by every thread
        axis = d.array(("axes", "rotation_axes", "spin_axes"), "vec3")
        angle = d.array(("angles", "rotation_angles"), "scalar", lo=-3.0, hi=3.0)
        r = d.use(how, axis=f"{axis}[tid]", angle=f"{angle}[tid]", d=f"{vecs}[tid]")["d"]
    purpose = f"Compute {says(how)}"
    out = d.array(("rotated", "vectors_out", "result"), "vec3", "out")
    w.add(f"{out}[tid] = {r}")
    bases = ("rotate_to_local", "inverse_rotate") if how == "quat_rotate_inv" else ("rotate_vectors", "apply_rotation")
    return d.finish(rng.choice(bases), [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# small dense linear algebra


@register("small_solves", 0.7, source=SOURCE)
def small_solves(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.3, dims=(3,)), ("SolveParams",))
    w = d.w
    job = rng.choice(("implicit", "covariance", "polar", "shape_matching"))
    its = items(d, "particles", (16, 32, 64), ("num_particles", "n"), guard=0.2)
    if job == "implicit":
        axes = d.array(("spring_dirs", "axes", "directions"), "vec3")
        n = w.let(("n", "axis"), f"wp.normalize({axes}[tid])")
        d.resolve(R.MASS, per_item=True)
        A = d.use("implicit_spring_system", n=n)["A"]
        rhs = d.array(("rhs", "residual", "b"), "vec3")
        x = d.use("solve_3x3", A=A, b=f"{rhs}[tid]")["x"]
        out = d.array(("dx", "delta", "solution"), "vec3", "out")
        w.add(f"{out}[tid] = {x}")
        purpose = f"Solve A x = rhs per particle, A {says('implicit_spring_system')}, by {says('solve_3x3')}"
    elif job == "covariance":
        x = d.array(("positions", "points", "x"), "vec3")
        n_groups = rng.choice((1, 1, 4, 8))
        if n_groups > 1:  # one matrix per cluster, about the cluster's own center
            cluster = d.array(("cluster", "group", "cluster_id"), T.INT32, lo=0, hi=n_groups - 1)
            g = w.let(("c", "g"), f"{cluster}[tid]")
            centers = d.array(("cluster_centers", "centers"), "vec3", shape=(n_groups,))
            center, slot, per = f"{centers}[{g}]", g, " per cluster, about each cluster's center"
        else:
            center, slot, per = d.resolve(R.CENTER, names=("center", "reference_point", "centroid")), "0", \
                " about a center"
        r = w.let(("r", "offset"), f"{x}[tid] - {center}")
        m = d.use("outer_product", a=r, b=r)["m"]
        if rng.random() < 0.5:
            mass = d.resolve(R.MASS, per_item=True)
            m = w.let(("weighted", "m_weighted"), f"{m} * {mass}")
            what = "the mass-weighted covariance"
        else:
            what = "the covariance"
        out = d.array(("covariance", "cov", "moment"), "mat33", "out", shape=(n_groups,))
        w.add(f"wp.atomic_add({out}, {slot}, {m})")
        purpose = f"Accumulate {what} of points{per} from {says('outer_product')}"
    elif job == "polar":
        A = d.array(("apq", "covariances", "F"), "mat33")
        R_ = d.use("polar_rotation", F=f"{A}[tid]")["R"]
        out = d.array(("rotations", "R_out", "cluster_rot"), "mat33", "out")
        w.add(f"{out}[tid] = {R_}")
        purpose = f"Extract {says('polar_rotation')} of each matrix (a proper rotation)"
    else:
        n_clusters = rng.choice((1, 4))
        x = d.array(("positions", "x", "particle_x"), "vec3", "inout")
        if n_clusters > 1:
            rots = d.array(("cluster_rotations", "rotations"), "mat33", shape=(n_clusters,))
            centers = d.array(("cluster_centers", "centers"), "vec3", shape=(n_clusters,))
            cluster = d.array(("cluster", "cluster_id", "group"), T.INT32, lo=0, hi=n_clusters - 1)
            c = w.let(("c", "k_c"), f"{cluster}[tid]")
            rot, center = f"{rots}[{c}]", f"{centers}[{c}]"
        else:  # one cluster: its rotation and center are values, not arrays of one
            rot = d.scalar(("rotation", "R"), "mat33")
            center = d.scalar(("center", "com"), "vec3")
        xi = w.let(("xi", "p"), f"{x}[tid]")
        d.gather_here()
        x_new = d.use("pull_to_goal", R=rot, c=center, x=xi)["x"]
        w.add(f"{x}[tid] = {x_new}")
        if n_clusters > 1:
            purpose = f"Apply {says('pull_to_goal')} of each particle's cluster (rotated rest offset)"
        else:
            purpose = f"Apply {says('pull_to_goal')} of one cluster (its rotation and center given) " \
                      "to every particle"
    names = {"implicit": ("solve_local_systems", "local_solve"), "covariance": ("accumulate_covariance", "covariance"),
             "polar": ("polar_rotations", "extract_rotations"), "shape_matching": ("shape_matching", "match_shapes")}
    return d.finish(rng.choice(names[job]), [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# elastic elements


@register("fem_forces", 1.0, source=SOURCE)
def fem_forces(rng, name, suffix, complexity):
    st = style(rng, f64=0.2, dim2=0.4)
    d = draft(rng, suffix, st, ("Material", "ElementParams"))
    w, dim = d.w, st.dim
    nv = dim + 1
    noun = "triangles" if dim == 2 else "tetrahedra"
    its = items(d, noun, (16, 32, 64), (f"num_{noun}", "element_count", "num_elements"), guard=0.12)
    n_particles = rng.choice((16, 32, 64))
    hi = n_particles - 1
    layout = rng.choice(("flat", "vector", "table"))
    if layout == "flat":
        idx = d.array(("indices", "element_indices", "tet_indices" if dim == 3 else "tri_indices"), T.INT32,
                      lo=0, hi=hi, shape=(nv * its.n,))
        verts = [w.let(f"i{a}", f"{idx}[{corner(nv, a)}]") for a in range(nv)]
    elif layout == "vector":
        t = T.VEC3I if nv == 3 else VEC4I
        idx = d.array(("elements", "tets" if dim == 3 else "tris"), t, lo=0, hi=hi)
        e = w.let(("e", "element"), f"{idx}[tid]")
        verts = [w.let(f"i{a}", f"{e}[{a}]") for a in range(nv)]
    else:
        idx = d.array(("elements", "element_vertices"), T.INT32, lo=0, hi=hi, shape=(its.n, nv))
        verts = [w.let(f"i{a}", f"{idx}[tid, {a}]") for a in range(nv)]
    x = d.array(R.POSITION.names, "vec", shape=(n_particles,))
    xs = [w.let(f"x{a}", f"{x}[{v}]") for a, v in enumerate(verts)]
    d.gather_here()
    Ds = d.use("edge_matrix_tri" if dim == 2 else "edge_matrix_tet", **{f"x{a}": p for a, p in enumerate(xs)})["Ds"]
    Dm_inv = d.resolve(R.REST_INV, per_item=True)
    F = d.use("deformation_gradient", Ds=Ds, Dm_inv=Dm_inv)["F"]
    model = rng.choice(STRESS_MODELS)
    lame, from_moduli = material(d, per_item=rng.random() < 0.3)
    P, eps = stress(d, model, F, lame)
    d.resolve(R.REST_VOLUME, names=("rest_area", "element_area", "areas") if dim == 2 else
              ("rest_volume", "element_volume", "volumes"))
    H = d.use("element_forces", P=P, Dm_inv=Dm_inv)["H"]
    forces = d.array(R.FORCE.names, "vec", rng.choice(("out", "inout")), shape=(n_particles,))
    if rng.random() < 0.5:
        cols = [w.let(f"f{a + 1}", f"{st.v}({', '.join(f'{H}[{r}, {a}]' for r in range(dim))})") for a in range(dim)]
    else:
        Ht = w.let(("Ht", "H_t"), f"wp.transpose({H})")
        w.comment("a row of H^T is a column of H") if rng.random() < 0.5 else None
        cols = [w.let(f"f{a + 1}", f"{Ht}[{a}]") for a in range(dim)]
    f0 = w.let("f0", f"-({' + '.join(cols)})")
    for v, f in zip(verts, [f0, *cols]):
        w.add(f"wp.atomic_add({forces}, {v}, {f})")
    extras = []
    if eps and rng.random() < 0.35:
        psi = d.use("quadratic_energy_density", eps=eps, **lame)["psi"]
        energy = d.array(("total_energy", "elastic_energy", "energy"), "scalar", "out", shape=(1,))
        w.add(f"wp.atomic_add({energy}, 0, {psi} * {d.resolve(R.REST_VOLUME, per_item=True)})")
        extras.append("sum the elastic energy")
    if dim == 3 and rng.random() < 0.25:
        vm = d.use("von_mises_stress", P=P, F=F)["s"]
        out = d.array(("von_mises", "element_stress", "stress_out"), "scalar", "out")
        w.add(f"{out}[tid] = {vm}")
        extras.append(f"store {says('von_mises_stress')} of each element")
    purpose = f"Accumulate {says('element_forces')} of {noun} under {says(model)}{from_moduli}"
    if extras:
        purpose += f", and {join(extras)}"
    return d.finish(rng.choice(("eval_elements", "element_forces", f"eval_{noun}", "fem_forces")), [its.launch],
                    purpose)


@register("material_stress", 0.9, source=SOURCE)
def material_stress(rng, name, suffix, complexity):
    st = style(rng, f64=0.25, dim2=0.3)
    d = draft(rng, suffix, st, ("Material",))
    w = d.w
    its = items(d, "points", (16, 32, 64, 100), ("num_points", "n"), guard=0.12)
    grad_u = d.array(("grad_u", "displacement_gradient", "du_dx"), "mat", lo=-0.2, hi=0.2)
    d.gather_here()
    F = d.use("deformation_from_displacement", H=f"{grad_u}[tid]")["F"]
    # finite-strain models only: a small strain from F = I + grad_u would subtract the identity it just
    # added (0.5 (F + F^T) - I is the symmetric part of grad_u), and its stress is not a Piola stress
    model = rng.choice(("neo_hookean_stress", "stvk_stress", "stable_neo_hookean_stress"))
    lame, from_moduli = material(d, per_item=rng.random() < 0.4, noun="point")
    P, eps = stress(d, model, F, lame)
    out = d.array(("stress", "P_out", "pk1"), "mat", "out")
    w.add(f"{out}[tid] = {P}")
    extras = []
    if eps and rng.random() < 0.35:
        psi = d.use("quadratic_energy_density", eps=eps, **lame)["psi"]
        psi_out = d.array(("energy_density", "psi"), "scalar", "out")
        w.add(f"{psi_out}[tid] = {psi}")
        extras.append(says("quadratic_energy_density"))
    if st.dim == 3 and rng.random() < 0.3:
        vm = d.use("von_mises_stress", P=P, F=F)["s"]
        vm_out = d.array(("von_mises", "equivalent_stress"), "scalar", "out")
        w.add(f"{vm_out}[tid] = {vm}")
        extras.append(says("von_mises_stress"))
    purpose = f"Evaluate the first Piola-Kirchhoff stress of {says(model)}{from_moduli} at {st.dim}D material " \
              f"points from displacement gradients"
    if extras:
        purpose += f", and {join(extras)}"
    return d.finish(rng.choice(("compute_stress", "eval_material", "constitutive_update")), [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# rays


@register("cast_rays", 1.3, source=SOURCE)
def cast_rays(rng, name, suffix, complexity):
    from jit.code.synthesis.pieces.rays import FAR, LIGHT_DIR

    d = draft(rng, suffix, style(rng, f64=0.1, dims=(3,)), ("Scene", "SceneParams", "RenderParams"))
    w = d.w
    its = items(d, "rays", (16, 32, 64, 128), ("num_rays", "ray_count"), guard=0.15)
    origins = d.array(("origins", "ray_origins", "ray_o"), "vec3", lo=-1.0, hi=1.0)
    dirs = d.array(("directions", "ray_dirs", "ray_d"), "vec3", lo=-1.0, hi=1.0)
    o = w.let(("o", "origin", "ro"), f"{origins}[tid]")
    w.comment("directions arrive unnormalised from the camera model") if rng.random() < 0.4 else None
    dvec = w.let(("d", "rd", "ray_dir"), f"wp.normalize({dirs}[tid])")
    d.gather_here()
    t_max = d.resolve(FAR)
    t_best = w.let(("t_best", "closest", "t_min"), t_max)
    shapes = rng.sample(["spheres", "ground", "box"], rng.choice((1, 1, 2, 3)))
    named = []
    best = None
    # which sphere was hit, for its normal or to report it: only in a scene of spheres alone, where every
    # hit has a sphere (a plane or box hit would get no id, no normal, and outputs that disagree)
    track = shapes == ["spheres"] and rng.random() < 0.7
    for shape in shapes:
        if shape == "spheres":
            n_spheres = rng.choice((1, 4, 8))
            centers = d.array(("sphere_centers", "centers"), "vec3", lo=-0.5, hi=0.5, shape=(n_spheres,))
            radii = d.array(("sphere_radii", "radii"), "scalar", lo=0.2, hi=1.0, shape=(n_spheres,))
            best = w.let(("best", "hit_id", "nearest"), "int(-1)") if track else None
            loop = w.fresh("s", "k")
            w.add(f"for {loop} in range({centers}.shape[0]):")
            w.depth += 1
            r = w.let(("r", "radius"), f"{radii}[{loop}]")
            t = d.use("ray_sphere", inline=True, o=o, d=dvec, center=f"{centers}[{loop}]", radius=r, t_max=t_best)["t"]
            if track:
                with w.block(f"if {t} < {t_best}"):
                    w.rebind(t_best, t)
                    w.rebind(best, loop)
            else:
                w.rebind(t_best, f"wp.min({t_best}, {t})")
            w.depth -= 1
            named.append("a list of spheres")
        else:
            t = d.use(f"ray_{shape}", inline=True, o=o, d=dvec, t_max=t_best)["t"]
            if t != t_best:
                w.rebind(t_best, t)
            named.append("a ground plane" if shape == "ground" else "an axis-aligned box")
    d.differentiable = False  # nearest-hit selection jumps between shapes
    depth = d.array(("depth", "hit_distance", "t_out"), "scalar", "out")
    w.add(f"{depth}[tid] = {t_best}")
    outputs = ["the nearest hit distance"]
    shaded = best is not None and rng.random() < 0.6
    if shaded:
        st = d.style
        with w.block(f"if {best} >= 0"):
            p = d.use("hit_point", inline=True, o=o, d=dvec, t=t_best)["p"]
            n = d.use("sphere_normal", inline=True, p=p, center=f"{centers}[{best}]", radius=f"{radii}[{best}]")["n"]
            what = rng.choice(("shade", "normal", "reflect"))
            if what == "shade":
                shade = d.use("lambert", n=n, light=d.resolve(LIGHT_DIR))["shade"]
                out = d.array(("shading", "image", "color"), "scalar", "out")
                w.add(f"{out}[tid] = {shade}")
                miss = st.lit(0.0)
                outputs.append(f"{says('lambert')} of the spheres hit")
            elif what == "normal":
                out = d.array(("normals", "hit_normals"), "vec3", "out")
                w.add(f"{out}[tid] = {n}")
                miss = st.zero("vec3")
                outputs.append("the normals of the spheres hit")
            else:
                r = d.use("reflect_direction", d=dvec, n=n)["d"]
                out = d.array(("reflected", "bounce_dirs"), "vec3", "out")
                w.add(f"{out}[tid] = {r}")
                miss = st.zero("vec3")
                outputs.append(f"{says('reflect_direction')} off the spheres")
        with w.block("else"):  # a ray that hit no sphere still gets its output written
            w.add(f"{out}[tid] = {miss}")
    if best is not None and (not shaded or rng.random() < 0.5):
        ids = d.array(("hit_ids", "hit_index", "sphere_id"), T.INT32, "out")
        w.add(f"{ids}[tid] = {best}")
        outputs.append("which sphere each ray hit (-1 for none)")
    purpose = f"Cast rays against {join(named)}, keeping {join(outputs)}"
    detail = "Misses keep the far distance."
    if shaded:
        detail += f" Rays that hit no sphere get a zero {'shade' if miss == d.style.lit(0.0) else 'vector'}."
    return d.finish(rng.choice(("cast_rays", "trace_primary")), [its.launch], purpose, detail)


# ---------------------------------------------------------------------------------------------
# meshes and emitters


@register("vertex_normals", 0.5, source=SOURCE)
def vertex_normals(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.15, dims=(3,)), ())
    w = d.w
    its = items(d, "triangles", (16, 32, 64), ("num_triangles", "num_faces"), guard=0.12)
    n_vertices = rng.choice((16, 32, 64))
    faces = d.array(("indices", "tri_indices"), T.INT32, lo=0, hi=n_vertices - 1, shape=(3 * its.n,))
    verts = [w.let(f"i{a}", f"{faces}[{corner(3, a)}]") for a in range(3)]
    x = d.array(("points", "vertices", "x"), "vec", shape=(n_vertices,))
    xs = [w.let(f"x{a}", f"{x}[{v}]") for a, v in enumerate(verts)]
    normals = d.array(("vertex_normals", "normals_accum"), "vec", rng.choice(("out", "inout")), shape=(n_vertices,))
    if rng.random() < 0.25:  # every face counts the same
        n = w.let(("n", "face_normal"), f"wp.normalize(wp.cross({xs[1]} - {xs[0]}, {xs[2]} - {xs[0]}))")
        for v in verts:
            w.add(f"wp.atomic_add({normals}, {v}, {n})")
        purpose = "Accumulate unit face normals of a triangle mesh onto its vertices (normalised afterwards)"
        return d.finish(rng.choice(("accumulate_normals", "compute_vertex_normals", "scatter_face_normals")),
                        [its.launch], purpose)
    if rng.random() < 0.5:
        a = d.use("triangle_vector_area", x0=xs[0], x1=xs[1], x2=xs[2])["a"]
        w.comment("the vector area is the normal already weighted by the face's area")
        for v in verts:
            w.add(f"wp.atomic_add({normals}, {v}, {a})")
        how = "area-weighted"
    else:  # the edges serve both the normal and the corner angles
        e1, e2 = w.let(("e1", "edge1"), f"{xs[1]} - {xs[0]}"), w.let(("e2", "edge2"), f"{xs[2]} - {xs[0]}")
        a = w.let(("cross", "c"), f"wp.cross({e1}, {e2})")
        n = d.use("triangle_normal", a=a)["n"]
        angles = d.use("corner_angles", e1=e1, e2=e2)
        w.comment("each corner adds the face normal weighted by its angle")
        for v, k in zip(verts, ("a0", "a1", "a2")):
            w.add(f"wp.atomic_add({normals}, {v}, {n} * {angles[k]})")
        how = "angle-weighted"
    purpose = f"Accumulate {how} face normals of a triangle mesh onto its vertices (normalised afterwards)"
    return d.finish(rng.choice(("accumulate_normals", "compute_vertex_normals", "scatter_face_normals")),
                    [its.launch], purpose)
