"""Calls with a time bound in forked children: results, errors, timeouts, and the calls after one."""

from __future__ import annotations

import os
import time

from jit.code.checks.bounded import TIMEOUT, run_bounded


def test_results_errors_and_a_timeout_in_order():
    parent = os.getpid()
    calls = [lambda: 6 * 7, lambda: 1 / 0, lambda: time.sleep(60), lambda: os.getpid(), lambda: [1] * 3]
    t0 = time.monotonic()
    results = run_bounded(calls, 1.0)
    assert time.monotonic() - t0 < 20
    assert results[0] == ("ok", 42)
    assert results[1] == ("error", "ZeroDivisionError")
    assert results[2] == (TIMEOUT, None)
    status, pid = results[3]
    assert status == "ok" and pid != parent  # ran in a child, after the timed-out one was killed
    assert results[4] == ("ok", [1, 1, 1])


def test_a_child_that_dies_is_reported_and_the_rest_run():
    results = run_bounded([lambda: os._exit(3), lambda: "after"], 5.0)
    assert results == [("error", "child process died"), ("ok", "after")]
