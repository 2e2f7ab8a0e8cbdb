"""Semi-Lagrangian advection: trace a grid node back along the velocity, then sample there.

Points are in grid units, so a velocity in world units moves a point by ``u * dt / dx``. The
backtrace is a forward Euler or a midpoint (second-order Runge-Kutta) step; the value found
there, interpolated (``sampling``), is the node's new value, optionally decaying by a per-step
factor the caller computes. What it leaves out: the interpolation itself and the boundary
conditions of the velocity field.
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Writer, piece
from jit.code.synthesis.pieces.roles import DECAY_FACTOR, GRID_POINT, GRID_VALUE, GRID_VECTOR, INV_CELL_SIZE, TIME_STEP
from jit.code.synthesis.pieces.sampling import VECTOR_GRID, sampler


@piece("backtrace_euler", needs={"p": GRID_POINT, "u": GRID_VECTOR, "dt": TIME_STEP, "inv_dx": INV_CELL_SIZE},
       gives={"p": GRID_POINT}, says="a forward Euler backtrace", weight=1.5)
def backtrace_euler(w: Writer, p, u, dt, inv_dx):
    w.comment("where the material arriving at this node was one step ago, in grid units")
    return {"p": w.let(("p_back", "origin_pt", "departure"), f"{p} - {u} * ({dt} * {inv_dx})")}


@piece("backtrace_rk2", needs={"p": GRID_POINT, "u": GRID_VECTOR, "velocity": VECTOR_GRID, "dt": TIME_STEP,
                               "inv_dx": INV_CELL_SIZE},
       gives={"p": GRID_POINT}, says="a midpoint (RK2) backtrace")
def backtrace_rk2(w: Writer, p, u, velocity, dt, inv_dx):
    step = w.let(("step", "h"), f"{dt} * {inv_dx}")
    mid = w.let(("p_mid", "midpoint"), f"{p} - {u} * ({w.lit(0.5)} * {step})")
    w.comment("the velocity half a step back carries the point the whole step")
    u_mid = w.let(("u_mid", "vel_mid"), f"{sampler(w, w.style.dim, 'vec')}({velocity}, {mid})")
    return {"p": w.let(("p_back", "departure"), f"{p} - {u_mid} * {step}")}


@piece("grid_decay", needs={"c": GRID_VALUE, "factor": DECAY_FACTOR}, gives={"c": GRID_VALUE},
       says="exponential dissipation by a per-step factor")
def grid_decay(w: Writer, c, factor):
    w.add("# " + w.pick(f"{factor} = exp(-rate * dt) for a dissipation rate, computed once per step by the caller",
                        f"the caller passes {factor} = exp(-rate * dt), the step's decay, one value for every cell"))
    return {"c": w.update(c, f"{c} * {factor}", "decayed", "faded")}


@piece("nonnegative", needs={"c": GRID_VALUE}, gives={"c": GRID_VALUE}, says="a non-negativity clamp")
def nonnegative(w: Writer, c):
    w.comment("a discrete step can undershoot below zero; a density cannot be negative")
    return {"c": w.update(c, f"wp.max({c}, {w.lit(0.0)})", "c_clamped", "c_pos")}
