"""Run calls with a time bound each, in a forked child process.

A kernel launch is native code: once it loops for good (Warp's backward of some ``while``
loops does), nothing inside the process can stop it. So the calls run in a child forked from
this process (it inherits the loaded kernels, nothing is rebuilt), one after the other; the
child reports each call's start and result through a pipe. A call that runs past its bound has
the child killed; it is reported as a timeout and a new child takes the calls after it.

``os.fork`` is used directly (not ``multiprocessing``) because pool workers are daemonic and may
not start processes of their own. Calls must only touch the CPU: a CUDA context does not survive
a fork. Where fork does not exist, the calls run in this process, unbounded.
What it leaves out: what the calls do, and sending large results back (keep them small).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

_HEADER = struct.Struct("!I")

TIMEOUT = "timeout"


def run_bounded(calls: Sequence[Callable[[], Any]], seconds: float) -> list[tuple[str, Any]]:
    """``[(status, value)]`` per call: ``("ok", result)``, ``("error", exception name)`` or
    ``("timeout", None)`` for a call that ran longer than ``seconds``."""
    results: list[tuple[str, Any] | None] = [None] * len(calls)
    if not hasattr(os, "fork"):
        for i, call in enumerate(calls):
            results[i] = _call(call)
        return results  # type: ignore[return-value]
    start = 0
    while start < len(calls):
        start = _one_child(calls, start, seconds, results)
    return results  # type: ignore[return-value]


def _call(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:  # the caller decides what a failure means
        return "error", type(exc).__name__


def _one_child(calls, start: int, seconds: float, results: list) -> int:
    """Run ``calls[start:]`` in one child; the index to continue from (past a timeout, or the end)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, never return into the caller's code
        os.close(read_fd)
        status = 0
        try:
            for i in range(start, len(calls)):
                _send(write_fd, (i, None))
                _send(write_fd, (i, _call(calls[i])))
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    reader = _Messages(read_fd)
    current, deadline = start, time.monotonic() + seconds
    try:
        while True:
            message = reader.next(deadline)
            if message is _Messages.TIMED_OUT:
                results[current] = (TIMEOUT, None)
                os.kill(pid, signal.SIGKILL)
                return current + 1
            if message is _Messages.CLOSED:  # the child died (a crash in native code, say)
                if current < len(calls) and results[current] is None:
                    results[current] = ("error", "child process died")
                return current + 1
            index, result = message
            if result is None:
                current, deadline = index, time.monotonic() + seconds
            else:
                results[index] = result
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


class _Messages:
    """Length-prefixed pickles read from a pipe, with a deadline."""

    TIMED_OUT = object()
    CLOSED = object()

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def next(self, deadline: float):
        while True:
            if len(self.buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(self.buffer)
                if len(self.buffer) >= _HEADER.size + size:
                    data = self.buffer[_HEADER.size:_HEADER.size + size]
                    self.buffer = self.buffer[_HEADER.size + size:]
                    return pickle.loads(data)
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([self.fd], [], [], wait)[0]:
                return self.TIMED_OUT
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return self.CLOSED
            self.buffer += chunk
