"""Pattern families of solids: small dense linear algebra, rigid bodies, FEM elements and cloth.

Per-thread 3x3 systems (assembled from outer products, solved with an inverse, by Jacobi
iteration or by an SVD polar decomposition), ELL sparse matrix-vector products, rigid-body
integration with transforms, quaternions and spatial vectors, points carried by bodies,
linear blend skinning, triangle and tetrahedron elements (deformation gradient, linear,
St. Venant-Kirchhoff and stable Neo-Hookean stress) and cloth triangles (aerodynamic drag,
area, normals, dihedral bending). Element index arrays stay within the vertex arrays.
What it leaves out: particles and grids (``patterns``, ``patterns_grid``).
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories import register
from jit.code.synthesis.categories.patterns import INDENT, VEC4I, Flavour, Pattern, flavour

VEC4F = T.VEC4F


def identity(fl: Flavour, n: int = 3) -> str:
    return f"wp.identity(n={n}, dtype={'wp.float64' if fl.f64 else 'float'})"


# ---------------------------------------------------------------------------------------------
# small dense linear algebra


@register("dense_linalg", 1.0, source="patterns")
def dense_linalg(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.3, dim2=0.0)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [launch_n(rng)]
    kind = rng.choice(("covariance", "covariance", "jacobi", "damped_ls", "ell_matvec"))
    if kind == "covariance":
        return _covariance(p)
    if kind == "jacobi":
        return _jacobi(p)
    if kind == "damped_ls":
        return _damped_least_squares(p)
    return _ell_matvec(p)


def launch_n(rng) -> int:
    return rng.choice((8, 16, 32, 64))


def _covariance(p: Pattern):
    """Assemble a 3x3 matrix from outer products over a fixed neighbourhood, then use it."""
    rng, fl = p.rng, p.fl
    n, k = p.kb.dims[0], rng.randint(3, 6)
    x = p.array(rng.choice(("positions", "points", "rest_positions")), fl.vec, lo=-1.0, hi=1.0)
    nbr = p.array(rng.choice(("neighbors", "neighbor_indices")), T.INT32, lo=0, hi=n - 1, shape=(n, k))
    p.add(f"c = {x}[tid]", f"A = {fl.m}()")
    if p.chance(0.5):
        wts = p.array(rng.choice(("weights", "neighbor_weights")), fl.scalar, lo=0.0, hi=1.0, shape=(n, k))
        term = f"wp.outer(d, d) * {wts}[tid, m]"
    else:
        term = "wp.outer(d, d)"
    p.add(f"for m in range({k}):", f"{INDENT}d = {x}[{nbr}[tid, m]] - c", f"{INDENT}A += {term}")
    reg = p.scalar(rng.choice(("regularization", "epsilon", "reg")), lo=0.01, hi=0.5)
    p.add(f"A += {identity(fl)} * {reg}")
    use = rng.choice(("solve", "solve", "polar", "eig", "det"))
    diff = use in ("solve", "det")
    if use == "solve":
        b = p.array(rng.choice(("rhs", "b", "targets")), fl.vec)
        out = p.array(rng.choice(("solution", "result")), fl.vec, "out")
        p.add(f"{out}[tid] = wp.inverse(A) * {b}[tid]")
    elif use == "polar":  # nearest rotation: A = U S V^T -> R = U V^T
        out = p.array(rng.choice(("rotations", "R_out")), fl.mat, "out")
        p.add(f"U = {fl.m}()", f"S = {fl.v}()", f"V = {fl.m}()", "wp.svd3(A, U, S, V)",
              f"{out}[tid] = U * wp.transpose(V)")
    elif use == "eig":
        out = p.array(rng.choice(("eigenvalues", "principal_values")), fl.vec, "out")
        p.add(f"Q = {fl.m}()", f"d = {fl.v}()", "wp.eig3(A, Q, d)", f"{out}[tid] = d")
    else:
        out = p.array(rng.choice(("determinants", "volume_ratio")), fl.scalar, "out")
        p.add(f"{out}[tid] = wp.determinant(A)")
    return p.finish(rng.choice(("assemble_covariance", "shape_matching", "compute_covariance")), p.kb.dims,
                    differentiable=diff)


def _jacobi(p: Pattern):
    """A fixed number of Jacobi sweeps on a diagonally dominant per-thread 3x3 system."""
    rng, fl = p.rng, p.fl
    mats = p.array(rng.choice(("matrices", "A", "blocks")), fl.mat, lo=-1.0, hi=1.0)
    b = p.array(rng.choice(("rhs", "b")), fl.vec)
    shift = p.scalar(rng.choice(("diagonal_shift", "mass_shift")), lo=4.0, hi=8.0)
    iters = rng.randint(2, 8)
    p.add(f"M = {mats}[tid] + {identity(fl)} * {shift}", f"r = {b}[tid]", f"x = {fl.v}()")
    rows = []
    for row in range(3):
        others = " - ".join(f"M[{row}, {c}] * x[{c}]" for c in range(3) if c != row)
        rows.append(f"(r[{row}] - {others}) / M[{row}, {row}]")
    p.add(f"for it in range({iters}):", f"{INDENT}x = {fl.v}({', '.join(rows)})")
    out = p.array(rng.choice(("x_out", "solution")), fl.vec, "out")
    if p.chance(0.4):
        res = p.array(rng.choice(("residual", "residual_norm")), fl.scalar, "out")
        p.add(f"{res}[tid] = wp.length(r - M * x)")
    p.add(f"{out}[tid] = x")
    return p.finish(rng.choice(("jacobi_solve", "block_jacobi", "solve_blocks")), p.kb.dims)


def _damped_least_squares(p: Pattern):
    """dq = J^T (J J^T + lambda I)^-1 e, as inverse kinematics does per effector."""
    rng, fl = p.rng, p.fl
    jac = p.array(rng.choice(("jacobians", "effector_jacobians")), fl.mat, lo=-1.0, hi=1.0)
    err = p.array(rng.choice(("errors", "targets_error", "residuals")), fl.vec)
    lam = p.scalar(rng.choice(("damping", "lambda_reg")), lo=0.1, hi=1.0)
    p.add(f"J = {jac}[tid]", f"JJt = J * wp.transpose(J) + {identity(fl)} * ({lam} * {lam})",
          f"dq = wp.transpose(J) * (wp.inverse(JJt) * {err}[tid])")
    if p.chance(0.4):
        step = p.scalar(rng.choice(("step_size", "alpha")), lo=0.1, hi=1.0)
        p.add(f"dq = dq * {step}")
    q = p.array(rng.choice(("joint_q", "q")), fl.vec, "inout")
    p.add(f"{q}[tid] = {q}[tid] + dq")
    return p.finish(rng.choice(("ik_step", "damped_least_squares", "solve_ik")), p.kb.dims)


def _ell_matvec(p: Pattern):
    """y = A x with A stored as ELL: a fixed number of (column, value) slots per row."""
    rng, fl = p.rng, p.fl
    n, k = p.kb.dims[0], rng.randint(2, 7)
    cols = p.array(rng.choice(("columns", "col_indices")), T.INT32, lo=0, hi=n - 1, shape=(n, k))
    vals = p.array(rng.choice(("values", "coefficients")), fl.scalar, shape=(n, k))
    x = p.array("x", fl.scalar)
    p.add(f"s = {fl.lit(0.0) if fl.f64 else 'float(0.0)'}", f"for m in range({cols}.shape[1]):",
          f"{INDENT}s += {vals}[tid, m] * {x}[{cols}[tid, m]]")
    y = p.array(rng.choice(("y", "Ax", "result")), fl.scalar, "out")
    if p.chance(0.4):  # residual r = b - A x, as an iterative solver needs
        b = p.array("b", fl.scalar)
        p.add(f"{y}[tid] = {b}[tid] - s")
    else:
        p.add(f"{y}[tid] = s")
    return p.finish(rng.choice(("spmv_ell", "ell_matvec", "apply_matrix")), p.kb.dims)


# ---------------------------------------------------------------------------------------------
# rigid bodies


@register("rigid_body", 1.0, source="patterns")
def rigid_body(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    p.kb.dims = [launch_n(rng)]
    kind = rng.choice(("integrate", "integrate", "points", "skinning", "relative"))
    return {"integrate": _integrate_bodies, "points": _body_points, "skinning": _skinning,
            "relative": _relative_transform}[kind](p)


def _integrate_bodies(p: Pattern):
    rng = p.rng
    spatial = rng.random() < 0.5
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, "inout" if spatial else "in")
    p.add(f"tf = {q}[tid]", "x = wp.transform_get_translation(tf)", "r = wp.transform_get_rotation(tf)")
    if spatial:
        qd = p.array(rng.choice(("body_qd", "body_velocities")), T.SPATIAL_VECTORF, "inout")
        p.add(f"w = wp.spatial_top({qd}[tid])", f"v = wp.spatial_bottom({qd}[tid])")
    else:
        lin = p.array(rng.choice(("linear_velocity", "body_v")), T.VEC3F, "inout")
        ang = p.array(rng.choice(("angular_velocity", "body_w")), T.VEC3F, "inout")
        p.add(f"v = {lin}[tid]", f"w = {ang}[tid]")
    dt = p.scalar("dt", lo=0.001, hi=0.02)
    if p.chance(0.7):
        f = p.array(rng.choice(("body_f", "forces")), T.VEC3F)
        inv_m = p.array(rng.choice(("inv_mass", "body_inv_mass")), T.FLOAT32, lo=0.0, hi=2.0)
        gravity = p.scalar("gravity", lo=-9.8, hi=-1.0)
        p.add(f"v = v + ({f}[tid] * {inv_m}[tid] + wp.vec3(0.0, {gravity}, 0.0)) * {dt}")
    if p.chance(0.6):  # torque through the world-space inverse inertia R I^-1 R^T
        tau = p.array(rng.choice(("torques", "body_tau")), T.VEC3F)
        inv_i = p.array(rng.choice(("inv_inertia", "body_inv_inertia")), T.MAT33F, lo=0.0, hi=1.0)
        p.add("R = wp.quat_to_matrix(r)", f"w = w + R * ({inv_i}[tid] * (wp.transpose(R) * {tau}[tid])) * {dt}")
    if p.chance(0.4):
        damp = p.scalar(rng.choice(("angular_damping", "damping")), lo=0.0, hi=0.5)
        p.add(f"w = w * (1.0 - {damp} * {dt})")
    p.add(f"x = x + v * {dt}", f"r = wp.normalize(r + wp.quat(w, 0.0) * r * (0.5 * {dt}))")
    if spatial:
        p.add(f"{q}[tid] = wp.transform(x, r)", f"{qd}[tid] = wp.spatial_vector(w, v)")
    else:
        out = p.array(rng.choice(("body_q_out", "body_q_next")), T.TRANSFORMF, "out")
        p.add(f"{out}[tid] = wp.transform(x, r)", f"{lin}[tid] = v", f"{ang}[tid] = w")
    return p.finish(rng.choice(("integrate_bodies", "integrate_rigid", "step_bodies")), p.kb.dims)


def _body_points(p: Pattern):
    """Points attached to bodies, moved to world space; optionally their velocities."""
    rng = p.rng
    n_bodies = rng.randint(1, 8)
    body = p.array(rng.choice(("shape_body", "point_body", "body_index")), T.INT32, lo=0, hi=n_bodies - 1)
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, shape=(n_bodies,))
    local = p.array(rng.choice(("local_points", "rest_points", "shape_points")), T.VEC3F)
    p.add(f"b = {body}[tid]", f"X = {q}[b]", f"p = wp.transform_point(X, {local}[tid])")
    out = p.array(rng.choice(("world_points", "points_out")), T.VEC3F, "out")
    p.add(f"{out}[tid] = p")
    if p.chance(0.5):
        qd = p.array(rng.choice(("body_qd", "body_velocities")), T.SPATIAL_VECTORF, shape=(n_bodies,))
        vel = p.array(rng.choice(("point_velocities", "velocities_out")), T.VEC3F, "out")
        p.add(f"w = wp.spatial_top({qd}[b])", f"v = wp.spatial_bottom({qd}[b])",
              f"{vel}[tid] = v + wp.cross(w, p - wp.transform_get_translation(X))")
    if p.chance(0.35):  # a ground contact test on the moved point
        depth = p.array(rng.choice(("penetration", "contact_depth")), T.FLOAT32, "out")
        p.add(f"{depth}[tid] = wp.max(-p[1], 0.0)")
    return p.finish(rng.choice(("transform_points", "update_shape_points", "body_points")), p.kb.dims)


def _skinning(p: Pattern):
    """Linear blend skinning: four bone transforms per vertex, blended by weight."""
    rng = p.rng
    n_bones = rng.randint(2, 12)
    rest = p.array(rng.choice(("rest_positions", "bind_pose")), T.VEC3F)
    idx = p.array(rng.choice(("bone_indices", "joint_ids")), VEC4I, lo=0, hi=n_bones - 1)
    wts = p.array(rng.choice(("bone_weights", "skin_weights")), VEC4F, lo=0.0, hi=1.0)
    bones = p.array(rng.choice(("bone_transforms", "joint_q")), T.TRANSFORMF, shape=(n_bones,))
    p.add(f"x = {rest}[tid]", f"ids = {idx}[tid]", f"ws = {wts}[tid]", "p = wp.vec3(0.0)")
    p.add("for b in range(4):", f"{INDENT}p += ws[b] * wp.transform_point({bones}[ids[b]], x)")
    if p.chance(0.4):  # weights need not sum to one: normalise
        p.add("total = ws[0] + ws[1] + ws[2] + ws[3]", "p = p / wp.max(total, 1.0e-6)")
    out = p.array(rng.choice(("skinned_positions", "deformed", "vertices_out")), T.VEC3F, "out")
    p.add(f"{out}[tid] = p")
    return p.finish(rng.choice(("skin_mesh", "linear_blend_skinning", "apply_skinning")), p.kb.dims)


def _relative_transform(p: Pattern):
    """The child frame relative to its parent, as joint code computes errors."""
    rng = p.rng
    n_bodies = rng.randint(2, 8)
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, shape=(n_bodies,))
    parent = p.array(rng.choice(("joint_parent", "parents")), T.INT32, lo=0, hi=n_bodies - 1)
    child = p.array(rng.choice(("joint_child", "children")), T.INT32, lo=0, hi=n_bodies - 1)
    p.add(f"X_wp = {q}[{parent}[tid]]", f"X_wc = {q}[{child}[tid]]",
          "X_pc = wp.transform_multiply(wp.transform_inverse(X_wp), X_wc)")
    err = p.array(rng.choice(("joint_error", "pos_error")), T.VEC3F, "out")
    p.add(f"{err}[tid] = wp.transform_get_translation(X_pc)")
    if p.chance(0.5):
        ang = p.array(rng.choice(("joint_angle", "twist")), T.FLOAT32, "out")
        p.add("axis = wp.vec3()", "angle = float(0.0)",
              "wp.quat_to_axis_angle(wp.transform_get_rotation(X_pc), axis, angle)", f"{ang}[tid] = angle")
    return p.finish(rng.choice(("joint_errors", "relative_transforms", "eval_joints")), p.kb.dims,
                    differentiable=False)


# ---------------------------------------------------------------------------------------------
# FEM elements


def element_indices(p: Pattern, corners: int, n_vertices: int) -> list[str]:
    rng, hi = p.rng, n_vertices - 1
    names = ["i", "j", "k", "l"][:corners]
    if rng.random() < 0.5:
        idx = p.array(rng.choice(("indices", "elements", "tet_indices" if corners == 4 else "tri_indices")),
                      T.INT32, lo=0, hi=hi, shape=(p.kb.dims[0], corners))
        p.add(*(f"{n} = {idx}[tid, {c}]" for c, n in enumerate(names)))
    else:
        t = VEC4I if corners == 4 else T.VEC3I
        idx = p.array(rng.choice(("elements", "tets" if corners == 4 else "triangles")), t, lo=0, hi=hi)
        p.add(f"e = {idx}[tid]", *(f"{n} = e[{c}]" for c, n in enumerate(names)))
    return names


def cofactor(dim: int, m: str) -> str:
    """d det(F) / dF, the cofactor matrix of F."""
    if dim == 2:
        return f"{m}(F[1, 1], -F[1, 0], -F[0, 1], F[0, 0])"
    cols = ["c1, c2", "c2, c0", "c0, c1"]
    return "wp.matrix_from_cols(" + ", ".join(f"wp.cross({c})" for c in cols) + ")"


@register("fem_elements", 1.0, source="patterns")
def fem_elements(rng, name, suffix, complexity):
    fl = Flavour(False, 2 if rng.random() < 0.45 else 3, rng.random() < 0.7)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [rng.choice((8, 16, 32))]
    dim, m, v = fl.dim, fl.m, fl.v
    n_vertices = rng.choice((8, 16, 32))
    corners = dim + 1
    names = element_indices(p, corners, n_vertices)
    x = p.array(rng.choice(("positions", "x", "particle_q")), fl.vec, lo=-1.0, hi=1.0, shape=(n_vertices,))
    p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)))
    edges = [f"x{c} - x0" for c in range(1, corners)]
    if rng.random() < 0.5:
        p.add(f"Ds = wp.matrix_from_cols({', '.join(edges)})")
    else:
        entries = ", ".join(f"x{c}[{r}] - x0[{r}]" for r in range(dim) for c in range(1, corners))
        p.add(f"Ds = {m}({entries})")
    dm_inv = p.array(rng.choice(("Dm_inv", "rest_inverse", "inv_rest")), fl.mat, lo=-1.0, hi=1.0)
    p.add(f"F = Ds * {dm_inv}[tid]")
    if rng.random() < 0.4:
        mat = p.struct("Material", [("mu", fl.scalar), ("lam", fl.scalar)], "material", 0.5, 5.0)
        mu, lam = f"{mat}.mu", f"{mat}.lam"
    else:
        mu = p.scalar(rng.choice(("k_mu", "mu")), lo=0.5, hi=5.0)
        lam = p.scalar(rng.choice(("k_lambda", "lam")), lo=0.5, hi=5.0)
    eye = identity(fl, dim)
    model = rng.choice(("linear", "stvk", "neo_hookean"))
    if model == "linear":
        p.add(f"eps = {fl.lit(0.5)} * (F + wp.transpose(F)) - {eye}", f"P = {fl.lit(2.0)} * {mu} * eps + {lam} * wp.trace(eps) * {eye}")
    elif model == "stvk":
        p.add(f"E = {fl.lit(0.5)} * (wp.transpose(F) * F - {eye})",
              f"P = F * ({fl.lit(2.0)} * {mu} * E + {lam} * wp.trace(E) * {eye})")
    else:  # stable Neo-Hookean (no log: fine under inversion)
        if dim == 3:
            p.add("c0 = wp.vec3(F[0, 0], F[1, 0], F[2, 0])", "c1 = wp.vec3(F[0, 1], F[1, 1], F[2, 1])",
                  "c2 = wp.vec3(F[0, 2], F[1, 2], F[2, 2])")
        p.add("J = wp.determinant(F)", f"alpha = 1.0 + {mu} / {lam}",
              f"P = {mu} * F + {lam} * (J - alpha) * {cofactor(dim, m)}")
    vol = p.array(rng.choice(("rest_volume", "element_volume", "areas" if dim == 2 else "volumes")),
                  fl.scalar, lo=0.01, hi=0.1)
    p.add(f"H = -{vol}[tid] * P * wp.transpose({dm_inv}[tid])")
    cols = [f"f{c}" for c in range(1, corners)]
    p.add(*(f"{c} = {v}({', '.join(f'H[{r}, {n}]' for r in range(dim))})" for n, c in enumerate(cols)))
    forces = p.array(rng.choice(("forces", "particle_f", "f_elastic")), fl.vec, rng.choice(("out", "inout")),
                     shape=(n_vertices,))
    p.add(f"wp.atomic_sub({forces}, {names[0]}, {' + '.join(cols)})",
          *(f"wp.atomic_add({forces}, {n}, {c})" for n, c in zip(names[1:], cols)))
    if model != "neo_hookean" and p.chance(0.3):
        energy = p.array(rng.choice(("energy", "element_energy")), fl.scalar, "out")
        strain = "eps" if model == "linear" else "E"
        p.add(f"{energy}[tid] = {vol}[tid] * ({mu} * wp.ddot({strain}, {strain}) + {fl.lit(0.5)} * {lam} * wp.trace({strain}) * wp.trace({strain}))")
    base = ("eval_triangles", "triangle_forces", "fem_tri") if dim == 2 else ("eval_tetrahedra", "tet_forces", "fem_tet")
    return p.finish(rng.choice(base), p.kb.dims)


# ---------------------------------------------------------------------------------------------
# cloth


@register("cloth", 1.0, source="patterns")
def cloth(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < 0.7))
    p.kb.dims = [rng.choice((8, 16, 32, 64))]
    n_vertices = rng.choice((8, 16, 32))
    kind = rng.choice(("aero", "area", "normals", "bending"))
    x = p.array(rng.choice(("positions", "x", "particle_q")), T.VEC3F, lo=-1.0, hi=1.0, shape=(n_vertices,))
    if kind == "bending":
        return _bending(p, x, n_vertices)
    names = element_indices(p, 3, n_vertices)
    p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)), "n = wp.cross(x1 - x0, x2 - x0)")
    if kind == "normals":  # area-weighted vertex normals, normalised by a later pass
        normals = p.array(rng.choice(("vertex_normals", "normals")), T.VEC3F, "out", shape=(n_vertices,))
        if p.chance(0.5):
            p.add("n = wp.normalize(n)")
        p.add(*(f"wp.atomic_add({normals}, {v}, n)" for v in names))
        return p.finish(rng.choice(("accumulate_normals", "compute_vertex_normals")), p.kb.dims)
    p.add("area = 0.5 * wp.length(n)", "if area < 1.0e-8:", f"{INDENT}return", "n = n / (2.0 * area)")
    forces = p.array(rng.choice(("forces", "particle_f")), T.VEC3F, rng.choice(("out", "inout")), shape=(n_vertices,))
    if kind == "aero":
        v = p.array(rng.choice(("velocities", "particle_qd")), T.VEC3F, shape=(n_vertices,))
        p.add(*(f"v{c} = {v}[{n}]" for c, n in enumerate(names)), "vmid = (v0 + v1 + v2) / 3.0")
        if p.chance(0.5):
            wind = p.array(rng.choice(("wind", "wind_velocity")), T.VEC3F, shape=(1,))
            p.add(f"vmid = vmid - {wind}[0]")
        drag = p.scalar(rng.choice(("k_drag", "drag")), lo=0.0, hi=1.0)
        p.add("vn = wp.dot(n, vmid)", f"f = n * (-{drag} * area * vn * wp.abs(vn))")
        if p.chance(0.5):
            lift = p.scalar(rng.choice(("k_lift", "lift")), lo=0.0, hi=1.0)
            p.add(f"f = f - (vmid - n * vn) * ({lift} * area * vn)")
        p.add("f = f / 3.0", *(f"wp.atomic_add({forces}, {n}, f)" for n in names))
        return p.finish(rng.choice(("eval_aero", "triangle_drag", "cloth_aerodynamics")), p.kb.dims)
    rest = p.array(rng.choice(("rest_area", "tri_area")), T.FLOAT32, lo=0.05, hi=0.5)
    k = p.scalar(rng.choice(("k_area", "area_stiffness")), lo=1.0, hi=50.0)
    p.add(f"c = area - {rest}[tid]",
          "g0 = wp.cross(n, x2 - x1) * 0.5", "g1 = wp.cross(n, x0 - x2) * 0.5", "g2 = wp.cross(n, x1 - x0) * 0.5",
          *(f"wp.atomic_add({forces}, {n}, g{c} * (-{k} * c))" for c, n in enumerate(names)))
    return p.finish(rng.choice(("area_forces", "preserve_area", "eval_area")), p.kb.dims)


def _bending(p: Pattern, x: str, n_vertices: int):
    """Dihedral bending across an edge shared by two triangles (Bridson et al. style forces)."""
    rng = p.rng
    names = element_indices_bend(p, n_vertices)
    p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)),
          "n1 = wp.cross(x2 - x0, x3 - x0)", "n2 = wp.cross(x3 - x1, x2 - x1)", "e = x3 - x2",
          "n1_sq = wp.length_sq(n1)", "n2_sq = wp.length_sq(n2)", "e_len = wp.length(e)",
          "if n1_sq < 1.0e-8 or n2_sq < 1.0e-8 or e_len < 1.0e-6:", f"{INDENT}return",
          "cos_theta = wp.dot(n1, n2) / wp.sqrt(n1_sq * n2_sq)",
          "sin_theta = wp.dot(wp.cross(n1, n2), e) / (wp.sqrt(n1_sq * n2_sq) * e_len)",
          "theta = wp.atan2(sin_theta, cos_theta)")
    ke = p.scalar(rng.choice(("k_bend", "bending_stiffness")), lo=0.0, hi=1.0)
    if rng.random() < 0.5:
        rest = p.array(rng.choice(("rest_angle", "bend_rest")), T.FLOAT32, lo=-0.5, hi=0.5)
        p.add(f"c = {ke} * (theta - {rest}[tid]) * e_len")
    else:
        p.add(f"c = {ke} * theta * e_len")
    p.add("d0 = n1 / n1_sq", "d1 = n2 / n2_sq")
    forces = p.array(rng.choice(("forces", "particle_f")), T.VEC3F, rng.choice(("out", "inout")), shape=(n_vertices,))
    p.add(f"wp.atomic_sub({forces}, {names[0]}, d0 * c)", f"wp.atomic_sub({forces}, {names[1]}, d1 * c)",
          f"wp.atomic_add({forces}, {names[2]}, (d0 + d1) * (0.5 * c))",
          f"wp.atomic_add({forces}, {names[3]}, (d0 + d1) * (0.5 * c))")
    return p.finish(rng.choice(("eval_bending", "bending_forces", "dihedral_bending")), p.kb.dims)


def element_indices_bend(p: Pattern, n_vertices: int) -> list[str]:
    names = ["i", "j", "k", "l"]
    if p.rng.random() < 0.5:
        idx = p.array(p.rng.choice(("bending_indices", "edge_indices")), T.INT32, lo=0, hi=n_vertices - 1,
                      shape=(p.kb.dims[0], 4))
        p.add(*(f"{n} = {idx}[tid, {c}]" for c, n in enumerate(names)))
    else:
        idx = p.array(p.rng.choice(("bending_edges", "hinges")), VEC4I, lo=0, hi=n_vertices - 1)
        p.add(f"e4 = {idx}[tid]", *(f"{n} = e4[{c}]" for c, n in enumerate(names)))
    return names

