"""How good is the kernel generator? Diversity, coverage, and how much of it Warp accepts.

    python jit/benchmarks/generator_quality.py --count 3000 --seed 0 --reject-count 10000 --compile-sample 100

Measures, on ``--count`` kernels from ``generate(seed, index)``:

- distinct sources after renaming every identifier (names by order of first use);
- distinct structures after also erasing every literal;
- distinct Warp builtins called in kernel bodies (explicit ``wp.name(...)`` calls; type
  constructors count as the constructor builtin), and separately those reached by operators;
- categories present;
- kernels Warp builds for CPU and CUDA (code generation via ``ir_extractor.extract_many``,
  100 sources per module), on ``--reject-count`` kernels, with the rejection reasons;
- a random sample rebuilt in one fresh module and compiled for real: CPU with Warp's clang
  and CUDA with NVRTC to PTX.

Prints one report (and writes it as JSON with ``--json``). It measures, it does not assert.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from jit.code.extraction import warp_backend as wb
from jit.code.extraction.ir_extractor import extract_many
from jit.code.synthesis.generator import CATEGORIES, KernelSpec, generate, warp_builtins


class _Canonical(ast.NodeTransformer):
    """Rename every user identifier by order of first use; optionally erase literals."""

    def __init__(self, erase_literals: bool):
        self.names: dict[str, str] = {}
        self.erase = erase_literals

    def name(self, n: str) -> str:
        if n == "wp":
            return n
        return self.names.setdefault(n, f"_{len(self.names)}")

    def visit_Name(self, node):
        node.id = self.name(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.name(node.arg)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.name(node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node):
        node.name = self.name(node.name)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not (isinstance(node.value, ast.Name) and node.value.id == "wp"):
            node.attr = self.name(node.attr)  # struct fields and query results are identifiers too
        return node

    def visit_Constant(self, node):
        if self.erase:
            return ast.copy_location(ast.Constant(value=0), node)
        return node


def canonical(source: str, erase_literals: bool = False) -> str:
    tree = ast.parse(source)
    return ast.unparse(_Canonical(erase_literals).visit(tree))


def diversity(specs: list[KernelSpec]) -> dict:
    renamed = {canonical(s.source) for s in specs}
    structure = {canonical(s.source, erase_literals=True) for s in specs}
    n = len(specs)
    return {"kernels": n, "distinct_renamed": len(renamed), "distinct_renamed_ratio": round(len(renamed) / n, 4),
            "distinct_structure": len(structure), "distinct_structure_ratio": round(len(structure) / n, 4)}


def coverage(specs: list[KernelSpec]) -> dict:
    called = collections.Counter(b for s in specs for b in s.metadata["builtins"])
    ops = {b for s in specs for b in s.metadata["operators"]}
    total = len(warp_builtins())
    lines = sorted(s.metadata["lines"] for s in specs)
    return {
        "builtins_called": len(called),
        "builtins_with_operators": len(set(called) | ops),
        "warp_builtins_total": total,
        "builtins": sorted(called),
        "categories": dict(collections.Counter(s.category for s in specs)),
        "lines": {"min": lines[0], "median": lines[len(lines) // 2], "p90": lines[int(len(lines) * 0.9)], "max": lines[-1]},
    }


def build_all(specs: list[KernelSpec], batch: int = 100) -> dict[str, str]:
    """kernel name -> why Warp rejected it, for every kernel that does not build for CPU and CUDA."""
    failures: dict[str, str] = {}
    for start in range(0, len(specs), batch):
        chunk = specs[start:start + batch]
        if _build_batch(chunk, f"gq_batch_{start}") is None:
            continue
        for s in chunk:  # the batch failed: find each culprit alone
            reason = _build_batch([s], f"gq_one_{s.name}")
            if reason is not None:
                failures[s.name] = reason
    return failures


def _build_batch(specs: list[KernelSpec], module: str) -> str | None:
    try:
        handle = wb.define([s.source for s in specs], module)
    except Exception as exc:
        return f"define: {type(exc).__name__}: {exc}"
    try:
        extract_many(list(handle.kernels().values()), ("cpu", "cuda"))
        return None
    except Exception as exc:
        return str(exc).strip().splitlines()[-1][:200]
    finally:
        handle.release()


def compile_sample(specs: list[KernelSpec], size: int, seed: int) -> dict:
    """Rebuild a random sample in one fresh module and compile it: clang (CPU), NVRTC to PTX (CUDA)."""
    sample = random.Random(seed).sample(specs, min(size, len(specs)))
    handle = wb.define([s.source for s in sample], "gq_compile_sample")
    result = {"sample": len(sample)}
    try:
        kernels = list(handle.kernels().values())
        with tempfile.TemporaryDirectory() as tmp:
            for device in ("cpu", "cuda"):
                if device == "cuda" and not wb.nvrtc_available():
                    result[device] = "skipped: NVRTC not available"
                    continue
                t0 = time.time()
                options = wb.resolve_options(handle.module, device)
                build = wb.Build(handle.module, kernels, options, device)
                source = build.module_source(device)
                out = str(Path(tmp) / f"sample_{device}" ) + (".o" if device == "cpu" else ".ptx")
                try:
                    wb.compile_source(source, device, out, options)
                    result[device] = f"ok: {len(kernels)}/{len(kernels)} kernels compiled in {time.time() - t0:.1f}s"
                except Exception as exc:
                    result[device] = f"FAILED: {type(exc).__name__}: {str(exc)[:300]}"
    finally:
        handle.release()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--complexity", default="medium")
    parser.add_argument("--reject-count", type=int, default=0, help="build this many kernels (0: --count)")
    parser.add_argument("--compile-sample", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    complexity = int(args.complexity) if args.complexity.isdigit() else args.complexity

    t0 = time.time()
    n_build = max(args.count, args.reject_count)
    specs = [generate(args.seed, i, complexity=complexity) for i in range(n_build)]
    report = {"seed": args.seed, "complexity": args.complexity, "generate_seconds": round(time.time() - t0, 1)}
    measured = specs[: args.count]
    report.update(diversity(measured))
    report.update(coverage(measured))
    report["categories_present"] = f"{len(report['categories'])}/{len(CATEGORIES)}"

    t0 = time.time()
    failures = build_all(specs)
    report["build"] = {
        "kernels": len(specs), "rejected": len(failures), "rejection_rate": round(len(failures) / len(specs), 5),
        "reasons": dict(collections.Counter(failures.values()).most_common(20)),
        "seconds": round(time.time() - t0, 1),
    }
    ok = [s for s in measured if s.name not in failures]
    report["compile_sample"] = compile_sample(ok, args.compile_sample, args.seed)

    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
