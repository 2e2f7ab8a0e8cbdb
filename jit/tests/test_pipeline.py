"""The generate command end to end: layout, determinism, dedup, resume after kill -9, bad input."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jit.code.synthesis import pipeline
from jit.code.analysis import summary as stats
from jit.code.commands import stats as stats_command
from jit.code.engine import writers
from jit.code.records import FIELDS, content_id


def generate(tmp_path, name, *extra, count=24, workers=1):
    out = tmp_path / name
    argv = ["--count", str(count), "--output", str(out), "--seed", "7", "--shard-size", "10",
            "--workers", str(workers), "--validate", "none", "-q", *extra]
    assert pipeline.main(argv) == 0
    return out


def shard_bytes(out) -> list[bytes]:
    return [open(p, "rb").read() for p in writers.data_files(str(out))]


def records(out) -> list[dict]:
    return list(writers.read_dataset(str(out)))


def test_layout_records_and_stats(tmp_path):
    out = generate(tmp_path, "ds", "--device", "both")
    files = [os.path.basename(p) for p in writers.data_files(str(out))]
    assert files == ["train-00000-of-00003.jsonl", "train-00001-of-00003.jsonl", "train-00002-of-00003.jsonl"]
    recs = records(out)
    assert len(recs) == 24
    assert len({r["id"] for r in recs}) == 24
    for r in recs:
        assert set(FIELDS) <= set(r)
        assert r["id"] == content_id(r["python_source"])
        assert f"def {r['kernel_name']}(" in r["python_source"]
        assert "_cpu_kernel_forward(" in r["cpu_forward"] and "_cuda_kernel_forward(" in r["cuda_forward"]
        if r["metadata"]["options"].get("enable_backward", True):  # a mutant keeps its seed module's choice
            assert "_cpu_kernel_backward(" in r["cpu_backward"] and "_cuda_kernel_backward(" in r["cuda_backward"]
        else:
            assert r["cpu_backward"] is None and r["cuda_backward"] is None
        assert r["metadata"]["seed"] == 7 and r["metadata"]["warp_version"]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["count"] == 24
    assert sum(stats["per_category"].values()) == 24
    assert stats["warp_version"] == recs[0]["metadata"]["warp_version"]
    card = (out / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n")
    pattern = card.split('path: "', 1)[1].split('"', 1)[0]
    assert sorted(glob.glob(str(out / pattern))) == writers.data_files(str(out))


def test_device_selection_and_no_backward(tmp_path):
    out = generate(tmp_path, "cuda", "--device", "cuda", "--no-backward", count=5)
    for r in records(out):
        assert r["cpu_forward"] is None and r["cpu_backward"] is None and r["cpu_functions"] is None
        assert "blockIdx" in r["cuda_forward"] or "threadIdx" in r["cuda_forward"]
        assert r["cuda_backward"] is None


def test_same_records_for_one_and_two_workers(tmp_path):
    one = generate(tmp_path, "w1", count=30, workers=1)
    two = generate(tmp_path, "w2", count=30, workers=2)
    assert shard_bytes(one) == shard_bytes(two)


def test_dedup_replaces_duplicates(tmp_path):
    # a single tiny category repeats itself quickly; the run must still reach --count unique pairs
    out = generate(tmp_path, "dups", "--categories", "arithmetic", "--complexity", "small", count=40)
    recs = records(out)
    assert len(recs) == 40 and len({r["id"] for r in recs}) == 40


def test_parquet_matches_jsonl(tmp_path):
    pytest.importorskip("pyarrow")
    js = generate(tmp_path, "js", count=12)
    pq = generate(tmp_path, "pq", "--format", "parquet", count=12)
    assert [os.path.basename(p) for p in writers.data_files(str(pq))][0].endswith(".parquet")
    assert records(js) == records(pq)
    assert 'path: "data/train-*.parquet"' in (pq / "README.md").read_text()
    assert stats.summarise(stats_command.read_records(pq)) == stats.summarise(stats_command.read_records(js))


def _cmd(out, count=60, *extra):
    return [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", str(count), "--output", str(out),
            "--seed", "3", "--shard-size", "10", "--workers", "2", "--validate", "none", "-q", *extra]


def test_kill_9_then_resume(tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen(_cmd(out), start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(writers.finished_parts(str(out))) < 2 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = writers.finished_parts(str(out))
    before = {p: os.path.getmtime(writers.done_path(str(out), p)) for p in finished}
    assert not writers.data_files(str(out)) or proc.returncode == 0

    again = subprocess.run(_cmd(out, 60, "--resume"), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    for p, mtime in before.items():  # finished parts were not redone
        assert os.path.getmtime(writers.done_path(str(out), p)) == mtime
    recs = records(out)
    assert len(recs) == 60 and len({r["id"] for r in recs}) == 60
    # finished: the records are in the shards only, and a resume does nothing
    assert not list((out / ".jit-synth" / "parts").glob("*.jsonl"))
    stats = (out / "stats.json").read_bytes()
    again = subprocess.run(_cmd(out, 60, "--resume"), capture_output=True, text=True)
    assert again.returncode == 0 and (out / "stats.json").read_bytes() == stats and records(out) == recs

    clean = tmp_path / "clean"
    assert subprocess.run(_cmd(clean), capture_output=True).returncode == 0
    assert shard_bytes(out) == shard_bytes(clean)


def _tree_digest(folder) -> str:
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(folder)):
        for f in sorted(files):
            path = os.path.join(root, f)
            h.update(path.encode())
            h.update(open(path, "rb").read())
    return h.hexdigest()


@pytest.mark.parametrize("argv, message", [
    (["--count", "0"], "--count must be at least 1"),
    (["--count", "-5"], "--count must be at least 1"),
    (["--count", "ten"], "--count must be a whole number"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--device", "tpu"], "invalid choice"),
    (["--categories", "arithmetic,nonsense"], "unknown category nonsense"),
    (["--arch", "sm90"], "--arch takes"),
    (["--near-dup-threshold", "1.5"], "--near-dup-threshold must be in [0, 1]"),
    (["--near-dup-threshold", "high"], "--near-dup-threshold takes a number"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, argv, message):
    out = tmp_path / "never"
    proc = subprocess.run([sys.executable, "-m", "jit.code.synthesis.pipeline", "--output", str(out), *argv],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and message in lines[0]
    assert not out.exists()


def test_existing_dataset_is_never_modified(tmp_path):
    out = generate(tmp_path, "keep", count=5)
    digest = _tree_digest(out)
    proc = subprocess.run(_cmd(out, 5), capture_output=True, text=True)
    assert proc.returncode == 2 and "--resume" in proc.stderr and "--overwrite" in proc.stderr
    proc = subprocess.run(_cmd(out, 5, "--seed", "7", "--resume", "--complexity", "large"), capture_output=True,
                          text=True)  # the dataset's own seed: only --complexity differs
    assert proc.returncode == 2 and "other options" in proc.stderr
    assert _tree_digest(out) == digest


def test_unwritable_output(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for target in (blocker, blocker / "sub"):
        proc = subprocess.run([sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", "1",
                               "--output", str(target)], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1
    assert blocker.read_text() == "x"


def test_overwrite_refuses_foreign_folder(tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious")
    proc = subprocess.run(_cmd(foreign, 3, "--overwrite"), capture_output=True, text=True)
    assert proc.returncode == 2 and "refusing" in proc.stderr
    assert (foreign / "notes.txt").read_text() == "precious"
