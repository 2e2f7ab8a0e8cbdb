"""Grouped splits: near-duplicates, mutants of one seed and kernels of one file never straddle two
splits; ``jit-synth split DIR`` rewrites a dataset as loadable shards per split."""

from __future__ import annotations

import glob
import itertools
import json
import os
import random
import re

import pytest

from jit.cli import main as cli_main
from jit.code.engine import splits
from jit.code.engine import writers
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles

FUNCS = ["sin", "cos", "exp", "sqrt", "abs", "log", "floor", "ceil", "tanh", "atan", "sign", "round"]
OPS = ["+", "-", "*", "/"]
SHAPES = [
    "    v{k} = wp.{f}(a[i]) {op} {c}",
    "    if a[i] > {c}:\n        b[i] = wp.{f}(b[i]) {op} v{k}",
    "    for j in range({n}):\n        b[i] += wp.{f}(a[j]) {op} {c}",
    "    wp.atomic_add(b, i, wp.{f}(a[i]) {op} {c})",
    "    v{k} = wp.vec3(wp.{f}(a[i]), {c}, a[i] {op} {c})",
]
FRACTIONS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def statement(rng: random.Random, k: int) -> str:
    return rng.choice(SHAPES).format(k=k, f=rng.choice(FUNCS), op=rng.choice(OPS), c=round(rng.uniform(0, 9), 2),
                                     n=rng.randint(2, 9))


def kernel(body: list[str], name: str) -> str:
    head = f"@wp.kernel\ndef {name}(a: wp.array(dtype=float), b: wp.array(dtype=float)):\n    i = wp.tid()\n"
    return head + "\n".join(body) + "\n"


def record(rid: str, body: list[str], metadata: dict | None = None) -> dict:
    return {"id": rid, "kernel_name": f"k_{rid}", "category": "test", "python_source": kernel(body, f"k_{rid}"),
            "metadata": metadata or {"source": "random"}}


def planted_records() -> list[dict]:
    """Random kernels, near-copies of some (renamed, or one or two statements changed, in chains),
    mutant families sharing a seed kernel, and real-code kernels sharing a file."""
    rng = random.Random(5)
    records = []
    for b in range(40):
        body = [statement(rng, k) for k in range(rng.randint(6, 12))]
        records.append(record(f"base{b:02d}", body))
        if b % 8 == 0:  # renamed (the kernel takes the record's name), other constants
            records.append(record(f"base{b:02d}c", [re.sub(r"\d+\.\d+", "7.5", line) for line in body]))
        for v in range(rng.choice([0, 0, 1, 2, 3])):  # a chain: each copy edits the one before
            body = list(body)
            for _ in range(rng.choice([1, 1, 2])):
                body[rng.randrange(len(body))] = statement(rng, rng.randrange(20))
            records.append(record(f"base{b:02d}v{v}", body))
    for s in range(3):
        seed_kernel = {"distribution": "warp-lang", "module": f"warp.tests.t{s}", "file": f"warp/tests/t{s}.py",
                       "name": f"seed{s}", "line": 10}
        for m in range(5):
            body = [statement(rng, k) for k in range(8)]
            records.append(record(f"mut{s}_{m}", body, {"source": "mutants", "seed_kernel": seed_kernel}))
    for m in range(4):
        meta = {"found_by": "module", "distribution": "sim", "module": f"sim.kernels{m}", "file": "sim/kernels.py"}
        records.append(record(f"real{m}", [statement(rng, k) for k in range(8)], meta))
    seed_kernel = {"distribution": "sim", "module": "sim.kernels", "file": "sim/kernels.py", "name": "step"}
    records.append(record("mut_of_real", [statement(rng, k) for k in range(8)], {"seed_kernel": seed_kernel}))
    return records


def brute_force_groups(records: list[dict]) -> set[frozenset[str]]:
    """The groups by definition: every pair compared exactly, plus shared seed kernels and files."""
    sets = [shingles(norm_tokens(r["python_source"])) for r in records]
    parent = list(range(len(records)))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    def link(i, j):
        parent[find(i)] = find(j)

    for i, j in itertools.combinations(range(len(records)), 2):
        if jaccard(sets[i], sets[j]) >= 0.8:
            link(i, j)
    owners: dict = {}
    for i, r in enumerate(records):
        meta = r["metadata"]
        seed = meta.get("seed_kernel") or {}
        keys = [("seed", seed.get("file"), seed.get("name")), ("file", seed.get("distribution"), seed.get("file"))] \
            if seed else []
        if meta.get("file"):
            keys.append(("file", meta.get("distribution"), meta["file"]))
        for key in keys:
            link(i, owners.setdefault(key, i))
    groups: dict[int, set] = {}
    for i, r in enumerate(records):
        groups.setdefault(find(i), set()).add(r["id"])
    return {frozenset(g) for g in groups.values()}


@pytest.fixture(scope="module")
def records():
    return planted_records()


def test_planted_data_has_pairs_on_both_sides_of_the_threshold(records):
    sets = {r["id"]: shingles(norm_tokens(r["python_source"])) for r in records}
    scores = [jaccard(sets[a], sets[b]) for a, b in itertools.combinations(sets, 2)]
    assert sum(0.8 <= s < 0.95 for s in scores) >= 5  # near-duplicates that are not copies
    assert sum(0.6 <= s < 0.8 for s in scores) >= 5  # close, but not near-duplicates
    assert sum(s == 1.0 for s in scores) >= 1  # a renamed copy normalises to the same tokens


def test_groups_are_exactly_the_near_duplicate_and_provenance_closure(records):
    ids, roots = splits.group_records(records)
    found: dict[int, set] = {}
    for rid, root in zip(ids, roots):
        found.setdefault(root, set()).add(rid)
    assert {frozenset(g) for g in found.values()} == brute_force_groups(records)


def test_no_near_duplicate_pair_straddles_two_splits(records):
    assigned = splits.assign_splits(records, FRACTIONS, seed=0)
    assert set(assigned) == {r["id"] for r in records}
    sets = {r["id"]: shingles(norm_tokens(r["python_source"])) for r in records}
    leaks = [(a, b) for a, b in itertools.combinations(sets, 2)
             if assigned[a] != assigned[b] and jaccard(sets[a], sets[b]) >= 0.8]
    assert leaks == []
    assert set(assigned.values()) == set(FRACTIONS)


def test_mutants_of_one_seed_and_kernels_of_one_file_stay_together(records):
    for seed in range(4):
        assigned = splits.assign_splits(records, FRACTIONS, seed=seed)
        for s in range(3):
            assert len({assigned[f"mut{s}_{m}"] for m in range(5)}) == 1
        assert len({assigned[f"real{m}"] for m in range(4)} | {assigned["mut_of_real"]}) == 1


def test_assignment_is_deterministic_and_independent_of_record_order(records):
    first = splits.assign_splits(records, FRACTIONS, seed=7)
    shuffled = list(records)
    random.Random(1).shuffle(shuffled)
    assert splits.assign_splits(shuffled, FRACTIONS, seed=7) == first
    assert splits.assign_splits(iter(records), FRACTIONS, seed=7) == first
    assert splits.assign_splits(records, FRACTIONS, seed=8) != first  # the seed reshuffles the groups


def test_sizes_follow_the_fractions():
    rng = random.Random(2)
    singles = [record(f"r{i}", [statement(rng, k) for k in range(10)]) for i in range(200)]
    sizes = _sizes(splits.assign_splits(singles, {"train": 0.9, "validation": 0.05, "test": 0.05}))
    assert sizes == {"train": 180, "validation": 10, "test": 10}


def test_every_split_gets_a_group_when_there_are_enough():
    rng = random.Random(3)
    few = [record(f"r{i}", [statement(rng, k) for k in range(10)]) for i in range(3)]
    assert _sizes(splits.assign_splits(few, {"train": 0.9, "validation": 0.05, "test": 0.05})) == \
        {"train": 1, "validation": 1, "test": 1}


def test_a_large_group_goes_where_it_distorts_sizes_least():
    rng = random.Random(4)
    family = {"seed_kernel": {"file": "f.py", "name": "k"}}
    big = [record(f"m{i}", [statement(rng, k) for k in range(10)], family) for i in range(50)]
    small = [record(f"s{i}", [statement(rng, k) for k in range(10)]) for i in range(10)]
    for seed in range(5):
        assigned = splits.assign_splits(big + small, {"train": 0.9, "test": 0.1}, seed=seed)
        assert {assigned[r["id"]] for r in big} == {"train"}
        assert "test" in assigned.values()


def _sizes(assigned: dict[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in assigned.values():
        out[name] = out.get(name, 0) + 1
    return out


@pytest.mark.parametrize("text, fragment", [
    ("train=0.9,test=0.2", "sum to 1.1"),
    ("train=0.9,validation=0.05", "sum to 0.95"),
    ("train=1,test=0", "fraction 0.0"),
    ("train=1.5,test=-0.5", "fraction 1.5"),
    ("train=0.5,train=0.5", "named twice"),
    ("train:0.9,test=0.1", "NAME=FRACTION"),
    ("my split=1", "NAME=FRACTION"),
    ("train=most", "use a number"),
    ("", "NAME=FRACTION"),
])
def test_bad_fractions_are_one_line_errors(text, fragment):
    with pytest.raises(ValueError) as err:
        splits.parse_splits(text)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_fractions_parse():
    assert splits.parse_splits("train=0.9,validation=0.05,test=0.05") == {"train": 0.9, "validation": 0.05, "test": 0.05}
    assert splits.parse_splits(" train = 1 ") == {"train": 1.0}


# ---------------------------------------------------------------------------------------------
# an existing dataset folder


def write_dataset(out: str, records: list[dict], fmt: str, shard_size: int = 20) -> None:
    writers.write_shards(out, records, len(records), shard_size, fmt)
    stats = {"count": len(records), "format": fmt, "shard_size": shard_size, "per_category": {"test": len(records)}}
    writers.write_json(os.path.join(out, "stats.json"), stats)
    writers.write_card(out, stats, fmt, "jit-synth generate --count 103 --output ds")


def card_configs(out: str) -> list[dict]:
    yaml = pytest.importorskip("yaml")
    text = open(os.path.join(out, "README.md"), encoding="utf-8").read()
    front = text.split("---\n")[1]
    return yaml.safe_load(front)["configs"][0]["data_files"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_split_command_writes_loadable_shards_per_split(tmp_path, records, capsys, fmt):
    out = str(tmp_path / "ds")
    write_dataset(out, records, fmt)
    assert cli_main(["split", out, "--splits", "train=0.8,validation=0.1,test=0.1", "--seed", "2"]) == 0
    printed = capsys.readouterr().out
    by_split = {name: list(itertools.chain.from_iterable(
        (r for _, r, _ in writers.read_records(p)) for p in writers.data_files(out, name))) for name in FRACTIONS}
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert stats["splits"] == {name: len(rs) for name, rs in by_split.items()}
    assert all(f"{name} {len(rs)}" in printed for name, rs in by_split.items())
    expected = splits.assign_splits(records, FRACTIONS, seed=2)
    originals = {r["id"]: r for r in records}
    assert sorted(r["id"] for r in writers.read_dataset(out)) == sorted(originals)
    for name, rows in by_split.items():
        assert rows and all(expected[r["id"]] == name for r in rows)
        assert all({k: r[k] for k in originals[r["id"]]} == originals[r["id"]] for r in rows)
        assert len(writers.data_files(out, name)) == -(-len(rows) // 20)
    configs = card_configs(out)
    assert [c["split"] for c in configs] == list(FRACTIONS)
    for c in configs:
        assert sorted(glob.glob(os.path.join(out, c["path"]))) == writers.data_files(out, c["split"])
    card = open(os.path.join(out, "README.md"), encoding="utf-8").read()
    assert "jit-synth generate --count 103 --output ds" in card and "jit-synth split" in card
    assert os.listdir(os.path.join(out, writers.WORK)) == []  # no scratch left behind


def test_split_output_loads_with_datasets(tmp_path, records):
    datasets = pytest.importorskip("datasets")
    out = str(tmp_path / "ds")
    write_dataset(out, records, "parquet")
    sizes = splits.split_dataset(out, FRACTIONS)
    loaded = datasets.load_dataset(out)
    assert {name: loaded[name].num_rows for name in loaded} == sizes


def test_splitting_again_replaces_the_old_splits(tmp_path, records, capsys):
    out = str(tmp_path / "ds")
    write_dataset(out, records, "jsonl")
    assert cli_main(["split", out, "--splits", "train=0.8,validation=0.1,test=0.1"]) == 0
    assert cli_main(["split", out, "--splits", "train=0.5,test=0.5", "--seed", "1"]) == 0
    stats = json.load(open(os.path.join(out, "stats.json")))
    assert set(stats["splits"]) == {"train", "test"} and not writers.data_files(out, "validation")
    assert sum(1 for _ in writers.read_dataset(out)) == len(records) == stats["count"]
    assert [c["split"] for c in card_configs(out)] == ["train", "test"]
    card = open(os.path.join(out, "README.md"), encoding="utf-8").read()
    assert card.count("jit-synth split") == 1 and "train=0.5,test=0.5" in card  # the last split's command


def test_a_failed_split_leaves_the_dataset_as_it_was(tmp_path, records, monkeypatch):
    out = str(tmp_path / "ds")
    write_dataset(out, records, "jsonl")
    before = {p: open(p, "rb").read() for p in writers.data_files(out) + [os.path.join(out, "stats.json")]}
    real, calls = writers.write_shards, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(writers, "write_shards", failing)
    with pytest.raises(OSError):
        splits.split_dataset(out, FRACTIONS)
    after = {p: open(p, "rb").read() for p in writers.data_files(out) + [os.path.join(out, "stats.json")]}
    assert after == before
    assert os.listdir(os.path.join(out, writers.WORK)) == []


@pytest.mark.parametrize("argv, fragment", [
    (["--splits", "train=0.9,test=0.2"], "sum to 1.1"),
    (["--splits", "train=1"], "no shards"),
])
def test_split_command_errors_exit_2_in_one_line(tmp_path, capsys, argv, fragment):
    out = tmp_path / "empty"
    out.mkdir()
    assert cli_main(["split", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jit-synth split: error:") and fragment in err and "\n" not in err
    assert cli_main(["split", str(tmp_path / "missing"), "--splits", "train=1"]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_write_shards_replaces_only_the_split_it_writes(tmp_path):
    out = str(tmp_path)
    rows = [{"id": str(i)} for i in range(5)]
    writers.write_shards(out, rows, 5, 2, "jsonl", split="train")
    writers.write_shards(out, rows[:1], 1, 2, "jsonl", split="test")
    writers.write_shards(out, rows, 5, 5, "jsonl", split="train")
    names = [os.path.basename(p) for p in writers.data_files(out)]
    assert names == ["test-00000-of-00001.jsonl", "train-00000-of-00001.jsonl"]
    assert [os.path.basename(p) for p in writers.data_files(out, "test")] == ["test-00000-of-00001.jsonl"]
