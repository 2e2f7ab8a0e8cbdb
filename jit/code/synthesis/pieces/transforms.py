"""Rigid transforms and rotations: moving points between frames, integrating orientations.

Quaternions are unit (``x, y, z, w`` as Warp stores them) and angular velocities are in world
coordinates unless a piece says otherwise. Everything here is 3D. What it leaves out: linear
motion (``integrators``) and matrices other than rotations (``linalg``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import (ANGULAR_VELOCITY, DIRECTION3, LINEAR_VELOCITY, LOCAL_POINT,
                                             POINT3, QUATERNION, TIME_STEP, TORQUE, TRANSFORM)

WORLD_POINT = Role("world point", "vec3")  # derived
WORLD_VECTOR = Role("world vector", "vec3")
OFFSET = Role("offset from the center of mass", "vec3")
POINT_VELOCITY = Role("point velocity", "vec3")
PRINCIPAL_INERTIA = Role("principal moments of inertia", "vec3", 0.5, 2.0, ("inertia", "body_inertia", "moments"),
                         per_item=0.8, family="inertia")
INV_PRINCIPAL_INERTIA = Role("inverse principal moments of inertia", "vec3", 0.5, 2.0,
                             ("inv_inertia", "body_inv_inertia", "inv_moments"), per_item=0.8, family="inertia")
CENTER_OF_MASS = Role("center of mass", "vec3", -1.0, 1.0, ("com", "body_com", "center"))
SPIN_AXIS = Role("rotation axis", "vec3", -1.0, 1.0, ("axis", "spin_axis"))
ANGLE = Role("angle", "scalar", -3.14, 3.14, ("angle", "theta"))
# exp(-k dt) of an angular damping rate k: one value per step, computed by the caller
ANGULAR_DAMPING_FACTOR = Role("per-step angular damping factor", "scalar", 0.9, 1.0,
                              ("angular_damping_factor", "spin_decay", "angular_decay"))


@piece("transform_point", needs={"xform": TRANSFORM, "p": LOCAL_POINT}, gives={"p": WORLD_POINT},
       says="body-local points mapped to world space", dims=(3,), weight=2.0)
def transform_point(w: Writer, xform, p):
    return {"p": w.let(("p_world", "world_point", "x_world"), f"wp.transform_point({xform}, {p})")}


@piece("transform_vector", needs={"xform": TRANSFORM, "d": DIRECTION3}, gives={"d": WORLD_VECTOR},
       says="body-local directions rotated to world space", dims=(3,))
def transform_vector(w: Writer, xform, d):
    return {"d": w.let(("d_world", "world_dir", "n_world"), f"wp.transform_vector({xform}, {d})")}


@piece("inverse_transform_point", needs={"xform": TRANSFORM, "p": POINT3}, gives={"p": WORLD_POINT},
       says="world points expressed in a body frame", dims=(3,))
def inverse_transform_point(w: Writer, xform, p):
    if w.coin():
        inv = w.let(("inv_xform", "world_to_body", "X_inv"), f"wp.transform_inverse({xform})")
        return {"p": w.let(("p_local", "local_point"), f"wp.transform_point({inv}, {p})")}
    w.comment("the inverse rigid transform: undo the translation, then the rotation")
    offset = w.let(("offset", "rel"), f"{p} - wp.transform_get_translation({xform})")
    return {"p": w.let(("p_local", "local_point"),
                       f"wp.quat_rotate_inv(wp.transform_get_rotation({xform}), {offset})")}


@piece("quat_rotate", needs={"q": QUATERNION, "d": DIRECTION3}, gives={"d": WORLD_VECTOR},
       says="vectors rotated by quaternions", dims=(3,))
def quat_rotate(w: Writer, q, d):
    return {"d": w.let(("rotated", "d_world"), f"wp.quat_rotate({q}, {d})")}


@piece("axis_angle_rotation", needs={"axis": SPIN_AXIS, "angle": ANGLE, "d": DIRECTION3},
       gives={"d": WORLD_VECTOR}, says="vectors rotated about an axis by an angle", dims=(3,))
def axis_angle_rotation(w: Writer, axis, angle, d):
    w.comment("the axis need not be unit: normalise it before building the rotation")
    q = w.let(("q", "rot"), f"wp.quat_from_axis_angle(wp.normalize({axis}), {angle})")
    return {"d": w.let(("rotated", "d_rot"), f"wp.quat_rotate({q}, {d})")}


@piece("integrate_quaternion", needs={"q": QUATERNION, "omega": ANGULAR_VELOCITY, "dt": TIME_STEP},
       gives={"q": QUATERNION}, says="orientations advanced by their angular velocity", dims=(3,), weight=2.0)
def integrate_quaternion(w: Writer, q, omega, dt):
    w.comment("dq/dt = 0.5 * (omega, 0) * q, then back to unit length",
              "integrate the orientation and renormalise the quaternion")
    spin = w.let(("spin", "dq"), f"{w.style.type('quat')}({omega}[0], {omega}[1], {omega}[2], {w.lit(0.0)}) * {q}")
    return {"q": w.let(("q_new", "rot_new"), f"wp.normalize({q} + {spin} * ({w.lit(0.5)} * {dt}))")}


@piece("rigid_point_velocity", needs={"v": LINEAR_VELOCITY, "omega": ANGULAR_VELOCITY, "r": OFFSET},
       gives={"v": POINT_VELOCITY}, says="velocities of points on rigid bodies", dims=(3,))
def rigid_point_velocity(w: Writer, v, omega, r):
    return {"v": w.let(("v_point", "point_vel"), f"{v} + wp.cross({omega}, {r})")}


@piece("euler_rotation_step", needs={"q": QUATERNION, "omega": ANGULAR_VELOCITY, "torque": TORQUE,
                                     "inertia": PRINCIPAL_INERTIA, "inv_inertia": INV_PRINCIPAL_INERTIA,
                                     "dt": TIME_STEP},
       gives={"omega": ANGULAR_VELOCITY}, says="Euler's rotation equations with gyroscopic torque", dims=(3,))
def euler_rotation_step(w: Writer, q, omega, torque, inertia, inv_inertia, dt):
    """The inverse moments come from the caller, as the moments do (a rigid-body solver keeps both):
    a zero inverse moment holds its axis (a kinematic body), where dividing by a moment could not."""
    w.comment("in the body frame the inertia tensor is diagonal")
    w_body = w.let(("w_body", "omega_b"), f"wp.quat_rotate_inv({q}, {omega})")
    t_body = w.let(("tau_body", "torque_b"), f"wp.quat_rotate_inv({q}, {torque})")
    gyro = w.let(("gyro", "coriolis"), f"wp.cross({w_body}, wp.cw_mul({inertia}, {w_body}))")
    w_dot = w.let(("w_dot", "alpha"), f"wp.cw_mul({inv_inertia}, {t_body} - {gyro})")
    return {"omega": w.let(("omega_new", "w_new"), f"wp.quat_rotate({q}, {w_body} + {w_dot} * {dt})")}


@piece("angular_damping", needs={"omega": ANGULAR_VELOCITY, "factor": ANGULAR_DAMPING_FACTOR},
       gives={"omega": ANGULAR_VELOCITY}, says="angular velocity damping by a per-step factor", dims=(3,))
def angular_damping(w: Writer, omega, factor):
    w.add("# " + w.pick(f"{factor} = exp(-rate * dt) for an angular damping rate, computed once per step by the caller",
                        f"the caller passes the step's spin decay {factor} = exp(-rate * dt)"))
    return {"omega": w.update(omega, f"{omega} * {factor}", "omega_damped")}


@piece("quat_rotate_inv", needs={"q": QUATERNION, "d": DIRECTION3}, gives={"d": WORLD_VECTOR},
       says="vectors rotated by the inverse of quaternions", dims=(3,))
def quat_rotate_inv(w: Writer, q, d):
    return {"d": w.let(("local", "d_local", "unrotated"), f"wp.quat_rotate_inv({q}, {d})")}


@piece("spin_rotation", needs={"omega": ANGULAR_VELOCITY, "dt": TIME_STEP, "d": DIRECTION3},
       gives={"d": WORLD_VECTOR}, says="vectors turned by their angular velocity over a step", dims=(3,))
def spin_rotation(w: Writer, omega, dt, d):
    rate = w.let(("rate", "spin_rate"), w.length(omega))
    w.comment("a zero angular velocity has no axis: normalize gives zero, and a zero angle")
    q = w.let(("q", "dq"), f"wp.quat_from_axis_angle(wp.normalize({omega}), {rate} * {dt})")
    return {"d": w.let(("turned", "d_new"), f"wp.quat_rotate({q}, {d})")}
