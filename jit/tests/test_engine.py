"""The engine with a source of its own: any object with the source protocol makes a dataset.

The toy source below makes records without Warp (its "code" is a made-up string), so these
tests check the engine alone: parts, merge, duplicates across parts, exclusions, splits,
resume and what stays on disk.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from jit.code.engine import run as engine

from jit.code.engine import writers
from jit.code.engine.source import Source
from jit.code.records import Pair, content_id
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles


FUNCS = ["wp.sin", "wp.cos", "wp.sqrt", "wp.abs", "wp.exp", "wp.log", "wp.floor", "wp.ceil", "wp.tanh",
         "wp.atan", "wp.sign", "wp.round"]


def kernel_text(i: int) -> str:
    """Item i's kernel: its own mix of builtins and forms; every 7th repeats item i-1 (same content id)."""
    import random

    j = i - 1 if i % 7 == 0 and i else i
    rng = random.Random(j)
    forms = ["{f}(a[i]) * {g}(b[i])", "{f}(a[i] + {g}(b[i]))", "{f}({g}(a[i]) - b[i])", "({f}(b[i]) if a[i] > b[i] else {g}(a[i]))",
             "{f}(a[i]) / (1.0 + wp.abs({g}(b[i])))", "wp.max({f}(a[i]), {g}(b[i]))"]
    lines = [f"    v{k} = " + rng.choice(forms).format(f=rng.choice(FUNCS), g=rng.choice(FUNCS)) for k in range(6)]
    total = " + ".join(f"v{k}" for k in range(len(lines)))
    return (f"import warp as wp\n\n@wp.kernel\ndef k{i}(a: wp.array(dtype=float), b: wp.array(dtype=float), "
            f"out: wp.array(dtype=float)):\n    i = wp.tid()\n" + "\n".join(lines) + f"\n    out[i] = {total}\n")


@dataclass(frozen=True)
class ToySource(Source):
    """The example source: one file, no Warp (see jit/code/engine/source.py)."""

    items: int
    name = "toy"

    def identity(self) -> dict:
        return {"toy_items": self.items}

    def size(self, run) -> int:
        return self.items

    def part_size(self, run) -> int:
        return 8

    def describe(self) -> dict:
        return {"toy_items": self.items}

    def run_part(self, run, part, progress=None):
        stats = engine.PartStats(part.number, part.start, part.stop)
        out = writers.PartWriter(run.out, part.number)
        for i in range(part.start, part.stop):
            source = kernel_text(i)
            pair = Pair(id=content_id(source), kernel_name=f"k{i}", category=("toy", "toy_odd")[i % 2],
                        python_source=source,
                        cpu_forward=f"// code of item {i}\n", validation={"cpu": "generated"},
                        metadata={"source": ("toy", "toy_b")[i % 3 == 0], "file": f"file{i // 5}.py"})
            out.add(i, pair.to_dict())
        stats.records = len(out)
        out.finish(stats.to_dict())
        if progress is not None:
            progress.put((stats.records, 0))
        return stats


def build(tmp_path, name, workers=1, **options):
    run = engine.RunSpec(out=str(tmp_path / name), source=ToySource(40), devices=("cpu",), validate="none",
                         shard_size=16, near_dup_threshold=0.0, **options)
    assert engine.prepare_output(run, resume=False, overwrite=False) is False
    stats = engine.build_dataset(run, workers)
    return run, stats


def test_any_source_makes_the_same_dataset_for_any_worker_count(tmp_path):
    _, one = build(tmp_path, "one", workers=1)
    run, two = build(tmp_path, "two", workers=2)
    records = list(writers.read_dataset(run.out))
    assert records == list(writers.read_dataset(str(tmp_path / "one")))
    # items 7, 14, ... repeat their predecessor: dropped once seen, whichever part they are in
    assert [r["kernel_name"] for r in records] == [f"k{i}" for i in range(40) if i % 7 or not i]
    assert two["count"] == len(records) == 35 and two["source"] == "toy" and two["toy_items"] == 40
    assert two["rejects"] == {"duplicate across parts": 5}
    assert len(writers.data_files(run.out)) == 3  # 35 records, 16 a shard
    card = open(os.path.join(run.out, "README.md"), encoding="utf-8").read()
    assert "data/train-*.jsonl" in card


def test_a_finished_run_keeps_its_records_once_and_resume_does_nothing(tmp_path):
    run, stats = build(tmp_path, "ds")
    parts = os.path.join(run.out, writers.WORK, "parts")
    assert sorted(os.listdir(parts)) == [f"part-{p:05d}.done.json" for p in range(5)]
    before = {p: open(p, "rb").read() for p in writers.data_files(run.out)}
    assert engine.prepare_output(run, resume=True, overwrite=False) is True
    assert {p: open(p, "rb").read() for p in writers.data_files(run.out)} == before


def test_splits_keep_groups_together_and_exclusions_are_dropped(tmp_path):
    excluded = tmp_path / "eval"
    excluded.mkdir()
    for i in (3, 11):  # lightly edited copies of two items
        (excluded / f"e{i}.py").write_text(kernel_text(i).replace("out[i]", "out[i]  ") + "# held out\n")
    run, stats = build(tmp_path, "ds", splits=(("train", 0.6), ("validation", 0.2), ("test", 0.2)),
                       exclude=str(excluded))
    # the truth: exact Jaccard of normalised 4-grams against the held-out files, at the threshold
    held_out = [shingles(norm_tokens(p.read_text())) for p in excluded.iterdir()]
    near = {f"k{i}" for i in range(40) if (i % 7 or not i)
            and any(jaccard(shingles(norm_tokens(kernel_text(i))), h) >= stats["excluded"]["threshold"] for h in held_out)}
    assert {"k3", "k11"} <= near and stats["excluded"]["records"] == len(near)
    by_split = {}
    for path in writers.data_files(run.out):
        split = os.path.basename(path).split("-")[0]
        by_split.setdefault(split, []).extend(r for _, r, _ in writers.read_records(path))
    assert set(by_split) == {"train", "validation", "test"}
    assert {s: len(r) for s, r in by_split.items()} == stats["splits"]
    names = {r["kernel_name"] for rs in by_split.values() for r in rs}
    assert not names & near and len(names) == 35 - len(near)
    where = {r["metadata"]["file"]: s for s, rs in by_split.items() for r in rs}
    for s, rs in by_split.items():  # one source file, one split
        assert all(where[r["metadata"]["file"]] == s for r in rs)
    pairs = [(a, b) for sa, ra in by_split.items() for sb, rb in by_split.items() if sa < sb for a in ra for b in rb]
    for a, b in pairs:
        assert jaccard(shingles(norm_tokens(a["python_source"])), shingles(norm_tokens(b["python_source"]))) < 0.8
    card = open(os.path.join(run.out, "README.md"), encoding="utf-8").read()
    assert all(f"data/{s}-*.jsonl" in card for s in by_split)
    assert json.load(open(os.path.join(run.out, "stats.json")))["splits"] == stats["splits"]


def test_stats_the_card_the_stats_command_and_the_report_agree_on_every_count(tmp_path):
    from collections import Counter

    from jit.code import report
    from jit.code.analysis.summary import summarise
    from jit.code.commands.stats import read_records

    run, stats = build(tmp_path, "ds")
    page = report.summarise(run.out)
    by_category = Counter()
    for (_, category), n in page.categories.items():
        by_category[category] += n
    assert stats["count"] == page.count == 35
    assert stats["per_source"] == dict(page.sources) and set(stats["per_source"]) == {"toy", "toy_b"}
    assert stats["per_category"] == dict(by_category) and set(stats["per_category"]) == {"toy", "toy_odd"}
    assert summarise(read_records(tmp_path / "ds"))["categories"] == stats["per_category"]
    card = open(os.path.join(run.out, "README.md"), encoding="utf-8").read()
    assert f"{stats['count']} records in `data/`" in card
    for category, n in stats["per_category"].items():
        assert f"| {category} | {n} |" in card
    for source, n in stats["per_source"].items():
        assert f"| {source} | - | {n} |" in card
