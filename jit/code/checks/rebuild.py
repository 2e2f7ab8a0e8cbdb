"""Records rebuilt from their text, many to a Warp module: which records can share one.

Each record's python_source is a file of its own; in one module, two records must not define
the same top-level name, and one must not define a name another calls: Warp names a helper's
generated function after the helper (``velocity_at_point_1``), so a helper named like a Warp
function another record calls could meet it in one translation unit.
"""

from __future__ import annotations

import ast


def names(source: str) -> tuple[set[str], set[str]]:
    """(names a source defines at top level, names it calls): Warp names a helper's generated
    function after the helper, so a record that defines ``velocity_at_point`` and one that calls
    Warp's own ``wp.velocity_at_point`` must not share a module either."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    called = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
              for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return defined, called


def batches(records: list[dict], size: int) -> list[list[dict]]:
    """Batches of at most ``size`` records none of which defines a name another defines or calls."""
    batches: list[tuple[list[dict], set[str], set[str]]] = []
    for r in records:
        defined, called = names(r["python_source"])
        for batch, their_defined, their_names in batches:
            if len(batch) < size and not defined & their_names and not (defined | called) & their_defined:
                batch.append(r)
                their_defined |= defined
                their_names |= defined | called
                break
        else:
            batches.append(([r], set(defined), defined | called))
    return [b for b, _, _ in batches]
