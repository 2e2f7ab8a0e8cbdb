"""jit-synth report: the page of a small dataset written record by record, read back as HTML."""

from __future__ import annotations

import base64
import collections
import html
import struct
import sys
from html.parser import HTMLParser

import pytest

from jit.code import report
from jit.code.commands import report as report_command
from jit.code.engine import writers
from jit.code.analysis.token_stats import count_tokens

SOURCES = ("realistic", "patterns", "mutants")
PNG = b"\x89PNG\r\n\x1a\n"


def _record(i: int) -> dict:
    source = SOURCES[i % 3]
    body = "\n".join(f"    v{k} = a[i] * {k + i}.0" for k in range(i % 5 + 3))
    python = (f"import warp as wp\n\n@wp.kernel\ndef k{i}(a: wp.array(dtype=float), b: wp.array(dtype=float)):\n"
              f"    i = wp.tid()\n    if a[i] < b[i] and i & 1 == 0:\n        b[i] = wp.abs(a[i])\n{body}\n")
    cuda = f'extern "C" __global__ void k{i}_cuda_kernel_forward() {{\n' + "    x = y < z && w;\n" * (10 + i) + "}\n"
    meta = {"source": source, "seed": 1, "index": i, "builtins": ["tid", "abs"] + (["clamp"] if i % 2 else [])}
    if source == "mutants":
        meta["seed_kernel"] = {"distribution": "warp-lang", "license": "Apache-2.0"}
    return {"id": f"id{i:03d}", "kernel_name": f"k{i}", "category": f"{source}_cat{i % 2}", "python_source": python,
            "cpu_forward": cuda.replace("__global__", "static") * 2, "cpu_backward": None, "cuda_forward": cuda,
            "cuda_backward": cuda * 3, "cpu_functions": None, "cuda_functions": "struct s {};\n" * (i % 3),
            "validation": {"cpu": "compiled", "cuda": "compiled" if i != 4 else "failed",
                           **({"cuda_reason": "nvrtc: error"} if i == 4 else {})},
            "metadata": meta}


RECORDS = [_record(i) for i in range(12)]
STATS = {"count": 12, "source": "generate", "seed": 1, "warp_version": "1.19.0", "devices": ["cpu", "cuda"],
         "rejects": {"near-duplicate": 3, "build failed: TypeError": 2},
         "near_duplicates": {"threshold": 0.9, "within_parts": 3, "across_parts": 1, "shingle": 4, "num_perm": 128},
         "splits": {"train": 9, "test": 3},
         "realism": {"dead_names": 0.01, "constant_tests": 0.0, "generator_style_identifiers": 0.03,
                     "builtin_js_divergence": 0.4, "nearest_neighbour_similarity": 0.35, "idiom_coverage": 0.9,
                     "kernels": 12, "records_measured": 12, "reference_kernels": 1097}}
REAL = {"dead_names": 0.04, "constant_tests": 0.008, "generator_style_identifiers": 0.02,
        "builtin_js_divergence": 0.16, "nearest_neighbour_similarity": 0.61, "idiom_coverage": 0.94}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds")
    writers.write_shards(str(folder), RECORDS[:9], 9, 5, "jsonl", split="train")
    writers.write_shards(str(folder), RECORDS[9:], 3, 5, "jsonl", split="test")
    writers.write_json(str(folder / "stats.json"), STATS)
    return folder


class Page(HTMLParser):
    """Image sources, the text of every <pre>, and the tags of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.pres, self.tags, self._pre = [], [], collections.Counter(), None

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        elif tag == "pre":
            self._pre = []

    def handle_data(self, data):
        if self._pre is not None:
            self._pre.append(data)

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pres.append("".join(self._pre))
            self._pre = None


@pytest.fixture(scope="module")
def page(dataset):
    pytest.importorskip("matplotlib")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "real_code_figures", lambda: REAL)  # the real code column takes seconds to measure
        assert report_command.main([str(dataset)]) == 0
    text = (dataset / "report.html").read_text(encoding="utf-8")
    parsed = Page()
    parsed.feed(text)
    return text, parsed


def test_summary_counts_what_was_written(dataset):
    s = report.summarise(str(dataset))
    assert s.count == 12 and s.splits == {"train": 9, "test": 3}
    assert s.sources == collections.Counter(r["metadata"]["source"] for r in RECORDS)
    assert s.builtins == collections.Counter(b for r in RECORDS for b in r["metadata"]["builtins"])
    assert s.validation[("cuda", "failed")] == 1 and s.reasons[("cuda", "nvrtc: error")] == 1
    order = [r for path in writers.data_files(str(dataset)) for _, r, _ in writers.read_records(path)]
    assert s.lengths["python_source"] == [count_tokens(r["python_source"]) for r in order]
    assert s.lengths["python+cuda"] == [count_tokens(r["python_source"]) + count_tokens(r["cuda_functions"])
                                        + count_tokens(r["cuda_forward"]) for r in order]
    sparse = report.summarise(str(dataset), sample=4)  # every third record
    assert sparse.lengths["cuda_forward"] == [count_tokens(r["cuda_forward"]) for r in order[::3]]


def test_page_has_distinct_png_figures(page):
    _, parsed = page
    assert len(parsed.images) >= 6
    payloads = []
    for src in parsed.images:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data[:8] == PNG and data[12:16] == b"IHDR"
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 300 and height >= 100 and len(data) > 5000
        payloads.append(data)
    assert len(set(payloads)) == len(payloads)


def test_page_is_self_contained_and_shows_records_escaped(page):
    text, parsed = page
    assert parsed.tags["script"] == 0 and parsed.tags["link"] == 0 and "http" not in text.split("<body>")[0]
    pythons = {r["python_source"]: r for r in RECORDS}
    shown = [p for p in parsed.pres if p in pythons]
    assert len(shown) == report.SHOWN
    assert {pythons[p]["metadata"]["source"] for p in shown} == set(SOURCES)
    for p in shown:
        assert html.escape(p) in text  # "<" and "&" of the source arrive as entities
        assert pythons[p]["cuda_forward"] in parsed.pres  # beside its CUDA forward code
    assert "build failed: TypeError" in text and "nvrtc: error" in text


def test_missing_matplotlib_exits_2(dataset, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    out = tmp_path / "r.html"
    assert report_command.main([str(dataset), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'warp-jit-synth[report]'" in err
    assert not out.exists()


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p])
def test_bad_dir_exits_2(tmp_path, capsys, make):
    pytest.importorskip("matplotlib")
    assert report_command.main([str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jit-synth report: error: ") and err.count("\n") == 1
    assert not (tmp_path / "report.html").exists()
