"""The merge's first stage: one task per part, writing what the later stages need to know of its records.

For every record of a finished part, in part order: its content id, a 64-bit hash of the id, the
byte offset of its line in the part file, whether it is near a source of the exclusion set
(``exclude``, decided exactly, record by record), the hashes of its LSH bands (from its MinHash
signature: the part's signature file when the worker wrote one, else computed here) and the hashes
of its provenance keys (seed kernel, source file; ``splits.provenance_keys``), and a hash of its
whole signature (records with equal signatures are near whatever bucket they share). Band values and
provenance keys are also written sorted, with their rows, so a bucket task maps the file and reads
only its range (``keys_in``). Written to ``DIR/.jit-synth/merge/index-NNNNN.npz`` (and
``bandkeys-``, ``provkeys-``, ``bands-``, ``kin-NNNNN.npy`` before it) under temporary names, so an
index file there is a finished task and ``--resume`` skips it. Signatures computed here go beside it (``sig-NNNNN.npy``), for the
bucket stage to read, with the records' shingle hashes (``sh-NNNNN.npy``), which the bucket stage
reads for exact decisions instead of tokenising records again (a worker that wrote signatures
wrote these too, beside its part).

What it leaves out: comparing records with each other (``buckets``) and deciding (``merge``).
"""

from __future__ import annotations

import hashlib
import io
import json
import mmap
import os
from dataclasses import dataclass

import numpy as np

from jit.code.engine import dedup, writers
from jit.code.engine.splits import provenance_keys

# hash mixing for band values: a fixed odd multiplier (splitmix64's), so band hashes are the same
# in every process and every release of this package that keeps it
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True, slots=True)
class Keys:
    """What the merge keys records by; the same for every part of a run."""

    bands: int = 0  # LSH bands (0: no near-duplicate or split grouping by similarity)
    rows: int = 0  # signature rows per band
    provenance: bool = False  # hash the records' provenance keys (splits on)


def merge_dir(out: str) -> str:
    return os.path.join(out, writers.WORK, "merge")


def index_path(out: str, part: int) -> str:
    return os.path.join(merge_dir(out), f"index-{part:05d}.npz")


def signature_path(out: str, part: int) -> str:
    """Where a part's signatures are: the worker's file if it wrote one, else the merge's own."""
    worker = writers.signatures_path(out, part)
    return worker if os.path.exists(worker) else os.path.join(merge_dir(out), f"sig-{part:05d}.npy")


def shingles_path(out: str, part: int) -> str | None:
    """Where a part's shingle hashes are (``writers.write_shingles``): the worker's file, else the
    merge's own, else None (the records are read and tokenised)."""
    for path in (writers.shingles_path(out, part), os.path.join(merge_dir(out), f"sh-{part:05d}.npy")):
        if os.path.exists(path):
            return path
    return None


def hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def band_hashes(signatures: np.ndarray, keys: Keys) -> np.ndarray:
    """(records, bands) uint64: each band's rows mixed into one value, the band's number mixed in
    too, so equal values in two bands are not taken for a shared bucket."""
    sig = signatures.astype(np.uint64)
    out = np.empty((len(sig), keys.bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(keys.bands):
            h = np.full(len(sig), np.uint64(b + 1) * _MIX, dtype=np.uint64)
            for r in range(b * keys.rows, (b + 1) * keys.rows):
                h = (h ^ sig[:, r]) * _MIX
                h ^= h >> np.uint64(29)
            out[:, b] = h
    return out


def index_part(out: str, part: int, keys: Keys, exclusions=None) -> dict:
    """Stage (a) for one part; returns ``{"part", "records", "excluded"}``. Skipped when done."""
    path = index_path(out, part)
    if os.path.exists(path) and os.path.exists(_path(out, "kin", part)):  # kin: written last of the key files
        with np.load(path) as done:
            return {"part": part, "records": int(len(done["ids"])), "excluded": int(done["excluded"].sum())}
    stored = writers.read_signatures(out, part) if keys.bands else None
    ids, offsets, excluded, computed, hashes, provenance = [], [], [], [], [], []
    offset = 0
    with open(writers.part_path(out, part), "rb") as f:
        for row, line in enumerate(f):
            record = json.loads(line)
            source = record.get("python_source") or ""
            ids.append(str(record["id"]))
            offsets.append(offset)
            offset += len(line)
            excluded.append(exclusions is not None and exclusions.matches(source))
            if keys.bands and stored is None:
                signature, shingles = dedup.fingerprint(source)
                computed.append(signature.hashvalues)
                hashes.append(shingles)
            if keys.provenance:
                provenance += [(row, hash64(repr(key))) for key in provenance_keys(record.get("metadata"))]
    n = len(ids)
    os.makedirs(merge_dir(out), exist_ok=True)
    if keys.bands and stored is None:
        stored = np.stack(computed) if computed else np.zeros((0, dedup.NUM_PERM), dtype=np.uint32)
        writers.write_signatures(os.path.join(merge_dir(out), f"sig-{part:05d}.npy"), stored)
        writers.write_shingles(os.path.join(merge_dir(out), f"sh-{part:05d}.npy"), hashes)
    arrays = {
        "ids": np.array(ids, dtype="S"),
        "id_hashes": np.array([hash64(i) for i in ids], dtype=np.uint64),
        "offsets": np.array(offsets, dtype=np.int64),
        "excluded": np.array(excluded, dtype=bool),
    }
    bands = band_hashes(stored, keys) if keys.bands else np.zeros((n, 0), dtype=np.uint64)
    whole = band_hashes(stored, Keys(1, dedup.NUM_PERM))[:, 0] if keys.bands else np.zeros(n, dtype=np.uint64)
    _write_keys(out, part, bands, whole, np.array(provenance, dtype=np.uint64).reshape(-1, 2), arrays["excluded"])
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(buffer.getvalue())
    os.replace(tmp, path)
    return {"part": part, "records": n, "excluded": int(arrays["excluded"].sum())}


def _write_keys(out: str, part: int, bands: np.ndarray, whole: np.ndarray, provenance: np.ndarray,
                excluded: np.ndarray) -> None:
    """The part's keys for the bucket stage, as files a task maps and reads only its range of
    (``keys_in``): band values sorted, with each one's row and its record's whole-signature hash;
    provenance hashes sorted, with their rows (records excluded are left out of both); every
    record's band values (``band_rows``) and kin (``kin``)."""
    alive = ~excluded
    rows, cols = np.nonzero(np.broadcast_to(alive[:, None], bands.shape))
    values = bands[rows, cols]
    order = np.argsort(values, kind="stable")
    rows = rows[order]
    writers.write_array(_path(out, "bandkeys", part), np.concatenate([values[order], rows.astype(np.uint64), whole[rows]]))
    mine = provenance[alive[provenance[:, 0].astype(np.int64)]] if len(provenance) else provenance
    order = np.argsort(mine[:, 1], kind="stable")
    writers.write_array(_path(out, "provkeys", part), np.concatenate([mine[order, 1], mine[order, 0]]))
    writers.write_array(_path(out, "bands", part), bands)
    smallest = np.full(len(excluded), np.iinfo(np.int64).max, dtype=np.int64)
    if len(provenance):
        np.minimum.at(smallest, provenance[:, 0].astype(np.int64), (provenance[:, 1] >> np.uint64(1)).astype(np.int64))
    writers.write_array(_path(out, "kin", part), smallest)


def _path(out: str, name: str, part: int) -> str:
    return os.path.join(merge_dir(out), f"{name}-{part:05d}.npy")


def keys_path(out: str, part: int) -> str:
    """The part's sorted band values, rows and whole-signature hashes (``keys_in``)."""
    return _path(out, "bandkeys", part)


KEY_BITS = 24  # key ranges are cut on the top bits of a key (band and provenance hashes are uniform)


def key_range(shard: int, shards: int) -> tuple[int, int | None]:
    """[low, high) of the keys of ``shard`` of ``shards`` (``high`` None: to the end); contiguous, so a
    task reads one slice of each part's sorted keys."""
    def bound(s: int) -> int:
        return -(-s * (1 << KEY_BITS) // shards) << (64 - KEY_BITS)

    return bound(shard), (bound(shard + 1) if shard + 1 < shards else None)


_HEADERS: dict[tuple[str, int, int], tuple[int, tuple, np.dtype, bool]] = {}
HEADERS = 65536  # .npy headers a process keeps (a task maps each part's files many times)


def _header(path: str) -> tuple[int, tuple, np.dtype, bool]:
    """(data offset, shape, dtype, Fortran order) of a .npy file, parsed once while the file is the same."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_mtime_ns)
    header = _HEADERS.get(key)
    if header is None:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
            header = (f.tell(), shape, dtype, fortran)
        if len(_HEADERS) >= HEADERS:
            _HEADERS.clear()
        _HEADERS[key] = header
    return header


def mapped(path: str) -> np.ndarray:
    """``np.load(path, mmap_mode="r")`` without parsing the file's header again while the file is the
    same (that parse costs more than the slice a task then reads), as a plain array over the map
    (``np.memmap``'s construction and indexing cost several times the rows a task reads of a part).
    The map is not kept: it is unmapped, and the pages read leave the process, with the array."""
    offset, shape, dtype, fortran = _header(path)
    count = int(np.prod(shape))
    if not count:
        return np.zeros(shape, dtype=dtype)
    with open(path, "rb") as f:
        whole = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(whole, dtype=dtype, count=count, offset=offset).reshape(shape, order="F" if fortran else "C")


def shingle_row(path: str, row: int) -> np.ndarray:
    """One record's hashes from a ``writers.write_shingles`` file, read with two small reads (a map
    would bring its neighbours' pages into the process too)."""
    offset = _header(path)[0]
    fd = os.open(path, os.O_RDONLY)  # unbuffered: a buffered file would read 8 KB for each of them
    try:
        lo, hi = np.frombuffer(os.pread(fd, 16, offset + 8 * row), dtype=np.uint64).tolist()
        return np.frombuffer(os.pread(fd, 8 * (hi - lo), offset + 8 * lo), dtype=np.uint64).copy()
    finally:
        os.close(fd)


def keys_in(out: str, part: int, name: str, low: int, high: int | None, columns: int) -> list[np.ndarray]:
    """The sorted keys of a part (``bandkeys``: key, row, whole hash; ``provkeys``: key, row) in
    [low, high), column by column, reading only that slice."""
    stored = mapped(_path(out, name, part))
    k = len(stored) // columns
    keys = stored[:k]
    a = int(np.searchsorted(keys, np.uint64(low)))
    b = k if high is None else int(np.searchsorted(keys, np.uint64(high)))
    return [np.array(stored[c * k + a:c * k + b]) for c in range(columns)]


def band_rows(out: str, part: int) -> np.ndarray:
    """(records, bands) band values of a part, memory-mapped."""
    return mapped(_path(out, "bands", part))


def kin(out: str, part: int) -> np.ndarray:
    """Per record of a part, the smallest hash of its provenance keys shifted right by one, or the
    int64 maximum when it has none; memory-mapped."""
    return mapped(_path(out, "kin", part))


def load(out: str, part: int, *names: str) -> list[np.ndarray]:
    with np.load(index_path(out, part)) as index:
        return [index[name] for name in names]
