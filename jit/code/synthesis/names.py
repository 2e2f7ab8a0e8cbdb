"""Names for what a generated kernel declares, by type and role, the way simulation code names them.

A ``Namer`` hands out identifiers unique within one kernel (helpers included) from a vocabulary
of what physics and graphics code calls its values: input arrays by element type (``positions``,
``masses``, ``indices``), outputs (``new_positions``, ``out_forces``), scalar parameters
(``dt``, ``damping``), locals by what computed them (``dist`` for a ``length``, ``normal`` for a
``normalize``, ``delta`` for a difference of points) and loop variables. When every base name of
a role is taken it compounds one (``prev_pos``, ``rel_vel``, ``pos_sum``) rather than append a
digit, so no name looks like ``v12``. What it leaves out: deciding a value's role (the
statement builder does that) and module-level names' item suffix (added by the caller).
"""

from __future__ import annotations

import builtins
import keyword
import random

# words a local must not shadow: Python's own names and the modules kernels import
RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"wp", "warp", "np", "math", "self"}

# input arrays by element type (Warp type name)
ARRAYS = {
    "vec3f": ("positions", "velocities", "forces", "normals", "points", "displacements", "offsets",
              "directions", "accelerations", "targets", "vertices", "colors"),
    "vec3d": ("positions", "points", "velocities", "forces"),
    "vec2f": ("uvs", "coords", "points", "velocities", "samples", "offsets"),
    "vec4f": ("colors", "weights", "planes", "values"),
    "vec2i": ("edges", "pairs", "cells", "coords"),
    "vec3i": ("triangles", "cells", "faces", "coords"),
    "float32": ("masses", "densities", "pressures", "weights", "values", "radii", "temperatures",
                "lengths", "stiffness", "energies", "phases", "heights"),
    "float64": ("values", "weights", "energies", "masses"),
    "int32": ("indices", "counts", "ids", "labels", "flags", "neighbors", "offsets"),
    "uint32": ("seeds", "keys", "flags", "hashes", "masks"),
    "bool": ("active", "mask", "valid"),
    "quatf": ("rotations", "orientations", "body_rot"),
    "transformf": ("transforms", "poses", "body_q", "frames"),
    "mat22f": ("strains", "jacobians", "blocks"),
    "mat33f": ("rotations", "stresses", "inertias", "deformations", "jacobians", "covariances"),
    "mat44f": ("matrices", "xforms", "projections"),
    "mat33d": ("stresses", "inertias", "covariances"),
    "spatial_vectorf": ("twists", "wrenches", "body_qd", "velocities"),
    "spatial_matrixf": ("inertias", "jacobians"),
}
STRUCT_ARRAYS = ("particles", "bodies", "states", "items", "elements", "contacts")
INOUT = ("totals", "accum", "counters", "histogram", "bins", "sums", "grid", "stats")
OUTPUT_FORMS = ("out_{}", "new_{}", "{}_out", "result_{}")
SCALAR_PARAMS = {
    "float32": ("dt", "scale", "gravity", "damping", "stiffness", "radius", "alpha", "beta", "threshold",
                "strength", "friction", "restitution", "time", "eps", "gain", "rest_length", "viscosity"),
    "int32": ("num_points", "count", "steps", "stride", "width", "offset", "num_iters", "seed", "level",
              "num_bodies", "frame"),
}
HANDLES = {"mesh": ("mesh", "target_mesh"), "bvh": ("bvh", "tree"), "grid": ("grid", "hash_grid"),
           "volume": ("volume", "sdf")}

# locals by what computed them (the top builtin or operator of the value)
BY_OP = {
    "length": ("dist", "length", "r"), "norm_l2": ("dist", "norm"), "norm_l1": ("dist", "norm"),
    "length_sq": ("dist_sq", "rsq", "len_sq"), "dot": ("proj", "cos_theta", "d", "dot_prod"),
    "normalize": ("n", "normal", "dir", "axis"), "smooth_normalize": ("n", "normal", "dir"),
    "cross": ("axis", "tangent", "torque", "c"), "sub": ("delta", "diff", "rel", "offset"),
    "add": ("total", "sum_val", "combined"), "mul": ("scaled", "prod", "weighted"),
    "div": ("ratio", "frac", "scaled"), "sqrt": ("root", "r", "speed"), "abs": ("mag", "size"),
    "sin": ("s", "wave", "sin_t"), "cos": ("c", "cos_t", "wave"), "tanh": ("soft", "act"),
    "exp": ("decay", "falloff", "w"), "log": ("log_val", "energy"), "pow": ("power", "curve"),
    "min": ("lo", "lower", "nearest"), "max": ("hi", "upper", "peak"), "clamp": ("clamped", "limited"),
    "where": ("sel", "chosen"), "lerp": ("blend", "mixed", "interp"), "smoothstep": ("blend", "ramp"),
    "atan2": ("angle", "theta", "phi"), "acos": ("angle", "theta"), "asin": ("angle", "phi"),
    "determinant": ("det", "vol", "jdet"), "inverse": ("inv", "inv_m"), "transpose": ("mt", "m_t"),
    "outer": ("op", "cov"), "trace": ("tr", "trace_m"), "skew": ("skew_m", "cross_m"),
    "quat_rotate": ("rotated", "world_dir"), "quat_rotate_inv": ("local_dir", "body_dir"),
    "quat_from_axis_angle": ("rot", "q"), "quat_inverse": ("inv_rot", "q_inv"),
    "quat_to_matrix": ("rot_m", "R"), "quat_slerp": ("rot", "q_blend"),
    "transform_point": ("world_pos", "p_world", "x"), "transform_vector": ("world_dir", "v_world"),
    "transform_inverse": ("inv_xform", "x_inv"), "transform_multiply": ("xform", "pose"),
    "transform_get_translation": ("origin", "pos"), "transform_get_rotation": ("rot", "q"),
    "spatial_top": ("w", "ang"), "spatial_bottom": ("v", "lin"), "spatial_dot": ("power", "work"),
    "spatial_cross": ("twist", "xd"), "floor": ("cell", "fl"), "round": ("rounded",), "sign": ("sgn", "side"),
    "mod": ("wrapped", "rem"), "arr": ("",),
}
# locals by type when no operation says more
BY_TYPE = {
    "float32": ("x", "y", "w", "s", "t", "h", "val", "a", "b", "k", "f", "e"),
    "float64": ("x", "y", "val", "acc", "total"),
    "int32": ("idx", "n", "k", "m", "count", "cell", "slot"),
    "uint32": ("key", "bits", "h", "mask"),
    "bool": ("inside", "hit", "ok", "flag", "active"),
    "vec2f": ("uv", "p", "st", "xy", "coord"),
    "vec3f": ("p", "v", "x", "u", "d", "f", "dir", "pos", "vel"),
    "vec4f": ("color", "h", "plane", "v"),
    "vec3d": ("p", "x", "v"),
    "vec2i": ("cell", "pair", "coord"),
    "vec3i": ("cell", "tri", "coord"),
    "quatf": ("q", "rot", "orient", "r"),
    "transformf": ("xform", "pose", "tf", "X"),
    "mat22f": ("m", "A", "J", "F"),
    "mat33f": ("m", "R", "A", "J", "F", "jac", "rot_m"),
    "mat44f": ("M", "m", "xform_m", "T"),
    "mat33d": ("m", "A", "F"),
    "spatial_vectorf": ("twist", "wrench", "qd", "v_s"),
    "spatial_matrixf": ("I", "S", "inertia", "M"),
}
# a singular for an array's element (positions[i] -> pos)
SINGULAR = {"positions": "pos", "velocities": "vel", "forces": "f", "normals": "n", "points": "p",
            "displacements": "disp", "offsets": "off", "directions": "dir", "accelerations": "acc",
            "targets": "target", "vertices": "vert", "colors": "color", "uvs": "uv", "coords": "coord",
            "samples": "sample", "weights": "w", "planes": "plane", "values": "val", "edges": "edge",
            "pairs": "pair", "cells": "cell", "triangles": "tri", "faces": "face", "masses": "mass",
            "densities": "rho", "pressures": "p", "radii": "radius", "temperatures": "temp",
            "lengths": "length", "energies": "energy", "phases": "phase", "heights": "height",
            "indices": "idx", "counts": "count", "ids": "id_", "labels": "label", "flags": "flag",
            "neighbors": "nbr", "seeds": "seed", "keys": "key", "hashes": "h", "masks": "mask",
            "rotations": "rot", "orientations": "orient", "body_rot": "q", "transforms": "xform",
            "poses": "pose", "body_q": "X", "frames": "frame", "strains": "strain", "jacobians": "jac",
            "blocks": "block", "stresses": "stress", "inertias": "inertia", "deformations": "F",
            "covariances": "cov", "matrices": "m", "xforms": "xform", "projections": "proj",
            "twists": "twist", "wrenches": "wrench", "body_qd": "qd", "stiffness": "k"}
LOOP_VARS = ("j", "k", "s", "e", "p", "q", "c", "n", "l", "b")
COUNTERS = ("it", "iter_count", "steps", "tries", "n_iter", "passes")
ACCUMULATORS = ("acc", "total", "accum", "running", "sum_val")
QUALIFIERS = ("prev", "new", "rel", "next", "cur", "tmp", "local", "base", "old", "other", "avg", "max",
              "min", "init", "last", "ref", "world", "final")
TAILS = ("sum", "acc", "avg", "new", "old", "tmp", "alt", "sq", "ref", "end")
HELPER_VERBS = ("compute", "eval", "apply", "get", "calc", "sample", "blend", "project", "update")
HELPER_NOUNS = {"float32": ("weight", "energy", "kernel", "falloff", "density", "penalty", "phi", "cost"),
                "vec3f": ("force", "offset", "velocity", "normal", "impulse", "direction"),
                "int32": ("index", "cell", "count", "bucket"), "quatf": ("rotation", "orientation"),
                "mat33f": ("jacobian", "stress", "rotation"), "transformf": ("pose", "frame")}
HELPER_ARGS = {"float32": ("x", "y", "t", "s", "a", "b", "w"), "int32": ("n", "k", "idx", "count"),
               "vec3f": ("p", "q", "v", "d", "u", "n"), "quatf": ("q", "r", "rot"),
               "mat33f": ("m", "A", "R"), "struct": ("state", "params", "item")}
STRUCTS = ("Particle", "Body", "Material", "Contact", "Params", "State", "Cell", "Spring", "Joint",
           "Sample", "Segment", "Emitter")
TILES = ("tile", "block", "values", "rows", "data", "vals", "chunk", "lanes", "weights_tile", "scan",
         "acc_tile", "col", "buf", "tmp_tile", "partial", "sums")


class Namer:
    """Identifiers unique within one kernel, drawn by role."""

    def __init__(self, rng: random.Random, taken: set[str] | None = None):
        self.rng = rng
        self.used: set[str] = set(taken or ())

    def take(self, *candidates: str, spread: int = 3) -> str:
        """The first free one of (a few shuffled) ``candidates``; else a compound of one of them."""
        cands = [c for c in candidates if c]
        head = cands[:spread]
        self.rng.shuffle(head)
        for c in head + cands[spread:]:
            if self.ok(c):
                return self.claim(c)
        for c in cands:
            for name in self.compounds(c):
                if self.ok(name):
                    return self.claim(name)
        base = cands[0] if cands else "value"
        letter = 0
        while not self.ok(f"{base}_{_letters(letter)}"):
            letter += 1
        return self.claim(f"{base}_{_letters(letter)}")

    def compounds(self, base: str) -> list[str]:
        quals = list(QUALIFIERS)
        tails = list(TAILS)
        self.rng.shuffle(quals)
        self.rng.shuffle(tails)
        return [f"{q}_{base}" for q in quals[:6]] + [f"{base}_{t}" for t in tails[:4]]

    def ok(self, name: str) -> bool:
        return name not in self.used and name not in RESERVED and name.isidentifier()

    def claim(self, name: str) -> str:
        self.used.add(name)
        return name

    # -- by role -------------------------------------------------------------------------------

    def array(self, dtype: str, role: str, struct: bool = False) -> str:
        nouns = STRUCT_ARRAYS if struct else ARRAYS.get(dtype, ("values", "data"))
        if role == "inout":
            return self.take(*INOUT)
        if role == "out":
            forms = list(OUTPUT_FORMS)
            self.rng.shuffle(forms)
            noun = self.rng.choice(nouns)
            options = [f.format(noun) for f in forms] + ["result", "output"]
            return self.take(*options, spread=1)
        return self.take(*self.rng.sample(nouns, len(nouns)), spread=1)

    def scalar(self, dtype: str) -> str:
        words = SCALAR_PARAMS.get(dtype, ("value", "param"))
        return self.take(*self.rng.sample(words, len(words)), spread=1)

    def local(self, type_name: str, op: str = "", source: str = "") -> str:
        """A local holding a value of ``type_name`` computed by ``op`` (read from array ``source``)."""
        if op == "arr" and source:
            base = SINGULAR.get(source.split("_", 1)[-1], "")
            if base:
                return self.take(base, f"{base}_i" if len(base) > 1 else "", "cur_" + base)
        by_type = BY_TYPE.get(type_name, ("val",))
        if op in BY_OP and op != "arr":
            return self.take(*BY_OP[op], *by_type)
        return self.take(*by_type)

    def loop_var(self) -> str:
        return self.take(*LOOP_VARS, spread=2)

    def counter(self) -> str:
        return self.take(*COUNTERS, spread=2)

    def accumulator(self, base: str = "") -> str:
        return self.take(*((f"{base}_sum",) if base else ()), *ACCUMULATORS)

    def helper(self, ret: str) -> str:
        nouns = HELPER_NOUNS.get(ret, ("value", "term"))
        return f"{self.rng.choice(HELPER_VERBS)}_{self.rng.choice(nouns)}"

    def helper_args(self, types: list[str]) -> list[str]:
        local = Namer(self.rng)
        return [local.take(*HELPER_ARGS.get("struct" if t not in BY_TYPE else t, BY_TYPE.get(t, ("x",))), spread=2)
                for t in types]


def _letters(n: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: a suffix without digits."""
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(97 + r) + out
    return out


def paired(name: str) -> tuple[str, ...]:
    """Names for the output array of what input ``name`` holds, so the pair reads as one:
    ``positions`` -> ``positions_out``, ``x`` -> ``x_new``, ``particle_v`` -> ``particle_v_new``."""
    if len(name) <= 2 or name.endswith(("_x", "_v", "_q", "_w")):
        return f"{name}_new", f"{name}_out"
    return f"{name}_out", f"new_{name}"
