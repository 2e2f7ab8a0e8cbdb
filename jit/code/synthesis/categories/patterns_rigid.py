"""Pattern family of rigid bodies: integration with transforms, quaternions and spatial vectors,
points carried by bodies, linear blend skinning and joint frames relative to their parents.

Bodies with zero inverse mass are static (gravity leaves them where they are); body and bone
index arrays stay within the transform arrays, and an index of -1 stands for the world where a
variant says so. See ``patterns`` for how a pattern family is written. What it leaves out:
contacts and joint solvers, and articulated forward kinematics.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, VEC4I, Flavour, Pattern
from jit.code.synthesis.pieces.kit import PLAIN
from jit.code.synthesis.categories.patterns_solid import VEC4F, launch_n


@register("rigid_body", 1.0, source="patterns")
def rigid_body(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < PLAIN))
    p.kb.dims = [launch_n(rng)]
    kind = rng.choice(("integrate", "integrate", "points", "skinning", "relative"))
    return {"integrate": _integrate_bodies, "points": _body_points, "skinning": _skinning,
            "relative": _relative_transform}[kind](p)


def _integrate_bodies(p: Pattern):
    """Semi-implicit Euler for rigid bodies: forces, torques through the world inertia, quaternion update."""
    rng = p.rng
    n = p.kb.dims[0]
    spatial = rng.random() < 0.5
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, "inout" if spatial else "in")
    p.guard("tid", q, ("body_count", n), p=0.15)
    p.add(f"tf = {q}[tid]", "x = wp.transform_get_translation(tf)", "r = wp.transform_get_rotation(tf)")
    if spatial:
        qd = p.array(rng.choice(("body_qd", "body_velocities")), T.SPATIAL_VECTORF, "inout")
        p.add(*p.pick([f"w = wp.spatial_top({qd}[tid])", f"v = wp.spatial_bottom({qd}[tid])"],
                      [f"qd = {qd}[tid]", "w = wp.spatial_top(qd)", "v = wp.spatial_bottom(qd)"]))
    else:
        lin, ang = rng.choice((("linear_velocity", "angular_velocity"), ("body_v", "body_w")))
        lin, ang = p.array(lin, T.VEC3F), p.array(ang, T.VEC3F)
        p.add(f"v = {lin}[tid]", f"w = {ang}[tid]")
    short = q == "body_q" if spatial else lin == "body_v"  # body_q, body_f, ... or spelled-out names
    if p.coin(0.3):  # the step's settings in one struct
        params = p.struct("StepParams", [("dt", T.FLOAT32), ("gravity", T.VEC3F)], "params", 0.001, 0.02)
        dt, g_vec = f"{params}.dt", f"{params}.gravity"
    else:
        dt, g_vec = p.scalar("dt", lo=0.001, hi=0.02), None
    forced = p.chance(0.7)
    energy = p.chance(0.25)  # the translational kinetic energy of each body
    if forced:
        f = p.array("body_f" if short else "forces", T.VEC3F)
        inv_m = p.array("body_inv_mass" if short else "inv_mass", T.FLOAT32, lo=0.0, hi=2.0)
        g_vec = g_vec or f"wp.vec3(0.0, {p.scalar('gravity', lo=-9.8, hi=-1.0)}, 0.0)"
        p.add(f"inv_m = {inv_m}[tid]")
        # as Warp's integrator does: gravity accelerates only bodies with mass (static ones have inv_m = 0)
        if p.coin():
            p.add(f"v = v + ({f}[tid] * inv_m + {g_vec} * wp.nonzero(inv_m)) * {dt}")
        else:
            p.add(f"a = {f}[tid] * inv_m + {g_vec} * wp.nonzero(inv_m)", f"v += a * {dt}")
        p.note("keeps gravity off static bodies (zero inverse mass)")
    torqued = p.chance(0.6)
    if torqued:  # torque through the world-space inverse inertia R I^-1 R^T
        tau = p.array("body_tau" if short else "torques", T.VEC3F)
        inv_i = p.array("body_inv_inertia" if short else "inv_inertia", T.MAT33F, lo=0.0, hi=1.0)
        if p.coin():
            p.add("R = wp.quat_to_matrix(r)", f"w = w + R @ ({inv_i}[tid] @ (wp.transpose(R) @ {tau}[tid])) * {dt}")
        else:  # the same through quaternion rotations, without forming R
            p.add(f"tau_body = wp.quat_rotate_inv(r, {tau}[tid])",
                  f"w = w + wp.quat_rotate(r, {inv_i}[tid] @ tau_body) * {dt}")
    # damping as per-step factors, one value each for the whole launch: the caller computes exp(-k dt) (or
    # 1 - k dt) once per step rather than every thread computing it again
    form = p.pick("exp(-rate * dt)", "1 - rate * dt")  # one damping model for both velocities
    spin_damped, lin_damped = p.chance(0.4), p.chance(0.25)
    why = f"{'per-step factors' if spin_damped and lin_damped else 'a per-step factor'} from the caller: " \
          f"{form} for a damping rate"
    suffix = p.pick("_damping_factor", "_decay")  # both factors named alike
    if spin_damped:
        damp = p.scalar(f"angular{suffix}", lo=0.95, hi=1.0)
        p.why(why)
        p.add(f"w = w * {damp}")
        p.note("damps the angular velocity by a per-step factor")
    if lin_damped:
        lin_damp = p.scalar(f"linear{suffix}", lo=0.95, hi=1.0)
        if not spin_damped:
            p.why(why)
        p.add(f"v = v * {lin_damp}")
        p.note("damps the linear velocity by a per-step factor")
    p.add(f"x = x + v * {dt}")
    if p.coin(0.35):  # exact rotation by the angle |w| dt about w
        p.add(f"w_len = {p.length('w')}")
        p.why("a body that does not spin has no rotation axis")
        p.add("if w_len > 0.0:",
              f"{INDENT}r = wp.normalize(wp.quat_from_axis_angle(w / w_len, w_len * {dt}) * r)")
        rotation = "rotating the orientation exactly by |w| dt about w"
    else:
        p.add(f"r = wp.normalize(r + wp.quat(w, 0.0) * r * (0.5 * {dt}))")
        rotation = "integrating the orientation with dq/dt = 1/2 (w, 0) q"
    if spatial:
        p.add(f"{q}[tid] = wp.transform(x, r)", f"{qd}[tid] = wp.spatial_vector(w, v)")
    else:
        suffix = rng.choice(("_out", "_next"))  # outputs named for their inputs, one suffix for all
        out = p.array(f"{q}{suffix}", T.TRANSFORMF, "out")
        p.add(f"{out}[tid] = wp.transform(x, r)")
        if forced or lin_damped:  # an unchanged one is not copied
            v_out = p.array(f"{lin}{suffix}", T.VEC3F, "out")
            p.add(f"{v_out}[tid] = v")
        if torqued or "damps the angular velocity by a per-step factor" in p.notes:  # an unchanged one is not copied
            w_out = p.array(f"{ang}{suffix}", T.VEC3F, "out")
            p.add(f"{w_out}[tid] = w")
    if energy:
        ke = p.array(rng.choice(("linear_kinetic_energy", "translational_energy")), T.FLOAT32, "out")
        if forced:  # a static body (zero inverse mass) does not move: no energy
            p.add("ke = float(0.0)", "if inv_m > 0.0:", f"{INDENT}ke = 0.5 * wp.dot(v, v) / inv_m", f"{ke}[tid] = ke")
        else:
            mass = p.array(rng.choice(("body_mass", "mass")), T.FLOAT32, lo=0.5, hi=2.0)
            p.add(f"{ke}[tid] = 0.5 * {mass}[tid] * wp.dot(v, v)")
        p.note("writes each body's translational kinetic energy")
    loads = {(True, True): " under forces, gravity and torques", (True, False): " under forces and gravity",
             (False, True): " under torques"}.get((forced, torqued), " (free motion: no forces or torques)")
    return p.finish(rng.choice(("integrate_bodies", "integrate_rigid", "step_bodies")), p.kb.dims,
                    purpose=f"Advance rigid bodies one semi-implicit Euler step{loads}, {rotation}")


def _body_points(p: Pattern):
    """Points attached to bodies, moved to world space; optionally their velocities."""
    rng = p.rng
    n_bodies = rng.randint(1, 8)
    static = p.coin(0.35)  # body index -1: attached to the world
    body = p.array(rng.choice(("point_body", "body_index")), T.INT32, lo=-1 if static else 0,
                   hi=n_bodies - 1)
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, shape=(n_bodies,))
    local = p.array(rng.choice(("local_points", "rest_points", "shape_points")), T.VEC3F)
    p.guard("tid", local, ("num_points", p.kb.dims[0]))
    p.add(f"b = {body}[tid]")
    if static:
        p.note("leaves points with body index -1 attached to the world")
        p.add("X = wp.transform_identity()", "if b >= 0:", f"{INDENT}X = {q}[b]")
    else:
        p.add(f"X = {q}[b]")
    by_hand = p.coin(0.3)  # rotate, then translate, spelled out (normals then rotated the same way)
    if by_hand:
        p.add("rot = wp.transform_get_rotation(X)",
              f"p = wp.quat_rotate(rot, {local}[tid]) + wp.transform_get_translation(X)")
    else:
        p.add(f"p = wp.transform_point(X, {local}[tid])")
    if p.chance(0.3):  # the point's normal moves with the body's rotation only
        normals = p.array(rng.choice(("local_normals", "shape_normals")), T.VEC3F)
        n_out = p.array(rng.choice(("world_normals", "normals_out")), T.VEC3F, "out")
        rotated = f"wp.quat_rotate(rot, {normals}[tid])" if by_hand else f"wp.transform_vector(X, {normals}[tid])"
        p.add(f"{n_out}[tid] = wp.normalize({rotated})")
        p.note("rotates the points' normals")
    out = p.array(rng.choice(("world_points", "points_out")), T.VEC3F, "out")
    p.add(f"{out}[tid] = p")
    if p.chance(0.5):
        qd = p.array(rng.choice(("body_qd", "body_velocities")), T.SPATIAL_VECTORF, shape=(n_bodies,))
        vel = p.array(rng.choice(("point_velocities", "velocities_out")), T.VEC3F, "out")
        if static:
            p.add("twist = wp.spatial_vector()", "if b >= 0:", f"{INDENT}twist = {qd}[b]",
                  "w = wp.spatial_top(twist)", "v = wp.spatial_bottom(twist)")
        else:
            p.add(f"twist = {qd}[b]", "w = wp.spatial_top(twist)", "v = wp.spatial_bottom(twist)")  # one load
        lever = p.let("r", "p - wp.transform_get_translation(X)")
        p.add(f"{vel}[tid] = v + wp.cross(w, {lever})")
        p.note("computes the points' velocities v + w x r")
    if p.chance(0.35):  # a ground contact test on the moved point
        depth = p.array(rng.choice(("penetration", "contact_depth")), T.FLOAT32, "out")
        if p.coin():
            p.add(f"{depth}[tid] = wp.max(-p[1], 0.0)")
        else:
            ground = p.scalar(rng.choice(("ground_height", "ground_y")), lo=-0.5, hi=0.5)
            p.add(f"{depth}[tid] = wp.max({ground} - p[1], 0.0)")
        p.note("writes how deep each point is below the ground")
    return p.finish(rng.choice(("transform_points", "update_shape_points", "body_points")), p.kb.dims,
                    purpose="Move points attached to rigid bodies from body to world space by their body's transform")


def _skinning(p: Pattern):
    """Linear blend skinning: four bone transforms per vertex, blended by weight."""
    rng = p.rng
    n_bones = rng.randint(2, 12)
    rest = p.array(rng.choice(("rest_positions", "bind_pose")), T.VEC3F)
    # one word for the influences throughout: bone indices, weights and transforms, or joint ones
    word = rng.choice(("bone", "joint"))
    idx = p.array(rng.choice((f"{word}_indices", f"{word}_ids")), VEC4I, lo=0, hi=n_bones - 1)
    wts = p.array(rng.choice((f"{word}_weights", "skin_weights")), VEC4F, lo=0.0, hi=1.0)
    bones = p.array(f"{word}_transforms", T.TRANSFORMF, shape=(n_bones,))
    p.guard("tid", rest, ("num_vertices", p.kb.dims[0]))
    p.add(f"x = {rest}[tid]", f"ids = {idx}[tid]", f"ws = {wts}[tid]", p.pick("p = wp.vec3(0.0)", "p = wp.vec3()"))
    normal = p.chance(0.3)
    if normal:
        rest_n = p.array(rng.choice(("rest_normals", "bind_normals")), T.VEC3F)
        p.add(f"n0 = {rest_n}[tid]", "n = wp.vec3(0.0)")
    loop = p.pick("loop", "unrolled", "skip")
    if loop == "skip":  # slots with no weight cost nothing
        p.add("for b in range(4):", f"{INDENT}if ws[b] > 0.0:", f"{INDENT * 2}X = {bones}[ids[b]]",
              f"{INDENT * 2}p += ws[b] * wp.transform_point(X, x)")
        if normal:
            p.add(f"{INDENT * 2}n += ws[b] * wp.transform_vector(X, n0)")
    elif loop == "loop":
        p.add("for b in range(4):", f"{INDENT}X = {bones}[ids[b]]", f"{INDENT}p += ws[b] * wp.transform_point(X, x)")
        if normal:
            p.add(f"{INDENT}n += ws[b] * wp.transform_vector(X, n0)")
    else:
        p.add(*(f"p += ws[{b}] * wp.transform_point({bones}[ids[{b}]], x)" for b in range(4)))
        if normal:
            p.add(*(f"n += ws[{b}] * wp.transform_vector({bones}[ids[{b}]], n0)" for b in range(4)))
    if p.chance(0.4):  # weights need not sum to one: normalise
        total = p.pick("ws[0] + ws[1] + ws[2] + ws[3]", "wp.dot(ws, wp.vec4(1.0))")
        p.add(f"total = {total}", "p = p / wp.max(total, 1.0e-6)")
        p.note("divides by the sum of the weights")
    out = p.array(rng.choice(("skinned_positions", "deformed", "vertices_out")), T.VEC3F, "out")
    p.add(f"{out}[tid] = p")
    if normal:
        n_out = p.array(rng.choice(("skinned_normals", "normals_out")), T.VEC3F, "out")
        p.add(f"{n_out}[tid] = wp.normalize(n)")
    if p.chance(0.25):
        disp = p.array(rng.choice(("displacement", "offsets")), T.FLOAT32, "out")
        p.add(f"{disp}[tid] = {p.length('p - x')}")
        p.note("writes how far each vertex moved")
    with_normals = " and their normals" if normal else ""
    return p.finish(rng.choice(("skin_mesh", "linear_blend_skinning", "apply_skinning")), p.kb.dims,
                    purpose=f"Deform mesh vertices{with_normals} by linear blend skinning over four weighted {word}s")


def _relative_transform(p: Pattern):
    """The child frame relative to its parent, as joint code computes errors."""
    rng = p.rng
    n_bodies = rng.randint(2, 8)
    q = p.array(rng.choice(("body_q", "body_transforms")), T.TRANSFORMF, shape=(n_bodies,))
    rooted = p.coin(0.4)  # parent -1: the joint attaches the child to the world
    parent_name, child_name = rng.choice((("joint_parent", "joint_child"), ("parents", "children")))
    parent = p.array(parent_name, T.INT32, lo=-1 if rooted else 0, hi=n_bodies - 1)
    child = p.array(child_name, T.INT32, lo=0, hi=n_bodies - 1)
    p.guard("tid", parent, ("joint_count", p.kb.dims[0]))
    if rooted:
        p.add(f"parent = {parent}[tid]", "X_wp = wp.transform_identity()", "if parent >= 0:",
              f"{INDENT}X_wp = {q}[parent]", f"X_wc = {q}[{child}[tid]]")
    else:
        p.why("joints between two bodies only: no parent index is -1 (the world)")
        p.add(f"X_wp = {q}[{parent}[tid]]", f"X_wc = {q}[{child}[tid]]")
    if p.chance(0.3):  # joint frames attached to the bodies
        xp = p.array(rng.choice(("joint_X_p", "parent_frame")), T.TRANSFORMF)
        xc = p.array(rng.choice(("joint_X_c", "child_frame")), T.TRANSFORMF)
        p.add(f"X_wp = wp.transform_multiply(X_wp, {xp}[tid])", f"X_wc = wp.transform_multiply(X_wc, {xc}[tid])")
        p.note("includes the joint frames on both bodies")
    p.add("X_pc = wp.transform_multiply(wp.transform_inverse(X_wp), X_wc)")
    targeted = p.chance(0.3)  # the error against a target offset, and its size
    err = p.array(rng.choice(("joint_error", "pos_error") if targeted else ("rel_translation", "child_offset")),
                  T.VEC3F, "out")
    if targeted:
        target = p.array(rng.choice(("joint_target", "target_offset")), T.VEC3F)
        p.add(f"e = wp.transform_get_translation(X_pc) - {target}[tid]", f"{err}[tid] = e")
        norm = p.array(rng.choice(("error_norm", "violation")), T.FLOAT32, "out")
        p.add(f"{norm}[tid] = {p.length('e')}")
        translation = "its translation's error against a target offset, and the error's length"
    else:
        p.add(f"{err}[tid] = wp.transform_get_translation(X_pc)")
        translation = "its translation"
    kind = p.pick(None, "axis_angle", "quat", "acos", "prismatic")
    if kind == "acos":  # the rotation angle alone, from the scalar part of the quaternion
        ang = p.array(rng.choice(("joint_angle", "rot_angle")), T.FLOAT32, "out")
        p.add("dq = wp.transform_get_rotation(X_pc)", f"{ang}[tid] = 2.0 * wp.acos(wp.clamp(wp.abs(dq[3]), 0.0, 1.0))")
    elif kind == "prismatic":  # the joint coordinate along its axis, in the parent frame
        axis = p.array(rng.choice(("joint_axis", "axes")), T.VEC3F, lo=-1.0, hi=1.0)
        q_out = p.array(rng.choice(("joint_q", "slide")), T.FLOAT32, "out")
        p.add(f"{q_out}[tid] = wp.dot(wp.normalize({axis}[tid]), wp.transform_get_translation(X_pc))")
    elif kind == "axis_angle":
        ang = p.array(rng.choice(("joint_angle", "twist")), T.FLOAT32, "out")
        p.add("axis = wp.vec3()", "angle = float(0.0)",
              "wp.quat_to_axis_angle(wp.transform_get_rotation(X_pc), axis, angle)", f"{ang}[tid] = angle")
    elif kind == "quat":  # small-angle rotation error from the vector part of the relative quaternion
        rot = p.array(rng.choice(("rot_error", "angular_error")), T.VEC3F, "out")
        p.add("dq = wp.transform_get_rotation(X_pc)", f"{rot}[tid] = 2.0 * wp.vec3(dq[0], dq[1], dq[2]) * wp.sign(dq[3])")
    measure = {None: "", "axis_angle": " and its rotation angle", "quat": " and a small-angle rotation error",
               "acos": " and its rotation angle", "prismatic": " and the slide along the joint axis"}[kind]
    if rooted:
        p.note("treats parent -1 as the world")
    return p.finish(rng.choice(("joint_errors", "relative_transforms", "eval_joints")), p.kb.dims,
                    purpose=f"Compute each joint's child frame relative to its parent: {translation}{measure}",
                    differentiable=False)
