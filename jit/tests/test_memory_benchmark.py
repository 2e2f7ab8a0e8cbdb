"""``jit/benchmarks/memory.py``: summed PSS of a process tree, checked on a tree of known sizes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux /proc")

# a driver holding 100 MiB that forks two workers; each writes 60 MiB of its own, then all wait
PROGRAM = textwrap.dedent('''\
    import os, time
    held = bytearray(100 * 2**20)
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            own = bytearray(60 * 2**20)
            for i in range(0, len(own), 4096):
                own[i] = 1
            time.sleep(2.5)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
''')


def load_memory_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "memory.py"
    spec = importlib.util.spec_from_file_location("jit_memory_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_summed_pss_counts_shared_pages_once_and_each_workers_own():
    memory = load_memory_module()
    figures = memory.sample_tree(subprocess.Popen([sys.executable, "-c", PROGRAM]), interval=0.1, marks=(1.5,))
    assert figures.returncode == 0 and figures.workers_seen == 2
    # 100 MiB shared by three processes counts once, each worker's 60 MiB once: about 220 MiB plus interpreters
    assert 215 <= figures.peak_pss <= 300, figures.lines()
    assert 58 <= figures.worker_peak_private <= 75, figures.lines()
    # a worker's PSS: its own 60 MiB and a third of the driver's 100 MiB
    assert 85 <= figures.worker_peak_pss <= 120, figures.lines()
