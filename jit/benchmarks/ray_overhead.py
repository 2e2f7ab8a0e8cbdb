"""Ray's overhead against the local executor: the same codegen-only run, timed both ways.

Runs ``python -m jit.code.synthesis.pipeline --validate none`` with ``--executor local`` and then
``--executor ray`` (a local Ray instance started by the command, so cluster start-up is included),
back to back on the same seed (``--ray-first`` swaps the order), and prints for each:

- whole command: wall time and pairs/s, from process start to exit;
- steady state: pairs/s while parts run, from the part markers (each marker's mtime is the
  part's end, minus its ``seconds`` its start; the window is earliest start to latest end), so
  interpreter start-up, cluster start-up and the final merge are left out;

then the ratios ray/local, and checks that both runs wrote byte-identical shards.

    python jit/benchmarks/ray_overhead.py                       # 20,000 pairs
    python jit/benchmarks/ray_overhead.py --count 2000 --shard-size 100

On a machine shared with other work, compare the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from jit.code.engine import writers


def run(executor: str, out: str, args) -> float:
    cmd = [sys.executable, "-m", "jit.code.synthesis.pipeline", "--count", str(args.count), "--validate", "none",
           "--device", args.device, "--seed", str(args.seed), "--shard-size", str(args.shard_size),
           "--workers", str(args.workers), "--executor", executor, "--output", out, "-q"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def steady_state(out: str) -> tuple[float, float]:
    """(pairs/s over the part window, pairs/s per busy core) from the part markers."""
    records = busy = 0.0
    starts, ends = [], []
    for path in glob.glob(os.path.join(writers.parts_dir(out), "part-*.done.json")):
        with open(path, encoding="utf-8") as f:
            marker = json.load(f)
        end = os.stat(path).st_mtime
        starts.append(end - marker["seconds"])
        ends.append(end)
        records += marker["records"]
        busy += marker["seconds"]
    return records / (max(ends) - min(starts)), records / busy


def shard_bytes(out: str) -> list[bytes]:
    return [open(p, "rb").read() for p in writers.data_files(out)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=20_000)
    p.add_argument("--shard-size", type=int, default=1000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local workers (Ray uses all cores)")
    p.add_argument("--device", default="both", choices=("cpu", "cuda", "both"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ray-first", action="store_true", help="run ray before local (to check the order does not matter)")
    p.add_argument("--keep", default=None, help="folder to keep the two datasets in (default: a temporary one)")
    args = p.parse_args(argv)

    base = args.keep or tempfile.mkdtemp(prefix="ray_overhead_")
    rows = {}
    for executor in ("ray", "local") if args.ray_first else ("local", "ray"):
        out = os.path.join(base, executor)
        wall = run(executor, out, args)
        window, per_core = steady_state(out)
        rows[executor] = (wall, args.count / wall, window, per_core)
        print(f"{executor:5s}  whole command {wall:8.1f} s  {args.count / wall:7.2f} pairs/s   "
              f"steady state {window:7.2f} pairs/s   per busy core {per_core:6.2f} pairs/s", flush=True)
    (lw, _, ls, lc), (rw, _, rs, rc) = rows["local"], rows["ray"]
    same = shard_bytes(os.path.join(base, "local")) == shard_bytes(os.path.join(base, "ray"))
    print(f"ray/local  whole-command time {rw / lw:.3f}x (target <= 1.30)   steady pairs/s {rs / ls:.3f}x "
          f"(target >= 0.85)   per core {rc / lc:.3f}x   identical shards: {same}")
    size = sum(os.path.getsize(f) for f in writers.data_files(os.path.join(base, "local")))
    print(f"dataset: {size / args.count / 1024:.1f} KiB per record ({args.device}, codegen only); kept in {base}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
