"""Rigid-body math categories: quaternion, transform and spatial (6D) vectors and matrices.

Profiles over the shared builder that favour Warp's Quaternion Math, Transformations and
Spatial Math builtins, plus ``quat_to_axis_angle``, which returns through output variables.
What it leaves out: geometry queries on meshes and volumes (``queries``).
"""

from __future__ import annotations

from jit.code.synthesis import expr as E
from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.basic import standard
from jit.code.synthesis.stmt import Assign, KernelBuilder, Line, Profile

QUAT = frozenset({"quat_from_axis_angle", "quat_from_matrix", "quat_rpy", "quat_inverse", "quat_rotate",
                  "quat_rotate_inv", "quat_slerp", "quat_to_matrix", "quat_from_euler", "quat_to_euler",
                  "quat_to_rpy", "quat_twist", "quat_twist_angle", "quat_twist_angle_signed", "normalize",
                  "length", "dot", "mul"})
TRANSFORM = frozenset({"transform_get_translation", "transform_get_rotation", "transform_multiply",
                       "transform_point", "transform_vector", "transform_inverse", "transform_compose",
                       "transform_from_matrix", "transform_to_matrix", "transform_set_translation_copy",
                       "transform_set_rotation_copy", "quat_rotate", "mul"})
SPATIAL = frozenset({"spatial_dot", "spatial_cross", "spatial_cross_dual", "spatial_top", "spatial_bottom",
                     "spatial_adjoint", "velocity_at_point", "transform_twist", "transform_wrench", "outer", "mul"})


def axis_angle(kb: KernelBuilder, depth: int) -> list:
    """``wp.quat_to_axis_angle(q, axis, angle)`` fills two output variables."""
    q = E.gen(kb.ctx, T.QUATF)
    src, axis, angle = kb.fresh("q"), kb.fresh("ax"), kb.fresh("ang")
    stmts = [Assign(src, E.call("normalize", [q], T.QUATF)), Assign(axis, E.zero(T.VEC3F)),
             Assign(angle, E.Expr("float(0.0)", T.FLOAT32, 0.0, "cast", "float32")),
             Line(f"wp.quat_to_axis_angle({src}, {axis}, {angle})")]
    kb.declare(src, E.var(src, T.QUATF, 1.0))
    kb.declare(axis, E.var(axis, T.VEC3F, 1.0))
    kb.declare(angle, E.var(angle, T.FLOAT32, 7.0))
    return stmts


def identities(kb: KernelBuilder, depth: int) -> list:
    """Locals started from Warp's identity constructors."""
    if kb.rng.random() < 0.5:
        value = E.Expr("wp.quat_identity(dtype=wp.float32)", T.QUATF, 1.0, "call", "quat_identity")
    else:
        value = E.Expr("wp.transform_identity(dtype=wp.float32)", T.TRANSFORMF, 1.0, "call", "transform_identity")
    name = kb.name_for(value)
    kb.declare(name, value)
    return [Assign(name, value)]


@register("quaternion", 1.0)
def quaternion(rng, name, suffix, complexity):
    profile = Profile({T.QUATF: 4, T.VEC3F: 2, T.FLOAT32: 1, T.MAT33F: 0.7}, (T.QUATF, T.VEC3F, T.FLOAT32),
                      prefer=QUAT, extra=[axis_angle, identities], weights={"for": 0.3, "extra": 0.5})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


@register("transform", 1.0)
def transform(rng, name, suffix, complexity):
    profile = Profile({T.TRANSFORMF: 4, T.VEC3F: 2, T.QUATF: 1.5, T.MAT44F: 0.5, T.FLOAT32: 0.5},
                      (T.TRANSFORMF, T.VEC3F, T.QUATF), prefer=TRANSFORM, extra=[identities],
                      weights={"for": 0.3, "extra": 0.3})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))


@register("spatial", 0.8)
def spatial(rng, name, suffix, complexity):
    profile = Profile({T.SPATIAL_VECTORF: 4, T.SPATIAL_MATRIXF: 1, T.VEC3F: 2, T.TRANSFORMF: 1, T.FLOAT32: 1},
                      (T.SPATIAL_VECTORF, T.VEC3F, T.FLOAT32), prefer=SPATIAL, weights={"for": 0.3})
    return standard(KernelBuilder(rng, name, suffix, profile, complexity))
