"""Compile-validated pairs per second: batched validation against compiling each kernel alone.

Both sides use the same number of processes (``--workers``), so the ratio is per core.

Batched: the whole ``generate --validate compile`` command (start-up, generation, extraction,
batched CPU clang + CUDA NVRTC compiles, writing), timed end to end.

Alone: the first ``--alone-count`` kernels of the same seed, split over the same number of
processes; each kernel gets its own Warp module, built and compiled for the CPU (clang) and
CUDA (NVRTC to PTX) one module at a time, as a launch of that kernel would compile it. Each
process first compiles one small module untimed, so Warp's precompiled headers are warm (a
long-running tool pays for them once). Reported twice: with Warp's default settings (what a
launch uses: clang -O2 and NVRTC -O3, both with precompiled headers) and with the cheap
settings the pipeline validates with, so the gain from batching and the gain from the
settings can be told apart.

Also printed: the module overhead (a one-line kernel compiled alone, warm, Warp defaults),
which is all that batching can save; the rest of the alone cost is per-kernel compiler work.

    python jit/benchmarks/compile_throughput.py --count 256 --alone-count 32 --workers 2
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time

TINY = """
import warp as wp

@wp.kernel
def tiny_{n}(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * 2.0 + 1.0
"""


@contextlib.contextmanager
def scratch():
    """A folder for compiler output; on exit also NVRTC's own cache, which a pool worker never removes."""
    tmp = tempfile.mkdtemp(prefix="alone_")
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in glob.glob(os.path.join(tempfile.gettempdir(), f"__nvrtc_auto_pch_{os.getpid()}_*")):
            shutil.rmtree(d, ignore_errors=True)


def compile_alone(source: str, name: str, block_dim, cheap: bool, tmp: str) -> None:
    """Build and compile one kernel in its own module, for the CPU and then CUDA."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.compile import CHEAP

    for device in ("cpu", "cuda"):
        handle = wb.define([source], f"alone_{device}_{os.getpid()}_{time.perf_counter_ns()}")
        try:
            options = wb.resolve_options(handle.module, device, block_dim)
            source_code = wb.Build(handle.module, [handle.namespace[name]], options, device).module_source(device)
            flags, opt = dict(options), None
            if cheap:
                flags["mode"], opt = CHEAP[device]
                flags["use_precompiled_headers"] = device == "cpu"
            out = os.path.join(tmp, f"k{time.perf_counter_ns()}" + (".o" if device == "cpu" else ".ptx"))
            wb.compile_source(source_code, device, out, flags, optimization_level=opt)
        finally:
            handle.release()


def alone_worker(job) -> float:
    """Seconds for this process's share of kernels (after an untimed warm-up)."""
    seed, indices, complexity, cheap = job
    from jit.code.extraction import warp_backend as wb
    from jit.code.synthesis.generator import generate

    wb.init()
    specs = [generate(seed, i, complexity=complexity) for i in indices]
    with scratch() as tmp:
        compile_alone(TINY.format(n=0), "tiny_0", None, cheap, tmp)
        t0 = time.perf_counter()
        for spec in specs:
            compile_alone(spec.source, spec.name, spec.metadata.get("launch", {}).get("block_dim"), cheap, tmp)
        return time.perf_counter() - t0


def module_overhead() -> float:
    """Seconds to compile a one-line kernel alone for CPU + CUDA, warm, Warp's defaults."""
    from jit.code.extraction import warp_backend as wb

    wb.init()
    with scratch() as tmp:
        compile_alone(TINY.format(n=1), "tiny_1", None, False, tmp)
        times = []
        for n in range(2, 5):
            t0 = time.perf_counter()
            compile_alone(TINY.format(n=n), f"tiny_{n}", None, False, tmp)
            times.append(time.perf_counter() - t0)
        return min(times)


def pool_context():
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def alone(seed: int, count: int, workers: int, complexity: str, cheap: bool) -> float:
    """Wall seconds for ``count`` kernels compiled alone, over ``workers`` processes."""
    shares = [list(range(w, count, workers)) for w in range(workers)]
    with pool_context().Pool(workers, maxtasksperchild=1) as pool:  # the shares run side by side: the slowest is the wall time
        return max(pool.map(alone_worker, [(seed, s, complexity, cheap) for s in shares if s], chunksize=1))


def batched(seed: int, count: int, workers: int, complexity: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", str(count), "--seed", str(seed),
               "--output", os.path.join(tmp, "ds"), "--device", "both", "--workers", str(workers),
               "--validate", "compile", "--complexity", complexity, "-q"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=256, help="pairs for the batched pipeline")
    p.add_argument("--alone-count", type=int, default=32, help="kernels compiled alone (rates are per pair)")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--complexity", default="mixed", choices=("small", "medium", "large", "mixed"))
    args = p.parse_args(argv)

    b = batched(args.seed, args.count, args.workers, args.complexity)
    rate_b = args.count / b
    print(f"machine: {os.cpu_count()} cores; {args.workers} processes on each side; devices cpu+cuda "
          f"(NVRTC PTX sm_90), forward+backward; complexity {args.complexity}", flush=True)
    print(f"batched pipeline, whole command: {args.count} pairs in {b:.1f} s = {rate_b:.2f} pairs/s", flush=True)
    for label, cheap in (("Warp default settings", False), ("cheap settings", True)):
        seconds = alone(args.seed, args.alone_count, args.workers, args.complexity, cheap)
        rate = args.alone_count / seconds
        print(f"each kernel alone, {label}: {args.alone_count} pairs in {seconds:.1f} s = {rate:.3f} pairs/s"
              f" -> batched is {rate_b / rate:.1f}x faster per pair", flush=True)
    with pool_context().Pool(1) as pool:
        overhead = pool.apply(module_overhead)
    print(f"module overhead (one-line kernel alone, warm, Warp defaults, cpu+cuda): {overhead:.2f} s per kernel; "
          f"batched costs {args.workers / rate_b:.2f} core-seconds per pair")
    from jit.code.extraction import warp_backend as wb

    wb.sweep_pch_folders()  # the pools' workers were stopped, not ended
    return 0


if __name__ == "__main__":
    sys.exit(main())
