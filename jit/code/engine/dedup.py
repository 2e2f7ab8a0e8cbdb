"""Near-duplicate control: MinHash signatures of normalised token shingles and an index of kept kernels.

A source's signature is the MinHash (``datasketch``: fixed seed, ``NUM_PERM`` permutations) of the
set of ``SHINGLE``-grams of its normalised token stream (``tokens.norm_tokens``), so two kernels
that differ only in names, constants and layout have the same signature. Two sources are
near-duplicates when the signatures' Jaccard estimate is at least the threshold.

A MinHash estimate of 128 permutations has a standard error of about 0.027 at J = 0.9, so deciding
on ``estimate >= threshold`` keeps about half of the pairs at the threshold. The index decides on
``estimate >= threshold - MARGIN standard errors`` instead (``decision``): a pair at the threshold
is dropped with probability about 0.84 and one at 0.93 with about 0.98 (on 3,000 generated
kernels, 0.2% are left in a pair at exact Jaccard 0.9, against 3.6% deciding on the bare
estimate). A wider margin drops more pairs below the threshold and makes a run redraw more.

``NearDuplicates`` holds the signatures of kept sources: ``find`` names a kept source that a new
signature nearly duplicates, ``add`` keeps one, ``remove`` forgets one. The index proposes
candidates with MinHash LSH and decides with the estimate; its answers depend only on what was
added and in which order (never on hash order), so a run drops the same kernels whatever the
worker count.
The generator uses one index per work part (``batch_generator``); across parts, the merge
compares the same signatures in LSH buckets sharded by hash (``buckets``) with the same
``decision``, and ``bands`` chooses the buckets for both.

What it leaves out: exact duplicates (content ids, ``records``) and what to do with a
near-duplicate (the caller decides).
"""

from __future__ import annotations

import functools
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
MARGIN = 1.0  # standard errors of the estimate below the threshold at which a pair counts as near


def shingle_set(source: str) -> set[str]:
    """The normalised token shingles of ``source``: the set its signature summarises."""
    return shingles(norm_tokens(source), SHINGLE)


@functools.cache
def _blank() -> MinHash:
    # every signature uses the same permutations: draw them once, copy the blank after
    return MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME)


def signature(source: str) -> LeanMinHash:
    """The MinHash signature of ``source``'s normalised token shingles."""
    minhash = _blank().copy()
    minhash.update_batch([s.encode("utf-8") for s in shingle_set(source)])
    return LeanMinHash(minhash)


def from_hashvalues(values: np.ndarray) -> LeanMinHash:
    """A signature from its stored hash values (``signature(...).hashvalues``)."""
    return LeanMinHash(seed=SEED, hashvalues=values, scheme=SCHEME)


def decision(threshold: float, num_perm: int = NUM_PERM) -> float:
    """The estimate at or above which a pair is near at ``threshold`` (``MARGIN`` standard errors lower)."""
    return max(0.0, threshold - MARGIN * math.sqrt(threshold * (1.0 - threshold) / num_perm))


def bands(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(bands, rows per band) for MinHashLSH: the most rows (fewest chance candidates) that still
    make a pair at ``threshold`` a candidate with probability at least ``1 - MISS``."""
    for rows in range(num_perm // 2, 0, -1):
        count = num_perm // rows
        if 1 - (1 - threshold ** rows) ** count >= 1 - MISS:
            return count, rows
    return num_perm, 1


class NearDuplicates:
    """Signatures of kept sources, by key; a new signature is a near-duplicate of a kept one when
    their Jaccard estimate is at least ``decision(threshold)``."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        if not 0 < threshold <= 1:
            raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.decides_at = decision(threshold)
        self._lsh = MinHashLSH(num_perm=NUM_PERM, params=bands(self.decides_at))
        self._kept: dict[Hashable, tuple[int, LeanMinHash]] = {}  # key -> (order added, signature)
        self._added = 0

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._kept

    def find(self, sig: LeanMinHash) -> Hashable | None:
        """The earliest-added kept key ``sig`` nearly duplicates, or None.

        LSH returns candidates in hash order; taking the earliest match keeps the answer
        the same in every process.
        """
        best = None
        for key in self._lsh.query(sig):
            order, kept = self._kept[key]
            if kept.jaccard(sig) >= self.decides_at and (best is None or order < best[0]):
                best = (order, key)
        return None if best is None else best[1]

    def add(self, key: Hashable, sig: LeanMinHash) -> None:
        if key in self._kept:
            raise KeyError(f"{key!r} is already kept")
        self._lsh.insert(key, sig, check_duplication=False)
        self._kept[key] = (self._added, sig)
        self._added += 1

    def remove(self, key: Hashable) -> None:
        self._lsh.remove(key)
        del self._kept[key]

