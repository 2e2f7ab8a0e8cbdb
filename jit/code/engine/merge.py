"""The merge: a run's parts, in part order, without duplicates and without excluded records."""

from __future__ import annotations

from collections.abc import Iterator

from jit.code.engine import dedup, writers
from jit.code.engine.plan import Part, RunSpec


class Merge:
    """The parts of a run, in order, without duplicates across parts and without excluded records.

    A record is dropped when an earlier record has its id (``duplicates``), when it nearly
    duplicates an earlier kept record (``near_duplicates``) or when it is near a source of the
    run's exclusion set (``excluded``); parts are read in part order, so the kept records
    depend on the parts only. Signatures come from the parts' signature files (written by the
    workers) when present.
    """

    def __init__(self, run: RunSpec, exclusions=None):
        self.out = run.out
        self.near = run.near_duplicates()
        self.exclusions = exclusions
        self.parts: list[Part] = []
        self.seen: set[str] = set()
        self.kept: set[str] = set()
        self.duplicates = self.near_duplicates = self.excluded = 0

    def update(self, parts: list[Part]) -> int:
        """Read the parts of ``parts`` not read yet (it extends the last list given); returns the kept count."""
        assert parts[:len(self.parts)] == self.parts, "parts only grow at the end"
        for part in parts[len(self.parts):]:
            self._read(part)
            self.parts.append(part)
        return len(self.kept)

    def _read(self, part: Part) -> None:
        sigs = writers.read_signatures(self.out, part.number) if self.near is not None else None
        for row, record in enumerate(writers.read_part(self.out, part.number)):
            cid = record["id"]
            if cid in self.seen:
                self.duplicates += 1
                continue
            self.seen.add(cid)
            if self.exclusions is not None and self.exclusions.matches(record["python_source"]):
                self.excluded += 1
                continue
            if self.near is not None:
                sig = dedup.signature(record["python_source"]) if sigs is None else dedup.from_hashvalues(sigs[row])
                if self.near.find(sig) is not None:
                    self.near_duplicates += 1
                    continue
                self.near.add(cid, sig)
            self.kept.add(cid)

    def records(self, count: int | None = None) -> Iterator[dict]:
        """The first ``count`` kept records (all when None), in part order."""
        written: set[str] = set()
        for part in self.parts:
            for record in writers.read_part(self.out, part.number):
                if record["id"] in self.kept and record["id"] not in written:
                    written.add(record["id"])
                    yield record
                    if count is not None and len(written) == count:
                        return
