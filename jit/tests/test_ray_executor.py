"""--executor ray: the same shards as the local executor, resume after a killed driver or a lost
node, a failing part reported with its index range, and a clear exit when Ray is missing.

No real cluster: a local Ray instance (2 CPUs) and a two-node cluster simulated on this machine
(``ray.cluster_utils.Cluster``). Runs are codegen-only CPU forward code to keep them short.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from jit.code.commands import generate
from jit.code.synthesis import pipeline
from jit.code.engine import writers
from test_pipeline import shard_bytes

COUNT, SHARD = 30, 10
PARTS = COUNT // SHARD


def argv(out, *extra) -> list[str]:
    return ["--count", str(COUNT), "--shard-size", str(SHARD), "--seed", "5", "--validate", "none",
            "--device", "cpu", "--no-backward", "-q", "--output", str(out), *extra]


def cli(out, *extra) -> list[str]:
    return [sys.executable, "-m", "jit.code.synthesis.pipeline", *argv(out, *extra)]


def markers(out) -> dict[str, tuple[int, bytes]]:
    parts = writers.parts_dir(str(out))
    names = sorted(n for n in os.listdir(parts) if n.endswith(".done.json")) if os.path.isdir(parts) else []
    return {n: (os.stat(os.path.join(parts, n)).st_mtime_ns, open(os.path.join(parts, n), "rb").read()) for n in names}


def wait_for_marker(out, proc, timeout=240) -> int:
    """Poll until the first part marker exists; the number of markers seen at that moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = markers(out)
        if found:
            return len(found)
        assert proc.poll() is None, f"driver exited early: {proc.returncode}"
        time.sleep(0.05)
    pytest.fail("no part finished in time")


def assert_complete(out, expected: list[bytes]) -> None:
    ids = [r["id"] for r in writers.read_dataset(str(out))]
    assert len(ids) == COUNT and len(set(ids)) == COUNT
    assert shard_bytes(out) == expected


@pytest.fixture(scope="module")
def local_shards(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "ds"
    assert pipeline.main(argv(out, "--workers", "2")) == 0
    return shard_bytes(out)


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance with 2 CPUs, connected in this process; yields its address."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def test_ray_missing_exits_2_with_install_hint(tmp_path):
    out = tmp_path / "ds"
    code = ("import sys; sys.modules['ray'] = None\n"
            "from jit.code.synthesis import pipeline\n"
            f"sys.exit(pipeline.main({argv(out, '--executor', 'ray')!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'warp-jit-synth[ray]'" in lines[0]
    assert not out.exists()


def test_unreachable_cluster_exits_1_in_one_line(tmp_path):
    pytest.importorskip("ray")
    proc = subprocess.run(cli(tmp_path / "ds", "--executor", "ray", "--ray-address", "127.0.0.1:1"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in lines[0]


def test_node_loss_then_resume_gives_the_local_records(local_shards, tmp_path):
    """Head (1 CPU) + worker node (1 CPU); the worker node is removed while parts run on it."""
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    out = tmp_path / "ds"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        worker = cluster.add_node(num_cpus=1)
        address = cluster.address
        proc = subprocess.Popen(cli(out, "--executor", "ray", "--ray-address", address),
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert wait_for_marker(out, proc) < PARTS
            cluster.remove_node(worker)
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        # either the retries on the head finished the run, or the failure names the part range
        assert proc.returncode == 0 or (proc.returncode == 1 and re.search(r"part \d+ \(indices \d+-\d+\)", err)), err
        resumed = subprocess.run(cli(out, "--executor", "ray", "--ray-address", address, "--resume"),
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
    finally:
        cluster.shutdown()
    assert_complete(out, local_shards)


def test_ray_gives_the_same_shards_as_local(local_ray, local_shards, tmp_path):
    out = tmp_path / "ds"
    assert pipeline.main(argv(out, "--executor", "ray")) == 0
    assert_complete(out, local_shards)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["count"] == COUNT and sum(stats["per_category"].values()) == COUNT
    assert stats["resumed_parts"] == 0


def test_killed_driver_then_resume_redoes_only_unfinished_parts(local_ray, local_shards, tmp_path):
    out = tmp_path / "ds"
    proc = subprocess.Popen(cli(out, "--executor", "ray", "--ray-address", local_ray), start_new_session=True)
    try:
        assert wait_for_marker(out, proc) < PARTS  # killed mid-run
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    before = markers(out)
    assert pipeline.main(argv(out, "--executor", "ray", "--resume")) == 0
    assert_complete(out, local_shards)
    after = markers(out)
    assert all(after[name] == before[name] for name in before)  # finished parts were not redone
    assert json.loads((out / "stats.json").read_text())["resumed_parts"] >= len(before)


def test_failing_part_is_retried_then_reported_with_its_range(local_ray, tmp_path, capsys):
    out = tmp_path / "ds"
    # part 1 can never be written: its file name is taken by a folder
    os.makedirs(os.path.join(writers.parts_dir(str(out)), "part-00001.jsonl"))
    os.makedirs(os.path.join(out, writers.WORK), exist_ok=True)
    writers.write_json(os.path.join(out, writers.WORK, "run.json"), {"identity": _identity(out)})
    assert pipeline.main(argv(out, "--executor", "ray", "--resume")) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"part 1 (indices {SHARD}-{2 * SHARD - 1}) failed after 3 retries" in err[0]
    finished = sorted(markers(out))
    assert finished == [f"part-{p:05d}.done.json" for p in range(PARTS) if p != 1]  # the others finished
    assert not (out / "data").exists()


def _identity(out) -> dict:
    from jit.code.commands.common import OneLineParser

    parser = OneLineParser()
    generate.add_arguments(parser)
    return generate.make_spec(parser.parse_args(argv(out))).identity()
