"""The merge's first stage: one task per part, writing what the later stages need to know of its records.

For every record of a finished part, in part order: its content id, a 64-bit hash of the id, the
byte offset of its line in the part file, whether it is near a source of the exclusion set
(``exclude``, decided exactly, record by record), the hashes of its LSH bands (from its MinHash
signature: the part's signature file when the worker wrote one, else computed here) and the hashes
of its provenance keys (seed kernel, source file; ``splits.provenance_keys``), and a hash of its
whole signature (records with equal signatures are near whatever bucket they share). Written to
``DIR/.jit-synth/merge/index-NNNNN.npz`` under a temporary name, so a file there is a finished
task and ``--resume`` skips it. Signatures computed here go beside it (``sig-NNNNN.npy``), for the
bucket stage to read, with the records' shingle hashes (``sh-NNNNN.npy``), which the bucket stage
reads for exact decisions instead of tokenising records again (a worker that wrote signatures
wrote these too, beside its part).

What it leaves out: comparing records with each other (``buckets``) and deciding (``merge``).
"""

from __future__ import annotations

import hashlib
import io
import json
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
    if os.path.exists(path):
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
        "bands": band_hashes(stored, keys) if keys.bands else np.zeros((n, 0), dtype=np.uint64),
        "whole": band_hashes(stored, Keys(1, dedup.NUM_PERM))[:, 0] if keys.bands else np.zeros(n, dtype=np.uint64),
        "provenance": np.array(provenance, dtype=np.uint64).reshape(-1, 2),
    }
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(buffer.getvalue())
    os.replace(tmp, path)
    return {"part": part, "records": n, "excluded": int(arrays["excluded"].sum())}


def load(out: str, part: int, *names: str) -> list[np.ndarray]:
    with np.load(index_path(out, part)) as index:
        return [index[name] for name in names]
