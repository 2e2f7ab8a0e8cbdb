"""``jit/benchmarks/blind_review.py``: sampling, the key, and scoring, on a tiny dataset folder.

The real half is a handful of kernels parsed from text by ``reference.kernels_of``, so nothing
is built by Warp and the distribution's examples are never read.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from jit.benchmarks import blind_review as br
from jit.code.analysis import reference

REAL_TEXT = textwrap.dedent('''\
    from typing import Any

    import warp as wp

    SCALE = 2.0


    @wp.func
    def twice(x: float):
        return SCALE * x


    @wp.kernel
    def scale_values(a: wp.array(dtype=float), b: wp.array(dtype=float)):
        i = wp.tid()
        b[i] = twice(a[i])


    @wp.kernel
    def add_values(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float)):
        i = wp.tid()
        c[i] = a[i] + b[i]


    @wp.kernel
    def fill_ones(a: wp.array(dtype=float)):
        a[wp.tid()] = 1.0


    @wp.kernel
    def negate(a: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        a[i] = -a[i]


    @wp.kernel
    def reads_unknown(a: wp.array(dtype=float)):
        a[wp.tid()] = UNKNOWN_CONSTANT


    @wp.kernel
    def copy_any(a: wp.array(dtype=Any), b: wp.array(dtype=Any)):
        i = wp.tid()
        b[i] = a[i]
''')
ELIGIBLE = {"scale_values", "add_values", "fill_ones", "negate"}


def generated_source(k: int, suffix: str) -> str:
    return textwrap.dedent(f'''\
        import warp as wp


        @wp.struct
        class Body_{suffix}:
            mass: float


        @wp.func
        def weight_{suffix}(b: Body_{suffix}, g: float):
            return b.mass * g


        @wp.kernel
        def gravity_{suffix}(bodies: wp.array(dtype=Body_{suffix}), out: wp.array(dtype=float)):
            i = wp.tid()
            out[i] = weight_{suffix}(bodies[i], {k}.0)
        ''')


# 4 mutants and 2 patterns: N = 3 splits exactly 2 + 1
RECORDS = [{"id": f"rec{k:016x}", "kernel_name": f"gravity_{k:08x}", "category": f"cat_{source[:3]}",
            "python_source": generated_source(k, f"{k:08x}"), "metadata": {"source": source}}
           for k, source in enumerate(["mutants", "patterns", "mutants", "mutants", "patterns", "mutants"])]


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    reals = reference.kernels_of(REAL_TEXT, "warp/tests/test_fake_real.py")
    monkeypatch.setattr(reference, "kernels", lambda half=None: reals if half == "measure" else [])
    folder = tmp_path / "dataset"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train-00000-of-00001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return folder


def run_sample(dataset, out, seed=1):
    assert br.main(["sample", str(dataset), "--n", "3", "--seed", str(seed), "--out", str(out)]) == 0
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    return items, json.loads((out / "key.json").read_text())


def test_sampling_is_deterministic_for_a_seed(dataset, tmp_path):
    run_sample(dataset, tmp_path / "a")
    run_sample(dataset, tmp_path / "b")
    for name in ("items.md", "items.jsonl", "key.json", "brief.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    _, other = run_sample(dataset, tmp_path / "c", seed=2)
    assert other["items"] != json.loads((tmp_path / "a" / "key.json").read_text())["items"]


def test_items_carry_no_suffix_or_provenance(dataset, tmp_path):
    items, _ = run_sample(dataset, tmp_path / "out")
    markdown = (tmp_path / "out" / "items.md").read_text()
    assert [set(item) for item in items] == [{"item", "python_source"}] * 6
    assert re.findall(r"^## (.*)$", markdown, re.MULTILINE) == [f"item-0{i}" for i in range(1, 7)]
    for text in [markdown] + [item["python_source"] for item in items]:
        assert not re.search(r"_[0-9a-f]{8}\b", text)
        for leak in ["rec0", "cat_", "mutants", "patterns", "generated", "real", "test_fake", "warp/tests"]:
            assert leak not in text


def test_key_matches_items(dataset, tmp_path):
    items, key = run_sample(dataset, tmp_path / "out")
    assert list(key["items"]) == [item["item"] for item in items]
    reals = {(k.path, k.line): k for k in reference.kernels("measure")}
    by_id = {r["id"]: r for r in RECORDS}
    sources = []
    for item in items:
        entry = key["items"][item["item"]]
        sources.append(entry["source"])
        if entry["origin"] == "generated":
            record = by_id[entry["record_id"]]
            assert entry["source"] == record["metadata"]["source"]
            assert item["python_source"] == br.strip_suffixes(record["python_source"])
            assert "class Body:" in item["python_source"] and "def gravity(" in item["python_source"]
        else:
            kernel = reals[(entry["file"], entry["line"])]
            assert item["python_source"] == kernel.context and kernel.name in ELIGIBLE
    assert sorted(sources) == ["mutants", "mutants", "patterns", "real", "real", "real"]
    assert key["dataset_mix"] == {"mutants": 4, "patterns": 2}


def test_the_non_test_pool_draws_only_from_outside_test_files(dataset, tmp_path, monkeypatch):
    tests = reference.kernels_of(REAL_TEXT, "warp/tests/test_fake_real.py")
    examples = reference.kernels_of(REAL_TEXT.replace("def ", "def ex_"), "warp/examples/fake/example_fake.py")
    monkeypatch.setattr(reference, "kernels", lambda half=None: tests + examples if half == "measure" else [])
    assert br.main(["sample", str(dataset), "--n", "3", "--seed", "1", "--out", str(tmp_path / "all")]) == 0
    assert br.main(["sample", str(dataset), "--n", "3", "--seed", "1", "--out", str(tmp_path / "nt"),
                    "--real", "non-test"]) == 0
    chosen = {}
    for name in ("all", "nt"):
        key = json.loads((tmp_path / name / "key.json").read_text())
        chosen[name] = [e["file"] for e in key["items"].values() if e["origin"] == "real"]
        assert key["reference"]["pool"] == {"all": "all", "nt": "non-test"}[name]
    assert chosen["nt"] == ["warp/examples/fake/example_fake.py"] * 3
    assert {e.path for e in br.real_pool("all")} == {"warp/tests/test_fake_real.py", "warp/examples/fake/example_fake.py"}
    assert br.is_test_file("warp/tests/tile/test_tile.py") and br.is_test_file("pkg/test_x.py")
    assert not br.is_test_file("warp/examples/fem/example_diffusion.py")


def test_too_few_real_kernels_fail_with_one_line_and_write_nothing(dataset, tmp_path, capsys):
    out = tmp_path / "out"
    assert br.main(["sample", str(dataset), "--n", "3", "--real", "non-test", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "0 eligible real kernels (non-test)" in err[0] and "--n 3" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("counts, n, expected", [
    ({"mutants": 4, "patterns": 2}, 3, {"mutants": 2, "patterns": 1}),
    ({"a": 78, "b": 58, "c": 41, "d": 23}, 30, {"a": 12, "b": 9, "c": 6, "d": 3}),
    ({"a": 1, "b": 1, "c": 1}, 2, {"a": 1, "b": 1}),
])
def test_allocate_is_proportional(counts, n, expected):
    assert br.allocate(counts, n) == expected


# five items; alice and bob's answers below, with the figures counted by hand
KEY = {"item-01": {"origin": "generated", "source": "mutants"},
       "item-02": {"origin": "generated", "source": "mutants"},
       "item-03": {"origin": "generated", "source": "patterns"},
       "item-04": {"origin": "real", "source": "real"},
       "item-05": {"origin": "real", "source": "real"}}
ALICE = {"reviewer": "alice", "answers": [
    {"item": "item-01", "origin": "generated", "would_train": False, "defects": ["bug: reads past the end"]},
    {"item": "item-02", "origin": "real", "would_train": True, "defects": []},
    {"item": "item-03", "origin": "generated", "would_train": False, "defects": ["redundant: clamp"]},
    {"item": "item-04", "origin": "real", "would_train": True, "defects": [], "notes": "clean"},
    {"item": "item-05", "origin": "generated", "would_train": False, "defects": ["unclear purpose: why"]}]}
BOB = [{"item": f"item-0{i}", "origin": "real", "would_train": True, "defects": []} for i in range(5, 0, -1)]


def figures(*triples):
    return {f: {"count": c, "total": t} for f, (c, t) in zip(br.FIGURES, triples)}


def write_review(tmp_path, answers: dict[str, object]):
    folder = tmp_path / "review"
    folder.mkdir()
    (folder / "key.json").write_text(json.dumps({"items": KEY}))
    paths = []
    for name, data in answers.items():
        path = tmp_path / f"{name}.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        paths.append(str(path))
    return folder, paths


def test_scoring_gives_hand_computed_figures(tmp_path, capsys):
    folder, paths = write_review(tmp_path, {"alice": ALICE, "bob": BOB})
    assert br.main(["score", str(folder), *paths]) == 0
    scores = json.loads((folder / "scores.json").read_text())
    assert scores["items"] == {"generated": 3, "real": 2}
    alice, bob, both = scores["reviewers"]["alice"], scores["reviewers"]["bob"], scores["combined"]
    assert alice["generated"] == figures((2, 3), (1, 3), (2, 3))
    assert alice["real"] == figures((1, 2), (1, 2), (1, 2))
    assert alice["generated_by_source"] == {"mutants": figures((1, 2), (1, 2), (1, 2)),
                                            "patterns": figures((1, 1), (0, 1), (1, 1))}
    assert bob["generated"] == figures((0, 3), (3, 3), (0, 3))
    assert bob["real"] == figures((2, 2), (2, 2), (0, 2))
    assert both["generated"] == figures((2, 6), (4, 6), (2, 6))
    assert both["real"] == figures((3, 4), (3, 4), (1, 4))
    assert both["generated_by_source"] == {"mutants": figures((1, 4), (3, 4), (1, 4)),
                                           "patterns": figures((1, 2), (1, 2), (1, 2))}
    out = capsys.readouterr().out
    assert "combined" in out and "2/6" in out


def answers_with(**change):
    item = next(a for a in ALICE["answers"] if a["item"] == "item-02")
    return {"answers": [a for a in ALICE["answers"] if a is not item] + [{**item, **change}]}


@pytest.mark.parametrize("answers, says", [
    ({"answers": ALICE["answers"][:4]}, "1 of 5 items unanswered: item-05"),
    ({"answers": ALICE["answers"] + [ALICE["answers"][0]]}, "item-01 is answered twice"),
    (answers_with(item="item-09"), "unknown item 'item-09'"),
    (answers_with(origin="human"), "item-02: origin must be"),
    (answers_with(would_train="yes"), "item-02: would_train must be true or false"),
    (answers_with(defects="none"), "item-02: defects must be a list"),
    ("{not json", "not readable JSON"),
    ({"reviewer": "alice"}, "expected a list of answers"),
])
def test_bad_answers_file_exits_2(tmp_path, capsys, answers, says):
    folder, paths = write_review(tmp_path, {"good": BOB, "bad": answers})
    assert br.main(["score", str(folder), *paths]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.json" in err and says in err
    assert not (folder / "scores.json").exists()


def test_same_reviewer_twice_exits_2(tmp_path, capsys):
    folder, paths = write_review(tmp_path, {"one": ALICE, "two": ALICE})
    assert br.main(["score", str(folder), *paths]) == 2
    assert "reviewer 'alice' already answered" in capsys.readouterr().err
