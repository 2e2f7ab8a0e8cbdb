"""The local executor: a run's parts on worker processes of this machine.

Parts of a source that needs a fresh process per part (real code: imports change a process)
run each in a process forked from the main thread; other sources share a pool whose workers
are replaced now and then. What it leaves out: Ray (``ray_executor``) and merging.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time

from jit.code.engine import writers
from jit.code.engine.plan import Part, PartStats, RunSpec

WORKER_KERNELS = 1000  # a worker process is replaced after about this many slots (bounds Warp's slow growth)

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
        run.source.cleanup()  # what workers that did not exit normally left behind
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
        run.source.cleanup()
    return sorted(results, key=lambda r: r["part"])


def run_tasks(fn, arguments: list[tuple], workers: int) -> list:
    """``fn(*args)`` for every ``args``, on ``workers`` forked processes; results in the given order.

    The merge's stages use it: its tasks are independent and read and write files only.
    """
    if workers <= 1 or len(arguments) <= 1 or "fork" not in mp.get_all_start_methods():
        return [fn(*args) for args in arguments]
    with mp.get_context("fork").Pool(min(workers, len(arguments))) as pool:
        return pool.starmap(fn, arguments, chunksize=1)


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
