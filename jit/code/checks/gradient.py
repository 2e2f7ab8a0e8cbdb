"""The gradient check: Warp's backward kernel against central finite differences (``wp.Tape``).

A scalar loss of the kernel's differentiable outputs is differentiated by Warp and by finite
differences on a few input elements (the largest gradients and some chosen at random); the
tolerance follows the rounding the outputs show. What it leaves out: running the forward kernel
(``execute``) and choosing inputs (``launch``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import warp as wp

from jit.code.checks.launch import Arg, Plan, launch, run_outputs

GRAD_ELEMENTS = (4, 3)  # input elements checked: (chosen by |gradient|, chosen uniformly)


@dataclass(slots=True)
class Loss:
    """``sum(w * out)`` over the differentiable outputs, with random weights ``w``."""

    kernel: Any
    plan: Plan
    outputs: list[Arg]
    wrt: list[Arg]  # the inputs it is differentiated by
    weights: dict[str, np.ndarray]

    def __call__(self, values: dict) -> tuple[float, dict[str, np.ndarray]]:
        outs = run_outputs(self.kernel, self.plan, values)
        total = sum(float(np.sum(self.weights[a.name].astype(np.float64) * outs[a.name])) for a in self.outputs)
        return total, outs

    def gradients(self, values: dict, device: str = "cpu") -> dict[str, np.ndarray]:
        """d loss / d input by Warp's backward kernel (``wp.Tape``)."""
        names = {a.name for a in self.wrt} | {a.name for a in self.outputs}
        tape = wp.Tape()
        with tape:
            bound = launch(self.kernel, self.plan, values, device, requires_grad=names)
        for a in self.outputs:  # the adjoint replays the forward on the inputs, not on the results
            if a.role == "inout":
                bound[a.name].assign(values[a.name])
        seeds = {bound[a.name]: wp.array(self.weights[a.name], dtype=a.dtype, device=device) for a in self.outputs}
        tape.backward(grads=seeds)
        return {a.name: bound[a.name].grad.numpy().copy() for a in self.wrt}


def make_loss(kernel, plan: Plan, differentiable: list[str], rng: np.random.Generator,
              values: dict) -> Loss | str:
    """The loss of the gradient check, or why there is none."""
    outputs = [a for a in plan.outputs() if a.name in differentiable and a.is_float]
    wrt = [a for a in plan.args if a.is_array and a.role == "in" and a.is_float]
    if not outputs:
        return "no differentiable outputs"
    if not wrt:
        return "no float array inputs"
    weights = {a.name: rng.standard_normal(values[a.name].shape).astype(values[a.name].dtype) for a in outputs}
    return Loss(kernel, plan, outputs, wrt, weights)


def gradient_check(job, differentiable: list[str], rng: np.random.Generator) -> tuple[str, str | None]:
    """("passed" | "failed" | "skipped", reason): backward vs central differences at a few elements.

    The difference quotient is taken at steps h and h/2 and extrapolated (Richardson); an element
    whose two quotients disagree sits at a kink or a jump, and is not used. Only inputs with role
    "in" are perturbed (an inout array is both an input and a result).
    """
    loss = make_loss(job.kernel, job.plan, differentiable, rng, job.values)
    if isinstance(loss, str):
        return "skipped", loss
    try:
        grads = loss.gradients(job.values)
    except Exception as exc:
        return "failed", f"backward raised {type(exc).__name__}"
    _, base_outs = loss(job.values)
    checked = unreliable = 0
    for name, index in _elements(grads, rng):
        fd, spread, tol = _difference(loss, job.values, name, index, base_outs)
        if fd is None or abs(spread) > 0.1 * abs(fd) + tol:
            unreliable += 1
            continue
        ad = float(grads[name].flat[index])
        if abs(ad - fd) > tol + abs(spread) + 1e-2 * max(abs(ad), abs(fd)):
            return "failed", None
        checked += abs(fd) > tol or abs(ad) > tol
    if checked:
        job.loss, job.grads = loss, grads
        return "passed", None
    return "skipped", "finite differences unreliable" if unreliable else "zero gradient"


def _elements(grads: dict[str, np.ndarray], rng: np.random.Generator) -> list[tuple[str, int]]:
    """Input elements to check: some where the backward says the gradient is large, some at random."""
    flat = [(name, i, abs(float(g.flat[i]))) for name, g in grads.items() for i in range(g.size)]
    by_size, at_random = GRAD_ELEMENTS
    nonzero = [e for e in flat if e[2] > 0]
    chosen: list[tuple[str, int]] = []
    if nonzero:
        p = np.array([e[2] for e in nonzero]) + 1e-12
        picks = rng.choice(len(nonzero), size=min(by_size, len(nonzero)), replace=False, p=p / p.sum())
        chosen += [nonzero[k][:2] for k in picks]
    rest = [e[:2] for e in flat if e[:2] not in chosen]
    if rest:
        chosen += [rest[k] for k in rng.choice(len(rest), size=min(at_random, len(rest)), replace=False)]
    return chosen


def _difference(loss: Loss, values: dict, name: str, index: int, base_outs: dict):
    """(extrapolated quotient, h vs h/2 difference, noise tolerance); quotient None if not finite."""
    x = values[name]
    x0 = float(x.flat[index])
    f32 = x.dtype == np.float32
    h = (1e-2 if f32 else 1e-5) * max(1.0, abs(x0))
    quotients, noise = [], 0.0
    for step in (h, h / 2):
        lossv = []
        for sign in (1, -1):
            moved = dict(values)
            moved[name] = x.copy()
            moved[name].flat[index] = x0 + sign * step
            value, outs = loss(moved)
            lossv.append(value)
            noise = max(noise, _rounding(loss, outs, base_outs))
        dx = float(np.float64(x0 + step).astype(x.dtype)) - float(np.float64(x0 - step).astype(x.dtype))
        quotients.append((lossv[0] - lossv[1]) / dx)
    q1, q2 = quotients
    if not (math.isfinite(q1) and math.isfinite(q2)):
        return None, 0.0, 0.0
    tol = 8.0 * noise / h + 1e-6
    return (4.0 * q2 - q1) / 3.0, q1 - q2, tol


def _rounding(loss: Loss, outs: dict, base: dict) -> float:
    """Rounding noise of the loss: about 64 ulp of every output element that moved."""
    total = 0.0
    for a in loss.outputs:
        moved = outs[a.name] != base[a.name]
        ulp = 64 * np.finfo(outs[a.name].dtype).eps
        total += float(np.sum(np.abs(loss.weights[a.name][moved] * outs[a.name][moved]))) * ulp
    return total
