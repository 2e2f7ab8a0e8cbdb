"""What a check is: a name, what it needs, and a run over a batch of records.

Every source hands its records to the same checks the same way (``jit.code.checks.apply``): a
``Batch`` of records by key, with the live Warp kernels when the source has them (generated and
extracted kernels) and without them when it has only text (traced kernels, a dataset on disk: the
kernel is rebuilt from ``python_source``). A check returns ``{key: reason}`` for the records to
drop; the reasons are counted in stats.json's ``rejects``. What it leaves out: which checks exist
(``jit.code.checks`` registers them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TEXT = "text"  # the check reads python_source only: sources run it before they build anything
LIVE = "live"  # the check compiles or runs kernels: live ones when the batch has them, else rebuilt


@dataclass(slots=True)
class Batch:
    records: dict[str, Any]  # key -> Pair, in the source's order
    kernels: dict[str, Any] = field(default_factory=dict)  # key -> live Warp kernel (absent: rebuild from text)
    builds: dict = field(default_factory=dict)  # the extraction's builds of exactly these kernels (device -> Build)
    block_dim: int | None = None  # the launch block_dim of every kernel of the batch (tile kernels)

    def without(self, failed: dict[str, str]) -> Batch:
        """The batch less the records that failed (a build of the whole batch no longer fits it)."""
        if not any(key in failed for key in self.records):
            return self
        records = {k: r for k, r in self.records.items() if k not in failed}
        return Batch(records, {k: v for k, v in self.kernels.items() if k in records}, {}, self.block_dim)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    needs: str  # TEXT or LIVE
    says: str  # one line for --help and the card
    run: Callable[[Any, Batch], dict[str, str]]  # (run spec, batch) -> {key: reason} for records to drop
