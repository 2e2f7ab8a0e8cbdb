"""Every piece, run inside a tiny Warp kernel on the CPU, against NumPy or a physical law.

Each case writes one kernel around one piece: per-thread inputs read from arrays into locals
named as the piece's inputs, the piece's lines, its outputs stored. All kernels share two Warp
modules (float32, and a few float64 cases), built once. The checks are independent of the
emitted code: closed forms in NumPy (a symplectic Euler step, a central difference of a
quadratic), or laws any correct version keeps (a distance projection conserves momentum and
restores the rest length, a contact projection leaves the particle on the surface, pairwise
forces sum to zero, a splat conserves what it spreads).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.pieces import PIECES, Style, Writer
from jit.code.synthesis.pieces.base import INDENT

N = 64  # samples per case
SHAPES = {"scalar": lambda d: (), "vec": lambda d: (d,), "vec3": lambda d: (3,), "mat": lambda d: (d, d),
          "mat33": lambda d: (3, 3), "quat": lambda d: (4,), "transform": lambda d: (7,), "int": lambda d: ()}


@dataclass
class Case:
    """One piece under test: inputs by name (NumPy, N samples), and a check of its outputs."""

    piece: str
    inputs: Callable[[np.random.Generator, int], dict[str, np.ndarray]]
    check: Callable[[dict, dict], None]  # (inputs, outputs)
    dim: int = 3
    f64: bool = False
    grids: dict[str, tuple[int, ...]] = field(default_factory=dict)  # array inputs (fields) and their shapes
    tag: str = ""

    @property
    def name(self) -> str:
        return f"t_{self.piece}{self.tag}{'_d' if self.f64 else ''}"

    @property
    def style(self) -> Style:
        return Style(self.f64, self.dim, False)


def kernel_source(case: Case) -> str:
    """The kernel around ``case.piece``: inputs read per thread, the piece, outputs stored."""
    p, st = PIECES[case.piece], case.style
    w = Writer(st, random.Random(0), set(p.needs) | {"wp", "tid"}, chatty=False, suffix=case.name, in_place=False)
    outs = p(w, **{k: k for k in p.needs})
    params, reads = [], []
    for k, role in p.needs.items():
        if k in case.grids:
            kind = "scalar" if role.name == "scalar grid" else "vec"
            params.append(f"{k}: wp.array(dtype={st.type(kind)}, ndim={len(case.grids[k])})")
        else:
            params.append(f"in_{k}: wp.array(dtype={st.type(role.kind)})")
            reads.append(f"{k} = in_{k}[tid]")
    stores = []
    for g, role in p.gives.items():
        params.append(f"out_{g}: wp.array(dtype={st.type(role.kind)})")
        stores.append(f"out_{g}[tid] = {outs[g]}")
    body = "\n".join(INDENT + line for line in ["tid = wp.tid()", *reads, *w.lines, *stores])
    kernel = f"@wp.kernel\ndef {case.name}({', '.join(params)}):\n{body}\n"
    return "\n\n\n".join(["import warp as wp", *w.funcs.values(), kernel]) + "\n"


def run(case: Case, kernel) -> tuple[dict, dict]:
    p, st = PIECES[case.piece], case.style
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    values = case.inputs(rng, N)
    ftype = np.float64 if case.f64 else np.float32
    args = []
    for k, role in p.needs.items():
        t = st.wtype(role.kind) if k not in case.grids else None
        if k in case.grids:
            kind = "scalar" if role.name == "scalar grid" else "vec"
            args.append(wp.array(values[k].astype(ftype), dtype=getattr(wp, st.wtype(kind).name), device="cpu"))
        else:
            data = values[k].astype({"int": np.int32, "uint32": np.uint32}.get(role.kind, ftype))
            args.append(wp.array(data, dtype=getattr(wp, t.name), device="cpu"))
    outs = {}
    for g, role in p.gives.items():
        t = st.wtype(role.kind)
        outs[g] = wp.zeros(N, dtype=getattr(wp, t.name), device="cpu")
        args.append(outs[g])
    wp.launch(kernel, N, inputs=args, device="cpu")
    return values, {g: a.numpy().astype(np.float64) for g, a in outs.items()}


# ---------------------------------------------------------------------------------------------
# input makers and NumPy helpers


def U(lo, hi, *shape):
    return lambda rng, n: rng.uniform(lo, hi, (n, *shape))


def inputs(**makers):
    return lambda rng, n: {k: (m(rng, n) if callable(m) else np.full((n,), m)) for k, m in makers.items()}


def assert_finite(a):
    assert np.all(np.isfinite(a))


def close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


def col(x):  # broadcast a per-sample scalar against vectors
    return np.asarray(x)[:, None]


def dot(a, b):
    return np.sum(a * b, axis=-1)


def norm(a):
    return np.linalg.norm(a, axis=-1)


def unit_quats(rng, n):
    q = rng.standard_normal((n, 4))
    return q / norm(q)[:, None]


def quat_matrix(q):
    """Rotation matrices of quaternions stored (x, y, z, w)."""
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def transforms(rng, n):
    return np.concatenate([rng.uniform(-1, 1, (n, 3)), unit_quats(rng, n)], axis=1)


def mat_vec(m, v):
    return np.einsum("nij,nj->ni", m, v)


def eye(n, d):
    return np.broadcast_to(np.eye(d), (n, d, d))


# ---------------------------------------------------------------------------------------------
# the cases


CASES: list[Case] = []


def case(*args, **kwargs) -> None:
    CASES.append(Case(*args, **kwargs))


# integrators
case("symplectic_euler", inputs(x=U(-1, 1, 3), v=U(-1, 1, 3), a=U(-2, 2, 3), dt=U(0.001, 0.01)),
     lambda i, o: (close(o["v"], i["v"] + i["a"] * col(i["dt"])),
                   close(o["x"], i["x"] + (i["v"] + i["a"] * col(i["dt"])) * col(i["dt"]))))
case("explicit_euler", inputs(x=U(-1, 1, 2), v=U(-1, 1, 2), a=U(-2, 2, 2), dt=U(0.001, 0.01)),
     lambda i, o: (close(o["x"], i["x"] + i["v"] * col(i["dt"])), close(o["v"], i["v"] + i["a"] * col(i["dt"]))),
     dim=2)
def some_pinned(rng, n):
    """Forces, gravity and inverse masses of which every fourth is zero (a pinned particle)."""
    w = rng.uniform(0.1, 2, n)
    w[::4] = 0.0
    return {"f": rng.uniform(-1, 1, (n, 3)), "inv_mass": w, "gravity": rng.uniform(-9.81, -1, (n, 3))}


case("acceleration_from_inverse_mass", some_pinned,
     lambda i, o: close(o["a"], i["f"] * col(i["inv_mass"]) + i["gravity"] * col(i["inv_mass"] != 0)))
case("acceleration_from_mass", inputs(f=U(-1, 1, 3), mass=U(0.5, 2), gravity=U(-9.81, -1, 3)),
     lambda i, o: close(o["a"], i["f"] / col(i["mass"]) + i["gravity"]))
# the caller's factor exp(-k dt) for rates k in [0, 2] and steps in [0.001, 0.01]
case("velocity_damping", lambda rng, n: {"v": rng.uniform(-1, 1, (n, 3)),
                                         "factor": np.exp(-rng.uniform(0, 2, n) * rng.uniform(0.001, 0.01, n))},
     lambda i, o: close(o["v"], i["v"] * col(i["factor"])))


def check_clamp(i, o):
    speed = norm(i["v"])
    assert np.all(norm(o["v"]) <= i["max_speed"] * (1 + 1e-5))
    close(o["v"] * col(speed), i["v"] * col(norm(o["v"])), atol=1e-4)  # same direction
    slow = speed <= i["max_speed"]
    close(o["v"][slow], i["v"][slow])


case("clamp_speed", inputs(v=U(-3, 3, 3), max_speed=U(1, 3)), check_clamp)
case("position_drift", inputs(x=U(-1, 1, 2), v=U(-1, 1, 2), dt=U(0.001, 0.01)),
     lambda i, o: close(o["x"], i["x"] + i["v"] * col(i["dt"])), dim=2)
case("velocity_kick", inputs(v=U(-1, 1, 3), a=U(-2, 2, 3), dt=U(0.001, 0.01)),
     lambda i, o: close(o["v"], i["v"] + i["a"] * col(i["dt"])))
case("velocity_from_positions", inputs(x_prev=U(-1, 1, 3), x=U(-1, 1, 3), dt=U(0.001, 0.01)),
     lambda i, o: close(o["v"], (i["x"] - i["x_prev"]) / col(i["dt"]), rtol=1e-3))

# forces
case("gravity_force", inputs(mass=U(0.5, 2), gravity=U(-9.81, -1, 3)),
     lambda i, o: close(o["f"], i["gravity"] * col(i["mass"])))
case("linear_drag", inputs(v=U(-1, 1, 3), drag=U(0, 1)), lambda i, o: close(o["f"], -i["v"] * col(i["drag"])))
case("quadratic_drag", inputs(v=U(-1, 1, 3), drag=U(0, 1)),
     lambda i, o: close(o["f"], -i["v"] * col(i["drag"] * norm(i["v"]))))
case("wind_drag", inputs(v=U(-1, 1, 3), wind=U(-2, 2, 3), drag=U(0, 1)),
     lambda i, o: close(o["f"], (i["wind"] - i["v"]) * col(i["drag"])))
case("tether_force", inputs(x=U(-1, 1, 3), anchor=U(-1, 1, 3), k=U(1, 20)),
     lambda i, o: close(o["f"], (i["anchor"] - i["x"]) * col(i["k"]), rtol=1e-3))
case("buoyancy_force", inputs(volume=U(0.01, 0.1), rho_fluid=U(0.5, 1.5), gravity=U(-9.81, -1, 3)),
     lambda i, o: close(o["f"], -i["gravity"] * col(i["volume"] * i["rho_fluid"])))


def check_edge(i, o):
    d = i["x_j"] - i["x_i"]
    close(o["length"], norm(d))
    close(o["n"], d / col(norm(d)), atol=1e-4)


case("edge_geometry", inputs(x_i=U(-1, 1, 3), x_j=U(-1, 1, 3)), check_edge)
def stretch_inputs(rng, count, **more):
    length, rest = rng.uniform(0.1, 1, count), rng.uniform(0.1, 1, count)
    return {"length": length, "rest": rest, "stretch": length - rest, **{k: m(rng, count) for k, m in more.items()}}


case("edge_stretch", inputs(length=U(0.1, 1), rest=U(0.1, 1)),
     lambda i, o: close(o["stretch"], i["length"] - i["rest"]))
case("hooke_force", lambda rng, n: stretch_inputs(rng, n, n=lambda r, m: unit_vectors(r, m, 3), k=U(10, 100)),
     lambda i, o: close(o["f"], i["n"] * col(i["k"] * (i["length"] - i["rest"])), rtol=1e-3, atol=1e-4))


def triangles(rng, n):
    x0, x1, x2 = (rng.uniform(-1, 1, (n, 3)) for _ in range(3))
    return {"x0": x0, "x1": x1, "x2": x2, "a": 0.5 * np.cross(x1 - x0, x2 - x0)}


def check_vector_area(i, o):
    c = np.cross(i["x1"] - i["x0"], i["x2"] - i["x0"])
    close(norm(o["a"]), 0.5 * norm(c), atol=1e-6)  # as long as the area (half the parallelogram)
    close(o["a"] / col(norm(o["a"])), c / col(norm(c)), atol=1e-4)  # along the right-hand normal


def check_triangle(i, o):
    c = np.cross(i["x1"] - i["x0"], i["x2"] - i["x0"])
    close(o["area"], 0.5 * norm(c), atol=1e-6)
    close(o["n"], c / col(norm(c)), atol=1e-4)


case("triangle_vector_area", triangles, check_vector_area)
case("triangle_normal_area", triangles, check_triangle)
case("triangle_normal", triangles, lambda i, o: close(o["n"], i["a"] / col(norm(i["a"])), atol=1e-4))


def face_inputs(rng, n):
    t = triangles(rng, n)
    return {**t, "n": t["a"] / col(norm(t["a"])), "area": norm(t["a"]), "v_rel": rng.uniform(-2, 2, (n, 3)),
            "k": rng.uniform(0, 2, n), "p": rng.uniform(0, 5, n)}


def check_normal_drag(i, o):
    vn = dot(i["v_rel"], i["n"])
    close(o["f"], i["n"] * col(-i["k"] * i["area"] * vn * np.abs(vn)), atol=1e-5)
    assert np.all(dot(o["f"], i["n"]) * vn <= 1e-9)  # it always opposes the motion along the normal


case("normal_drag_force", face_inputs, check_normal_drag)
case("inflation_force", face_inputs, lambda i, o: close(o["f"], i["n"] * col(i["p"] * i["area"]), atol=1e-5))


def unit_vectors(rng, n, d):
    v = rng.standard_normal((n, d))
    return v / col(norm(v))


case("tension_only_force", lambda rng, n: stretch_inputs(rng, n, n=lambda r, m: unit_vectors(r, m, 3),
                                                         k=U(10, 100)),
     lambda i, o: close(o["f"], i["n"] * col(i["k"] * np.maximum(i["length"] - i["rest"], 0)), rtol=1e-3, atol=1e-4))
case("spring_damping_force", lambda rng, n: {"n": unit_vectors(rng, n, 3), "v_i": rng.uniform(-1, 1, (n, 3)),
                                             "v_j": rng.uniform(-1, 1, (n, 3)), "kd": rng.uniform(0, 1, n)},
     lambda i, o: close(o["f"], i["n"] * col(i["kd"] * dot(i["v_j"] - i["v_i"], i["n"]))))
case("spring_energy", lambda rng, n: stretch_inputs(rng, n, k=U(10, 100)),
     lambda i, o: close(o["e"], 0.5 * i["k"] * (i["length"] - i["rest"]) ** 2, rtol=1e-3, atol=1e-5))
case("edge_strain", stretch_inputs,
     lambda i, o: close(o["strain"], (i["length"] - i["rest"]) / i["rest"], rtol=1e-4, atol=1e-5))
case("edge_strain", lambda rng, n: {"stretch": rng.uniform(0, 1, n), "rest": np.zeros(n)},
     lambda i, o: (assert_finite(o["strain"]), close(o["strain"], i["stretch"] / 1e-6, rtol=1e-4)), tag="_zero_rest")


def check_penalty(i, o):
    overlap = i["reach"] - i["length"]
    assert np.all(overlap > 0)  # the contact pieces are for touching pairs: the kernel tests it once
    close(o["f"], -i["n"] * col(i["k"] * overlap), rtol=1e-3, atol=1e-3)
    assert np.all(dot(o["f"], i["n"]) <= 1e-6)  # pushes i away from j, never pulls


def touching(rng, n):
    reach = rng.uniform(0.1, 0.4, n)
    return reach, reach * rng.uniform(0.0, 0.99, n)


case("contact_penalty_force", lambda rng, n: dict(zip(("reach", "length"), touching(rng, n)),
                                                  n=unit_vectors(rng, n, 2), k=rng.uniform(100, 1000, n)),
     check_penalty, dim=2)


def pbd_inputs(rng, n, dim=3):
    xi, xj = rng.uniform(-1, 1, (n, dim)), rng.uniform(-1, 1, (n, dim))
    d = xj - xi
    rest = rng.uniform(0.1, 1, n)
    return {"x_i": xi, "x_j": xj, "n": d / col(norm(d)), "length": norm(d), "w_i": rng.uniform(0, 2, n),
            "w_j": rng.uniform(0.1, 2, n), "rest": rest, "c": norm(d) - rest}


def check_projection(i, o):
    xi, xj = i["x_i"] + o["dx_i"], i["x_j"] + o["dx_j"]
    close(norm(xj - xi), i["rest"], rtol=1e-3, atol=1e-4)  # a full projection restores the rest length
    close(o["dx_i"] * col(i["w_j"]) + o["dx_j"] * col(i["w_i"]), 0.0, atol=1e-4)  # momentum: m_i dx_i + m_j dx_j


def contact_pair_inputs(rng, n):
    v_i, v_j, normal = rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, (n, 3)), unit_vectors(rng, n, 3)
    return {"n": normal, "v_i": v_i, "v_j": v_j, "v_rel": v_j - v_i, "vn": dot(v_j - v_i, normal), "kd": rng.uniform(0, 10, n),
            "kt": rng.uniform(0, 5, n)}


def check_contact_damping(i, o):
    vn = dot(i["v_j"] - i["v_i"], i["n"])
    close(o["f"], i["n"] * col(i["kd"] * np.minimum(vn, 0)), atol=1e-5)
    assert np.all(dot(o["f"], i["n"]) <= 1e-6)  # it only ever pushes i away from j


def check_contact_friction(i, o):
    v_rel = i["v_j"] - i["v_i"]
    v_t = v_rel - i["n"] * col(dot(v_rel, i["n"]))
    close(o["f"], v_t * col(i["kt"]), atol=1e-5)
    close(dot(o["f"], i["n"]), 0.0, atol=1e-5)  # tangential only


case("contact_damping_force", contact_pair_inputs, check_contact_damping)
case("contact_friction_force", contact_pair_inputs, check_contact_friction)


def check_tether(i, o):
    xi, xj = i["x_i"] + o["dx_i"], i["x_j"] + o["dx_j"]
    close(norm(xj - xi), np.minimum(i["length"], i["rest"]), rtol=1e-3, atol=1e-4)  # pulled back to rest, never pushed
    close(o["dx_i"] * col(i["w_j"]) + o["dx_j"] * col(i["w_i"]), 0.0, atol=1e-4)


case("tether_projection", lambda rng, n: {**pbd_inputs(rng, n), "relaxation": np.ones(n)}, check_tether)
case("distance_projection", lambda rng, n: {**pbd_inputs(rng, n), "relaxation": np.ones(n)}, check_projection)
case("xpbd_distance", lambda rng, n: {**pbd_inputs(rng, n), "alpha_tilde": np.zeros(n)}, check_projection)


def check_xpbd_compliant(i, o):
    # a time-scaled compliance alpha_tilde leaves c * alpha_tilde / (w_i + w_j + alpha_tilde) of the stretch
    xi, xj = i["x_i"] + o["dx_i"], i["x_j"] + o["dx_j"]
    w = i["w_i"] + i["w_j"]
    close(norm(xj - xi) - i["rest"], i["c"] * i["alpha_tilde"] / (w + i["alpha_tilde"]), rtol=1e-3, atol=1e-4)


case("xpbd_distance", lambda rng, n: {**pbd_inputs(rng, n), "alpha_tilde": rng.uniform(0, 1, n)},
     check_xpbd_compliant, tag="_compliant")
case("averaged_correction", lambda rng, n: {"delta": rng.uniform(-0.1, 0.1, (n, 3)),
                                            "count": rng.integers(0, 5, n), "relaxation": rng.uniform(0.2, 1, n)},
     lambda i, o: close(o["dx"], i["delta"] * col(i["relaxation"] / np.maximum(i["count"], 1))))

# collisions: detect, then the responses where the depth is positive


def check_ground(i, o):
    close(o["depth"], i["ground"] - i["x"][:, 1])
    close(o["n"], np.tile([0.0, 1.0, 0.0], (N, 1)))


case("ground_contact", inputs(x=U(-1, 1, 3), ground=U(-1, 0)), check_ground)


def check_sphere(i, o):
    d = i["x"] - i["center"]
    close(o["depth"], i["radius"] - norm(d), atol=1e-5)
    close(o["n"], d / col(norm(d)), atol=1e-4)
    projected = i["x"] + o["n"] * col(o["depth"])  # what project_out does with them
    close(norm(projected - i["center"]), i["radius"], atol=1e-5)


case("sphere_contact", inputs(x=U(-1, 1, 3), center=U(-0.5, 0.5, 3), radius=U(0.2, 1)), check_sphere)
case("project_out", lambda rng, n: {"x": rng.uniform(-1, 1, (n, 3)), "n": unit_vectors(rng, n, 3),
                                    "depth": rng.uniform(0, 0.2, n)},
     lambda i, o: close(o["x"], i["x"] + i["n"] * col(i["depth"])))


def response_inputs(rng, n):
    return {"v": rng.uniform(-1, 1, (n, 3)), "n": unit_vectors(rng, n, 3), "e": rng.uniform(0, 1, n),
            "mu": rng.uniform(0, 1, n)}


def check_reflect(i, o):
    vn, vn_new = dot(i["v"], i["n"]), dot(o["v"], i["n"])
    close(vn_new, np.where(vn < 0, -i["e"] * vn, vn), atol=1e-5)
    tangent = lambda v: v - i["n"] * col(dot(v, i["n"]))
    close(tangent(o["v"]), tangent(i["v"]), atol=1e-5)


def check_coulomb(i, o):
    vn, vn_new = dot(i["v"], i["n"]), dot(o["v"], i["n"])
    close(vn_new, np.where(vn < 0, -i["e"] * vn, vn), atol=1e-5)
    vt, vt_new = (norm(v - i["n"] * col(dot(v, i["n"]))) for v in (i["v"], o["v"]))
    hit = vn < 0
    bound = i["mu"] * (1 + i["e"]) * np.abs(vn)  # friction takes at most mu times the normal change
    close(vt_new[hit], np.maximum(vt[hit] - bound[hit], 0), atol=1e-5)
    close(o["v"][~hit], i["v"][~hit])


case("reflect_velocity", response_inputs, check_reflect)
case("coulomb_response", response_inputs, check_coulomb)
case("inelastic_response", response_inputs,
     lambda i, o: close(dot(o["v"], i["n"]), np.maximum(dot(i["v"], i["n"]), 0), atol=1e-5))


def check_box(i, o):
    lo, hi = i["lower"], i["upper"]
    assert np.all(o["x"] >= lo - 1e-6) and np.all(o["x"] <= hi + 1e-6)
    leaving = ((i["x"] < lo) & (i["v"] < 0)) | ((i["x"] > hi) & (i["v"] > 0))
    close(o["v"], np.where(leaving, -i["v"] * col(i["e"]), i["v"]))


case("box_container", inputs(x=U(-1.2, 1.2, 3), v=U(-1, 1, 3), lower=U(-1, -0.6, 3), upper=U(0.6, 1, 3),
                             e=U(0, 1)), check_box)


def check_penalty_ground(i, o):
    depth = np.maximum(i["ground"] - i["x"][:, 1], 0)
    fn = np.maximum(depth * (i["ke"] - i["kd"] * i["v"][:, 1]), 0)
    close(o["f"][:, 1], fn, rtol=1e-3, atol=1e-3)
    assert np.all(o["f"][depth == 0] == 0) and np.all(o["f"][:, 1] >= 0)


case("ground_penalty_force", inputs(x=U(-1, 1, 2), v=U(-1, 1, 2), ground=U(-1, 0), ke=U(100, 1000), kd=U(0, 10)),
     check_penalty_ground, dim=2)

# stencils, on polynomials they are exact for


def stencil_inputs(dim: int, f: Callable, vector: bool = False):
    """Values of ``f`` at a cell and its neighbours, spacing ``1 / inv_dx``, around random centers."""
    sides = ("left", "right", "down", "up", "back", "front")[: 2 * dim]

    def make(rng, n):
        h = rng.uniform(0.05, 0.2, n)
        p0 = rng.uniform(-1, 1, (n, dim))
        coeffs = rng.uniform(-1, 1, (n, 9))
        out = {"inv_dx": 1.0 / h, "c": f(p0, coeffs), "_h": h, "_coeffs": coeffs, "_p0": p0}
        for s, side in enumerate(sides):
            step = np.zeros((n, dim))
            step[:, s // 2] = h * (1 if s % 2 else -1)
            out[side] = f(p0 + step, coeffs)
        return out

    return make


def quadratic(p, c):  # sum_a c_a x_a^2 + c_{a+3} x_a + c_7
    d = p.shape[1]
    return sum(c[:, a] * p[:, a] ** 2 + c[:, a + 3] * p[:, a] for a in range(d)) + c[:, 7]


def linear_field(p, c):  # u = A p with A = c[:, :d*d]
    d = p.shape[1]
    return np.einsum("nij,nj->ni", c[:, : d * d].reshape(-1, d, d), p)


for d in (2, 3):
    case(f"laplacian_{d}d", stencil_inputs(d, quadratic),
         lambda i, o, d=d: close(o["lap"], 2 * i["_coeffs"][:, :d].sum(axis=1), rtol=1e-2, atol=2e-2), dim=d, f64=True)
    case(f"lattice_laplacian_{d}d", stencil_inputs(d, quadratic),
         lambda i, o, d=d: close(o["lap"], 2 * i["_coeffs"][:, :d].sum(axis=1) * i["_h"] ** 2, atol=1e-6),
         dim=d, f64=True)
    case(f"central_gradient_{d}d", stencil_inputs(d, quadratic),
         lambda i, o, d=d: close(o["grad"], 2 * i["_coeffs"][:, :d] * i["_p0"] + i["_coeffs"][:, 3:3 + d],
                                 atol=1e-8), dim=d, f64=True)
    case(f"central_difference_{d}d", stencil_inputs(d, quadratic),  # the gradient times 2h: its direction
         lambda i, o, d=d: close(o["grad"], (2 * i["_coeffs"][:, :d] * i["_p0"] + i["_coeffs"][:, 3:3 + d])
                                 * 2 * i["_h"][:, None], atol=1e-8), dim=d, f64=True)
    case(f"central_divergence_{d}d", lambda rng, n, d=d: _with_trace(stencil_inputs(d, linear_field)(rng, n), d),
         lambda i, o: close(o["div"], i["_trace"], atol=1e-8), dim=d, f64=True)
    case(f"jacobi_pressure_{d}d", lambda rng, n, d=d: {**stencil_inputs(d, quadratic)(rng, n),
                                                       "div": rng.uniform(-1, 1, n), "dx": rng.uniform(0.05, 0.2, n)},
         lambda i, o, d=d: close(o["p"], (sum(i[s] for s in ("left", "right", "down", "up", "back", "front")[:2 * d])
                                          - i["div"] * i["dx"] ** 2) / (2 * d), atol=1e-5), dim=d)


def _with_trace(values: dict, d: int) -> dict:
    values["_trace"] = np.trace(values["_coeffs"][:, : d * d].reshape(-1, d, d), axis1=1, axis2=2)
    return values


def _with_curl(values: dict) -> dict:
    A = values["_coeffs"][:, :4].reshape(-1, 2, 2)
    values["_curl"] = A[:, 1, 0] - A[:, 0, 1]
    return values


case("vorticity_2d", lambda rng, n: _with_curl(stencil_inputs(2, linear_field)(rng, n)),
     lambda i, o: close(o["curl"], i["_curl"], atol=1e-5), dim=2)
case("explicit_diffusion", inputs(c=U(-1, 1), lap=U(-10, 10), kappa=U(0, 0.1), dt=U(0.001, 0.01)),
     lambda i, o: close(o["c"], i["c"] + i["kappa"] * i["dt"] * i["lap"]))
case("subtract_gradient", inputs(u=U(-1, 1, 2), grad=U(-1, 1, 2)), lambda i, o: close(o["u"], i["u"] - i["grad"]),
     dim=2)
case("wave_step", inputs(c=U(-1, 1), prev=U(-1, 1), lap=U(-10, 10), speed=U(0.1, 1), dt=U(0.001, 0.01)),
     lambda i, o: close(o["c"], 2 * i["c"] - i["prev"] + (i["speed"] * i["dt"]) ** 2 * i["lap"]))


def check_gray_scott(i, o):
    uvv = i["u"] * i["v"] ** 2
    close(o["u"], i["u"] + i["dt"] * (i["du"] * i["lap_u"] - uvv + i["feed"] * (1 - i["u"])))
    close(o["v"], i["v"] + i["dt"] * (i["dv"] * i["lap_v"] + uvv - (i["feed"] + i["kill"]) * i["v"]))


case("gray_scott", inputs(u=U(0, 1), v=U(0, 1), lap_u=U(-1, 1), lap_v=U(-1, 1), du=U(0.1, 0.2), dv=U(0.05, 0.1),
                          feed=U(0.01, 0.06), kill=U(0.04, 0.07), dt=U(0.5, 1)), check_gray_scott)

# sampling: multilinear interpolation reproduces affine fields, splats conserve


GRID2, GRID3 = (8, 6), (5, 6, 4)


def affine_grid(shape, components: int = 0):
    """A field a + b.i (per component) on ``shape``, and the function itself."""
    coeffs = np.random.default_rng(7).uniform(-1, 1, (max(components, 1), len(shape) + 1))

    def f(p):  # p: (..., dim) in grid units
        vals = coeffs[:, 0] + np.einsum("...a,ca->...c", p, coeffs[:, 1:])
        return vals if components else vals[..., 0]

    nodes = np.stack(np.meshgrid(*(np.arange(s) for s in shape), indexing="ij"), axis=-1).astype(np.float64)
    return f(nodes), f


def sample_case(dim: int, vector: bool) -> None:
    shape = GRID2 if dim == 2 else GRID3
    field_values, f = affine_grid(shape, dim if vector else 0)
    hi = np.array(shape) - 1.0

    def make(rng, n):
        return {"field": field_values, "p": rng.uniform(-1.0, hi + 1.0, (n, dim))}

    def check(i, o):
        close(o["value"], f(np.clip(i["p"], 0, hi)), atol=1e-4)  # outside the grid: its border

    name = ("bilinear", "trilinear")[dim - 2] + "_sample" + ("_vector" if vector else "")
    case(name, make, check, dim=dim, grids={"field": shape})


def splat_case(dim: int, vector: bool) -> None:
    shape = GRID2 if dim == 2 else GRID3
    hi = np.array(shape) - 1.0
    name = ("bilinear", "trilinear")[dim - 2] + "_splat" + ("_vector" if vector else "")

    def make(rng, n):
        value = rng.uniform(0.5, 1.0, (n, dim) if vector else n)
        # a few points past the border: they splat nothing
        return {"field": np.zeros(shape + ((dim,) if vector else ())), "p": rng.uniform(-0.3, hi + 0.3, (n, dim)),
                "value": value}

    CASES.append(Case(name, make, None, dim=dim, grids={"field": shape}))


for dim in (2, 3):
    for vector in (False, True):
        sample_case(dim, vector)
        splat_case(dim, vector)
def sdf_inputs(dim):
    shape = GRID2 if dim == 2 else GRID3
    field_values, f = affine_grid(shape)

    def make(rng, n):
        origin, inv_dx = rng.uniform(-1, -0.5, (n, dim)), rng.uniform(2, 3, n)
        p = rng.uniform(1.0, np.array(shape) - 2.0, (n, dim))  # well inside: the stencil stays off the border
        return {"sdf": field_values, "x": origin + p / col(inv_dx), "origin": origin, "inv_dx": inv_dx,
                "radius": rng.uniform(0.05, 0.2, n), "_phi": f(p), "_grad": np.tile(grad_of(f, dim), (n, 1))}

    return make


def grad_of(f, dim):
    return np.array([f(np.eye(dim)[a]) - f(np.zeros(dim)) for a in range(dim)])


def check_sdf(i, o):
    close(o["depth"], i["radius"] - i["_phi"], atol=1e-4)
    close(o["n"], i["_grad"] / col(norm(i["_grad"])), atol=1e-4)


for dim in (2, 3):
    case("sdf_contact", sdf_inputs(dim), check_sdf, dim=dim, grids={"sdf": GRID2 if dim == 2 else GRID3},
         tag=f"_{dim}d")
case("world_to_grid", inputs(x=U(-1, 1, 3), origin=U(-1, -0.5, 3), inv_dx=U(5, 20)),
     lambda i, o: close(o["p"], (i["x"] - i["origin"]) * col(i["inv_dx"]), rtol=1e-4, atol=1e-4))


def check_falloff(i, o):
    t = np.clip(i["dist"] / i["radius"], 0, 1)
    close(o["weight"], 1 - t * t * (3 - 2 * t), atol=1e-5)


case("smooth_falloff", inputs(dist=U(0, 1.2), radius=U(0.2, 1)), check_falloff)

# advection
case("backtrace_euler", inputs(p=U(0, 8, 2), u=U(-1, 1, 2), dt=U(0.001, 0.01), inv_dx=U(5, 20)),
     lambda i, o: close(o["p"], i["p"] - i["u"] * col(i["dt"] * i["inv_dx"]), atol=1e-5), dim=2)
UNIFORM_U = np.array([0.3, -0.2])
case("backtrace_rk2", lambda rng, n: {"p": rng.uniform(1, 6, (n, 2)), "u": np.tile(UNIFORM_U, (n, 1)),
                                      "velocity": np.tile(UNIFORM_U, GRID2 + (1,)), "dt": rng.uniform(0.001, 0.01, n),
                                      "inv_dx": rng.uniform(5, 20, n)},
     lambda i, o: close(o["p"], i["p"] - i["u"] * col(i["dt"] * i["inv_dx"]), atol=1e-5),  # uniform flow: Euler
     dim=2, grids={"velocity": GRID2})
case("nonnegative", inputs(c=U(-1, 1)), lambda i, o: close(o["c"], np.maximum(i["c"], 0)))
case("grid_decay", lambda rng, n: {"c": rng.uniform(-1, 1, n),
                                   "factor": np.exp(-rng.uniform(0, 2, n) * rng.uniform(0.001, 0.01, n))},
     lambda i, o: close(o["c"], i["c"] * i["factor"]))

# transforms
case("transform_point", lambda rng, n: {"xform": transforms(rng, n), "p": rng.uniform(-0.5, 0.5, (n, 3))},
     lambda i, o: close(o["p"], i["xform"][:, :3] + mat_vec(quat_matrix(i["xform"][:, 3:]), i["p"]), atol=1e-5))
case("transform_vector", lambda rng, n: {"xform": transforms(rng, n), "d": rng.uniform(-1, 1, (n, 3))},
     lambda i, o: close(o["d"], mat_vec(quat_matrix(i["xform"][:, 3:]), i["d"]), atol=1e-5))


def check_inverse(i, o):
    R = quat_matrix(i["xform"][:, 3:])
    close(mat_vec(R, o["p"]) + i["xform"][:, :3], i["p"], atol=1e-5)  # mapping back gives the world point


for tag in ("", "_2"):  # both spellings the piece writes
    case("inverse_transform_point", lambda rng, n: {"xform": transforms(rng, n), "p": rng.uniform(-1, 1, (n, 3))},
         check_inverse, tag=tag)
case("quat_rotate", lambda rng, n: {"q": unit_quats(rng, n), "d": rng.uniform(-1, 1, (n, 3))},
     lambda i, o: close(o["d"], mat_vec(quat_matrix(i["q"]), i["d"]), atol=1e-5))


case("quat_rotate_inv", lambda rng, n: {"q": unit_quats(rng, n), "d": rng.uniform(-1, 1, (n, 3))},
     lambda i, o: close(mat_vec(quat_matrix(i["q"]), o["d"]), i["d"], atol=1e-5))


def check_spin(i, o):
    w, dt = i["omega"], i["dt"]
    k = w / col(norm(w))
    th = col(norm(w) * dt)
    v = i["d"]
    close(o["d"], v * np.cos(th) + np.cross(k, v) * np.sin(th) + k * col(dot(k, v)) * (1 - np.cos(th)), atol=1e-5)


case("spin_rotation", inputs(omega=U(-2, 2, 3), dt=U(0.001, 0.1), d=U(-1, 1, 3)), check_spin)


def check_axis_angle(i, o):
    k = i["axis"] / col(norm(i["axis"]))
    v, th = i["d"], col(i["angle"])
    rodrigues = v * np.cos(th) + np.cross(k, v) * np.sin(th) + k * col(dot(k, v)) * (1 - np.cos(th))
    close(o["d"], rodrigues, atol=1e-5)


case("axis_angle_rotation", inputs(axis=U(-1, 1, 3), angle=U(-3.14, 3.14), d=U(-1, 1, 3)), check_axis_angle)


def check_quat_step(i, o):
    close(norm(o["q"]), 1.0, atol=1e-5)
    # to first order the rotation turns by omega * dt: compare with the exact exponential map
    w = i["omega"]
    angle = norm(w) * i["dt"]
    axis = w / col(norm(w))
    dq = np.concatenate([axis * np.sin(col(angle) / 2), np.cos(col(angle) / 2)], axis=1)
    exact = np.einsum("nij,njk->nik", quat_matrix(dq), quat_matrix(i["q"]))
    close(quat_matrix(o["q"]), exact, atol=1e-4)


case("integrate_quaternion", lambda rng, n: {"q": unit_quats(rng, n), "omega": rng.uniform(-2, 2, (n, 3)),
                                             "dt": rng.uniform(0.001, 0.01, n)}, check_quat_step)
case("rigid_point_velocity", inputs(v=U(-1, 1, 3), omega=U(-2, 2, 3), r=U(-1, 1, 3)),
     lambda i, o: close(o["v"], i["v"] + np.cross(i["omega"], i["r"])))


def check_euler(i, o):
    R = quat_matrix(i["q"])
    Rt = np.transpose(R, (0, 2, 1))
    wb_, tb = mat_vec(Rt, i["omega"]), mat_vec(Rt, i["torque"])
    I = i["inertia"]
    w_dot = (tb - np.cross(wb_, I * wb_)) * i["inv_inertia"]
    close(o["omega"], mat_vec(R, wb_ + w_dot * col(i["dt"])), atol=1e-5)


def euler_inputs(rng, n):
    inertia = rng.uniform(0.5, 2, (n, 3))
    inv_inertia = np.where(rng.uniform(0, 1, (n, 3)) < 0.2, 0.0, 1.0 / inertia)  # some axes held (kinematic)
    return {"q": unit_quats(rng, n), "omega": rng.uniform(-2, 2, (n, 3)), "torque": rng.uniform(-1, 1, (n, 3)),
            "inertia": inertia, "inv_inertia": inv_inertia, "dt": rng.uniform(0.001, 0.01, n)}


case("euler_rotation_step", euler_inputs, check_euler)
case("angular_damping", lambda rng, n: {"omega": rng.uniform(-2, 2, (n, 3)),
                                        "factor": np.exp(-rng.uniform(0, 2, n) * rng.uniform(0.001, 0.01, n))},
     lambda i, o: close(o["omega"], i["omega"] * col(i["factor"])))

# small dense linear algebra
case("outer_product", inputs(a=U(-1, 1, 3), b=U(-1, 1, 3)),
     lambda i, o: close(o["m"], np.einsum("ni,nj->nij", i["a"], i["b"])))


def check_system(i, o):
    A = o["A"]
    m_dt2 = i["mass"] / i["dt"] ** 2
    close(A, eye(N, 3) * m_dt2[:, None, None] + np.einsum("ni,nj->nij", i["n"], i["n"]) * i["k"][:, None, None],
          rtol=1e-4)
    assert np.all(np.linalg.eigvalsh(A) > 0)  # symmetric positive definite


case("implicit_spring_system", lambda rng, n: {"mass": rng.uniform(0.5, 2, n), "dt": rng.uniform(0.001, 0.01, n),
                                               "k": rng.uniform(10, 100, n), "n": unit_vectors(rng, n, 3)},
     check_system)


def spd(rng, n):
    M = rng.uniform(-1, 1, (n, 3, 3))
    return np.einsum("nij,nkj->nik", M, M) + eye(n, 3)


case("solve_3x3", lambda rng, n: {"A": spd(rng, n), "b": rng.uniform(-1, 1, (n, 3))},
     lambda i, o: close(mat_vec(i["A"], o["x"]), i["b"], atol=1e-4))


def check_polar(i, o):
    R = o["R"]
    close(np.einsum("nji,njk->nik", R, R), eye(N, 3), atol=1e-4)
    close(np.linalg.det(R), 1.0, atol=1e-4)  # a rotation, never a reflection
    S = np.einsum("nji,njk->nik", R, i["F"])  # R^T F is the symmetric stretch
    close(S, np.transpose(S, (0, 2, 1)), atol=1e-4)


case("polar_rotation", inputs(F=U(-1, 1, 3, 3)), check_polar, f64=True)  # svd3 in float32 is good to ~1e-3
case("pull_to_goal", lambda rng, n: {"R": quat_matrix(unit_quats(rng, n)), "q": rng.uniform(-0.5, 0.5, (n, 3)),
                                     "c": rng.uniform(-1, 1, (n, 3)), "x": rng.uniform(-1, 1, (n, 3)),
                                     "stiffness": rng.uniform(0.1, 1, n)},
     lambda i, o: close(o["x"], i["x"] + (i["c"] + mat_vec(i["R"], i["q"]) - i["x"]) * col(i["stiffness"]), atol=1e-5))

# elasticity


def rest_and_deformed(rng, n, d):
    """Rest vertices, a random affine map A, and the deformed edge matrix Ds with Dm^-1: F must be A."""
    X = rng.uniform(-1, 1, (n, d + 1, d))
    Dm = np.transpose(X[:, 1:] - X[:, :1], (0, 2, 1))
    A = eye(n, d) + rng.uniform(-0.3, 0.3, (n, d, d))
    x = np.einsum("nij,nvj->nvi", A, X) + rng.uniform(-1, 1, (n, 1, d))
    Ds = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))
    return {"Ds": Ds, "Dm_inv": np.linalg.inv(Dm), "_A": A, "_x": x}


def cof(F):
    return np.linalg.det(F)[:, None, None] * np.transpose(np.linalg.inv(F), (0, 2, 1))


def sym(F):
    return 0.5 * (F + np.transpose(F, (0, 2, 1)))


def tr(M):
    return np.trace(M, axis1=1, axis2=2)[:, None, None]


def material_inputs(rng, n, d, near_identity=True):
    F = eye(n, d) + rng.uniform(-0.2, 0.2, (n, d, d))
    F[: n // 4] = np.eye(d)  # the rest state: every model gives zero stress there
    return {"F": F, "mu": rng.uniform(10, 100, n), "lam": rng.uniform(10, 100, n)}


def check_stress(reference):
    def check(i, o):
        close(o["P"], reference(i["F"], i["mu"][:, None, None], i["lam"][:, None, None]), rtol=2e-3, atol=2e-3)
        close(o["P"][: N // 4], 0.0, atol=1e-3)

    return check


case("deformation_from_displacement", inputs(H=U(-0.2, 0.2, 3, 3)), lambda i, o: close(o["F"], eye(N, 3) + i["H"]))
case("edge_matrix_tri", inputs(x0=U(-1, 1, 2), x1=U(-1, 1, 2), x2=U(-1, 1, 2)),
     lambda i, o: close(o["Ds"], np.stack([i["x1"] - i["x0"], i["x2"] - i["x0"]], axis=-1)), dim=2)
case("edge_matrix_tet", inputs(x0=U(-1, 1, 3), x1=U(-1, 1, 3), x2=U(-1, 1, 3), x3=U(-1, 1, 3)),
     lambda i, o: close(o["Ds"], np.stack([i["x1"] - i["x0"], i["x2"] - i["x0"], i["x3"] - i["x0"]], axis=-1)))
case("deformation_gradient", lambda rng, n: rest_and_deformed(rng, n, 3),
     lambda i, o: close(o["F"], i["_A"], atol=1e-6), f64=True)
case("deformation_gradient", lambda rng, n: rest_and_deformed(rng, n, 2),
     lambda i, o: close(o["F"], i["_A"], atol=1e-6), dim=2, f64=True, tag="_2d")


def check_lame(i, o):
    E, nu = i["E"], i["nu"]
    close(o["mu"], E / (2 * (1 + nu)), rtol=1e-5)
    close(o["lam"], E * nu / ((1 + nu) * (1 - 2 * nu)), rtol=1e-4)


case("lame_parameters", inputs(E=U(100, 1000), nu=U(0.1, 0.45)), check_lame)
case("small_strain", inputs(F=U(-1, 1, 3, 3)), lambda i, o: close(o["eps"], sym(i["F"]) - eye(N, 3)))
case("green_strain", inputs(F=U(-1, 1, 2, 2)),
     lambda i, o: close(o["eps"], 0.5 * (np.einsum("nji,njk->nik", i["F"], i["F"]) - eye(N, 2)), atol=1e-6), dim=2)
case("green_strain", lambda rng, n: {"F": quat_matrix(unit_quats(rng, n))},
     lambda i, o: close(o["eps"], 0.0, atol=1e-5), tag="_rotation")  # a rigid rotation does not strain


def lame_hooke(e, mu, lam):
    d = e.shape[1]
    return 2 * mu * e + lam * tr(e) * eye(N, d)


def strain_inputs(rng, n, d=3):
    return {"eps": rng.uniform(-0.2, 0.2, (n, d, d)), "E": rng.uniform(-0.2, 0.2, (n, d, d)),
            "F": eye(n, d) + rng.uniform(-0.2, 0.2, (n, d, d)), "mu": rng.uniform(10, 100, n),
            "lam": rng.uniform(10, 100, n)}


case("linear_elastic_stress", strain_inputs,
     lambda i, o: close(o["P"], lame_hooke(i["eps"], i["mu"][:, None, None], i["lam"][:, None, None]), rtol=1e-4))
case("stvk_stress", lambda rng, n: strain_inputs(rng, n, 2),
     lambda i, o: close(o["P"], np.einsum("nij,njk->nik", i["F"], lame_hooke(i["E"], i["mu"][:, None, None],
                                                                             i["lam"][:, None, None])), rtol=1e-4),
     dim=2)


def check_energy_density(i, o):
    e, mu, lam = i["eps"], i["mu"], i["lam"]
    close(o["psi"], mu * np.sum(e * e, axis=(1, 2)) + 0.5 * lam * np.trace(e, axis1=1, axis2=2) ** 2, rtol=1e-4)


case("quadratic_energy_density", strain_inputs, check_energy_density)


for d in (2, 3):
    case("stable_neo_hookean_stress", lambda rng, n, d=d: material_inputs(rng, n, d),
         check_stress(lambda F, mu, lam: mu * F + lam * (np.linalg.det(F)[:, None, None] - 1 - mu / lam) * cof(F)),
         dim=d, tag=f"_{d}d")
case("stable_neo_hookean_stress", lambda rng, n: {**material_inputs(rng, n, 3), "F": rng.uniform(-1, 1, (n, 3, 3))},
     lambda i, o: close(o["P"], i["mu"][:, None, None] * i["F"] + i["lam"][:, None, None]
                        * (np.linalg.det(i["F"])[:, None, None] - 1 - (i["mu"] / i["lam"])[:, None, None])
                        * cof(i["F"]), rtol=2e-3, atol=2e-3), tag="_inverted")  # finite for any F
case("neo_hookean_stress", lambda rng, n: material_inputs(rng, n, 3),
     check_stress(lambda F, mu, lam: mu * (F - np.transpose(np.linalg.inv(F), (0, 2, 1)))
                  + lam * np.log(np.linalg.det(F))[:, None, None] * np.transpose(np.linalg.inv(F), (0, 2, 1))))


def check_element_forces(i, o):
    H = -i["volume"][:, None, None] * np.einsum("nij,nkj->nik", i["P"], i["Dm_inv"])
    close(o["H"], H, rtol=1e-4, atol=1e-5)


case("element_forces", inputs(P=U(-1, 1, 3, 3), Dm_inv=U(-2, 2, 3, 3), volume=U(0.01, 0.1)), check_element_forces)


def check_von_mises(i, o):
    sigma = np.einsum("nij,nkj->nik", i["P"], i["F"]) / np.linalg.det(i["F"])[:, None, None]
    dev = sigma - eye(len(sigma), 3) * (np.trace(sigma, axis1=1, axis2=2) / 3.0)[:, None, None]
    close(o["s"], np.sqrt(1.5 * np.sum(dev * dev, axis=(1, 2))), rtol=1e-4, atol=1e-5)
    half = N // 2  # uniaxial Cauchy stress: the stress itself; hydrostatic: none
    close(o["s"][:half], np.abs(sigma[:half, 0, 0]), rtol=1e-4, atol=1e-5)
    close(o["s"][half:], 0.0, atol=1e-4)


def uniaxial_and_hydrostatic(rng, n):
    """A Cauchy stress that is uniaxial (first half) or hydrostatic (second half), pulled back to P = J sigma F^-T
    through a random deformation gradient, so the piece must push it forward again."""
    F = eye(n, 3) + rng.uniform(-0.2, 0.2, (n, 3, 3))
    sigma = np.zeros((n, 3, 3))
    sigma[: n // 2, 0, 0] = rng.uniform(-1, 1, n // 2)
    sigma[n // 2:] = eye(n - n // 2, 3) * rng.uniform(-1, 1, (n - n // 2, 1, 1))
    J = np.linalg.det(F)[:, None, None]
    P = J * np.einsum("nij,nkj->nik", sigma, np.linalg.inv(F))
    return {"P": P, "F": F}


case("von_mises_stress", uniaxial_and_hydrostatic, check_von_mises)


def inverted_and_flat(rng, n):
    """Deformation gradients of inverted elements (first half: a column flipped, J < 0) and of flattened
    ones (second half: the third edge collapsed, J = 0 exactly), with stresses of any sign."""
    F = eye(n, 3) + rng.uniform(-0.2, 0.2, (n, 3, 3))
    F[: n // 2, :, 0] *= -1.0
    F[n // 2:, :, 2] = 0.0
    return {"P": rng.uniform(-1, 1, (n, 3, 3)), "F": F}


def von_mises_np(sigma):
    dev = sigma - eye(len(sigma), 3) * (np.trace(sigma, axis1=1, axis2=2) / 3.0)[:, None, None]
    return np.sqrt(1.5 * np.sum(dev * dev, axis=(1, 2)))


def check_von_mises_degenerate(i, o):
    """Inverted elements: the von Mises stress of sigma = P F^T / J, which the sign of J does not change;
    flattened ones: finite, |J| kept at 1e-6 rather than a division by zero."""
    assert_finite(o["s"])
    half = N // 2
    PFt = np.einsum("nij,nkj->nik", i["P"], i["F"])
    close(o["s"][:half], von_mises_np(PFt[:half] / np.linalg.det(i["F"][:half])[:, None, None]), rtol=1e-4, atol=1e-5)
    close(o["s"][half:], von_mises_np(PFt[half:] / 1.0e-6), rtol=1e-4)


case("von_mises_stress", inverted_and_flat, check_von_mises_degenerate, tag="_degenerate")

# particle fluids


def poly6_np(r2, h):
    return np.where(r2 < h * h, (h * h - r2) ** 3, 0.0)


def spiky_grad_np(d, r, h):
    """d/dx_i of (h - r)^3 for d = x_i - x_j, r = |d|, divided by 3: -(h - r)^2 d / r inside the support."""
    inside = (r < h) & (r >= 1e-6)
    return np.where(inside[:, None], -d * ((h - r) ** 2 / np.maximum(r, 1e-6))[:, None], 0.0)


def pair_inputs(rng, n, d=3):
    off = rng.uniform(-0.5, 0.5, (n, d))
    return {"d": off, "r": norm(off), "r2": norm(off) ** 2, "h": rng.uniform(0.2, 0.5, n),
            "mass": rng.uniform(0.5, 2, n), "p_i": rng.uniform(0, 5, n), "p_j": rng.uniform(0, 5, n),
            "rho_i": rng.uniform(0.5, 2, n), "rho_j": rng.uniform(0.5, 2, n), "mu": rng.uniform(0, 0.5, n),
            "v_i": rng.uniform(-1, 1, (n, d)), "v_j": rng.uniform(-1, 1, (n, d))}


case("poly6_density", pair_inputs, lambda i, o: close(o["rho"], i["mass"] * poly6_np(i["r2"], i["h"]), atol=1e-7))
case("poly6_weight", pair_inputs, lambda i, o: close(o["w"], poly6_np(i["r2"], i["h"]), atol=1e-7))
case("tait_pressure", inputs(rho=U(0.5, 2), rho0=U(0.5, 1.5), k=U(1, 10)),
     lambda i, o: close(o["p"], i["k"] * ((i["rho"] / i["rho0"]) ** 7 - 1), rtol=1e-4, atol=1e-4))
case("clamped_linear_pressure", inputs(rho=U(0.5, 2), rho0=U(0.5, 1.5), k=U(1, 10)),
     lambda i, o: close(o["p"], i["k"] * np.maximum(i["rho"] - i["rho0"], 0)))


def check_pressure_pair(i, o):
    """a_i = -m_j (p_i / rho_i^2 + p_j / rho_j^2) grad_i W (Mueller et al. 2003, without the normalisation)."""
    term = i["p_i"] / i["rho_i"] ** 2 + i["p_j"] / i["rho_j"] ** 2
    close(o["a"], -spiky_grad_np(i["d"], i["r"], i["h"]) * (i["mass"] * term)[:, None], rtol=1e-3, atol=1e-5)
    # with positive pressures the acceleration pushes i away from j (along d)
    assert np.all(np.einsum("nk,nk->n", o["a"], i["d"]) >= -1e-6)


def check_viscosity_pair(i, o):
    """a_i = mu m_j (v_j - v_i) / (rho_i rho_j) lap W, lap W = h - r without the normalisation: the viscous
    force density over rho_i, an acceleration."""
    lap = np.maximum(i["h"] - i["r"], 0)
    close(o["a"], (i["v_j"] - i["v_i"]) * (i["mu"] * i["mass"] * lap / (i["rho_i"] * i["rho_j"]))[:, None], atol=1e-5)


case("pressure_pair_acceleration", pair_inputs, check_pressure_pair)
case("viscosity_pair_acceleration", pair_inputs, check_viscosity_pair)
case("xsph_pair", pair_inputs,
     lambda i, o: close(o["dv"], (i["v_j"] - i["v_i"]) * (i["mass"] / i["rho_j"] * poly6_np(i["r2"], i["h"]))[:, None],
                        atol=1e-7))

# reductions
case("kinetic_energy", inputs(m=U(0.5, 2), v=U(-1, 1, 3)),
     lambda i, o: close(o["e"], 0.5 * i["m"] * dot(i["v"], i["v"])))
case("potential_energy", inputs(m=U(0.5, 2), x=U(-1, 1, 3), gravity=U(-9.81, -1, 3)),
     lambda i, o: close(o["e"], -i["m"] * dot(i["gravity"], i["x"]), atol=1e-4))
case("linear_momentum", inputs(m=U(0.5, 2), v=U(-1, 1, 2)), lambda i, o: close(o["p"], i["v"] * col(i["m"])), dim=2)
case("angular_momentum", inputs(m=U(0.5, 2), x=U(-1, 1, 3), v=U(-1, 1, 3)),
     lambda i, o: close(o["L"], np.cross(i["x"], i["v"]) * col(i["m"]), atol=1e-6))
case("mass_moment", inputs(m=U(0.5, 2), x=U(-1, 1, 3)), lambda i, o: close(o["mx"], i["x"] * col(i["m"])))
case("speed", inputs(v=U(-1, 1, 3)), lambda i, o: close(o["s"], norm(i["v"])))


# rays


def ray_inputs(rng, n):
    d = unit_vectors(rng, n, 3)
    return {"o": rng.uniform(-2, 2, (n, 3)), "d": d, "center": rng.uniform(-0.5, 0.5, (n, 3)),
            "radius": rng.uniform(0.2, 1.0, n), "t_max": np.full(n, 50.0), "ground": rng.uniform(-1, 0, n),
            "lower": rng.uniform(-1, -0.6, (n, 3)), "upper": rng.uniform(0.6, 1, (n, 3))}


def first_hit(i, o, inside):
    """The returned distance is a hit on the surface (``inside`` == 0 there) past eps, or the far distance."""
    t = o["t"]
    hit = t < i["t_max"]
    p = i["o"] + i["d"] * col(t)
    assert np.all(t[hit] > 0)
    close(inside(p[hit], i, hit), 0.0, atol=1e-3)
    return hit


def check_ray_sphere(i, o):
    surface = lambda p, i, m: norm(p - i["center"][m]) - i["radius"][m]
    hit = first_hit(i, o, surface)
    oc = i["o"] - i["center"]
    b = dot(oc, i["d"])
    disc = b * b - (dot(oc, oc) - i["radius"] ** 2)
    far_root = -b + np.sqrt(np.maximum(disc, 0))
    assert np.array_equal(hit, (disc >= 0) & (far_root > 1e-4))  # the sphere is met ahead of the origin


def check_ray_ground(i, o):
    hit = first_hit(i, o, lambda p, i, m: p[:, 1] - i["ground"][m])
    t_cross = (i["ground"] - i["o"][:, 1]) / i["d"][:, 1]
    assert np.array_equal(hit, (t_cross > 0) & (t_cross < i["t_max"]))


def check_ray_box(i, o):
    def on_box(p, i, m):  # the point is on the boundary: inside all slabs, on one face
        lo, hi = i["lower"][m], i["upper"][m]
        outside = np.maximum(np.maximum(lo - p, p - hi), 0).max(axis=1)
        face = np.minimum(np.abs(p - lo), np.abs(p - hi)).min(axis=1)
        return outside + face

    first_hit(i, o, on_box)


case("ray_sphere", ray_inputs, check_ray_sphere)
case("ray_ground", ray_inputs, check_ray_ground)
case("ray_box", ray_inputs, check_ray_box)


def axis_rays(rng, n):
    """Rays along a coordinate axis whose origin lies on a slab plane: 0 * 1/0 would be NaN."""
    i = ray_inputs(rng, n)
    axis = rng.integers(0, 3, n)
    i["d"] = np.eye(3)[axis] * rng.choice([-1.0, 1.0], (n, 1))
    i["o"] = rng.uniform(-0.5, 0.5, (n, 3))
    side = (axis + 1) % 3  # on the lower or upper plane of another axis, so it runs along a face
    plane = np.where(rng.random(n) < 0.5, i["lower"][np.arange(n), side], i["upper"][np.arange(n), side])
    i["o"][np.arange(n), side] = plane
    i["o"][np.arange(n), axis] = -2.0 * i["d"][np.arange(n), axis]  # outside, heading in
    return i


def check_ray_box_on_plane(i, o):
    assert_finite(o["t"])
    check_ray_box(i, o)


case("ray_box", axis_rays, check_ray_box_on_plane, tag="_on_plane")
case("hit_point", lambda rng, n: {"o": rng.uniform(-1, 1, (n, 3)), "d": unit_vectors(rng, n, 3),
                                  "t": rng.uniform(0, 5, n)},
     lambda i, o: close(o["p"], i["o"] + i["d"] * col(i["t"]), atol=1e-5))


def check_sphere_normal(i, o):
    close(norm(o["n"]), 1.0, atol=1e-5)
    close(o["n"], (i["p"] - i["center"]) / col(i["radius"]), atol=1e-5)


def on_sphere(rng, n):
    c, r = rng.uniform(-0.5, 0.5, (n, 3)), rng.uniform(0.2, 1, n)
    return {"center": c, "radius": r, "p": c + unit_vectors(rng, n, 3) * col(r)}


case("sphere_normal", on_sphere, check_sphere_normal)
case("lambert", lambda rng, n: {"n": unit_vectors(rng, n, 3), "light": unit_vectors(rng, n, 3)},
     lambda i, o: close(o["shade"], np.maximum(dot(i["n"], i["light"]), 0), atol=1e-6))


def check_reflect_dir(i, o):
    close(norm(o["d"]), 1.0, atol=1e-5)  # a mirror keeps the length
    close(dot(o["d"], i["n"]), -dot(i["d"], i["n"]), atol=1e-5)  # and flips the normal part


case("reflect_direction", lambda rng, n: {"d": unit_vectors(rng, n, 3), "n": unit_vectors(rng, n, 3)},
     check_reflect_dir)


# emission: states are arbitrary 32-bit seeds; the checks are about the distributions


def seeds(rng, n):
    return rng.integers(0, 2**32 - 1, n, dtype=np.uint64)


def check_box_points(i, o):
    assert np.all(o["p"] >= i["lower"] - 1e-6) and np.all(o["p"] <= i["upper"] + 1e-6)


case("random_point_in_box", lambda rng, n: {"state": seeds(rng, n), "lower": rng.uniform(-1, -0.6, (n, 2)),
                                            "upper": rng.uniform(0.6, 1, (n, 2))}, check_box_points, dim=2)


def check_unit_vectors(i, o):
    close(norm(o["d"]), 1.0, atol=1e-5)
    assert np.all(np.abs(o["d"].mean(axis=0)) < 0.35)  # spread over the sphere, not bunched


case("random_unit_vector", lambda rng, n: {"state": seeds(rng, n)}, check_unit_vectors)


def check_ball_points(i, o):
    assert np.all(norm(o["p"] - i["center"]) <= i["radius"] + 1e-5)


case("random_point_in_ball", lambda rng, n: {"state": seeds(rng, n), "center": rng.uniform(-0.5, 0.5, (n, 3)),
                                             "radius": rng.uniform(0.2, 1, n)}, check_ball_points)


def check_angles(i, o):
    a = np.stack([o["a0"], o["a1"], o["a2"]], axis=1)
    close(a.sum(axis=1), np.pi, atol=1e-5)
    e = lambda u, v: (v - u) / col(norm(v - u))
    close(o["a0"], np.arccos(np.clip(dot(e(i["x0"], i["x1"]), e(i["x0"], i["x2"])), -1, 1)), atol=1e-3)
    close(o["a1"], np.arccos(np.clip(dot(e(i["x1"], i["x0"]), e(i["x1"], i["x2"])), -1, 1)), atol=1e-3)


def triangle_edges(rng, n):
    x0, x1, x2 = (rng.uniform(-1, 1, (n, 3)) for _ in range(3))
    return {"x0": x0, "x1": x1, "x2": x2, "e1": x1 - x0, "e2": x2 - x0}


case("corner_angles", triangle_edges, check_angles)


# ---------------------------------------------------------------------------------------------
# the tests


@pytest.fixture(scope="module")
def kernels():
    """All case kernels, defined in one Warp module and built for the CPU once (forward only)."""
    handle = wb.define([kernel_source(c) for c in CASES], "test_pieces_cases")
    wp.set_module_options({"enable_backward": False, "optimization_level": 0}, handle.module)
    wp.load_module(handle.module, device="cpu")
    yield handle.namespace
    handle.release()


def test_every_piece_has_a_case():
    assert sorted(set(PIECES) - {c.piece for c in CASES}) == []


def test_pieces_declare_what_they_give():
    for p in PIECES.values():
        assert p.says and not p.says.endswith("."), p.name  # a phrase a purpose sentence embeds
        assert set(p.needs).isdisjoint({"tid", "wp"}), p.name


@pytest.mark.parametrize("c", [c for c in CASES if c.check is not None], ids=lambda c: c.name)
def test_piece_against_reference(kernels, c):
    values, outputs = run(c, kernels[c.name])
    c.check(values, outputs)


@pytest.mark.parametrize("c", [c for c in CASES if c.check is None], ids=lambda c: c.name)
def test_splat_conserves_amount_and_first_moment(kernels, c):
    """A multilinear splat hands out each value whole, centred where the point is; a point outside
    the grid hands out nothing."""
    st, dim = c.style, c.dim
    values = c.inputs(np.random.default_rng(3), N)
    kind = "vec" if values["value"].ndim == 2 else "scalar"
    field = wp.zeros(c.grids["field"], dtype=getattr(wp, st.wtype(kind).name), device="cpu")
    p = wp.array(values["p"].astype(np.float32), dtype=getattr(wp, st.wtype("vec").name), device="cpu")
    value = wp.array(values["value"].astype(np.float32), dtype=getattr(wp, st.wtype(kind).name), device="cpu")
    wp.launch(kernels[c.name], N, inputs=[field, p, value], device="cpu")
    grid = field.numpy().astype(np.float64)
    inside = np.all((values["p"] >= 0.0) & (values["p"] <= np.array(c.grids["field"]) - 1.0), axis=1)
    assert 0 < inside.sum() < len(inside)
    values = {k: v[inside] for k, v in values.items() if k != "field"}
    amount = grid.reshape(-1, *grid.shape[dim:]).sum(axis=0)
    close(amount, values["value"].sum(axis=0), rtol=1e-4)
    nodes = np.stack(np.meshgrid(*(np.arange(s) for s in c.grids["field"]), indexing="ij"), axis=-1)
    weights = grid if kind == "scalar" else grid[..., 0]
    moment = (weights[..., None] * nodes).reshape(-1, dim).sum(axis=0)
    first = values["value"] if kind == "scalar" else values["value"][:, 0]
    close(moment, (first[:, None] * values["p"]).sum(axis=0), rtol=1e-4)
