"""The engine: one dataset folder from any source of kernels.

A run (``RunSpec``) names a *source* and what to do with its kernels: devices, validation,
near-duplicate control, exclusions, format, shard size, splits. The engine cuts the source's
work into parts (``Part``: a fixed index range of the source's items), runs the parts on worker
processes (``run_parts``) or Ray tasks (``ray_executor``), merges them in part order without
duplicates (``Merge``), writes the shards, ``stats.json`` and the card, and lets an interrupted
run continue (``--resume``). It does not know where kernels come from.

A source is a small picklable object with:

    name: str             "generate", "extract", "trace": stats.json and the card say it
    growable: bool        it can make more items when duplicates leave fewer than ``count``
    fresh_process: bool   each part runs in a new process (real code: imports change a process)
    identity() -> dict    what must match for --resume to continue a run
    size(run) -> int      items to plan (for a growable source: ``run.count``)
    warm(run) -> None     fill caches once before workers fork
    run_part(run, part, progress) -> PartStats
                          produce the part's records, in item order, into ``writers.PartWriter``
    describe() -> dict    what stats.json records about the source

The synthetic generator (``jit.code.synthesis.batch_generator.GeneratedKernels``), module
extraction (``jit.code.harvest.modules.ModuleKernels``) and tracing
(``jit.code.harvest.traced.TracedKernels``) are the sources today.

Parts are functions of the run's options only, never of the worker count, and so are their
records: any number of workers give the same dataset. When a run is finished, its parts'
records are deleted (the shards hold them); the parts' completion markers stay, and a
``--resume`` of a finished run does nothing.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from jit.code.engine import dedup

from jit.code.engine import writers
from jit.code.extraction import warp_backend as wb

WORKER_KERNELS = 1000  # a worker process is replaced after about this many slots (bounds Warp's slow growth)
PARTS_WANTED = 32  # enough parts to keep a machine's workers busy, whatever the count
MIN_PART = 64


class OutputError(Exception):
    """The output folder cannot take this run (not empty, not writable, made with other options)."""


@dataclass(slots=True)
class RunSpec:
    out: str
    count: int | None = None  # records wanted; None: every kernel the source has
    source: object = None
    devices: tuple[str, ...] = ("cpu", "cuda")
    shard_size: int = 1000
    backward: bool = True
    validate: str = "compile"
    archs: tuple[int, ...] = (wb.DEFAULT_CUDA_ARCH,)
    emit_ptx: bool = False
    fmt: str = "jsonl"
    near_dup_threshold: float = dedup.DEFAULT_THRESHOLD  # 0: keep near-duplicates
    splits: tuple[tuple[str, float], ...] | None = None  # (name, fraction); None: one train split
    exclude: str | None = None  # records near a source in this path are dropped at the merge

    def identity(self) -> dict:
        """What must match for --resume to continue a run."""
        source = self.source.identity() if self.source is not None else {}
        return {
            **source, "devices": list(self.devices), "shard_size": self.shard_size, "backward": self.backward,
            "validate": self.validate, "archs": list(self.archs), "emit_ptx": self.emit_ptx,
            "count": self.count, "format": self.fmt, "near_dup_threshold": self.near_dup_threshold,
            "splits": [list(s) for s in self.splits] if self.splits else None,
            "exclude": os.path.abspath(self.exclude) if self.exclude else None,
        }

    def near_duplicates(self) -> dedup.NearDuplicates | None:
        """A new, empty near-duplicate index at this run's threshold (None when switched off)."""
        return dedup.NearDuplicates(self.near_dup_threshold) if self.near_dup_threshold else None


@dataclass(frozen=True, slots=True)
class Part:
    number: int
    start: int
    stop: int


@dataclass(slots=True)
class PartStats:
    part: int
    start: int
    stop: int
    records: int = 0
    rejects: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    counts: dict = field(default_factory=dict)  # source-specific counts (modules imported, ...)

    def to_dict(self) -> dict:
        return {"part": self.part, "start": self.start, "stop": self.stop, "records": self.records,
                "rejects": dict(self.rejects), "seconds": self.seconds, "counts": self.counts}


def part_size(count: int, shard_size: int) -> int:
    """Slots per part: a function of the run's count and shard size only, never of the workers."""
    return min(shard_size, max(MIN_PART, -(-count // PARTS_WANTED)))


def plan(count: int, shard_size: int, size: int | None = None) -> list[Part]:
    """The parts of a run: consecutive index ranges covering ``count`` items (see ``part_size``)."""
    size = size or part_size(count, shard_size)
    return [Part(p, s, min(s + size, count)) for p, s in enumerate(range(0, count, size))]


def extend(parts: list[Part], missing: int, shard_size: int) -> list[Part]:
    """Parts that follow ``parts`` to fill ``missing`` more records (after cross-part duplicates)."""
    start, number = parts[-1].stop, parts[-1].number + 1
    more = plan(missing, shard_size)
    return [Part(number + p.number, start + p.start, start + p.stop) for p in more]


def plan_run(run: RunSpec) -> list[Part]:
    size = run.source.size(run)
    if size <= 0:
        return []
    per_part = getattr(run.source, "part_size", None)
    return plan(size, run.shard_size, per_part(run) if per_part else None)


# ---------------------------------------------------------------------------------------------
# executors


_progress_queue = None


def _init_worker(queue) -> None:
    global _progress_queue
    _progress_queue = queue


def _work(args) -> dict:
    run, part = args
    return run.source.run_part(run, part, _progress_queue).to_dict()


def run_parts(run: RunSpec, parts: list[Part], workers: int, on_progress) -> list[dict]:
    """Run parts on ``workers`` processes; ``on_progress(pairs, rejects)``.

    With one worker and a source that does not need a fresh process per part, parts run in
    this process.
    """
    if not parts:
        return []
    fresh = getattr(run.source, "fresh_process", False)
    if workers <= 1 and not fresh:
        q = _LocalQueue(on_progress)
        return [run.source.run_part(run, p, q).to_dict() for p in parts]
    fork = "fork" in mp.get_all_start_methods()
    if fresh and fork:
        return _run_fresh(run, parts, workers, on_progress)
    if fork:  # build caches once, for every forked worker
        run.source.warm(run)
    ctx = mp.get_context("fork" if fork else "spawn")
    queue = ctx.Queue()
    results = []
    per_worker = 1 if fresh else max(1, WORKER_KERNELS // max(p.stop - p.start for p in parts))
    pool = ctx.Pool(min(workers, len(parts)), initializer=_init_worker, initargs=(queue,),
                    maxtasksperchild=per_worker)
    try:
        pending = pool.imap_unordered(_work, [(run, p) for p in parts])
        remaining = len(parts)
        while remaining:
            try:
                results.append(pending.next(timeout=0.2))
                remaining -= 1
            except mp.TimeoutError:
                pass
            _drain(queue, on_progress)
        _drain(queue, on_progress)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        wb.sweep_pch_folders()  # what workers that did not exit normally left behind
    return sorted(results, key=lambda r: r["part"])


def _run_fresh(run: RunSpec, parts: list[Part], workers: int, on_progress) -> list[dict]:
    """Each part in a process of its own, forked from this (main) thread, ``workers`` at a time.

    Real code can end the process that imports it (a crash in native code, ``os._exit``): such
    a part is recorded as finished with no records and the reason, so the run goes on (a pool
    would wait for its lost result for ever).
    """
    run.source.warm(run)
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    todo, running, results = list(parts), {}, []
    try:
        while todo or running:
            while todo and len(running) < workers:
                part = todo.pop(0)
                process = ctx.Process(target=_fresh_part, args=(run, part, queue), daemon=True)
                process.start()
                running[process] = part
            time.sleep(0.05)
            _drain(queue, on_progress)
            for process in [p for p in running if not p.is_alive()]:
                part = running.pop(process)
                process.join()
                done = writers.finished_part(run.out, part.number)
                if done is None:  # the process died before writing its part
                    stats = PartStats(part.number, part.start, part.stop)
                    stats.rejects[f"worker process died (exit code {process.exitcode})"] += 1
                    writers.PartWriter(run.out, part.number).finish(stats.to_dict())
                    print(f"[jit-synth] part {part.number} (items {part.start}-{part.stop - 1}): worker process died "
                          f"(exit code {process.exitcode}); its items are skipped", file=sys.stderr, flush=True)
                    done = stats.to_dict()
                results.append(done)
        _drain(queue, on_progress)
    except BaseException:
        for process in running:
            process.terminate()
        raise
    finally:
        wb.sweep_pch_folders()
    return sorted(results, key=lambda r: r["part"])


def _fresh_part(run: RunSpec, part: Part, queue) -> None:
    _init_worker(queue)
    run.source.run_part(run, part, queue)


class _LocalQueue:
    def __init__(self, fn):
        self.fn = fn

    def put(self, item):
        self.fn(*item)


def _drain(queue, fn) -> None:
    import queue as _q

    while True:
        try:
            fn(*queue.get_nowait())
        except _q.Empty:
            return


# ---------------------------------------------------------------------------------------------
# merge


class Merge:
    """The parts of a run, in order, without duplicates across parts and without excluded records.

    A record is dropped when an earlier record has its id (``duplicates``), when it nearly
    duplicates an earlier kept record (``near_duplicates``) or when it is near a source of the
    run's exclusion set (``excluded``); parts are read in part order, so the kept records
    depend on the parts only. Signatures come from the parts' signature files (written by the
    workers) when present.
    """

    def __init__(self, run: RunSpec, exclusions=None):
        self.out = run.out
        self.near = run.near_duplicates()
        self.exclusions = exclusions
        self.parts: list[Part] = []
        self.seen: set[str] = set()
        self.kept: set[str] = set()
        self.duplicates = self.near_duplicates = self.excluded = 0

    def update(self, parts: list[Part]) -> int:
        """Read the parts of ``parts`` not read yet (it extends the last list given); returns the kept count."""
        assert parts[:len(self.parts)] == self.parts, "parts only grow at the end"
        for part in parts[len(self.parts):]:
            self._read(part)
            self.parts.append(part)
        return len(self.kept)

    def _read(self, part: Part) -> None:
        sigs = writers.read_signatures(self.out, part.number) if self.near is not None else None
        for row, record in enumerate(writers.read_part(self.out, part.number)):
            cid = record["id"]
            if cid in self.seen:
                self.duplicates += 1
                continue
            self.seen.add(cid)
            if self.exclusions is not None and self.exclusions.matches(record["python_source"]):
                self.excluded += 1
                continue
            if self.near is not None:
                sig = dedup.signature(record["python_source"]) if sigs is None else dedup.from_hashvalues(sigs[row])
                if self.near.find(sig) is not None:
                    self.near_duplicates += 1
                    continue
                self.near.add(cid, sig)
            self.kept.add(cid)

    def records(self, count: int | None = None) -> Iterator[dict]:
        """The first ``count`` kept records (all when None), in part order."""
        written: set[str] = set()
        for part in self.parts:
            for record in writers.read_part(self.out, part.number):
                if record["id"] in self.kept and record["id"] not in written:
                    written.add(record["id"])
                    yield record
                    if count is not None and len(written) == count:
                        return


# ---------------------------------------------------------------------------------------------
# the output folder


def prepare_output(run: RunSpec, resume: bool, overwrite: bool, command: str = "jit-synth") -> bool:
    """Check the output folder before any work; never touch an existing dataset unless asked.

    Returns True when ``--resume`` finds the run already finished (nothing to do).
    """
    out = run.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"--output {out} is a file; give a folder")
    existing = os.path.isdir(out) and bool(os.listdir(out))
    run_file = os.path.join(out, writers.WORK, "run.json")
    if existing and not (resume or overwrite):
        raise OutputError(f"--output {out} is not empty; add --resume to continue it or --overwrite to replace it")
    if resume and existing:
        if not os.path.exists(run_file):
            raise OutputError(f"--resume: {out} was not made by {command} (no {writers.WORK}/run.json)")
        with open(run_file, encoding="utf-8") as f:
            previous = json.load(f)
        if previous.get("identity") != run.identity():
            raise OutputError(f"--resume: {out} was made with other options ({_diff(previous.get('identity', {}), run.identity())}); "
                             "repeat the original command or use --overwrite")
        if previous.get("finished") and os.path.exists(os.path.join(out, "stats.json")):
            return True
    ancestor = out
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise OutputError(f"--output {out} is not writable: {ancestor} is a file; give a folder")
    if not os.access(ancestor, os.W_OK):
        raise OutputError(f"--output {out} is not writable (no write permission on {ancestor})")
    if overwrite and existing:
        if not resume and not (os.path.exists(run_file) or writers.data_files(out)):
            raise OutputError(f"--overwrite: {out} does not look like a jit-synth dataset; refusing to delete it")
        import shutil

        shutil.rmtree(out)
    try:
        os.makedirs(os.path.join(out, writers.WORK), exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--output {out} is not writable: {exc.strerror}") from None
    writers.write_json(run_file, {"identity": run.identity()})
    return False


def _diff(a: dict, b: dict) -> str:
    keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in keys)


class Progress:
    """tqdm on a terminal; plain log lines every few seconds otherwise. ``total`` None: no bar length."""

    def __init__(self, total: int | None, quiet: bool):
        self.total, self.quiet = total, quiet
        self.pairs = self.rejects = 0
        self.t0 = self.last = time.perf_counter()
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="pair", dynamic_ncols=True, smoothing=0.1)

    def update(self, pairs: int, rejects: int) -> None:
        self.pairs += pairs
        self.rejects += rejects
        if self.bar is not None:
            room = pairs if self.total is None else max(0, min(pairs, self.total - self.bar.n))
            self.bar.update(room)
            self.bar.set_postfix(rejects=self.rejects, refresh=False)
        elif not self.quiet and time.perf_counter() - self.last >= 5:
            self.last = time.perf_counter()
            rate = self.pairs / max(self.last - self.t0, 1e-9)
            done = self.pairs if self.total is None else f"{min(self.pairs, self.total)}/{self.total}"
            print(f"[jit-synth] {done} pairs, {rate:.1f} pairs/s, {self.rejects} rejects", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------------------------------
# the run


def build_dataset(run: RunSpec, workers: int, quiet: bool = True, command: str = "", executor: str = "local",
                  ray_address: str | None = None) -> dict:
    """Run (or finish) a run into ``run.out``; returns the stats written to stats.json."""
    t0 = time.perf_counter()
    exclusions = load_exclusions(run.exclude) if run.exclude else None
    done = writers.finished_parts(run.out)
    resumed = sorted(done)
    parts = plan_run(run)
    progress = Progress(run.count, quiet)
    progress.update(sum(d["records"] for d in done.values()), 0)
    merge = Merge(run, exclusions)
    growable = getattr(run.source, "growable", False)
    try:
        while True:
            todo = [p for p in parts if p.number not in done]
            if executor == "ray":
                from jit.code.engine import ray_executor

                results = ray_executor.run_parts(run, todo, ray_address, progress.update)
            else:
                results = run_parts(run, todo, workers, progress.update)
            for result in results:
                done[result["part"]] = result
            unique = merge.update(parts) if parts else 0
            if not growable or run.count is None or unique >= run.count or not parts:
                break
            parts += extend(parts, run.count - unique, run.shard_size)
    finally:
        progress.close()
    splits = write_dataset(run, merge)
    seconds = time.perf_counter() - t0
    stats = summarise(run, [done[p.number] for p in parts], merge, seconds, resumed, workers, splits)
    writers.write_json(os.path.join(run.out, "stats.json"), stats)
    writers.write_card(run.out, stats, run.fmt, command, splits=list(splits))
    finish(run)
    return stats


def load_exclusions(path: str):
    from jit.code.engine import exclude

    return exclude.load_exclusions(path)


def write_dataset(run: RunSpec, merge: Merge) -> dict[str, int]:
    """The merged records as shards, one set per split; returns the records per split."""
    writers.remove_scratch(run.out)
    if not run.splits:
        n = len(merge.kept) if run.count is None else min(run.count, len(merge.kept))
        writers.write_shards(run.out, merge.records(run.count), n, run.shard_size, run.fmt)
        sizes = {"train": n}
    else:
        from jit.code.engine import splits as splitting

        seed = getattr(run.source, "seed", 0)
        assigned = splitting.assign_splits(merge.records(run.count), dict(run.splits), seed=seed)
        sizes = {}
        for name, _ in run.splits:
            n = sum(1 for s in assigned.values() if s == name)
            chosen = (r for r in merge.records(run.count) if assigned.get(r["id"]) == name)
            writers.write_shards(run.out, chosen, n, run.shard_size, run.fmt, split=name)
            sizes[name] = n
    for path in writers.data_files(run.out):  # splits of an earlier layout
        if os.path.basename(path).split("-")[0] not in sizes:
            os.remove(path)
    return sizes


def finish(run: RunSpec) -> None:
    """Mark the run finished and drop the parts' records: the shards hold them now."""
    run_file = os.path.join(run.out, writers.WORK, "run.json")
    writers.write_json(run_file, {"identity": run.identity(), "finished": True})
    writers.drop_part_records(run.out)


def summarise(run: RunSpec, part_stats: list[dict], merge: Merge, seconds: float, resumed: list[int], workers: int,
              splits: dict[str, int]) -> dict:
    from jit.code.analysis.summary import record_builtins
    from jit.code.analysis.token_stats import TokenStats
    from jit.code.analysis import realism

    per_category: Counter = Counter()
    per_source: Counter = Counter()
    licences: Counter = Counter()
    lines = Counter()
    builtins: set[str] = set()
    n = 0
    validation: Counter = Counter()
    self_contained = 0
    sample = realism.Sampler()
    tokens = TokenStats()
    for record in sample.watch(writers.read_dataset(run.out)):
        n += 1
        per_category[record["category"]] += 1
        meta = record.get("metadata", {})
        per_source[meta.get("source") or meta.get("found_by") or "random"] += 1
        if meta.get("found_by"):
            name = f"{meta.get('distribution') or '(no distribution)'} {meta.get('distribution_version') or ''}".strip()
            licences[name, meta.get("license") or "unknown"] += 1
            self_contained += bool(meta.get("self_contained"))
        lines["python"] += meta.get("python_lines", record["python_source"].count("\n") + 1)
        for d in run.devices:
            lines[f"{d}_forward"] += meta.get(f"{d}_forward_lines", (record.get(f"{d}_forward") or "").count("\n"))
        builtins.update(record_builtins(record))
        for key, value in sorted(record.get("validation", {}).items()):
            validation[f"{key}={value}"] += 1
        tokens.add(record)
    rejects: Counter = Counter()
    counts: Counter = Counter()
    for s in part_stats:
        rejects.update(s["rejects"])
        counts.update(s.get("counts", {}))
    if merge.duplicates:
        rejects["duplicate across parts"] += merge.duplicates
    if merge.near_duplicates:
        rejects["near-duplicate across parts"] += merge.near_duplicates
    new_records = sum(s["records"] for s in part_stats if s["part"] not in resumed)
    stats = {
        "count": n,
        "source": run.source.name,
        **run.source.describe(),
        "per_source": dict(sorted(per_source.items())),
        "per_category": dict(sorted(per_category.items())),
        "rejects": dict(sorted(rejects.items())),
        "mean_lines": {k: round(v / max(n, 1), 2) for k, v in sorted(lines.items())},
        "distinct_builtins": len(builtins),
        "near_duplicates": {"threshold": run.near_dup_threshold, "within_parts": rejects["near-duplicate"],
                            "across_parts": merge.near_duplicates, "shingle": dedup.SHINGLE, "num_perm": dedup.NUM_PERM},
        "excluded": {**merge.exclusions.describe(), "records": merge.excluded} if merge.exclusions is not None else None,
        "splits": splits,
        "realism": sample.figures(),
        "tokens": tokens.figures(),
        "validation": dict(sorted(validation.items())),
        "pairs_per_second": round(new_records / seconds, 2) if seconds > 0 else None,
        "seconds": round(seconds, 2),
        "workers": workers,
        "resumed_parts": len(resumed),
        "warp_version": wb.warp_version(),
        "devices": list(run.devices),
        "validate": run.validate,
        "format": run.fmt,
        "shard_size": run.shard_size,
    }
    if licences:
        stats["provenance"] = [{"distribution": name, "license": licence, "records": n}
                               for (name, licence), n in sorted(licences.items())]
        stats["self_contained"] = {"records": self_contained, "share": round(self_contained / max(n, 1), 4)}
    if counts:
        stats["source_counts"] = dict(sorted(counts.items()))
    return stats
