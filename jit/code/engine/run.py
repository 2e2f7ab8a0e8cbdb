"""The engine: one dataset folder from any source of kernels.

A run (``RunSpec``, ``plan``) names a source (``source.Source``) and what to do with its
kernels: devices, checks, near-duplicate control, exclusions, format, shard size, splits. The
engine cuts the source's work into parts, runs them on worker processes (``local``) or Ray
tasks (``ray_executor``), merges them without duplicates, near-duplicates or excluded records and
writes the split shards, as stages of tasks on the same executor (``merge``), then ``stats.json``
(``jit.code.analysis.summary``) and the card, and lets an interrupted run continue (``--resume``,
which resumes the merge's stages too). It does not know where kernels come from, and imports no Warp.

When a run is finished, its parts' records are deleted (the shards hold them); the parts'
completion markers stay, and a ``--resume`` of a finished run does nothing.
"""

from __future__ import annotations

import os
import sys
import time

from jit.code.engine import writers
from jit.code.engine.stats import run_stats
from jit.code.engine.local import run_parts, run_tasks
from jit.code.engine.merge import Merge
from jit.code.engine.output import OutputError, finish, prepare_output  # noqa: F401  (the engine's face)
from jit.code.engine.plan import Part, PartStats, RunSpec, extend, plan_run  # noqa: F401


class Progress:
    """tqdm on a terminal; plain log lines every few seconds otherwise. ``total`` None: no bar length."""

    def __init__(self, total: int | None, quiet: bool):
        self.total, self.quiet = total, quiet
        self.pairs = self.rejects = 0
        self.t0 = self.last = time.perf_counter()
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="pair", dynamic_ncols=True, smoothing=0.1)

    def update(self, pairs: int, rejects: int) -> None:
        self.pairs += pairs
        self.rejects += rejects
        if self.bar is not None:
            room = pairs if self.total is None else max(0, min(pairs, self.total - self.bar.n))
            self.bar.update(room)
            self.bar.set_postfix(rejects=self.rejects, refresh=False)
        elif not self.quiet and time.perf_counter() - self.last >= 5:
            self.last = time.perf_counter()
            rate = self.pairs / max(self.last - self.t0, 1e-9)
            done = self.pairs if self.total is None else f"{min(self.pairs, self.total)}/{self.total}"
            print(f"[jit-synth] {done} pairs, {rate:.1f} pairs/s, {self.rejects} rejects", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# ---------------------------------------------------------------------------------------------
# the run


def build_dataset(run: RunSpec, workers: int, quiet: bool = True, command: str = "", executor: str = "local",
                  ray_address: str | None = None) -> dict:
    """Run (or finish) a run into ``run.out``; returns the stats written to stats.json."""
    t0 = time.perf_counter()
    exclusions = load_exclusions(run.exclude) if run.exclude else None
    done = writers.finished_parts(run.out)
    resumed = sorted(done)
    parts = plan_run(run)
    progress = Progress(run.count, quiet)
    progress.update(sum(d["records"] for d in done.values()), 0)
    growable = getattr(run.source, "growable", False)
    connected = False
    try:
        if executor == "ray":
            from jit.code.engine import ray_executor

            connected = ray_executor.connect(ray_address)
            merge = Merge(run, exclusions, ray_executor.run_tasks)
        else:
            merge = Merge(run, exclusions, lambda fn, arguments: run_tasks(fn, arguments, workers))
        while True:
            todo = [p for p in parts if p.number not in done]
            if executor == "ray":
                results = ray_executor.run_parts(run, todo, ray_address, progress.update)
            else:
                results = run_parts(run, todo, workers, progress.update)
            for result in results:
                done[result["part"]] = result
            unique = merge.update(parts) if parts else 0
            if not growable or run.count is None or unique >= run.count or not parts:
                break
            parts += extend(parts, run.count - unique, run.shard_size)
        progress.close()
        splits = write_dataset(run, merge)
    finally:
        progress.close()
        if connected:
            import ray

            ray.shutdown()
            run.source.cleanup()
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    stats = run_stats(run, [done[p.number] for p in parts], merge, seconds, resumed, workers, splits)
    stats["merge_seconds"]["stats"] = round(time.perf_counter() - t1, 2)
    writers.write_json(os.path.join(run.out, "stats.json"), stats)
    writers.write_card(run.out, stats, run.fmt, command, splits=list(splits))
    finish(run)
    return stats


def load_exclusions(path: str):
    from jit.code.engine import exclude

    return exclude.load_exclusions(path)


def write_dataset(run: RunSpec, merge: Merge) -> dict[str, int]:
    """The merged records as shards, one set per split; returns the records per split."""
    writers.remove_scratch(run.out)
    return merge.write(run.count)
