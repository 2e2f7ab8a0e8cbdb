"""Run work parts as Ray tasks: the same parts, hence the same records, as the local executor.

Each ``Part`` becomes one task (1 CPU) that calls the source's ``run_part`` on a Ray worker.
The task writes its part and completion marker straight into ``spec.out``, so the output folder
must be on storage every node sees (NFS, a shared volume, a FUSE mount): the driver never
carries records, only per-part stats. Parts are fixed index ranges, and the merge's stages
(``merge``) run as Ray tasks too (``run_tasks``), deciding by part order only, so where a task ran
does not change the result.

A task that raises or loses its worker or node is retried up to ``MAX_RETRIES`` times; a part
that still fails is reported as ``ShardFailed`` with its index range once the other parts have
settled, so a rerun with ``--resume`` has only the failed parts left to do.

Every node needs the package installed (``pip install 'warp-jit-synth[ray]'``): tasks import
``jit`` by name. What this module leaves out: starting or sizing clusters (Ray's job), and
anything about what goes into a part (the source).
"""

from __future__ import annotations

import logging

from jit.code.engine import plan as bg

MAX_RETRIES = 3
POLL_SECONDS = 0.5


class ClusterError(Exception):
    """The cluster could not do the work; finished parts are kept for --resume."""


class ShardFailed(ClusterError):
    """Parts that failed on the cluster after their retries: ``[(part, reason)]``."""

    def __init__(self, failures: list[tuple[bg.Part, str]]):
        self.failures = sorted(failures, key=lambda f: f[0].number)
        ranges = ", ".join(f"{p.number} (indices {p.start}-{p.stop - 1})" for p, _ in self.failures[:5])
        more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        word = "part" if len(self.failures) == 1 else "parts"
        super().__init__(f"{word} {ranges}{more} failed after {MAX_RETRIES} retries: "
                         f"{self.failures[0][1]}; finished parts are kept, rerun with --resume")


def connect(address: str | None) -> bool:
    """Join the cluster at ``address``, else RAY_ADDRESS or a running one, else start a local one.

    A driver that is already connected (a notebook, a test) is used as it is, whatever
    ``address`` says. Returns True when this call connected (and so the caller should disconnect).
    """
    import ray

    if ray.is_initialized():
        return False
    _check_reachable(address)
    # ray.init(None) looks at RAY_ADDRESS, then a cluster started with `ray start` on this
    # machine, and only then starts a local instance.
    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             configure_logging=True)
    return True


def _check_reachable(address: str | None) -> None:
    """Fail fast on a ``host:port`` nobody listens on (ray.init would retry for minutes)."""
    import socket

    host, _, port = (address or "").rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


class _Tally:
    """Actor on the driver's node: each part's latest pair and reject counts.

    Keeping the largest count seen per part means a retried part is not counted twice.
    """

    def __init__(self):
        self.parts: dict[int, tuple[int, int]] = {}

    def report(self, part: int, pairs: int, rejects: int) -> None:
        old = self.parts.get(part, (0, 0))
        self.parts[part] = (max(old[0], pairs), max(old[1], rejects))

    def totals(self) -> tuple[int, int]:
        return sum(p for p, _ in self.parts.values()), sum(r for _, r in self.parts.values())


class _Sink:
    """The progress object ``run_part`` calls on the worker: forwards running totals to the tally."""

    def __init__(self, tally, part: int):
        self.tally, self.part = tally, part
        self.pairs = self.rejects = 0

    def put(self, item: tuple[int, int]) -> None:
        self.pairs += item[0]
        self.rejects += item[1]
        self.tally.report.remote(self.part, self.pairs, self.rejects)  # fire and forget


def _task(spec: bg.RunSpec, part: bg.Part, tally) -> dict:
    return spec.source.run_part(spec, part, _Sink(tally, part.number)).to_dict()


def _start_tally():
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # pinned to the driver's node so losing a worker node never loses the progress counts
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return ray.remote(num_cpus=0)(_Tally).options(scheduling_strategy=here).remote()


def run_parts(spec: bg.RunSpec, parts: list[bg.Part], address: str | None, on_progress) -> list[dict]:
    """Run ``parts`` as Ray tasks; per-part stats sorted by part, as ``engine.run_parts``.

    ``on_progress(pairs, rejects)`` gets increments while the tasks run. Raises ``ShardFailed``
    when parts still fail after their retries (after the other parts have finished).
    """
    if not parts:
        return []
    import ray

    connected = connect(address)
    tally = None
    try:
        tally = _start_tally()
        # a source of real code imports it: such a part gets a worker process of its own
        fresh = getattr(spec.source, "fresh_process", False)
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=True, max_calls=1 if fresh else 0)(_task)
        pending = {task.remote(spec, p, tally): p for p in parts}
        return _collect(pending, tally, on_progress)
    finally:
        if connected:
            ray.shutdown()
            spec.source.cleanup()  # local workers end without cleaning up; remote nodes sweep on their next run
        elif tally is not None:
            ray.kill(tally)  # the driver stays connected (a notebook, a test): free the actor's process


def _collect(pending: dict, tally, on_progress) -> list[dict]:
    import ray

    results, failures = [], []
    shown = [0, 0]

    def show(totals):
        on_progress(totals[0] - shown[0], totals[1] - shown[1])
        shown[:] = totals

    while pending:
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=POLL_SECONDS)
        for ref in ready:
            part = pending.pop(ref)
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as exc:
                failures.append((part, _reason(exc)))
        try:
            show(ray.get(tally.totals.remote(), timeout=10))
        except ray.exceptions.RayError:
            pass  # progress is advisory; results come from the tasks themselves
    done = sum(r["records"] for r in results)
    if done > shown[0]:
        show([done, shown[1]])
    if failures:
        raise ShardFailed(failures)
    return sorted(results, key=lambda r: r["part"])


def run_tasks(fn, arguments: list[tuple]) -> list:
    """``fn(*args)`` for every ``args`` as Ray tasks (1 CPU, retried); results in the given order.

    The merge's stages use it on the cluster the run is connected to. A task that still fails
    raises ``ClusterError``; the stages' finished outputs are files, kept for ``--resume``.
    """
    import ray

    task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=True)(fn)
    refs = [task.remote(*args) for args in arguments]
    try:
        return ray.get(refs)
    except ray.exceptions.RayError as exc:
        raise ClusterError(f"merge stage {fn.__name__} failed after {MAX_RETRIES} retries: {_reason(exc)}; "
                           "finished stage outputs are kept, rerun with --resume") from None


def _reason(exc: Exception) -> str:
    """One line: the original exception of a task error, else Ray's error type and first line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}".rstrip(": ")
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
