"""The merge: a run's parts into one dataset, as stages of independent tasks.

Records are numbered in part order (their *position*). The stages, each a set of tasks the run's
executor (local processes or Ray) runs, none holding more than one part's records or one shard's keys:

  index       one task per part (``part_index``): ids, exclusion decisions, LSH band hashes and
              provenance keys of its records
  duplicates  one task per shard of content ids (``buckets.duplicates``): copies after the first
  sketch      this process (``buckets.sketch``): every band value counted by its low bits, once
  edges       one task per range of band and key values (``buckets.edges``): near-duplicate and
              split links between records
  clusters    this process, over positions only: connected components of the links
  write       one task per part (``writers.write_pieces``): its kept records, in order, as pieces
              of the split shards they fall in
  shards      one task per shard (``writers.assemble_shard``): the pieces joined in part order

**The cluster rule.** A record is dropped when an earlier record has its content id (a duplicate),
when it is near a source of the exclusion set (decided alone, see ``exclude``), or when it is not
the first, in part order, of its near-duplicate cluster: the connected component of records linked
by an exact Jaccard similarity at or above the threshold (pairs proposed by LSH and by a MinHash
estimate at or above ``dedup.checked_from(threshold)``). A chain A~B~C with A and C not near
is one cluster: of the three, only the first in part order is kept. Split groups are the connected components of every
near-duplicate link, every pair of records whose exact Jaccard similarity reaches
``splits.THRESHOLD`` and every shared provenance key (seed kernel, source file), counting the
dropped near-duplicates as members, so no kept pair that similar straddles two splits. Groups are
ordered by a hash of the seed and their first member's id, then dealt out (``splits.deal``). Both
rules read only the records and their part order, never the worker count, the shard count or the
order tasks finish, so 1 or 16 workers, locally or on Ray, give the same shards.

LSH proposes the pairs (bands from ``dedup.bands`` at the lower of the two levels): at the default
threshold of 0.9, a pair at the threshold is missed with a probability of about 1e-7,
a pair at the split threshold below 2e-3, as long as it shares a bucket of at most
``buckets.LARGE_BUCKET`` records or meets in a piece that small when larger buckets (made of
boilerplate shingles) are cut by their members' next band values, up to three times; pieces still
larger are left out and counted in stats.json's ``merge.large_buckets_left_out``). This process holds counts and arrays over positions
(a few bytes a record), never ids of all records, signatures or records.

What it leaves out: the parts themselves (``local``, ``ray_executor``) and stats.json (``stats``).
"""

from __future__ import annotations

import glob
import hashlib
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np

from jit.code.engine import buckets, dedup, part_index, writers
from jit.code.engine.part_index import Keys
from jit.code.engine.plan import Part, RunSpec

# band values per key shard of the bucket stages (a function of the record count only): a task then
# holds a few MB of keys and at most this many records' signatures (512 bytes each)
SHARD_KEYS = 400_000
SHARD_IDS = 1_000_000  # content ids per shard of the duplicates stage (20 bytes each)

Tasks = Callable[[Callable, list[tuple]], list]  # runs fn(*args) for every args, returns results in order


def in_process(fn: Callable, arguments: list[tuple]) -> list:
    return [fn(*args) for args in arguments]


def positions(n: int) -> type:
    """The integer type of arrays over ``n`` record positions: 4 bytes a record below 2**31."""
    return np.int32 if n < 2**31 else np.int64


def first_of_components(n: int, pairs: np.ndarray) -> np.ndarray:
    """For each of ``n`` nodes, the smallest node of its connected component (pairs: (m, 2) edges).

    Edges can come in batches: with ``root`` the answer for the batches so far (each node's
    smallest node), ``first_of_components(n, root[batch])[root]`` is the answer with ``batch`` too.

    Hooks each root to the smaller root of an edge, then shortens every path to one step, until
    every edge joins one root: a few rounds of whole-array operations, not a loop over edges.
    """
    root = np.arange(n, dtype=positions(n))
    if not len(pairs):
        return root
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        ra, rb = root[a], root[b]
        if np.array_equal(ra, rb):
            return root
        low = np.minimum(ra, rb)
        np.minimum.at(root, ra, low)
        np.minimum.at(root, rb, low)
        while True:
            shorter = root[root]
            if np.array_equal(shorter, root):
                break
            root = shorter


def _edge_batches(paths: list[str], size: int) -> Iterator[np.ndarray]:
    """The edge files' rows, a few files at a time (``size`` rows or more, but the last batch): each
    batch costs passes over every position (``first_of_components``), so a batch a file would grow
    with the shard count times the record count."""
    pending, count = [], 0
    for path in paths:
        pending.append(np.load(path))
        count += len(pending[-1])
        if count >= size:
            yield np.concatenate(pending)
            pending, count = [], 0
    if pending:
        yield np.concatenate(pending)


class Merge:
    """The staged merge of a run's parts; ``update`` decides, ``write`` writes the shards."""

    def __init__(self, run: RunSpec, exclusions=None, tasks: Tasks = in_process):
        self.run, self.out, self.exclusions, self.tasks = run, run.out, exclusions, tasks
        threshold = run.near_dup_threshold
        self.near = buckets.Near(dedup.checked_from(threshold), threshold) if threshold else None
        from jit.code.engine import splits

        self.split_at = splits.THRESHOLD if run.splits else None
        levels = [x for x in (self.near and self.near.checked_from, self.split_at) if x is not None]
        bands, rows = dedup.bands(min(levels)) if levels else (0, 0)
        self.keys = Keys(bands, rows, provenance=bool(run.splits))
        self.parts: list[Part] = []
        self.sizes: dict[int, int] = {}  # part -> records
        self.duplicates = self.near_duplicates = self.excluded = 0
        self.seconds: Counter = Counter()  # wall time per stage
        self.compared: dict = {}  # pairs compared in buckets, buckets left out for their size
        self.kept = np.zeros(0, dtype=np.int64)  # positions of kept records, in order
        self.groups = np.zeros(0, dtype=np.int64)  # split group (first member) of every position

    def _stage(self, name: str, fn: Callable, arguments: list[tuple]) -> list:
        t0 = time.perf_counter()
        results = self.tasks(fn, arguments) if arguments else []
        self.seconds[name] += time.perf_counter() - t0
        return results

    def starts(self) -> list[tuple[int, int]]:
        """(part number, position of its first record) for every part, in part order."""
        out, position = [], 0
        for part in self.parts:
            out.append((part.number, position))
            position += self.sizes[part.number]
        return out

    def update(self, parts: list[Part]) -> int:
        """Merge ``parts`` (the last list given, extended at the end); returns the kept count."""
        assert parts[:len(self.parts)] == self.parts, "parts only grow at the end"
        new = parts[len(self.parts):]
        for result in self._stage("index", part_index.index_part,
                                  [(self.out, p.number, self.keys, self.exclusions) for p in new]):
            self.sizes[result["part"]] = result["records"]
        self.parts = list(parts)
        starts = self.starts()
        total = sum(self.sizes.values())
        shards = max(2, math.ceil(total * max(self.keys.bands, 1) / SHARD_KEYS))
        id_shards = max(2, math.ceil(total / SHARD_IDS))
        tag = self._tag(starts, (shards, id_shards))
        self._remove_stale(tag)
        removed = self._stage("duplicates", buckets.duplicates,
                              [(self.out, s, id_shards, starts, tag) for s in range(id_shards)])
        found = []
        if self.keys.bands or self.keys.provenance:
            t0 = time.perf_counter()
            sketch = buckets.sketch(self.out, starts, os.path.join(part_index.merge_dir(self.out), f"sketch-{tag}-0000.npy"))
            self.seconds["sketch"] += time.perf_counter() - t0
            found = self._stage("edges", buckets.edges, [(self.out, s, shards, starts, removed, tag, self.near,
                                                          self.split_at, sketch) for s in range(shards)])
            self.compared = {"pairs": sum(f["pairs"] for f in found), "large_buckets": sum(f.get("large", 0) for f in found),
                             "large_buckets_left_out": sum(f["left_out"] for f in found),
                             "records_read": sum(f.get("reads", 0) for f in found), "shards": shards}
        t0 = time.perf_counter()
        self._clusters(total, starts, np.concatenate([np.load(p) for p in removed]), [f["path"] for f in found])
        self.seconds["clusters"] += time.perf_counter() - t0
        return len(self.kept)

    def _tag(self, starts: list[tuple[int, int]], shards: tuple[int, int]) -> str:
        what = repr((starts, self.sizes[starts[-1][0]] if starts else 0, shards, self.keys, self.near, self.split_at))
        return hashlib.blake2b(what.encode(), digest_size=6).hexdigest()

    def _remove_stale(self, tag: str) -> None:
        """Bucket outputs of an earlier round (before more parts were added) or other options."""
        for path in glob.glob(os.path.join(part_index.merge_dir(self.out), "*-*-[0-9][0-9][0-9][0-9].*")):
            if os.path.basename(path).split("-")[1] != tag:
                os.remove(path)

    def _clusters(self, total: int, starts: list[tuple[int, int]], copies: np.ndarray, edges: list[str]) -> None:
        """Decide from the duplicates, the exclusions and the edge files (read a batch at a time)."""
        excluded = np.zeros(total, dtype=bool)
        for number, start in starts:
            part_excluded, = part_index.load(self.out, number, "excluded")
            excluded[start:start + len(part_excluded)] = part_excluded
        removed = excluded.copy()
        removed[copies] = True
        first = np.arange(total, dtype=positions(total))  # smallest position of each near-duplicate cluster
        group = np.arange(total, dtype=positions(total)) if self.split_at is not None else np.zeros(0, dtype=np.int32)
        for found in _edge_batches(edges, max(1, total // 4)):
            first = first_of_components(total, first[found[found[:, 2] == buckets.NEAR, :2]])[first]
            if self.split_at is not None:
                group = first_of_components(total, group[found[:, :2]])[group]
        kept = ~removed & (first == np.arange(total, dtype=first.dtype))
        self.kept = np.flatnonzero(kept)
        self.duplicates = len(copies)
        copied = np.zeros(total, dtype=bool)
        copied[copies] = True
        self.excluded = int((excluded & ~copied).sum())
        self.near_duplicates = int((~removed & ~kept).sum())
        self.groups = group

    # -----------------------------------------------------------------------------------------
    # writing

    def assign(self, count: int | None) -> tuple[np.ndarray, list[str]]:
        """(split number of every position, -1 when not written; split names) for the first ``count``
        kept records."""
        from jit.code.engine import splits

        total = sum(self.sizes.values())
        chosen = self.kept if count is None else self.kept[:count]
        dest = np.full(total, -1, dtype=np.int8)
        if not self.run.splits:
            dest[chosen] = 0
            return dest, ["train"]
        names = [name for name, _ in self.run.splits]
        groups, first, sizes = np.unique(self.groups[chosen], return_index=True, return_counts=True)
        seed = getattr(self.run.source, "seed", 0)
        by_position = np.argsort(chosen[first])
        keys = np.empty(len(groups), dtype="S16")  # each group's place in the deal: 16 bytes, not its id
        keys[by_position] = [splits._order(seed, rid) for rid in self._ids(chosen[first][by_position])]
        order = np.argsort(keys, kind="stable").tolist()
        dealt = splits.deal([int(sizes[g]) for g in order], dict(self.run.splits))
        split_of_group = np.empty(len(groups), dtype=np.int8)
        split_of_group[order] = [names.index(name) for name in dealt]
        dest[chosen] = split_of_group[np.searchsorted(groups, self.groups[chosen])]
        return dest, names

    def _ids(self, positions: np.ndarray) -> Iterator[str]:
        """The content ids at ``positions`` (sorted), read part by part from the part indexes."""
        for number, start in self.starts():
            mine = positions[(positions >= start) & (positions < start + self.sizes[number])] - start
            if len(mine):
                ids, = part_index.load(self.out, number, "ids")
                yield from (i.decode() for i in ids[mine])

    def write(self, count: int | None) -> dict[str, int]:
        """The stages write and shards; returns the records per split."""
        dest, names = self.assign(count)
        size, fmt = self.run.shard_size, self.run.fmt
        starts = self.starts()
        placed = np.zeros(len(names), dtype=np.int64)  # records of each split before the current part
        pieces, contributors = [], {}
        for number, start in starts:
            mine = dest[start:start + self.sizes[number]]
            counts = np.bincount(mine[mine >= 0], minlength=len(names))
            if counts.any():
                layout = hashlib.blake2b(mine.tobytes() + repr((placed.tolist(), names, size)).encode(),
                                         digest_size=6).hexdigest()
                pieces.append((self.out, number, mine, placed.tolist(), names, size, layout))
                for s in np.flatnonzero(counts).tolist():
                    for k in range(placed[s] // size, (placed[s] + counts[s] - 1) // size + 1):
                        contributors.setdefault((s, k), []).append(number)
            placed += counts
        self._stage("write", writers.write_pieces, pieces)
        shards = []
        for s, name in enumerate(names):
            n = max(1, -(-int(placed[s]) // size))
            shards += [(self.out, name, k, n, fmt, contributors.get((s, k), [])) for k in range(n)]
        written = set(self._stage("shards", writers.assemble_shard, shards))
        for stale in set(writers.data_files(self.out)) - written:  # another layout's shards
            os.remove(stale)
        return {name: int(placed[s]) for s, name in enumerate(names)}
