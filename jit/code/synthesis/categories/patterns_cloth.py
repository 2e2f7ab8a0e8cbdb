"""Pattern family of cloth: triangle drag and lift, area preservation, vertex normals and
dihedral bending across the edges two triangles share.

Element kernels run one thread per triangle (or per hinge) and scatter their forces to the
vertices with atomics, so a degenerate element may return early; an output the element owns
(its energy, its angle) is written before that. Index arrays stay within the vertex arrays.
See ``patterns`` for how a pattern family is written. What it leaves out: triangle and
tetrahedron elasticity (``patterns_solid``) and self-collision.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.categories.patterns import INDENT, VEC4I, Flavour, Pattern
from jit.code.synthesis.pieces.kit import PLAIN
from jit.code.synthesis.categories.patterns_solid import element_indices


@register("cloth", 1.0, source="patterns")
def cloth(rng, name, suffix, complexity):
    p = Pattern(rng, name, suffix, complexity, Flavour(plain=rng.random() < PLAIN))
    n = rng.choice((8, 16, 32, 64))
    p.kb.dims = [n]
    n_vertices = rng.choice((8, 16, 32))
    kind = rng.choice(("aero", "area", "normals", "bending"))
    x = p.array(rng.choice(("positions", "x", "particle_q")), T.VEC3F, lo=-1.0, hi=1.0, shape=(n_vertices,))
    if kind == "bending":
        p.guard("tid", None, (rng.choice(("num_edges", "num_hinges")), n), p=0.12)
        return _bending(p, x, n_vertices)
    p.guard("tid", None, (rng.choice(("num_tris", "num_triangles")), n), p=0.12)
    names = element_indices(p, 3, n_vertices)
    # the edge vectors each corner's area gradient crosses with the normal
    opposite = ["x2 - x1", "x0 - x2", "x1 - x0"]
    weights = p.pick("area", "unit", "angle") if kind == "normals" else None
    if weights == "angle" or p.coin():
        p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)), "n = wp.cross(x1 - x0, x2 - x0)")
    else:  # edges first, as the derivation writes them
        p.add(f"x0 = {x}[{names[0]}]", f"e1 = {x}[{names[1]}] - x0", f"e2 = {x}[{names[2]}] - x0",
              "n = wp.cross(e1, e2)")
        opposite = ["e2 - e1", "-e2", "e1"]
    if kind == "normals":
        return _vertex_normals(p, names, n_vertices, weights)
    p.add(f"area = 0.5 * {p.length('n')}")
    if kind == "aero":
        _unit_normal(p)
        forces = p.array(rng.choice(("forces", "particle_f")), T.VEC3F, rng.choice(("out", "inout")),
                         shape=(n_vertices,))
        return _aero(p, x, names, forces, n_vertices)
    return _area(p, names, opposite, n_vertices)


def _unit_normal(p: Pattern) -> None:
    """An early exit for degenerate triangles, then ``n`` made unit from the area already taken."""
    p.why(("a degenerate triangle has no normal and feels no force", "skip zero-area triangles: no normal to push along"))
    p.add("if area < 1.0e-8:", f"{INDENT}return", p.pick("n = n / (2.0 * area)", "n = n * (0.5 / area)"))


def _area(p: Pattern, names: list[str], opposite: list[str], n_vertices: int):
    """Forces preserving each triangle's area: the gradient of an energy quadratic in its change."""
    rng = p.rng
    rest = p.array(rng.choice(("rest_area", "tri_area")), T.FLOAT32, lo=0.05, hi=0.5)
    k = p.scalar(rng.choice(("k_area", "area_stiffness")), lo=1.0, hi=50.0)
    relative = p.coin()  # the absolute change of area, or the change relative to the (positive) rest area
    if relative:
        p.add(f"a0 = {rest}[tid]", "c = (area - a0) / a0")
        gain = f"{k} * c / a0"  # dE/dA of E = k c^2 / 2 with c = (A - A0) / A0
    else:
        p.add(f"c = area - {rest}[tid]")
        gain = f"{k} * c"
    if p.chance(0.3):  # the energy is defined for degenerate triangles too: written before the exit
        energy = p.array(rng.choice(("energy", "element_energy")), T.FLOAT32, "out")
        p.add(f"{energy}[tid] = 0.5 * {k} * c * c")
        p.note("writes each triangle's energy")
    _unit_normal(p)
    forces = p.array(rng.choice(("forces", "particle_f")), T.VEC3F, rng.choice(("out", "inout")), shape=(n_vertices,))
    # dA/dx of each corner: half the unit normal crossed with the opposite edge
    if p.coin():
        p.add(*(f"g{c} = wp.cross(n, {e}) * 0.5" for c, e in enumerate(opposite)))
        p.add(f"s = -{gain}", *(f"wp.atomic_add({forces}, {v}, g{c} * s)" for c, v in enumerate(names)))
    else:
        p.add(f"s = -{gain} * 0.5", *(f"wp.atomic_add({forces}, {v}, wp.cross(n, {e}) * s)"
                                      for v, e in zip(names, opposite)))
    change = "relative change of area" if relative else "change of area"
    return p.finish(rng.choice(("area_forces", "preserve_area", "eval_area")), p.kb.dims,
                    purpose=f"Accumulate area-preserving forces on cloth triangles, the gradient of an energy "
                            f"quadratic in the {change}")


def _vertex_normals(p: Pattern, names: list[str], n_vertices: int, weights: str):
    """Area-weighted, unit or angle-weighted face normals scattered to vertices, normalised by a later pass."""
    rng = p.rng
    normals = p.array(rng.choice(("vertex_normals", "normals")), T.VEC3F, "out", shape=(n_vertices,))
    # at most one output besides the vertex normals: each triangle's area, its unit normal, or the
    # lumped (mass) area of each vertex; a kernel that writes more is split in two
    extra = p.pick(*(("faces",) if weights == "angle" else ("areas", "faces", "lumped"))) if p.chance(0.4) else None
    measured = extra in ("areas", "lumped")  # the length of n taken: the area and the unit normal from it
    faces = None
    if measured:
        p.add("n_len = wp.length(n)")
    if extra == "areas":
        tri_areas = p.array(rng.choice(("tri_areas", "face_areas")), T.FLOAT32, "out")
        p.add(f"{tri_areas}[tid] = 0.5 * n_len")
        p.note("writes each triangle's area")
    elif extra == "faces":
        faces = p.array(rng.choice(("face_normals", "tri_normals")), T.VEC3F, "out")
        p.note("writes the unit face normals too")
    lumped = extra == "lumped"
    if lumped:  # a third of the triangle's area (|n| / 2) to each corner
        p.add("a = n_len / 6.0")
    # the length, once taken, also makes the unit normal; a degenerate triangle's unit normal then
    # jumps, so no gradient check (wp.normalize's adjoint is zero there)
    unit = "n / wp.max(n_len, 1.0e-8)" if measured else "wp.normalize(n)"
    p.no_grad = measured and (weights == "unit" or faces is not None)
    if weights == "area":
        if faces:
            p.add(f"{faces}[tid] = {unit}")
    elif weights == "unit":
        p.add(f"n = {unit}")
        if faces:
            p.add(f"{faces}[tid] = n")
    else:  # angle-weighted normals: each corner adds the unit normal times its angle
        p.add("n = wp.normalize(n)")
        if faces:
            p.add(f"{faces}[tid] = n")
        p.add("ab = wp.normalize(x1 - x0)", "ac = wp.normalize(x2 - x0)",
              "bc = wp.normalize(x2 - x1)", "a0 = wp.acos(wp.clamp(wp.dot(ab, ac), -1.0, 1.0))",
              "a1 = wp.acos(wp.clamp(-wp.dot(ab, bc), -1.0, 1.0))", "a2 = wp.pi - a0 - a1",
              *(f"wp.atomic_add({normals}, {v}, n * a{c})" for c, v in enumerate(names)))
        return p.finish(rng.choice(("accumulate_normals", "angle_weighted_normals")), p.kb.dims,
                        purpose="Scatter each triangle's unit normal to its corners, weighted by the corner angles, "
                                "for vertex normals")
    p.add(*(f"wp.atomic_add({normals}, {v}, n)" for v in names))
    if lumped:
        areas = p.array(rng.choice(("vertex_area", "lumped_area")), T.FLOAT32, "out", shape=(n_vertices,))
        p.add(*(f"wp.atomic_add({areas}, {v}, a)" for v in names))
        p.note("gives each corner a third of the triangle's area")
    weighting = "unit normal" if weights == "unit" else "area-weighted normal"
    return p.finish(rng.choice(("accumulate_normals", "compute_vertex_normals")), p.kb.dims,
                    purpose=f"Scatter each triangle's {weighting} to its corners for vertex normals")


def _aero(p: Pattern, x: str, names: list[str], forces: str, n_vertices: int):
    """Drag (and lift) of a triangle moving through air, split over its vertices."""
    rng = p.rng
    v = p.array({"positions": "velocities", "particle_q": "particle_qd", "x": "v"}[x], T.VEC3F,
                shape=(n_vertices,))  # named in the positions' convention
    if p.coin():
        p.add(*(f"v{c} = {v}[{n}]" for c, n in enumerate(names)), "vmid = (v0 + v1 + v2) / 3.0")
    else:
        p.add(f"vmid = ({' + '.join(f'{v}[{n}]' for n in names)}) * (1.0 / 3.0)")
    if p.chance(0.5):  # the air moves: what matters is the velocity relative to it
        if p.coin():
            wind = p.scalar(rng.choice(("wind", "wind_velocity")), T.VEC3F)
            p.add(f"vmid = vmid - {wind}")
        else:  # a wind along x only, said in its name
            wind = p.scalar(rng.choice(("wind_x", "wind_speed_x")), lo=-2.0, hi=2.0)
            p.add(f"vmid = vmid - wp.vec3({wind}, 0.0, 0.0)")
        p.note("takes the velocity relative to the wind")
    drag = p.scalar(rng.choice(("k_drag", "drag")), lo=0.0, hi=1.0)
    p.add("vn = wp.dot(n, vmid)")
    lifted = p.chance(0.5)
    quad = p.pick("vn * wp.abs(vn)", "vn * speed")
    if quad.endswith("speed") or lifted:  # the speed, once, for the drag and the lift
        p.add("speed = wp.length(vmid)")
    p.add(f"f = n * (-{drag} * area * {quad})")
    if lifted:
        lift = p.scalar(rng.choice(("k_lift", "lift")), lo=0.0, hi=1.0)
        # lift acts across the flow: the part of the normal perpendicular to the relative velocity
        p.add("if speed > 1.0e-6:", f"{INDENT}vdir = vmid / speed",
              f"{INDENT}lift_dir = wp.cross(wp.cross(n, vdir), vdir)",
              f"{INDENT}f = f + lift_dir * ({lift} * area * vn * speed)")
        p.note("adds lift perpendicular to the relative velocity")
    p.add(p.pick("f = f / 3.0", "f = f * (1.0 / 3.0)"), *(f"wp.atomic_add({forces}, {n}, f)" for n in names))
    return p.finish(rng.choice(("eval_aero", "triangle_drag", "cloth_aerodynamics")), p.kb.dims,
                    purpose="Apply quadratic air drag to each cloth triangle, against its normal velocity, "
                            "shared equally by its three vertices")


def _bending(p: Pattern, x: str, n_vertices: int):
    """Dihedral bending across an edge shared by two triangles, with the exact angle gradients.

    Wings x0, x1 and the shared edge x2 -> x3 (as in Warp's cloth): with the angle's sign taken
    from ``cross(n2, n1)``, d theta / d x_i is g_i below (Bridson et al. 2003), and the g_i sum to zero.
    """
    rng = p.rng
    names = element_indices_bend(p, n_vertices)
    p.add(*(f"x{c} = {x}[{n}]" for c, n in enumerate(names)),
          "n1 = wp.cross(x2 - x0, x3 - x0)", "n2 = wp.cross(x3 - x1, x2 - x1)", "e = x3 - x2",
          "n1_sq = wp.length_sq(n1)", "n2_sq = wp.length_sq(n2)", f"e_len = {p.length('e')}")
    angles = p.array(rng.choice(("angles", "dihedral_angle")), T.FLOAT32, "out") if p.chance(0.25) else None
    p.why("a degenerate hinge has no angle and feels no force")
    p.add("if n1_sq < 1.0e-8 or n2_sq < 1.0e-8 or e_len < 1.0e-6:",
          angles and f"{INDENT}{angles}[tid] = 0.0", f"{INDENT}return")
    if p.coin():
        p.add("n1_n2 = wp.sqrt(n1_sq * n2_sq)", "cos_theta = wp.dot(n1, n2) / n1_n2",
              "sin_theta = wp.dot(wp.cross(n2, n1), e) / (n1_n2 * e_len)",
              "theta = wp.atan2(sin_theta, cos_theta)")
    else:  # unit normals first; the sign of the angle from the edge direction
        p.add("n1_hat = n1 / wp.sqrt(n1_sq)", "n2_hat = n2 / wp.sqrt(n2_sq)",
              "cos_theta = wp.clamp(wp.dot(n1_hat, n2_hat), -1.0, 1.0)",
              "theta = wp.acos(cos_theta) * wp.sign(wp.dot(wp.cross(n2_hat, n1_hat), e))")
    if angles:
        p.add(f"{angles}[tid] = theta")
        p.note("writes each hinge's angle (0 for a degenerate one)")
    p.add("e_hat = e / e_len", "w1 = n1 / n1_sq", "w2 = n2 / n2_sq",
          "g0 = w1 * e_len", "g1 = w2 * e_len",
          "g2 = w1 * wp.dot(x0 - x3, e_hat) + w2 * wp.dot(x1 - x3, e_hat)",
          "g3 = w1 * wp.dot(x2 - x0, e_hat) + w2 * wp.dot(x2 - x1, e_hat)")
    ke = f"{p.array('bend_stiffness', T.FLOAT32, lo=0.0, hi=1.0)}[tid]" if p.coin(0.3) else \
        p.scalar(rng.choice(("k_bend", "bending_stiffness")), lo=0.0, hi=1.0)
    if rng.random() < 0.5:
        rest = p.array(rng.choice(("rest_angle", "bend_rest")), T.FLOAT32, lo=-0.5, hi=0.5)
        bend = f"theta - {rest}[tid]"
        toward = "its rest angle"
    else:
        bend = "theta"
        toward = "flat"
    damped = p.chance(0.35)
    if damped:  # damping on the rate of the angle, d theta / dt = sum of g_i . v_i
        v = p.array({"positions": "velocities", "particle_q": "particle_qd", "x": "v"}[x], T.VEC3F,
                shape=(n_vertices,))  # named in the positions' convention
        kd = p.scalar(rng.choice(("k_damp", "bend_damping")), lo=0.0, hi=0.1)
        p.add(f"dtheta = wp.dot(g0, {v}[{names[0]}]) + wp.dot(g1, {v}[{names[1]}])"
              f" + wp.dot(g2, {v}[{names[2]}]) + wp.dot(g3, {v}[{names[3]}])")
        p.note("damps the rate of change of the angle")
    forces = p.array(rng.choice(("forces", "particle_f")), T.VEC3F, rng.choice(("out", "inout")), shape=(n_vertices,))
    bend = f"({bend})" if " " in bend else bend
    if p.coin():  # f_i = -c g_i, with c the generalised force on the angle
        p.add(f"c = {ke} * {bend}" + (f" + {kd} * dtheta" if damped else ""),
              *(f"wp.atomic_sub({forces}, {n}, g{c} * c)" for c, n in enumerate(names)))
    else:
        p.add(f"f_angle = -{ke} * {bend}" + (f" - {kd} * dtheta" if damped else ""),
              *(f"wp.atomic_add({forces}, {n}, g{c} * f_angle)" for c, n in enumerate(names)))
    return p.finish(rng.choice(("eval_bending", "bending_forces", "dihedral_bending")), p.kb.dims,
                    purpose=f"Accumulate dihedral bending forces on the four vertices of each hinge, driving "
                            f"its angle towards {toward}")


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
