"""Pattern families of solids: small dense linear algebra and FEM elements.

Per-thread 3x3 systems (assembled from outer products, solved with an inverse, by Jacobi
iteration or by an SVD polar decomposition), inverse-kinematics steps, ELL sparse
matrix-vector products, and triangle and tetrahedron elements (deformation gradient, linear,
St. Venant-Kirchhoff and stable Neo-Hookean stress). Element index arrays stay within the
vertex arrays. What it leaves out: rigid bodies (``patterns_rigid``), cloth
(``patterns_cloth``), particles and grids (``patterns``, ``patterns_grid``).
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, VEC4I, Flavour, Pattern, flavour
from jit.code.synthesis.pieces.kit import PLAIN

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


def item_count(p: Pattern, name: str) -> int:
    """How many items (rows, blocks) the kernel's arrays hold: the launch size, or, when the launch is
    rounded up to whole blocks, fewer, with an early exit for the threads past the last item that
    compares with the count parameter ``name`` (a guard against the launch size could never fire)."""
    n = p.kb.dims[0]
    if p.chance(0.15):
        n -= p.rng.randint(1, n // 4)
        p.add(f"if tid >= {p.count(name, n)}:", f"{INDENT}return")
    return n


def _covariance(p: Pattern):
    """Assemble a 3x3 matrix from outer products over a fixed neighbourhood, then use it."""
    rng, fl = p.rng, p.fl
    n, k = p.kb.dims[0], rng.randint(3, 6)
    use = rng.choice(("solve", "solve", "polar", "eig", "det"))
    # the rotation of shape matching comes from the cross-covariance of current and rest offsets
    # (the polar factor of a symmetric covariance is the identity)
    polar = use == "polar"
    x = p.array(rng.choice(("positions", "points")) if polar else rng.choice(("positions", "points", "rest_positions")),
                fl.vec, lo=-1.0, hi=1.0)
    rest = p.array(rng.choice(("rest_positions", "x_rest")), fl.vec, lo=-1.0, hi=1.0) if polar else None
    padded = p.coin(0.35)  # unused neighbour slots hold -1
    nbr = p.array(rng.choice(("neighbors", "neighbor_indices")), T.INT32, lo=-1 if padded else 0, hi=n - 1,
                  shape=(n, k))
    p.guard("tid", x, ("num_points", n))
    p.add(f"c = {x}[tid]", f"c0 = {rest}[tid]" if polar else None,
          f"A = {fl.m}()")
    outer = "wp.outer(d, d0)" if polar else "wp.outer(d, d)"
    if p.chance(0.5):
        wts = p.array(rng.choice(("weights", "neighbor_weights")), fl.scalar, lo=0.0, hi=1.0, shape=(n, k))
        term = f"{outer} * {wts}[tid, m]"
    else:
        term = outer
    count = f"{nbr}.shape[1]"  # the neighbour count from the data, not a literal that must match it
    p.add(f"for m in range({count}):")
    if padded:
        p.add(f"j = {nbr}[tid, m]", "if j < 0:", f"{INDENT}continue", f"d = {x}[j] - c",
              f"d0 = {rest}[j] - c0" if polar else None, indent=1)
    elif polar:
        p.add(f"j = {nbr}[tid, m]", f"d = {x}[j] - c", f"d0 = {rest}[j] - c0", indent=1)
    else:
        p.add(f"d = {x}[{nbr}[tid, m]] - c", indent=1)
    p.add(f"A += {term}", indent=1)
    weighted = "weighted " if f"{outer} *" in term else ""
    if polar:
        gathered = f"the {weighted}cross-covariance of each point's neighbour offsets, now and at rest"
    else:
        # a regulariser large enough that the solve is well conditioned (gradients checked by differences)
        reg = p.scalar(rng.choice(("regularization", "epsilon", "reg")), lo=0.5, hi=1.0)
        # added to the diagonal entries, not as a scaled identity matrix built in every thread
        p.add(*(f"A[{d}, {d}] += {reg}" for d in range(3)))
        gathered = f"the {weighted}second-moment matrix of each point's neighbour offsets, regularised"
    # Warp's adjoint of a matrix carried through a dynamic loop disagrees with finite differences
    diff = use in ("solve", "det") and count == str(k)
    if use == "solve":
        b = p.array(rng.choice(("rhs", "b", "targets")), fl.vec)
        out = p.array(rng.choice(("solution", "result")), fl.vec, "out")
        p.add(*p.pick([f"{out}[tid] = wp.inverse(A) @ {b}[tid]"],
                      ["A_inv = wp.inverse(A)", f"{out}[tid] = A_inv @ {b}[tid]"],
                      ["x = wp.inverse(A) @ " + f"{b}[tid]", f"{out}[tid] = x"]))
        if p.lines[-1].endswith("= x") and p.chance(0.5):  # the residual of the solve, as a check
            res = p.array(rng.choice(("residual", "solve_error")), fl.scalar, "out")
            p.add(f"{res}[tid] = {p.length(f'A @ x - {b}[tid]')}")
            p.note("writes the residual of the solve")
        purpose = f"Assemble {gathered}, and solve a 3x3 system with it per point"
    elif use == "polar":  # nearest rotation: A = U S V^T -> R = U V^T
        out = p.array(rng.choice(("rotations", "R_out")), fl.mat, "out")
        p.add(f"U = {fl.m}()", f"S = {fl.v}()", f"V = {fl.m}()", "wp.svd3(A, U, S, V)")
        # wp.svd3 returns U and V with determinant +1 and carries a reflection in the sign of S[2]
        # (Warp's documented convention), so U V^T is a proper rotation without a sign correction
        p.why(("svd3's U and V are rotations (det +1): a reflection shows as a negative S[2], not in U V^T",
               "U and V from wp.svd3 have determinant +1, so U V^T is never a reflection"))
        p.add(f"{out}[tid] = U @ wp.transpose(V)")
        if p.chance(0.3):
            sv = p.array(rng.choice(("singular_values", "stretches")), fl.vec, "out")
            p.add(f"{sv}[tid] = S")
            p.note("writes the singular values, the last one negative where the neighbours are mirrored")
        purpose = f"Assemble {gathered}, and take the nearest rotation by SVD polar decomposition"
        if p.terse:  # no comment at the line: the docstring says why no sign correction follows
            purpose += "; the U and V of wp.svd3 are rotations, so U V^T is never a reflection"
    elif use == "eig":
        out = p.array(rng.choice(("eigenvalues", "principal_values")), fl.vec, "out")
        p.add(f"Q = {fl.m}()", f"evals = {fl.v}()", "wp.eig3(A, Q, evals)", f"{out}[tid] = evals")
        purpose = f"Assemble {gathered}, and write its eigenvalues"
        if p.chance(0.35):  # the eigenvector of the smallest eigenvalue: a surface normal estimate
            normals = p.array(rng.choice(("normals", "surface_normal")), fl.vec, "out")
            p.why("eig3 does not sort its eigenvalues: find the smallest")
            p.add("k = int(0)", "if evals[1] < evals[k]:", f"{INDENT}k = 1",
                  "if evals[2] < evals[k]:", f"{INDENT}k = 2",
                  f"{normals}[tid] = {fl.v}(Q[0, k], Q[1, k], Q[2, k])")
            purpose += ", and the eigenvector of the smallest one as a surface normal"
    else:
        out = p.array(rng.choice(("determinants", "spread")), fl.scalar, "out")
        p.add(f"{out}[tid] = wp.determinant(A)")
        purpose = f"Assemble {gathered}, and write its determinant (how widely the neighbours spread)"
    if padded:
        p.note("skips neighbour slots holding -1")
    names = {"solve": ("solve_moment_systems", "neighbor_moment_solve"),
             "polar": ("shape_matching", "neighbor_rotations"),
             "eig": ("moment_eigenvalues", "principal_moments"),  # eigenvalues only: no axes are written
             }.get(use, ("moment_determinant", "neighbor_spread"))
    return p.finish(rng.choice(names), p.kb.dims, purpose=purpose, differentiable=diff)


def _jacobi(p: Pattern):
    """A fixed number of Jacobi (or Gauss-Seidel) sweeps on a diagonally dominant per-thread 3x3 system."""
    rng, fl = p.rng, p.fl
    n = item_count(p, "num_blocks")
    mats = p.array(rng.choice(("matrices", "A", "blocks")), fl.mat, lo=-1.0, hi=1.0, shape=(n,))
    b = p.array(rng.choice(("rhs", "b")), fl.vec, shape=(n,))
    shift = p.scalar(rng.choice(("diagonal_shift", "mass_shift")), lo=4.0, hi=8.0)
    iters = str(rng.randint(2, 8)) if p.coin(0.6) else p.scalar(rng.choice(("iterations", "num_iters")), T.INT32, lo=2, hi=8)
    p.add(p.pick(f"M = {mats}[tid] + {identity(fl)} * {shift}",
                 f"M = {mats}[tid] + wp.diag({fl.v}({shift}, {shift}, {shift}))"), f"f = {b}[tid]")
    if p.coin(0.3):
        x0 = p.array(rng.choice(("x_init", "guess")), fl.vec, shape=(n,))
        p.add(f"x = {x0}[tid]")
    else:
        p.add(f"x = {fl.v}()")
    rows = []
    for row in range(3):
        others = " - ".join(f"M[{row}, {c}] * x[{c}]" for c in range(3) if c != row)
        rows.append(f"(f[{row}] - {others}) / M[{row}, {row}]")
    style = p.pick("jacobi", "seidel", "residual")
    if style == "jacobi" and p.chance(0.4):  # weighted Jacobi: relax towards the sweep's result
        omega = p.scalar(rng.choice(("omega", "relaxation")), lo=0.5, hi=1.0)
        p.add(f"for _ in range({iters}):", f"{INDENT}x_new = {fl.v}({', '.join(rows)})",
              f"{INDENT}x = x + {omega} * (x_new - x)")
        p.note(f"relaxes each sweep by {omega}")
    elif style == "jacobi":
        p.add(f"for _ in range({iters}):", f"{INDENT}x = {fl.v}({', '.join(rows)})")
    elif style == "seidel":  # Gauss-Seidel: each row uses the rows already updated
        p.add(f"for _ in range({iters}):")
        p.add(*SEIDEL_ROWS, f"x = {fl.v}(x0, x1, x2)", indent=1)
    else:  # x += D^-1 (b - M x), with the diagonal as preconditioner
        p.add(f"d = {fl.v}(M[0, 0], M[1, 1], M[2, 2])", f"for _ in range({iters}):",
              f"{INDENT}res = f - M @ x", f"{INDENT}x = x + wp.cw_div(res, d)")
    out = p.array(rng.choice(("x_out", "solution")), fl.vec, "out", shape=(n,))
    if p.chance(0.4):
        res = p.array(rng.choice(("residual", "residual_norm")), fl.scalar, "out", shape=(n,))
        p.add(f"{res}[tid] = {p.length('f - M @ x')}")
        p.note("writes the residual norm")
    p.add(f"{out}[tid] = x")
    method = {"jacobi": "Jacobi", "seidel": "Gauss-Seidel", "residual": "diagonally preconditioned Richardson"}[style]
    names = {"jacobi": ("jacobi_solve", "block_jacobi", "solve_blocks"),
             "seidel": ("gauss_seidel_solve", "seidel_sweeps", "solve_blocks"),
             "residual": ("richardson_solve", "preconditioned_sweeps", "solve_blocks")}[style]
    return p.finish(rng.choice(names), p.kb.dims,
                    purpose=f"Solve a diagonally shifted 3x3 system per thread with a fixed number of {method} sweeps",
                    differentiable=iters.isdigit())  # no gradient check through a dynamic loop


SEIDEL_ROWS = ("x0 = (f[0] - M[0, 1] * x[1] - M[0, 2] * x[2]) / M[0, 0]",
               "x1 = (f[1] - M[1, 0] * x0 - M[1, 2] * x[2]) / M[1, 1]",
               "x2 = (f[2] - M[2, 0] * x0 - M[2, 1] * x1) / M[2, 2]")


def _damped_least_squares(p: Pattern):
    """dq = J^T (J J^T + lambda I)^-1 e, as inverse kinematics does per effector."""
    rng, fl = p.rng, p.fl
    jac = p.array(rng.choice(("jacobians", "effector_jacobians")), fl.mat, lo=-1.0, hi=1.0)
    from_targets = p.coin(0.4)  # the error from where each effector is and where it should be
    if from_targets:
        targets = p.array(rng.choice(("targets", "target_positions")), fl.vec)
        where = p.array(rng.choice(("effector_positions", "effector_x")), fl.vec)
    else:
        err = p.array(rng.choice(("errors", "effector_errors", "residuals")), fl.vec)
    lam = p.scalar(rng.choice(("damping", "lambda_reg")), lo=0.1, hi=1.0)
    p.guard("tid", jac, ("num_effectors", p.kb.dims[0]))
    p.add(f"J = {jac}[tid]")
    if from_targets:
        p.add(f"e = {targets}[tid] - {where}[tid]")
        err_at = "e"
    else:
        err_at = f"{err}[tid]"
    transpose = p.coin(0.25)
    if transpose:  # the Jacobian-transpose method: no solve, a gradient step
        if not from_targets:
            p.add(f"e = {err_at}")
        p.add("dq = wp.transpose(J) @ e")
        if p.coin():  # the step length that minimises |e - J dq| along dq
            p.add("Jdq = J @ dq", f"dq = dq * (wp.dot(e, Jdq) / wp.max(wp.dot(Jdq, Jdq), {fl.lit(1.0e-8)}))")
            p.note("scales the step to minimise the remaining error")
    elif p.coin():
        p.add("Jt = wp.transpose(J)", f"JJt = J @ Jt + {identity(fl)} * ({lam} * {lam})",
              f"dq = Jt @ (wp.inverse(JJt) @ {err_at})")
    else:
        p.add(f"JJt = J @ wp.transpose(J) + {identity(fl)} * ({lam} * {lam})",
              f"dq = wp.transpose(J) @ (wp.inverse(JJt) @ {err_at})")
    if p.chance(0.4):
        step = p.scalar(rng.choice(("step_size", "alpha")), lo=0.1, hi=1.0)
        p.add(f"dq = dq * {step}")
    if p.chance(0.3):  # limit the step length
        max_step = p.scalar(rng.choice(("max_step", "step_limit")), lo=0.1, hi=1.0)
        p.add(f"n = {p.length('dq')}", f"if n > {max_step}:", f"{INDENT}dq = dq * ({max_step} / n)")
        p.note(f"limits the step length to {max_step}")
    in_place = p.coin(0.6)
    q = p.array(rng.choice(("joint_q", "q")), fl.vec, "inout" if in_place else "in")
    q_new = f"{q}[tid] + dq"
    if p.chance(0.3):  # joint limits, the same for every coordinate
        lower = p.scalar(rng.choice(("q_min", "joint_lower")), lo=-3.0, hi=-1.0)
        upper = p.scalar({"q_min": "q_max", "joint_lower": "joint_upper"}[lower], lo=1.0, hi=3.0)
        q_new = f"wp.min(wp.max({q_new}, {fl.v}({lower})), {fl.v}({upper}))"
        p.note(f"keeps the joint coordinates within [{lower}, {upper}]")
    if in_place:
        p.add(f"{q}[tid] = {q_new}")
    else:
        q_out = p.array(rng.choice(("joint_q_out", "q_next")), fl.vec, "out")
        p.add(f"{q_out}[tid] = {q_new}")
    method = "the Jacobian transpose" if transpose else "damped least squares, J^T (J J^T + lambda^2 I)^-1 e"
    return p.finish(rng.choice(("ik_step", "damped_least_squares", "solve_ik")), p.kb.dims,
                    purpose=f"Take one inverse-kinematics step per effector by {method}")


def _ell_matvec(p: Pattern):
    """y = A x with A stored as ELL: a fixed number of (column, value) slots per row."""
    rng, fl = p.rng, p.fl
    n, k = item_count(p, "num_rows"), rng.randint(2, 7)
    padded = p.coin(0.4)  # unused slots hold column -1
    flat = p.coin(0.4)  # slots stored row after row in 1-D arrays, with the slot count passed in
    shape = (n * k,) if flat else (n, k)
    cols = p.array(rng.choice(("columns", "col_indices")), T.INT32, lo=-1 if padded else 0, hi=n - 1, shape=shape)
    vals = p.array(rng.choice(("values", "coefficients")), fl.scalar, shape=shape)
    x = p.array("x", fl.scalar, shape=(n,))
    zero = fl.lit(0.0) if fl.f64 else "float(0.0)"
    if flat:
        slots = p.count(rng.choice(("slots_per_row", "row_width")), k)
        p.add(f"s = {zero}", f"row_start = tid * {slots}", f"for m in range({slots}):", f"{INDENT}slot = row_start + m")
        at = "slot"
    else:
        slots = f"{cols}.shape[1]"  # the slot count from the data
        p.add(f"s = {zero}", f"for m in range({slots}):")
        at = "tid, m"
    if padded:
        p.note("skips slots whose column is -1")
        if p.coin():
            p.add(f"c = {cols}[{at}]", "if c < 0:", f"{INDENT}continue", f"s += {vals}[{at}] * {x}[c]", indent=1)
        else:
            p.add(f"c = {cols}[{at}]", "if c >= 0:", f"{INDENT}s += {vals}[{at}] * {x}[c]", indent=1)
    else:
        p.add(f"s += {vals}[{at}] * {x}[{cols}[{at}]]", indent=1)
    kind = p.pick("plain", "residual", "jacobi")
    y = p.array(rng.choice({"plain": ("y", "Ax", "result"), "residual": ("r", "residual"),
                            "jacobi": ("x_new", "x_next")}[kind]), fl.scalar, "out", shape=(n,))
    if kind == "residual":  # residual r = b - A x, as an iterative solver needs
        b = p.array("b", fl.scalar, shape=(n,))
        p.add(f"res = {b}[tid] - s", f"{y}[tid] = res")
        purpose = "Compute the residual b - A x of a sparse matrix stored in ELL format, one row per thread"
        if p.chance(0.4):
            norm = p.array(rng.choice(("residual_sq", "norm_sq")), fl.scalar, "out", shape=(1,))
            p.add(f"wp.atomic_add({norm}, 0, res * res)")
            p.note("sums its squared norm")
    elif kind == "jacobi":  # one Jacobi step: the ELL part holds the off-diagonal entries, the diagonal apart
        b = p.array("b", fl.scalar, shape=(n,))
        diag = p.array(rng.choice(("diag", "diagonal")), fl.scalar, lo=2.0, hi=4.0, shape=(n,))
        purpose = ("Take one Jacobi step, dividing b - R x by the diagonal D, with the off-diagonal part R "
                   "stored in ELL format and D apart")
        if p.coin():  # a row with a zero pivot is left as it is, as solvers skip it
            p.add(f"d = {diag}[tid]", f"if d != {fl.lit(0.0)}:", f"{INDENT}{y}[tid] = ({b}[tid] - s) / d",
                  "else:", f"{INDENT}{y}[tid] = {x}[tid]")
            p.why("a row with a zero diagonal entry has no Jacobi update: it keeps its value", f"d = {diag}[tid]")
            p.note("leaves a row with a zero diagonal entry unchanged")
        else:  # the caller's contract: a diagonally dominant matrix, whose diagonal has no zero
            # a contract the caller must keep, so said whatever the author's habit with comments
            p.add("# " + p.pick("the matrix is diagonally dominant, as Jacobi's method needs: no diagonal entry is zero",
                                "D has no zero entry: the caller passes a diagonally dominant matrix"),
                  f"{y}[tid] = ({b}[tid] - s) / {diag}[tid]")
            purpose += "; the matrix must be diagonally dominant, so that D has no zero entry"
    else:
        p.add(f"{y}[tid] = s")
        purpose = "Multiply a sparse matrix stored in ELL format by a vector, one row per thread"
    base = {"plain": ("spmv_ell", "ell_matvec", "apply_matrix"), "residual": ("ell_residual", "compute_residual"),
            "jacobi": ("ell_jacobi_step", "jacobi_sweep")}[kind]
    # Warp's adjoint of a sum carried through a dynamic loop disagrees with finite differences
    return p.finish(rng.choice(base), p.kb.dims, purpose=purpose, differentiable=slots.isdigit())


# ---------------------------------------------------------------------------------------------
# FEM elements


def element_indices(p: Pattern, corners: int, n_vertices: int) -> list[str]:
    rng, hi = p.rng, n_vertices - 1
    names = ["i", "j", "k", "l"][:corners]
    layout = rng.random()
    if layout < 0.25:  # one flat index array, as Warp's own cloth and FEM examples store it
        idx = p.array(rng.choice(("indices", "tri_indices" if corners == 3 else "tet_indices")), T.INT32, lo=0, hi=hi,
                      shape=(p.kb.dims[0] * corners,))
        p.add(*(f"{n} = {idx}[tid * {corners} + {c}]" for c, n in enumerate(names)))
    elif layout < 0.6:
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
    fl = Flavour(False, 2 if rng.random() < 0.45 else 3, rng.random() < PLAIN)
    p = Pattern(rng, name, suffix, complexity, fl)
    n = rng.choice((8, 16, 32))
    p.kb.dims = [n]
    dim, m, v = fl.dim, fl.m, fl.v
    n_vertices = rng.choice((8, 16, 32))
    corners = dim + 1
    p.guard("tid", None, (rng.choice(("num_elements", "element_count")), n), p=0.12)
    names = element_indices(p, corners, n_vertices)
    x = p.array(rng.choice(("positions", "x", "particle_q")), fl.vec, lo=-1.0, hi=1.0, shape=(n_vertices,))
    p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)))
    edges = [f"x{c} - x0" for c in range(1, corners)]
    # the edge matrix by its columns (entry by entry it reads as an unrolled loop beside wp.matrix_from_cols)
    if p.coin():
        p.add(f"Ds = wp.matrix_from_cols({', '.join(edges)})")
    else:
        p.add(*(f"e{c} = {e}" for c, e in enumerate(edges, 1)),
              f"Ds = wp.matrix_from_cols({', '.join(f'e{c}' for c in range(1, corners))})")
    dm_inv = p.array(rng.choice(("Dm_inv", "rest_inverse", "inv_rest")), fl.mat, lo=-1.0, hi=1.0)
    # read once: the force needs it again
    dm = "Dm_inv" if dm_inv != "Dm_inv" else "inv_Dm"
    p.add(f"{dm} = {dm_inv}[tid]", f"F = Ds @ {dm}")
    mat = rng.choice(("struct", "params", "arrays"))
    if mat == "struct":
        st = p.struct("Material", [("mu", fl.scalar), ("lam", fl.scalar)], "material", 0.5, 5.0)
        mu, lam = f"{st}.mu", f"{st}.lam"
    elif mat == "arrays":  # per-element material
        # the two Lame parameters named as a pair
        prefix = rng.choice(("element", "tri" if dim == 2 else "tet", "material"))
        mus = p.array(f"{prefix}_mu", fl.scalar, lo=0.5, hi=5.0)
        lams = p.array(f"{prefix}_lambda", fl.scalar, lo=0.5, hi=5.0)
        p.add(f"mu = {mus}[tid]", f"lam = {lams}[tid]")
        mu, lam = "mu", "lam"
    else:
        mu, lam = rng.choice((("k_mu", "k_lambda"), ("mu", "lam")))
        mu = p.scalar(mu, lo=0.5, hi=5.0)
        lam = p.scalar(lam, lo=0.5, hi=5.0)
    model = rng.choice(("linear", "stvk", "neo_hookean"))
    eye = "I"  # read twice by the strain and the stress: built once
    if model != "neo_hookean":
        p.add(f"I = {identity(fl, dim)}")
    if mat == "arrays":
        p.note("reads the Lame parameters per element")
    if model == "linear":
        p.add(f"eps = {fl.lit(0.5)} * (F + wp.transpose(F)) - {eye}", "tr = wp.trace(eps)",
              p.pick(f"P = {fl.lit(2.0)} * {mu} * eps + {lam} * tr * {eye}",
                     f"P = eps * ({fl.lit(2.0)} * {mu}) + {eye} * ({lam} * tr)"))
    elif model == "stvk":
        p.add(f"E = {fl.lit(0.5)} * (wp.transpose(F) @ F - {eye})", "tr = wp.trace(E)",
              p.pick(f"P = F @ ({fl.lit(2.0)} * {mu} * E + {lam} * tr * {eye})",
                     f"S = {fl.lit(2.0)} * {mu} * E + {lam} * tr * {eye}\nP = F @ S"))
    else:  # stable Neo-Hookean (no log: fine under inversion)
        if dim == 3:
            p.add("c0 = wp.vec3(F[0, 0], F[1, 0], F[2, 0])", "c1 = wp.vec3(F[0, 1], F[1, 1], F[2, 1])",
                  "c2 = wp.vec3(F[0, 2], F[1, 2], F[2, 2])")
        # lam (J - alpha) with the rest-stable shift alpha = 1 + mu / lam, multiplied out: no division,
        # and nothing the same for every element computed per element
        p.add("J = wp.determinant(F)", f"P = {mu} * F + ({lam} * (J - {fl.lit(1.0)}) - {mu}) * {cofactor(dim, m)}")
    if p.chance(0.3):  # Rayleigh damping on the rate of deformation
        vel = p.array({"positions": "velocities", "x": "v", "particle_q": "particle_qd"}[x], fl.vec, lo=-1.0, hi=1.0,
                      shape=(n_vertices,))
        kd = p.scalar(rng.choice(("k_damp", "damping")), lo=0.0, hi=0.1)
        vcols = ", ".join(f"{vel}[{names[c]}] - v0" for c in range(1, corners))
        p.add(f"v0 = {vel}[{names[0]}]", f"dFdt = wp.matrix_from_cols({vcols}) @ {dm}", f"P = P + dFdt * {kd}")
        p.note("adds damping on the rate of deformation")
    vol = p.array(rng.choice(("rest_area", "element_area", "areas") if dim == 2 else
                             ("rest_volume", "element_volume", "volumes")),
                  fl.scalar, lo=0.01, hi=0.1)
    energy = model != "neo_hookean" and p.chance(0.3)
    volume = p.let("volume", f"{vol}[tid]", inline=0.0) if energy else f"{vol}[tid]"  # read twice: once
    p.add(f"H = -{volume} * P @ wp.transpose({dm})")
    cols = [f"f{c}" for c in range(1, corners)]
    if p.coin(0.35):  # rows of H^T are the columns of H
        p.add("Ht = wp.transpose(H)", *(f"{c} = Ht[{k}]" for k, c in enumerate(cols)))
    else:
        p.add(*(f"{c} = {v}({', '.join(f'H[{r}, {k}]' for r in range(dim))})" for k, c in enumerate(cols)))
    forces = p.array(rng.choice(("forces", "particle_f", "f_elastic")), fl.vec, rng.choice(("out", "inout")),
                     shape=(n_vertices,))
    first = p.pick(f"wp.atomic_sub({forces}, {names[0]}, {' + '.join(cols)})",
                   f"wp.atomic_add({forces}, {names[0]}, -({' + '.join(cols)}))")
    p.add(first, *(f"wp.atomic_add({forces}, {k}, {c})" for k, c in zip(names[1:], cols)))
    if energy:
        out = p.array(rng.choice(("energy", "element_energy")), fl.scalar, "out")
        strain = "eps" if model == "linear" else "E"
        p.add(f"{out}[tid] = {volume} * ({mu} * wp.ddot({strain}, {strain}) + {fl.lit(0.5)} * {lam} * tr * tr)")
        p.note("writes each element's strain energy")
    elif p.chance(0.25):  # inverted elements, for diagnostics
        inverted = p.array(rng.choice(("inverted", "flipped")), T.INT32, "out")
        det = "J" if model == "neo_hookean" else "wp.determinant(F)"
        p.add(f"{inverted}[tid] = wp.where({det} < 0.0, 1, 0)")
        p.note("flags inverted elements")
    base = ("eval_triangles", "triangle_forces", "fem_tri") if dim == 2 else ("eval_tetrahedra", "tet_forces", "fem_tet")
    law = {"linear": "linear (small-strain)", "stvk": "St. Venant-Kirchhoff",
           "neo_hookean": "stable Neo-Hookean"}[model]
    element = "2-D triangle" if dim == 2 else "tetrahedron"
    return p.finish(rng.choice(base), p.kb.dims,
                    purpose=f"Accumulate the elastic forces of each {element} element from its deformation gradient "
                            f"with a {law} material")
