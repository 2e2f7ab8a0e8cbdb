"""Checks: what a record must pass to enter a dataset. One file a check, one line here.

``--validate`` names checks from ``CHECKS`` (comma-separated) or one of the words users know
(``ALIASES``). Every source hands its records to ``apply`` the same way: first the checks that
read text (before anything is built), then those that compile or run kernels.
"""

from __future__ import annotations

from jit.code.checks import bounds, compile, execute, semantic
from jit.code.checks.base import LIVE, TEXT, Batch, Check  # noqa: F401  (the package's face)

CHECKS: dict[str, Check] = {c.name: c for c in (semantic.CHECK, compile.CHECK, execute.CHECK, bounds.CHECK)}

ALIASES: dict[str, tuple[str, ...]] = {
    "none": ("semantic",),  # codegen only: no compiler runs, but no record skips the semantic gate
    "compile": ("semantic", "compile"),
    "execute": ("semantic", "compile", "execute", "bounds"),
}


class UnknownCheck(ValueError):
    pass


def resolve(text: str) -> tuple[str, ...]:
    """The checks a ``--validate`` value names, in the order they run (text checks first)."""
    if text in ALIASES:
        return ALIASES[text]
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in CHECKS]
    if unknown or not names:
        raise UnknownCheck(f"unknown check {', '.join(unknown) or repr(text)}; choose from "
                           f"{', '.join(ALIASES)} or a comma-separated list of {', '.join(CHECKS)}")
    order = list(CHECKS)
    return tuple(sorted(names, key=lambda n: (CHECKS[n].needs != TEXT, order.index(n))))


def apply(run, batch: Batch, needs: str | None = None) -> dict[str, str]:
    """Run the run's checks (only those that need ``needs``, when given) on a batch, in order, each
    on the records the earlier ones kept. Returns {key: reason} for the records to drop."""
    failed: dict[str, str] = {}
    for name in run.checks or resolve(run.validate):
        check = CHECKS[name]
        if needs is not None and check.needs != needs:
            continue
        alive = batch.without(failed)
        if alive.records:
            failed.update(check.run(run, alive))
    return failed
