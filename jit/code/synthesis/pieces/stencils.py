"""Finite-difference stencils on regular 2D and 3D grids, and the updates built on them.

A stencil reads the values at a cell and its axis neighbours (``left``/``right`` along x,
``down``/``up`` along y, ``back``/``front`` along z), which the kernel gathers with its own
boundary handling, and gives a Laplacian, a gradient, a divergence or a curl scaled by the
inverse cell size. Updates combine them: explicit diffusion, a Jacobi sweep of the pressure
Poisson equation, a pressure projection, a wave-equation step, a Gray-Scott reaction. What it
leaves out: reading the neighbours (boundary handling is the kernel's) and interpolation
(``sampling``).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Role, Writer, piece
from jit.code.synthesis.pieces.roles import CELL_SIZE, DIFFUSIVITY, GRID_VALUE, GRID_VECTOR, INV_CELL_SIZE, TIME_STEP

LAPLACIAN = Role("Laplacian", "scalar")  # derived
GRADIENT = Role("gradient", "vec")
DIVERGENCE = Role("divergence", "scalar")
CURL = Role("vorticity", "scalar")
WAVE_SPEED = Role("wave speed", "scalar", 0.1, 1.0, ("wave_speed", "speed"))
FEED = Role("feed rate", "scalar", 0.01, 0.06, ("feed", "feed_rate"), family="gray_scott")
KILL = Role("kill rate", "scalar", 0.04, 0.07, ("kill", "kill_rate"), family="gray_scott")
DIFFUSION_U = Role("diffusion rate of u", "scalar", 0.1, 0.2, ("diffusion_u", "Du", "d_u"), family="diffusion")
DIFFUSION_V = Role("diffusion rate of v", "scalar", 0.05, 0.1, ("diffusion_v", "Dv", "d_v"), family="diffusion")
SPECIES = Role("concentration", "scalar", 0.0, 1.0, ("u", "v", "concentration"))
REACTION_DT = Role("reaction time step", "scalar", 0.5, 1.0, ("dt", "time_step"))
SIDES = {2: ("left", "right", "down", "up"), 3: ("left", "right", "down", "up", "back", "front")}


def _sides(dim: int, role: Role) -> dict[str, Role]:
    return {s: role for s in SIDES[dim]}


def _register_stencils(dim: int) -> None:
    """The Laplacian, gradient and divergence of one dimension (their inputs differ by dimension)."""
    sides = SIDES[dim]
    nd = f"{dim}d"

    @piece(f"laplacian_{nd}", needs={"c": GRID_VALUE, **_sides(dim, GRID_VALUE), "inv_dx": INV_CELL_SIZE},
           gives={"lap": LAPLACIAN}, says=f"a {('five', 'seven')[dim - 2]}-point Laplacian", dims=(dim,))
    def laplacian(w: Writer, c, inv_dx, **nbr):
        total = w.let(("neighbours", "nbr_sum"), " + ".join(nbr[s] for s in sides))
        return {"lap": w.let(("lap", "laplacian"), f"({total} - {w.lit(2.0 * dim)} * {c}) * {inv_dx} * {inv_dx}")}

    @piece(f"lattice_laplacian_{nd}", needs={"c": GRID_VALUE, **_sides(dim, GRID_VALUE)}, gives={"lap": LAPLACIAN},
           says="a Laplacian in grid units", dims=(dim,), weight=0.0)
    def lattice_laplacian(w: Writer, c, **nbr):
        names = (f"lap_{c}", "lap") if c.isidentifier() and len(c) <= 2 else ("lap", "laplacian")
        return {"lap": w.let(names, f"{' + '.join(nbr[s] for s in sides)} - {w.lit(2.0 * dim)} * {c}")}

    @piece(f"central_gradient_{nd}", needs={**_sides(dim, GRID_VALUE), "inv_dx": INV_CELL_SIZE},
           gives={"grad": GRADIENT}, says="a central-difference gradient", dims=(dim,))
    def gradient(w: Writer, inv_dx, **nbr):
        parts = [f"{nbr[hi]} - {nbr[lo]}" for lo, hi in zip(sides[::2], sides[1::2])]
        half = w.let(("half_inv_dx", "scale"), f"{w.lit(0.5)} * {inv_dx}")
        return {"grad": w.let(("grad", "gradient"), f"{w.style.vec(*parts)} * {half}")}

    @piece(f"central_difference_{nd}", needs=_sides(dim, GRID_VALUE), gives={"grad": GRADIENT},
           says="central differences (the gradient's direction)", dims=(dim,))
    def difference(w: Writer, **nbr):
        parts = [f"{nbr[hi]} - {nbr[lo]}" for lo, hi in zip(sides[::2], sides[1::2])]
        return {"grad": w.let(("grad", "diff"), w.style.vec(*parts))}

    @piece(f"central_divergence_{nd}", needs={**_sides(dim, GRID_VECTOR), "inv_dx": INV_CELL_SIZE},
           gives={"div": DIVERGENCE}, says="a central-difference divergence", dims=(dim,))
    def divergence(w: Writer, inv_dx, **nbr):
        terms = [f"({nbr[hi]}[{a}] - {nbr[lo]}[{a}])" for a, (lo, hi) in enumerate(zip(sides[::2], sides[1::2]))]
        return {"div": w.let(("div", "divergence"), f"({' + '.join(terms)}) * {w.lit(0.5)} * {inv_dx}")}


_register_stencils(2)
_register_stencils(3)


@piece("vorticity_2d", needs={**_sides(2, GRID_VECTOR), "inv_dx": INV_CELL_SIZE}, gives={"curl": CURL},
       says="the vorticity (the curl of a 2D velocity)", dims=(2,))
def vorticity_2d(w: Writer, left, right, down, up, inv_dx):
    dvdx = w.let(("dvdx", "dv_dx"), f"{right}[1] - {left}[1]")
    dudy = w.let(("dudy", "du_dy"), f"{up}[0] - {down}[0]")
    return {"curl": w.let(("curl", "omega"), f"({dvdx} - {dudy}) * {w.lit(0.5)} * {inv_dx}")}


@piece("explicit_diffusion", needs={"c": GRID_VALUE, "lap": LAPLACIAN, "kappa": DIFFUSIVITY, "dt": TIME_STEP},
       gives={"c": GRID_VALUE}, says="an explicit diffusion step", weight=2.0)
def explicit_diffusion(w: Writer, c, lap, kappa, dt):
    return {"c": w.let(("c_new", "value_new", "result"), f"{c} + {kappa} * {dt} * {lap}")}


@piece("jacobi_pressure_2d", needs={**_sides(2, GRID_VALUE), "div": DIVERGENCE, "dx": CELL_SIZE},
       gives={"p": GRID_VALUE}, says="a Jacobi sweep of the pressure Poisson equation", dims=(2,))
def jacobi_pressure_2d(w: Writer, left, right, down, up, div, dx):
    w.comment("solve (sum of neighbours - 4 p) / dx^2 = div for p")
    total = f"{left} + {right} + {down} + {up}"
    return {"p": w.let(("p_new", "pressure"), f"({total} - {div} * {dx} * {dx}) * {w.lit(0.25)}")}


@piece("jacobi_pressure_3d", needs={**_sides(3, GRID_VALUE), "div": DIVERGENCE, "dx": CELL_SIZE},
       gives={"p": GRID_VALUE}, says="a Jacobi sweep of the pressure Poisson equation", dims=(3,))
def jacobi_pressure_3d(w: Writer, left, right, down, up, back, front, div, dx):
    w.comment("solve (sum of neighbours - 6 p) / dx^2 = div for p")
    total = f"{left} + {right} + {down} + {up} + {back} + {front}"
    return {"p": w.let(("p_new", "pressure"), f"({total} - {div} * {dx} * {dx}) / {w.lit(6.0)}")}


@piece("subtract_gradient", needs={"u": GRID_VECTOR, "grad": GRADIENT}, gives={"u": GRID_VECTOR},
       says="subtraction of the pressure gradient")
def subtract_gradient(w: Writer, u, grad):
    return {"u": w.let(("u_new", "vel_new", "projected"), f"{u} - {grad}")}


@piece("wave_step", needs={"c": GRID_VALUE, "prev": GRID_VALUE, "lap": LAPLACIAN, "speed": WAVE_SPEED,
                           "dt": TIME_STEP},
       gives={"c": GRID_VALUE}, says="a leapfrog step of the wave equation")
def wave_step(w: Writer, c, prev, lap, speed, dt):
    cdt = w.let(("cdt", "courant"), f"{speed} * {dt}")
    return {"c": w.let(("c_next", "next_value"), f"{w.lit(2.0)} * {c} - {prev} + {cdt} * {cdt} * {lap}")}


@piece("gray_scott", needs={"u": SPECIES, "v": SPECIES, "lap_u": LAPLACIAN, "lap_v": LAPLACIAN,
                            "du": DIFFUSION_U, "dv": DIFFUSION_V, "feed": FEED, "kill": KILL, "dt": REACTION_DT},
       gives={"u": SPECIES, "v": SPECIES}, says="a Gray-Scott reaction-diffusion step")
def gray_scott(w: Writer, u, v, lap_u, lap_v, du, dv, feed, kill, dt):
    uvv = w.let(("uvv", "reaction"), f"{u} * {v} * {v}")
    one = w.lit(1.0)
    u_new = w.let(("u_new", "u_next"), f"{u} + {dt} * ({du} * {lap_u} - {uvv} + {feed} * ({one} - {u}))")
    v_new = w.let(("v_new", "v_next"), f"{v} + {dt} * ({dv} * {lap_v} + {uvv} - ({feed} + {kill}) * {v})")
    return {"u": u_new, "v": v_new}
