"""Running a seed with its inferred launch: is every index in bounds, every output finite?

The inferred launch (``infer``) is a claim; a run decides it. The candidates of a batch are
built together on the CPU in Warp's debug mode, where every array access is bounds-checked and
an access out of bounds aborts the process, so each kernel runs in a forked child: twice on the
same random inputs, and the outputs must be finite and equal. A launch that fails is tried
again with positive float inputs (a kernel may take a square root or divide), then with arrays
twice as large. What it leaves out: the gradient check and CUDA (the dataset's execute check
does both, on every mutant).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass

import numpy as np
import warp as wp

from jit.code.extraction import warp_backend as wb
from jit.code.synthesis.mutate.launch import Launch

SECONDS = 20.0  # per run: seeds run in milliseconds, a loop that never ends does not
POSITIVE = (0.1, 1.0)
DRAWS = 3  # random inputs a launch must survive
EXITS = {0: None, 10: "non-finite output", 11: "non-deterministic output", 12: "launch failed"}
_modules = itertools.count()


@dataclass(slots=True)
class Candidate:
    key: str
    name: str  # kernel name in ``source``
    source: str
    launch: Launch


def verify(candidates: list[Candidate]) -> dict[str, Launch | str]:
    """key -> the launch that ran (perhaps adjusted), or why none did."""
    out: dict[str, Launch | str] = {}
    live, handles = load(candidates, out)
    try:
        for c in candidates:
            if c.key in out:
                continue
            out[c.key] = settle(live[c.key], c.launch)
    finally:
        for h in handles:
            h.release()
    return out


def load(candidates: list[Candidate], out: dict) -> tuple[dict, list]:
    """Build the candidates in debug mode for the CPU, bisecting around the ones that fail."""
    live, handles = {}, []

    def attempt(group: list[Candidate]) -> None:
        try:
            handle = wb.define([c.source for c in group], f"jit_mutant_verify_{next(_modules)}_{os.getpid()}")
        except Exception as exc:
            if len(group) == 1:
                out[group[0].key] = f"define failed: {type(exc).__name__}"
                return
            handle = None
        if handle is not None:
            handles.append(handle)
            wp.set_module_options(
                {"mode": "debug", "enable_backward": False, "cpu_compiler_flags": "-w"}, handle.module
            )
            try:
                wp.load_module(handle.module, device="cpu", block_dim=1)  # what CPU launches resolve to
                live.update({c.key: handle.namespace[c.name] for c in group})
                return
            except Exception as exc:
                if len(group) == 1:
                    out[group[0].key] = f"cpu build failed: {type(exc).__name__}"
                    return
        mid = len(group) // 2
        attempt(group[:mid])
        attempt(group[mid:])

    if candidates:
        attempt(candidates)
    return live, handles


def settle(kernel, launch: Launch) -> Launch | str:
    """The first of the launch and its variants that runs cleanly, or the first failure."""
    first = None
    for variant in variants(launch):
        why = run_forked(kernel, variant)
        if why is None:
            return variant
        first = first or why
    return first


def variants(launch: Launch):
    yield launch
    positive = launch.copy()
    for a in positive.args:
        if a.range == (-2.0, 2.0):
            a.range = POSITIVE
    yield positive
    larger = positive.copy()
    for a in larger.args:
        a.shape = tuple(2 * d for d in a.shape)
    yield larger


def run_forked(kernel, launch: Launch) -> str | None:
    """Run in a child process: None if it ran cleanly, else why not."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 12
        try:
            code = run(kernel, launch)
        finally:
            os._exit(code)
    deadline = time.monotonic() + SECONDS
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.005)
    if os.WIFSIGNALED(status):  # a failed bounds check aborts; a division by zero traps
        return f"crashed ({signal.Signals(os.WTERMSIG(status)).name})"
    return EXITS.get(os.WEXITSTATUS(status), "launch failed")


def run(kernel, launch: Launch, draws: int = DRAWS) -> int:
    types = dict(wb.argument_type_objects(kernel))
    for draw_ in range(draws):
        rng = np.random.default_rng(draw_)
        values = {a.name: random_value(rng, types[a.name], a) for a in launch.args}
        try:
            first = outputs(kernel, launch, values, types)
            second = outputs(kernel, launch, values, types)
        except Exception:
            return 12
        for name, got in first.items():
            if got.dtype.kind == "f" and not np.all(np.isfinite(got)):
                return 10
            if got.tobytes() != second[name].tobytes():
                return 11
    return 0


def outputs(kernel, launch: Launch, values: dict, types: dict) -> dict[str, np.ndarray]:
    bound = []
    for a in launch.args:
        t = types[a.name]
        bound.append(
            wp.array(values[a.name], dtype=t.dtype, device="cpu")
            if wp.types.is_array(t)
            else to_value(t, values[a.name])
        )
    if launch.block_dim:
        wp.launch_tiled(kernel, dim=launch.dim, inputs=bound, block_dim=launch.block_dim, device="cpu")
    else:
        wp.launch(kernel, dim=launch.dim, inputs=bound, device="cpu")
    wp.synchronize_device("cpu")
    return {
        a.name: flat(b.numpy())
        for a, b in zip(launch.args, bound)
        if a.role != "in" and wp.types.is_array(types[a.name])
    }


def flat(value: np.ndarray) -> np.ndarray:
    if value.dtype.names is None:
        return value
    return np.concatenate([flat(value[n]).ravel().astype(np.float64) for n in value.dtype.names])


def numpy_dtype(t):
    if hasattr(t, "numpy_dtype"):
        return np.dtype(t.numpy_dtype())
    return np.dtype(wp.dtype_to_numpy(getattr(t, "_wp_scalar_type_", t)))


def random_value(rng: np.random.Generator, t, arg) -> np.ndarray:
    """Random data for an argument (zeros for an output), as the execute check draws it."""
    is_array = wp.types.is_array(t)
    dtype = t.dtype if is_array else t
    shape = tuple(arg.shape) if is_array else ()
    if is_array and arg.role == "out":
        return zeros(dtype, shape)
    return draw(rng, dtype, shape, *arg.range)


def zeros(t, shape: tuple) -> np.ndarray:
    return np.zeros(shape + tuple(getattr(t, "_shape_", ())), numpy_dtype(t))


def draw(rng: np.random.Generator, t, shape: tuple, lo: float, hi: float) -> np.ndarray:
    if hasattr(t, "vars"):  # a struct
        out = zeros(t, shape)
        for name, var in t.vars.items():
            out[name] = draw(rng, var.type, shape, lo, hi)
        return out
    npt, full = numpy_dtype(t), shape + tuple(getattr(t, "_shape_", ()))
    if npt == np.bool_:
        return rng.random(full) < 0.5
    if np.issubdtype(npt, np.integer):
        low = max(int(np.ceil(lo)), 0) if np.issubdtype(npt, np.unsignedinteger) else int(np.ceil(lo))
        return rng.integers(low, max(low, int(np.floor(hi))), size=full, endpoint=True).astype(npt)
    values = rng.uniform(lo, hi, full)
    if wp.types.type_is_quaternion(t):
        q = rng.standard_normal(shape + (4,))
        values = q / np.linalg.norm(q, axis=-1, keepdims=True)
    elif wp.types.type_is_transformation(t):
        q = rng.standard_normal(shape + (4,))
        values[..., 3:] = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return values.astype(npt)


def to_value(t, value: np.ndarray):
    if hasattr(t, "vars"):
        instance = t()
        for name, var in t.vars.items():
            setattr(instance, name, to_value(var.type, value[name]))
        return instance
    if getattr(t, "_shape_", ()):
        return t(*np.asarray(value).ravel().tolist())
    return np.asarray(value).item()
