"""Compile-validated pairs per second: batched validation against compiling each kernel alone.

Batched: the whole `generate --validate compile` command (start-up, generation, extraction,
batched CPU clang + CUDA NVRTC compiles, writing), timed end to end.

Alone: the first --alone-count kernels of the same seed, each in its own Warp module, built
and compiled for the CPU (clang) and CUDA (NVRTC to PTX) one module at a time, as a launch of
each kernel would compile it. Reported twice: with Warp's default compiler settings (what a
launch uses) and with the same cheap settings the pipeline validates with, so the gain from
batching and the gain from the settings can be told apart.

    python jit/benchmarks/compile_throughput.py --count 400 --alone-count 40 --workers 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def alone(seed: int, count: int, cheap: bool) -> float:
    """Seconds to build and compile ``count`` kernels, one module per kernel per device."""
    from jit.code.extraction import warp_backend as wb
    from jit.code.extraction.compile import CHEAP
    from jit.code.synthesis.generator import generate

    wb.init()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(count):
            spec = generate(seed, index)
            block_dim = spec.metadata.get("launch", {}).get("block_dim")
            for device in ("cpu", "cuda"):
                handle = wb.define([spec.source], f"alone_{cheap}_{index}_{device}")
                try:
                    options = wb.resolve_options(handle.module, device, block_dim)
                    source = wb.Build(handle.module, [handle.namespace[spec.name]], options, device).module_source(device)
                    flags, opt = dict(options), None
                    if cheap:
                        flags["mode"], opt = CHEAP[device]
                    out = os.path.join(tmp, f"k{index}" + (".o" if device == "cpu" else ".ptx"))
                    wb.compile_source(source, device, out, flags,
                                      optimization_level=opt)
                finally:
                    handle.release()
    return time.perf_counter() - t0


def batched(seed: int, count: int, workers: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", str(count), "--seed", str(seed),
               "--output", os.path.join(tmp, "ds"), "--device", "both", "--workers", str(workers),
               "--validate", "compile", "--shard-size", str(max(64, -(-count // workers))), "-q"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=400, help="pairs for the batched pipeline")
    p.add_argument("--alone-count", type=int, default=40, help="kernels compiled alone (rates are per pair)")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    b = batched(args.seed, args.count, args.workers)
    a_default = alone(args.seed, args.alone_count, cheap=False)
    a_cheap = alone(args.seed, args.alone_count, cheap=True)
    rate_b = args.count / b
    print(f"machine: {os.cpu_count()} cores; devices cpu+cuda (NVRTC PTX sm_90), forward+backward")
    print(f"batched pipeline, {args.workers} workers, whole command: {args.count} pairs in {b:.1f} s = {rate_b:.2f} pairs/s")
    for label, seconds in (("Warp default settings", a_default), ("cheap settings", a_cheap)):
        rate = args.alone_count / seconds
        print(f"each kernel alone, 1 process, {label}: {args.alone_count} pairs in {seconds:.1f} s = {rate:.3f} pairs/s"
              f" -> batched is {rate_b / rate:.1f}x faster per pair")
    return 0


if __name__ == "__main__":
    sys.exit(main())
