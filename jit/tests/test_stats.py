"""``jit-synth stats DIR``: category counts, builtin coverage and sizes of a dataset folder."""

from __future__ import annotations

import json

import pytest

from jit.cli import main as cli_main
from jit.code.analysis import summary as stats
from jit.code.commands import stats as stats_command
from jit.code.synthesis.generator import generate, warp_builtins


def _write(folder, specs, shards=2):
    data = folder / "data"
    data.mkdir(parents=True)
    for k in range(shards):
        with (data / f"train-{k:05d}-of-{shards:05d}.jsonl").open("w") as f:
            for spec in specs[k::shards]:
                f.write(json.dumps({"id": spec.name, "kernel_name": spec.name, "category": spec.category,
                                    "python_source": spec.source, "metadata": spec.metadata}) + "\n")


def test_summary_counts_categories_builtins_and_sizes(tmp_path):
    specs = [generate(4, i, categories=["math", "vector"]) for i in range(12)]
    _write(tmp_path, specs)
    summary = stats.summarise(stats_command.read_records(tmp_path))
    assert summary["records"] == 12
    assert sum(summary["categories"].values()) == 12
    assert set(summary["categories"]) <= {"math", "vector"}
    expected = {b for s in specs for b in s.metadata["builtins"]}
    assert summary["builtins_distinct"] == len(expected)
    assert summary["builtins_total"] == len(warp_builtins())
    assert summary["lines"]["max"] == max(s.metadata["lines"] for s in specs)
    assert sum(summary["size_histogram"].values()) == 12


def test_command_prints_the_report(tmp_path, capsys):
    _write(tmp_path, [generate(5, i) for i in range(6)], shards=1)
    assert cli_main(["stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "categories:" in out and "builtin coverage:" in out and "median" in out
    assert cli_main(["stats", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 6


@pytest.mark.parametrize("make", ["missing", "empty", "garbage"])
def test_bad_folder_exits_2_with_one_line(tmp_path, capsys, make):
    target = tmp_path / "nothing"
    if make != "missing":
        (target / "data").mkdir(parents=True)
        (target / "data" / "x.jsonl").write_text("" if make == "empty" else "{not json\n")
    assert cli_main(["stats", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jit-synth stats: error:") and "\n" not in err
