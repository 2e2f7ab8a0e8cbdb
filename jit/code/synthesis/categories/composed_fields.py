"""Composed kernels over grids and particle fluids: diffusion, waves, derivatives, pressure,
reaction-diffusion, advection, SPH, reductions over particles, particle-grid transfers.

A job is composed from pieces as ``composed_particles`` describes.
"""

from __future__ import annotations

from jit.code.synthesis import types as T
from jit.code.synthesis.names import paired
from jit.code.synthesis.categories.registry import register
from jit.code.synthesis.pieces import PIECES, Draft
from jit.code.synthesis.pieces import roles as R
from jit.code.synthesis.pieces.base import Role
from jit.code.synthesis.pieces.kit import (draft, grid, grid_purpose, grid_shape,
                                           interior_guard, items, join, neighbour_loop, pick_weighted, says, solid_cells,
                                           style, total)
from jit.code.synthesis.pieces.sph import NORMS, XSPH, norm_range, norm_text


SOURCE = "composed"
FLIP_RATIO = Role("FLIP ratio", "scalar", 0.9, 1.0, ("flip_ratio", "flip_blend", "alpha"))


# ---------------------------------------------------------------------------------------------
# grids


def grid_draft(rng, suffix, groups=("GridParams", "FieldParams"), dims=(2, 3)) -> Draft:
    st = style(rng, f64=0.2, dim2=0.6, dims=dims)
    d = draft(rng, suffix, st, groups)
    return d


@register("diffuse_grid", 1.0, source=SOURCE)
def diffuse_grid(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix)
    dim = d.style.dim
    w = d.w
    g, field = grid(d, ("field", "phi", "temperature", "density", "concentration"), dim)
    out = d.array((f"{field}_out", f"{field}_new", "out"), "scalar", "out")
    interior_guard(g, [(out, g.read(field))])
    d.gather_here()
    c = w.let(("c", "center", "value"), g.read(field))
    lap = d.use(f"laplacian_{dim}d", c=c, **g.neighbours(field))["lap"]
    c_new = d.use("explicit_diffusion", c=c, lap=lap)["c"]
    extra = []
    if rng.random() < 0.3:
        c_new = d.use("grid_decay", c=c_new)["c"]
        extra.append(says("grid_decay"))
    w.add(f"{out}[{g.at}] = {c_new}")
    what = f"Diffuse a scalar field by {says('explicit_diffusion')} with {says(f'laplacian_{dim}d')}"
    if extra:
        what += f" and {join(extra)}"
    base = rng.choice(("diffuse", "diffusion_step", "heat_step", "smooth_field"))
    return d.finish(base, list(g.shape), grid_purpose(g, what), tids=list("ijk"[:dim]))


@register("wave_grid", 0.6, source=SOURCE)
def wave_grid(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix, ("WaveParams",))
    dim, w = d.style.dim, d.w
    if dim == 2:  # a height field over a plane
        g, height = grid(d, ("height", "u", "h_curr"), dim)
        prev = d.array(("height_prev", "u_prev", "h_prev"), "scalar")
        out = d.array(("height_next", "u_next", "h_next"), "scalar", "out")
    else:  # a wave amplitude (pressure, displacement) through a volume
        g, height = grid(d, ("u", "amplitude"), dim)
        prev = d.array(("u_prev", "amplitude_prev"), "scalar")
        out = d.array(("u_next", "amplitude_next"), "scalar", "out")
    interior_guard(g, [(out, g.read(height))])
    d.gather_here()
    c = w.let(("c", "h", "value"), g.read(height))
    lap = d.use(f"laplacian_{dim}d", c=c, **g.neighbours(height))["lap"]
    c_next = d.use("wave_step", c=c, prev=g.read(prev), lap=lap)["c"]
    if rng.random() < 0.3:
        c_next = d.use("grid_decay", c=c_next)["c"]
        tail = f" and {says('grid_decay')}"
    else:
        tail = ""
    w.add(f"{out}[{g.at}] = {c_next}")
    what = f"Advance a {'height field' if dim == 2 else 'wave field'} by {says('wave_step')} with {says(f'laplacian_{dim}d')}{tail}"
    return d.finish(rng.choice(("wave_step", "update_waves", "propagate_wave")), list(g.shape),
                    grid_purpose(g, what), tids=list("ijk"[:dim]))


@register("grid_derivatives", 1.0, source=SOURCE)
def grid_derivatives(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix)
    dim, w = d.style.dim, d.w
    kind = rng.choice(("gradient", "normals", "magnitude", "divergence", "vorticity") if dim == 2 else
                      ("gradient", "normals", "magnitude", "divergence"))
    # a central difference over clamped neighbours spans one cell at the border but still divides by
    # two: periodic grids, or border cells left out, keep every difference a central one
    boundary = rng.choice(("periodic", "interior"))
    if kind in ("gradient", "normals", "magnitude"):
        g, field = grid(d, ("phi", "sdf", "pressure", "field"), dim, boundary)
        out = d.array({"gradient": ("grad_out", "gradient"), "normals": ("normals", "normal_out"),
                       "magnitude": ("grad_norm", "grad_magnitude")}[kind], "scalar" if kind == "magnitude" else "vec",
                      "out")
        interior_guard(g, [(out, d.style.lit(0.0) if kind == "magnitude" else d.style.zero())])
        d.gather_here()
        # a normal needs only the gradient's direction: no cell size to scale it by
        grad = d.use(f"central_{'difference' if kind == 'normals' else 'gradient'}_{dim}d", **g.neighbours(field))["grad"]
        if kind == "magnitude":
            w.comment("a signed distance field has a unit gradient: this measures how far it has drifted")
            w.add(f"{out}[{g.at}] = {w.length(grad)}")
            what = f"Compute the magnitude of {says(f'central_gradient_{dim}d')} of a level set"
        elif kind == "normals":
            w.comment("the level set's outward normal; flat regions get a zero normal")
            n = w.let(("n", "normal"), f"wp.normalize({grad})")
            w.add(f"{out}[{g.at}] = {n}")
            what = f"Compute unit normals of a level set from {says(f'central_difference_{dim}d')}"
        else:
            w.add(f"{out}[{g.at}] = {grad}")
            what = f"Compute {says(f'central_gradient_{dim}d')} of a scalar field"
    else:
        g, vel = grid(d, ("velocity", "vel", "u"), dim, boundary, first_kind="vec")
        rhs = kind == "divergence" and rng.random() < 0.4  # div(u) / dt, the pressure equation's right-hand side
        names = ("rhs", "pressure_rhs") if rhs else ("div", "divergence") if kind == "divergence" else \
            ("vorticity", "curl")
        out = d.array(names, "scalar", "out")
        interior_guard(g, [(out, d.style.lit(0.0))])
        d.gather_here()
        piece_name = f"central_divergence_{dim}d" if kind == "divergence" else "vorticity_2d"
        value = d.use(piece_name, **g.neighbours(vel))["div" if kind == "divergence" else "curl"]
        if rhs:
            w.comment("the right-hand side of the pressure equation: div(u) / dt")
            value = w.let(("b", "rhs_value"), f"{value} / {d.resolve(R.TIME_STEP)}")
            what = f"Compute the pressure right-hand side from {says(piece_name)} of a velocity field"
        else:
            what = f"Compute {says(piece_name)} of a velocity field"
        w.add(f"{out}[{g.at}] = {value}")
    noun = {"magnitude": "gradient_norm", "normals": "normals", "gradient": "gradient"}.get(kind, kind)
    if kind == "divergence" and rhs:
        noun = "pressure_rhs"
    bases = ("compute_" + noun, noun + "_kernel", "eval_" + noun)
    if g.boundary == "interior":
        return d.finish(rng.choice(bases), list(g.shape),
                        f"{what} on a {dim}D grid; border cells, which lack a neighbour, get zero", tids=list("ijk"[:dim]))
    return d.finish(rng.choice(bases), list(g.shape), grid_purpose(g, what), tids=list("ijk"[:dim]))


@register("pressure_solve", 0.8, source=SOURCE)
def pressure_solve(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix, ("SolverParams",))
    dim, w = d.style.dim, d.w
    if rng.random() < 0.55:  # one Jacobi sweep
        g, p = grid(d, ("pressure", "p", "p_in"), dim)
        div = d.array(("div", "divergence", "rhs"), "scalar")
        out = d.array(("pressure_out", "p_out", "p_new"), "scalar", "out")
        interior_guard(g, [(out, g.read(p))])
        solid = solid_cells(d, g, out, d.style.lit(0.0), free_surface=True)
        d.gather_here()
        p_new = d.use(f"jacobi_pressure_{dim}d", div=g.read(div), **g.neighbours(p))["p"]
        w.add(f"{out}[{g.at}] = {p_new}")
        what = f"Relax pressure by {says(f'jacobi_pressure_{dim}d')}"
        base = rng.choice(("pressure_jacobi", "jacobi_iteration", "solve_pressure"))
    else:  # make the velocity divergence free
        g, p = grid(d, ("pressure", "p"), dim)
        vel = d.array(("velocity", "vel", "u"), "vec")
        out = d.array(("velocity_out", "vel_out", "u_new"), "vec", "out")
        interior_guard(g, [(out, g.read(vel))])
        solid = solid_cells(d, g, out, d.style.zero())
        d.gather_here()
        grad = d.use(f"central_gradient_{dim}d", **g.neighbours(p))["grad"]
        u = d.use("subtract_gradient", u=g.read(vel), grad=grad)["u"]
        w.add(f"{out}[{g.at}] = {u}")
        what = f"Project a velocity field by {says('subtract_gradient')} ({says(f'central_gradient_{dim}d')})"
        base = rng.choice(("pressure_projection", "project_velocity", "apply_pressure"))
    return d.finish(base, list(g.shape), grid_purpose(g, what) + solid, tids=list("ijk"[:dim]))


@register("reaction_diffusion", 0.5, source=SOURCE)
def reaction_diffusion(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix, ("GrayScottParams", "ReactionParams"))
    dim, w = d.style.dim, d.w
    g, u = grid(d, ("u_in", "conc_u", "U"), dim, first_range=(0.0, 1.0))
    v = d.array(("v_in", "conc_v", "V"), "scalar", lo=0.0, hi=1.0)
    u_out = d.array(("u_out", "u_next", "u_new"), "scalar", "out")
    v_out = d.array(("v_out", "v_next", "v_new"), "scalar", "out")
    interior_guard(g, [(u_out, g.read(u)), (v_out, g.read(v))])
    d.gather_here()
    varying = rng.random() < 0.35
    if varying:  # feed and kill maps paint different patterns into different regions
        from jit.code.synthesis.pieces.stencils import FEED, KILL
        d.resolve(FEED, per_item=True), d.resolve(KILL, per_item=True)
    cu, cv = w.let("u", g.read(u)), w.let("v", g.read(v))
    lap_u = d.use(f"lattice_laplacian_{dim}d", inline=True, c=cu, **g.neighbours(u))["lap"]
    lap_v = d.use(f"lattice_laplacian_{dim}d", inline=True, c=cv, **g.neighbours(v))["lap"]
    out = d.use("gray_scott", u=cu, v=cv, lap_u=lap_u, lap_v=lap_v)
    w.add(f"{u_out}[{g.at}] = {out['u']}", f"{v_out}[{g.at}] = {out['v']}")
    what = f"Advance two chemical concentrations by {says('gray_scott')}"
    if varying:
        what += " with feed and kill rates that vary from cell to cell"
    return d.finish(rng.choice(("gray_scott_step", "reaction_diffusion", "react_diffuse")), list(g.shape),
                    grid_purpose(g, what), tids=list("ijk"[:dim]))


@register("advect_grid", 1.0, source=SOURCE)
def advect_grid(rng, name, suffix, complexity):
    d = grid_draft(rng, suffix, ("AdvectParams", "FluidParams"))
    dim, w = d.style.dim, d.w
    vector = rng.random() < 0.35  # self-advection of the velocity, else a carried scalar
    g, vel = grid(d, ("velocity", "vel", "u"), dim, first_kind="vec", boundary="clamp")
    if vector:
        src = vel
        out = d.array(("velocity_out", "vel_out", "u_new"), "vec", "out")
    else:
        src = d.array(("density", "dye", "field", "smoke"), "scalar")
        out = d.array((f"{src}_out", f"{src}_new"), "scalar", "out")
    d.gather_here()
    p = w.let(("p", "pos", "node"), d.style.vec(*(d.style.cast(c) for c in "ijk"[:dim])))
    u = w.let(("u", "vel", "u_cell"), g.read(vel))
    method = rng.choice(("backtrace_euler", "backtrace_euler", "backtrace_rk2"))
    bound = {"velocity": vel} if method == "backtrace_rk2" else {}
    back = d.use(method, inline=True, p=p, u=u, **bound)["p"]
    interp = f"{('bilinear', 'trilinear')[dim - 2]}_sample{'_vector' if vector else ''}"
    value = d.use(interp, inline=True, field=src, p=back)["value"]
    tail = ""
    extra = []
    if not vector and rng.random() < 0.4:
        value = d.use("grid_decay", c=value)["c"]
        extra.append(says("grid_decay"))
    if extra:
        tail = f", with {join(extra)}"
    w.add(f"{out}[{g.at}] = {value}")
    carried = "the velocity field along itself" if vector else "a scalar field through a velocity field"
    what = f"Advect {carried} semi-Lagrangian style: {says(method)} and {says(interp)}{tail}"
    detail = "Backtraced points outside the grid sample its border."
    return d.finish(rng.choice(("advect", "advect_semi_lagrangian", "advect_field")), list(g.shape),
                    f"{what} on a {dim}D grid", detail, tids=list("ijk"[:dim]))


# ---------------------------------------------------------------------------------------------
# particle fluids


@register("sph_fluid", 1.2, source=SOURCE)
def sph_fluid(rng, name, suffix, complexity):
    st = style(rng, f64=0.15, dim2=0.25)
    d = draft(rng, suffix, st, ("FluidParams", "SPHParams"))
    w = d.w
    n = rng.choice((16, 32, 64))
    d.item_shape = (n,)
    x = d.array(R.POSITION.names, "vec", lo=-1.0, hi=1.0)
    xi = w.let(("xi", "x_i", "p"), f"{x}[tid]")
    h = d.resolve(R.SMOOTHING_LENGTH)
    job = rng.choice(("density", "density", "forces", "xsph"))
    individual = job == "density" and rng.random() < 0.3
    if individual:  # every neighbour brings its own mass
        masses = d.array(("masses", "particle_mass"), "scalar", lo=0.5, hi=2.0)
    else:
        mass = d.resolve(R.MASS, per_item=False, names=("particle_mass", "mass"))
    zero_s, zero_v = w.lit(0.0) if st.f64 else "float(0.0)", st.zero()
    if job == "density":
        rho = w.let(("rho", "density"), zero_s)
        j, how = neighbour_loop(d, n, x, (h, R.SMOOTHING_LENGTH), xi)
        r2 = w.let(("r2", "dist_sq"), f"wp.length_sq({xi} - {x}[{j}])")
        if individual:
            w.add(f"{rho} += {d.use('poly6_density', r2=r2, mass=f'{masses}[{j}]', h=h)['rho']}")
        else:  # one mass for all: it multiplies the sum once, with the normalisation
            w.add(f"{rho} += {d.use('poly6_weight', r2=r2, h=h)['w']}")
        w.depth -= 1
        norm = d.scalar(("density_normalization", "poly6_norm"), lo=1.0, hi=100.0)
        w.rebind(rho, f"{rho} * {norm}" if individual else f"{rho} * ({mass} * {norm})")
        densities = d.array(("densities", "particle_rho", "rho_out"), "scalar", "out")
        w.add(f"{densities}[tid] = {rho}")
        purpose = f"Sum {says('poly6_density')} {how} into the densities of {st.dim}D particles"
        if individual:
            purpose += " (particles of individual masses)"
        if rng.random() < 0.5:
            eos = rng.choice(("tait_pressure", "clamped_linear_pressure"))
            p = d.use(eos, rho=rho)["p"]
            pressures = d.array(("pressures", "particle_p", "p_out"), "scalar", "out")
            w.add(f"{pressures}[tid] = {p}")
            purpose += f", and their pressures from {says(eos)}"
        base = rng.choice(("compute_density", "sph_density", "update_density"))
    elif job == "forces":
        rho = d.array(("densities", "particle_rho"), "scalar", lo=0.5, hi=2.0)
        pres = d.array(("pressures", "particle_p"), "scalar", lo=0.0, hi=5.0)
        viscous = rng.random() < 0.6
        if viscous:
            vel = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0)
            vi = w.let(("vi", "v_i"), f"{vel}[tid]")
        pi, rhoi = w.let(("p_i", "pressure_i"), f"{pres}[tid]"), w.let(("rhoi", "rho_i"), f"{rho}[tid]")
        # per unit mass, each before its kernel's normalisation (the spiky gradient's, the viscosity Laplacian's)
        acc_p = w.let(("a_p", "acc_pressure", "a_pressure_sum"), zero_v)
        acc_v = w.let(("a_v", "acc_viscous", "a_visc_sum"), zero_v) if viscous else None
        j, how = neighbour_loop(d, n, x, (h, R.SMOOTHING_LENGTH), xi)
        with w.block(f"if {j} != tid"):
            dvec = w.let(("d", "x_ij"), f"{xi} - {x}[{j}]")
            r = w.let(("r", "dist"), w.length(dvec))
            rhoj = w.let(("rhoj", "rho_j"), f"{rho}[{j}]")  # squared in the pressure term: read once
            ap = d.use("pressure_pair_acceleration", d=dvec, r=r, h=h, mass=mass, p_i=pi, rho_i=rhoi,
                       p_j=f"{pres}[{j}]", rho_j=rhoj)["a"]
            w.add(f"{acc_p} += {ap}")
            if viscous:
                av = d.use("viscosity_pair_acceleration", r=r, h=h, mass=mass, v_i=vi, v_j=f"{vel}[{j}]", rho_i=rhoi,
                           rho_j=rhoj)["a"]
                w.add(f"{acc_v} += {av}")
        w.depth -= 1
        terms = [says("pressure_pair_acceleration")] + ([says("viscosity_pair_acceleration")] if viscous else [])
        source = "Mueller et al. 2003" if st.dim == 3 else "the 2D kernels"
        lo, hi = norm_range("spiky_grad", st.dim)
        shared = viscous and NORMS["spiky_grad", st.dim] == NORMS["visc_lap", st.dim]  # 3D: both 45 / (pi h^6)
        spiky = d.scalar(("kernel_norm", "pair_norm") if shared else ("spiky_grad_norm", "spiky_norm"), lo=lo, hi=hi)
        if shared:  # one constant for both terms, as the host computes it once
            w.add(f"# the caller computes the normalisation once from the smoothing length h ({source}):",
                  f"# {spiky} = {norm_text('spiky_grad', st.dim)}, the spiky gradient's and the viscosity "
                  "Laplacian's alike")
            a = w.let(("a", "accel", "a_total"), f"({acc_p} + {acc_v}) * {spiky}")
        elif viscous:
            lo, hi = norm_range("visc_lap", st.dim)
            visc = d.scalar(("visc_lap_norm", "viscosity_norm"), lo=lo, hi=hi)
            w.add(f"# normalisations the caller computes once from the smoothing length h ({source}):",
                  f"# {spiky} = {norm_text('spiky_grad', st.dim)} for the spiky gradient,",
                  f"# {visc} = {norm_text('visc_lap', st.dim)} for the viscosity Laplacian")
            a = w.let(("a", "accel", "a_total"), f"{acc_p} * {spiky} + {acc_v} * {visc}")
        else:
            w.add(f"# the caller computes the normalisation once from the smoothing length h ({source}):",
                  f"# {spiky} = {norm_text('spiky_grad', st.dim)} for the spiky gradient")
            a = w.let(("a", "accel", "a_total"), f"{acc_p} * {spiky}")
        if rng.random() < 0.4:
            g = d.resolve(R.GRAVITY)
            w.rebind(a, f"{a} + {g}")
            terms.append("gravity")
        purpose = f"Accumulate {join(terms)} on each of the {st.dim}D particles {how}"
        if viscous and rng.random() < 0.4:  # and kick the velocities right away
            v_new = d.use("velocity_kick", v=vi, a=a)["v"]
            out = d.array(paired(vel), "vec", "out")
            w.add(f"{out}[tid] = {v_new}")
            purpose += f", then apply {says('velocity_kick')}"
        else:
            out = d.array(("accelerations", "particle_a", "forces_out"), "vec", "out")
            w.add(f"{out}[tid] = {a}")
        base = rng.choice(("compute_forces", "sph_forces", "pressure_and_viscosity"))
    else:
        rho = d.array(("densities", "particle_rho"), "scalar", lo=0.5, hi=2.0)
        vel = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0)
        vi = w.let(("vi", "v_i"), f"{vel}[tid]")
        dv = w.let(("dv_sum", "correction"), zero_v)
        j, how = neighbour_loop(d, n, x, (h, R.SMOOTHING_LENGTH), xi)
        r2 = w.let(("r2", "dist_sq"), f"wp.length_sq({xi} - {x}[{j}])")
        contrib = d.use("xsph_pair", r2=r2, h=h, mass=mass, v_i=vi, v_j=f"{vel}[{j}]", rho_j=f"{rho}[{j}]")["dv"]
        w.add(f"{dv} += {contrib}")
        w.depth -= 1
        c = d.resolve(XSPH)
        norm = d.scalar(("density_normalization", "poly6_norm"), lo=1.0, hi=100.0)
        out = d.array((*paired(vel), "v_smoothed"), "vec", "out")
        w.add(f"{out}[tid] = {vi} + {dv} * ({c} * {norm})")
        purpose = f"Apply {says('xsph_pair')} to {st.dim}D particles {how}"
        base = rng.choice(("xsph_viscosity", "smooth_velocities"))
    return d.finish(base, [n], purpose)


# ---------------------------------------------------------------------------------------------
# reductions


@register("reduce_particles", 1.0, source=SOURCE)
def reduce_particles(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.3, dim2=0.3), ())
    w = d.w
    its = items(d, "particles", (16, 32, 64, 128), ("num_particles", "count"), guard=0.15)
    d.gather_here()
    kind = rng.choice(("energy", "energy", "momentum", "com", "max_speed", "bounds"))
    terms = {"energy": pick_weighted(rng, ["kinetic_energy", "potential_energy"], 2 if rng.random() < 0.5 else 1),
             "momentum": ["linear_momentum"] + (["angular_momentum"] if d.style.dim == 3 and rng.random() < 0.5
                                                else []),
             "com": ["mass_moment"], "max_speed": ["speed"], "bounds": []}[kind]
    reads = {r for t in terms for r in PIECES[t].needs} | ({"x"} if kind == "bounds" else set())
    x = d.array(R.POSITION.names, "vec", lo=-1.0, hi=1.0) if "x" in reads else ""
    v = d.array(R.VELOCITY.names, "vec", lo=-1.0, hi=1.0) if "v" in reads else ""
    # a center of mass weights by each particle's own mass: with one mass for all it is the mean position
    mass = d.resolve(R.MASS, per_item=True if kind == "com" else None) if "m" in reads else ""
    uses = [r for t in terms for r in PIECES[t].needs] + (["x", "x"] if kind == "bounds" else [])
    uses += ["v"] if "kinetic_energy" in terms else []  # its dot product reads v twice
    xi = (w.let(("xi", "p"), f"{x}[tid]") if uses.count("x") > 1 else f"{x}[tid]") if x else ""  # read once
    vi = (w.let(("vi", "vel"), f"{v}[tid]") if uses.count("v") > 1 else f"{v}[tid]") if v else ""
    groups = rng.random() < 0.25 and kind in ("energy", "momentum", "com")
    if groups:
        n_groups = rng.choice((2, 4, 8))
        owner = d.array(("group", "body_index", "cluster"), T.INT32, lo=0, hi=n_groups - 1)
        slot, shape, per = w.let(("g", "grp"), f"{owner}[tid]"), (n_groups,), " per group"
    else:
        slot, shape, per = "0", (1,), ""
    purpose = ""
    if kind == "energy":
        values = [d.use(t, m=mass, v=vi, x=xi)["e"] if t == "potential_energy" else
                  d.use(t, m=mass, v=vi)["e"] for t in terms]
        e = total(d, values, ("e", "energy"))
        which = {"kinetic_energy": "kinetic_energy", "potential_energy": "potential_energy"}[terms[0]] \
            if len(terms) == 1 else "total_energy"
        kind = which  # the kernel is named for what it sums
        out = d.array((which, "energy") if len(terms) == 1 else ("total_energy", "energy"), "scalar", "out", shape=shape)
        w.add(f"wp.atomic_add({out}, {slot}, {e})")
        purpose = f"Sum {join([says(t) for t in terms])} of {d.style.dim}D particles{per}"
    elif kind == "momentum":
        for t in terms:
            out_p = d.use(t, m=mass, v=vi, **({"x": xi} if t == "angular_momentum" else {}))
            value = next(iter(out_p.values()))
            kind_ = "vec3" if t == "angular_momentum" else "vec"
            out = d.array(("total_momentum", "momentum") if t == "linear_momentum" else
                          ("total_angular_momentum", "angular_momentum"), kind_, "out", shape=shape)
            w.add(f"wp.atomic_add({out}, {slot}, {value})")
        purpose = f"Sum {join([says(t) for t in terms])} of {d.style.dim}D particles{per}"
    elif kind == "com":
        mx = d.use("mass_moment", m=mass, x=xi)["mx"]
        moment = d.array(("mass_moment", "weighted_sum"), "vec", "out", shape=shape)
        total_m = d.array(("total_mass", "mass_sum"), "scalar", "out", shape=shape)
        w.add(f"wp.atomic_add({moment}, {slot}, {mx})", f"wp.atomic_add({total_m}, {slot}, {mass})")
        purpose = f"Sum {says('mass_moment')} and the total mass of {d.style.dim}D particles{per}"
    elif kind == "max_speed":
        s = d.use("speed", v=vi)["s"]
        out = d.array(("max_speed", "v_max"), "scalar", "inout", lo=0.0, hi=0.0, shape=(1,))
        w.add(f"wp.atomic_max({out}, 0, {s})")
        d.differentiable = False
        purpose = "Find the largest particle speed (for an adaptive time step)"
    else:
        lower = d.array(("lower", "bounds_min", "box_lower"), "vec", "inout", lo=10.0, hi=10.0, shape=(1,))
        upper = d.array(("upper", "bounds_max", "box_upper"), "vec", "inout", lo=-10.0, hi=-10.0, shape=(1,))
        r = d.resolve(R.RADIUS)
        pad = w.let(("pad", "margin"), d.style.vec(*[r] * d.style.dim))
        w.add(f"wp.atomic_min({lower}, 0, {xi} - {pad})", f"wp.atomic_max({upper}, 0, {xi} + {pad})")
        d.differentiable = False
        padding = "one radius shared by every particle" if w.uniform(r) else "each particle's radius"
        purpose = f"Grow the bounding box of particles, padded by {padding}"
    return d.finish(rng.choice(("sum_" + kind, "accumulate_" + kind)), [its.launch], purpose)


# ---------------------------------------------------------------------------------------------
# particles and grids together


@register("particle_grid_transfer", 1.0, source=SOURCE)
def particle_grid_transfer(rng, name, suffix, complexity):
    d = draft(rng, suffix, style(rng, f64=0.15, dim2=0.5), ("GridParams", "TransferParams"))
    w, st = d.w, d.style
    dim = st.dim
    its = items(d, "particles", (32, 64, 100, 128), ("num_particles", "n"), guard=0.15)
    shape = grid_shape(rng, dim)
    x = d.array(R.POSITION.names, "vec", lo=-0.5, hi=0.5)
    d.gather_here()
    job = rng.choice(("p2g", "g2p", "tracers", "flip"))
    xp = w.let(("xp", "x_p", "pos"), f"{x}[tid]") if job == "tracers" else f"{x}[tid]"  # read more than once
    p = d.use("world_to_grid", x=xp)["p"]
    interp = ("bilinear", "trilinear")[dim - 2]
    if job == "p2g":
        mass = d.resolve(R.MASS)
        grid_m = d.array(("grid_mass", "mass_grid", "grid_m"), "scalar", "out", shape=shape)
        d.use(f"{interp}_splat", inline=True, field=grid_m, p=p, value=mass)
        transferred = ["mass"]
        if rng.random() < 0.6:
            v = d.array(R.VELOCITY.names, "vec")
            mv = w.let(("mv", "momentum"), f"{v}[tid] * {mass}")
            grid_mv = d.array(("grid_momentum", "momentum_grid", "grid_mv"), "vec", "out", shape=shape)
            d.use(f"{interp}_splat_vector", inline=True, field=grid_mv, p=p, value=mv)
            transferred.append("momentum")
        purpose = f"Transfer particle {join(transferred)} to a {dim}D grid with {interp} splat weights"
        base = rng.choice(("particle_to_grid", "p2g", "splat_particles"))
    else:
        grid_v = d.array(("grid_velocity", "grid_v", "vel_grid"), "vec", shape=shape)
        u = d.use(f"{interp}_sample_vector", inline=True, field=grid_v, p=p)["value"]
        if job == "g2p":
            out = d.array(("particle_v", "velocities", "v_out"), "vec", "out")
            w.add(f"{out}[tid] = {u}")
            purpose = f"Gather particle velocities from a {dim}D grid by {says(f'{interp}_sample_vector')} (PIC)"
            base = rng.choice(("grid_to_particle", "g2p", "gather_velocity"))
        elif job == "tracers":
            dt = d.resolve(R.TIME_STEP)
            out = d.array((f"{x}_out", "x_new", "tracers_out"), "vec", "out")
            if rng.random() < 0.5:
                w.comment("midpoint rule: the velocity half a step ahead carries the tracer")
                x_mid = w.let(("x_mid", "midpoint"), f"{xp} + {u} * ({st.lit(0.5)} * {dt})")
                p_mid = d.use("world_to_grid", x=x_mid)["p"]
                u_mid = d.use(f"{interp}_sample_vector", inline=True, field=grid_v, p=p_mid)["value"]
                w.add(f"{out}[tid] = {xp} + {u_mid} * {dt}")
                step = "a midpoint (RK2) step"
            else:
                w.add(f"{out}[tid] = {xp} + {u} * {dt}")
                step = "an Euler step"
            purpose = f"Move passive tracers by {step} through a {dim}D grid velocity " \
                      f"({says(f'{interp}_sample_vector')})"
            base = rng.choice(("advect_tracers", "move_markers"))
        else:
            grid_v_old = d.array(("grid_velocity_old", "grid_v_prev"), "vec", shape=shape)
            u_old = d.use(f"{interp}_sample_vector", inline=True, field=grid_v_old, p=p)["value"]
            v = d.array(R.VELOCITY.names, "vec", "inout")
            ratio = d.resolve(FLIP_RATIO)
            w.comment("FLIP carries the grid's change, PIC its value; blend the two")
            flip = w.let(("v_flip", "flip"), f"{v}[tid] + ({u} - {u_old})")
            w.add(f"{v}[tid] = {u} + ({flip} - {u}) * {ratio}")
            purpose = f"Update particle velocities from a {dim}D grid by a FLIP/PIC blend of {interp} samples"
            base = rng.choice(("flip_update", "g2p_flip", "update_particle_velocities"))
    return d.finish(base, [its.launch], purpose)


@register("grid_source", 0.5, source=SOURCE)
def grid_source(rng, name, suffix, complexity):
    paint = rng.random() < 0.5
    d = grid_draft(rng, suffix, ("BrushParams", "Brush") if paint else ("SourceParams", "EmitterParams"))
    dim, w, st = d.style.dim, d.w, d.style
    g, field = grid(d, ("density", "smoke", "temperature", "dye"), dim, boundary="interior")
    out = d.array((f"{field}_out", f"{field}_new"), "scalar", "out")
    d.gather_here()
    origin, dx = d.resolve(Role("grid origin", "vec", -1.0, -0.5, ("origin", "grid_lower"))), d.resolve(R.CELL_SIZE)
    center = d.resolve(Role("brush center", "vec", -0.5, 0.5, ("brush_center", "brush_pos", "center")) if paint else
                       Role("emitter center", "vec", -0.5, 0.5, ("emitter_center", "source_center", "center")))
    pos = w.let(("pos", "cell_pos", "x"), f"{origin} + {st.vec(*(st.cast(c) for c in 'ijk'[:dim]))} * {dx}")
    dist = w.let(("dist", "r"), w.length(f"{pos} - {center}"))
    weight = d.use("smooth_falloff", dist=dist)["weight"]
    c = w.let(("c", "value"), g.read(field))
    if not paint:
        rate, dt = d.resolve(Role("emission rate", "scalar", 0.5, 5.0, ("rate", "emission_rate", "strength"))), \
            d.resolve(R.TIME_STEP)
        value = w.let(("c_new", "value_new"), f"{c} + {rate} * {weight} * {dt}")
        purpose = f"Emit into a {dim}D grid around a point with {says('smooth_falloff')}"
        if rng.random() < 0.5:
            value = d.use("grid_decay", c=value)["c"]
            purpose += f", then {says('grid_decay')}"
        w.add(f"{out}[{g.at}] = {value}")
    else:
        w.comment("paint: raise the field to the brush's value, never lower it")
        amount = d.resolve(Role("brush value", "scalar", 0.5, 2.0, ("amount", "brush_value", "target")))
        w.add(f"{out}[{g.at}] = wp.max({c}, {amount} * {weight})")
        purpose = f"Paint a brush with {says('smooth_falloff')} into a {dim}D grid (keeping the larger value)"
    return d.finish(rng.choice(("paint_brush", "apply_brush") if paint else ("add_source", "emit")), list(g.shape),
                    purpose,
                    tids=list("ijk"[:dim]))
