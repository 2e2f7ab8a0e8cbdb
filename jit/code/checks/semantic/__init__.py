"""The semantic gate: defects a Warp reviewer sees in a kernel's Python source, found with `ast`.

``defects(source)`` reads every ``@wp.kernel`` and ``@wp.func`` of a module source and reports
code that compiles and runs but that no one would write on purpose:

- algebra that does nothing: ``x - x``, ``wp.max(v, v)`` (self-operation); ``x * 1.0``,
  ``x + 0.0``, ``wp.identity(n=3, dtype=float) * v`` (identity); ``wp.normalize(wp.normalize(v))``,
  ``-(-x)`` (double application); ``wp.select(c, a, a)``, ``a if c else a``,
  ``wp.clamp(x, a, a)`` (equal operands);
- a math builtin called on literals only, recomputed by every thread (per-thread constant);
  constructors, casts and literal arithmetic such as ``2.0 * wp.pi`` are fine;
- a value computed and never used, or overwritten before it is read (unused value);
- an element stored on every iteration of a loop, so only the last store counts
  (overwritten store);
- a parameter never read, or read only by tests whose branches do the same thing
  (parameter gates nothing);
- a kernel that reads its inputs but writes nothing that depends on them (output ignores
  inputs), or that writes nothing at all (no output). Fill kernels such as ``out[i] = 0.0``
  read nothing and pass.

Calibrated on Warp's own kernels, it lets pass what real code does on purpose: ``i * 3 + 0``
(an integer offset kept for symmetry), a scalar parameter the launch made redundant (a
``row_count`` next to the launch dimension), ``s * wp.identity(...)`` (a scaled identity), and
stubs (a body of ``pass``, ``raise`` or ``wp.tid()`` only: launch-overhead probes, abstract
helpers). It is syntactic and reads one function at a time: it leaves out full typing (a
little is inferred from annotations and constructors), module constants, what a called
``@wp.func`` does (assumed impure, with effects), and paths (a loop may run zero or more
times). When unsure it says nothing. The analysis is pure stdlib and never imports Warp; the
only import from the rest of the package is the registry's ``Check`` record, for ``CHECK``.
"""

from __future__ import annotations

import ast

from jit.code.checks.base import TEXT, Batch, Check
from jit.code.checks.semantic.algebra import _algebra
from jit.code.checks.semantic.dataflow import _idle_parameters, _overwritten_stores, _unused_values
from jit.code.checks.semantic.outputs import _output_defects
from jit.code.checks.semantic.reading import Defect, _Function, is_stub, role_of

RULES = (_algebra, _unused_values, _overwritten_stores, _idle_parameters, _output_defects)


def defects(source: str) -> list[Defect]:
    """Every defect of every ``@wp.kernel`` and ``@wp.func`` in ``source``, in line order.
    Raises ``SyntaxError`` when the source does not parse."""
    found: list[Defect] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (role := role_of(node)) and not is_stub(node):
            f = _Function(node, role)
            for rule in RULES:
                found += rule(f)
    return sorted(set(found), key=lambda d: (d.line, d.kind, d.detail))


def semantic_check(run, batch: Batch) -> dict[str, str]:
    """{key: reason} for the records with a defect; the reason is the first defect's kind, a
    short stable string, so the run's stats count kinds rather than kernels."""
    failed = {}
    for key, record in batch.records.items():
        source = record["python_source"] if isinstance(record, dict) else record.python_source
        try:
            found = defects(source)
        except (SyntaxError, ValueError):
            failed[key] = "semantic: python_source does not parse"
            continue
        except RecursionError:
            failed[key] = "semantic: expressions nested too deep to read"
            continue
        if found:
            failed[key] = f"semantic: {found[0].kind}"
    return failed


CHECK = Check("semantic", TEXT, "no code a reviewer rejects on sight: x - x, x * 1.0, unused values, "
              "constants computed per thread, parameters that gate nothing, outputs that ignore inputs",
              semantic_check)
