"""The merge's second stage: tasks over shards of keys, each turning shared keys into edges.

Records are numbered in part order (a record's *position*: its part's first position plus its row),
and every task reads, of each part's index (``part_index``), the keys of its shard only: content ids
by hash modulo the shard count; band values and provenance keys by a range of their values, one
slice of each part's sorted keys (``part_index.keys_in``), so a task's reading grows with its shard,
not with the run. No task holds more than its shard's keys:

- ``duplicates``: records with the same content id; every copy after the first is a duplicate.
- ``edges``: records sharing an LSH band value (a bucket) are compared by their MinHash estimate;
  a pair whose estimate makes it a candidate is decided on the exact Jaccard similarity of its
  normalised 4-gram sets: at or above the near-duplicate
  threshold it is linked as near-duplicates (``dedup.checked_from`` says which estimates are
  checked), at or above the split threshold, with splits on, it is linked for splits; records
  sharing a provenance key are linked for splits too.

Buckets are compared as all their pairs, vectorised across buckets of one size; a large bucket is cut
into pieces first (``LARGE_BUCKET``). The exact similarity reads the shingle hashes the worker wrote
beside its part (``writers.write_shingles``), so no record is tokenised twice; a part without them is
read and tokenised. Edges are pairs of positions with a kind; a task's
output is one ``.npy`` file under a name that says which parts and options it covers, so
``--resume`` reuses it. What it leaves out: components and what is kept (``merge``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from jit.code.engine import dedup, part_index, writers

# A bucket of more than LARGE_BUCKET records is not compared whole: such a band value is made of
# shingles many records share (a kernel's signature line, boilerplate), and comparing it would grow
# with the square of the count (at 40,000 records of the scale benchmark, buckets of 2,000 held 8.5M
# pairs a band). It is cut by its members' later band values (``_refine``): a near-duplicate pair
# shares about two thirds of its bands, and far fewer records share two boilerplate band values than
# one; a piece still larger is cut again, and after REFINE_LEVELS cuts left out and counted. So a
# record meets at most LARGE_BUCKET - 1 others in each bucket or piece, and the pairs compared per
# record stop growing with the count. Records whose whole signatures are equal are linked in large
# buckets in one pass.
LARGE_BUCKET = 32
REFINE_LEVELS = 3  # cuts of a large bucket, each by one more shared band value
REFINE_SPAN = 3  # a large bucket (or piece) is cut by the values of the next bands only: a record is in a bounded number of pieces
SKETCH = 1 << 22  # counters of band values by their low bits: each at least its bucket's size
NEAR, SPLIT = 1, 2  # edge kinds: a near-duplicate link (also a split link), a split link only
SHINGLE_CACHE = 50_000  # shingle sets a task keeps (a few KB each), read again when forgotten
ESTIMATE_MARGIN = 0.1  # three standard errors of the estimate at J = 0.8: pairs further below are not read


class Near(NamedTuple):
    """The near-duplicate rule of a merge: a pair whose MinHash estimate reaches ``checked_from`` is
    near when the exact Jaccard similarity of its shingle sets reaches ``threshold``. A pair with
    equal signatures (an estimate of 1: copies with other names and constants) is near without
    reading its records: at J = 0.9 all 128 values agree with probability 0.9^128, about 1e-6,
    as in the large buckets (``_same_signatures``)."""

    checked_from: float
    threshold: float


def _shard_of(hashes: np.ndarray, shards: int) -> np.ndarray:
    return (hashes >> np.uint64(17)) % np.uint64(shards)  # the low bits already chose nothing else


def duplicates(out: str, shard: int, shards: int, parts: list[tuple[int, int]], tag: str) -> str:
    """Positions of the copies (all but the first) of each content id in this shard."""
    path = os.path.join(part_index.merge_dir(out), f"duplicates-{tag}-{shard:04d}.npy")
    if os.path.exists(path):
        return path
    ids, positions = [], []
    for number, start in parts:
        part_ids, hashes = part_index.load(out, number, "ids", "id_hashes")
        mine = np.flatnonzero(_shard_of(hashes, shards) == shard)
        ids.append(part_ids[mine])
        positions.append(mine.astype(np.int64) + start)
    ids_all = np.concatenate(ids) if ids else np.array([], dtype="S1")
    where = np.concatenate(positions) if positions else np.array([], dtype=np.int64)
    order = np.lexsort((where, ids_all))
    ids_all, where = ids_all[order], where[order]
    copies = where[np.flatnonzero(ids_all[1:] == ids_all[:-1]) + 1]
    writers.write_array(path, np.sort(copies))
    return path


CHUNK_PAIRS = 250_000  # candidate pairs a task compares at once
CHUNK_MEMBERS = 100_000  # members of large buckets cut into pieces at once (``_refine``)


class _Records:
    """Signatures and kin of every record a task compares, read once, part by part, when the task
    starts; shingle sets by position, as the pairs need them. A record in a task holds one of the
    shard's band values (about SHARD_KEYS of them, ``merge``), so its signatures (512 bytes each) stay
    bounded whatever the run's size, and each part's files are opened once a task, not once a chunk."""

    def __init__(self, out: str, parts: list[tuple[int, int]], positions: np.ndarray):
        self.out, self.parts = out, parts
        self.starts = np.array([start for _, start in parts], dtype=np.int64)
        self.positions = _unique(positions)
        self.signatures, self.kin = self._read()
        self.shingle_paths: dict[int, str | None] = {}  # None: the part has no shingle hashes
        self.shingles: dict[int, np.ndarray] = {}  # shingle sets read from records
        self.offsets: dict[int, np.ndarray] = {}  # each part's record offsets
        self.reads = 0  # records read (a record forgotten and read again counts again)

    def _part(self, position: int) -> int:
        return int(np.searchsorted(self.starts, position, side="right")) - 1

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        """The signatures of ``positions``, and their kin: the smallest hash of a record's provenance
        keys (records of one kin share a split group whatever their text), else minus its position."""
        signatures, kin = None, np.empty(len(self.positions), dtype=np.int64)
        for number, start, lo, hi in _by_part(self.parts, self.positions):
            stored = part_index.mapped(part_index.signature_path(self.out, number))
            if signatures is None:  # filled part by part: no second copy to join them
                signatures = np.empty((len(self.positions), stored.shape[1]), dtype=stored.dtype)
            mine = self.positions[lo:hi] - start
            np.take(stored, mine, axis=0, out=signatures[lo:hi])
            smallest = part_index.kin(self.out, number)[mine]
            kin[lo:hi] = np.where(smallest == np.iinfo(np.int64).max, -1 - (mine + start), smallest)
        if signatures is None:
            return np.zeros((0, 0), dtype=np.uint32), kin
        return signatures, kin

    def index(self, positions: np.ndarray) -> np.ndarray:
        """Where ``positions`` are among the records read (for ``signatures`` and ``kin``)."""
        return np.searchsorted(self.positions, positions)

    def shingle_set(self, position: int) -> np.ndarray:
        number, start = self.parts[self._part(position)]
        if number not in self.shingle_paths:
            self.shingle_paths[number] = part_index.shingles_path(self.out, number)
        path = self.shingle_paths[number]
        if path is not None:  # the hashes written when the record was made: no tokenising
            return part_index.shingle_row(path, position - start)
        if position not in self.shingles:
            if len(self.shingles) >= SHINGLE_CACHE:
                self.shingles.clear()
            if number not in self.offsets:
                self.offsets[number], = part_index.load(self.out, number, "offsets")
            with open(writers.part_path(self.out, number), "rb") as f:
                f.seek(int(self.offsets[number][position - start]))
                record = json.loads(f.readline())
            self.shingles[position] = dedup.shingle_hashes(record.get("python_source") or "")
            self.reads += 1
        return self.shingles[position]

    def jaccard(self, a: int, b: int) -> float:
        return dedup.jaccard(self.shingle_set(a), self.shingle_set(b))


def edges(out: str, shard: int, shards: int, parts: list[tuple[int, int]], removed: list[str], tag: str,
          near: Near | None, split_at: float | None, sketch: str | None = None) -> dict:
    """Near-duplicate and split edges from this shard's buckets and provenance keys:
    ``{"path", "pairs", "left_out"}`` (pairs compared, buckets left out for their size)."""
    path = os.path.join(part_index.merge_dir(out), f"edges-{tag}-{shard:04d}.npy")
    counts = f"{path[:-4]}.json"
    if os.path.exists(path) and os.path.exists(counts):
        with open(counts, encoding="utf-8") as f:
            return {"path": path, **json.load(f)}
    gone = _unique(np.concatenate([np.load(p) for p in removed])) if removed else np.array([], dtype=np.int64)
    sizes = np.load(sketch) if sketch else np.zeros(SKETCH, dtype=np.int32)  # every bucket's size, from above
    key_range = part_index.key_range(shard, shards)
    band_keys, band_positions, wholes = _shard_keys(out, parts, "bandkeys", 3, key_range, gone)
    key_hashes, key_positions = _shard_keys(out, parts, "provkeys", 2, key_range, gone)
    pairs, groups = _runs(band_keys, band_positions)
    large = [g for g in groups if len(g) > LARGE_BUCKET]
    groups = [g for g in groups if len(g) <= LARGE_BUCKET]
    piece_pairs, pieces, left_out = _pieces(out, parts, large, sizes)
    pairs, groups = np.concatenate([pairs, *piece_pairs]), groups + pieces
    records = _Records(out, parts, np.concatenate([pairs.reshape(-1), *groups]))
    found, compared = [], 0
    for chunk in _pair_chunks(pairs, groups):
        found += _compare_pairs(chunk, records, near, split_at)
        compared += len(chunk)
    if large and near is not None:
        found += _same_signatures(large, band_positions, wholes)
    pairs, groups = _runs(key_hashes, key_positions)
    found += [(int(a), int(b), SPLIT) for a, b in pairs.tolist()]
    for members in groups:
        found += [(int(members[0]), int(m), SPLIT) for m in members[1:]]
    figures = {"pairs": compared, "large": len(large), "left_out": left_out, "reads": records.reads}
    writers.write_json(counts, figures)
    writers.write_array(path, np.array(sorted(set(found)), dtype=np.int64).reshape(-1, 3))
    return {"path": path, **figures}


def _shard_keys(out: str, parts: list[tuple[int, int]], name: str, columns: int, key_range: tuple[int, int | None],
                removed: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every part's keys in this shard's range (``part_index.keys_in``), in part order, their positions
    and any further columns, the copies ``removed`` left out (at once: a part's share is small)."""
    read = [part_index.keys_in(out, number, name, *key_range, columns) for number, _ in parts]
    positions = _cat([r[1].astype(np.int64) + start for r, (_, start) in zip(read, parts)], np.int64)
    kept = ~np.isin(positions, removed)
    keys = _cat([r[0] for r in read], np.uint64)[kept]
    more = [_cat([r[c] for r in read], np.uint64)[kept] for c in range(2, columns)]
    return keys, positions[kept], *more


def sketch(out: str, parts: list[tuple[int, int]], path: str) -> str:
    """Write every band value's count by its low bits (``SKETCH`` counters, int32), over the records
    excluded from nothing (copies counted too: each counter stays at least its buckets' sizes), and
    return ``path``: what the edges tasks read to tell a band value whose bucket may be large."""
    if os.path.exists(path):
        return path
    sizes, pending, count = np.zeros(SKETCH, dtype=np.int64), [], 0
    for number, _ in parts:
        stored = part_index.mapped(part_index.keys_path(out, number))
        pending.append(np.asarray(stored[: len(stored) // 3]) & np.uint64(SKETCH - 1))
        count += len(pending[-1])
        if count >= SKETCH:
            sizes += np.bincount(np.concatenate(pending).astype(np.int64), minlength=SKETCH)
            pending, count = [], 0
    if pending:
        sizes += np.bincount(np.concatenate(pending).astype(np.int64), minlength=SKETCH)
    writers.write_array(path, np.minimum(sizes, np.iinfo(np.int32).max).astype(np.int32))
    return path


def _pair_chunks(pairs: np.ndarray, groups: list[np.ndarray]) -> Iterator[np.ndarray]:
    """The candidate pairs, a bounded chunk at a time, each chunk's pairs distinct (a pair in two
    chunks is compared twice: the edges are a set)."""
    for start in range(0, len(pairs), CHUNK_PAIRS):
        yield _distinct(pairs[start:start + CHUNK_PAIRS])
    pending, count = [], 0
    for size, same in _by_size(groups):  # all pairs of every group of one size at once
        first, second = np.triu_indices(size, 1)
        for start in range(0, len(same), max(1, CHUNK_PAIRS // len(first))):
            block = np.stack(same[start:start + max(1, CHUNK_PAIRS // len(first))])
            pending.append(np.stack([block[:, first].reshape(-1), block[:, second].reshape(-1)], axis=1))
            count += len(pending[-1])
            if count >= CHUNK_PAIRS:
                yield _distinct(np.concatenate(pending))
                pending, count = [], 0
    if pending:
        yield _distinct(np.concatenate(pending))


def _by_size(groups: list[np.ndarray]) -> list[tuple[int, list[np.ndarray]]]:
    """The groups by their size, smallest first (each size's groups in the order given)."""
    sizes: dict[int, list[np.ndarray]] = {}
    for members in groups:
        sizes.setdefault(len(members), []).append(members)
    return sorted(sizes.items())


def _batches(groups: list[np.ndarray]) -> Iterator[list[np.ndarray]]:
    """Groups in batches of about CHUNK_MEMBERS members."""
    batch, count = [], 0
    for members in groups:
        batch.append(members)
        count += len(members)
        if count >= CHUNK_MEMBERS:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


def _pieces(out: str, parts: list[tuple[int, int]], large: list[np.ndarray],
            sizes: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """The large buckets cut into pieces (``_refine``), a bounded number of their members at a time,
    from their members' band values, read once (168 bytes a record): (the batches' pairs, the pieces,
    how many were left out)."""
    if not large:
        return [], [], 0
    where = _unique(np.concatenate(large))
    table = _band_rows(out, parts, where)
    pairs, groups, left_out = [], [], 0
    for batch in _batches(large):
        piece_pairs, pieces, over = _refine(batch, where, table, sizes)
        pairs.append(piece_pairs)
        groups += pieces
        left_out += over
    return pairs, groups, left_out


def _refine(large: list[np.ndarray], where: np.ndarray, table: np.ndarray,
            sizes: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], int]:
    """Large buckets cut into pieces by their members' other band values: a piece holds the members
    of one large bucket that also share the value of a later band, when that band value's own bucket
    may be large too (``sizes``, a count of every band value by its low bits, says so from above: a
    pair sharing a band value whose bucket is small meets there). A pair of near-duplicates that
    shares only large buckets shares about half of its bands, so it meets in the piece of its first
    shared band cut by another. A piece still larger than LARGE_BUCKET is cut again by the bands after
    the ones its members share, up to REFINE_LEVELS cuts, so no bucket or piece compared holds more
    than LARGE_BUCKET records and the pairs compared a record stay bounded whatever the count.
    ``table`` holds the band values of the records at ``where`` (sorted; every member among them).
    Returns the pieces as ``_runs`` does (pairs, groups of at most LARGE_BUCKET) and how many pieces
    were too large to compare whole (left out; those of the last level are not cut again)."""
    all_pairs, all_groups, left_out = [], [], 0
    for _ in range(REFINE_LEVELS):
        pairs, groups, large = _cut(large, where, table, sizes)
        all_pairs.append(pairs)
        all_groups += groups
        left_out += len(large)
        if not large:
            break
    return _distinct(np.concatenate(all_pairs)), all_groups, left_out


def _cut(large: list[np.ndarray], where: np.ndarray, table: np.ndarray,
         sizes: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """One level of ``_refine``: (pairs, pieces to compare, pieces still too large)."""
    empty = np.zeros((0, 2), dtype=np.int64)
    counts = np.array([len(g) for g in large], dtype=np.int64)
    members = np.concatenate(large)
    rows = table[np.searchsorted(where, members)]
    width = rows.shape[1]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # the last band every member of a bucket (or piece) shares: it is cut by the bands after it
    own = np.array([width - 1 - int(np.argmax(np.all(rows[a:a + n] == rows[a], axis=0)[::-1]))
                    for a, n in zip(starts.tolist(), counts.tolist())], dtype=np.int64)
    bucket = np.repeat(np.arange(len(large), dtype=np.int64), counts)
    after = np.arange(width)[None, :] - own[bucket][:, None]
    later = (after > 0) & (after <= REFINE_SPAN)
    wanted = later & (sizes[(rows & np.uint64(SKETCH - 1)).astype(np.int64)] > LARGE_BUCKET)
    r, c = np.nonzero(wanted)
    salt = (bucket[r] * width + c).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    keys, positions, owner = rows[r, c] ^ salt, members[r], bucket[r]
    order = np.lexsort((positions, keys))
    keys, positions, owner = keys[order], positions[order], owner[order]
    if not len(keys):
        return empty, [], []
    firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    lengths = np.diff(np.concatenate((firsts, [len(keys)])))
    cuts = (lengths >= 2) & (lengths < counts[owner[firsts]])  # a piece that is its whole bucket cuts nothing
    two = firsts[cuts & (lengths == 2)]
    pairs = np.stack([positions[two], positions[two + 1]], axis=1) if len(two) else empty
    # as arrays, not sets of tuples: pieces hold millions of members at a million records; two pieces
    # with the same members (records sharing two later bands) are compared twice, the edges are a set
    kept = cuts & (lengths > 2) & (lengths <= LARGE_BUCKET)
    groups = [positions[a:a + n] for a, n in zip(firsts[kept].tolist(), lengths[kept].tolist())]
    over = cuts & (lengths > LARGE_BUCKET)
    larger = [positions[a:a + n] for a, n in zip(firsts[over].tolist(), lengths[over].tolist())]
    return pairs, groups, larger


def _band_rows(out: str, parts: list[tuple[int, int]], positions: np.ndarray) -> np.ndarray:
    """Every band value of the records at ``positions`` (sorted; one row each)."""
    rows = None
    for number, start, lo, hi in _by_part(parts, positions):
        bands = part_index.band_rows(out, number)
        if rows is None:
            rows = np.zeros((len(positions), bands.shape[1]), dtype=np.uint64)
        rows[lo:hi] = bands[positions[lo:hi] - start]
    return rows


def _by_part(parts: list[tuple[int, int]], positions: np.ndarray) -> Iterator[tuple[int, int, int, int]]:
    """(part number, its first position, lo, hi) for each part holding some of the sorted
    ``positions``, which are ``positions[lo:hi]``."""
    starts = np.array([start for _, start in parts], dtype=np.int64)
    which = np.searchsorted(starts, positions, side="right") - 1
    cuts = (np.flatnonzero(np.diff(which)) + 1).tolist()
    for lo, hi in zip([0, *cuts], [*cuts, len(which)]):
        if lo < hi:
            number, start = parts[which[lo]]
            yield number, start, lo, hi


def _same_signatures(large: list[np.ndarray], positions: np.ndarray, wholes: np.ndarray) -> list[tuple[int, int, int]]:
    """Near-duplicate edges within buckets left out for their size, between records whose whole
    signatures are equal (an estimate of 1: copies with other names and constants): a pass, not pairs."""
    where, first = np.unique(positions, return_index=True)
    found = []
    for members in large:
        same, groups = _runs(wholes[first[np.searchsorted(where, members)]], members)
        found += [(int(a), int(b), NEAR) for a, b in same.tolist()]
        found += [(int(g[0]), int(m), NEAR) for g in groups for m in g[1:]]
    return found


def _cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.array([], dtype=dtype)


def _runs(keys: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Positions sharing a key: (the pairs of positions that alone share a key, each pair once; the
    positions of each key that more than two share, each such group once), in position order."""
    order = np.lexsort((positions, keys))
    keys, positions = keys[order], positions[order]
    cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    starts = np.concatenate(([0], cuts)).astype(np.int64)
    sizes = np.diff(np.concatenate((starts, [len(keys)])))
    two = starts[sizes == 2]
    pairs = _distinct(np.stack([positions[two], positions[two + 1]], axis=1))
    more = {tuple(positions[a:a + n].tolist()) for a, n in zip(starts[sizes > 2].tolist(), sizes[sizes > 2].tolist())}
    return pairs, [np.array(m, dtype=np.int64) for m in sorted(more)]


def _distinct(pairs: np.ndarray) -> np.ndarray:
    """The distinct rows of an (m, 2) array of positions, sorted (one 64-bit key a pair: positions
    below 2**31)."""
    keys = _unique((pairs[:, 0].astype(np.int64) << 32) | pairs[:, 1].astype(np.int64))
    return np.stack([keys >> 32, keys & 0xFFFFFFFF], axis=1)


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by a sort: numpy 2.4's hashing ``unique`` takes ~60x longer on millions of
    distinct integers."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def _compare_pairs(pairs: np.ndarray, records: _Records, near: Near | None,
                   split_at: float | None, chunk: int = 8192) -> list[tuple[int, int, int]]:
    """Edges between the records of each pair, many pairs at a time (few enough that their two
    gathered signature arrays, 4 MB each, stay in the processor's cache while they are compared)."""
    found = []
    for start in range(0, len(pairs), chunk):
        found += _compare_chunk(pairs[start:start + chunk], records, near, split_at)
    return found


def _compare_chunk(pairs: np.ndarray, records: _Records, near: Near | None,
                   split_at: float | None) -> list[tuple[int, int, int]]:
    """Pairs whose estimate makes them candidates are read and decided on their exact similarity."""
    at_a, at_b = records.index(pairs[:, 0]), records.index(pairs[:, 1])  # rows of the records read
    estimate = np.count_nonzero(records.signatures[at_a] == records.signatures[at_b], axis=1) / records.signatures.shape[1]
    none = np.zeros(len(pairs), dtype=bool)
    same = estimate >= 1.0 if near is not None else none  # equal signatures: see ``Near``
    found = [(a, b, NEAR) for a, b in pairs[same].tolist()]
    check_near = (estimate >= near.checked_from) & ~same if near is not None else none
    check_split = none
    if split_at is not None:
        check_split = ~same & (estimate >= split_at - ESTIMATE_MARGIN) & (records.kin[at_a] != records.kin[at_b])
    which = check_near | check_split
    for (a, b), is_near, is_split in zip(pairs[which].tolist(), check_near[which].tolist(), check_split[which].tolist()):
        similarity = records.jaccard(a, b)
        if is_near and similarity >= near.threshold:
            found.append((a, b, NEAR))
        elif is_split and similarity >= split_at:
            found.append((a, b, SPLIT))
    return found
