"""How often does the semantic gate fire, on a dataset and on Warp's own kernels, and how fast?

    python jit/benchmarks/semantic_gate.py /tmp/ds            # a dataset folder (data/*.jsonl)
    python jit/benchmarks/semantic_gate.py --real-only --list  # Warp's code, every flagged kernel

For the dataset, a record is flagged when ``semantic.defects`` finds anything in its
``python_source``; shares are given per defect kind and per ``metadata.source``. For real
code, every ``@wp.kernel``/``@wp.func`` in the installed Warp package (examples and library,
not its tests) counts once, and a defect belongs to the innermost decorated function around
its line. Time is wall time of ``defects`` divided by the kernels it read. It measures, it
does not assert; ``jit/tests/test_semantic.py`` holds the bound on real code.
"""

from __future__ import annotations

import argparse
import ast
import collections
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from jit.code.checks import semantic

# Folders of the installed Warp package that hold real kernels (its tests are left out:
# they check odd corners on purpose, `x - x` included).
REAL_PARTS = ("examples", "_src", "fem", "sim", "render", "optim")


@dataclass(slots=True)
class RealKernel:
    path: str
    name: str
    line: int
    end: int
    role: str
    stub: bool
    defects: list


def warp_root() -> Path:
    """The installed Warp package, found without importing it (no native library loaded)."""
    return Path(importlib.util.find_spec("warp").origin).parent


def real_modules(parts: tuple[str, ...] = REAL_PARTS) -> list[Path]:
    root = warp_root()
    files = {p for part in parts for p in (root / part).rglob("*.py") if "tests" not in p.relative_to(root).parts}
    return sorted(files)


def real_kernels(parts: tuple[str, ...] = REAL_PARTS) -> tuple[list[RealKernel], float]:
    """Every decorated kernel and helper under ``parts``, with its defects; and the time spent."""
    kernels, spent, root = [], 0.0, warp_root()
    for path in real_modules(parts):
        source = path.read_text(encoding="utf-8")
        found = _decorated(ast.parse(source), str(path.relative_to(root)))
        if not found:
            continue
        start = time.perf_counter()
        for defect in semantic.defects(source):
            _owner(found, defect.line).defects.append(defect)
        spent += time.perf_counter() - start
        kernels += found
    return kernels, spent


def _decorated(tree: ast.AST, path: str) -> list[RealKernel]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (role := semantic.role_of(node)):
            out.append(RealKernel(path, node.name, node.lineno, node.end_lineno, role, semantic.is_stub(node), []))
    return out


def _owner(kernels: list[RealKernel], line: int) -> RealKernel:
    around = [k for k in kernels if k.line <= line <= k.end]
    return min(around, key=lambda k: k.end - k.line)


def dataset_records(folder: Path) -> list[dict]:
    records = []
    for shard in sorted((folder / "data").glob("*.jsonl")):
        with shard.open(encoding="utf-8") as fh:
            records += [json.loads(line) for line in fh if line.strip()]
    return records


def share_table(groups: dict[str, list[list[semantic.Defect]]]) -> list[str]:
    """A row per defect kind, a column per group: the share of the group's items with that kind."""
    names = sorted(groups, key=lambda g: (g != "all", g))
    kinds = sorted({d.kind for found in groups.values() for ds in found for d in ds})
    shares = {g: _shares(groups[g], kinds) for g in names}
    width = 2 + max([len(k) for k in kinds] + [18])
    lines = [_row("", names, width), _row("items", [len(groups[g]) for g in names], width),
             _row("flagged (any kind)", [f"{shares[g]['any']:.1%}" for g in names], width)]
    lines += [_row("  " + k, [f"{shares[g][k]:.1%}" for g in names], width) for k in kinds]
    return lines


def _row(label: str, cells: list, width: int) -> str:
    return f"{label:<{width}}" + "".join(f"{c:>11}" for c in cells)


def _shares(found: list[list[semantic.Defect]], kinds: list[str]) -> dict[str, float]:
    n = max(1, len(found))
    out = {"any": sum(bool(ds) for ds in found) / n}
    out.update({k: sum(any(d.kind == k for d in ds) for ds in found) / n for k in kinds})
    return out


def dataset_report(folder: Path, examples: int) -> list[str]:
    records = dataset_records(folder)
    groups, times, flagged = collections.defaultdict(list), [], []
    for record in records:
        start = time.perf_counter()
        found = semantic.defects(record["python_source"])
        times.append(time.perf_counter() - start)
        source = record.get("metadata", {}).get("source") or "?"
        groups[source].append(found)
        groups["all"].append(found)
        if found:
            flagged.append((record["kernel_name"], source, found))
    lines = [f"dataset {folder}: {len(records)} records"] + share_table(groups)
    if times:
        times.sort()
        mean, median, p95 = sum(times) / len(times), times[len(times) // 2], times[len(times) * 95 // 100]
        lines.append(f"time per record: mean {1e3 * mean:.2f} ms, median {1e3 * median:.2f} ms, "
                     f"95th percentile {1e3 * p95:.2f} ms")
    for name, source, found in flagged[:examples]:
        lines.append(f"  {source:<10} {name}: " + "; ".join(f"{d.kind} L{d.line} {d.detail}" for d in found))
    return lines


def real_report(show_all: bool) -> list[str]:
    kernels, spent = real_kernels()
    groups = collections.defaultdict(list)
    for k in kernels:
        groups[k.role].append(k.defects)
        groups["all"].append(k.defects)
    stubs = sum(k.stub for k in kernels)
    head = (f"real Warp code ({warp_root()}): {len(kernels)} decorated functions, {stubs} of them "
            "stubs the gate lets pass (pass, raise or wp.tid() only)")
    lines = [head] + share_table(groups)
    lines.append(f"time per kernel: {1e3 * spent / max(1, len(kernels)):.2f} ms "
                 "(whole modules read, parsing and the code around kernels included)")
    for k in (k for k in kernels if k.defects and show_all):
        for d in k.defects:
            lines.append(f"  {k.path}:{d.line} {k.name} ({k.role}): {d.kind}: {d.detail}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, help="dataset folder with data/*.jsonl")
    parser.add_argument("--real-only", action="store_true", help="only Warp's own kernels")
    parser.add_argument("--list", action="store_true", help="list every flagged real kernel")
    parser.add_argument("--examples", type=int, default=0, help="flagged records to print")
    args = parser.parse_args(argv)
    lines = []
    if args.dataset and not args.real_only:
        lines += dataset_report(args.dataset, args.examples) + [""]
    lines += real_report(args.list)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
