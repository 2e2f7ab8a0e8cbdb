"""What the engine consumes: a source of kernels, as a typed base class.

A source is one small picklable object (one file: ``jit/tests/test_engine.py``'s ``ToySource``
is the example to copy). It yields records for index ranges of its items; the engine plans the
parts, runs them, merges, checks nothing about where records came from, and writes the dataset.
Sources today: the synthetic generator (``jit.code.synthesis.batch_generator``), modules of
real code (``jit.code.harvest.modules``) and running programs (``jit.code.harvest.traced``).
"""

from __future__ import annotations


class Source:
    """The protocol, with defaults for what most sources do not need."""

    __slots__ = ()

    name: str = "source"  # "generate", "extract", "trace": stats.json and the card say it
    growable: bool = False  # it can make more items when duplicates leave fewer than ``count``
    fresh_process: bool = False  # each part runs in a new process (real code: imports change a process)

    def identity(self) -> dict:
        """What must match for ``--resume`` to continue a run."""
        return {}

    def size(self, run) -> int:
        """Items to plan (for a growable source: ``run.count``)."""
        raise NotImplementedError

    def warm(self, run) -> None:
        """Fill caches once, before workers fork."""

    def run_part(self, run, part, progress=None):
        """Produce the part's records, in item order, into ``writers.PartWriter``; returns ``PartStats``.

        ``progress.put((records, rejects))`` reports as it goes; the records pass ``run.checks``
        (``jit.code.checks``) before they are written, and rejects are counted by reason.
        """
        raise NotImplementedError

    def describe(self) -> dict:
        """What stats.json records about the source (versions, seed, mix or provenance)."""
        return {}

    def cleanup(self) -> None:
        """Remove what workers that did not exit normally left behind (called after every pool)."""
