"""Small dense linear algebra: outer products, 3x3 solves, polar decomposition, shape matching.

A solve is of a positive definite system (a mass matrix plus stiffness), which needs no guard; a
polar decomposition takes the rotation from an SVD, proper (determinant +1) as Warp's ``svd3``
keeps U and V proper. What it leaves out: stresses and strains (``elasticity``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import MASS, POINT3, STIFFNESS, TIME_STEP, VECTOR3

MAT = Role("matrix", "mat33")  # derived
ROTATION = Role("rotation matrix", "mat33")
SYSTEM = Role("system matrix", "mat33")
RHS = Role("right-hand side", "vec3")
SOLUTION = Role("solution", "vec3")
AXIS = Role("unit axis", "vec3")
COVARIANCE = Role("covariance", "mat33")
REST_OFFSET = Role("rest offset", "vec3", -0.5, 0.5, ("rest_offsets", "q0", "rest_positions"), per_item=1.0)
CLUSTER_CENTER = Role("cluster center", "vec3", -1.0, 1.0, ("center", "com", "cluster_center"))
GOAL_STIFFNESS = Role("shape-matching stiffness", "scalar", 0.1, 1.0, ("stiffness", "alpha", "shape_stiffness"))


@piece("outer_product", needs={"a": POINT3, "b": POINT3}, gives={"m": COVARIANCE},
       says="outer products", dims=(3,))
def outer_product(w: Writer, a, b):
    return {"m": w.let(("outer", "rr_t", "apq"), f"wp.outer({a}, {b})")}


@piece("implicit_spring_system", needs={"mass": MASS, "dt": TIME_STEP, "k": STIFFNESS, "n": AXIS},
       gives={"A": SYSTEM}, says="the system matrix of an implicit step with a spring along an axis", dims=(3,))
def implicit_spring_system(w: Writer, mass, dt, k, n):
    inertia = w.let(("m_dt2", "inertia"), f"{mass} / ({dt} * {dt})")
    eye = f"wp.identity(n=3, dtype={w.style.s})"
    return {"A": w.let(("A", "H", "lhs"), f"{eye} * {inertia} + wp.outer({n}, {n}) * {k}")}


@piece("solve_3x3", needs={"A": SYSTEM, "b": VECTOR3}, gives={"x": SOLUTION},
       says="a 3x3 solve of the symmetric positive definite system", dims=(3,))
def solve_3x3(w: Writer, A, b):
    """For the systems of ``implicit_spring_system``, positive definite by construction: a guard on the
    determinant could not fire, and an absolute threshold on it would depend on the matrix's scale."""
    w.add("# " + w.pick(f"{A} is symmetric positive definite (a positive mass): its inverse exists",
                        f"no singular case: {A} = M / dt^2 + k n n^T is positive definite for a positive mass"))
    return {"x": w.let(("x", "sol", "dx"), f"wp.inverse({A}) @ {b}")}


@piece("polar_rotation", needs={"F": COVARIANCE}, gives={"R": ROTATION},
       says="the rotation of a polar decomposition", dims=(3,))
def polar_rotation(w: Writer, F):
    mat, vec = w.style.type("mat33"), w.style.type("vec3")
    U, sigma, V = (w.let(n, f"{t}()") for n, t in (("U", mat), ("sigma", vec), ("V", mat)))
    w.add(f"wp.svd3({F}, {U}, {sigma}, {V})")
    # said whoever writes it, as a reader checks for the reflection case: svd3 keeps U and V proper
    w.add("# " + w.pick("wp.svd3 gives U and V with determinant +1 (a reflection's sign goes to the last "
                        "singular value), so U V^T is a rotation",
                        "U and V from wp.svd3 are proper rotations; a mirrored F shows as a negative last "
                        "singular value: no sign fix needed"))
    return {"R": w.let(("R", "rot"), f"{U} @ wp.transpose({V})")}


@piece("pull_to_goal", needs={"R": ROTATION, "q": REST_OFFSET, "c": CLUSTER_CENTER, "x": POINT3,
                              "stiffness": GOAL_STIFFNESS},
       gives={"x": POINT3}, says="a pull towards the shape-matching goal position", dims=(3,))
def pull_to_goal(w: Writer, R, q, c, x, stiffness):
    goal = w.let(("goal", "target"), f"{c} + {R} @ {q}")
    return {"x": w.let(("x_new", "x_matched"), f"{x} + ({goal} - {x}) * {stiffness}")}
