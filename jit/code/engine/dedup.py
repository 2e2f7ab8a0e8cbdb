"""Near-duplicate control: MinHash signatures of normalised token shingles and an index of kept kernels.

A source's signature is the MinHash (``datasketch``: fixed seed, ``NUM_PERM`` permutations) of the
set of ``SHINGLE``-grams of its normalised token stream (``tokens.norm_tokens``), so two kernels
that differ only in names, constants and layout have the same signature. Two sources are
near-duplicates when the exact Jaccard similarity of their shingle sets is at least the threshold.

The signatures only propose pairs. A MinHash estimate of 128 permutations has a standard error of
about 0.027 at J = 0.9, so deciding on the estimate alone drops pairs below the threshold and keeps
some above it (deciding one standard error low kept 1.5% of planted pairs at J >= 0.9 at a million
records). Pairs whose estimate is at least ``CHECK_MARGIN`` standard errors below the threshold
(``checked_from``: 0.79 at 0.9) are decided on the exact similarity of their shingle hashes
(``shingle_hashes``, ``jaccard``): a pair at J = 0.9 escapes the check with probability about
1.5e-4, one at 0.95 with about 1e-10 (binomial tails of 128 permutations).

``NearDuplicates`` holds the signatures and shingle hashes of kept sources: ``find`` names a kept
source that a new one nearly duplicates, ``add`` keeps one, ``remove`` forgets one. The index
proposes candidates with MinHash LSH and decides exactly; its answers depend only on what was
added and in which order (never on hash order), so a run drops the same kernels whatever the
worker count.
The generator uses one index per work part (``batch_generator``); across parts, the merge
compares the same signatures in LSH buckets sharded by hash (``buckets``) and decides the same
way, and ``bands`` chooses the buckets for both.

What it leaves out: exact duplicates (content ids, ``records``) and what to do with a
near-duplicate (the caller decides).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Hashable

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from jit.code.analysis.tokens import norm_tokens, shingles

SHINGLE = 4
NUM_PERM = 128
SEED = 1
# datasketch 2 changed its default permutation scheme; naming it keeps signatures (and so the
# kernels a run drops) the same across datasketch releases that support it.
SCHEME = "affine32"
DEFAULT_THRESHOLD = 0.9
# LSH bands are chosen so that a pair right at the threshold is a candidate with probability at
# least 1 - MISS (datasketch's own optimum misses about two in three pairs at J = 0.9).
MISS = 0.01
CHECK_MARGIN = 4.0  # standard errors of the estimate below the threshold from which a pair is checked exactly


def shingle_set(source: str) -> set[str]:
    """The normalised token shingles of ``source``: the set its signature summarises."""
    return shingles(norm_tokens(source), SHINGLE)


@functools.cache
def _blank() -> MinHash:
    # every signature uses the same permutations: draw them once, copy the blank after
    return MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)


def signature(source: str) -> LeanMinHash:
    """The MinHash signature of ``source``'s normalised token shingles."""
    return fingerprint(source)[0]


def fingerprint(source: str) -> tuple[LeanMinHash, np.ndarray]:
    """(``signature``, ``shingle_hashes``) of ``source``, tokenised once."""
    encoded = [s.encode("utf-8") for s in shingle_set(source)]
    minhash = _blank().copy()
    minhash.update_batch(encoded)
    return LeanMinHash(minhash), _hashes(encoded)


def shingle_hashes(source: str) -> np.ndarray:
    """The sorted 64-bit hashes of ``source``'s normalised token shingles (``shingle_set``)."""
    return _hashes([s.encode("utf-8") for s in shingle_set(source)])


def _hashes(encoded: list[bytes]) -> np.ndarray:
    values = (int.from_bytes(hashlib.blake2b(s, digest_size=8).digest(), "little") for s in encoded)
    return np.unique(np.fromiter(values, dtype=np.uint64))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The exact Jaccard similarity of two sets of ``shingle_hashes``."""
    common = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - common
    return common / union if union else 1.0


def from_hashvalues(values: np.ndarray) -> LeanMinHash:
    """A signature from its stored hash values (``signature(...).hashvalues``)."""
    return LeanMinHash(seed=SEED, hashvalues=values, scheme=SCHEME)


def checked_from(threshold: float, num_perm: int = NUM_PERM) -> float:
    """The estimate from which a pair is checked exactly at ``threshold`` (``CHECK_MARGIN`` standard errors lower)."""
    return max(0.0, threshold - CHECK_MARGIN * math.sqrt(threshold * (1.0 - threshold) / num_perm))


def bands(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(bands, rows per band) for MinHashLSH: the most rows (fewest chance candidates) that still
    make a pair at ``threshold`` a candidate with probability at least ``1 - MISS``."""
    for rows in range(num_perm // 2, 0, -1):
        count = num_perm // rows
        if 1 - (1 - threshold ** rows) ** count >= 1 - MISS:
            return count, rows
    return num_perm, 1


class NearDuplicates:
    """Signatures and shingle hashes of kept sources, by key; a new source is a near-duplicate of a
    kept one when their exact Jaccard similarity is at least the threshold."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        if not 0 < threshold <= 1:
            raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.checks_from = checked_from(threshold)
        self._lsh = MinHashLSH(num_perm=NUM_PERM, params=bands(self.checks_from))
        self._kept: dict[Hashable, tuple[int, LeanMinHash, np.ndarray]] = {}  # key -> (order added, signature, hashes)
        self._added = 0

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._kept

    def find(self, sig: LeanMinHash, hashes: np.ndarray) -> Hashable | None:
        """The earliest-added kept key that the source of ``fingerprint`` (sig, hashes) nearly
        duplicates, or None.

        LSH returns candidates in hash order; taking the earliest match keeps the answer
        the same in every process.
        """
        best = None
        for key in self._lsh.query(sig):
            order, kept, kept_hashes = self._kept[key]
            if best is not None and order > best[0]:
                continue
            if kept.jaccard(sig) >= self.checks_from and jaccard(kept_hashes, hashes) >= self.threshold:
                best = (order, key)
        return None if best is None else best[1]

    def add(self, key: Hashable, sig: LeanMinHash, hashes: np.ndarray) -> None:
        if key in self._kept:
            raise KeyError(f"{key!r} is already kept")
        self._lsh.insert(key, sig, check_duplication=False)
        self._kept[key] = (self._added, sig, hashes)
        self._added += 1

    def remove(self, key: Hashable) -> None:
        self._lsh.remove(key)
        del self._kept[key]

