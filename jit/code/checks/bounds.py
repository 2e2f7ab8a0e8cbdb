"""The bounds check: a record's io example replays cleanly in Warp's debug mode.

Warp's debug build checks every array access against the array's shape and aborts the process
on the first one out of range. The records of a batch that carry an ``io`` example (``execute``
made it) are rebuilt from their text in a debug module and launched on their recorded inputs,
each in a forked child (``bounded``): a child that dies is an out-of-bounds access. What it
leaves out: records without an io example (nothing to launch them with).
"""

from __future__ import annotations

import faulthandler
import functools
import itertools
import os

import warp as wp

from jit.code.checks import bounded
from jit.code.checks.base import LIVE, Batch, Check
from jit.code.checks.launch import decode, plan_from_io, run_outputs
from jit.code.checks.rebuild import batches
from jit.code.extraction import warp_backend as wb

BATCH = 64
SECONDS = 20.0
OUT_OF_BOUNDS = "bounds: out-of-bounds access in debug mode"
_module_numbers = itertools.count()  # a loaded CPU object stays loaded: never reuse a module name


def bounds_check(run, batch: Batch) -> dict[str, str]:
    """{key: reason} for the records whose io inputs make the debug build abort (or fail)."""
    keys = {record.id: key for key, record in batch.records.items() if record.io}
    failed: dict[str, str] = {}
    for group in batches([batch.records[k].to_dict() for k in keys.values()], BATCH):
        for rid, reason in replay_in_debug_mode(group).items():
            failed[keys[rid]] = reason
    for key in keys.values():
        if key not in failed:
            batch.records[key].validation["bounds"] = "checked"
    return failed


def replay_in_debug_mode(records: list[dict]) -> dict[str, str]:
    """Rebuild ``records`` (dicts with ``io``) in one debug module and launch each on its inputs."""
    wb.init()
    handle = wb.define([r["python_source"] for r in records], f"jit_synth_bounds_{next(_module_numbers)}_{os.getpid()}")
    try:
        wp.set_module_options({"mode": "debug", "optimization_level": 0, "cpu_compiler_flags": "-w",
                               "fuse_fp": False, "enable_backward": False}, handle.module)
        try:
            with wb.native_stderr_silenced():
                wp.load_module(handle.module, device="cpu", block_dim=1)
        except Exception:
            if len(records) == 1:
                return {records[0]["id"]: "bounds: debug build failed"}
            return {rid: reason for r in records for rid, reason in replay_in_debug_mode([r]).items()}
        calls = [functools.partial(_launch, handle.namespace.get(r["kernel_name"]), r["io"]) for r in records]
        with wb.native_stderr_silenced():  # the child's "Assertion failed" line: the reason says it
            results = bounded.run_bounded(calls, SECONDS)
    finally:
        handle.release()
    failed = {}
    for record, (status, value) in zip(records, results):
        if status == bounded.TIMEOUT:
            failed[record["id"]] = "bounds: timeout in debug mode"
        elif status == "error":
            failed[record["id"]] = OUT_OF_BOUNDS if value == "child process died" else f"bounds: {value}"
    return failed


def _launch(kernel, io: dict) -> None:
    faulthandler.disable()  # in the child: an abort here is the verdict, not a crash to report
    plan = plan_from_io(kernel, io)
    run_outputs(kernel, plan, {a.name: decode(a, io["inputs"][a.name]) for a in plan.args})


CHECK = Check("bounds", LIVE, "replays its io example in Warp's debug mode, every array access bounds-checked",
              bounds_check)
