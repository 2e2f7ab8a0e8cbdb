"""Composed kernels over particles, edges and contacts: integration, springs, contacts, distance
and position-based constraints, collisions, cloth triangles, granular contacts, emitters.

Each category is a job people write Warp kernels for: it picks its index space, gathers the
item's data, wires one to several pieces (``jit.code.synthesis.pieces``) by data flow and stores
or scatters the results, varied the ways real projects vary (precision, 2D or 3D, layouts,
``@wp.struct`` parameters, ``@wp.func`` helpers, count guards). The kernel's docstring and
``meta["record"]["purpose"]`` say what it does, composed from what its pieces say.
"""

from __future__ import annotations

from collections.abc import Callable

from jit.code.synthesis import types as T
from jit.code.synthesis.names import paired
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.pieces import PIECES, Draft
from jit.code.synthesis.pieces import roles as R
from jit.code.synthesis.pieces.base import INDENT, Role
from jit.code.synthesis.pieces.kit import (EXCLUSIVE, RESPONSES, Items, active_mask, collide,
                                           corner, draft, endpoints, items, join, neighbour_loop, particle_state,
                                           pick_weighted, pick_weighted_colliders, says, scatter_pair, store_state, style, total)


SOURCE = "composed"


# ---------------------------------------------------------------------------------------------
# particles


PARTICLE_FORCES = ["linear_drag", "quadratic_drag", "wind_drag", "tether_force", "buoyancy_force",
                   "ground_penalty_force"]
DAMPINGS = ["velocity_damping"]
DISSIPATION = {"linear_drag", "quadratic_drag", "wind_drag", *DAMPINGS}  # one of them: two count one loss twice
INTEGRATORS = ["symplectic_euler", "explicit_euler"]
MAX_EFFECTS = 3  # besides the integrator: a kernel does one job


def effects(rng, pool: dict[str, float], k: int) -> list[str]:
    """Up to ``k`` effects drawn by weight: at most one that dissipates (drag or damping), no ground
    contact force together with a ground or a box collider (whose floor is a ground), at most two
    colliders."""
    pool, chosen = dict(pool), []
    while pool and len(chosen) < k:
        name = rng.choices(list(pool), list(pool.values()))[0]
        chosen.append(name)
        drop = {name}
        if name in DISSIPATION:
            drop |= DISSIPATION
        if name in ("ground_penalty_force", "collider:ground", "collider:box"):
            drop |= {"ground_penalty_force", "collider:ground", "collider:box"}
        if name.startswith("collider:"):  # an SDF keeps the radius off its surface, the others take points
            drop |= {f"collider:{c}" for c in EXCLUSIVE.get(name.split(":")[1], ())}
        if sum(c.startswith("collider:") for c in chosen) == 2:
            drop |= {c for c in pool if c.startswith("collider:")}
        pool = {n: wt for n, wt in pool.items() if n not in drop}
    return chosen


def force_pool(forces: list[str]) -> dict[str, float]:
    return {f: PIECES[f].weight for f in forces}


COLLIDER_WEIGHTS = {"collider:ground": 1.5, "collider:sphere": 1.0, "collider:box": 1.0, "collider:sdf": 0.5}


def step(d: Draft, integrator: str, x: str, v: str, a: str, limit: bool) -> tuple[str, str]:
    """The integrator's step; a speed limit goes on the new velocity before it moves the position."""
    if not limit:
        out = d.use(integrator, x=x, v=v, a=a)
        return out["x"], out["v"]
    if integrator == "explicit_euler":  # the position moves with the old velocity, as the method says
        x = d.use("position_drift", x=x, v=v)["x"]
    v = d.use("velocity_kick", v=v, a=a)["v"]
    if integrator != "explicit_euler":  # explicit Euler moved the particle with the old velocity already
        d.w.comment("limit the speed before it moves the particle")
    v = d.use("clamp_speed", v=v)["v"]
    if integrator != "explicit_euler":
        x = d.use("position_drift", x=x, v=v)["x"]
    return x, v


@register("integrate_particles", 3.5, source=SOURCE)
def integrate_particles(rng, name, suffix, complexity):
    st = style(rng)
    d = draft(rng, suffix, st, ("SimParams", "StepParams", "Settings"))
    in_place = rng.random() < 0.5
    its = items(d, "particles", (16, 20, 32, 50, 64, 100, 128), ("num_particles", "particle_count", "n"))
    state = particle_state(d, {"x": ("positions", "particle_x", "x"), "v": ("velocities", "particle_v", "v")},
                           in_place)
    x, v = state.read("x"), state.read("v")
    d.gather_here()
    w = d.w
    kinematic = in_place and rng.random() < 0.3
    if kinematic:  # pinned particles (zero inverse mass) keep their state
        inv_mass = d.array(("inv_masses", "particle_inv_mass"), "scalar", lo=R.INV_MASS.lo, hi=R.INV_MASS.hi)
        d.resolved[R.INV_MASS] = w.let(("w", "inv_m"), f"{inv_mass}[tid]")
        w.add(f"if {d.resolved[R.INV_MASS]} == {w.lit(0.0)}:", f"{INDENT}return")
        w.nonzero.add(d.resolved[R.INV_MASS])
    substeps = rng.random() < 0.15
    pool = {**force_pool(PARTICLE_FORCES), "external": 1.0, "velocity_damping": 1.0,
            "clamp_speed": 0.7, **COLLIDER_WEIGHTS, **({} if substeps else {"energy": 0.4})}
    chosen = effects(rng, pool, rng.choice((1, 2, 2, 3, MAX_EFFECTS)))
    terms, phrases = [], []
    if "external" in chosen:  # read once, before a substep loop: it does not change inside it
        f_ext = d.array(("f_ext", "external_forces", "forces"), "vec", lo=-1.0, hi=1.0)
        terms.append(w.let(("f_applied", "external_force"), f"{f_ext}[tid]") if substeps else f"{f_ext}[tid]")
        phrases.append("external forces")
    forces = [f for f in chosen if f in PARTICLE_FORCES]
    # a force of neither position nor velocity (buoyancy) is the same in every substep: once, before the loop
    steady = [f for f in forces if substeps and not {"x", "v"} & set(PIECES[f].needs)]
    for f in steady:
        terms.append(d.use(f, x=x, v=v)["f"])
        phrases.append(says(f))
    moving = [f for f in forces if f not in steady]

    def open_loop():
        d.resolved[R.TIME_STEP] = d.scalar(("substep_dt", "sub_dt"), lo=R.TIME_STEP.lo, hi=R.TIME_STEP.hi)
        steps = d.scalar(("num_substeps", "substeps"), T.INT32, 2, 4, groupable=False)
        w.in_place = True
        w.add(f"for _ in range({steps}):")
        w.depth += 1
        d.differentiable = False  # a loop of a run-time count: no gradient check

    if substeps and moving:
        open_loop()
    for f in moving:
        terms.append(d.use(f, x=x, v=v)["f"])
        phrases.append(says(f))
    if terms:
        f_total = total(d, terms, ("f", "force", "f_total", "f_sum"))
        acc = rng.choice(("acceleration_from_inverse_mass", "acceleration_from_mass"))
        if kinematic:
            acc = "acceleration_from_inverse_mass"
        a = d.use(acc, f=f_total)["a"]
    else:
        a = d.resolve(R.GRAVITY)
    if substeps and not moving:  # the acceleration is the same in every substep too
        open_loop()
    damping = next((e for e in chosen if e in DAMPINGS), None)
    if damping:
        v = d.use(damping, v=v)["v"]
    integrator = rng.choices(INTEGRATORS, [PIECES[i].weight for i in INTEGRATORS])[0]
    limit = "clamp_speed" in chosen
    x, v = step(d, integrator, x, v, a, limit)
    colliders = [c.split(":")[1] for c in chosen if c.startswith("collider:")]
    contact = ""
    if colliders:
        x, v, contact = collide(d, x, v, colliders, rng.choice(RESPONSES))
    if substeps:
        w.depth -= 1
    store_state(state, {"x": x, "v": v} if rng.random() < 0.5 else {"v": v, "x": x})
    energy = ""
    mass = d.resolved.get(R.MASS)
    if "energy" in chosen and mass:  # a kinetic energy needs the mass (an inverse mass may be zero)
        ke = d.array(("kinetic_energy", "energy"), "scalar", "out", shape=(1,))
        w.add(f"wp.atomic_add({ke}, 0, {w.lit(0.5)} * {mass} * wp.dot({v}, {v}))")
        energy = "and sum their kinetic energy"
    forces = join(['gravity', *phrases])
    step_words = says(integrator)  # "a symplectic Euler step"
    purpose = rng.choice((f"Advance {its.noun} in {st.dim}D by {step_words} under {forces}",
                          f"{step_words[0].upper()}{step_words[1:]} for {st.dim}D {its.noun} under {forces}",
                          f"Integrate {st.dim}D {its.noun} under {forces} ({step_words})"))
    if damping:
        purpose += f" with {says(damping)}"
    if limit:
        purpose += f", under {says('clamp_speed')}"
    if contact:
        purpose += f", then resolve {contact}"
    if energy:
        purpose += f", {energy}"
    detail = ""
    if substeps:
        detail = "The step is split into substeps of equal length."
    base = rng.choice(("integrate_particles", "step_particles", "advance_particles", "integrate"))
    return d.finish(base, [its.launch], purpose, detail)


# ---------------------------------------------------------------------------------------------
# edges and pairs


def edge_setup(rng, suffix, groups: tuple[str, ...], noun: str,
               maskable: bool = False) -> tuple[Draft, Items, int, str, str, str]:
    """The draft, the launch over edges, and the edge's two particles; a switched-off edge (when the
    job may have them) returns before it reads anything."""
    st = style(rng, f64=0.15)
    d = draft(rng, suffix, st, groups)
    n_particles = rng.choice((16, 32, 64))
    its = items(d, noun, (24, 48, 64, 96, 128), (f"num_{noun}", f"{noun[:-1]}_count"), guard=0.12)
    masked = active_mask(d, noun) if maskable else ""
    i, j = endpoints(d, n_particles, its.n, noun)
    d.gather_here()
    return d, its, n_particles, i, j, masked


def contact_geometry(d: Draft, x_i: str, x_j: str) -> tuple[str, Callable[[], str]]:
    """A pair's distance, and a function writing its unit direction: called inside the touching test,
    so pairs that do not touch never normalise (``edge_geometry`` writes both at once)."""
    w = d.w
    delta = w.let(("delta", "d", "x_ij"), f"{x_j} - {x_i}")
    length = w.let(("length", "dist"), w.length(delta))

    def direction() -> str:
        w.comment("coincident particles have no direction: leave it zero rather than divide by zero",
                  "no division by a zero distance")
        return w.let(("n", "direction", "e_ij"), f"{delta} / wp.max({length}, {w.lit(1.0e-6)})")

    return length, direction


def relative_motion(d: Draft, v_j: str, v_i: str, n: str) -> dict[str, str]:
    """The pair's relative velocity and its normal part, once for the contact terms that share them."""
    v_rel = d.w.let(("v_rel", "dv"), f"{v_j} - {v_i}")
    return {"v_rel": v_rel, "vn": d.w.let(("vn", "v_normal"), f"wp.dot({v_rel}, {n})")}


MAX_STRAIN = Role("breaking strain", "scalar", 0.1, 0.5, ("max_strain", "break_strain", "tear_threshold"))


@register("spring_network", 1.5, source=SOURCE)
def spring_network(rng, name, suffix, complexity):
    d, its, n_particles, i, j, masked = edge_setup(rng, suffix, ("SpringParams", "Material"), "springs", True)
    w, pshape = d.w, (n_particles,)
    which = "each active spring" if masked else "each spring"
    x = d.array(R.POSITION.names, "vec", lo=-1.0, hi=1.0, shape=pshape)
    x_i, x_j = w.let(("xi", "x_i", "p"), f"{x}[{i}]"), w.let(("xj", "x_j", "q"), f"{x}[{j}]")
    geo = d.use("edge_geometry", x_i=x_i, x_j=x_j)
    stretch = d.use("edge_stretch", inline=True, length=geo["length"])["stretch"]
    law = rng.choice(("hooke_force", "hooke_force", "tension_only_force"))
    signed = stretch  # strain is measured on the signed stretch
    if law == "tension_only_force":  # the taut stretch once, for the force and any stored energy
        w.comment("a rope pulls when stretched and goes slack when compressed")
        stretch = w.let(("taut", "stretch_pos"), f"wp.max({stretch}, {d.style.lit(0.0)})")
        terms = [d.use("hooke_force", n=geo["n"], stretch=stretch)["f"]]
    else:
        terms = [d.use(law, n=geo["n"], stretch=stretch)["f"]]
    phrases = [says(law)]
    if law != "tension_only_force" and rng.random() < 0.5:  # a slack rope must not push: no damper on it
        v = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0, shape=pshape)
        terms.append(d.use("spring_damping_force", n=geo["n"], v_i=f"{v}[{i}]", v_j=f"{v}[{j}]")["f"])
        phrases.append(says("spring_damping_force"))
    f = total(d, terms, ("f", "force", "f_total", "f_ij"))
    forces = d.array(R.FORCE.names, "vec", rng.choice(("out", "inout")), shape=pshape)
    extra = []
    kind = rng.choices(("none", "energy_total", "energy_each", "strain", "break"), (5, 1, 1, 1, 1))[0]
    if kind.startswith("energy"):
        e = d.use("spring_energy", stretch=stretch)["e"]  # a slack rope's taut stretch is zero: no energy
        if kind == "energy_total":
            energy = d.array(("total_energy", "potential_energy"), "scalar", "out", shape=(1,))
            w.add(f"wp.atomic_add({energy}, 0, {e})")
            extra.append(f"sum {says('spring_energy')} into a total")
        else:
            energy = d.array(("spring_energy", "energies"), "scalar", "out")
            w.add(f"{energy}[tid] = {e}")
            d.skip_writes.append(f"{energy}[tid] = {d.style.lit(0.0)}")
            extra.append("store the elastic energy of each spring")
    elif kind in ("strain", "break"):
        strain = d.use("edge_strain", stretch=signed)["strain"]
        if kind == "strain":
            out = d.array(("strains", "spring_strain", "edge_strains"), "scalar", "out")
            w.add(f"{out}[tid] = {strain}")
            d.skip_writes.append(f"{out}[tid] = {d.style.lit(0.0)}")
            extra.append(f"store {says('edge_strain')}")
        else:
            broken = d.array(("overstretched", "over_limit", "strain_flags"), T.INT32, "out")
            w.comment("flag overstretched springs; the caller removes them before the next step")
            w.add(f"{broken}[tid] = wp.where({strain} > {d.resolve(MAX_STRAIN)}, 1, 0)")
            d.skip_writes.append(f"{broken}[tid] = 0")
            extra.append("flag the springs stretched past a breaking strain")
    if rng.random() < 0.5:
        w.comment("equal and opposite: the pair's forces sum to zero", "Newton's third law: +f on one end, -f on the other")
    scatter_pair(d, forces, i, j, f, calls=kind == "energy_total")  # one scatter style per kernel
    system = f"a {d.style.dim}D mass-spring system"
    purpose = f"Accumulate {join(phrases)} on the particles at both ends of {which} of {system}"
    if extra:
        purpose += f", and {join(extra)}"
    base = rng.choice(("eval_springs", "spring_forces", "accumulate_spring_forces", "compute_spring_forces"))
    return d.finish(base, [its.launch], purpose)


@register("particle_contacts", 0.8, source=SOURCE)
def particle_contacts(rng, name, suffix, complexity):
    d, its, n_particles, i, j, _ = edge_setup(rng, suffix, ("ContactParams",), "contacts")
    w, pshape = d.w, (n_particles,)
    if rng.random() < 0.5:  # padded broad-phase lists pair a particle with itself
        w.add(f"if {i} == {j}:", f"{INDENT}return")
    x = d.array(R.POSITION.names, "vec", lo=-1.0, hi=1.0, shape=pshape)
    x_i, x_j = w.let(("xi", "x_i"), f"{x}[{i}]"), w.let(("xj", "x_j"), f"{x}[{j}]")
    length, direction = contact_geometry(d, x_i, x_j)
    if rng.random() < 0.5:
        radii = d.array(("radii", "particle_radius"), "scalar", lo=0.05, hi=0.2, shape=pshape)
        reach = w.let(("reach", "contact_dist"), f"{radii}[{i}] + {radii}[{j}]")
        sized = "the sum of their radii"
    else:
        reach = w.let(("reach", "contact_dist"), f"{w.lit(2.0)} * {d.resolve(R.RADIUS, per_item=False)}")
        sized = "twice a common radius"
    extra = pick_weighted(rng, ["contact_damping_force", "contact_friction_force"], rng.choice((0, 0, 1, 2)))
    forces = d.array(R.FORCE.names, "vec", rng.choice(("out", "inout")), shape=pshape)
    with w.block(f"if {length} < {reach}"):  # one test for every contact force: the pair touches
        normal = direction()
        terms = [d.use("contact_penalty_force", n=normal, length=length, reach=reach)["f"]]
        if extra:
            v = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0, shape=pshape)
            rel = relative_motion(d, f"{v}[{j}]", f"{v}[{i}]", normal)
            for piece_name in extra:
                terms.append(d.use(piece_name, n=normal, **rel)["f"])
        f = total(d, terms, ("f", "force", "f_contact_total"))
        scatter_pair(d, forces, i, j, f)
    what = join([says("contact_penalty_force"), *(says(e) for e in extra)])
    purpose = f"Accumulate {what} over candidate pairs of {d.style.dim}D particles, touching within {sized}"
    return d.finish(rng.choice(("particle_contacts", "eval_contacts", "collide_pairs")), [its.launch], purpose)


@register("distance_constraints", 1.2, source=SOURCE)
def distance_constraints(rng, name, suffix, complexity):
    d, its, n_particles, i, j, masked = edge_setup(rng, suffix, ("SolverParams", "ConstraintParams"), "constraints",
                                                   True)
    w, pshape = d.w, (n_particles,)
    which = "each active edge" if masked else "each edge"
    x = d.array(("positions", "predicted", "particle_x"), "vec", lo=-1.0, hi=1.0, shape=pshape)
    inv_mass = d.array(("inv_masses", "particle_inv_mass"), "scalar", lo=0.0, hi=2.0, shape=pshape)
    x_i, x_j = w.let(("xi", "x_i", "p"), f"{x}[{i}]"), w.let(("xj", "x_j", "q"), f"{x}[{j}]")
    w_i, w_j = w.let(("w_i", "wi"), f"{inv_mass}[{i}]"), w.let(("w_j", "wj"), f"{inv_mass}[{j}]")
    geo = d.use("edge_geometry", x_i=x_i, x_j=x_j)
    c = d.use("edge_stretch", inline=True, length=geo["length"])["stretch"]
    solver = rng.choice(("distance_projection", "xpbd_distance", "tether_projection"))
    out = d.use(solver, n=geo["n"], c=c, w_i=w_i, w_j=w_j)
    deltas = d.array(("deltas", "delta_x", "corrections"), "vec", rng.choice(("out", "inout")), shape=pshape)
    # for averaging the corrections afterwards (Jacobi iteration); a slack tether corrects nothing,
    # so counting it would dilute the others' average
    counted = rng.random() < 0.3 and solver != "tether_projection"
    # the counts scatter with wp.atomic_add: the corrections then do too (one style per kernel)
    scatter_pair(d, deltas, i, j, out["dx_i"], out["dx_j"], calls=counted)
    extra = []
    if counted:
        counts = d.array(("constraint_count", "counts"), T.INT32, "out", shape=pshape)
        w.add(f"wp.atomic_add({counts}, {i}, 1)", f"wp.atomic_add({counts}, {j}, 1)")
        extra.append("count the constraints on each particle for averaging")
    if rng.random() < 0.25:
        err = d.array(("constraint_error", "violation", "residual"), "scalar", "out")
        slack = solver == "tether_projection"  # a slack tether violates nothing
        w.add(f"{err}[tid] = " + (w.once(("excess",), f"wp.max({c}, {w.lit(0.0)})") if slack else f"wp.abs({c})"))
        d.skip_writes.append(f"{err}[tid] = {d.style.lit(0.0)}")
        extra.append("store each constraint's violation")
    purpose = f"Solve {says(solver)} for {which} of a {d.style.dim}D particle system, " \
              "accumulating the corrections of both particles"
    if extra:
        purpose += f"; {join(extra)}"
    if solver == "xpbd_distance":
        purpose += ". The caller passes the compliance already divided by the squared time step"
    base = rng.choice(("solve_distance_constraints", "project_edges", "solve_edges")
                      if solver != "tether_projection" else ("solve_tethers", "project_tethers"))
    return d.finish(base, [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# collisions and position-based steps


@register("collide_particles", 0.8, source=SOURCE)
def collide_particles(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng), ("ContactParams", "ColliderParams"))
    its = items(d, "particles", (16, 32, 50, 64, 128), ("num_particles", "n"))
    state = particle_state(d, {"x": ("positions", "particle_x", "x"), "v": ("velocities", "particle_v", "v")},
                           in_place=rng.random() < 0.6)
    d.gather_here()
    colliders = pick_weighted_colliders(rng) or [rng.choice(("ground", "sdf"))]
    x, v, contact = collide(d, state.read("x"), state.read("v"), colliders, rng.choice(RESPONSES))
    store_state(state, {"x": x, "v": v})
    purpose = f"Resolve {d.style.dim}D particle {contact}"
    return d.finish(rng.choice(("collide", "resolve_collisions", "handle_contacts")), [its.launch], purpose)


@register("pbd_update", 1.0, source=SOURCE)
def pbd_update(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng), ("SolverParams",))
    w = d.w
    its = items(d, "particles", (16, 32, 64, 100), ("num_particles", "n"))
    job = rng.choice(("apply", "velocity", "predict", "predict"))
    if job == "apply":
        x = d.array(("positions", "predicted", "particle_x"), "vec", "inout")
        deltas = d.array(("deltas", "delta_x", "corrections"), "vec", rng.choice(("in", "inout")))
        d.gather_here()
        if rng.random() < 0.6:
            counts = d.array(("constraint_count", "counts"), T.INT32, lo=0, hi=6)
            dx = d.use("averaged_correction", delta=f"{deltas}[tid]", count=f"{counts}[tid]")["dx"]
            what = says("averaged_correction")
        else:
            dx, what = f"{deltas}[tid]", "the accumulated corrections"
        w.add(f"{x}[tid] = {x}[tid] + {dx}")
        purpose = f"Apply {what} to the predicted positions of {d.style.dim}D particles"
        if d.inputs[1].role == "inout":
            w.add(f"{deltas}[tid] = {d.style.zero()}")
            purpose += ", and clear the accumulator for the next iteration"
        base = rng.choice(("apply_deltas", "apply_corrections", "jacobi_update"))
    elif job == "velocity":
        x_prev = d.array(("x_prev", "positions_old", "x0"), "vec")
        x_pred = d.array(("x_pred", "predicted", "positions"), "vec")
        v_out = d.array(("velocities", "v_out", "particle_v"), "vec", "out")
        d.gather_here()
        v = d.use("velocity_from_positions", x_prev=f"{x_prev}[tid]", x=f"{x_pred}[tid]")["v"]
        tail = ""
        if rng.random() < 0.4:
            v = d.use("velocity_damping", v=v)["v"]
            tail = f", with {says(d.used[-1])}"
        if rng.random() < 0.3:
            v = d.use("clamp_speed", v=v)["v"]
            tail += f" under {says('clamp_speed')}"
        w.add(f"{v_out}[tid] = {v}")
        purpose = f"Finish a {d.style.dim}D position-based step: {says('velocity_from_positions')}{tail}"
        base = rng.choice(("update_velocities", "finalize_step", "pbd_velocities"))
    else:
        # the state is only read: the prediction goes to its own array, and the velocities either follow
        # from the corrected positions at the end of the step (the velocity job) or go out beside it
        differentiable = d.differentiable  # nothing is written back into a struct array: the gradient check stays
        state = particle_state(d, {"x": ("positions", "particle_x", "x"), "v": ("velocities", "particle_v", "v")},
                               in_place=True)
        d.differentiable = differentiable
        for param in d.inputs:
            if param.name in {arr for arr, _ in state.fields.values()}:
                param.role = "in"
        pred = d.array(("predicted", "x_pred", "p"), "vec", "out")
        v_pred = d.array(("v_pred", "predicted_velocities"), "vec", "out") if rng.random() < 0.4 else None
        d.gather_here()
        x, v = state.read("x"), state.read("v")
        chosen = effects(rng, {**force_pool(PARTICLE_FORCES[:-1]), "velocity_damping": 1.0},
                         rng.choice((0, 1, 1, 2)))
        forces = [f for f in chosen if f in PARTICLE_FORCES]
        if forces:
            f = total(d, [d.use(name_, x=x, v=v)["f"] for name_ in forces], ("f", "force", "f_total"))
            # position-based solvers pin particles by a zero inverse mass: never divide by a mass here
            a = d.use("acceleration_from_inverse_mass", f=f)["a"]
            loads = join(["gravity", *(says(f_) for f_ in forces)])
        else:
            a, loads = d.resolve(R.GRAVITY), "gravity"
        damping = next((e for e in chosen if e in DAMPINGS), None)
        if damping:
            v = d.use(damping, v=v)["v"]
            loads += f", with {says(damping)}"
        w.pinned.add(x)
        out = d.use("symplectic_euler", x=x, v=v, a=a)
        if not v_pred:  # the velocity is not stored: said in the code, where a reader looks for its store
            w.add("# " + w.pick("only the prediction is stored: the step's velocities follow from the corrected "
                                "positions", "the velocity is not written back: the solver derives it from the "
                                "corrected positions"))
        w.add(f"{pred}[tid] = {out['x']}")
        if v_pred:
            w.add(f"{v_pred}[tid] = {out['v']}")
            tail = ", and write the predicted velocities beside them"
        else:
            tail = "; the velocities follow from the corrected positions at the end of the step"
        purpose = f"Predict {d.style.dim}D particle positions for a position-based step by " \
                  f"{says('symplectic_euler')} under {loads}{tail}"
        base = rng.choice(("predict_positions", "pbd_predict", "integrate_predict"))
    return d.finish(base, [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# surfaces and granular contacts


@register("triangle_forces", 0.8, source=SOURCE)
def triangle_forces(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.15, dims=(3,)), ("AeroParams", "ClothParams"))
    w, st = d.w, d.style
    its = items(d, "triangles", (16, 32, 64), ("num_triangles", "tri_count"), guard=0.12)
    n_particles = rng.choice((16, 32, 64))
    hi = n_particles - 1
    if rng.random() < 0.5:
        tris = d.array(("indices", "tri_indices"), T.INT32, lo=0, hi=hi, shape=(3 * its.n,))
        verts = [w.let(f"i{a}", f"{tris}[{corner(3, a)}]") for a in range(3)]
    else:
        tris = d.array(("tris", "triangles", "faces"), T.VEC3I, lo=0, hi=hi)
        t = w.let(("t", "tri", "face"), f"{tris}[tid]")
        verts = [w.let(f"i{a}", f"{t}[{a}]") for a in range(3)]
    x = d.array(R.POSITION.names, "vec", shape=(n_particles,))
    xs = [w.let(f"x{a}", f"{x}[{v}]") for a, v in enumerate(verts)]
    d.gather_here()
    a = d.use("triangle_vector_area", x0=xs[0], x1=xs[1], x2=xs[2])["a"]
    loads = pick_weighted(rng, ["normal_drag_force", "inflation_force"], rng.choice((1, 1, 2)))
    store = rng.choice((None, None, None, None, "n", "area"))
    geo = {}  # the unit normal and area, computed once for whoever needs them
    if "normal_drag_force" in loads:  # drag needs the face's unit normal and its area
        geo = d.use("triangle_normal_area", a=a)
    elif store == "n":
        geo = d.use("triangle_normal", a=a)
    elif store == "area":
        geo = {"area": w.let(("area", "tri_area"), f"wp.length({a})")}
    terms, phrases, wind = [], [], ""
    for load in loads:
        if load == "normal_drag_force":
            v = d.array(R.VELOCITY.names, "vec", shape=(n_particles,))
            w.comment("the face moves with the mean of its vertices' velocities")
            v_face = w.let(("v_face", "v_avg"), f"({' + '.join(f'{v}[{i}]' for i in verts)}) / {st.lit(3.0)}")
            if rng.random() < 0.5:
                v_face = w.let(("v_rel", "v_air"), f"{v_face} - {d.resolve(R.WIND)}")
                wind = " in a wind"
            phrases.append(says(load))
            terms.append(d.use(load, area=geo["area"], n=geo["n"], v_rel=v_face)["f"])
        else:
            terms.append(d.use(load, a=a)["f"])
            phrases.append(says(load))
    f = total(d, terms, ("f", "f_face", "force"))
    forces = d.array(R.FORCE.names, "vec", rng.choice(("out", "inout")), shape=(n_particles,))
    w.comment("each vertex carries a third of the face's load") if rng.random() < 0.5 else None
    share = w.let(("f_vertex", "share"), f"{f} / {st.lit(3.0)}")
    for v in verts:
        w.add(f"wp.atomic_add({forces}, {v}, {share})")
    purpose = f"Accumulate {join(phrases)} on the faces of a triangle mesh{wind}, each face's load shared " \
              "equally among its vertices"
    if store:
        out = d.array(("face_normals", "normals") if store == "n" else ("face_areas", "areas"),
                      "vec" if store == "n" else "scalar", "out")
        w.add(f"{out}[tid] = {geo[store]}")
        purpose += f", and store the faces' {'normals' if store == 'n' else 'areas'}"
    drag = "normal_drag_force" in loads
    names = ("eval_aerodynamics", "triangle_forces", "face_loads") if drag else ("triangle_forces", "face_loads",
                                                                                  "pressure_loads")
    return d.finish(rng.choice(names), [its.launch], purpose)


@register("granular_contacts", 1.0, source=SOURCE)
def granular_contacts(rng, name, suffix, complexity):
    st = style(rng, f64=0.1, dim2=0.4)
    d = draft(rng, suffix, st, ("DEMParams", "ContactParams"))
    w = d.w
    n = rng.choice((16, 32, 64))
    d.item_shape = (n,)
    x = d.array(R.POSITION.names, "vec", lo=-1.0, hi=1.0)
    xi = w.let(("xi", "x_i"), f"{x}[tid]")
    extra = pick_weighted(rng, ["contact_damping_force", "contact_friction_force"], rng.choice((0, 1, 2)))
    if extra:
        v = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0)
        vi = w.let(("vi", "v_i"), f"{v}[tid]")
    if rng.random() < 0.5:
        radii = d.array(("radii", "particle_radius"), "scalar", lo=0.05, hi=0.2)
        ri = w.let(("ri", "r_i"), f"{radii}[tid]")
        sized = "the sum of their radii"
    else:
        radii, sized = None, "twice a common radius"
    reach = None
    if not radii:  # the same for every pair: once, before the loop
        reach = w.let(("reach", "contact_dist"), f"{st.lit(2.0)} * {d.resolve(R.RADIUS, per_item=False)}")
    f = w.let(("f", "force", "f_total"), st.zero())
    j, how = neighbour_loop(d, n, x)
    with w.block(f"if {j} != tid"):
        length, direction = contact_geometry(d, xi, f"{x}[{j}]")
        if radii:
            reach = w.let(("reach", "contact_dist"), f"{ri} + {radii}[{j}]")
        with w.block(f"if {length} < {reach}"):  # one test for every contact force: the pair touches
            normal = direction()
            w.add(f"{f} += {d.use('contact_penalty_force', n=normal, length=length, reach=reach)['f']}")
            rel = relative_motion(d, f"{v}[{j}]", vi, normal) if extra else {}
            for piece_name in extra:
                w.add(f"{f} += {d.use(piece_name, n=normal, **rel)['f']}")
    w.depth -= 1
    what = join([says("contact_penalty_force"), *(says(e) for e in extra)])
    if rng.random() < 0.4:  # and take the step right away
        inv_mass = d.resolve(R.INV_MASS, per_item=True)
        w.pinned.clear()
        v_arr = v if extra else d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0)
        v_cur = vi if extra else w.let(("vi", "v_i"), f"{v_arr}[tid]")
        a = d.use("acceleration_from_inverse_mass", f=f, inv_mass=inv_mass)["a"]
        out = d.use("symplectic_euler", x=xi, v=v_cur, a=a)
        x_out = d.array(paired(x), "vec", "out")  # named as the inputs are
        v_out = d.array(paired(v_arr), "vec", "out")
        w.add(f"{x_out}[tid] = {out['x']}", f"{v_out}[tid] = {out['v']}")
        purpose = f"Advance {st.dim}D granular particles by {says('symplectic_euler')} under gravity and {what} " \
                  f"{how}, " \
                  f"touching within {sized}"
        base = rng.choice(("step_granular", "integrate_dem", "advance_grains"))
    else:
        forces = d.array(("forces", "particle_f", "f_out"), "vec", "out")
        w.add(f"{forces}[tid] = {f}")
        purpose = f"Sum {what} on each of the {st.dim}D particles {how}, touching within {sized}"
        base = rng.choice(("dem_contacts", "granular_forces", "eval_particle_contacts"))
    return d.finish(base, [n], purpose)


LIFETIME = Role("lifetime", "scalar", 0.5, 2.0, ("lifetime", "max_age", "life"))
EMIT_SPEED = Role("emission speed", "scalar", 0.5, 3.0, ("emit_speed", "launch_speed", "speed"))


@register("emit_particles", 0.7, source=SOURCE)
def emit_particles(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.0, dim2=0.3), ("EmitterParams", "Emitter"))
    w, st = d.w, d.style
    its = items(d, "particles", (32, 64, 100, 128), ("num_particles", "max_particles"), guard=0.15)
    x = d.array(R.POSITION.names, "vec", "inout")
    v = d.array(R.VELOCITY.names, "vec", "inout")
    d.gather_here()
    test = rng.choice(("age", "ground", "box"))
    if test == "age":
        age = d.array(("age", "ages", "particle_age"), "scalar", "inout", lo=0.0, hi=2.0)
        dt, life = d.resolve(R.TIME_STEP), d.resolve(LIFETIME)
        a = w.let(("a", "t_alive"), f"{age}[tid] + {dt}")  # stored once, after a respawn resets it
        cond, why = f"{a} > {life}", "that outlived their lifetime"
    elif test == "ground":
        cond, why = f"{x}[tid][1] < {d.resolve(R.GROUND)}", "that fell below the ground"
    else:
        lo, hi = d.resolve(R.BOX_LOWER), d.resolve(R.BOX_UPPER)
        p = w.let(("p", "xi"), f"{x}[tid]")
        outside = " or ".join(f"{p}[{a}] < {lo}[{a}] or {p}[{a}] > {hi}[{a}]" for a in range(st.dim))
        cond, why = outside, "that left the domain box"
    with w.block(f"if {cond}"):
        seed = d.scalar(("seed", "frame_seed", "rng_seed"), T.INT32, 0, 1000, groupable=False)
        state = w.let(("state", "rng"), f"wp.rand_init({seed}, tid)")
        if st.dim == 3 and rng.random() < 0.5:
            emitter_center = d.resolve(Role("emitter center", "vec", -0.5, 0.5, ("emitter_center", "source")))
            d.resolved[R.CENTER] = emitter_center
            d.resolved[R.SPHERE_RADIUS] = d.resolve(Role("emitter radius", "scalar", 0.1, 0.5,
                                                         ("emitter_radius", "source_radius")))
            spawn = d.use("random_point_in_ball", inline=True, state=state)["p"]
            where = says("random_point_in_ball").replace("uniform random points", "a random point")
        else:
            lower = d.resolve(Role("emitter lower", "vec", -0.5, -0.2, ("emitter_lower", "spawn_min"), family="spawn"))
            upper = d.resolve(Role("emitter upper", "vec", 0.2, 0.5, ("emitter_upper", "spawn_max"), family="spawn"))
            spawn = d.use("random_point_in_box", inline=True, state=state, lower=lower, upper=upper)["p"]
            where = "a random point in an emitter box"
        w.add(f"{x}[tid] = {spawn}")
        if st.dim == 3 and rng.random() < 0.5:
            direction = d.use("random_unit_vector", inline=True, state=state)["d"]
            w.add(f"{v}[tid] = {direction} * {d.resolve(EMIT_SPEED)}")
            speed = "with a random direction at the emission speed"
        else:
            w.add(f"{v}[tid] = {st.zero()}")
            speed = "at rest"
        if test == "age":
            w.rebind(a, st.lit(0.0))
    if test == "age":
        w.add(f"{age}[tid] = {a}")
    d.differentiable = False
    purpose = f"Respawn particles {why} at {where}, {speed}"
    return d.finish(rng.choice(("respawn_particles", "emit", "recycle_particles")), [its.launch], purpose,
                    "The seed changes every frame; the same seed gives the same particles.")
