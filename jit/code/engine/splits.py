"""Split a dataset into train/validation/test without leaks between the splits.

Rewrites DIR/data as one set of shards per split (data/train-00000-of-00002.jsonl,
data/validation-00000-of-00001.jsonl, ...), records the split sizes in DIR/stats.json and lists
every split in the card's `configs:` block, so `datasets.load_dataset(DIR)` returns a DatasetDict.

Records are split by group, never one by one; these always land in the same split:
  - near-duplicates: two kernels whose normalised-token 4-gram sets have a Jaccard similarity
    of 0.8 or more (the exact figure: every such pair is found, none is estimated);
  - mutants of one seed kernel (metadata.seed_kernel);
  - kernels from one source file (metadata.file of real code, a mutant's seed kernel's file).
Groups are shuffled by the seed and dealt out so the split sizes follow the fractions as closely
as the groups allow; every split gets at least one group when there are enough groups. The same
records and seed always give the same splits, in whatever order the records come. Chains of
near-duplicates can make a large group (on 12,000 generated kernels the largest held 12% of
them); a group too large for a small split goes whole to the largest one.

Records are neither dropped nor changed: each one ends up in exactly one split. Splitting costs
about 1.5 ms a record (mostly tokenizing) and holds a few KB a record, never the code.

examples:
  jit-synth split out/ds --splits train=0.9,validation=0.05,test=0.05
  jit-synth split out/ds --splits train=0.8,test=0.2 --seed 1
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Iterable

import numpy as np

from jit.code.engine.dedup import shingle_hashes

from jit.code.engine import writers

THRESHOLD = 0.8  # Jaccard similarity at which two kernels must share a split
EXAMPLE = "train=0.9,validation=0.05,test=0.05"


class SplitError(Exception):
    """A dataset folder that cannot be split, with the reason."""


def parse_splits(text: str) -> dict[str, float]:
    """``"train=0.9,test=0.1"`` -> ``{"train": 0.9, "test": 0.1}``; fractions > 0 that sum to 1."""
    fractions: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ValueError(f"bad split {item.strip()!r}: write NAME=FRACTION, e.g. {EXAMPLE}")
        if name in fractions:
            raise ValueError(f"split {name!r} is named twice in {text!r}")
        try:
            fraction = float(value)
        except ValueError:
            raise ValueError(f"split {name!r} has fraction {value.strip()!r}: use a number such as 0.05") from None
        if not 0 < fraction <= 1:
            raise ValueError(f"split {name!r} has fraction {fraction}: each fraction must be in (0, 1]")
        fractions[name] = fraction
    total = sum(fractions.values())
    if abs(total - 1) > 1e-6:
        raise ValueError(f"split fractions sum to {total:g}, not 1: e.g. {EXAMPLE}")
    return fractions


# ---------------------------------------------------------------------------------------------
# groups


class UnionFind:
    def __init__(self):
        self.parent: list[int] = []

    def add(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def provenance_keys(metadata: dict | None) -> list[tuple]:
    """Keys that tie a record to others: its seed kernel and the real source file it comes from."""
    meta = metadata or {}
    keys = []
    seed = meta.get("seed_kernel")
    if isinstance(seed, dict):
        where = seed.get("file") or seed.get("module")
        if where and seed.get("name"):
            keys.append(("seed kernel", seed.get("distribution") or "", where, seed["name"]))
        keys += _file_keys(seed)
    if meta.get("found_by") or meta.get("file"):  # real code (extract, trace)
        keys += _file_keys(meta)
    return keys


def _file_keys(meta: dict) -> list[tuple]:
    dist = meta.get("distribution") or ""
    if meta.get("file"):
        return [("file", dist, meta["file"])]
    return [("module", dist, meta["module"])] if meta.get("module") else []


def link_near_duplicates(sets: list[np.ndarray], threshold: float, groups: UnionFind) -> None:
    """Union every pair of sets whose exact Jaccard similarity is at least ``threshold``.

    An exact similarity join (prefix filtering, as in AllPairs and PPJoin): shingles are ranked
    rarest first and sets are visited from the smallest up. Two sets with Jaccard >= t must
    share a shingle among the first ``|x| - ceil(t|x|) + 1`` of the larger and the first
    ``|y| - ceil(2t/(1+t)|y|) + 1`` of the smaller, so only pairs that do are compared, and
    every pair they miss is below the threshold. Pairs already in one group are not compared.
    """
    if not sets:
        return
    sizes = [len(s) for s in sets]
    starts = np.concatenate(([0], np.cumsum(sizes))).tolist()
    _, inverse, counts = np.unique(np.concatenate(sets), return_inverse=True, return_counts=True)
    rank = np.empty(len(counts), dtype=np.uint32)
    rank[np.argsort(counts, kind="stable")] = np.arange(len(counts), dtype=np.uint32)
    ranks = rank[inverse.reshape(-1)]
    ranks = ranks[np.lexsort((ranks, np.repeat(np.arange(len(sets)), sizes)))]  # each set rarest first
    marked = np.zeros(len(counts), dtype=bool)
    index: dict[int, list[int]] = {}
    eps = 1e-9  # a prefix one shingle too long is safe; one too short could miss a pair
    for x in sorted(range(len(sets)), key=lambda i: (sizes[i], i)):
        n = sizes[x]
        if n == 0:
            continue
        tokens = ranks[starts[x]:starts[x + 1]]
        probe = tokens[:n - math.ceil(threshold * n - eps) + 1].tolist()
        candidates = set()
        for token in probe:
            candidates.update(index.get(token, ()))
        root = groups.find(x)
        smallest = threshold * n - eps
        todo = [y for y in candidates if sizes[y] >= smallest and groups.find(y) != root]
        if todo:
            marked[tokens] = True
            common = np.add.reduceat(marked[np.concatenate([ranks[starts[y]:starts[y + 1]] for y in todo])],
                                     np.cumsum([0] + [sizes[y] for y in todo[:-1]]))
            marked[tokens] = False
            for y, c in zip(todo, common.tolist()):
                if c / (n + sizes[y] - c) >= threshold:
                    groups.union(x, y)
        for token in tokens[:n - math.ceil(2 * threshold / (1 + threshold) * n - eps) + 1].tolist():
            index.setdefault(token, []).append(x)


def group_records(records: Iterable[dict], threshold: float = THRESHOLD) -> tuple[list[str], list[int]]:
    """(ids, group of each id): records linked by near-duplication or provenance share a group.

    Holds per record only its id and its shingle hashes, never its code. A repeated id is
    counted once.
    """
    groups = UnionFind()
    ids: list[str] = []
    sets: list[np.ndarray] = []
    seen: dict[str, int] = {}
    owner: dict[tuple, int] = {}  # provenance key -> first record with it
    for record in records:
        rid = str(record["id"])
        if rid in seen:
            continue
        i = seen[rid] = groups.add()
        ids.append(rid)
        sets.append(shingle_hashes(record.get("python_source") or ""))
        for key in provenance_keys(record.get("metadata")):
            groups.union(i, owner.setdefault(key, i))
    link_near_duplicates(sets, threshold, groups)
    return ids, [groups.find(i) for i in range(len(ids))]


# ---------------------------------------------------------------------------------------------
# assignment


def _order(seed: int, first_id: str) -> bytes:
    return hashlib.blake2b(f"{seed}:{first_id}".encode("utf-8"), digest_size=16).digest()


def deal(sizes: list[int], fractions: dict[str, float]) -> list[str]:
    """The split of each group, groups taken in the given order.

    Each group goes to the split that would be least full relative to its fraction after taking
    it (so one large group goes where it distorts the sizes least). When only as many groups are
    left as splits are still empty, each goes to an empty split (largest fraction first).
    """
    names = list(fractions)
    filled = dict.fromkeys(names, 0)
    empty = sum(1 for name in names if fractions[name] > 0)
    out = []
    for left, size in zip(range(len(sizes), 0, -1), sizes):
        choices = [n for n in names if filled[n] == 0] if left <= empty else names
        name = min(choices, key=lambda n: ((filled[n] + size) / fractions[n], -fractions[n], names.index(n)))
        empty -= filled[name] == 0
        filled[name] += size
        out.append(name)
    return out


def assign_splits(records: Iterable[dict], fractions: dict[str, float], seed: int = 0,
                  threshold: float = THRESHOLD) -> dict[str, str]:
    """Record id -> split name, by groups (``group_records``) so no group straddles two splits.

    Groups are ordered by a hash of the seed and their smallest record id, then dealt out
    (``deal``): the result depends on the records and the seed only, not on their order.
    """
    if not fractions or any(f <= 0 for f in fractions.values()):
        raise ValueError(f"split fractions must be positive: {fractions}")
    ids, roots = group_records(records, threshold)
    members: dict[int, list[str]] = {}
    for rid, root in zip(ids, roots):
        members.setdefault(root, []).append(rid)
    groups = sorted(members.values(), key=lambda m: _order(seed, min(m)))
    assigned = {}
    for group, name in zip(groups, deal([len(g) for g in groups], fractions)):
        assigned.update(dict.fromkeys(group, name))
    return assigned


# ---------------------------------------------------------------------------------------------
# an existing dataset


def split_dataset(folder: str, fractions: dict[str, float], seed: int = 0, command: str = "") -> dict[str, int]:
    """Rewrite ``folder``'s shards as one set per split; returns the records per split.

    The new shards are written to a scratch folder first, then swapped in for ``data/`` by two
    renames; ``stats.json`` and the card follow. The format and shard size are the ones
    ``stats.json`` records (default JSONL, 1000 records a shard).
    """
    files = writers.data_files(folder)
    if not files:
        raise SplitError(f"{folder} has no shards data/NAME-NNNNN-of-NNNNN.jsonl or .parquet; give a dataset folder")
    stats_path = os.path.join(folder, "stats.json")
    stats = _read_stats(stats_path)
    fmt = stats.get("format") or ("parquet" if files[0].endswith(".parquet") else "jsonl")
    shard_size = int(stats.get("shard_size") or 1000)
    assigned = assign_splits(_records(files), fractions, seed)
    sizes = {name: sum(1 for s in assigned.values() if s == name) for name in fractions}
    scratch = os.path.join(folder, writers.WORK, f"split-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        for name, n in sizes.items():
            if n:
                chosen = (r for r in _records(files) if assigned[str(r["id"])] == name)
                writers.write_shards(scratch, chosen, n, shard_size, fmt, split=name)
        _swap(os.path.join(scratch, "data"), os.path.join(folder, "data"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    present = [name for name, n in sizes.items() if n]
    stats.update(count=sum(sizes.values()), format=fmt, shard_size=shard_size)
    stats["splits"] = {name: sizes[name] for name in present}
    stats["split_seed"] = seed
    writers.write_json(stats_path, stats)
    made_by = [stats["command"]] if stats.get("command") else _card_commands(folder)
    made_by = "\n    ".join(filter(None, [*made_by, command]))
    writers.write_card(folder, stats, fmt, made_by or "(unknown)", splits=present)
    return stats["splits"]


def _records(files: list[str]):
    """Each record once (a repeated id is kept where it first appears, as ``group_records`` does)."""
    seen = set()
    for path in files:
        for number, record, error in writers.read_records(path):
            if error:
                raise SplitError(f"{path}:{number}: {error}")
            if "id" not in record:
                raise SplitError(f"{path}:{number}: a record without an id")
            if str(record["id"]) not in seen:
                seen.add(str(record["id"]))
                yield record


def _read_stats(path: str) -> dict:
    try:
        return writers.read_stats(os.path.dirname(path))
    except ValueError as exc:
        raise SplitError(f"{exc}; delete it or regenerate the dataset") from None


def _swap(new: str, old: str) -> None:
    """Put folder ``new`` in the place of folder ``old``; a crash between the renames leaves the
    old shards whole in ``old``'s sibling ``.jit-synth/data-old-PID``."""
    backup = os.path.join(os.path.dirname(old), writers.WORK, f"data-old-{os.getpid()}")
    os.rename(old, backup)
    os.rename(new, old)
    shutil.rmtree(backup)


# ---------------------------------------------------------------------------------------------
# command line


def _card_commands(folder: str) -> list[str]:
    """The commands the dataset card says made the dataset, but an earlier split's."""
    try:
        with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
            card = f.read()
    except OSError:
        return []
    found = re.search(r"Made by `jit-synth` with:\n\n((?:    \S.*\n)+)", card)
    lines = [line.strip() for line in found.group(1).splitlines()] if found else []
    return [line for line in lines if not line.startswith("jit-synth split ")]
