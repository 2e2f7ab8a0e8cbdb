"""Run generated kernels: a seeded input/output example per record, and a gradient check.

``execute_batch`` launches each runnable kernel of a validated batch on the CPU with seeded
random inputs (twice: the outputs must be finite and bitwise identical), stores the example as
the record's ``io`` and checks the backward kernel against central finite differences (``wp.Tape``).
Each kernel runs in a forked child with a time bound (``bounded``): one that never returns is
dropped as ``timeout``.
With a CUDA device and ``cuda`` among the run's devices it also launches on the GPU and compares
with the CPU. ``replay_records`` rebuilds kernels from ``python_source`` alone and checks that
their ``io`` inputs give exactly the stored outputs.

The io format, plans and launching are in ``launch``; the gradient check in ``gradient``.

What it leaves out: compiling (``compile``), kernels that need runtime objects (mesh, volume,
bvh, hash grid: they keep ``validation.cpu = "compiled"`` with ``cpu_reason``), and generic kernels.
"""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as wp

from jit.code.checks import bounded
from jit.code.checks.base import LIVE, Check
from jit.code.checks.gradient import gradient_check, make_loss  # noqa: F401  (make_loss: the GPU suite's)
from jit.code.checks.launch import (  # noqa: F401  (also the names of execution that tests and callers use)
    NotRunnable, Plan, agree, decode, encode, item_rng, leaves, plan_from_io, plan_from_metadata, random_values,
    run_outputs, same_bits,
)
from jit.code.checks.rebuild import batches
from jit.code.extraction import warp_backend as wb

EXECUTE_SECONDS = 20.0  # bound on one kernel's execution and gradient check (runs take milliseconds)
MAX_IO_NUMBERS = 8192  # numbers in one io example; larger examples are not stored
REPLAY_BATCH = 64
# Warp names a loaded CPU object after its module and a per-module counter, and a released module's
# object stays loaded: a module name must never be used twice in a process
_module_numbers = itertools.count()


# ---------------------------------------------------------------------------------------------
# during generation


@dataclass(slots=True)
class Job:
    name: str
    kernel: Any
    plan: Plan
    record: Any
    values: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    loss: Any = None  # the gradient check's Loss, when it ran
    grads: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Item:
    """What execution needs of a record: its key in the batch, kernel name, text, metadata and the
    seed, index and attempt its inputs are drawn from."""

    name: str  # the record's key in its batch (dicts of results are keyed by it)
    kernel_name: str
    source: str
    metadata: dict
    seed: int
    index: int
    attempt: int

    @classmethod
    def of(cls, key: str, record) -> Item:
        meta = record.metadata or {}
        return cls(key, record.kernel_name, record.python_source, meta, int(meta.get("seed", 0)),
                   int(meta.get("index", 0)), int(meta.get("attempt", 0)))


def execute_check(run, batch) -> dict[str, str]:
    """Run each live kernel of a batch on the CPU with inputs drawn from its record's seed, check
    its gradients, keep an io example; fills ``io`` and ``validation``. Records without a launch
    description (real code) are kept with the reason in ``validation["cpu_reason"]``."""
    items = [Item.of(key, record) for key, record in batch.records.items() if key in batch.kernels]
    return execute_batch(run, items, {i.name: batch.kernels[i.name] for i in items}, batch.records)


def execute_batch(run, specs: list, live: dict, records: dict) -> dict[str, str]:
    """Execute the kernels of one batch (``specs``: ``Item``s, ``live``: their kernels by key, all
    of one Warp module, which Warp compiles once for the CPU). Returns {key: reason} to drop."""
    failed: dict[str, str] = {}
    kernels, handles = cpu_build(specs, live, run.backward, failed)
    cuda = "cuda" in run.devices and wb.cuda_device_available()
    runs = []
    try:
        for spec in specs:
            if spec.name in failed:
                continue
            record = records[spec.name]
            record.validation["cpu"] = "compiled"  # Warp just built it with clang
            try:
                runs.append((spec, Job(spec.name, kernels[spec.name],
                                       plan_from_metadata(kernels[spec.name], spec.metadata), record)))
            except NotRunnable as exc:
                record.validation["cpu_reason"] = exc.reason
        jobs = _run_bounded(runs, run.backward, failed)
        if cuda and jobs:
            for spec, job in jobs:  # they are known to finish: run again here for the CUDA comparison
                execute_one(job, item_rng(spec), spec.metadata, run.backward)
            failed.update(cuda_check([job for _, job in jobs]))
    finally:
        for handle in handles:
            handle.release()
    return failed


def _run_bounded(runs: list, backward: bool, failed: dict) -> list:
    """Execute each (spec, job) in a forked child with a time bound; the ones that passed.

    A launch that never returns (seen in Warp's backward of some ``while`` loops) is killed after
    ``EXECUTE_SECONDS`` and its record dropped as ``timeout``; the batch goes on.
    """
    calls = [functools.partial(_execute_reported, job, spec, backward) for spec, job in runs]
    passed = []
    for (spec, job), (status, value) in zip(runs, bounded.run_bounded(calls, EXECUTE_SECONDS)):
        if status == bounded.TIMEOUT:
            failed[spec.name] = "timeout"
        elif status == "error":  # a launch inside the gradient check, say: drop the record, not the batch
            failed[spec.name] = f"execution failed: {value}"
        else:
            reason, job.record.io, validation = value
            job.record.validation.update(validation)
            if reason:
                failed[spec.name] = reason
            else:
                passed.append((spec, job))
    return passed


def _execute_reported(job: Job, spec, backward: bool) -> tuple[str | None, dict | None, dict]:
    """``execute_one`` in the child, returning what the parent's record needs."""
    reason = execute_one(job, item_rng(spec), spec.metadata, backward)
    return reason, job.record.io, dict(job.record.validation)


def set_cpu_options(module, backward: bool = True) -> None:
    """Build options of every CPU execution (generation and replay alike, so replays are bitwise).

    A generic target without FP contraction makes results depend on IEEE arithmetic and libm only,
    not on the host's vector units; -O0 halves the compile time, which dominates execution.
    """
    wp.set_module_options({"optimization_level": 0, "cpu_compiler_flags": "-w", "fuse_fp": False,
                           "enable_backward": backward}, module)


def cpu_build(specs: list, kernels: dict, backward: bool, failed: dict) -> tuple[dict, list]:
    """Load the batch's module on the CPU; ({name: live kernel}, handles of extra modules to release).

    The batch module may also hold kernels the build dropped: if it does not load, the sources
    are defined again in fresh modules, bisected so that only the kernels that fail are reported.
    """
    if not specs:
        return {}, []
    module = kernels[specs[0].name].module
    set_cpu_options(module, backward)
    if _loads(module):
        return {s.name: kernels[s.name] for s in specs}, []
    live: dict[str, Any] = {}
    handles: list = []
    _bisect(specs, f"{module.name}_x{next(_module_numbers)}", backward, live, handles, failed)
    return live, handles


def _bisect(specs: list, name: str, backward: bool, live: dict, handles: list, failed: dict) -> None:
    try:
        handle = wb.define([s.source for s in specs], name)
    except Exception as exc:
        for s in specs:
            failed[s.name] = f"cpu define failed: {type(exc).__name__}"
        return
    handles.append(handle)
    set_cpu_options(handle.module, backward)
    if _loads(handle.module):
        live.update({s.name: handle.namespace[s.kernel_name] for s in specs})
    elif len(specs) == 1:
        failed[specs[0].name] = "cpu compile failed"
    else:
        mid = len(specs) // 2
        _bisect(specs[:mid], name + "a", backward, live, handles, failed)
        _bisect(specs[mid:], name + "b", backward, live, handles, failed)


def _loads(module) -> bool:
    try:
        wp.load_module(module, device="cpu", block_dim=1)  # the block_dim CPU launches resolve to
        return True
    except Exception:
        return False


def execute_one(job: Job, rng: np.random.Generator, metadata: dict, backward: bool = True) -> str | None:
    """Run one kernel on the CPU, store its io example and gradient verdict; a reason to drop it, or None."""
    kernel, plan, record = job.kernel, job.plan, job.record
    job.values = values = random_values(plan, rng)
    try:
        first = run_outputs(kernel, plan, values)
        second = run_outputs(kernel, plan, values)
    except Exception as exc:
        return f"cpu launch failed: {type(exc).__name__}"
    if not all(np.all(np.isfinite(v)) for out in first.values() for v in leaves(out) if v.dtype.kind == "f"):
        return "non-finite output"
    if not all(same_bits(first[k], second[k]) for k in first):
        return "non-deterministic output"
    job.outputs = first
    if sum(v.size for out in (*values.values(), *first.values()) for v in leaves(out)) <= MAX_IO_NUMBERS:
        record.io = make_io(plan, values, first)
    record.validation["cpu"] = "executed"
    if not backward:
        return None
    verdict, why = gradient_check(job, metadata.get("differentiable_outputs", []), rng)
    record.validation["gradient"] = verdict
    if why:
        record.validation["gradient_reason"] = why
    return "gradient check failed" if verdict == "failed" else None


def cuda_check(jobs: list[Job]) -> dict[str, str]:
    """Launch the CPU-executed kernels on CUDA with the same inputs; outputs and gradients must agree."""
    # the CPU build options (-O0, no contraction) are not for NVRTC: back to the defaults
    for module in {id(j.kernel.module): j.kernel.module for j in jobs}.values():
        wp.set_module_options({"optimization_level": None, "fuse_fp": True}, module)
    failed = {}
    for job in jobs:
        try:
            got = run_outputs(job.kernel, job.plan, job.values, "cuda")
            grads = job.loss.gradients(job.values, "cuda") if job.grads else {}
        except Exception as exc:
            failed[job.name] = f"cuda launch failed: {type(exc).__name__}"
            continue
        if not all(agree(job.outputs[k], got[k]) for k in job.outputs):
            failed[job.name] = "cuda output differs from cpu"
        elif not all(agree(job.grads[k], grads[k]) for k in job.grads):
            failed[job.name] = "cuda gradient differs from cpu"
        else:
            job.record.validation["cuda"] = "executed"
    return failed


def make_io(plan: Plan, values: dict, outputs: dict) -> dict:
    io: dict[str, Any] = {"device": "cpu", "dim": list(plan.dim)}
    if plan.block_dim:
        io["block_dim"] = plan.block_dim
    io["inputs"] = {a.name: encode(a, values[a.name]) for a in plan.args}
    io["outputs"] = {a.name: encode(a, outputs[a.name]) for a in plan.outputs()}
    return io


# ---------------------------------------------------------------------------------------------
# replay (the validate command)


def replay_records(records: list[dict]) -> dict[str, str]:
    """Rebuild kernels from ``python_source`` alone and launch their ``io`` inputs on the CPU.

    Records are batched into shared Warp modules (without clashing top-level names).
    Returns {record id: "io replay mismatch" | "io replay failed: ..."} for the bad ones.
    """
    wb.init()
    bad: dict[str, str] = {}
    for group in batches(records, REPLAY_BATCH):
        bad.update(_replay_group(group, f"jit_synth_replay_{next(_module_numbers)}_{os.getpid()}"))
    return bad


def _replay_group(group: list[dict], module_name: str) -> dict[str, str]:
    try:
        handle = wb.define([r["python_source"] for r in group], module_name)
    except Exception as exc:
        if len(group) == 1:
            return {group[0]["id"]: f"io replay failed: {type(exc).__name__}"}
        return _one_by_one(group, module_name)
    try:
        set_cpu_options(handle.module, backward=False)  # the forward code is the same either way
        if not _loads(handle.module):
            if len(group) == 1:
                return {group[0]["id"]: "io replay failed: cpu build"}
            return _one_by_one(group, module_name)
        bad = {}
        for record in group:
            reason = replay_one(handle.namespace.get(record["kernel_name"]), record["io"])
            if reason:
                bad[record["id"]] = reason
        return bad
    finally:
        handle.release()


def _one_by_one(group: list[dict], module_name: str) -> dict[str, str]:
    bad = {}
    for n, record in enumerate(group):
        bad.update(_replay_group([record], f"{module_name}_{n}"))
    return bad


def replay_one(kernel, io: dict) -> str | None:
    """Launch ``kernel`` on ``io["inputs"]``; None if it reproduces ``io["outputs"]`` bit for bit."""
    if not wb.is_kernel(kernel):
        return "io replay failed: python_source does not define kernel_name"
    try:
        plan = plan_from_io(kernel, io)
        values = {a.name: decode(a, io["inputs"][a.name]) for a in plan.args}
        got = run_outputs(kernel, plan, values)
        want = {a.name: decode(a, io["outputs"][a.name]) for a in plan.outputs()}
    except NotRunnable as exc:
        return f"io replay failed: {exc.reason}"
    except Exception as exc:
        return f"io replay failed: {type(exc).__name__}"
    if set(want) != set(io["outputs"]) or not all(same_bits(got[k], want[k]) for k in want):
        return "io replay mismatch"
    return None


CHECK = Check("execute", LIVE, "runs on the CPU with seeded inputs (time-bounded), gradients checked, io example kept",
              execute_check)
