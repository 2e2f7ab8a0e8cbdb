"""Run untrusted code in a forked child bounded in time, memory and file size, in a scratch folder.

A prediction is code a model wrote: its Python is executed when Warp builds it, and its C++ is
compiled and called. ``contained(call, ...)`` forks; the child limits itself
(``resource.setrlimit``: address space a budget above what it inherited, CPU seconds, the size
of any file it writes, no core dump), moves into a fresh scratch folder that is also its
``TMPDIR`` and Warp's kernel cache, runs ``call()`` and sends back its result through a pipe.
The parent waits at most ``seconds``, kills the child past that, and removes the scratch folder
whatever happened. A hang, a crash (a segfault in compiled code, ``os._exit``) or an exception
comes back as an ``Outcome`` with a status, never as an exception in the caller; the caller
hands the child only what it may see (the inputs, never the reference outputs).

Compiling Warp's C++ starts with a precompiled header of Warp's own headers (about 3 s; the
module itself then takes a fraction of a second). ``Headers`` keeps the ones the evaluating
process built, from Warp's headers and no prediction's code, and ``contained(..., headers=)``
copies them into each child's own folder; since a child can write outside its scratch folder,
the kept files are checked by content after every child, and one that changed or appeared is
removed. Nothing a prediction compiled is ever kept for another.

What it leaves out: isolation from the file system outside the scratch folder (no chroot or
namespace: a prediction that writes to an absolute path elsewhere can), and the network. Where
``os.fork`` does not exist, ``contained`` refuses to run untrusted code.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import resource
import select
import shutil
import signal
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SECONDS = 60.0
MEMORY_BYTES = 16 << 30  # address space on top of what the child inherits (NVRTC maps gigabytes)
FILE_BYTES = 256 << 20
_HEADER = struct.Struct("!Q")


@dataclass(slots=True)
class Outcome:
    status: str  # "ok", "error" (the call raised), "timeout", "crashed"
    value: Any = None  # the call's result when ok
    error: str | None = None  # what went wrong, in one short text


class Headers:
    """Precompiled headers this process built, given to children by copy and checked after each."""

    def __init__(self, folder: str):
        self.folder = folder
        self.digests = self._digests()

    def _digests(self) -> dict[str, str]:
        out = {}
        for name in sorted(os.listdir(self.folder)):
            with open(os.path.join(self.folder, name), "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        return out

    def copy_into(self, folder: str) -> None:
        for name in self.digests:
            shutil.copyfile(os.path.join(self.folder, name), os.path.join(folder, name))

    def check(self) -> list[str]:
        """Remove the files a child changed or added; their names."""
        now = self._digests() if os.path.isdir(self.folder) else {}
        bad = [n for n, d in now.items() if self.digests.get(n) != d]
        for name in bad:
            os.remove(os.path.join(self.folder, name))
        self.digests = {n: d for n, d in self.digests.items() if now.get(n) == d}
        return bad


def contained(call: Callable[[], Any], seconds: float = SECONDS, memory: int = MEMORY_BYTES,
              scratch_parent: str | None = None, headers: Headers | None = None) -> Outcome:
    """``call()`` in a bounded child; its result must pickle (keep it small)."""
    if not hasattr(os, "fork"):
        raise RuntimeError("untrusted predictions need os.fork (Linux or macOS)")
    scratch = tempfile.mkdtemp(prefix="jit-eval-", dir=scratch_parent)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        os.close(read_fd)
        try:
            _limit(seconds, memory, scratch, headers)
            try:
                message = ("ok", call(), None)
            except BaseException as exc:  # noqa: BLE001  whatever the prediction raises is its failure
                said = str(exc).replace(scratch + os.sep, "").strip()  # paths relative to the scratch folder
                message = ("error", None, f"{type(exc).__name__}: {said[:4000]}")
            _send(write_fd, message)
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        return _wait(pid, read_fd, seconds)
    finally:
        os.close(read_fd)
        shutil.rmtree(scratch, ignore_errors=True)
        if headers is not None:
            headers.check()


def _limit(seconds: float, memory: int, scratch: str, headers: Headers | None = None) -> None:
    import faulthandler

    faulthandler.disable()  # a prediction's crash is a result, not a traceback on the terminal
    os.setsid()  # its own process group: a killed child takes whatever it started with it
    used = _address_space()
    for limit, value in ((resource.RLIMIT_AS, used + memory), (resource.RLIMIT_CPU, int(seconds) + 1),
                         (resource.RLIMIT_FSIZE, FILE_BYTES), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(limit)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(limit, (value, hard))
    os.chdir(scratch)
    os.environ["TMPDIR"] = os.environ["TMP"] = os.environ["TEMP"] = scratch
    tempfile.tempdir = scratch
    import warp as wp

    wp.config.kernel_cache_dir = os.path.join(scratch, "kernels")
    if headers is not None:
        from jit.code.extraction import warp_backend as wb

        headers.copy_into(wb.pch_folder())  # the child's own folder, in its scratch folder


def _address_space() -> int:
    """The process's virtual memory size (VmSize) in bytes; 0 when /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _wait(pid: int, fd: int, seconds: float) -> Outcome:
    deadline = time.monotonic() + seconds
    data = b""
    try:
        while not _complete(data):
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                return Outcome("timeout", error=f"no result within {seconds:g} s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        _kill(pid)  # the child's whole group: whatever it started goes too
        _, status = os.waitpid(pid, 0)
    if _complete(data):
        status_, value, error = pickle.loads(data[_HEADER.size:])
        return Outcome(status_, value, error)
    how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit status {os.waitstatus_to_exitcode(status)}"
    return Outcome("crashed", error=f"the process ended without a result ({how})")


def _complete(data: bytes) -> bool:
    return len(data) >= _HEADER.size and len(data) >= _HEADER.size + _HEADER.unpack_from(data)[0]


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _send(fd: int, message: tuple) -> None:
    try:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001  a result that does not pickle is the call's failure
        data = pickle.dumps(("error", None, f"result not picklable: {type(exc).__name__}"))
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]
