"""Decontamination: records near a source of an exclusion set (a folder of .py files, a JSONL file,
a dataset folder) are dropped, and nothing else."""

from __future__ import annotations

import json
import os
import re

import pytest

from jit.code.engine import exclude

from jit.code.engine import writers
from jit.code.analysis.tokens import jaccard, norm_tokens, shingles
from jit.code.synthesis.generator import generate


def tokens_of(source: str) -> set:
    return shingles(norm_tokens(source))


def lightly_edit(source: str, k: int) -> str:
    """Rename the kernel and two variables, change every float constant, then add a line (even k)
    or remove one (odd k)."""
    source = re.sub(r"\bdef (\w+)", r"def \1_copy", source)
    for name in list(dict.fromkeys(re.findall(r"^\s+([a-z_]\w*) = ", source, flags=re.M)))[:2]:
        source = re.sub(rf"(?<!\.)\b{name}\b", f"{name}_r", source)  # not wp.tid when renaming tid
    source = re.sub(r"\b\d+\.\d+\b", lambda m: f"{float(m.group()) * 2 + 1:.3f}", source)
    lines = source.split("\n")
    simple = editable_lines(lines)
    i = simple[len(simple) // 2]
    if k % 2 == 0:
        lines.insert(i + 1, _indent(lines[i]) + f"extra_{k} = 0.25")
    else:
        del lines[i]
    return "\n".join(lines)


def editable_lines(lines: list[str]) -> list[int]:
    """Assignments that can go (or have a line added after them) without breaking a block."""
    return [i for i in range(1, len(lines) - 1) if re.match(r"^\s+[a-z_]\w* = ", lines[i])
            and not lines[i - 1].rstrip().endswith(":") and _indent(lines[i + 1]) == _indent(lines[i])]


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


# short kernels of the opt-in sources: a one-line edit moves their 4-gram sets far enough to show
# why the default threshold sits below 0.8 (the default mix's longer kernels barely move)
SHORT = ("realistic", "random")


def write_dataset(out: str, sources: list[str]) -> list[dict]:
    records = [{"id": f"r{i:03d}", "kernel_name": f"k{i}", "category": "test", "python_source": s, "metadata": {}}
               for i, s in enumerate(sources)]
    writers.write_shards(out, records, len(records), 25, "jsonl")
    return records


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """A dataset of 60 generated kernels, and a folder of 50 kernels: lightly edited copies of 10
    of them, and 40 kernels of another run that are not near any record of the dataset."""
    base = tmp_path_factory.mktemp("exclude")
    records = write_dataset(str(base / "ds"), [generate(3, i, sources=SHORT).source for i in range(60)])
    sets = {r["id"]: tokens_of(r["python_source"]) for r in records}
    # originals whose edits could only be near themselves: no other record within 0.6 of them
    isolated = [r for r in records if editable_lines(r["python_source"].split("\n")) and all(
        jaccard(sets[r["id"]], sets[o]) < 0.6 for o in sets if o != r["id"])]
    # and whose light edit stays clearly above the threshold (MinHash decides near it: the exact
    # test below covers that band)
    # (the copies furthest from their originals first, so the edits span the band up to 1)
    edited = [(lightly_edit(r["python_source"], k), r) for k, r in enumerate(isolated)]
    edited.sort(key=lambda cr: jaccard(tokens_of(cr[0]), sets[cr[1]["id"]]))
    originals, copies = [], {}
    for copy, r in edited:
        if len(originals) < 10 and jaccard(tokens_of(copy), sets[r["id"]]) >= exclude.DEFAULT_THRESHOLD + 0.05:
            copies[r["id"]] = copy
            originals.append(r)
    others = []
    for i in range(200):
        source = generate(4, i, sources=SHORT).source
        if max(jaccard(tokens_of(source), s) for s in sets.values()) < 0.5:
            others.append(source)
        if len(others) == 40:
            break
    folder = base / "evalset"
    folder.mkdir()
    for k, r in enumerate(originals):
        (folder / f"copy_{k:02d}.py").write_text(copies[r["id"]])
    for k, source in enumerate(others):
        (folder / f"other_{k:02d}.py").write_text(source)
    return {"base": base, "records": records, "originals": {r["id"] for r in originals}, "copies": copies,
            "folder": str(folder), "others": others}


def test_scenario_is_what_it_claims(scenario):
    assert len(scenario["originals"]) == 10 and len(scenario["others"]) == 40
    assert len(os.listdir(scenario["folder"])) == 50
    by_id = {r["id"]: r for r in scenario["records"]}
    scores = [jaccard(tokens_of(copy), tokens_of(by_id[rid]["python_source"])) for rid, copy in scenario["copies"].items()]
    assert all(copy != by_id[rid]["python_source"] for rid, copy in scenario["copies"].items())
    assert sum(score < 1 for score in scores) >= 8  # an added line can repeat 4-grams the kernel already has
    assert sum(score < 0.8 for score in scores) >= 1  # why the default threshold is below 0.8


def test_drops_exactly_the_copied_kernels(scenario):
    exclusions = exclude.load_exclusions(scenario["folder"])
    assert len(exclusions) == 50
    kept, counter = exclude.filter_records(writers.read_dataset(str(scenario["base"] / "ds")), exclusions)
    kept_ids = {r["id"] for r in kept}
    dropped = {r["id"] for r in scenario["records"]} - kept_ids
    assert dropped == scenario["originals"]
    assert counter["excluded"] == 10
    for rid in scenario["originals"]:
        assert exclusions.match(next(r for r in scenario["records"] if r["id"] == rid)["python_source"]).startswith("copy_")


def test_decision_is_the_exact_jaccard_at_the_threshold(scenario):
    """Independent truth: every record compared with every source of the folder, exactly."""
    exclusions = exclude.load_exclusions(scenario["folder"])
    folder = scenario["folder"]
    sources = [tokens_of(open(os.path.join(folder, f)).read()) for f in sorted(os.listdir(folder))]
    for r in scenario["records"]:
        best = max(jaccard(tokens_of(r["python_source"]), s) for s in sources)
        assert exclusions.matches(r["python_source"]) == (best >= exclude.DEFAULT_THRESHOLD), (r["id"], best)


def test_threshold_is_a_parameter(scenario):
    strict = exclude.load_exclusions(scenario["folder"], threshold=1.0)
    by_id = {r["id"]: r for r in scenario["records"]}
    same = {rid for rid, copy in scenario["copies"].items() if tokens_of(copy) == tokens_of(by_id[rid]["python_source"])}
    assert {rid for rid in scenario["originals"] if strict.matches(by_id[rid]["python_source"])} == same
    with pytest.raises(ValueError):
        exclude.load_exclusions(scenario["folder"], threshold=0)


def test_jsonl_and_dataset_folders_are_exclusion_sets_too(scenario, tmp_path):
    jsonl = tmp_path / "eval.jsonl"
    rows = [{"task": k, "code": c} for k, c in enumerate(scenario["copies"].values())]
    rows += [{"python_source": s} for s in scenario["others"]]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    from_jsonl = exclude.load_exclusions(str(jsonl))
    assert len(from_jsonl) == 50
    dropped = {r["id"] for r in scenario["records"] if from_jsonl.matches(r["python_source"])}
    assert dropped == scenario["originals"]
    first = min(scenario["originals"])
    line = list(scenario["copies"]).index(first) + 1  # the row holding its copy
    assert from_jsonl.match(scenario["copies"][first]) == f"eval.jsonl:{line}"

    folder_of_copies = str(tmp_path / "copies_ds")
    write_dataset(folder_of_copies, list(scenario["copies"].values()))
    from_dataset = exclude.load_exclusions(folder_of_copies)
    assert {r["id"] for r in scenario["records"] if from_dataset.matches(r["python_source"])} == scenario["originals"]
    assert from_dataset.describe()["sources"] == 10


KERNELS = {
    "scale": "    i = wp.tid()\n    y = x[i] * 2.0\n    if y > 1.0:\n        y = wp.sqrt(y)\n    out[i] = y + wp.sin(x[i])\n",
    "reduce": "    i = wp.tid()\n    v = wp.abs(x[i])\n    for k in range(4):\n        v = v * 0.5 + wp.exp(-v)\n"
              "    wp.atomic_add(out, 0, v)\n",
    "stencil": "    i = wp.tid()\n    left = x[wp.max(i - 1, 0)]\n    right = x[wp.min(i + 1, 9)]\n"
               "    out[i] = 0.5 * (left + right) - wp.cos(x[i])\n",
}


def kernel_source(name: str, body: str) -> str:
    return f"@wp.kernel\ndef {name}(x: wp.array(dtype=float), out: wp.array(dtype=float)):\n{body}"


def test_each_kernel_of_a_many_kernel_file_is_a_source(tmp_path):
    many = "import warp as wp\n\n\n" + "\n\n".join(kernel_source(n, b) for n, b in KERNELS.items())
    (tmp_path / "suite.py").write_text(many)
    exclusions = exclude.load_exclusions(str(tmp_path / "suite.py"))
    assert len(exclusions) == 1 + len(KERNELS)
    record = "import warp as wp\n\n\n" + kernel_source("renamed_reduce", KERNELS["reduce"])
    assert jaccard(tokens_of(record), tokens_of(many)) < exclude.DEFAULT_THRESHOLD  # the file alone would not
    assert exclusions.match(record) == "suite.py:reduce"


@pytest.mark.parametrize("make, fragment", [
    ("missing", "does not exist"),
    ("empty folder", "neither dataset shards"),
    ("no field", "no python_source, code, content, text field"),
    ("not json", "not JSON"),
    ("empty file", "holds no Python sources"),
])
def test_bad_paths_are_one_line_value_errors(tmp_path, make, fragment):
    path = tmp_path / "x"
    if make == "empty folder":
        path.mkdir()
        (path / "notes.txt").write_text("hello")
    elif make == "no field":
        path.write_text('{"source": "def f(): pass"}\n')
    elif make == "not json":
        path.write_text("def f():\n    pass\n")
    elif make == "empty file":
        path.write_text("\n")
    with pytest.raises(ValueError) as err:
        exclude.load_exclusions(str(path))
    assert fragment in str(err.value) and "\n" not in str(err.value)
