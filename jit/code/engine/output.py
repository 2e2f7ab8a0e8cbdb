"""The output folder of a run: checked before any work, marked finished after it.

An existing dataset is never touched unless asked (``--resume`` continues it when it was made
with the same options, ``--overwrite`` replaces it when it looks like a jit-synth dataset).
"""

from __future__ import annotations

import json
import os

from jit.code.engine import writers
from jit.code.engine.plan import RunSpec


class OutputError(Exception):
    """The output folder cannot take this run (not empty, not writable, made with other options)."""


def prepare_output(run: RunSpec, resume: bool, overwrite: bool, command: str = "jit-synth") -> bool:
    """Check the output folder before any work; never touch an existing dataset unless asked.

    Returns True when ``--resume`` finds the run already finished (nothing to do).
    """
    out = run.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"--output {out} is a file; give a folder")
    existing = os.path.isdir(out) and bool(os.listdir(out))
    run_file = os.path.join(out, writers.WORK, "run.json")
    if existing and not (resume or overwrite):
        raise OutputError(f"--output {out} is not empty; add --resume to continue it or --overwrite to replace it")
    if resume and existing:
        if not os.path.exists(run_file):
            raise OutputError(f"--resume: {out} was not made by {command} (no {writers.WORK}/run.json)")
        with open(run_file, encoding="utf-8") as f:
            previous = json.load(f)
        if previous.get("identity") != run.identity():
            raise OutputError(f"--resume: {out} was made with other options ({_diff(previous.get('identity', {}), run.identity())}); "
                             "repeat the original command or use --overwrite")
        if previous.get("finished") and os.path.exists(os.path.join(out, "stats.json")):
            return True
    ancestor = out
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise OutputError(f"--output {out} is not writable: {ancestor} is a file; give a folder")
    if not os.access(ancestor, os.W_OK):
        raise OutputError(f"--output {out} is not writable (no write permission on {ancestor})")
    if overwrite and existing:
        if not resume and not (os.path.exists(run_file) or writers.data_files(out)):
            raise OutputError(f"--overwrite: {out} does not look like a jit-synth dataset; refusing to delete it")
        import shutil

        shutil.rmtree(out)
    try:
        os.makedirs(os.path.join(out, writers.WORK), exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--output {out} is not writable: {exc.strerror}") from None
    writers.write_json(run_file, {"identity": run.identity()})
    return False


def _diff(a: dict, b: dict) -> str:
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys)


def finish(run: RunSpec) -> None:
    """Mark the run finished and drop the parts' records: the shards hold them now."""
    run_file = os.path.join(run.out, writers.WORK, "run.json")
    writers.write_json(run_file, {"identity": run.identity(), "finished": True})
    writers.drop_part_records(run.out)
