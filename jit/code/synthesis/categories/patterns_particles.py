"""Pattern families of particles: symplectic Euler integration, Hookean springs and
position-based distance constraints.

Integration reads positions and velocities (in place or into new arrays), external forces
through the inverse mass (zero for kinematic particles, which gravity leaves alone), damping,
a speed limit and a boundary (ground, box or spherical collider). Springs and constraints read
their two particle indices in one of the layouts people use and accumulate equal and opposite
forces or mass-weighted corrections with atomics. See ``patterns`` for how a pattern family is
written. What it leaves out: neighbour interactions (``patterns_fluids``, ``patterns_geometry``).
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.stmt import INDENT, KernelBuilder
from jit.code.synthesis.categories.patterns import Pattern, flavour, launch_size


@register("particle_integration", 1.2, source="patterns")
def particle_integration(rng, name, suffix, complexity):
    fl = flavour(rng)
    p = Pattern(rng, name, suffix, complexity, fl)
    n = launch_size(rng)
    in_place = rng.random() < 0.5
    x = p.array("positions" if rng.random() < 0.5 else "particle_x", fl.vec, "inout" if in_place else "in")
    v = p.array("velocities" if x == "positions" else "particle_v", fl.vec, "inout" if in_place else "in")
    forced = rng.random() < 0.75
    # a drag rate added to the forces, or a factor exp(-k dt) the velocity is scaled by each step: one value
    # for the whole launch, so the caller computes it rather than every thread
    drag = forced and p.chance(0.35)
    use_struct = rng.random() < 0.3
    # the step's other settings, drawn now: with a struct, every setting of the step goes in it
    clamp = p.chance(0.3)
    boundary = rng.choice(("none", "ground", "ground", "box", "sphere"))
    friction = boundary == "ground" and p.chance(0.4)
    half_name = rng.choice(("half_extent", "box_half_size", "half_size"))
    mass = rng.choice(("inv_mass", "inv_mass", "mass", "scalar")) if forced else "none"
    settings = {"inv_mass": (fl.scalar, 0.5, 2.0)} if mass == "scalar" else {}  # one inverse mass for all
    settings |= {"max_speed": (fl.scalar, 1.0, 10.0)} if clamp else {}
    settings |= {"ground": {"restitution": (fl.scalar, 0.0, 1.0),
                            **({"friction": (fl.scalar, 0.0, 1.0)} if friction else {})},
                 "box": {half_name: (fl.scalar, 0.5, 4.0)},
                 "sphere": {"collider_center": (fl.vec, -2.0, 2.0), "collider_radius": (fl.scalar, 0.1, 1.0)},
                 "none": {}}[boundary]
    if use_struct:
        # a small step and gravity vector; a drag rate, or a damping factor just below 1
        knob = "drag" if drag else rng.choice(("damping_factor", "velocity_decay"))
        ranges = {name: (lo, hi) for name, (_, lo, hi) in settings.items()}
        if not drag:
            ranges[knob] = (0.95, 1.0)
        params = p.struct("SimParams", [("dt", fl.scalar), ("gravity", fl.vec), (knob, fl.scalar),
                                        *((name, t) for name, (t, _, _) in settings.items())],
                          "params", 0.0, 0.05, ranges)
        dt, gravity, damping = f"{params}.dt", f"{params}.gravity", f"{params}.{knob}"

    def setting(name: str) -> str:
        """A step setting: a field of the struct, or a parameter of its own."""
        if use_struct:
            return f"{params}.{name}"
        t, lo, hi = settings[name]
        return p.scalar(name, t, lo=lo, hi=hi)

    if not use_struct:
        dt = p.scalar("dt", lo=0.001, hi=0.02)
        gravity = fl.up("y", p.scalar("gravity", lo=-9.8, hi=-1.0))
        damping = p.scalar(rng.choice(("drag", "k_drag")), lo=0.0, hi=0.5) if drag else \
            p.scalar(rng.choice(("damping_factor", "velocity_decay", "decay_factor")), lo=0.95, hi=1.0)
    p.guard("tid", x, ("num_particles", n), p=0.15)
    p.add(*p.pick([f"x = {x}[tid]", f"v = {v}[tid]"], [f"v = {v}[tid]", f"x = {x}[tid]"]))
    # a per-particle diagnostic: the kinetic energy where the mass is known, else the speed
    diagnostic = "energy" if mass == "mass" and p.chance(0.3) else "speed" if p.chance(0.2) else None
    w = "w"  # the inverse mass: a local read from an array, or the scalar parameter itself
    if mass == "inv_mass":
        w = p.array("inv_mass" if rng.random() < 0.5 else "particle_inv_mass", fl.scalar, lo=0.0, hi=2.0)
        p.add(f"w = {w}[tid]")
        w = "w"
        if in_place and diagnostic is None and p.chance(0.4):  # nothing to write for them
            p.add(f"if w == {fl.lit(0.0)}:", f"{INDENT}return")
            p.note("leaves kinematic particles (zero inverse mass) where they are")
        else:  # as Warp's integrator does: gravity moves only particles with mass
            gravity = f"{gravity} * wp.nonzero(w)"
            p.note("keeps gravity off kinematic particles (zero inverse mass)")
    elif mass == "mass":
        m = p.array("masses" if rng.random() < 0.5 else "particle_mass", fl.scalar, lo=0.5, hi=2.0)
        zero = fl.lit(0.0)
        if diagnostic == "energy":
            p.add(f"m = {m}[tid]")
            mass_of = "m"
        else:
            mass_of = p.let("m", f"{m}[tid]", inline=0.0)
        # a zero mass marks a kinematic particle, as host code marks it by a zero inverse mass
        p.add(f"w = wp.where({mass_of} > {zero}, {fl.lit(1.0)} / {mass_of}, {zero})")
        gravity = f"{gravity} * wp.nonzero(w)"
        p.note("treats zero-mass particles as kinematic: no force or gravity accelerates them")
    elif mass == "scalar":
        w = setting("inv_mass")
    if forced:
        f = p.array(rng.choice(("forces", "particle_f", "f_ext")), fl.vec)
        p.add(f"f = {f}[tid]")
        if drag:  # linear drag on top of the external forces
            p.add(f"f = f - {damping} * v")
            p.note("adds linear drag to the external forces")
        p.add(f"v = v + (f * {w} + {gravity}) * {dt}" if rng.random() < 0.5 else
              f"a = f * {w} + {gravity}\nv = v + a * {dt}")
    else:
        p.add(f"v = v + {gravity} * {dt}")
    if not drag:
        p.why((f"{damping} = exp(-rate * dt) for a damping rate, computed once per step by the caller",
               f"the caller passes {damping} = exp(-rate * dt), the step's decay, the same for every particle"))
        p.add(f"v = v * {damping}")
        p.note("damps the velocity by a per-step factor")
    speed = None  # the speed, once computed and still true of v
    if clamp:
        vmax = setting("max_speed")
        p.note(f"clamps the speed to {vmax}")
        if p.coin(0.7):
            # the clamped speed is written at the end if nothing but a box reflection changes v after
            reuse = diagnostic == "speed" and boundary in ("none", "box")
            p.add(f"speed = {p.length('v')}", f"if speed > {vmax}:", f"{INDENT}v = v * ({vmax} / speed)",
                  f"{INDENT}speed = {vmax}" if reuse else None)
            speed = "speed" if reuse else None
        else:  # compare squared speeds: one square root only when clamping
            p.add("speed_sq = wp.dot(v, v)", f"if speed_sq > {vmax} * {vmax}:",
                  f"{INDENT}v = v * ({vmax} / wp.sqrt(speed_sq))")
    p.add("x = x + v * " + dt)
    if boundary == "ground":
        restitution = setting("restitution")
        vx, vz = "v[0]", "v[2]"
        zero = fl.lit(0.0)
        slide = None
        if friction:  # friction slows the whole tangential velocity
            slide = f"{fl.lit(1.0)} - {setting('friction')}"
            if fl.dim == 3:
                vx, vz = "v[0] * keep", "v[2] * keep"
            else:
                vx = f"v[0] * ({slide})"
            p.note("slows sliding particles by friction")
        # rebuilt rather than assigned by component: Warp's adjoint of component stores in branches is unreliable;
        # a particle already moving up keeps its velocity
        p.note("bounces particles off the ground plane y = 0 with a restitution")
        p.add(f"if x[1] < {zero}:",
              f"{INDENT}keep = {slide}" if slide and fl.dim == 3 else None,
              f"{INDENT}x = {fl.v}(x[0], {zero}{', x[2]' if fl.dim == 3 else ''})",
              f"{INDENT}v = {fl.v}({vx}, wp.max(-v[1] * {restitution}, v[1]){', ' + vz if fl.dim == 3 else ''})")
    elif boundary == "box":
        reflect = p.name(rng.choice(("reflect", "bounce", "wall_velocity")))
        half = setting(half_name)
        # only a velocity heading out of the box flips: one already heading back in is left alone
        p.func(f"""
@wp.func
def {reflect}(x: {fl.s}, v: {fl.s}, half: {fl.s}):
    if (x > half and v > {fl.lit(0.0)}) or (x < -half and v < {fl.lit(0.0)}):
        return -v
    return v
""")
        parts = ", ".join(f"{reflect}(x[{a}], v[{a}], {half})" for a in range(fl.dim))
        p.add(f"v = {fl.v}({parts})", f"x = wp.min(wp.max(x, {fl.v}(-{half})), {fl.v}({half}))")
        p.note(f"keeps particles inside the box [-{half}, {half}], reflecting the velocity at its walls")
    elif boundary == "sphere":
        center = setting("collider_center")
        radius = setting("collider_radius")
        # n points out of the sphere; only the inward part of the velocity is removed
        p.add(f"d = x - {center}", "dist = wp.length(d)", f"if dist < {radius} and dist > {fl.lit(0.0)}:",
              f"{INDENT}n = d / dist", f"{INDENT}x = {center} + n * {radius}",
              f"{INDENT}v = v - n * wp.min(wp.dot(v, n), {fl.lit(0.0)})")
        p.note("pushes particles out of a spherical collider")
    if in_place:
        p.add(f"{x}[tid] = x", f"{v}[tid] = v")
    else:
        xo = p.array(x + "_out" if "_" in x else "new_positions", fl.vec, "out")
        vo = p.array(v + "_out" if "_" in v else "new_velocities", fl.vec, "out")
        p.add(f"{xo}[tid] = x", f"{vo}[tid] = v")
    if diagnostic == "energy":
        ke = p.array(rng.choice(("kinetic_energy", "particle_energy")), fl.scalar, "out")
        p.add(f"{ke}[tid] = {fl.lit(0.5)} * m * wp.dot(v, v)")
        p.note("writes each particle's kinetic energy")
    elif diagnostic == "speed":
        speeds = p.array(rng.choice(("speeds", "particle_speed")), fl.scalar, "out")
        # a reflection off the box walls flips components and keeps the (clamped) speed
        p.add(f"{speeds}[tid] = {speed or p.length('v')}")
        p.note("writes each particle's speed")
    base = rng.choice(("integrate_particles", "integrate", "step_particles", "advance_particles"))
    pushed = "external forces and gravity" if forced else "gravity"
    return p.finish(base, [n], purpose=f"Advance particles one symplectic Euler step under {pushed}")


# ---------------------------------------------------------------------------------------------
# springs and distance constraints


def endpoints(p: Pattern, n_particles: int) -> tuple[str, str]:
    """Lines reading the two particle indices of spring ``tid``, in one of the layouts people use."""
    layout = p.rng.choice(("flat", "vec2i", "pair"))
    hi = n_particles - 1
    if layout == "flat":  # [i0, j0, i1, j1, ...] as in Warp's cloth example
        idx = p.array(p.rng.choice(("spring_indices", "edge_indices")), T.INT32, lo=0, hi=hi,
                      shape=(2 * p.kb.dims[0],))
        p.add(f"i = {idx}[tid * 2 + 0]", f"j = {idx}[tid * 2 + 1]")
    elif layout == "vec2i":
        edges = p.array(p.rng.choice(("edges", "springs")), T.VEC2I, lo=0, hi=hi)
        p.add(f"e = {edges}[tid]", "i = e[0]", "j = e[1]")
    else:
        p.add(f"i = {p.array('spring_i', T.INT32, lo=0, hi=hi)}[tid]",
              f"j = {p.array('spring_j', T.INT32, lo=0, hi=hi)}[tid]")
    return "i", "j"


VELOCITY_OF = {"positions": "velocities", "particle_q": "particle_qd", "x": "v"}  # one naming convention


def per_spring(p: Pattern, array: str, scalar: str, lo: float, hi: float, always: bool = False) -> str:
    """A per-spring coefficient read from an array, or one value for all springs: a kernel's
    stiffnesses and dampings are all per spring or all shared. Rest lengths (``always``) are per
    spring: springs of one network differ in length."""
    if p.per_spring_arrays is None:
        p.per_spring_arrays = p.rng.random() < 0.5
    if p.per_spring_arrays or always:
        return f"{p.array(array, p.fl.scalar, lo=lo, hi=hi)}[tid]"
    return p.scalar(scalar, lo=lo, hi=hi)


@register("spring_forces", 1.2, source="patterns")
def spring_forces(rng, name, suffix, complexity):
    fl = flavour(rng, f64=0.2)
    p = Pattern(rng, name, suffix, complexity, fl)
    p.kb.dims = [launch_size(rng)]
    n_particles = rng.choice((8, 16, 32))
    pshape = (n_particles,)
    p.guard("tid", None, (rng.choice(("num_springs", "spring_count")), p.kb.dims[0]), p=0.12)
    # the signature as Warp's eval_springs has it: the particles' arrays (positions, then velocities),
    # then the per-spring arrays (indices, rest lengths, coefficients), then scalars and outputs
    x = p.array(rng.choice(("positions", "particle_q", "x")), fl.vec, lo=-1.0, hi=1.0, shape=pshape)
    if rng.random() < 0.4:
        return _distance_constraint(p, x, pshape)
    damped = p.chance(0.6)
    v = p.array(VELOCITY_OF[x], fl.vec, shape=pshape) if damped else None
    i, j = endpoints(p, n_particles)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]")
    rest = per_spring(p, "rest_lengths" if rng.random() < 0.5 else "spring_rest_length", "rest_length", 0.1, 1.0,
                      always=True)
    ke = per_spring(p, "spring_stiffness", "ke", 10.0, 100.0)
    helper = p.chance(0.35)
    eps = fl.lit(1.0e-6)
    if helper:
        force = p.name(rng.choice(("spring_force", "eval_spring")))
        zero = p.pick(f"{fl.v}()", f"{fl.v}({', '.join([fl.lit(0.0)] * fl.dim)})")
        if damped:  # the damper acts on the rate of stretch: a pair spinning rigidly feels no damping
            kd = per_spring(p, "spring_damping", "kd", 0.0, 1.0)
            args = "xi: {v}, xj: {v}, vi: {v}, vj: {v}, rest: {s}, ke: {s}, kd: {s}".format(v=fl.v, s=fl.s)
            tail = [f"if length < {eps}:", f"{INDENT}return {zero}", "n = d / length",
                    "return n * (ke * (length - rest) + kd * wp.dot(vj - vi, n))"]
            call = f"{force}(xi, xj, {v}[{i}], {v}[{j}], {rest}, {ke}, {kd})"
            p.note("damps the rate of stretch along the spring")
        else:
            args = "xi: {v}, xj: {v}, rest: {s}, ke: {s}".format(v=fl.v, s=fl.s)
            tail = p.pick([f"if length < {eps}:", f"{INDENT}return {zero}",
                           "return d * (ke * (length - rest) / length)"],
                          ["return d * (ke * (length - rest) / wp.max(length, " + eps + "))"])
            call = f"{force}(xi, xj, {rest}, {ke})"
        body = "\n".join(INDENT + line for line in ["d = xj - xi", f"length = {p.length('d')}", *tail])
        p.func(f"@wp.func\ndef {force}({args}):\n{body}\n")
        p.add(f"f = {call}")
    else:
        p.add("d = xj - xi", f"length = {p.length('d')}")
        # a spring of zero length has no direction: skip it, or divide by a floor on the length
        form = p.pick("return", "max")
        if form == "return":
            p.add(f"if length < {eps}:", f"{INDENT}return", "direction = d / length")
        else:
            p.add(f"direction = d / wp.max(length, {eps})")
        p.add(f"c = length - {rest}")
        energy_out = form == "max" and p.chance(0.3)  # every spring writes its entry: no early return
        if energy_out and "[" in ke:  # read twice (force and energy): once, as a local
            p.add(f"k = {ke}")
            ke = "k"
        if damped:
            kd = per_spring(p, "spring_damping", "kd", 0.0, 1.0)
            if p.coin():
                p.add(f"dcdt = wp.dot(direction, {v}[{j}] - {v}[{i}])", f"f = direction * ({ke} * c + {kd} * dcdt)")
            else:
                p.add(f"vrel = {v}[{j}] - {v}[{i}]", f"fs = {ke} * c + {kd} * wp.dot(vrel, direction)", "f = fs * direction")
            p.note("damps the rate of stretch along the spring")
        else:
            p.add(f"f = direction * ({ke} * c)")
        if energy_out:
            energy = p.array(rng.choice(("spring_energy", "energies")), fl.scalar, "out")
            p.add(f"{energy}[tid] = {fl.lit(0.5)} * {ke} * c * c")
            p.note("writes each spring's elastic energy")
    forces = p.array(rng.choice(("forces", "particle_f", "f_total")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    style = rng.random()
    if style < 0.5:
        p.add(f"wp.atomic_add({forces}, {i}, f)", f"wp.atomic_sub({forces}, {j}, f)")
    elif style < 0.7:
        p.add(f"wp.atomic_add({forces}, {i}, f)", f"wp.atomic_add({forces}, {j}, -f)")
    else:
        p.add(f"{forces}[{i}] += f", f"{forces}[{j}] -= f")
    kind = p.pick("damped spring forces", "spring-damper forces") if damped else "Hookean spring forces"
    return p.finish(rng.choice(("eval_springs", "spring_forces", "accumulate_spring_forces")), p.kb.dims,
                    purpose=f"Accumulate {kind}, equal and opposite on the two particles of each spring")


def _distance_constraint(p: Pattern, x: str, pshape: tuple[int, ...]) -> KernelBuilder:
    """Position-based dynamics: project one distance constraint, accumulate the corrections."""
    rng, fl = p.rng, p.fl
    w = p.array(rng.choice(("inv_mass", "particle_inv_mass", "inv_masses")), fl.scalar, lo=0.0, hi=2.0, shape=pshape)
    i, j = endpoints(p, pshape[0])  # the constraints' arrays after the particles'
    rest = per_spring(p, "rest_lengths", "rest_length", 0.1, 1.0, always=True)
    p.add(f"xi = {x}[{i}]", f"xj = {x}[{j}]", f"wi = {w}[{i}]", f"wj = {w}[{j}]", "w_sum = wi + wj")
    zero = fl.lit(0.0)
    # the corrections are accumulated with atomics: a constraint that cannot move returns early,
    # but a per-constraint output is written before that
    error = p.chance(0.25)
    early = p.coin() and not error
    if early:
        p.add(f"if w_sum == {zero}:", f"{INDENT}return")
    p.add("d = xi - xj", f"length = {p.length('d')}")
    stretch = l_minus(rest)
    if error:  # the constraint error, for a convergence test: the stretch is read twice, once as a local
        p.add(f"c = {stretch}")
        stretch = "c"
        err = p.array(rng.choice(("constraint_error", "violation")), fl.scalar, "out")
        p.add(f"{err}[tid] = wp.abs(c)")
        p.note("writes each constraint's violation")
    if early:
        p.add(f"if length < {fl.lit(1.0e-6)}:", f"{INDENT}return")
    else:
        p.add(f"if length < {fl.lit(1.0e-6)} or w_sum == {zero}:", f"{INDENT}return")
    xpbd = p.chance(0.5)
    if xpbd:  # XPBD: a compliance softens the constraint
        alpha = p.scalar("alpha_tilde", lo=0.0, hi=25.0)
        p.why(("alpha_tilde = compliance / dt^2, one value for the step, computed by the caller",
               "the caller passes the time-scaled compliance alpha_tilde = compliance / dt^2"))
        p.add(f"lam = ({stretch}) / (w_sum + {alpha})" if stretch != "c" else f"lam = c / (w_sum + {alpha})")
    else:
        stiffness = p.scalar(rng.choice(("stiffness", "relaxation")), lo=0.1, hi=1.0)
        p.add(f"lam = {stiffness} * ({stretch}) / w_sum" if stretch != "c" else f"lam = {stiffness} * c / w_sum")
    p.add("n = d / length")
    deltas = p.array(rng.choice(("deltas", "delta_x", "corrections")), fl.vec, rng.choice(("out", "inout")), shape=pshape)
    style = rng.random()
    if style < 0.4:
        p.add(f"wp.atomic_sub({deltas}, {i}, n * (lam * wi))", f"wp.atomic_add({deltas}, {j}, n * (lam * wj))")
    elif style < 0.7:
        p.add("corr = n * lam", f"wp.atomic_add({deltas}, {i}, -corr * wi)", f"wp.atomic_add({deltas}, {j}, corr * wj)")
    else:
        p.add(f"{deltas}[{i}] -= n * (lam * wi)", f"{deltas}[{j}] += n * (lam * wj)")
    if p.chance(0.3):  # Jacobi-style solvers average the corrections by how many constraints touch a particle
        counts = p.array("constraint_count", T.INT32, "out", shape=pshape)
        # scattered the way the corrections are
        p.add(*((f"{counts}[{i}] += 1", f"{counts}[{j}] += 1") if style >= 0.7 else
                (f"wp.atomic_add({counts}, {i}, 1)", f"wp.atomic_add({counts}, {j}, 1)")))
        p.note("counts the constraints per particle for averaging")
    kind = "compliant distance constraint (one XPBD iteration, the multiplier starting from zero)" if xpbd \
        else "distance constraint"
    return p.finish(rng.choice(("solve_distance_constraints", "project_edges", "solve_edges")), p.kb.dims,
                    purpose=f"Project each {kind} and accumulate the position corrections, weighted by inverse mass")


def l_minus(rest: str) -> str:
    return f"length - {rest}"
