"""What a run is and how its work is cut: ``RunSpec``, ``Part`` (a fixed index range of the
source's items), ``PartStats`` and the plan.

Parts are functions of the run's options only, never of the worker count, so any number of
workers give the same dataset. What it leaves out: running parts (``local``, ``ray_executor``)
and merging them (``merge``).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from jit.code.engine import dedup
from jit.code.records import DEFAULT_CUDA_ARCH

PARTS_WANTED = 32  # enough parts to keep a machine's workers busy, whatever the count
MIN_PART = 64


@dataclass(slots=True)
class RunSpec:
    out: str
    count: int | None = None  # records wanted; None: every kernel the source has
    source: object = None
    devices: tuple[str, ...] = ("cpu", "cuda")
    shard_size: int = 1000
    backward: bool = True
    validate: str = "compile"  # the --validate words, as given
    checks: tuple[str, ...] | None = None  # the checks they name (jit.code.checks.resolve); None: resolved when run
    archs: tuple[int, ...] = (DEFAULT_CUDA_ARCH,)
    emit_ptx: bool = False
    fmt: str = "jsonl"
    near_dup_threshold: float = dedup.DEFAULT_THRESHOLD  # 0: keep near-duplicates
    splits: tuple[tuple[str, float], ...] | None = None  # (name, fraction); None: one train split
    exclude: str | None = None  # records near a source in this path are dropped at the merge

    def identity(self) -> dict:
        """What must match for --resume to continue a run."""
        source = self.source.identity() if self.source is not None else {}
        return {
            **source, "devices": list(self.devices), "shard_size": self.shard_size, "backward": self.backward,
            "validate": self.validate, "checks": list(self.checks) if self.checks else None, "archs": list(self.archs), "emit_ptx": self.emit_ptx,
            "count": self.count, "format": self.fmt, "near_dup_threshold": self.near_dup_threshold,
            "splits": [list(s) for s in self.splits] if self.splits else None,
            "exclude": os.path.abspath(self.exclude) if self.exclude else None,
        }

    def near_duplicates(self) -> dedup.NearDuplicates | None:
        """A new, empty near-duplicate index at this run's threshold (None when switched off)."""
        return dedup.NearDuplicates(self.near_dup_threshold) if self.near_dup_threshold else None


@dataclass(frozen=True, slots=True)
class Part:
    number: int
    start: int
    stop: int


@dataclass(slots=True)
class PartStats:
    part: int
    start: int
    stop: int
    records: int = 0
    rejects: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)  # source-specific counts (modules imported, ...)

    def to_dict(self) -> dict:
        return {"part": self.part, "start": self.start, "stop": self.stop, "records": self.records,
                "rejects": dict(self.rejects), "seconds": self.seconds, "counts": self.counts}


def part_size(count: int, shard_size: int) -> int:
    """Slots per part: a function of the run's count and shard size only, never of the workers."""
    return min(shard_size, max(MIN_PART, -(-count // PARTS_WANTED)))


def plan(count: int, shard_size: int, size: int | None = None) -> list[Part]:
    """The parts of a run: consecutive index ranges covering ``count`` items (see ``part_size``)."""
    size = size or part_size(count, shard_size)
    return [Part(p, s, min(s + size, count)) for p, s in enumerate(range(0, count, size))]


def extend(parts: list[Part], missing: int, shard_size: int) -> list[Part]:
    """Parts that follow ``parts`` to fill ``missing`` more records (after cross-part duplicates)."""
    start, number = parts[-1].stop, parts[-1].number + 1
    more = plan(missing, shard_size)
    return [Part(number + p.number, start + p.start, start + p.stop) for p in more]


def plan_run(run: RunSpec) -> list[Part]:
    size = run.source.size(run)
    if size <= 0:
        return []
    per_part = getattr(run.source, "part_size", None)
    return plan(size, run.shard_size, per_part(run) if per_part else None)
