"""The merge as stages: the cluster rule on planted near-duplicate chains, the same shards for 1 and
2 workers and on Ray, and a merge interrupted in its last stage that resumes where it stopped.

The source makes records without Warp from a list of texts; near-duplicates are planted by editing
statements of a long kernel, and the exact similarities the rule decides on are checked first.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from jit.code.analysis.tokens import jaccard
from jit.code.engine import dedup, merge, writers
from jit.code.engine import run as engine
from jit.code.engine.source import Source
from jit.code.records import Pair, content_id

FUNCS = ["sin", "cos", "tan", "sqrt", "exp", "log", "floor", "ceil", "tanh", "atan", "sign", "round", "erf", "cbrt"]
OPS = ["+", "-", "*", "/"]


def statement(rng: random.Random, k: int) -> str:
    return (f"    v{k} = wp.{rng.choice(FUNCS)}(a[i] {rng.choice(OPS)} v{rng.randrange(k) if k else 0}) "
            f"{rng.choice(OPS)} wp.{rng.choice(FUNCS)}(b[i])\n")


def kernel(body: list[str], name: str = "k") -> str:
    return (f"import warp as wp\n\n\n@wp.kernel\ndef {name}(a: wp.array(dtype=float), b: wp.array(dtype=float)):\n"
            "    i = wp.tid()\n" + "".join(body))


def estimate(a: str, b: str) -> float:
    return dedup.signature(a).jaccard(dedup.signature(b))


def exact(a: str, b: str) -> float:
    return jaccard(dedup.shingle_set(a), dedup.shingle_set(b))


def chain(seed: int) -> tuple[str, str, str]:
    """A~B and B~C are near at the 0.9 threshold, A and C are not (by their exact Jaccard
    similarity; the near pairs' MinHash estimates are high enough to be checked)."""
    checked = dedup.checked_from(0.9)
    rng = random.Random(seed)
    for _ in range(200):
        a = [statement(rng, k) for k in range(16)]
        b = list(a)
        for k in rng.sample(range(16), 3):
            b[k] = statement(rng, k)
        c = list(b)
        for k in rng.sample(range(16), 3):
            c[k] = statement(rng, k)
        texts = kernel(a), kernel(b), kernel(c)
        if exact(texts[0], texts[1]) >= 0.9 and exact(texts[1], texts[2]) >= 0.9 and exact(texts[0], texts[2]) < 0.9 \
                and min(estimate(texts[0], texts[1]), estimate(texts[1], texts[2])) >= checked:
            return texts
    raise AssertionError("no chain found")


def unrelated(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [kernel([statement(rng, k) for k in range(rng.randint(6, 14))]) for _ in range(n)]


@dataclass(frozen=True)
class TextSource(Source):
    """Item i is ``texts[i]``; items of one ``family`` share a seed kernel (so a split)."""

    texts: tuple[str, ...]
    part: int = 8
    families: int = 0
    name = "texts"

    def identity(self) -> dict:
        return {"texts": len(self.texts)}

    def size(self, run) -> int:
        return len(self.texts)

    def part_size(self, run) -> int:
        return self.part

    def run_part(self, run, part, progress=None):
        stats = engine.PartStats(part.number, part.start, part.stop)
        out = writers.PartWriter(run.out, part.number)
        for i in range(part.start, part.stop):
            source = self.texts[i]
            meta = {"source": "texts", "index": i}
            if self.families and i % 3 == 0:
                meta["seed_kernel"] = {"file": f"f{i % self.families}.py", "name": f"s{i % self.families}"}
            pair = Pair(id=content_id(source), kernel_name=f"k{i}", category="test", python_source=source,
                        cpu_forward=f"// item {i}\n", validation={"cpu": "generated"}, metadata=meta)
            # parts 1, 4, ... come with signature and shingle files, as the generator's do; parts 2, 5, ...
            # with signatures only (the merge reads their records for exact decisions); the merge
            # computes both for the others
            signature, shingles = dedup.fingerprint(source)
            kind = part.number % 3
            out.add(i, pair.to_dict(), signature.hashvalues if kind else None, shingles if kind == 1 else None)
        stats.records = len(out)
        out.finish(stats.to_dict())
        return stats


def build(path, texts, workers=1, executor="local", **options):
    spec = engine.RunSpec(out=str(path), source=TextSource(tuple(texts), **options.pop("source", {})), devices=("cpu",),
                          validate="none", checks=(), shard_size=16, **options)
    assert engine.prepare_output(spec, resume=False, overwrite=False) is False
    return engine.build_dataset(spec, workers, executor=executor)


def kept(path) -> list[int]:
    return [r["metadata"]["index"] for r in writers.read_dataset(str(path))]


def shard_bytes(path) -> dict[str, bytes]:
    return {p.rsplit("/", 1)[1]: open(p, "rb").read() for p in writers.data_files(str(path))}


# ---------------------------------------------------------------------------------------------
# the cluster rule


@pytest.mark.parametrize("order", ["ABC", "ACB", "CBA"])
def test_a_near_duplicate_chain_is_one_cluster_and_keeps_its_first_record(tmp_path, order):
    a, b, c = chain(3)
    named = {"A": a, "B": b, "C": c}
    others = unrelated(21, 4)
    # the chain's members in parts 0, 1 and 2 (parts of 8), in the order given
    texts = others[:3] + [named[order[0]]] + others[3:10] + [named[order[1]]] + others[10:17] + [named[order[2]]] + others[17:]
    stats = build(tmp_path / "ds", texts, near_dup_threshold=0.9)
    where = {name: texts.index(named[name]) for name in "ABC"}
    kept_items = set(kept(tmp_path / "ds"))
    assert {name for name in "ABC" if where[name] in kept_items} == {order[0]}  # the first in part order
    assert kept_items >= {i for i in range(len(texts)) if i not in where.values()}
    assert stats["near_duplicates"]["across_parts"] == 2 and stats["count"] == len(texts) - 2


def test_copies_are_duplicates_and_an_excluded_record_links_nothing(tmp_path):
    a, b, c = chain(39)  # a chain whose middle, alone of the three, is near others[3] at 0.7
    others = unrelated(14, 5)
    held_out = tmp_path / "held_out.py"
    held_out.write_text(others[3])
    texts = [a] + others[:7] + [b] + others[7:] + [c, a.replace("def k(", "def k_copy(")]  # the copy: A's id
    stats = build(tmp_path / "ds", texts, near_dup_threshold=0.9, exclude=str(held_out))
    # the truth: exact Jaccard with the held-out kernel at the exclusion threshold, record by record
    near_held_out = {i for i, t in enumerate(texts)
                     if jaccard(dedup.shingle_set(t), dedup.shingle_set(others[3])) >= stats["excluded"]["threshold"]}
    # as planted: B (item 8) is near the held-out kernel, A and C are not; B, excluded, links nothing
    assert {4, 8} <= near_held_out and not near_held_out & {0, len(texts) - 2, len(texts) - 1}
    expected = set(range(len(texts))) - near_held_out - {len(texts) - 1}  # A's copy is a duplicate
    assert set(kept(tmp_path / "ds")) == expected  # A and C both kept: not near each other
    assert stats["excluded"]["records"] == len(near_held_out) and stats["rejects"]["duplicate across parts"] == 1
    assert stats["near_duplicates"]["across_parts"] == 0


def test_first_of_components_is_the_smallest_node_of_each_component():
    rng = np.random.default_rng(0)
    n = 500
    pairs = rng.integers(0, n, size=(300, 2))
    root = merge.first_of_components(n, pairs)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in pairs.tolist():
        rx, ry = find(x), find(y)
        parent[max(rx, ry)] = min(rx, ry)
    assert root.tolist() == [find(x) for x in range(n)]
    batched = np.arange(n)  # edges in batches, as the clusters stage reads them shard by shard
    for batch in np.array_split(pairs, 3):
        batched = merge.first_of_components(n, batched[batch])[batched]
    assert batched.tolist() == root.tolist()


# ---------------------------------------------------------------------------------------------
# the same shards whatever runs the stages


def planted(n: int = 120) -> list[str]:
    """Unrelated kernels, some repeated (same id), some renamed (near), a few chains."""
    texts = unrelated(n, 9)
    rng = random.Random(10)
    for i in range(5, n, 7):
        j = rng.randrange(i)
        texts[i] = texts[j].replace("v1", "w1") if i % 2 else texts[j].replace("def k(", f"def k{i}(")
    for seed in (3, 6):
        a, b, c = chain(seed)
        texts[rng.randrange(n)], texts[rng.randrange(n)], texts[rng.randrange(n)] = a, b, c
    return texts


OPTIONS = dict(near_dup_threshold=0.9, splits=(("train", 0.8), ("validation", 0.1), ("test", 0.1)),
               source={"families": 5})


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    out = tmp_path_factory.mktemp("w1") / "ds"
    stats = build(out, planted(), workers=1, **OPTIONS)
    return out, stats


def test_one_and_two_workers_write_the_same_shards(one_worker, tmp_path):
    out, stats = one_worker
    two = build(tmp_path / "ds", planted(), workers=2, **OPTIONS)
    assert shard_bytes(tmp_path / "ds") == shard_bytes(out)
    assert {name.split("-")[0] for name in shard_bytes(out)} == {"train", "validation", "test"}
    assert two["splits"] == stats["splits"] and two["rejects"] == stats["rejects"]
    assert stats["rejects"]["near-duplicate across parts"] > 0 and stats["rejects"]["duplicate across parts"] > 0


def test_ray_writes_the_same_shards(one_worker, tmp_path):
    ray = pytest.importorskip("ray", reason="ray is not installed")
    out, _ = one_worker
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers cannot import a test module
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        build(tmp_path / "ds", planted(), executor="ray", **OPTIONS)
    finally:
        ray.shutdown()
    assert shard_bytes(tmp_path / "ds") == shard_bytes(out)


def test_an_interrupted_merge_resumes_its_stages(one_worker, tmp_path, monkeypatch):
    from jit.code.engine import buckets, part_index

    out, _ = one_worker
    spec = engine.RunSpec(out=str(tmp_path / "ds"), source=TextSource(tuple(planted()), **OPTIONS["source"]),
                          devices=("cpu",), validate="none", checks=(), shard_size=16,
                          **{k: v for k, v in OPTIONS.items() if k != "source"})
    assert engine.prepare_output(spec, resume=False, overwrite=False) is False
    assemble, assembled = writers.assemble_shard, []

    def interrupted(*args):  # the run is stopped after two shards of the last stage
        if len(assembled) == 2:
            raise KeyboardInterrupt
        assembled.append(assemble(*args))
        return assembled[-1]

    with monkeypatch.context() as patch:
        patch.setattr(writers, "assemble_shard", interrupted)
        with pytest.raises(KeyboardInterrupt):
            engine.build_dataset(spec, 1)
    assert engine.prepare_output(spec, resume=True, overwrite=False) is False

    def redone(*args, **kwargs):
        raise AssertionError("a finished stage task ran again")

    pieces = writers.pieces_dir(spec.out)
    assert any(name.endswith(".done") for name in os.listdir(pieces))  # parts written as pieces: kept
    with monkeypatch.context() as patch:  # the index and bucket stages' outputs are reused
        patch.setattr(part_index, "band_hashes", redone)
        patch.setattr(buckets, "_compare_pairs", redone)
        engine.build_dataset(spec, 1)
    assert shard_bytes(tmp_path / "ds") == shard_bytes(out)


def test_equal_signatures_are_linked_in_buckets_left_out_for_their_size(tmp_path, monkeypatch):
    from jit.code.engine import buckets

    monkeypatch.setattr(buckets, "LARGE_BUCKET", 2)  # every bucket of three or more is left out
    base = unrelated(1, 8)[0]
    renamed = [base.replace("v1", f"w{i}_") for i in range(4)]  # other names: other ids, equal signatures
    texts = renamed[:2] + unrelated(10, 12) + renamed[2:]
    stats = build(tmp_path / "ds", texts, near_dup_threshold=0.9)
    assert stats["merge"]["large_buckets_left_out"] > 0
    assert 0 in kept(tmp_path / "ds") and not {1, 12, 13} & set(kept(tmp_path / "ds"))


def test_a_pair_sharing_only_large_buckets_meets_in_a_piece(monkeypatch):
    from jit.code.engine import buckets

    monkeypatch.setattr(buckets, "LARGE_BUCKET", 4)
    rng = np.random.default_rng(0)
    rows = rng.integers(1, 2**62, size=(20, 6), dtype=np.uint64)
    rows[:10, 0] = 7  # band 0: one bucket of ten (positions 0-9), too large to compare
    rows[10:, 1] = 9  # band 1: another of ten (positions 10-19)
    rows[3, 2:5] = rows[8, 2:5]  # 3 and 8 share bands 2-4 as well, 12 and 15 band 4
    rows[12, 4] = rows[15, 4]
    rows[[16, 17], 5] = 5  # band 5 is more than REFINE_SPAN bands after band 1: it cuts nothing
    rows[[0, 1, 2, 4, 5], 3] = 11  # a piece of five members of the first bucket: still too large
    large = [np.arange(10, dtype=np.int64), np.arange(10, 20, dtype=np.int64)]
    sizes = np.full(buckets.SKETCH, 1000)  # every band value's bucket may be large...
    pairs, groups, left_out = buckets._refine(large, np.arange(20), rows, sizes)
    assert pairs.tolist() == [[3, 8], [12, 15]]
    assert groups == [] and left_out == 1
    sizes[int(rows[12, 4] & np.uint64(buckets.SKETCH - 1))] = 2  # ...but 12 and 15 share a small one: they meet there
    pairs, _, _ = buckets._refine(large, np.arange(20), rows, sizes)
    assert pairs.tolist() == [[3, 8]]


def test_a_pair_sharing_only_large_pieces_meets_in_a_piece_of_a_piece(monkeypatch):
    from jit.code.engine import buckets

    monkeypatch.setattr(buckets, "LARGE_BUCKET", 4)
    rng = np.random.default_rng(1)
    rows = rng.integers(1, 2**62, size=(10, 6), dtype=np.uint64)
    rows[:, 0] = 7  # band 0: a bucket of ten, too large
    rows[[0, 1, 2, 4, 5], 2] = 11  # its piece by band 2: five, too large
    rows[[1, 4, 6, 7, 8], 3] = 13  # its piece by band 3: five, too large
    sizes = np.full(buckets.SKETCH, 1000)
    pairs, groups, left_out = buckets._refine([np.arange(10, dtype=np.int64)], np.arange(10), rows, sizes)
    assert pairs.tolist() == [[1, 4]]  # 1 and 4 share bands 0, 2 and 3: the piece by 2 cut by 3
    assert groups == [] and left_out == 2
    monkeypatch.setattr(buckets, "REFINE_LEVELS", 1)  # cut once only: both pieces left out
    pairs, _, left_out = buckets._refine([np.arange(10, dtype=np.int64)], np.arange(10), rows, sizes)
    assert pairs.tolist() == [] and left_out == 2


def test_shingle_hashes_written_beside_a_part_are_the_records_own(tmp_path):
    from jit.code.engine import buckets, part_index

    texts = unrelated(24, 5)
    spec = engine.RunSpec(out=str(tmp_path / "ds"), source=TextSource(tuple(texts)), devices=("cpu",),
                          validate="none", checks=(), shard_size=8)
    keys = part_index.Keys(21, 6)
    for number in range(3):  # a worker's shingles, signatures only, neither (see ``TextSource``)
        part = engine.Part(number, 8 * number, 8 * number + 8)
        spec.source.run_part(spec, part)
        part_index.index_part(spec.out, number, keys)
    assert os.path.exists(writers.shingles_path(spec.out, 1)) and not os.path.exists(writers.shingles_path(spec.out, 2))
    assert part_index.shingles_path(spec.out, 2) is None  # read from the records
    records = buckets._Records(spec.out, [(0, 0), (1, 8), (2, 16)], np.arange(24))
    for position, text in enumerate(texts):
        assert np.array_equal(records.shingle_set(position), dedup.shingle_hashes(text))
    assert records.reads == 8  # only part 2's records were read and tokenised
    assert np.array_equal(part_index.shingle_row(part_index.shingles_path(spec.out, 0), 7),
                          dedup.shingle_hashes(texts[7]))


def test_write_shingles_keeps_empty_rows(tmp_path):
    rows = [np.array([3, 5], dtype=np.uint64), np.zeros(0, dtype=np.uint64), np.array([1], dtype=np.uint64)]
    from jit.code.engine import part_index

    writers.write_shingles(str(tmp_path / "s.npy"), rows)
    assert [part_index.shingle_row(str(tmp_path / "s.npy"), i).tolist() for i in range(3)] == [[3, 5], [], [1]]
    writers.write_shingles(str(tmp_path / "e.npy"), [])
    assert np.load(tmp_path / "e.npy").tolist() == [1]


def test_mapped_files_and_the_rows_a_task_reads_are_the_stored_arrays(tmp_path):
    """``part_index.mapped`` gives ``np.load``'s array (C and Fortran order, one or two dimensions,
    empty), and the signatures and kin an edges task reads (``buckets._Records``, part by part into
    one array) are the stored rows at their positions, by numpy indexing of the loaded files."""
    from jit.code.engine import buckets, part_index

    rng = np.random.default_rng(3)
    arrays = {"c": rng.integers(0, 2**32, size=(7, 5), dtype=np.uint32),
              "fortran": np.asfortranarray(rng.integers(0, 9, size=(4, 3))),
              "flat": rng.integers(0, 2**63, size=11, dtype=np.uint64), "empty": np.zeros((0, 128), dtype=np.uint32)}
    for name, array in arrays.items():
        path = str(tmp_path / f"{name}.npy")
        writers.write_array(path, array)
        got = part_index.mapped(path)
        assert got.dtype == array.dtype and got.shape == array.shape and np.array_equal(got, np.load(path))
    out, sizes = str(tmp_path / "ds"), [5, 7, 4]
    os.makedirs(writers.parts_dir(out))
    os.makedirs(part_index.merge_dir(out))
    signatures, kin = [], []
    for number, size in enumerate(sizes):
        signatures.append(rng.integers(0, 2**32, size=(size, dedup.NUM_PERM), dtype=np.uint32))
        kin.append(np.where(rng.random(size) < 0.5, np.iinfo(np.int64).max, rng.integers(0, 2**40, size=size)))
        writers.write_array(writers.signatures_path(out, number), signatures[-1])
        writers.write_array(part_index._path(out, "kin", number), kin[-1])
    positions = np.array([15, 0, 3, 3, 12, 4, 14], dtype=np.int64)  # none of part 1 (positions 5 to 11)
    records = buckets._Records(out, [(0, 0), (1, 5), (2, 12)], positions)
    every_kin = np.concatenate(kin)
    expected_kin = np.where(every_kin == np.iinfo(np.int64).max, -1 - np.arange(len(every_kin)), every_kin)
    where = records.index(positions)
    assert np.array_equal(records.signatures[where], np.concatenate(signatures)[positions])
    assert np.array_equal(records.kin[where], expected_kin[positions])
