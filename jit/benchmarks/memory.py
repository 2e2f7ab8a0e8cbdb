"""Memory of a whole run: the summed PSS of a command and every process it starts, sampled.

A run of ``jit-synth generate --workers N`` is a driver and N worker processes (replaced now
and then). The driver's maximum RSS misses the workers, and summing RSS counts the pages they
share after ``fork`` once per process. PSS (proportional set size, from
``/proc/PID/smaps_rollup``) charges each shared page to its sharers in equal parts, so the PSS
of all the processes of a run adds up to the memory the run really holds.

Every ``--interval`` seconds this finds the command's process tree (``/proc/*/stat``, parent
ids), reads each process's PSS and private dirty memory, and reports:

- the peak of the summed PSS (and when), its mean over the run, and the summed PSS at 25, 50
  and 75% of the run;
- the peak PSS of the driver and of any one worker (the driver's children), and the peak of a
  worker's private dirty memory (pages no other process shares: what a worker added or
  copied on write after the fork);
- the peak PSS of any one process further down (a worker's children, such as the short-lived
  processes that compile MathDx LTO code for tile kernels), and how many there were;
- each worker's PSS and private dirty memory at the ``--at`` marks (seconds after the start).

    python jit/benchmarks/memory.py -- jit-synth generate --count 3000 --seed 7 \\
        --validate none --workers 2 --output /tmp/m3k -q
    python jit/benchmarks/memory.py --json mem.json --series samples.jsonl --at 60 -- jit-synth generate ...

As a library: ``sample_tree(subprocess.Popen(cmd)) -> Figures`` (it waits for the command).
What it leaves out: memory outside the tree (a Ray cluster's raylets and workers are not
children of the driver), and peaks shorter than the interval. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

MIB = 1024 * 1024
FIELDS = ("Rss", "Pss", "Pss_Anon", "Private_Dirty", "AnonHugePages")


def children_map() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process visible now."""
    out: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces
        out.setdefault(ppid, []).append(int(name))
    return out


def tree(root: int) -> dict[int, int]:
    """pid -> depth below ``root`` (0 for root) of root and all its descendants."""
    kids = children_map()
    found, todo = {root: 0}, [root]
    while todo:
        pid = todo.pop()
        for child in kids.get(pid, ()):
            if child not in found:
                found[child] = found[pid] + 1
                todo.append(child)
    return found


def rollup(pid: int) -> dict[str, int] | None:
    """Bytes of ``FIELDS`` from /proc/PID/smaps_rollup (None when the process is gone)."""
    values = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in FIELDS:
                    values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        return None
    return values if "Pss" in values else None


@dataclass(slots=True)
class Sample:
    t: float  # seconds since the start
    pss: int  # summed over the tree, bytes
    processes: dict[int, tuple[str, int, int]]  # pid -> (role, pss, private dirty)
    detail: dict[int, dict[str, int]]  # pid -> bytes of each of FIELDS

    def to_dict(self) -> dict:
        return {"t": round(self.t, 2), "pss": self.pss,
                "processes": {pid: {"role": role, **self.detail[pid]} for pid, (role, _, _) in self.processes.items()}}


@dataclass(slots=True)
class Figures:
    """What ``sample_tree`` saw; sizes in MiB."""

    seconds: float = 0.0
    samples: int = 0
    returncode: int | None = None
    peak_pss: float = 0.0  # summed over every process of the run
    peak_at: float = 0.0  # seconds after the start
    mean_pss: float = 0.0  # summed PSS averaged over the samples: memory held, not only touched
    pss_at: dict[str, float] = field(default_factory=dict)  # "25%" -> summed PSS at that share of the run
    driver_peak_pss: float = 0.0
    worker_peak_pss: float = 0.0  # the largest PSS any one worker reached
    worker_peak_private: float = 0.0  # the largest private dirty memory any one worker reached
    workers_seen: int = 0  # worker processes over the run (the pool replaces them)
    other_peak_pss: float = 0.0  # the largest PSS of any one process below the workers (e.g. an LTO compile)
    others_seen: int = 0  # processes below the workers over the run
    max_processes: int = 0  # most processes alive at once
    marks: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # "60s" -> {"pss": [...], "private": [...]}

    def to_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        at = ", ".join(f"{k} {v:.0f}" for k, v in self.pss_at.items())
        out = [f"run: {self.seconds:.1f} s, {self.samples} samples, exit {self.returncode}, "
               f"{self.workers_seen} worker processes, at most {self.max_processes} processes at once",
               f"peak summed PSS: {self.peak_pss:.0f} MiB at {self.peak_at:.0f} s; mean {self.mean_pss:.0f} MiB "
               f"(at {at} MiB)",
               f"driver peak PSS: {self.driver_peak_pss:.0f} MiB; worker peak PSS: {self.worker_peak_pss:.0f} MiB, "
               f"worker peak private dirty: {self.worker_peak_private:.0f} MiB"]
        if self.others_seen:
            out.append(f"{self.others_seen} processes below the workers (e.g. LTO compiles), "
                       f"peak PSS of one: {self.other_peak_pss:.0f} MiB")
        for mark, per in self.marks.items():
            pss = ", ".join(f"{v:.0f}" for v in per["pss"])
            private = ", ".join(f"{v:.0f}" for v in per["private"])
            out.append(f"workers at {mark}: PSS {pss} MiB; private dirty {private} MiB")
        return out


def sample(root: int, t: float) -> Sample:
    """One sample of the tree: role is driver (the root), worker (its children) or other (deeper)."""
    processes, detail = {}, {}
    for pid, depth in tree(root).items():
        values = rollup(pid)
        if values is not None:
            role = "driver" if depth == 0 else "worker" if depth == 1 else "other"
            processes[pid] = (role, values["Pss"], values.get("Private_Dirty", 0))
            detail[pid] = values
    return Sample(t, sum(p[1] for p in processes.values()), processes, detail)


def sample_tree(popen: subprocess.Popen, interval: float = 0.5, marks: tuple[float, ...] = (60.0,),
                on_sample=None) -> Figures:
    """Sample ``popen``'s process tree until it exits; ``on_sample(Sample)`` sees every sample."""
    t0 = time.perf_counter()
    series: list[Sample] = []
    while popen.poll() is None:
        s = sample(popen.pid, time.perf_counter() - t0)
        if s.processes:
            series.append(s)
            if on_sample is not None:
                on_sample(s)
        time.sleep(max(0.0, interval - (time.perf_counter() - t0 - s.t)))
    return summarise(series, time.perf_counter() - t0, popen.returncode, marks)


def summarise(series: list[Sample], seconds: float, returncode: int | None, marks=(60.0,)) -> Figures:
    fig = Figures(seconds=round(seconds, 2), samples=len(series), returncode=returncode)
    if not series:
        return fig
    peak = max(series, key=lambda s: s.pss)
    fig.peak_pss, fig.peak_at = peak.pss / MIB, round(peak.t, 1)
    fig.mean_pss = sum(s.pss for s in series) / len(series) / MIB
    for share in (0.25, 0.5, 0.75):
        near = min(series, key=lambda s: abs(s.t - share * seconds))
        fig.pss_at[f"{share:.0%}"] = round(near.pss / MIB, 1)
    workers, others = set(), set()
    for s in series:
        fig.max_processes = max(fig.max_processes, len(s.processes))
        for pid, (role, pss, private) in s.processes.items():
            if role == "driver":
                fig.driver_peak_pss = max(fig.driver_peak_pss, pss / MIB)
            elif role == "worker":
                workers.add(pid)
                fig.worker_peak_pss = max(fig.worker_peak_pss, pss / MIB)
                fig.worker_peak_private = max(fig.worker_peak_private, private / MIB)
            else:
                others.add(pid)
                fig.other_peak_pss = max(fig.other_peak_pss, pss / MIB)
    fig.workers_seen, fig.others_seen = len(workers), len(others)
    for mark in marks:
        if mark <= series[-1].t:
            near = min(series, key=lambda s: abs(s.t - mark))
            ws = [p for p in near.processes.values() if p[0] == "worker"]
            fig.marks[f"{mark:g}s"] = {"pss": [round(p[1] / MIB, 1) for p in ws],
                                       "private": [round(p[2] / MIB, 1) for p in ws]}
    for name in ("peak_pss", "mean_pss", "driver_peak_pss", "worker_peak_pss", "worker_peak_private", "other_peak_pss"):
        setattr(fig, name, round(getattr(fig, name), 1))
    return fig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    p.add_argument("--at", type=float, action="append", default=None,
                   help="also report each worker's memory this many seconds in (repeatable; default 60)")
    p.add_argument("--json", metavar="PATH", help="write the figures (and the command) as JSON")
    p.add_argument("--series", metavar="PATH", help="write every sample (each process's sizes in bytes) as JSON lines")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command to measure after --")
    series = open(args.series, "w", encoding="utf-8") if args.series else None
    write = (lambda s: series.write(json.dumps(s.to_dict()) + "\n")) if series else None
    try:
        fig = sample_tree(subprocess.Popen(command), args.interval, tuple(args.at or (60.0,)), write)
    finally:
        if series:
            series.close()
    for line in fig.lines():
        print(line)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"command": command, **fig.to_dict()}, f, indent=2)
    return fig.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
