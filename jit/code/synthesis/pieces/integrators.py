"""Time integration of particle states: Euler steps, damping, limits.

Each step reads a position, a velocity and an acceleration and gives the new state; the
accelerations come from forces (``forces``). What it leaves out: rigid-body rotation
(``transforms``), position-based corrections (``forces``: distance constraints), and velocity
Verlet, whose closing kick needs the forces at the new positions (a second launch: a kernel
storing the half-step velocity as the particle's velocity reads as a bug).
"""

from __future__ import annotations

from jit.code.synthesis.pieces.base import Writer, piece
from jit.code.synthesis.pieces.roles import (ACCELERATION, DAMPING_FACTOR, FORCE, GRAVITY, INV_MASS, MASS, MAX_SPEED,
                                             POSITION, TIME_STEP, VELOCITY)


@piece("symplectic_euler", needs={"x": POSITION, "v": VELOCITY, "a": ACCELERATION, "dt": TIME_STEP},
       gives={"x": POSITION, "v": VELOCITY}, says="a symplectic Euler step", weight=2.0)
def symplectic_euler(w: Writer, x, v, a, dt):
    w.comment("semi-implicit: the new velocity moves the position",
              "symplectic Euler: velocity first, then the position with the updated velocity",
              "update v, then move x with the new v")
    v_new = w.update(v, f"{v} + {a} * {dt}", "v_new", "vel", "v_next")
    return {"v": v_new, "x": w.update(x, f"{x} + {v_new} * {dt}", "x_new", "pos", "x_next")}


@piece("explicit_euler", needs={"x": POSITION, "v": VELOCITY, "a": ACCELERATION, "dt": TIME_STEP},
       gives={"x": POSITION, "v": VELOCITY}, says="an explicit Euler step", weight=0.2)
def explicit_euler(w: Writer, x, v, a, dt):
    w.comment("forward Euler: the position moves with the velocity from before this step's acceleration")
    x_new = w.update(x, f"{x} + {v} * {dt}", "x_new", "pos", "x_next")
    return {"x": x_new, "v": w.update(v, f"{v} + {a} * {dt}", "v_new", "vel", "v_next")}


@piece("acceleration_from_inverse_mass", needs={"f": FORCE, "inv_mass": INV_MASS, "gravity": GRAVITY},
       gives={"a": ACCELERATION}, says="accelerations from forces and inverse masses under gravity", weight=2.0)
def acceleration_from_inverse_mass(w: Writer, f, inv_mass, gravity):
    # pinned particles returned already, or one inverse mass for all: nothing to tell apart
    if inv_mass in w.nonzero or w.uniform(inv_mass):
        return {"a": w.let(("a", "accel"), f"{f} * {inv_mass} + {gravity}")}
    w.comment("pinned ones (zero inverse mass) do not fall",
              "gravity only where there is mass: inv_mass == 0 marks a pinned one",
              "wp.nonzero: no gravity on kinematic ones (zero inverse mass)")
    return {"a": w.let(("a", "accel"), f"{f} * {inv_mass} + {gravity} * wp.nonzero({inv_mass})")}


@piece("acceleration_from_mass", needs={"f": FORCE, "mass": MASS, "gravity": GRAVITY}, gives={"a": ACCELERATION},
       says="accelerations from forces and masses under gravity")
def acceleration_from_mass(w: Writer, f, mass, gravity):
    return {"a": w.let(("a", "accel"), f"{f} / {mass} + {gravity}")}


@piece("velocity_damping", needs={"v": VELOCITY, "factor": DAMPING_FACTOR}, gives={"v": VELOCITY},
       says="velocity damping by a per-step factor")
def velocity_damping(w: Writer, v, factor):
    # the factor is one value for the whole launch: the caller computes exp(-k dt) (or 1 - k dt) once
    # rather than every thread computing it again
    w.add("# " + w.pick(f"{factor} = exp(-rate * dt) for a damping rate, computed once per step by the caller",
                        f"the caller passes {factor} = exp(-rate * dt): the exact decay of dv/dt = -rate * v over the step",
                        f"{factor} is the step's decay exp(-rate * dt), one value for the whole launch"))
    return {"v": w.update(v, f"{v} * {factor}", "v_damped")}


@piece("clamp_speed", needs={"v": VELOCITY, "max_speed": MAX_SPEED}, gives={"v": VELOCITY},
       says="a speed limit", weight=0.7)
def clamp_speed(w: Writer, v, max_speed):
    v = w.own(v, "v")
    if w.coin(0.6):
        speed = w.let("speed", w.length(v))
        with w.block(f"if {speed} > {max_speed}"):
            w.rebind(v, f"{v} * ({max_speed} / {speed})")
    else:
        w.comment("compare squared speeds: a square root only for the particles that are too fast")
        speed_sq = w.let(("speed_sq", "v2"), f"wp.dot({v}, {v})")
        with w.block(f"if {speed_sq} > {max_speed} * {max_speed}"):
            w.rebind(v, f"{v} * ({max_speed} / wp.sqrt({speed_sq}))")
    return {"v": v}


@piece("velocity_from_positions", needs={"x_prev": POSITION, "x": POSITION, "dt": TIME_STEP},
       gives={"v": VELOCITY}, says="velocities recovered from the position change")
def velocity_from_positions(w: Writer, x_prev, x, dt):
    return {"v": w.let(("v_new", "v"), f"({x} - {x_prev}) / {dt}")}


@piece("position_drift", needs={"x": POSITION, "v": VELOCITY, "dt": TIME_STEP}, gives={"x": POSITION},
       says="a position update with the current velocity")
def position_drift(w: Writer, x, v, dt):
    return {"x": w.update(x, f"{x} + {v} * {dt}", "x_new", "pos", "x_next")}


@piece("velocity_kick", needs={"v": VELOCITY, "a": ACCELERATION, "dt": TIME_STEP}, gives={"v": VELOCITY},
       says="an explicit velocity update")
def velocity_kick(w: Writer, v, a, dt):
    return {"v": w.update(v, f"{v} + {a} * {dt}", "v_new", "vel", "v_next")}
