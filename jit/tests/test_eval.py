"""``jit-synth eval``: text, compile, run-and-match and pass@k against a tiny benchmark.

The oracle (Warp's own output) must score 100% on every task; seeded corruptions of the reference
code must fail run-and-match; whitespace and temporary-renumbering variants must still count as
normalised exact matches; predictions that hang, crash or write files are contained.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import shutil
from html.parser import HTMLParser

import pytest

from jit.code.commands import bench as bench_command
from jit.code.commands import eval as eval_command
from jit.code.evaluation import baselines, bench, corruptions, predictions, running, sandbox, score, text

KERNELS = '''\
import warp as wp


@wp.kernel
def blend_fields(a: wp.array(dtype=float), b: wp.array(dtype=float), t: float, out: wp.array(dtype=float)):
    """Blend two fields with weight t, clamped to the unit interval."""
    i = wp.tid()
    w = wp.clamp(t, 0.0, 1.0)
    out[i] = a[i] * (1.0 - w) + b[i] * w + a[i] * b[i]


@wp.func
def falloff(r: float, h: float):
    q = wp.max(h * h - r, 0.0)
    return q * q * q


@wp.kernel
def smooth_density(x: wp.array(dtype=wp.vec3), h: float, rho: wp.array(dtype=float)):
    i = wp.tid()
    total = float(0.0)
    for j in range(x.shape[0]):
        total += falloff(wp.length(x[i] - x[j]), h)
    rho[i] = total / h
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("evalbench")
    (root / "kernels.py").write_text(KERNELS)
    out = root / "bench"
    assert bench_command.main(["build", str(root / "kernels.py"), "--output", str(out), "--emit-ptx", "-q"]) == 0
    _, records = bench.read(str(out))
    assert len(records) == 2
    return out, records


def evaluate(task, records, grouped, seed=7, seconds=60.0):
    return score.evaluate(task, score.applicable(records, task), grouped, seed, seconds)


@pytest.mark.parametrize("task", ["py2cpp", "cuda2py", "purpose2py", "py2cuda", "py2cuda-adjoint", "py2ptx"])
def test_the_oracle_scores_everything(built, task):
    _, records = built
    todo = score.applicable(records, task)
    assert todo, task
    rows, result = evaluate(task, records, baselines.oracle(todo, task))
    figures = result["tiers"]["all"]
    assert figures["exact"] == figures["renamed"] == figures["pass@1"] == 100.0, rows
    if result["mode"] != "text-only":
        assert figures["compiles"] == 100.0, rows
    if result["mode"] == "cpu-run":
        assert figures["matches"] == 100.0, rows
        assert all(r["error"] is None for r in rows)


CASES = [("py2cpp", "cpp"), ("cuda2py", "python")]


@pytest.mark.parametrize("task,language", CASES)
def test_seeded_corruptions_fail_run_and_match(built, task, language):
    _, records = built
    todo = score.applicable(records, task)
    grouped = {}
    for rid, record in todo.items():
        reference = baselines.oracle({rid: record}, task)[rid][0]
        graded = record["validation"].get("gradient") == "passed"  # else adjoint code never runs
        for kind in corruptions.KINDS:
            bad = corruptions.corrupt(reference, language, kind, random.Random(f"{rid}:{kind}"), not graded)
            if bad is not None and bad != reference:
                grouped.setdefault(rid, []).append(bad)
    assert sum(map(len, grouped.values())) >= 5
    rows, _ = evaluate(task, records, grouped)
    assert [r for r in rows if r["matches"]] == []
    assert any(r["mismatch"] for r in rows)  # a wrong output is named, not only a failed build


def test_corruptions_change_what_they_say():
    rng = random.Random(0)
    py = "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    i = wp.tid()\n    a[i] = a[i] * 2.0\n"
    assert "a[i] / 2.0" in corruptions.corrupt(py, "python", "operator", rng)
    dead = py.replace("    a[i] =", "    unused = a[i] + 1.0\n    a[i] =")
    assert all("unused" in corruptions.corrupt(dead, "python", "statement", random.Random(n)) for n in range(8))
    assert "a[i + 1]" in corruptions.corrupt(py, "python", "index", rng)
    assert corruptions.corrupt(py, "python", "gradient", rng) is None
    cpp = ("    var_2 = wp::mul(var_1, var_0);\n    var_3 = wp::add(var_1, var_0);\n    wp::array_store(var_a, var_0, var_2);\n"
           "    wp::adj_mul(var_1, var_0, adj_1, adj_0, adj_2);\n")
    assert "wp::div(" in corruptions.corrupt(cpp, "cpp", "operator", rng)  # var_3 is never read: never changed
    assert "var_3" in corruptions.corrupt(cpp, "cpp", "statement", random.Random(1))
    assert "adj_mul" not in corruptions.corrupt(cpp, "cpp", "gradient", rng)


def test_corruptions_leave_code_no_run_can_see():
    # a negative thread index's wrap, a helper that does nothing or whose value is unused, and a sum with
    # zero are never changed
    cpp = """static void noop_0(
    wp::float32* var_x)
{
    //---------
    // pass
}
static wp::float32 twice_0(
    wp::float32 var_x)
{
    const wp::float32 var_1 = 2.0;
    wp::float32 var_0;
    var_0 = wp::mul(var_x, var_1);
    return var_0;
}
static void put_0(
    wp::array_t<wp::float32> var_a,
    wp::float32 var_x)
{
    wp::array_store(var_a, 0, var_x);
}
static void k_cpu_kernel_forward(
    wp::array_t<wp::float32> var_a)
{
    const wp::int32 var_1 = 0;
    const wp::float32 var_9 = 0.0;
    wp::int32 var_0;
    var_0 = builtin_tid1d();
    var_2 = (var_0 < var_1);
    var_3 = wp::add(var_0, var_8);
    var_4 = wp::where(var_2, var_3, var_0);
    var_5 = wp::address(var_a, var_0);
    var_6 = wp::load(var_5);
    noop_0(var_5);
    var_11 = twice_0(var_6);
    put_0(var_a, var_6);
    var_10 = wp::mul(var_6, var_9);
    var_7 = wp::add(var_6, var_10);
    wp::array_store(var_a, var_4, var_7);
}
"""
    for n in range(40):
        rng = random.Random(n)
        assert "var_3 = wp::add(var_0, var_8);" in corruptions.corrupt(cpp, "cpp", "statement", rng)
        changed = corruptions.corrupt(cpp, "cpp", "operator", rng)
        assert "wp::sub(var_0, var_8)" not in changed and "wp::sub(var_6, var_10)" not in changed
    # 0 * x and 0 / x are the same too: only the helper's product is left to change
    zero_first = cpp.replace("mul(var_6, var_9)", "mul(var_9, var_6)")
    assert all("wp::div(var_x, var_1)" in corruptions.corrupt(zero_first, "cpp", "operator", random.Random(n))
               for n in range(8))
    flow = corruptions.Liveness(cpp)
    live = {cpp[at:cpp.index(";", at)].strip() for at in flow.live_lines}
    assert "var_6 = wp::load(var_5)" in live and "var_4 = wp::where(var_2, var_3, var_0)" in live
    assert "var_3 = wp::add(var_0, var_8)" not in live and "var_2 = (var_0 < var_1)" not in live
    assert "noop_0(var_5)" not in live and "var_11 = twice_0(var_6)" not in live  # a pure helper's unused value
    assert "put_0(var_a, var_6)" in live and "var_0 = wp::mul(var_x, var_1)" in live
    # an adjoint replays primal values; the adjoint of a sum never reads them, that of a product does
    adjoint = ("    var_1 = wp::sin(var_0);\n    var_2 = wp::cos(var_0);\n"
               "    wp::adj_add(var_1, var_3, adj_1, adj_3, adj_4);\n    wp::adj_mul(var_2, var_3, adj_2, adj_3, adj_5);\n")
    replayed = corruptions.Liveness(adjoint).live_lines
    assert adjoint.index("    var_1 = ") not in replayed and adjoint.index("    var_2 = ") in replayed
    py = "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float), t: float):\n    i = wp.tid()\n" \
         "    a[i] = a[i] * 2.0 + 0.0 * t\n"
    assert all("+ 0.0 * t" in corruptions.corrupt(py, "python", "operator", random.Random(n)) for n in range(8))
    noop = py.replace("@wp.kernel", "@wp.func\ndef keep(x: float, y: float):\n    pass\n\n@wp.kernel").replace(
        "    a[i] = a[i]", "    keep(a[i], t + 1.0)\n    a[i] = a[i]")
    for n in range(8):
        for kind in ("operator", "statement", "index"):
            assert "keep(a[i], t + 1.0)" in corruptions.corrupt(noop, "python", kind, random.Random(n))


def test_whitespace_and_renumbered_variants_are_normalised_matches(built):
    _, records = built
    record = next(r for r in records.values() if r["kernel_name"] == "smooth_density")
    reference = baselines.oracle({record["id"]: record}, "py2cpp")[record["id"]][0]
    spaced = "\n\n".join("  " + line.replace(", ", ",   ") for line in reference.splitlines())
    numbers = sorted({int(n) for n in text.TEMPORARY.findall(reference) for n in [n[1]]})
    shift = {str(n): str(n + 100) for n in numbers}
    renumbered = text.TEMPORARY.sub(lambda m: f"{m.group(1)}_{shift[m.group(2)]}", reference)
    rehashed = text.HASH_SUFFIX.sub(lambda m: m.group(1)[::-1], reference)  # another hash for each
    assert text.scores(spaced, reference)["whitespace"] and not text.scores(spaced, reference)["exact"]
    for variant in (renumbered, rehashed):
        got = text.scores(variant, reference)
        assert got["renamed"] and not got["whitespace"]
    wrong = reference.replace("wp::mul(", "wp::add(", 1)
    assert not text.scores(wrong, reference)["renamed"]
    rows, result = evaluate("py2cpp", records, {record["id"]: [spaced, renumbered]})
    assert result["tiers"]["all"]["matches"] == 100.0  # what counts as the same text also runs the same


def test_pass_at_k_is_the_unbiased_estimator():
    for n, c, k in [(5, 2, 1), (5, 2, 3), (10, 0, 5), (4, 4, 2), (6, 1, 6)]:
        ways = list(itertools.combinations(range(n), k))
        brute = sum(any(i < c for i in pick) for pick in ways) / len(ways)
        assert math.isclose(score.pass_at_k(n, c, k), brute)


def test_untrusted_code_is_contained(tmp_path):
    here = os.getcwd()

    def hang():
        while True:
            pass

    def crash():
        os.kill(os.getpid(), 11)

    def write():
        with open("note.txt", "w") as f:
            f.write("mine")
        return os.path.abspath("note.txt")

    def hog():
        return len(bytearray(8 << 30))

    t = sandbox.contained(hang, seconds=1.0)
    assert t.status == "timeout"
    assert sandbox.contained(crash, seconds=10).status == "crashed"
    w = sandbox.contained(write, seconds=10, scratch_parent=str(tmp_path))
    assert w.status == "ok" and not os.path.exists(w.value) and os.listdir(tmp_path) == []
    assert sandbox.contained(hog, seconds=10, memory=1 << 30).status == "error"
    assert os.getcwd() == here


def test_kept_headers_reach_each_child_and_changed_ones_are_dropped(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "a.pch").write_bytes(b"warp's headers")
    headers = sandbox.Headers(str(kept))

    def look():
        from jit.code.extraction import warp_backend as wb

        folder = wb.pch_folder()
        return folder, sorted(os.listdir(folder))

    got = sandbox.contained(look, 10, headers=headers)
    assert got.value[1] == ["a.pch"] and not os.path.exists(got.value[0])  # a copy, in the scratch folder

    def plant():
        (kept / "a.pch").write_bytes(b"mine")
        (kept / "b.pch").write_bytes(b"mine")

    assert sandbox.contained(plant, 10, headers=headers).status == "ok"
    assert os.listdir(kept) == [] and headers.digests == {}


def test_hanging_crashing_and_writing_predictions_score_as_failed_and_the_run_goes_on(built, tmp_path):
    _, records = built
    record = next(r for r in records.values() if r["kernel_name"] == "blend_fields")
    source = record["python_source"]
    writes = tmp_path / "written.txt"
    bad = [source.replace("import warp as wp", "import warp as wp\nwhile True:\n    pass"),
           source.replace("import warp as wp", "import warp as wp\nimport os\nos.kill(os.getpid(), 11)"),
           source.replace("import warp as wp", "import warp as wp\nopen('x.txt', 'w').write('x')"),
           source.replace("i = wp.tid()", "i = wp.tid(\n"),
           source]
    rows, result = evaluate("cuda2py", {record["id"]: record}, {record["id"]: bad}, seconds=5.0)
    assert [r["passed"] for r in rows] == [False, False, True, False, True]
    assert rows[0]["error"].startswith("timeout") and rows[1]["error"].startswith("crashed")
    assert rows[3]["compiles"] is False and "SyntaxError" in rows[3]["error"]
    assert not os.path.exists("x.txt") and not writes.exists()
    assert result["tiers"]["all"]["pass@1"] == 40.0
    assert result["tiers"]["all"]["pass@5"] == 100.0


def test_the_command_writes_eval_json_and_rows(built, tmp_path, capsys):
    out, records = built
    preds = tmp_path / "p.jsonl"
    rid = next(iter(score.applicable(records, "py2cuda")))
    predictions.write(str(preds), {rid: ["```cuda\n" + baselines.oracle(records, "py2cuda")[rid][0] + "\n```",
                                         "not cuda at all"]})
    assert eval_command.main([str(preds), "--bench", str(out), "--task", "py2cuda", "--output",
                              str(tmp_path / "e"), "--seed", "3", "-q"]) == 0
    table = capsys.readouterr().out
    assert "py2cuda (compile-only" in table and "pass@1" in table
    result = json.loads((tmp_path / "e" / "eval.json").read_text())
    assert result["tiers"]["all"]["compiles"] == 50.0 and result["seed"] == 3
    rows = [json.loads(line) for line in (tmp_path / "e" / "predictions.jsonl").read_text().splitlines()]
    assert rows[0]["passed"] and not rows[1]["passed"] and "error" in rows[1]["error"]


class Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts, with the <h3> heading before it."""

    def __init__(self):
        super().__init__()
        self.tables, self.heading, self._text = [], "", None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append((self.heading, []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th", "h3"):
            self._text = []

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][1][-1].append("".join(self._text))
            self._text = None
        elif tag == "h3":
            self.heading, self._text = "".join(self._text), None


def test_the_report_shows_eval_results_as_written(built, tmp_path):
    pytest.importorskip("matplotlib")
    from jit.code.commands import report as report_command

    out, records = built
    folder = tmp_path / "bench"
    shutil.copytree(out, folder)
    rid = sorted(score.applicable(records, "py2ptx"))[0]
    preds = tmp_path / "p.jsonl"
    predictions.write(str(preds), {rid: [baselines.oracle(records, "py2ptx")[rid][0], "not ptx"]})
    assert eval_command.main([str(preds), "--bench", str(folder), "--task", "py2ptx", "--output",
                              str(folder / "eval" / "py2ptx"), "--seed", "1", "-q"]) == 0
    assert report_command.main([str(folder)]) == 0
    page = Tables()
    page.feed((folder / "report.html").read_text(encoding="utf-8"))
    written = json.loads((folder / "eval" / "py2ptx" / "eval.json").read_text())
    heading, rows = next((h, rows) for h, rows in page.tables if h.startswith("py2ptx"))
    assert heading == "py2ptx eval/py2ptx" and rows[0][:3] == ["tier", "kernels", "predictions"]
    shown = {row[0]: dict(zip(rows[0], row)) for row in rows[1:]}
    assert set(shown) == set(written["tiers"])
    for tier, figures in written["tiers"].items():
        for key, column in (("exact", "exact %"), ("chrf", "chrF"), ("pass@1", "pass@1")):
            assert shown[tier][column] == ("-" if figures[key] is None else str(figures[key]))
    assert shown["all"]["exact %"] == "50.0" and shown["all"]["predictions"] == "2"
    failures = next(rows for h, rows in page.tables if rows and rows[0][0] == "why predictions failed")
    assert failures[1:] == [["text differs (text-only task)", "1"]]


def test_bad_input_is_one_line_with_exit_2(built, tmp_path, capsys):
    out, records = built
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "nope", "prediction": "x"}\n')
    assert eval_command.main([str(preds), "--bench", str(out), "--task", "py2cpp"]) == 2
    assert "not in the benchmark" in capsys.readouterr().err
    assert eval_command.main(["--bench", str(tmp_path), "--task", "py2cpp", "--baseline", "oracle"]) == 2
    assert "bench build" in capsys.readouterr().err
    assert eval_command.main(["--bench", str(out), "--task", "py2cpp", "--baseline", "retrieval"]) == 2
    assert "--train" in capsys.readouterr().err


def test_retrieval_maps_names_to_the_benchmark_kernel(built):
    _, records = built
    record = next(r for r in records.values() if r["kernel_name"] == "blend_fields")
    train = dict(record, kernel_name="mix", python_source=record["python_source"].replace("blend_fields", "mix")
                 .replace("out", "result"))
    got = baselines.retrieval({record["id"]: record}, "cuda2py", [train])[record["id"]][0]
    assert got == record["python_source"]
    cpp = "struct wp_args_mix_0123abcd {};\nvoid mix_0123abcd_cpu_kernel_forward() { var_result = adj_result; }"
    assert baselines.map_names(cpp, train, record) == \
        "struct wp_args_blend_fields_0123abcd {};\nvoid blend_fields_0123abcd_cpu_kernel_forward() { var_out = adj_out; }"


@pytest.mark.cuda
def test_py2cuda_runs_and_matches_on_a_gpu(built):
    _, records = built
    record = next(r for r in records.values() if r["kernel_name"] == "blend_fields")
    reference = baselines.oracle({record["id"]: record}, "py2cuda")[record["id"]][0]
    inputs, stored, _ = score.reference_io(record, 5)
    got = running.launch_cuda(record, reference, inputs[:1])
    assert score.first_mismatch([stored], got) is None


def test_a_predictions_hash_suffixes_take_the_builds():
    current = "struct wp_args_s_fb36e44b; void s_fb36e44b_cpu_kernel_forward(P_0f49e99a p);"
    predicted = "struct wp_args_s_11111111; void s_11111111_cpu_kernel_forward(P_22222222 p); helper_0(var_12);"
    assert running.rename_hashes(predicted, current) == \
        "struct wp_args_s_fb36e44b; void s_fb36e44b_cpu_kernel_forward(P_0f49e99a p); helper_0(var_12);"


def test_a_struct_is_located_with_the_operators_the_module_adds():
    piece = "struct S_1\n{\n    float x;\n};\nvoid adj_S_1()\n{\n}\nS_1 add(S_1 a, S_1 b)\n{\n    return S_1();\n}"
    source = ("// header\nstruct S_1\n{\n    float x;\n    S_1 operator - () const\n    {\n    }\n};\nvoid adj_S_1()\n"
              "{\n}\nS_1 add(S_1 a, S_1 b)\n{\n    S_1 r = a; r += b; return r;\n}\nvoid kernel()\n{\n}\n")
    start, end = running.locate(source, piece, "cpu")
    assert source[start:end].startswith("struct S_1") and source[end:] == "\nvoid kernel()\n{\n}\n"
    assert running.locate(source, "void kernel()\n{\n}", "cpu") == (source.index("void kernel"), len(source) - 1)
